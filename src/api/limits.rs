//! Limits that keep one client from starving the others: a request rate per client,
//! queued jobs in all and per token, and a time limit on requests that do not stream.
//!
//! Why it exists: a shared service must say no early and clearly. Each limit is a server
//! flag (see `config`), and every refusal is problem+json naming that flag in `limit`,
//! with `Retry-After` where waiting helps. The rate limit ([`super::rate_limit`]) counts
//! a verified token's requests against the token and every other request against its
//! peer address.

use super::error::ApiError;
pub use super::rate_limit::{over_rate, peer_client, Client, ClientRateLimit};
pub use crate::config::Limits;
use crate::store::jobs::NotQueued;
use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
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

/// What [`rate_limit`] reads: the per-client rate (`None`: unlimited) and whether the
/// auth middleware will verify the request's token.
#[derive(Clone)]
pub struct RateGate {
    pub limit: Option<Arc<ClientRateLimit>>,
    pub auth: super::auth::AuthPolicy,
}

/// Rate-limit every request but liveness and readiness, before any database work. A
/// request whose token the auth middleware will verify is counted there, against the
/// token once verified or against its address if not ([`super::auth`]); here it is only
/// turned away when its address is already over its rate (a flood of made-up tokens).
/// Every other request (no token, an open path, a server without tokens) is counted
/// against its address now.
pub async fn rate_limit(State(gate): State<RateGate>, request: Request, next: Next) -> Response {
    if let Some(limit) = &gate.limit {
        let path = request.uri().path();
        if path != "/healthz" && path != "/readyz" {
            let address = peer_client(&request);
            let verdict = if super::auth::will_verify_token(&gate.auth, &request) { limit.peek(&address) } else { limit.check(address) };
            if let Err(wait_s) = verdict {
                return over_rate(limit, wait_s);
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
pub async fn time_limit(State(limits): State<Arc<Limits>>, request: Request, next: Next) -> Response {
    let Some(limit) = limits.request_timeout else { return next.run(request).await };
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
    fn uploads_are_exempt_from_the_time_limit() {
        assert!(is_upload(&Method::POST, "/v1/corpora") && is_upload(&Method::POST, "/v1/graphs"));
        assert!(!is_upload(&Method::GET, "/v1/corpora") && !is_upload(&Method::POST, "/v1/models/x/predict"));
    }
}
