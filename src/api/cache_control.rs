//! `Cache-Control: no-store` on every `/v1` answer.
//!
//! Why it exists: `/v1` answers are read with a token and may hold a user's corpora,
//! models and topic names; a browser's disk cache or a shared proxy must never keep
//! them for the next person at the machine or behind the proxy. Every `/v1` answer gets
//! `no-store`, errors included (a 404 or 422 names ids and fields too), and it replaces
//! any other caching header there. Other paths are left alone: the console's page and
//! files under `/` and `/console/` keep their own caching (`console::cache_control`),
//! and `/healthz`, `/readyz`, `/metrics` and `/openapi.json` hold nothing of a user's.

use axum::extract::Request;
use axum::http::header::CACHE_CONTROL;
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;

/// Whether `path` is the API's: `/v1` itself or anything under it.
pub fn is_api_path(path: &str) -> bool {
    path == "/v1" || path.starts_with("/v1/")
}

/// Middleware: `Cache-Control: no-store` on the answer to any [`is_api_path`] request.
pub async fn no_store_on_api(request: Request, next: Next) -> Response {
    let api = is_api_path(request.uri().path());
    let mut response = next.run(request).await;
    if api {
        response.headers_mut().insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_v1_paths_are_the_api() {
        for api in ["/v1", "/v1/", "/v1/corpora", "/v1/models/x/topics"] {
            assert!(is_api_path(api), "{api}");
        }
        for other in ["/", "/console/app.js", "/healthz", "/openapi.json", "/v10", "/v1x/corpora", "/api/v1/corpora"] {
            assert!(!is_api_path(other), "{other}");
        }
    }
}
