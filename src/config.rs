//! Server configuration from flags and environment variables.
//!
//! Why it exists: one place lists every knob with its default, its flag and its
//! `TOPICD_*` variable, so `topicd serve --help` is the full reference.

use crate::auth::AuthMode;
use crate::store::jobs::QueueGate;
use crate::store::tokens::Caller;
use crate::store::DbLocation;
use clap::Args;
use std::net::SocketAddr;
use std::time::Duration;

/// `topicd serve` options. Every flag is also read from the environment.
#[derive(Debug, Clone, Args)]
pub struct ServeConfig {
    /// Address to listen on.
    #[arg(long, env = "TOPICD_ADDR", default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,
    /// The store: a SQLite database file (created with its schema on first start), or a
    /// `postgres://user@host/db` URL of a database that replicas share (it must exist;
    /// its schema is created on first start).
    #[arg(long, env = "TOPICD_DB", default_value = "topicd.db", value_parser = DbLocationParser)]
    pub db: DbLocation,
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
    /// A browser request from any other site may not change state (403).
    #[arg(long, env = "TOPICD_CORS_ORIGINS", default_value = "", value_delimiter = ',')]
    pub cors_origins: Vec<String>,
    /// Host names served besides localhost, 127.0.0.1 and [::1], comma-separated (the
    /// name a proxy or a browser uses to reach this server). On a loopback address only
    /// those three are served by default, against DNS rebinding; naming any host turns
    /// the check on for other addresses too. Other hosts get 421.
    #[arg(long, env = "TOPICD_ALLOWED_HOSTS", default_value = "", value_delimiter = ',')]
    pub allowed_hosts: Vec<String>,
    /// How many attempts in a row a job interrupted by a crash is retried before it is
    /// marked failed; an attempt that wrote a checkpoint made progress and does not count.
    #[arg(long, env = "TOPICD_MAX_ATTEMPTS", default_value_t = 3)]
    pub max_attempts: i64,
    /// Seconds between checkpoints of a running fit (every family: the chain driver's and
    /// the pass driver's; a job's `params.checkpoint_every_s` overrides it); 0 turns
    /// checkpoints off.
    #[arg(long, env = "TOPICD_CHECKPOINT_EVERY_S", default_value_t = 60.0, value_parser = parse_seconds)]
    pub checkpoint_every_s: f64,
    /// Seconds to wait for running fits to stop on shutdown.
    #[arg(long, env = "TOPICD_SHUTDOWN_GRACE_S", default_value_t = 10)]
    pub shutdown_grace_s: u64,
    /// Whether requests need `Authorization: Bearer <token>` (tokens: `topicd token
    /// create`). Default: `off` on a loopback address, `required` on any other.
    #[arg(long, env = "TOPICD_AUTH", value_enum)]
    pub auth: Option<AuthMode>,
    /// Allow `--auth off` on a non-loopback address (only behind something that
    /// authenticates every request); given alone, it also means `--auth off`.
    #[arg(long, env = "TOPICD_INSECURE_NO_AUTH", default_value_t = false)]
    pub insecure_no_auth: bool,
    /// Serve `/metrics` without a token even when tokens are required.
    #[arg(long, env = "TOPICD_PUBLIC_METRICS", default_value_t = false)]
    pub public_metrics: bool,
    /// Requests per second one client may make (by token, else by address; `/healthz`
    /// and `/readyz` are not counted); 0 turns the limit off.
    #[arg(long, env = "TOPICD_RATE_LIMIT_PER_S", default_value_t = 100)]
    pub rate_limit_per_s: u32,
    /// Requests one client may make at once above its rate (at least the rate).
    #[arg(long, env = "TOPICD_RATE_LIMIT_BURST", default_value_t = 200)]
    pub rate_limit_burst: u32,
    /// Most jobs waiting in the queue, in all (fits and evaluations).
    #[arg(long, env = "TOPICD_MAX_QUEUED_JOBS", default_value_t = 100)]
    pub max_queued_jobs: u64,
    /// Most jobs one token may have waiting in the queue.
    #[arg(long, env = "TOPICD_MAX_QUEUED_JOBS_PER_TOKEN", default_value_t = 20)]
    pub max_queued_jobs_per_token: u64,
    /// Seconds a request may take before it is answered 503 (uploads are exempt); 0: no limit.
    #[arg(long, env = "TOPICD_REQUEST_TIMEOUT_S", default_value_t = 60.0, value_parser = parse_seconds)]
    pub request_timeout_s: f64,
    /// Most documents in one predict or held-out request.
    #[arg(long, env = "TOPICD_MAX_REQUEST_DOCUMENTS", default_value_t = 10_000)]
    pub max_request_documents: usize,
    /// Largest `n` (words per topic) a topic listing may ask for.
    #[arg(long, env = "TOPICD_MAX_N", default_value_t = 1000)]
    pub max_n: usize,
    /// Most tokens one document may hold (its text's tokens or the sum of its counts), in
    /// uploads and in predict and held-out requests.
    #[arg(long, env = "TOPICD_MAX_DOCUMENT_TOKENS", default_value_t = 1_000_000)]
    pub max_document_tokens: u64,
    /// Most tokens of all documents in one predict or held-out request.
    #[arg(long, env = "TOPICD_MAX_REQUEST_TOKENS", default_value_t = 2_000_000)]
    pub max_request_tokens: u64,
    /// Most tokens × fold-in iterations × the model's topics one predict request may
    /// ask for: it bounds how long one answer holds the predict threads while other
    /// requests wait (50 000 tokens at the default 100 iterations on 50 topics).
    #[arg(long, env = "TOPICD_MAX_PREDICT_WORK", default_value_t = DEFAULT_MAX_PREDICT_WORK)]
    pub max_predict_work: u64,
    /// Most tokens one corpus upload may hold in all.
    #[arg(long, env = "TOPICD_MAX_UPLOAD_TOKENS", default_value_t = 4_000_000_000)]
    pub max_upload_tokens: u64,
    /// Longest line of an NDJSON upload, in megabytes (a 413 names the line).
    #[arg(long, env = "TOPICD_MAX_LINE_MB", default_value_t = 16.0, value_parser = parse_megabytes)]
    pub max_line_mb: f64,
    /// Seconds an upload may send nothing before it is cut off (408; nothing is
    /// stored); 0: no limit.
    #[arg(long, env = "TOPICD_UPLOAD_IDLE_S", default_value_t = 30.0, value_parser = parse_seconds)]
    pub upload_idle_s: f64,
    /// A quota on the database file, in megabytes (fractions allowed): a write that would
    /// grow it beyond is refused like a full disk (507; a running fit fails). Unset: only
    /// the disk limits it.
    #[arg(long, env = "TOPICD_MAX_DB_MB", value_parser = parse_max_db_mb)]
    pub max_db_mb: Option<f64>,
    /// What this replica does: `api` answers requests and runs no job; `worker` runs
    /// jobs and answers only /healthz, /readyz and /metrics; `both` does both. Replicas
    /// of any role share one PostgreSQL database (`--db postgres://...`).
    #[arg(long, env = "TOPICD_ROLE", value_enum, default_value_t = Role::Both)]
    pub role: Role,
    /// Seconds a running job's lease lasts without renewal (renewed every fifth of it, at
    /// most every 2 s): a job whose replica died is taken over by another this long after
    /// the last renewal, and resumes from its checkpoint.
    #[arg(long, env = "TOPICD_LEASE_S", default_value_t = 30.0, value_parser = parse_lease)]
    pub lease_s: f64,
    /// This replica's name in job leases and logs. Default: the host name, the process
    /// id and a random suffix (unique per start).
    #[arg(long, env = "TOPICD_REPLICA_ID")]
    pub replica_id: Option<String>,
    /// Megabytes of decoded models (and the pages answered from them) kept in memory
    /// between requests, least recently used out first; a model larger than this is
    /// served without being kept. Default: a quarter of the machine's memory.
    #[arg(long, env = "TOPICD_MODEL_CACHE_MB", value_parser = parse_megabytes)]
    pub model_cache_mb: Option<f64>,
    /// Megabytes that the fits running at once on this replica may use together, by
    /// their families' estimates: a fit estimated above it is refused at submission
    /// (422), one that fits alone but not beside the running fits waits in the queue.
    /// Default: half the machine's memory.
    #[arg(long, env = "TOPICD_FIT_MEMORY_MB", value_parser = parse_megabytes)]
    pub fit_memory_mb: Option<f64>,
    /// Megabytes that predict requests being answered may hold together, by estimates
    /// from their documents' size and the model's topics: a request estimated above it
    /// is refused (422), others wait for room. Default: an eighth of the machine's memory.
    #[arg(long, env = "TOPICD_REQUEST_MEMORY_MB", value_parser = parse_megabytes)]
    pub request_memory_mb: Option<f64>,
    /// Seconds a connection has to send a request's head (request line and headers),
    /// counted from when it opens and again after each answer, so also the longest a
    /// kept-alive connection may stay idle: one that takes longer is closed without an
    /// answer, and a client trickling its headers cannot hold a connection; 0: no limit.
    #[arg(long, env = "TOPICD_HEADER_READ_TIMEOUT_S", default_value_t = 10.0, value_parser = parse_seconds)]
    pub header_read_timeout_s: f64,
    /// Most connections open at once: at the cap the server accepts no more (new clients
    /// wait in the listen backlog) until one closes, so a flood of idle sockets cannot
    /// use up the process' file descriptors.
    #[arg(long, env = "TOPICD_MAX_CONNECTIONS", default_value_t = 1024, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1_000_000))]
    pub max_connections: usize,
    /// Log as JSON lines instead of human-readable text.
    #[arg(long, env = "TOPICD_LOG_JSON", default_value_t = false)]
    pub log_json: bool,
    /// Run jobs that ask for `"ranks": R` as one MPI world, started by this command with
    /// `{ranks}` replaced by R and this program's `rank-fit` appended (through `sh -c`),
    /// e.g. `mpirun --hostfile hosts -n {ranks}` or `srun -n {ranks}`. A replica without
    /// it never claims such jobs. Needs a build with the `mpi` feature.
    #[arg(long, env = "TOPICD_MPI_LAUNCH")]
    pub mpi_launch: Option<String>,
}

