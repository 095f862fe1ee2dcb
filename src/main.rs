//! The `topicd` binary: parse the command line, set up logging, run.

use clap::Parser;
use topicd::cli::{fit, score_lda, simulate, token, Cli, Command};
use tracing_subscriber::EnvFilter;

fn init_logging(json: bool) {
    let filter = EnvFilter::try_from_env("TOPICD_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    if json {
        builder.json().init();
    } else {
        builder.init();
    }
}

fn main() {
    topicd::allocator::tune();
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(config) => {
            init_logging(config.log_json);
            let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime");
            if let Err(e) = runtime.block_on(topicd::api::serve(config)) {
                eprintln!("topicd: {e}");
                std::process::exit(1);
            }
        }
        Command::Fit(args) => {
            if let Err(e) = fit::run(args) {
                // Empty: every rank has already printed why (a bad input over MPI ranks).
                if !e.is_empty() {
                    eprintln!("topicd fit: {e}");
                }
                std::process::exit(2);
            }
        }
        Command::ScoreLda(args) => {
            if let Err(e) = score_lda::run(args) {
                eprintln!("topicd score-lda: {e}");
                std::process::exit(2);
            }
        }
        Command::Token(args) => {
            if let Err(e) = token::run(args) {
                eprintln!("topicd token: {e}");
                std::process::exit(2);
            }
        }
        Command::Backup(args) => {
            if let Err(e) = topicd::cli::backup::run(args) {
                eprintln!("topicd backup: {e}");
                std::process::exit(2);
            }
        }
        Command::EstimateFit(args) => {
            if let Err(e) = topicd::cli::estimate::run(args) {
                eprintln!("topicd estimate-fit: {e}");
                std::process::exit(2);
            }
        }
        Command::SimulateHpc(args) => {
            if let Err(e) = simulate::run(args) {
                eprintln!("topicd simulate-hpc: {e}");
                std::process::exit(2);
            }
        }
        Command::RankFit => {
            if let Err(e) = topicd::cli::rank_fit::run() {
                eprintln!("topicd rank-fit: {e}");
                std::process::exit(2);
            }
        }
    }
}
