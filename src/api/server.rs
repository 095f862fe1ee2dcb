//! The server's life: open the store, recover interrupted jobs, start the runner and
//! the listener ([`start`]), and stop gracefully on a signal ([`serve`]).
//!
//! Why it exists: `topicd serve` and the tests start the very same server; only the
//! configuration differs.

use super::routes::{router, with_middleware};
use super::{auth, limits, listener, metrics, model_cache, origin, request_memory, AppState};
use crate::config::ServeConfig;
use crate::jobs::{Runner, RunnerConfig};
use crate::store::Store;
use std::sync::Arc;
use std::time::Duration;

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