/// A finite, non-negative number of seconds.
fn parse_seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if (0.0..=1e9).contains(&x) => Ok(x),
        _ => Err(format!("must be a number of seconds from 0 to 1e9, got {s:?}")),
    }
}

/// A lease of 0.2 s to a day.
fn parse_lease(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if (0.2..=86_400.0).contains(&x) => Ok(x),
        _ => Err(format!("must be a number of seconds from 0.2 to 86400, got {s:?}")),
    }
}

/// What a replica does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Role {
    /// Answer requests; run no job.
    Api,
    /// Run jobs; answer only the operational endpoints.
    Worker,
    /// Both.
    Both,
}

impl Role {
    pub fn serves_api(self) -> bool {
        self != Role::Worker
    }
    pub fn runs_jobs(self) -> bool {
        self != Role::Api
    }
}

/// A positive, finite number of megabytes (for the memory budgets).
fn parse_megabytes(s: &str) -> Result<f64, String> {
    parse_max_db_mb(s)
}

/// The machine's memory in bytes: the smaller of the physical memory and the memory
/// limit of this process' control group (a container's limit), where either can be read.
pub fn machine_memory_bytes() -> Option<u64> {
    let physical = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        let line = m.lines().find(|l| l.starts_with("MemTotal:"))?;
        line.split_whitespace().nth(1)?.parse::<u64>().ok().map(|kb| kb * 1024)
    });
    let limit = ["/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"]
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .filter_map(|s| s.trim().parse::<u64>().ok())
        .find(|&b| b > 0 && b < (1 << 60));
    match (physical, limit) {
        (Some(p), Some(l)) => Some(p.min(l)),
        (p, l) => p.or(l),
    }
}

