//! One error type for every handler, rendered as RFC 9457 `application/problem+json`.
//!
//! Validation errors name what is wrong: the `field` (a JSON path such as
//! `documents[3].counts.foo` or `params.topics`), the NDJSON `line`, or the `label`.
//! Internal errors are logged with their detail and shown to the client only as
//! "internal error".

use super::model_cache::ModelCacheError;
use crate::corpus::CorpusError;
use crate::models::ParamError;
use crate::store::{StoreError, Unwritable};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value};
use std::ops::{Deref, DerefMut};

/// A handler error, boxed so that it is one pointer wide: the problem's fields take
/// 128 bytes, which every `ApiResult<T>` would otherwise carry, success or not. The
/// fields are read and written through `Deref` as if it were the `Problem`.
#[derive(Debug, Clone)]
pub struct ApiError(Box<Problem>);

/// What an `ApiError` says: the fields of the problem document.
#[derive(Debug, Clone)]
pub struct Problem {
    pub status: StatusCode,
    /// Short slug; the problem `type` is `urn:topicd:problem:<slug>`.
    pub slug: &'static str,
    pub title: &'static str,
    pub detail: String,
    pub field: Option<String>,
    pub line: Option<usize>,
    pub label: Option<String>,
    /// The server limit (its flag's name, e.g. `max-queued-jobs`) a request ran into.
    pub limit: Option<&'static str>,
    /// Seconds a client should wait before retrying (429, 503): the `Retry-After` header.
    pub retry_after_s: Option<u64>,
}

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    fn new(status: StatusCode, slug: &'static str, title: &'static str, detail: impl Into<String>) -> Self {
        ApiError(Box::new(Problem { status, slug, title, detail: detail.into(), field: None, line: None, label: None, limit: None, retry_after_s: None }))
    }
    pub fn bad_request(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad-request", "Bad request", detail)
    }
    pub fn malformed_json(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "malformed-json", "Malformed JSON", detail)
    }
    pub fn invalid(field: impl Into<String>, detail: impl Into<String>) -> Self {
        let mut e = Self::new(StatusCode::UNPROCESSABLE_ENTITY, "validation", "Invalid request", detail);
        e.field = Some(field.into());
        e
    }
    pub fn not_found(what: &str, id: &str) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not-found", "Not found", format!("no {what} with id {id:?}"))
    }
    /// A model without a test-split evaluation.
    pub fn no_evaluation(id: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "no-evaluation",
            "No evaluation",
            format!("model {id:?} has no test-split evaluation: fit a supervised model with test_fraction > 0 or documents tagged split=test"),
        )
    }
    /// No usable bearer token (missing, malformed, unknown or revoked).
    pub fn unauthorized(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", "Unauthorized", detail)
    }
    /// A valid token whose role does not allow the request.
    pub fn forbidden(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "forbidden", "Forbidden", detail)
    }
    /// A limit was reached; `limit` names the server flag that sets it.
    pub fn too_many(limit: &'static str, detail: impl Into<String>, retry_after_s: u64) -> Self {
        let mut e = Self::new(StatusCode::TOO_MANY_REQUESTS, "too-many-requests", "Too many requests", detail);
        e.limit = Some(limit);
        e.retry_after_s = Some(retry_after_s);
        e
    }
    /// The model exists but its family does not offer what was asked (topics of a graph
    /// model, correlations of an LDA, …): a conflict with the resource's state, naming
    /// `model`.
    pub fn not_offered(detail: impl Into<String>) -> Self {
        let mut e = Self::new(StatusCode::CONFLICT, "not-offered", "Not offered by this model", detail);
        e.field = Some("model".into());
        e
    }
    pub fn conflict(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "conflict", "Conflict", detail)
    }
    pub fn too_large(limit_bytes: usize) -> Self {
        Self::new(StatusCode::PAYLOAD_TOO_LARGE, "too-large", "Payload too large", format!("the request body exceeds the limit of {limit_bytes} bytes"))
    }
    pub fn unsupported_media_type(got: &str) -> Self {
        Self::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported-media-type",
            "Unsupported media type",
            format!("expected application/json or application/x-ndjson, got {got:?}"),
        )
    }
    /// A Host this server does not serve (DNS rebinding; `--allowed-hosts`).
    pub fn misdirected(detail: impl Into<String>) -> Self {
        let mut e = Self::new(StatusCode::MISDIRECTED_REQUEST, "misdirected", "Misdirected request", detail);
        e.field = Some("Host".into());
        e.limit = Some("allowed-hosts");
        e
    }
    /// Something a request declared or sent beyond a size limit (`limit` names the flag).
    pub fn too_large_for(limit: &'static str, field: impl Into<String>, detail: impl Into<String>) -> Self {
        let mut e = Self::new(StatusCode::PAYLOAD_TOO_LARGE, "too-large", "Payload too large", detail);
        e.field = Some(field.into());
        e.limit = Some(limit);
        e
    }
    /// An upload that stopped sending (`--upload-idle-s`).
    pub fn upload_idle(idle_s: f64) -> Self {
        let mut e = Self::new(
            StatusCode::REQUEST_TIMEOUT,
            "upload-idle",
            "Upload stopped",
            format!("the upload sent nothing for {idle_s} s: it was cut off and nothing was stored; send it again"),
        );
        e.limit = Some("upload-idle-s");
        e
    }
    pub fn unavailable(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", "Service unavailable", detail)
    }
    /// A server-side failure: logged in full, shown as a generic message.
    pub fn internal(err: impl std::fmt::Display) -> Self {
        tracing::error!(error = %err, "internal error");
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", "Internal server error", "internal error; see the server log")
    }
    pub fn with_line(mut self, line: Option<usize>) -> Self {
        self.line = line;
        self
    }

    pub fn body(&self) -> Value {
        let mut m = Map::new();
        m.insert("type".into(), json!(format!("urn:topicd:problem:{}", self.slug)));
        m.insert("title".into(), json!(self.title));
        m.insert("status".into(), json!(self.status.as_u16()));
        m.insert("detail".into(), json!(self.detail));
        if let Some(f) = &self.field {
            m.insert("field".into(), json!(f));
        }
        if let Some(l) = self.line {
            m.insert("line".into(), json!(l));
        }
        if let Some(l) = &self.label {
            m.insert("label".into(), json!(l));
        }
        if let Some(l) = self.limit {
            m.insert("limit".into(), json!(l));
        }
        Value::Object(m)
    }
}

