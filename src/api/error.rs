//! One error type for every handler, rendered as RFC 9457 `application/problem+json`.
//!
//! Validation errors name what is wrong: the `field` (a JSON path such as
//! `documents[3].counts.foo` or `params.topics`), the NDJSON `line`, or the `label`.
//! Internal errors are logged with their detail and shown to the client only as
//! "internal error".

use crate::corpus::CorpusError;
use crate::models::ParamError;
use crate::store::StoreError;
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
}

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    fn new(status: StatusCode, slug: &'static str, title: &'static str, detail: impl Into<String>) -> Self {
        ApiError(Box::new(Problem { status, slug, title, detail: detail.into(), field: None, line: None, label: None }))
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
        (self.status, [(header::CONTENT_TYPE, "application/problem+json")], self.body().to_string()).into_response()
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        ApiError::internal(e)
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