/// Memory assumed when the machine's cannot be read.
const FALLBACK_MACHINE_BYTES: u64 = 4 << 30;

/// A positive, finite number of megabytes.
fn parse_max_db_mb(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(format!("must be a positive number of megabytes, got {s:?}")),
    }
}

fn default_threads() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

impl ServeConfig {
    /// This replica's worker identity and lease terms.
    pub fn worker(&self) -> crate::store::Worker {
        let owner = self.replica_id.clone().unwrap_or_else(|| {
            let host = std::fs::read_to_string("/etc/hostname").map(|h| h.trim().to_string()).unwrap_or_default();
            let host = if host.is_empty() { "topicd".to_string() } else { host };
            format!("{host}-{}-{}", std::process::id(), &uuid::Uuid::new_v4().simple().to_string()[..8])
        });
        // A replica with a launcher runs worlds of any size; one without, single processes.
        let max_ranks = if self.mpi_launch.is_some() { crate::models::options::MAX_RANKS as i64 } else { 1 };
        crate::store::Worker { owner, lease: std::time::Duration::from_secs_f64(self.lease_s), max_attempts: self.max_attempts, max_ranks }
    }

    /// How the store is opened.
    pub fn store_options(&self) -> crate::store::StoreOptions {
        crate::store::StoreOptions { max_bytes: self.max_db_mb.map(|mb| (mb * 1024.0 * 1024.0) as u64) }
    }

