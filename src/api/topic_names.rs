//! `PATCH /v1/models/{id}/topics/{topic}`: give a topic a name people read, or clear it.
//!
//! Why it exists: users of LDAvis, BERTopic and tomotopy's viewer ask most for renaming
//! topics and keeping the names, while keeping the model's own numbering. The name is
//! stored beside the model (`store::topic_names`) and every topic endpoint, the CSV and
//! the intertopic map return it; the model itself never changes.

use super::error::{ApiError, ApiResult};
use super::extract::{check_name, parse_json, read_body, require_json};
use super::topic_query::{resolve_topic, topic_header};
use super::AppState;
use crate::models::TableOptions;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RenameRequest {
    /// The new name; `null` clears it.
    name: Option<String>,
}

/// The name to store: trimmed, non-empty, at most
/// [`MAX_NAME_BYTES`](super::extract::MAX_NAME_BYTES) ([`check_name`]), no control
/// characters; `None` clears.
fn checked_name(name: Option<String>) -> ApiResult<Option<String>> {
    let Some(name) = name else { return Ok(None) };
    let name = name.trim();
    if name.is_empty() {
        return Err(ApiError::invalid("name", "must not be empty (send null to clear the name)"));
    }
    check_name("name", name)?;
    if name.chars().any(char::is_control) {
        return Err(ApiError::invalid("name", "must not contain control characters (line breaks, tabs, ...)"));
    }
    Ok(Some(name.to_string()))
}

/// `PATCH /v1/models/{id}/topics/{topic}` with `{"name": "..."}` (or `null`): the
/// topic's header with its new name.
pub async fn rename(State(state): State<AppState>, Path((id, topic)): Path<(String, String)>, headers: HeaderMap, body: Body) -> ApiResult<Json<Value>> {
    require_json(&headers)?;
    let body = read_body(body, state.max_body_bytes).await?;
    let req: RenameRequest = parse_json(&body)?;
    // `name` is required: null clears the name, but a body without it says nothing.
    if !parse_json::<serde_json::Map<String, Value>>(&body)?.contains_key("name") {
        return Err(ApiError::invalid("name", "required: the new name, or null to clear it"));
    }
    let name = checked_name(req.name)?;
    let m = state.models.get(&state.store, &id).await?;
    let m2 = m.clone();
    let table = tokio::task::spawn_blocking(move || m2.model.topic_table(&TableOptions::default())).await.map_err(ApiError::internal)?;
    let k = resolve_topic(&table, &topic)?;
    let stored = state.store.set_topic_name(&id, k, name.as_deref()).await;
    // Whatever the write did, the names and pages kept in memory may be stale now.
    m.topic_pages.names_changed();
    if !stored? {
        return Err(ApiError::not_found("model", &id));
    }
    let names = state.store.topic_names(&id).await?;
    Ok(Json(json!({"model_id": id, "topic": topic_header(&table, k, &names, m.model.topic_stability().as_deref())})))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::extract::MAX_NAME_BYTES;

    #[test]
    fn names_are_trimmed_bounded_and_free_of_control_characters() {
        assert_eq!(checked_name(Some("  Games  ".into())).unwrap().as_deref(), Some("Games"));
        assert_eq!(checked_name(None).unwrap(), None);
        // The bound is in bytes: 100 two-byte characters fit, 101 do not.
        assert_eq!(checked_name(Some("é".repeat(MAX_NAME_BYTES / 2))).unwrap().map(|n| n.len()), Some(MAX_NAME_BYTES));
        let long = "é".repeat(MAX_NAME_BYTES / 2 + 1);
        for bad in ["", "   ", "two\nlines", &"x".repeat(MAX_NAME_BYTES + 1), &long] {
            assert!(checked_name(Some(bad.to_string())).is_err(), "{bad:?}");
        }
    }
}
