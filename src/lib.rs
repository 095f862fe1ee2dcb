//! topicd: a long-running HTTP service that fits interpretable Bayesian topic models
//! and serves what they learn.
//!
//! # Layout
//! The numerical core is the crate `topicd-core` (corpus, graph, models, inference,
//! summaries, heap sizes, random streams, unknown keys); its modules are re-exported
//! here under their own names, so `topicd::models` and `crate::models` name them. This
//! crate is the service around it:
//! - [`store`]: SQLite and PostgreSQL persistence, the crate `topicd-store` (the only SQL).
//! - [`jobs`]: the job queue and runner that fits models off the async runtime.
//! - [`api`]: axum router, handlers, problem+json errors, metrics, the model cache.
//! - [`config`] and [`cli`]: flags and environment; the offline commands.
//! - [`auth`]: API tokens and roles; [`allocator`]: how freed memory leaves the process.

pub mod allocator;
pub mod api;
pub mod auth;
pub mod cli;
pub mod config;
#[doc(hidden)]
pub mod fuzzing;
pub mod jobs;
#[cfg(feature = "mpi")]
pub mod mpi_ranks;
pub mod world;

pub use topicd_core::{corpus, graph, heap_size, inference, models, ranks, rng, selection, summaries, unknown_keys};
pub use topicd_store as store;
