//! The web console: `GET /` and `GET /console/{path}` serve the browser frontend kept in
//! the top-level `console/` folder.
//!
//! Why it exists: topicd answers only JSON, and a person should be able to upload a
//! corpus, start a fit and explore a model with nothing but a browser. The files are
//! embedded in the binary at compile time (`include_bytes!`), so serving the console
//! reads no file at run time, needs no CDN and no Node, and works offline and behind a
//! firewall. The console itself talks only to the public `/v1` API.
//!
//! Vendored libraries (`console/vendor/`, their version in the file name) are cached for
//! a year; the console's own files are revalidated on every load so a new binary's
//! console is seen at once.
//!
//! Every console response carries the headers a browser needs to trust the page (see
//! [`security_headers`]): the console holds a bearer token in the tab, so no other
//! origin's script, frame or form may reach it.

use super::error::ApiError;
use super::AppState;
use axum::extract::Path;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

/// One embedded file: its path under `console/`, its content type and its bytes.
pub struct Asset {
    pub path: &'static str,
    pub content_type: &'static str,
    pub bytes: &'static [u8],
}

macro_rules! asset {
    ($path:literal, $type:expr) => {
        Asset { path: $path, content_type: $type, bytes: include_bytes!(concat!("../../console/", $path)) }
    };
}

const JS: &str = "text/javascript; charset=utf-8";

/// The page served at `/`.
pub const INDEX: Asset = asset!("index.html", "text/html; charset=utf-8");

/// Every file served under `/console/` (a test checks this list against the folder).
pub const ASSETS: &[Asset] = &[
    asset!("app.css", "text/css; charset=utf-8"),
    asset!("js/main.js", JS),
    asset!("js/api.js", JS),
    asset!("js/ui.js", JS),
    asset!("js/charts.js", JS),
    asset!("js/schema_form.js", JS),
    asset!("js/topic_names.js", JS),
    asset!("js/effect_plots.js", JS),
    asset!("js/covariate_pickers.js", JS),
    asset!("js/pages/corpora.js", JS),
    asset!("js/pages/corpus.js", JS),
    asset!("js/pages/graphs.js", JS),
    asset!("js/pages/fit.js", JS),
    asset!("js/pages/jobs.js", JS),
    asset!("js/pages/job.js", JS),
    asset!("js/pages/models.js", JS),
    asset!("js/pages/model.js", JS),
    asset!("js/pages/topics.js", JS),
    asset!("js/pages/model_extras.js", JS),
    asset!("js/pages/effects.js", JS),
    asset!("js/pages/convergence.js", JS),
    asset!("js/pages/sweep.js", JS),
    asset!("js/pages/compare.js", JS),
    asset!("js/pages/edits.js", JS),
    asset!("js/pages/versions.js", JS),
    asset!("js/pages/updates.js", JS),
    asset!("vendor/d3-7.9.2.min.js", JS),
    asset!("vendor/d3-7.9.2.LICENSE", "text/plain; charset=utf-8"),
    asset!("vendor/plot-0.6.17.umd.min.js", JS),
    asset!("vendor/plot-0.6.17.LICENSE", "text/plain; charset=utf-8"),
];

/// Cache policy: versioned vendor files never change under their name.
fn cache_control(path: &str) -> &'static str {
    if path.starts_with("vendor/") {
        "public, max-age=31536000, immutable"
    } else {
        "no-cache"
    }
}

fn respond(asset: &Asset) -> Response {
    ([(header::CONTENT_TYPE, asset.content_type), (header::CACHE_CONTROL, cache_control(asset.path))], asset.bytes).into_response()
}

/// The console's Content-Security-Policy: everything from the service's own origin, no
/// inline or evaluated script, no plugin, no `<base>`, forms only to itself, and no
/// framing by any page (clickjacking). `img-src data:` is for the page's empty favicon
/// (`data:,`) and the PNG download, which draws the chart's SVG through a `data:` image.
///
/// Styles allow `'unsafe-inline'`, and only styles: Observable Plot inserts a `<style>`
/// element into every chart and legend it draws (its default sizing and text rules),
/// which `style-src 'self'` would block (as it would the `style` attributes the console
/// sets for bar widths). Scripts stay strict, which is what stops an injected script.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; \
     connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// Add the browser security headers to a console response (the page, an asset or a
/// 404): the CSP above; `X-Frame-Options: DENY` for browsers without `frame-ancestors`;
/// `nosniff` so a file is run only as its declared type; and no `Referer`, so the
/// console's URLs (model and job ids) do not leak to links it shows.
pub async fn security_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONTENT_SECURITY_POLICY));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

/// `GET /` and `GET /console/{path}`, with [`security_headers`] on every answer.
pub fn routes() -> Router<AppState> {
    Router::new().route("/", get(index)).route("/console/{*path}", get(asset)).layer(axum::middleware::map_response(security_headers))
}

/// `GET /`: the console's page.
pub async fn index() -> Response {
    respond(&INDEX)
}

/// `GET /console/{path}`: one embedded asset, or a 404 problem naming it.
pub async fn asset(Path(path): Path<String>) -> Result<Response, ApiError> {
    ASSETS.iter().find(|a| a.path == path).map(respond).ok_or_else(|| ApiError::not_found("console asset", &path))
}
