//! Requests a browser was tricked into sending: the Host allowlist and the cross-site
//! guard on state-changing routes.
//!
//! Why it exists: a server on a loopback address without tokens trusts whatever reaches
//! it, and two browser tricks reach it from another site. DNS rebinding points the
//! attacker's name at 127.0.0.1, so the page's requests arrive with
//! `Host: attacker.example`: on a loopback bind only `localhost`, `127.0.0.1` and
//! `[::1]` (any port) are served, plus the names of `--allowed-hosts` (which also turns
//! the check on for other binds, e.g. behind a proxy); others get 421. A cross-site
//! form or `no-cors` fetch can POST without a preflight only as `text/plain`, a form
//! type or with no body: state-changing routes take JSON or the upload types (415
//! otherwise), and a request whose `Origin` (or `Sec-Fetch-Site`) says another site is
//! refused (403) unless CORS allows that origin.

use super::error::ApiError;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// The Host names served and the origins allowed across sites.
#[derive(Debug, Clone, Default)]
pub struct OriginPolicy {
    /// Host names served (lowercase, without port); empty: any.
    hosts: Vec<String>,
    /// Origins CORS allows (`--cors-origins`); `*` allows any.
    cors_origins: Vec<String>,
}

/// The names a loopback server answers to by default.
const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

impl OriginPolicy {
    /// The policy of a server bound to a loopback address or not, with the operator's
    /// extra names and CORS origins.
    pub fn new(loopback: bool, allowed_hosts: &[String], cors_origins: &[String]) -> Self {
        let extra = allowed_hosts.iter().map(|h| h.trim().to_ascii_lowercase()).filter(|h| !h.is_empty());
        let mut hosts: Vec<String> = extra.collect();
        if loopback || !hosts.is_empty() {
            hosts.extend(LOOPBACK_NAMES.iter().map(|n| n.to_string()));
        }
        let cors_origins = cors_origins.iter().map(|o| o.trim().trim_end_matches('/').to_ascii_lowercase()).filter(|o| !o.is_empty()).collect();
        OriginPolicy { hosts, cors_origins }
    }

    /// Whether `host` (a Host header's value: a name or address, maybe with a port) is
    /// served.
    fn serves_host(&self, host: Option<&str>) -> bool {
        if self.hosts.is_empty() {
            return true;
        }
        let Some(host) = host else { return false };
        let name = host_name(host).to_ascii_lowercase();
        self.hosts.contains(&name)
    }

    /// Whether a request from `origin` may change state: the same host as the request,
    /// or an origin CORS allows.
    fn allows_origin(&self, origin: &str, host: Option<&str>) -> bool {
        let origin = origin.trim_end_matches('/').to_ascii_lowercase();
        if self.cors_origins.iter().any(|o| o == "*" || *o == origin) {
            return true;
        }
        let origin_authority = origin.split_once("://").map(|(_, rest)| rest);
        matches!((origin_authority, host), (Some(a), Some(h)) if a == h.to_ascii_lowercase())
    }
}

/// The name part of a Host value: `[::1]:8080` → `[::1]`, `localhost:80` → `localhost`.
fn host_name(host: &str) -> &str {
    if host.starts_with('[') {
        return host.find(']').map_or(host, |end| &host[..=end]);
    }
    host.rsplit_once(':').map_or(host, |(name, _)| name)
}

/// The request's Host: the header, else the URI's authority (HTTP/2).
fn request_host(request: &Request) -> Option<String> {
    let header = request.headers().get(header::HOST).and_then(|v| v.to_str().ok());
    header.map(str::to_string).or_else(|| request.uri().authority().map(|a| a.as_str().to_string()))
}

/// Whether the method changes state (browsers send these cross-site).
fn changes_state(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// The media types a state-changing request may carry: JSON and the upload types. No
/// media type at all is accepted (a request without a body; curl users).
pub const STATE_CHANGING_TYPES: [&str; 4] = ["application/json", "application/x-ndjson", "application/jsonl", "application/json-lines"];

/// A browser's word that the request comes from another site: an `Origin` that is not
/// this host nor allowed by CORS, or `Sec-Fetch-Site: cross-site` without an allowed
/// origin.
fn cross_site(policy: &OriginPolicy, headers: &HeaderMap, host: Option<&str>) -> Option<String> {
    let origin = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok());
    match origin {
        Some(o) if !policy.allows_origin(o, host) => Some(format!("requests from origin {o:?} may not change state on this server")),
        Some(_) => None,
        None => {
            let site = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok());
            (site == Some("cross-site")).then(|| "cross-site requests may not change state on this server".to_string())
        }
    }
}

