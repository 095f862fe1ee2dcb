//! The command line's shape: every subcommand and its arguments, parsed by clap.
//!
//! Why it exists: `main` parses once and dispatches; each subcommand's own arguments
//! live beside its code (`fit::FitArgs`, `token::TokenArgs`, ...).

use super::{backup, estimate, fit, score_lda, simulate, token};
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
