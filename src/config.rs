//! Server configuration from flags and environment variables.
//!
//! Why it exists: one place lists every knob with its default, its flag and its
//! `TOPICD_*` variable, so `topicd serve --help` is the full reference.

use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;

/// `topicd serve` options. Every flag is also read from the environment.
#[derive(Debug, Clone, Args)]
pub struct ServeConfig {
    /// Address to listen on.
    #[arg(long, env = "TOPICD_ADDR", default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,
    /// SQLite database file (created with its schema on first start).
    #[arg(long, env = "TOPICD_DB", default_value = "topicd.db")]
    pub db: PathBuf,
    /// Default worker threads per fit (a job's `params.threads` overrides it).
    #[arg(long, env = "TOPICD_THREADS", default_value_t = default_threads())]
    pub threads: usize,
    /// Jobs that may run at once.
    #[arg(long, env = "TOPICD_MAX_JOBS", default_value_t = 1)]
    pub max_jobs: usize,
    /// Largest accepted request body, in megabytes (JSON and NDJSON uploads).
    #[arg(long, env = "TOPICD_MAX_BODY_MB", default_value_t = 512)]
    pub max_body_mb: usize,
    /// Origins allowed by CORS, comma-separated, or `*`; empty disables CORS headers.
    #[arg(long, env = "TOPICD_CORS_ORIGINS", default_value = "", value_delimiter = ',')]
    pub cors_origins: Vec<String>,
    /// How many attempts in a row a job interrupted by a crash is retried before it is
    /// marked failed; an attempt that wrote a checkpoint made progress and does not count.
    #[arg(long, env = "TOPICD_MAX_ATTEMPTS", default_value_t = 3)]
    pub max_attempts: i64,
    /// Seconds between checkpoints of a running fit (every family: the chain driver's and
    /// the pass driver's; a job's `params.checkpoint_every_s` overrides it); 0 turns
    /// checkpoints off.
    #[arg(long, env = "TOPICD_CHECKPOINT_EVERY_S", default_value_t = 60.0, value_parser = parse_checkpoint_every)]
    pub checkpoint_every_s: f64,
    /// Seconds to wait for running fits to stop on shutdown.
    #[arg(long, env = "TOPICD_SHUTDOWN_GRACE_S", default_value_t = 10)]
    pub shutdown_grace_s: u64,
    /// Log as JSON lines instead of human-readable text.
    #[arg(long, env = "TOPICD_LOG_JSON", default_value_t = false)]
    pub log_json: bool,
}

/// A finite, non-negative number of seconds.
fn parse_checkpoint_every(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => Err(format!("must be a number of seconds, 0 or more, got {s:?}")),
    }
}

fn default_threads() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

impl ServeConfig {
    /// A configuration for tests: ephemeral port, the given database.
    pub fn for_tests(db: PathBuf) -> Self {
        ServeConfig {
            addr: "127.0.0.1:0".parse().expect("valid address"),
            db,
            threads: 2,
            max_jobs: 1,
            max_body_mb: 64,
            cors_origins: vec![],
            max_attempts: 3,
            checkpoint_every_s: 60.0,
            shutdown_grace_s: 10,
            log_json: false,
        }
    }
}
