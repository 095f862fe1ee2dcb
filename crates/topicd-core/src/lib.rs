//! topicd-core: the numerical core of topicd, usable without the service.
//!
//! Why it is a crate of its own: the layer rule (numerics know nothing of HTTP, SQL,
//! async runtimes or command lines) is kept by the compiler, not by review: this crate's
//! dependencies have no axum, sqlx, tokio or clap. A change to a sampler builds and
//! tests this crate alone (`cargo test -p topicd-core`), and a notebook binding or the
//! MPI ranks of a distributed fit can use the models without the server.
//!
//! # Layout
//! - [`corpus`]: uploaded documents → vocabulary, sparse counts, label tree.
//! - [`graph`]: uploaded nodes and edges → a validated, numbered graph.
//! - [`models`]: the [`models::ModelFamily`] / [`models::TopicModel`] traits, the
//!   registry and one folder per family; pure numerics on rayon.
//! - [`inference`]: generic samplers and optimisers (HMC, sparse Cholesky, chain and
//!   pass drivers).
//! - [`summaries`]: frequency, exclusivity and FREX tables from fitted word rates.
//! - [`heap_size`]: the heap bytes a decoded model or page holds (the model cache's budget).
//! - [`rng`]: per-(seed, iteration, index) random streams, so results do not depend on
//!   thread count.
//! - [`unknown_keys`]: the nearest known key, for every refusal of an unknown key.

pub mod corpus;
pub mod graph;
pub mod heap_size;
pub mod inference;
mod isa;
pub mod models;
pub mod ranks;
pub mod rng;
pub mod selection;
pub mod summaries;
pub mod unknown_keys;
