//! The HTTP API: router, shared state, and the server's life from start to shutdown.
//!
//! Handlers are thin: parse (see [`extract`]), call the store, the runner or a model on
//! a blocking thread, and shape the response. Wire types live in each resource's file;
//! errors are problem+json ([`error`]).

pub mod auth;
pub mod body;
pub mod cache_control;
pub mod coherence;
pub mod console;
pub mod corpora;
pub mod csv_cells;
pub mod effects;
pub mod error;
pub mod evaluations;
pub mod extract;
pub mod families;
pub mod graphs;
pub mod jobs;
pub mod limits;
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
pub mod topic_documents;
pub mod topic_intervals;
pub mod topic_map;
pub mod topic_names;
pub mod topic_pages;
pub mod topic_query;

use crate::config::ServeConfig;
use crate::jobs::{Runner, RunnerConfig};
use crate::store::Store;
use axum::extract::DefaultBodyLimit;
use axum::http::header::X_CONTENT_TYPE_OPTIONS;
use axum::http::{HeaderName, HeaderValue, Method};
use axum::routing::{get, patch, post};
use axum::Router;
use error::ApiResult;
use std::sync::Arc;
use std::time::Duration;
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::trace::TraceLayer;

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

/// Every route the server answers: (method, path in OpenAPI syntax). The router below is
/// built from the same handlers, and a test checks this table against
/// `openapi/openapi.yaml` and against the live router.
pub const ROUTES: &[(&str, &str)] = &[
    ("get", "/healthz"),
    ("get", "/readyz"),
    ("get", "/metrics"),
    ("get", "/openapi.json"),
    ("get", "/"),
    ("get", "/console/{path}"),
    ("post", "/v1/corpora"),
    ("get", "/v1/corpora"),
    ("get", "/v1/corpora/{id}"),
    ("delete", "/v1/corpora/{id}"),
    ("get", "/v1/corpora/{id}/tokens"),
    ("post", "/v1/jobs"),
    ("get", "/v1/jobs"),
    ("get", "/v1/jobs/{id}"),
    ("get", "/v1/jobs/{id}/trace"),
    ("post", "/v1/jobs/{id}/cancel"),
    ("get", "/v1/families"),
    ("get", "/v1/models"),
    ("get", "/v1/models/{id}"),
    ("delete", "/v1/models/{id}"),
    ("get", "/v1/models/{id}/topics"),
    ("patch", "/v1/models/{id}/topics/{topic}"),
    ("get", "/v1/models/{id}/topics/{topic}/frex"),
    ("get", "/v1/models/{id}/topics/{topic}/documents"),
    ("get", "/v1/models/{id}/coherence"),
    ("get", "/v1/models/{id}/topic-map"),
    ("post", "/v1/models/{id}/predict"),
    ("get", "/v1/models/{id}/evaluation"),
    ("post", "/v1/models/{id}/evaluation"),
    ("post", "/v1/models/{id}/heldout-likelihood"),
    ("get", "/v1/models/{id}/correlations"),
    ("get", "/v1/models/{id}/effects"),
    ("post", "/v1/graphs"),
    ("get", "/v1/graphs"),
    ("get", "/v1/graphs/{id}"),
    ("delete", "/v1/graphs/{id}"),
    ("get", "/v1/models/{id}/communities"),
];

/// The application router (without the outer middleware of [`serve`]). A replica that
/// does not serve the API (`--role worker`) answers only health, readiness and metrics,
/// behind the same rate limit, token check and request metrics.
pub fn router(state: AppState, serves_api: bool) -> Router {
    let body_limit = state.max_body_bytes;
    let ops = Router::new().route("/healthz", get(ops::healthz)).route("/readyz", get(ops::readyz)).route("/metrics", get(ops::metrics));
    let routes = if serves_api { ops.merge(api_routes()) } else { ops };
    routes
        .fallback(ops::not_found)
        .method_not_allowed_fallback(ops::method_not_allowed)
        .layer(axum::middleware::from_fn_with_state(state.clone(), limits::time_limit))
        .layer(axum::middleware::from_fn_with_state(state.clone(), auth::require_token))
        .layer(axum::middleware::from_fn_with_state(state.clone(), limits::rate_limit))
        .layer(axum::middleware::from_fn_with_state(state.clone(), origin::guard))
        .layer(axum::middleware::from_fn_with_state(state.metrics.clone(), metrics::record))
        .layer(DefaultBodyLimit::max(body_limit))
        .with_state(state)
}