/// The middleware: 421 for a Host the server does not serve (liveness and readiness
/// excepted), 415 and 403 for state-changing requests a cross-site page could send.
pub async fn guard(State(policy): State<Arc<OriginPolicy>>, request: Request, next: Next) -> Response {
    let policy = &*policy;
    let host = request_host(&request);
    let path = request.uri().path();
    if path != "/healthz" && path != "/readyz" && !policy.serves_host(host.as_deref()) {
        let shown = host.as_deref().unwrap_or("(none)");
        return ApiError::misdirected(format!(
            "this server does not serve the host {shown:?}: call it by localhost, 127.0.0.1 or [::1], or start it with --allowed-hosts naming this host"
        ))
        .into_response();
    }
    if changes_state(request.method()) {
        let media = super::extract::media_type(request.headers());
        if !media.is_empty() && !STATE_CHANGING_TYPES.contains(&media.as_str()) {
            return ApiError::unsupported_media_type(&media).into_response();
        }
        if let Some(detail) = cross_site(policy, request.headers(), host.as_deref()) {
            let mut e = ApiError::forbidden(format!("{detail}: list it in --cors-origins to allow it"));
            e.field = Some("Origin".into());
            return e.into_response();
        }
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn a_loopback_server_serves_its_own_names_and_the_allowed_ones() {
        let p = OriginPolicy::new(true, &[], &[]);
        for h in ["localhost", "localhost:8080", "127.0.0.1:8080", "[::1]:8080", "[::1]", "LOCALHOST:1"] {
            assert!(p.serves_host(Some(h)), "{h}");
        }
        for h in ["attacker.example", "attacker.example:8080", "127.0.0.1.attacker.example", "localhost.evil:80"] {
            assert!(!p.serves_host(Some(h)), "{h}");
        }
        assert!(!p.serves_host(None));
        let p = OriginPolicy::new(true, &["topics.example.org".into()], &[]);
        assert!(p.serves_host(Some("topics.example.org:443")) && p.serves_host(Some("localhost")));
        // Beyond loopback no check, unless names are given.
        assert!(OriginPolicy::new(false, &[], &[]).serves_host(Some("anything")));
        assert!(!OriginPolicy::new(false, &["a.example".into()], &[]).serves_host(Some("b.example")));
    }

    #[test]
    fn cross_site_origins_are_refused_unless_cors_allows_them() {
        let p = OriginPolicy::new(true, &[], &["https://app.example".into()]);
        let mut h = HeaderMap::new();
        assert_eq!(cross_site(&p, &h, Some("127.0.0.1:8080")), None, "no Origin: not a browser's cross-site request");
        h.insert(header::ORIGIN, HeaderValue::from_static("http://127.0.0.1:8080"));
        assert_eq!(cross_site(&p, &h, Some("127.0.0.1:8080")), None, "same origin");
        h.insert(header::ORIGIN, HeaderValue::from_static("https://app.example"));
        assert_eq!(cross_site(&p, &h, Some("127.0.0.1:8080")), None, "allowed by CORS");
        for o in ["http://attacker.example", "null", "http://127.0.0.1:9999"] {
            h.insert(header::ORIGIN, HeaderValue::from_str(o).unwrap());
            assert!(cross_site(&p, &h, Some("127.0.0.1:8080")).is_some(), "{o}");
        }
        let mut h = HeaderMap::new();
        h.insert("sec-fetch-site", HeaderValue::from_static("cross-site"));
        assert!(cross_site(&p, &h, Some("127.0.0.1:8080")).is_some());
        assert_eq!(host_name("[::1]:80"), "[::1]");
        assert_eq!(host_name("example.org"), "example.org");
    }
}
