//! The command line: `topicd serve`, `topicd fit`, `topicd simulate-hpc` and
//! `topicd score-lda`, `topicd estimate-fit`, and `topicd token` for the operator.
//!
//! Why it exists: `serve` runs the HTTP service; `fit` runs the very same corpus and
//! model code without HTTP, for benchmarks and offline users, and prints one JSON line.

pub mod args;
pub mod backup;
pub mod estimate;
pub mod fit;
pub mod rank_fit;
pub mod ranks;
pub mod score_lda;
pub mod simulate;
pub mod token;

pub use args::{Cli, Command};