/// Every route but the operational three.
fn api_routes() -> Router<AppState> {
    Router::new()
        .route("/openapi.json", get(ops::openapi))
        .route("/v1/corpora", post(corpora::create).get(corpora::list))
        .route("/v1/corpora/{id}", get(corpora::get_one).delete(corpora::delete))
        .route("/v1/corpora/{id}/tokens", get(coherence::tokens))
        .route("/v1/jobs", post(jobs::create).get(jobs::list))
        .route("/v1/jobs/{id}", get(jobs::get_one))
        .route("/v1/jobs/{id}/trace", get(jobs::trace))
        .route("/v1/jobs/{id}/cancel", post(jobs::cancel))
        .route("/v1/families", get(families::list))
        .route("/v1/models", get(models::list))
        .route("/v1/models/{id}", get(models::get_one).delete(models::delete))
        .route("/v1/models/{id}/evaluation", get(models::evaluation).post(evaluations::evaluate))
        .route("/v1/models/{id}/heldout-likelihood", post(evaluations::heldout))
        .route("/v1/models/{id}/correlations", get(evaluations::correlations))
        .route("/v1/models/{id}/effects", get(effects::effects))
        .route("/v1/models/{id}/topics", get(models::topics))
        .route("/v1/models/{id}/topics/{topic}", patch(topic_names::rename))
        .route("/v1/models/{id}/topics/{topic}/frex", get(models::topic_frex))
        .route("/v1/models/{id}/topics/{topic}/documents", get(topic_documents::list))
        .route("/v1/models/{id}/coherence", get(coherence::coherence))
        .route("/v1/models/{id}/topic-map", get(topic_map::get))
        .route("/v1/models/{id}/predict", post(predict::predict))
        .route("/v1/graphs", post(graphs::create).get(graphs::list))
        .route("/v1/graphs/{id}", get(graphs::get_one).delete(graphs::delete))
        .route("/v1/models/{id}/communities", get(graphs::communities))
        .merge(console::routes())
}

