//! `GET /v1/families`: the model families this server fits, each with its input
//! (corpus or graph) and the capabilities of its fitted models, read from the registry
//! so that a client (or the console) never hard-codes which family offers what.

use crate::models::capabilities;
use axum::Json;
use serde_json::{json, Value};

/// `GET /v1/families`.
pub async fn list() -> Json<Value> {
    let families: Vec<Value> = capabilities::all().into_iter().map(|(name, c)| json!({"name": name, "capabilities": c})).collect();
    Json(json!({ "families": families }))
}
