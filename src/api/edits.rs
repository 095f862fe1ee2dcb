//! `POST /v1/models/{id}/edits`: merge, split and delete a model's topics, and refit.
//!
//! Why it exists: a user who disagrees with a topic should be able to fix it and keep
//! the rest. The operations are read and checked against the parent by
//! [`crate::models::edits`] (every refusal a 422 naming the operation), the child's
//! params are the family's ([`crate::models::FitParams::edited`]), and the refit is an
//! ordinary fit job through [`crate::jobs::submit`] (memory budget, queue bounds) whose
//! row names the parent as the model it starts from. The runner does the rest
//! (`jobs::model_start`).

use super::error::{ApiError, ApiResult};
use super::extract::{parse_json, read_body, require_json};
use super::from_parent::{self, FromParent};
use super::AppState;
use crate::corpus::Corpus;
use crate::models::edits::{self, EditPlan};
use crate::models::job_start::StartSpec;
use crate::models::ParamError;
use crate::store::tokens::Caller;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::Extension;
use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EditRequest {
    operations: Value,
    #[serde(default)]
    iterations: Option<usize>,
    /// Omitted: a random seed is drawn and recorded on the job.
    #[serde(default)]
    seed: Option<u64>,
    /// The runner's options (`threads`, `checkpoint_every_s`).
    #[serde(default)]
    options: Value,
}

/// A refusal of the edit itself: a 422 naming the operation (or key) at fault.
fn edit_error(e: ParamError) -> ApiError {
    ApiError::invalid(if e.field.is_empty() { "operations".to_string() } else { e.field }, e.message)
}

/// `POST /v1/models/{id}/edits` → 202 with the refit's job.
pub async fn create(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    require_json(&headers)?;
    let body = read_body(body, state.max_body_bytes).await?;
    let req: EditRequest = parse_json(&body)?;
    let (parent, family) = from_parent::parent_of(&state, &id).await?;
    if !family.family().capabilities().edits {
        return Err(cannot_edit(family.as_str()));
    }
    let corpus_id = parent.corpus_id.clone().ok_or_else(|| cannot_edit(family.as_str()))?;
    let operations = edits::parse_operations(&req.operations).map_err(edit_error)?;
    let plan = edits::plan(operations, parent.num_topics.max(0) as usize, &super::derived::retired_topics(&parent)).map_err(edit_error)?;
    check_split_seeds(&state, &plan, &corpus_id).await?;
    let iterations = req.iterations.unwrap_or_else(|| super::derived::default_iterations(&parent));
    let parent_params = family.family().parse_params(&parent.params).map_err(ApiError::internal)?;
    let child = parent_params.edited(&plan, iterations).map_err(|e| ApiError::invalid(e.field, e.message))?;
    let start = StartSpec::Edit { plan, split_seed: super::derived::split_seed_of(&parent) };
    let fit = FromParent { parent: &parent, family, child, options: &req.options, seed: req.seed, corpus_id: &corpus_id, start };
    from_parent::queue(&state, caller.as_deref(), fit).await
}

/// A 409 naming `model`: its family's models cannot be edited.
fn cannot_edit(family: &str) -> ApiError {
    let editable = crate::models::registry::families_with(|c| c.edits);
    let why = if family == "hpc" { " (HPC's topics are its labels: edit the label tree and refit instead)" } else { "" };
    let mut e = ApiError::conflict(format!("{family} models cannot be edited{why}; families whose models can: {editable}"));
    e.field = Some("model".into());
    e
}

/// A split's seed words must be in the corpus' vocabulary: a 422 naming the word
/// (`operations[i].seed_words[j].words[k]`) before anything is queued.
async fn check_split_seeds(state: &AppState, plan: &EditPlan, corpus_id: &str) -> ApiResult<()> {
    let seeded: Vec<(usize, edits::EditOp)> = plan
        .operations
        .iter()
        .enumerate()
        .filter(|(_, op)| matches!(op, edits::EditOp::Split { seed_words, .. } if !seed_words.is_empty()))
        .map(|(i, op)| (i, op.clone()))
        .collect();
    if seeded.is_empty() {
        return Ok(());
    }
    let blob = state.store.corpus_data(corpus_id).await?.ok_or_else(|| ApiError::conflict(format!("the model's corpus {corpus_id:?} was deleted")))?;
    let checked = tokio::task::spawn_blocking(move || -> Result<Result<(), ParamError>, String> {
        let corpus = Corpus::decode(&blob).map_err(|e| e.to_string())?;
        for (i, op) in &seeded {
            let edits::EditOp::Split { seed_words, .. } = op else { continue };
            let seeds = crate::models::seeds::SeedWords { topics: seed_words.clone(), ..Default::default() };
            if let Err(e) = seeds.resolve(&corpus.lexicon) {
                return Ok(Err(ParamError::new(format!("operations[{i}].{}", e.field), e.message)));
            }
        }
        Ok(Ok(()))
    })
    .await
    .map_err(ApiError::internal)?;
    checked.map_err(ApiError::internal)?.map_err(edit_error)
}