/// Wrap the router with request ids, tracing and CORS.
pub fn with_middleware(router: Router, cors_origins: &[String]) -> Router {
    let request_id = HeaderName::from_static("x-request-id");
    let mut app = router
        .layer(TraceLayer::new_for_http().make_span_with(|req: &axum::http::Request<_>| {
            let id = req.headers().get("x-request-id").and_then(|v| v.to_str().ok()).unwrap_or("-").to_string();
            tracing::info_span!("request", method = %req.method(), path = %req.uri().path(), request_id = %id)
        }))
        .layer(PropagateRequestIdLayer::new(request_id.clone()))
        .layer(SetRequestIdLayer::new(request_id, MakeRequestUuid))
        // Every answer is read only as the type it declares: a browser must not guess
        // that a JSON or text answer holding user-supplied words is HTML or script.
        .layer(SetResponseHeaderLayer::if_not_present(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")))
        .layer(axum::middleware::from_fn(cache_control::no_store_on_api));
    let origins: Vec<&String> = cors_origins.iter().filter(|o| !o.trim().is_empty()).collect();
    if !origins.is_empty() {
        let allow =
            if origins.iter().any(|o| o.trim() == "*") { AllowOrigin::any() } else { AllowOrigin::list(origins.iter().filter_map(|o| o.trim().parse().ok())) };
        app = app.layer(
            CorsLayer::new()
                .allow_origin(allow)
                .allow_methods([Method::GET, Method::POST, Method::PATCH, Method::DELETE, Method::OPTIONS])
                .allow_headers([axum::http::header::CONTENT_TYPE, axum::http::header::AUTHORIZATION, HeaderName::from_static("x-request-id")])
                .expose_headers([axum::http::header::LOCATION, HeaderName::from_static("x-request-id")])
                .max_age(Duration::from_secs(3600)),
        );
    }
    app
}

/// A running server: its address and a handle to stop it.
pub struct Server {
    pub addr: std::net::SocketAddr,
    shutdown: tokio::sync::oneshot::Sender<()>,
    handle: tokio::task::JoinHandle<()>,
}

impl Server {
    /// Graceful stop: stop accepting, let requests finish, re-queue running fits.
    pub async fn stop(self) {
        let _ = self.shutdown.send(());
        let _ = self.handle.await;
    }
}

/// Open the store, recover interrupted jobs, start the runner and bind the listener.
pub async fn start(config: &ServeConfig) -> anyhow_like::Result<Server> {
    let auth_mode = auth::resolve_mode(config.addr, config.auth, config.insecure_no_auth)?;
    let store = Store::connect(&config.db, &config.store_options()).await?;
    if auth_mode == auth::AuthMode::Required && store.live_token_count().await? == 0 {
        tracing::warn!(
            "API tokens are required but none exists: every request but /healthz, /readyz, /openapi.json and the console gets 401 \
             until an operator runs `topicd token create --name NAME --role admin` against this database"
        );
    }
    let (requeued, failed) = store.recover_interrupted_jobs(config.max_attempts).await?;
    if requeued + failed > 0 {
        tracing::warn!(requeued, failed, "recovered jobs interrupted by the previous process");
    }
    let runner = Runner::new(
        store.clone(),
        RunnerConfig {
            threads: config.threads.max(1),
            max_jobs: config.max_jobs.max(1),
            shutdown_grace: Duration::from_secs(config.shutdown_grace_s),
            checkpoint_every_s: config.checkpoint_every_s,
            worker: config.worker(),
            claims_jobs: config.role.runs_jobs(),
            fit_memory_bytes: config.fit_memory_bytes(),
            mpi_launch: config.mpi_launch.clone(),
        },
    );
    let models = Arc::new(model_cache::ModelCache::new(usize::try_from(config.model_cache_bytes()).unwrap_or(usize::MAX)));
    let follow_models = tokio::spawn(models.clone().follow(store.clone()));
    let predict_pool = rayon::ThreadPoolBuilder::new().num_threads(config.threads.max(1)).thread_name(|i| format!("predict-{i}")).build()?;
    let state = AppState {
        store,
        runner: runner.clone(),
        metrics: Arc::new(metrics::HttpMetrics::default()),
        models: models.clone(),
        predict_pool: Arc::new(predict_pool),
        pool_turns: Arc::new(tokio::sync::Semaphore::new(1)),
        max_body_bytes: config.max_body_mb.saturating_mul(1024 * 1024),
        auth: auth::AuthPolicy { mode: auth_mode, public_metrics: config.public_metrics },
        limits: Arc::new(config.limits()),
        rate_limit: limits::ClientRateLimit::new(config.rate_limit_per_s, config.rate_limit_burst),
        request_memory: Arc::new(request_memory::RequestMemory::new(config.request_memory_bytes())),
        origin: Arc::new(origin::OriginPolicy::new(config.addr.ip().is_loopback(), &config.allowed_hosts, &config.cors_origins)),
    };
    if let Some(rate_limit) = state.rate_limit.clone() {
        tokio::spawn(async move {
            let mut every = tokio::time::interval(Duration::from_secs(60));
            loop {
                every.tick().await;
                rate_limit.forget_idle();
            }
        });
    }
    let app = with_middleware(router(state, config.role.serves_api()), &config.cors_origins);
    let listener = tokio::net::TcpListener::bind(config.addr).await?;
    let addr = listener.local_addr()?;
    let runner_task = tokio::spawn(runner.clone().run());
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let connection_limits = listener::ConnectionLimits::of(config);
    let handle = tokio::spawn(async move {
        listener::serve(listener, app, connection_limits, async move {
            let _ = rx.await;
        })
        .await;
        runner.shutdown().await;
        runner_task.abort();
        follow_models.abort();
    });
    tracing::info!(
        %addr,
        auth = ?auth_mode,
        db = %config.db,
        role = ?config.role,
        model_cache_mb = config.model_cache_bytes() / 1048576,
        fit_memory_mb = config.fit_memory_bytes() / 1048576,
        request_memory_mb = config.request_memory_bytes() / 1048576,
        "topicd listening"
    );
    Ok(Server { addr, shutdown: tx, handle })
}

/// Run until SIGINT/SIGTERM, then shut down gracefully.
pub async fn serve(config: ServeConfig) -> anyhow_like::Result<()> {
    let server = start(&config).await?;
    shutdown_signal().await;
    tracing::info!("shutting down: finishing requests, re-queuing running fits");
    server.stop().await;
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        if let Ok(mut s) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            s.recv().await;
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
}

/// A boxed error for start-up paths, where any failure ends the process with a message.
pub mod anyhow_like {
    pub type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;
}
