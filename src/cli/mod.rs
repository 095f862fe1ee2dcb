//! The command line: `topicd serve`, `topicd fit`, `topicd simulate-hpc` and
//! `topicd score-lda`, `topicd estimate-fit`, and `topicd token` for the operator.
//!
//! Why it exists: `serve` runs the HTTP service; `fit` runs the very same corpus and
//! model code without HTTP, for benchmarks and offline users, and prints one JSON line.

pub mod backup;
pub mod estimate;
pub mod fit;
pub mod rank_fit;
pub mod ranks;
pub mod score_lda;
pub mod simulate;
pub mod token;

use crate::config::ServeConfig;
use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "topicd", version, about = "Fits interpretable Bayesian topic models and serves what they learn.")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the HTTP service.
    Serve(ServeConfig),
    /// Fit a model on a JSONL corpus without HTTP and print one JSON line of figures.
    Fit(fit::FitArgs),
    /// Create, list or revoke API tokens in the server's database.
    Token(token::TokenArgs),
    /// Write a corpus drawn from HPC's generative process (benchmarks, smoke tests).
    SimulateHpc(simulate::SimulateArgs),
    /// Held-out log-likelihood of documents under an LDA given as JSON (vocabulary, φ,
    /// α), by the `lda` family's Chib-style estimator (benchmarks against other tools).
    ScoreLda(score_lda::ScoreLdaArgs),
    /// Print a family's fit memory estimate for an input of the given size.
    EstimateFit(estimate::EstimateArgs),
    /// Copy the database consistently, even while the server runs, and print one JSON line.
    Backup(backup::BackupArgs),
    /// One rank of a job's MPI world, as a replica's `--mpi-launch` starts it (rank 0
    /// reads the job on standard input and writes frames on standard output).
    #[command(hide = true)]
    RankFit,
}
