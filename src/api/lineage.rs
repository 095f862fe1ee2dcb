//! `GET /v1/models/{id}/lineage`: a model's versions, from its first fit through every
//! edit and update made from it or from which it was made.
//!
//! Why it exists: a model that is edited and updated over months becomes a chain of
//! models whose topics share ids; a user (and the console's timeline) needs to see that
//! chain, when and how each step was made, and compare any step with the one before.
//! Read from the models table alone: each model names its parent and keeps its record.

use super::derived::derivation_of;
use super::error::{ApiError, ApiResult};
use super::AppState;
use crate::store::ModelRow;
use axum::extract::{Path, State};
use axum::Json;
use serde_json::{json, Value};
use std::collections::HashSet;

/// Most versions one lineage lists (ancestors and descendants together).
pub const MAX_VERSIONS: usize = 1000;

/// `GET /v1/models/{id}/lineage`.
pub async fn get_one(State(state): State<AppState>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let model = state.store.get_model(&id).await?.ok_or_else(|| ApiError::not_found("model", &id))?;
    let ancestors = ancestors_of(&state, &model).await?;
    let descendants = descendants_of(&state, &model.id, ancestors.len()).await?;
    let mut versions: Vec<Value> = ancestors.iter().rev().map(|m| version_json(m, "ancestor")).collect();
    versions.push(version_json(&model, "self"));
    versions.extend(descendants.iter().map(|m| version_json(m, "descendant")));
    let truncated = versions.len() >= MAX_VERSIONS;
    Ok(Json(json!({"model_id": model.id, "versions": versions, "truncated": truncated})))
}

/// The model's parent, grandparent, ... (nearest first); a deleted ancestor ends the
/// chain.
async fn ancestors_of(state: &AppState, model: &ModelRow) -> ApiResult<Vec<ModelRow>> {
    let mut out = Vec::new();
    let mut seen = HashSet::from([model.id.clone()]);
    let mut next = model.parent_model_id.clone();
    while let Some(id) = next {
        if out.len() >= MAX_VERSIONS || !seen.insert(id.clone()) {
            break;
        }
        let Some(parent) = state.store.get_model(&id).await? else { break };
        next = parent.parent_model_id.clone();
        out.push(parent);
    }
    Ok(out)
}

/// Every model made from `id`, directly or through others, oldest first.
async fn descendants_of(state: &AppState, id: &str, listed: usize) -> ApiResult<Vec<ModelRow>> {
    let mut out: Vec<ModelRow> = Vec::new();
    let mut frontier = vec![id.to_string()];
    while let Some(parent) = frontier.pop() {
        for child in state.store.model_children(&parent).await? {
            if listed + out.len() + 1 >= MAX_VERSIONS {
                break;
            }
            frontier.push(child.id.clone());
            out.push(child);
        }
    }
    out.sort_by(|a, b| (a.created_at.as_str(), a.id.as_str()).cmp(&(b.created_at.as_str(), b.id.as_str())));
    Ok(out)
}

/// One version: which model, when and how it was made, and what it holds.
fn version_json(m: &ModelRow, relation: &str) -> Value {
    let derivation = derivation_of(m);
    let how = match (&m.parent_model_id, &derivation) {
        (None, _) => "fit",
        (Some(_), Some(d)) => d.how(),
        (Some(_), None) => "edit",
    };
    let record = |kind: &str| if how == kind { m.derivation.clone() } else { None };
    json!({
        "id": m.id,
        "family": m.family_name(),
        "created_at": m.created_at,
        "how": how,
        "relation": relation,
        "parent_model_id": m.parent_model_id,
        "corpus_id": m.corpus_id,
        "corpus_ids": m.corpus_ids,
        "num_documents": m.num_documents,
        "num_topics": m.num_topics,
        "edit": record("edit"),
        "update": record("update"),
    })
}