impl Deref for ApiError {
    type Target = Problem;
    fn deref(&self) -> &Problem {
        &self.0
    }
}

impl DerefMut for ApiError {
    fn deref_mut(&mut self) -> &mut Problem {
        &mut self.0
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, [(header::CONTENT_TYPE, "application/problem+json")], self.body().to_string()).into_response();
        if let Some(s) = self.retry_after_s {
            response.headers_mut().insert(header::RETRY_AFTER, header::HeaderValue::from(s));
        }
        // A body refused before it was read through (too large, or too slow) leaves the
        // rest of it on the connection: say the connection ends, so that no client sends
        // its next request down one the server is about to close.
        if matches!(self.status, StatusCode::PAYLOAD_TOO_LARGE | StatusCode::REQUEST_TIMEOUT) {
            response.headers_mut().insert(header::CONNECTION, header::HeaderValue::from_static("close"));
        }
        response
    }
}

impl From<StoreError> for ApiError {
    /// A full database is 507 and a read-only one 503: the request was fine, nothing
    /// was stored, and the operator can act (free space, raise `--max-db-mb`, fix
    /// permissions). Anything else is internal.
    fn from(e: StoreError) -> Self {
        let Some(why) = e.unwritable() else { return ApiError::internal(e) };
        let (status, kind, title) = match why {
            Unwritable::Full => (StatusCode::INSUFFICIENT_STORAGE, "storage-full", "Insufficient storage"),
            Unwritable::ReadOnly => (StatusCode::SERVICE_UNAVAILABLE, "read-only", "Service unavailable"),
        };
        tracing::error!(error = %e, "write refused: {}", why.explain());
        Self::new(status, kind, title, format!("nothing was stored: {}; reads still work", why.explain()))
    }
}

impl From<ModelCacheError> for ApiError {
    /// An unknown model is a 404 naming it; a model of the other kind a 409 naming
    /// `model`; a store or decoding fault is internal (logged, never shown).
    fn from(e: ModelCacheError) -> Self {
        match e {
            ModelCacheError::NotFound(id) => ApiError::not_found("model", &id),
            e @ (ModelCacheError::NotTopics { .. } | ModelCacheError::NotCommunities { .. }) => ApiError::not_offered(e.to_string()),
            ModelCacheError::Store(e) => ApiError::internal(e),
            e @ ModelCacheError::Unreadable { .. } => ApiError::internal(e),
        }
    }
}

impl From<ParamError> for ApiError {
    fn from(e: ParamError) -> Self {
        let field = if e.field.is_empty() { "params".to_string() } else { format!("params.{}", e.field) };
        ApiError::invalid(field, e.to_string())
    }
}

impl From<CorpusError> for ApiError {
    fn from(e: CorpusError) -> Self {
        let mut out = ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "validation", "Invalid corpus", e.message.clone());
        out.field = e.field;
        out.line = e.line;
        out.label = e.label;
        out
    }
}
