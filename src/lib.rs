//! topicd: a long-running HTTP service that fits interpretable Bayesian topic models
//! and serves what they learn.
//!
//! # Layout
//! - [`corpus`]: uploaded documents → vocabulary, sparse counts, label tree.
//! - [`graph`]: uploaded nodes and edges → a validated, numbered graph.
//! - [`models`]: the [`models::ModelFamily`] / [`models::TopicModel`] traits and one
//!   folder per model (LDA first); pure numerics on rayon.
//! - [`inference`]: generic samplers (HMC) over a log density with gradient.
//! - [`summaries`]: frequency, exclusivity and FREX tables from fitted word rates.
//! - [`heap_size`]: the heap bytes a decoded model or page holds (the model cache's budget).
//! - [`rng`]: per-(seed, iteration, index) random streams, so results do not depend on
//!   thread count.
//! - [`store`]: SQLite persistence (the only SQL in the crate).
//! - [`jobs`]: the job queue and runner that fits models off the async runtime.
//! - [`api`]: axum router, handlers, problem+json errors, metrics.
//! - [`config`] and [`cli`]: flags and environment; the offline `fit` command.
//! - [`unknown_keys`]: the nearest known key, for every refusal of an unknown key.
//!
//! `corpus`, `graph`, `models`, `inference`, `summaries`, `heap_size`, `unknown_keys` and `rng` never import axum, sqlx or tokio.

pub mod allocator;
pub mod api;
pub mod auth;
pub mod cli;
pub mod config;
pub mod corpus;
#[doc(hidden)]
pub mod fuzzing;
pub mod graph;
pub mod heap_size;
pub mod inference;
mod isa;
pub mod jobs;
pub mod models;
pub mod rng;
pub mod store;
pub mod summaries;
pub mod unknown_keys;
