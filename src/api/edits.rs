//! `POST /v1/models/{id}/edits`: merge, split and delete a model's topics, and refit.
//!
//! Why it exists: a user who disagrees with a topic should be able to fix it and keep
//! the rest. The operations are read and checked against the parent by
//! [`crate::models::edits`] (every refusal a 422 naming the operation), the child's
//! params are the family's ([`crate::models::FitParams::edited`]), and the refit is an
//! ordinary fit job through [`crate::jobs::submit`] (memory budget, queue bounds) whose
//! row names the parent as the model it starts from. The runner does the rest
//! (`jobs::edit_start`).

use super::error::{ApiError, ApiResult};
use super::extract::{parse_json, read_body, require_json};
use super::jobs::{host, input_of, job_json, options_of, submit_error, StoredStats};
use super::limits::not_queued;
use super::AppState;
use crate::corpus::Corpus;
use crate::jobs::submit::FitRequest;
use crate::models::edits::{self, EditPlan, EditRecord, RetiredTopics, StartSpec};
use crate::models::registry::InputStats;
use crate::models::ParamError;
use crate::store::jobs::JobStart;
use crate::store::models::ModelRow;
use crate::store::tokens::Caller;
use crate::store::FitInput;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::Value;

/// Fewest sweeps of an edit's refit by default.
pub const MIN_DEFAULT_ITERATIONS: usize = 20;

/// An edit's refit sweeps when the request names none: a quarter of the parent's (at
/// least [`MIN_DEFAULT_ITERATIONS`]). It starts from the parent's state, so it needs
/// far fewer sweeps than the parent: on AppStream the untouched topics' distance to
/// the parent's was the same after 50, 100 and 200 sweeps (bench/README.md, *Edits*).
fn default_iterations(parent: &ModelRow) -> usize {
    let parent_sweeps = parent.params.get("iterations").and_then(Value::as_u64).unwrap_or(200) as usize;
    (parent_sweeps / 4).max(MIN_DEFAULT_ITERATIONS)
}

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

/// The retired topics of a stored model (an edit's child) and why; none for a model
/// no edit made.
pub(super) fn retired_topics(row: &ModelRow) -> RetiredTopics {
    row.derivation.as_ref().and_then(|d| serde_json::from_value::<EditRecord>(d.clone()).ok()).map(|r| r.retired()).unwrap_or_default()
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
    let parent = state.store.get_model(&id).await?.ok_or_else(|| ApiError::not_found("model", &id))?;
    let family = parent.family.clone().map_err(|u| ApiError::conflict(format!("model {id:?} is of family {:?}, which this server does not know", u.name)))?;
    if !family.family().capabilities().edits {
        return Err(cannot_edit(family.as_str()));
    }
    let corpus_id = parent.corpus_id.clone().ok_or_else(|| cannot_edit(family.as_str()))?;
    let operations = edits::parse_operations(&req.operations).map_err(edit_error)?;
    let plan = edits::plan(operations, parent.num_topics.max(0) as usize, &retired_topics(&parent)).map_err(edit_error)?;
    check_split_seeds(&state, &plan, &corpus_id).await?;
    let iterations = req.iterations.unwrap_or_else(|| default_iterations(&parent));
    let parent_params = family.family().parse_params(&parent.params).map_err(ApiError::internal)?;
    let child = parent_params.edited(&plan, iterations).map_err(|e| ApiError::invalid(e.field, e.message))?;
    let options = options_of(&req.options)?;
    if options.ranks() > 1 {
        return Err(ApiError::invalid("options.ranks", "an edit's refit runs in one process: leave out ranks"));
    }
    let seed = req.seed.unwrap_or_else(rand::random);
    let request = FitRequest { model: family.as_str().to_string(), params: child.json().clone(), options, seed };
    let fit = request.draft().map_err(submit_error)?.parse().map_err(submit_error)?;
    let (_, stored) = input_of(&state, family.family(), Some(corpus_id.clone()), None).await?;
    let StoredStats::Corpus(stats) = &stored else { return Err(ApiError::internal("a topic model's input is a corpus")) };
    let fit_plan = fit.plan(InputStats::Corpus(stats), &host(&state)).map_err(submit_error)?;
    let spec = serde_json::to_value(StartSpec::Edit { plan, split_seed: parent.seed }).map_err(ApiError::internal)?;
    let job_id = uuid::Uuid::new_v4().to_string();
    let mut new_job = fit_plan.new_job(&job_id, FitInput::Corpus(&corpus_id), state.limits.gate(caller.as_deref()));
    new_job.start = Some(JobStart { parent_model_id: &id, spec: &spec });
    let job = state
        .store
        .insert_job(new_job)
        .await?
        .map_err(|refused| not_queued(refused, &state.limits, || ApiError::conflict(format!("model {id:?} or its corpus {corpus_id:?} was deleted"))))?;
    state.runner.wake();
    let location = format!("/v1/jobs/{job_id}");
    Ok((StatusCode::ACCEPTED, [(header::LOCATION, location)], Json(job_json(&job))).into_response())
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