    /// A configuration for tests: ephemeral port, the given database.
    pub fn for_tests(db: impl Into<DbLocation>) -> Self {
        ServeConfig {
            addr: "127.0.0.1:0".parse().expect("valid address"),
            db: db.into(),
            threads: 2,
            max_jobs: 1,
            max_body_mb: 64,
            cors_origins: vec![],
            allowed_hosts: vec![],
            max_attempts: 3,
            checkpoint_every_s: 60.0,
            shutdown_grace_s: 10,
            max_db_mb: None,
            role: Role::Both,
            lease_s: 30.0,
            replica_id: None,
            log_json: false,
            mpi_launch: None,
            model_cache_mb: None,
            fit_memory_mb: None,
            request_memory_mb: None,
            header_read_timeout_s: 10.0,
            max_connections: 1024,
            auth: None,
            insecure_no_auth: false,
            public_metrics: false,
            rate_limit_per_s: 0,
            rate_limit_burst: 0,
            max_queued_jobs: 1000,
            max_queued_jobs_per_token: 1000,
            request_timeout_s: 0.0,
            max_request_documents: 100_000,
            max_n: 10_000,
            max_document_tokens: 1_000_000,
            max_request_tokens: 2_000_000,
            // Tests ask for long fold-ins on purpose (the time limit's test).
            max_predict_work: u64::MAX,
            max_upload_tokens: 4_000_000_000,
            max_line_mb: 16.0,
            upload_idle_s: 30.0,
        }
    }

    /// The model cache's budget in bytes: `--model-cache-mb`, else a quarter of the
    /// machine's memory.
    pub fn model_cache_bytes(&self) -> u64 {
        self.model_cache_mb.map_or_else(|| machine_memory_bytes().unwrap_or(FALLBACK_MACHINE_BYTES) / 4, |mb| (mb * 1048576.0) as u64)
    }

    /// The running fits' memory budget in bytes: `--fit-memory-mb`, else half the
    /// machine's memory.
    pub fn fit_memory_bytes(&self) -> u64 {
        self.fit_memory_mb.map_or_else(|| machine_memory_bytes().unwrap_or(FALLBACK_MACHINE_BYTES) / 2, |mb| (mb * 1048576.0) as u64)
    }

    /// The budget of predict requests being answered, in bytes: `--request-memory-mb`,
    /// else an eighth of the machine's memory.
    pub fn request_memory_bytes(&self) -> u64 {
        self.request_memory_mb.map_or_else(|| machine_memory_bytes().unwrap_or(FALLBACK_MACHINE_BYTES) / 8, |mb| (mb * 1048576.0) as u64)
    }

