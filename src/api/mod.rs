//! The HTTP API: router, shared state, and the server's life from start to shutdown.
//!
//! Handlers are thin: parse (see [`extract`]), call the store, the runner or a model on
//! a blocking thread, and shape the response. Wire types live in each resource's file;
//! errors are problem+json ([`error`]).

pub mod auth;
pub mod body;
pub mod cache_control;
pub mod coherence;
pub mod compare;
pub mod console;
pub mod corpora;
pub mod corpus_like;
pub mod csv_cells;
pub mod derived;
pub mod edits;
pub mod effects;
pub mod error;
pub mod evaluations;
pub mod extract;
pub mod families;
pub mod from_parent;
pub mod graphs;
pub mod jobs;
pub mod limits;
pub mod lineage;
pub mod listener;
pub mod metrics;
pub mod model_cache;
pub mod models;
pub mod ops;
pub mod origin;
pub mod predict;
pub mod ranked_documents;
pub mod rate_limit;
pub mod request_memory;
pub mod routes;
pub mod server;
pub mod state;
pub mod sweep_view;
pub mod sweeps;
pub mod topic_documents;
pub mod topic_intervals;
pub mod topic_map;
pub mod topic_names;
pub mod topic_pages;
pub mod topic_query;
pub mod updates;

pub use routes::{router, with_middleware, ROUTES};
pub use server::{anyhow_like, serve, start, Server};
pub use state::AppState;
