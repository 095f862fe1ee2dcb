//! `POST /v1/models/{id}/update`: fit a model's documents and new ones from where the
//! model left off, keeping its topics' ids and names.
//!
//! Why it exists: a corpus that grows every week should not be refitted from scratch.
//! The new documents (a corpus made with `?like=`, or any corpus preprocessed the same
//! way) are joined after the parent's ([`crate::corpus::append`]) into a stored corpus
//! whose summary lists its `parts`; the fit is an ordinary fit job on it through
//! [`crate::jobs::submit`] (memory budget, queue bounds) whose row names the parent
//! and keeps the [`StartSpec::Update`]. The runner does the rest (`jobs::model_start`).

use super::corpora::summary_json;
use super::derived::{default_iterations, retired_topics, split_seed_of};
use super::error::{ApiError, ApiResult};
use super::extract::{parse_json, read_body, require_json};
use super::from_parent::{self, FromParent};
use super::AppState;
use crate::corpus::append::append;
use crate::corpus::Corpus;
use crate::models::job_start::StartSpec;
use crate::models::updates::{self, UpdateRecord, MAX_NEW_TOPICS};
use crate::store::corpora::NewCorpus;
use crate::store::models::ModelRow;
use crate::store::tokens::Caller;
use crate::store::CorpusRow;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::Extension;
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct UpdateRequest {
    /// The corpus of the new documents.
    corpus_id: String,
    #[serde(default)]
    iterations: Option<usize>,
    /// Omitted: a random seed is drawn and recorded on the job.
    #[serde(default)]
    seed: Option<u64>,
    /// Empty topics added after the parent's for the new documents to fill.
    #[serde(default)]
    new_topics: usize,
    /// The runner's options (`threads`, `checkpoint_every_s`).
    #[serde(default)]
    options: Value,
}

/// `POST /v1/models/{id}/update` → 202 with the update's job.
pub async fn create(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    require_json(&headers)?;
    let body = read_body(body, state.max_body_bytes).await?;
    let req: UpdateRequest = parse_json(&body)?;
    let (parent, family) = from_parent::parent_of(&state, &id).await?;
    if !family.family().capabilities().updates {
        return Err(cannot_update(family.as_str()));
    }
    if req.new_topics > MAX_NEW_TOPICS {
        return Err(ApiError::invalid("new_topics", format!("must be at most {MAX_NEW_TOPICS}")));
    }
    let old_id = parent.corpus_id.clone().ok_or_else(|| cannot_update(family.as_str()))?;
    let old = state
        .store
        .get_corpus(&old_id)
        .await?
        .ok_or_else(|| ApiError::conflict(format!("the model's corpus {old_id:?} was deleted: an update needs the documents it was fitted on")))?;
    let new = state.store.get_corpus(&req.corpus_id).await?.ok_or_else(|| ApiError::invalid("corpus_id", format!("no corpus with id {:?}", req.corpus_id)))?;
    if old.summary["has_splits"] != new.summary["has_splits"] {
        return Err(ApiError::invalid(
            "corpus_id",
            "one of the model's corpus and the new documents carries split tags and the other does not: tag both or neither",
        ));
    }
    let corpus_ids = corpus_ids_after(&parent, &req.corpus_id);
    let joined = store_joined(&state, &old, &new, &corpus_ids).await?;
    let queued = queue_update(&state, caller.as_deref(), &parent, &req, &joined, corpus_ids).await;
    if queued.is_err() {
        // Nothing was queued: the joined corpus is nobody's.
        let _ = state.store.delete_corpus(&joined.id).await;
    }
    queued
}

/// The update's job on the joined corpus (its params and start).
async fn queue_update(
    state: &AppState,
    caller: Option<&Caller>,
    parent: &ModelRow,
    req: &UpdateRequest,
    joined: &Joined,
    corpus_ids: Vec<String>,
) -> ApiResult<Response> {
    let family = parent.family.clone().map_err(|u| ApiError::internal(u.name))?;
    let iterations = req.iterations.unwrap_or_else(|| default_iterations(parent));
    let parent_params = family.family().parse_params(&parent.params).map_err(ApiError::internal)?;
    let child = parent_params.updated(req.new_topics, iterations).map_err(|e| ApiError::invalid(e.field, e.message))?;
    let parent_documents = parent.num_documents.unwrap_or(0).max(0) as usize;
    let record = UpdateRecord {
        corpus_id: req.corpus_id.clone(),
        parent_documents,
        new_documents: joined.num_documents.saturating_sub(parent_documents),
        new_topics: updates::added_topics(parent.num_topics.max(0) as usize, req.new_topics),
        retired: retired_topics(parent),
        split_seed: split_seed_of(parent),
    };
    let start = StartSpec::Update { record, corpus_ids };
    let fit = FromParent { parent, family, child, options: &req.options, seed: req.seed, corpus_id: &joined.id, start };
    from_parent::queue(state, caller, fit).await
}

/// The corpora an update of `parent` with `new_corpus` holds, in order.
fn corpus_ids_after(parent: &ModelRow, new_corpus: &str) -> Vec<String> {
    let mut ids = if parent.corpus_ids.is_empty() { parent.corpus_id.iter().cloned().collect() } else { parent.corpus_ids.clone() };
    ids.push(new_corpus.to_string());
    ids
}

/// The stored corpus an update fits: its id and how many documents it holds.
struct Joined {
    id: String,
    num_documents: usize,
}

/// Join the model's corpus and the new documents and store the result (its summary
/// names its `parts`); a 422 naming `corpus_id` when they cannot be joined.
async fn store_joined(state: &AppState, old: &CorpusRow, new: &CorpusRow, parts: &[String]) -> ApiResult<Joined> {
    let missing = |id: &str| ApiError::conflict(format!("corpus {id:?} was deleted"));
    let old_blob = state.store.corpus_data(&old.id).await?.ok_or_else(|| missing(&old.id))?;
    let new_blob = state.store.corpus_data(&new.id).await?.ok_or_else(|| missing(&new.id))?;
    let (joined, data) = tokio::task::spawn_blocking(move || -> ApiResult<(Corpus, Vec<u8>)> {
        let old = Corpus::decode(&old_blob).map_err(ApiError::internal)?;
        let new = Corpus::decode(&new_blob).map_err(ApiError::internal)?;
        let joined = append(&old, &new)?;
        let data = joined.encode();
        Ok((joined, data))
    })
    .await
    .map_err(ApiError::internal)??;
    let mut summary = summary_json(&joined);
    summary["parts"] = json!(parts);
    let id = uuid::Uuid::new_v4().to_string();
    let name = format!("{} + {}", old.name, new.name);
    let name: String = name.chars().take(super::extract::MAX_NAME_BYTES / 4).collect();
    state.store.insert_corpus(NewCorpus { id: &id, name: &name, stats: &joined.stats, summary, data }).await?;
    Ok(Joined { id, num_documents: joined.num_documents() })
}

/// A 409 naming `model`: its family's models cannot be updated.
fn cannot_update(family: &str) -> ApiError {
    let updatable = crate::models::registry::families_with(|c| c.updates);
    let mut e = ApiError::conflict(format!("{family} models cannot be updated with new documents; families whose models can: {updatable}"));
    e.field = Some("model".into());
    e
}
