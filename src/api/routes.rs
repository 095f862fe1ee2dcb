//! Every route the server answers ([`ROUTES`]), the router built from the same
//! handlers, and the middleware around it.
//!
//! Why it exists: one place to read what the API serves and in which order its layers
//! (time limit, token, rate limit, origin, metrics, body limit) see a request.

use super::{
    auth, cache_control, coherence, console, corpora, effects, evaluations, families, graphs, jobs, limits, metrics, models, ops, origin, predict, sweeps,
};
use super::{compare, edits, lineage, topic_documents, topic_map, topic_names, updates, AppState};
use axum::extract::DefaultBodyLimit;
use axum::http::header::X_CONTENT_TYPE_OPTIONS;
use axum::http::{HeaderName, HeaderValue, Method};
use axum::routing::{get, patch, post};
use axum::Router;
use std::time::Duration;
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::trace::TraceLayer;

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
    ("post", "/v1/sweeps"),
    ("get", "/v1/sweeps"),
    ("get", "/v1/sweeps/{id}"),
    ("delete", "/v1/sweeps/{id}"),
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
    ("get", "/v1/models/{id}/compare/{other}"),
    ("post", "/v1/models/{id}/edits"),
    ("post", "/v1/models/{id}/update"),
    ("get", "/v1/models/{id}/lineage"),
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
    let token_gate = auth::TokenGate { policy: state.auth, store: state.store.clone(), rate_limit: state.rate_limit.clone() };
    let rate_gate = limits::RateGate { limit: state.rate_limit.clone(), auth: state.auth };
    let ops = Router::new().route("/healthz", get(ops::healthz)).route("/readyz", get(ops::readyz)).route("/metrics", get(ops::metrics));
    let routes = if serves_api { ops.merge(api_routes()) } else { ops };
    routes
        .fallback(ops::not_found)
        .method_not_allowed_fallback(ops::method_not_allowed)
        .layer(axum::middleware::from_fn_with_state(state.limits.clone(), limits::time_limit))
        .layer(axum::middleware::from_fn_with_state(token_gate, auth::require_token))
        .layer(axum::middleware::from_fn_with_state(rate_gate, limits::rate_limit))
        .layer(axum::middleware::from_fn_with_state(state.origin.clone(), origin::guard))
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
        .route("/v1/sweeps", post(sweeps::create).get(sweeps::list))
        .route("/v1/sweeps/{id}", get(sweeps::get_one).delete(sweeps::cancel))
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
        .route("/v1/models/{id}/compare/{other}", get(compare::compare))
        .route("/v1/models/{id}/edits", post(edits::create))
        .route("/v1/models/{id}/update", post(updates::create))
        .route("/v1/models/{id}/lineage", get(lineage::get_one))
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
