//! Limits that keep one client from starving the others: a request rate per client,
//! queued jobs in all and per token, and a time limit on requests that do not stream.
//!
//! Why it exists: a shared service must say no early and clearly. Each limit is a server
//! flag (see `config`), and every refusal is problem+json naming that flag in `limit`,
//! with `Retry-After` where waiting helps. The rate limit is GCRA from the `governor`
//! crate, keyed by the request's token key (the public part of the bearer token) or,
//! without one, by the peer's address.

use super::error::ApiError;
use super::AppState;
pub use crate::config::Limits;
use crate::store::jobs::NotQueued;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::sync::Arc;

/// Seconds a client is told to wait when the job queue is full: about one short fit.
const QUEUE_RETRY_AFTER_S: u64 = 30;

/// The error for a job that was not queued; `gone` is the error for a deleted input.
pub fn not_queued(reason: NotQueued, limits: &Limits, gone: impl FnOnce() -> ApiError) -> ApiError {
    match reason {
        NotQueued::InputGone => gone(),
        NotQueued::QueueFull { queued } => ApiError::too_many(
            "max-queued-jobs",
            format!("the server's queue holds {queued} jobs, its limit ({}): retry when some have started", limits.max_queued_jobs),
            QUEUE_RETRY_AFTER_S,
        ),
        NotQueued::TokenQueueFull { queued } => ApiError::too_many(
            "max-queued-jobs-per-token",
            format!("this token has {queued} queued jobs, its limit ({}): wait for one to start or cancel one", limits.max_queued_jobs_per_token),
            QUEUE_RETRY_AFTER_S,
        ),
    }
}

/// At least one document and at most `--max-request-documents` in a predict or held-out
/// request.
pub fn check_document_count(given: usize, max: usize) -> Result<(), ApiError> {
    if given == 0 {
        return Err(ApiError::invalid("documents", "give at least one document"));
    }
    if given > max {
        let mut e = ApiError::invalid("documents", format!("{given} documents in one request; the server's limit is {max}: split the request"));
        e.limit = Some("max-request-documents");
        return Err(e);
    }
    Ok(())
}

/// A per-client request rate (`--rate-limit-per-s`, `--rate-limit-burst`).
pub struct ClientRateLimit {
    limiter: DefaultKeyedRateLimiter<String>,
    per_s: u32,
}

impl ClientRateLimit {
    /// `None` when `per_s` is 0 (no rate limit).
    pub fn new(per_s: u32, burst: u32) -> Option<Arc<ClientRateLimit>> {
        let rate = NonZeroU32::new(per_s)?;
        let burst = NonZeroU32::new(burst.max(per_s)).unwrap_or(rate);
        Some(Arc::new(ClientRateLimit { limiter: RateLimiter::keyed(Quota::per_second(rate).allow_burst(burst)), per_s }))
    }

    /// `Err(seconds to wait)` when `client` is over its rate.
    fn check(&self, client: &str) -> Result<(), u64> {
        self.limiter.check_key(&client.to_string()).map_err(|not_until| {
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
        })
    }

    /// Forget clients idle long enough to be back at full burst (bounds memory).
    pub fn forget_idle(&self) {
        self.limiter.retain_recent();
        self.limiter.shrink_to_fit();
    }
}

/// Who a request counts against: its token's public key, else its peer address.
fn client_key(request: &Request) -> String {
    let token_key = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' ').map(|(_, t)| t.trim()))
        .and_then(crate::auth::parse)
        .map(|t| t.key.to_string());
    match token_key {
        Some(key) => format!("token:{key}"),
        None => match request.extensions().get::<ConnectInfo<SocketAddr>>() {
            Some(ConnectInfo(addr)) => format!("ip:{}", addr.ip()),
            None => "ip:unknown".to_string(),
        },
    }
}

/// Rate-limit every request but liveness and readiness.
pub async fn rate_limit(State(state): State<AppState>, request: Request, next: Next) -> Response {
    if let Some(limit) = &state.rate_limit {
        let path = request.uri().path();
        if path != "/healthz" && path != "/readyz" {
            if let Err(wait_s) = limit.check(&client_key(&request)) {
                return ApiError::too_many(
                    "rate-limit-per-s",
                    format!("more than {} requests per second from this client: slow down", limit.per_s),
                    wait_s.max(1),
                )
                .into_response();
            }
        }
    }
    next.run(request).await
}

/// Whether a request streams a body in (uploads), which the time limit does not cover.
fn is_upload(method: &Method, path: &str) -> bool {
    method == Method::POST && (path == "/v1/corpora" || path == "/v1/graphs")
}

/// End a request that takes longer than `--request-timeout-s` with a 503; uploads are
/// exempt (their time is the client's bandwidth). Work already handed to a blocking
/// thread finishes there; only the answer is abandoned.
pub async fn time_limit(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let Some(limit) = state.limits.request_timeout else { return next.run(request).await };
    if is_upload(request.method(), request.uri().path()) {
        return next.run(request).await;
    }
    match tokio::time::timeout(limit, next.run(request)).await {
        Ok(response) => response,
        Err(_) => {
            let mut e = ApiError::unavailable(format!(
                "the request took longer than the server's limit of {} s: ask for less (fewer documents, smaller n), or submit it as a job",
                limit.as_secs_f64()
            ));
            e.limit = Some("request-timeout-s");
            e.retry_after_s = Some(1);
            e.into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_over_its_burst_is_told_to_wait_and_others_are_not() {
        let limit = ClientRateLimit::new(1, 3).unwrap();
        for _ in 0..3 {
            assert_eq!(limit.check("a"), Ok(()));
        }
        let wait = limit.check("a").unwrap_err();
        assert!((1..=1).contains(&wait), "one request per second: wait about 1 s, got {wait}");
        assert_eq!(limit.check("b"), Ok(()), "another client has its own burst");
        assert!(ClientRateLimit::new(0, 10).is_none(), "0 turns the limit off");
    }

    #[test]
    fn uploads_are_exempt_from_the_time_limit() {
        assert!(is_upload(&Method::POST, "/v1/corpora") && is_upload(&Method::POST, "/v1/graphs"));
        assert!(!is_upload(&Method::GET, "/v1/corpora") && !is_upload(&Method::POST, "/v1/models/x/predict"));
    }
}
