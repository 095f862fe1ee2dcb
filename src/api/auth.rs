//! Request authentication: who is calling, and may their role do this?
//!
//! Why it exists: one middleware in front of every route decides, so no handler checks
//! tokens and no route can be forgotten. The rule is by method: `GET` needs `read`,
//! `POST` and `PATCH` need `write`, `DELETE` needs `admin`. Liveness, readiness, the
//! OpenAPI document and the console's static files are always open (the console asks
//! for a token when the API answers 401), and `/metrics` is open when the operator says
//! so. An authenticated request carries its [`Caller`] as a request extension, for
//! handlers that record who submitted what.

use super::error::ApiError;
use super::rate_limit::ClientRateLimit;
use crate::auth::Role;
pub use crate::auth::{resolve_mode, AuthMode};
use crate::store::tokens::Caller;
use crate::store::Store;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// The server's authentication settings, resolved at start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuthPolicy {
    pub mode: AuthMode,
    /// `/metrics` answers without a token.
    pub public_metrics: bool,
}

impl AuthPolicy {
    /// No authentication (tests, loopback development).
    pub const OFF: AuthPolicy = AuthPolicy { mode: AuthMode::Off, public_metrics: true };
}

/// Paths served to anyone.
fn is_open(path: &str, public_metrics: bool) -> bool {
    matches!(path, "/healthz" | "/readyz" | "/openapi.json" | "/") || path.starts_with("/console/") || (public_metrics && path == "/metrics")
}

/// The least role a request with this method needs.
pub fn needed_role(method: &Method) -> Role {
    match *method {
        Method::GET | Method::HEAD | Method::OPTIONS => Role::Read,
        Method::DELETE => Role::Admin,
        _ => Role::Write,
    }
}

/// The token of an `Authorization: Bearer <token>` header (scheme case-insensitive).
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

fn unauthorized(detail: &str, invalid_token: bool) -> Response {
    let mut response = ApiError::unauthorized(detail).into_response();
    let challenge = if invalid_token { r#"Bearer realm="topicd", error="invalid_token""# } else { r#"Bearer realm="topicd""# };
    response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(challenge));
    response
}

/// Whether [`require_token`] will look this request's token up: tokens are required,
/// the path is not open and the request carries a bearer token. Such a request is
/// counted against the token once verified, else against its address.
pub fn will_verify_token(policy: &AuthPolicy, request: &Request) -> bool {
    policy.mode == AuthMode::Required && !is_open(request.uri().path(), policy.public_metrics) && bearer(request.headers()).is_some()
}

/// What [`require_token`] reads: the policy, the store holding the tokens, and the
/// per-client rate a verified token's requests count against.
#[derive(Clone)]
pub struct TokenGate {
    pub policy: AuthPolicy,
    pub store: Store,
    pub rate_limit: Option<Arc<ClientRateLimit>>,
}

/// The middleware: pass open paths, otherwise authenticate, count the request against
/// its verified token (or, failing verification, its address) and check the role.
pub async fn require_token(State(gate): State<TokenGate>, mut request: Request, next: Next) -> Response {
    let policy = gate.policy;
    if policy.mode == AuthMode::Off || is_open(request.uri().path(), policy.public_metrics) {
        return next.run(request).await;
    }
    let Some(token) = bearer(request.headers()) else {
        return unauthorized(
            "this server requires an API token: send `Authorization: Bearer <token>` (an operator makes one with `topicd token create`)",
            false,
        );
    };
    let caller = match gate.store.authenticate(token).await {
        Ok(Some(caller)) => caller,
        Ok(None) => {
            // A failed verification spends its address' rate, never a token's.
            if let Some(limit) = &gate.rate_limit {
                if let Err(wait_s) = limit.check(super::rate_limit::peer_client(&request)) {
                    return super::rate_limit::over_rate(limit, wait_s);
                }
            }
            return unauthorized("the bearer token is not valid: unknown, revoked or mistyped", true);
        }
        Err(e) => return ApiError::from(e).into_response(),
    };
    if let Some(limit) = &gate.rate_limit {
        if let Err(wait_s) = limit.check(super::rate_limit::Client::Token(caller.key.clone())) {
            return super::rate_limit::over_rate(limit, wait_s);
        }
    }
    let needed = needed_role(request.method());
    if !caller.role.allows(needed) {
        let detail = format!("token {:?} has role {}; {} {} needs role {needed}", caller.name, caller.role, request.method(), request.uri().path());
        return ApiError::forbidden(detail).into_response();
    }
    request.extensions_mut().insert::<Caller>(caller);
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn loopback_defaults_to_off_and_any_other_address_to_required() {
        assert_eq!(resolve_mode(addr("127.0.0.1:8080"), None, false), Ok(AuthMode::Off));
        assert_eq!(resolve_mode(addr("[::1]:8080"), None, false), Ok(AuthMode::Off));
        assert_eq!(resolve_mode(addr("0.0.0.0:8080"), None, false), Ok(AuthMode::Required));
        assert_eq!(resolve_mode(addr("127.0.0.1:8080"), Some(AuthMode::Required), false), Ok(AuthMode::Required));
    }

    #[test]
    fn no_tokens_beyond_loopback_needs_the_insecure_flag() {
        let e = resolve_mode(addr("0.0.0.0:8080"), Some(AuthMode::Off), false).unwrap_err();
        assert!(e.contains("--insecure-no-auth") && e.contains("0.0.0.0:8080"), "{e}");
        assert_eq!(resolve_mode(addr("0.0.0.0:8080"), Some(AuthMode::Off), true), Ok(AuthMode::Off));
        assert_eq!(resolve_mode(addr("10.0.0.5:8080"), None, true), Ok(AuthMode::Off));
        assert_eq!(resolve_mode(addr("10.0.0.5:8080"), Some(AuthMode::Required), true), Ok(AuthMode::Required));
    }

    #[test]
    fn roles_by_method_and_open_paths() {
        assert_eq!(needed_role(&Method::GET), Role::Read);
        assert_eq!(needed_role(&Method::POST), Role::Write);
        assert_eq!(needed_role(&Method::PATCH), Role::Write);
        assert_eq!(needed_role(&Method::DELETE), Role::Admin);
        for open in ["/healthz", "/readyz", "/openapi.json", "/", "/console/js/main.js"] {
            assert!(is_open(open, false), "{open}");
        }
        assert!(!is_open("/metrics", false) && is_open("/metrics", true));
        assert!(!is_open("/v1/corpora", true) && !is_open("/consolex", true));
    }

    #[test]
    fn bearer_header_parsing() {
        let mut h = HeaderMap::new();
        assert_eq!(bearer(&h), None);
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("bearer tpd_abc"));
        assert_eq!(bearer(&h), Some("tpd_abc"));
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic dXNlcjpwYXNz"));
        assert_eq!(bearer(&h), None);
    }
}