    /// The limits these flags set.
    pub fn limits(&self) -> Limits {
        Limits {
            max_queued_jobs: self.max_queued_jobs,
            max_queued_jobs_per_token: self.max_queued_jobs_per_token,
            request_timeout: (self.request_timeout_s > 0.0).then(|| std::time::Duration::from_secs_f64(self.request_timeout_s)),
            max_request_documents: self.max_request_documents.max(1),
            max_n: self.max_n.max(1),
            max_document_tokens: self.max_document_tokens.max(1),
            max_request_tokens: self.max_request_tokens.max(1),
            max_predict_work: self.max_predict_work.max(1),
            max_upload_tokens: self.max_upload_tokens.max(1),
            max_line_bytes: (self.max_line_mb * 1048576.0) as usize,
            upload_idle: (self.upload_idle_s > 0.0).then(|| Duration::from_secs_f64(self.upload_idle_s)),
        }
    }
}

/// `--max-predict-work` by default: 2.5 × 10^8 token-sweep-topics, about 0.46 CPU
/// seconds of LDA fold-in by bench/README.md's "Attacks replayed" (1.85 s for 10^9), so
/// about a quarter of a second on two predict threads.
pub const DEFAULT_MAX_PREDICT_WORK: u64 = 250_000_000;

/// The limits a server enforces (flags of `topicd serve`).
#[derive(Debug, Clone)]
pub struct Limits {
    /// Most queued jobs in all (`--max-queued-jobs`).
    pub max_queued_jobs: u64,
    /// Most queued jobs of one token (`--max-queued-jobs-per-token`).
    pub max_queued_jobs_per_token: u64,
    /// Time limit of a request that does not upload (`--request-timeout-s`); `None`: none.
    pub request_timeout: Option<Duration>,
    /// Most documents in one predict or held-out request (`--max-request-documents`).
    pub max_request_documents: usize,
    /// Largest `n` of a topic listing (`--max-n`).
    pub max_n: usize,
    /// Most tokens of one document (`--max-document-tokens`).
    pub max_document_tokens: u64,
    /// Most tokens of one predict or held-out request (`--max-request-tokens`).
    pub max_request_tokens: u64,
    /// Most tokens × fold-in sweeps × topics of one predict request (`--max-predict-work`).
    pub max_predict_work: u64,
    /// Most tokens of one corpus upload (`--max-upload-tokens`).
    pub max_upload_tokens: u64,
    /// Longest NDJSON line in bytes (`--max-line-mb`).
    pub max_line_bytes: usize,
    /// How long an upload may send nothing (`--upload-idle-s`); `None`: no limit.
    pub upload_idle: Option<Duration>,
}

impl Limits {
    /// The token caps of a corpus upload.
    pub fn upload_tokens(&self) -> crate::corpus::TokenLimits {
        crate::corpus::TokenLimits { per_document: self.max_document_tokens, per_input: self.max_upload_tokens, input_flag: "max-upload-tokens" }
    }

    /// The token caps of a predict or held-out request.
    pub fn request_tokens(&self) -> crate::corpus::TokenLimits {
        crate::corpus::TokenLimits { per_document: self.max_document_tokens, per_input: self.max_request_tokens, input_flag: "max-request-tokens" }
    }

    /// The queue bound for a job submitted by `caller`.
    pub fn gate<'a>(&self, caller: Option<&'a Caller>) -> QueueGate<'a> {
        QueueGate { token_key: caller.map(|c| c.key.as_str()), max_queued: self.max_queued_jobs, max_queued_per_token: self.max_queued_jobs_per_token }
    }
}

/// `--db` read as a [`DbLocation`](crate::store::DbLocation), refused in its own words:
/// clap's message for a value a parser refuses repeats the value as given, a URL's
/// password included (`postgress://u:secret@h/db`); this one shows it as `***`.
#[derive(Debug, Clone, Copy)]
pub struct DbLocationParser;

impl clap::builder::TypedValueParser for DbLocationParser {
    type Value = crate::store::DbLocation;

    fn parse_ref(&self, cmd: &clap::Command, _arg: Option<&clap::Arg>, value: &std::ffi::OsStr) -> Result<Self::Value, clap::Error> {
        let refuse = |why: String| clap::Error::raw(clap::error::ErrorKind::ValueValidation, format!("invalid value for --db: {why}\n")).with_cmd(cmd);
        value.to_str().ok_or_else(|| refuse("not UTF-8".into()))?.parse().map_err(refuse)
    }
}
