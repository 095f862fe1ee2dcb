//! What every handler can reach ([`AppState`]): the store, the runner, the model cache,
//! the predict pool and the limits the server was started with.
//!
//! Why it exists: handlers take one cloneable state; building it is the server's job
//! ([`super::server::start`]).

use super::error::{self, ApiResult};
use super::{auth, limits, metrics, model_cache, origin, request_memory};
use crate::jobs::Runner;
use crate::store::Store;
use std::sync::Arc;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub store: Store,
    pub runner: Arc<Runner>,
    pub metrics: Arc<metrics::HttpMetrics>,
    pub models: Arc<model_cache::ModelCache>,
    /// Threads for prediction requests (shared by all of them).
    pub predict_pool: Arc<rayon::ThreadPool>,
    /// Turns on `predict_pool`: one request's work at a time (see [`AppState::pool_turn`]).
    pub pool_turns: Arc<tokio::sync::Semaphore>,
    pub max_body_bytes: usize,
    /// Whether requests need a token ([`auth`]).
    pub auth: auth::AuthPolicy,
    /// Queue bounds, time limit, request sizes ([`limits`]).
    pub limits: Arc<limits::Limits>,
    /// Requests per second per client; `None`: unlimited.
    pub rate_limit: Option<Arc<limits::ClientRateLimit>>,
    /// The memory predict requests may hold together (`--request-memory-mb`).
    pub request_memory: Arc<request_memory::RequestMemory>,
    /// The Host names served and the origins that may change state ([`origin`]).
    pub origin: Arc<origin::OriginPolicy>,
}

impl AppState {
    /// Wait for this request's turn on the predict pool; hold the permit while its work
    /// runs there. Why one at a time: rayon lets a worker that waits inside one
    /// request's parallel loop take up another request's, so without turns every
    /// waiting request's half-done work is in memory at once (64 concurrent FREX pages
    /// of an AppStream HPC model held 1.5 GB, against 0.2 GB for one), while one
    /// request's parallel loop already keeps every thread of the pool busy. A request
    /// that waits for a turn holds nothing yet. Never await a turn while holding one.
    pub async fn pool_turn(&self) -> ApiResult<tokio::sync::SemaphorePermit<'_>> {
        self.pool_turns.acquire().await.map_err(error::ApiError::internal)
    }
}
