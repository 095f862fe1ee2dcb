//! Queue a fit job that starts from a stored model: an edit's refit or an update.
//!
//! Why it exists: both read the parent's row and family, build the child's params from
//! the parent's, refuse `options.ranks`, plan the fit on its corpus (memory budget,
//! queue bounds, through [`crate::jobs::submit`]) and queue a job whose row names the
//! parent (`source_model_id`, so the parent cannot be deleted meanwhile; its stored
//! size counts in the fit's memory estimate) and keeps how
//! it starts (`jobs.start`). Each handler says only what is its own.

use super::error::{ApiError, ApiResult};
use super::jobs::{host, input_of, job_json, options_of, submit_error, StoredStats};
use super::limits::not_queued;
use super::AppState;
use crate::jobs::submit::FitRequest;
use crate::models::job_start::StartSpec;
use crate::models::registry::InputStats;
use crate::models::FitParams;
use crate::store::jobs::JobStart;
use crate::store::models::ModelRow;
use crate::store::tokens::Caller;
use crate::store::{FamilyName, FitInput};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::Value;

/// The stored model `id` and its family: a 404 when there is none, a 409 when this
/// server does not know its family.
pub async fn parent_of(state: &AppState, id: &str) -> ApiResult<(ModelRow, FamilyName)> {
    let parent = state.store.get_model(id).await?.ok_or_else(|| ApiError::not_found("model", id))?;
    let family = parent.family.clone().map_err(|u| ApiError::conflict(format!("model {id:?} is of family {:?}, which this server does not know", u.name)))?;
    Ok((parent, family))
}

/// What a fit from a stored model runs: the child's params, the request's runner
/// options and seed, the corpus it fits and how it starts.
pub struct FromParent<'a> {
    pub parent: &'a ModelRow,
    pub family: FamilyName,
    pub child: FitParams,
    /// The request's `options` (refused with `ranks`: such a fit runs in one process).
    pub options: &'a Value,
    pub seed: Option<u64>,
    pub corpus_id: &'a str,
    pub start: StartSpec,
}

/// Queue the fit → 202 with its job.
pub async fn queue(state: &AppState, caller: Option<&Caller>, fit: FromParent<'_>) -> ApiResult<Response> {
    let options = options_of(fit.options)?;
    if options.ranks() > 1 {
        return Err(ApiError::invalid("options.ranks", "a fit from a stored model runs in one process: leave out ranks"));
    }
    let seed = fit.seed.unwrap_or_else(rand::random);
    let request = FitRequest { model: fit.family.as_str().to_string(), params: fit.child.json().clone(), options, seed };
    let parsed = request.draft().map_err(submit_error)?.parse().map_err(submit_error)?;
    let (_, stored) = input_of(state, fit.family.family(), Some(fit.corpus_id.to_string()), None).await?;
    let StoredStats::Corpus(stats) = &stored else { return Err(ApiError::internal("a topic model's input is a corpus")) };
    let parent_bytes = state.store.model_data_bytes(&fit.parent.id).await?.unwrap_or(0);
    let plan = parsed.plan_beside(InputStats::Corpus(stats), &host(state), parent_bytes).map_err(submit_error)?;
    let spec = serde_json::to_value(&fit.start).map_err(ApiError::internal)?;
    let job_id = uuid::Uuid::new_v4().to_string();
    let mut new_job = plan.new_job(&job_id, FitInput::Corpus(fit.corpus_id), state.limits.gate(caller));
    new_job.start = Some(JobStart { parent_model_id: &fit.parent.id, spec: &spec });
    let (parent_id, corpus_id) = (&fit.parent.id, fit.corpus_id);
    let job = state
        .store
        .insert_job(new_job)
        .await?
        .map_err(|refused| not_queued(refused, &state.limits, || ApiError::conflict(format!("model {parent_id:?} or corpus {corpus_id:?} was deleted"))))?;
    state.runner.wake();
    let location = format!("/v1/jobs/{job_id}");
    Ok((StatusCode::ACCEPTED, [(header::LOCATION, location)], Json(job_json(&job))).into_response())
}
