//! `/v1/jobs`: submit a fit, poll it, read its trace, cancel it.

use super::error::{ApiError, ApiResult};
use super::extract::{parse_json, parse_query, read_body, require_json, Page};
use super::limits::not_queued;
use super::AppState;
use crate::corpus::Corpus;
use crate::corpus::CorpusStats;
use crate::jobs::submit::{FitRequest, Host, SubmitError};
use crate::models::capabilities::Input;
use crate::models::options::JobOptions;
use crate::models::registry::{self, Family, InputStats};
use crate::models::seeds::SeedWords;
use crate::store::tokens::Caller;
use crate::store::FitInput;
use crate::store::{JobRow, JobStatus};
use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct JobRequest {
    /// Topic models fit a corpus...
    #[serde(default)]
    corpus_id: Option<String>,
    /// ...relational models a graph.
    #[serde(default)]
    graph_id: Option<String>,
    model: String,
    #[serde(default)]
    params: Value,
    /// The runner's options (`threads`, `checkpoint_every_s`); also accepted inside
    /// `params`, from where they are moved here.
    #[serde(default)]
    options: Value,
    /// Omitted: a random seed is drawn and recorded on the job.
    #[serde(default)]
    seed: Option<u64>,
}

/// The wire form of a job.
pub fn job_json(j: &JobRow) -> Value {
    json!({
        "id": j.id,
        "kind": j.kind.as_str(),
        "status": j.status.as_str(),
        "corpus_id": j.corpus_id,
        "graph_id": j.graph_id,
        "model": j.model_name(),
        "params": j.params,
        "seed": j.seed,
        "created_at": j.created_at,
        "started_at": j.started_at,
        "finished_at": j.finished_at,
        "attempts": j.attempts,
        "progress": j.progress.clone().unwrap_or_else(|| json!({"iteration": 0, "total": null, "elapsed_s": 0.0, "eta_s": null})),
        "model_id": j.model_id,
        "source_model_id": j.source_model_id,
        "error": j.error,
        "failure": j.failure.map(|f| f.as_str()),
        "options": j.options.clone().unwrap_or_else(|| json!({})),
        "result": j.result,
        "memory_estimate_bytes": j.memory_bytes,
        "waiting": j.waiting,
        "sweep_id": j.sweep_id,
        "edit": j.start.as_ref().filter(|s| s["kind"] == "edit").map(|s| json!({"parent_model_id": j.source_model_id, "operations": s["plan"]["operations"]})),
        "update": j.start.as_ref().filter(|s| s["kind"] == "update").map(|s| json!({"parent_model_id": j.source_model_id, "corpus_id": s["record"]["corpus_id"], "new_topics": s["record"]["new_topics"]})),
    })
}

/// `POST /v1/jobs` → 202 with `Location`: the request translated to a
/// [`FitRequest`], checked and shaped by [`crate::jobs::submit`], queued.
pub async fn create(State(state): State<AppState>, caller: Option<Extension<Caller>>, headers: HeaderMap, body: Body) -> ApiResult<Response> {
    require_json(&headers)?;
    let body = read_body(body, state.max_body_bytes).await?;
    let req: JobRequest = parse_json(&body)?;
    let (request, corpus_id, graph_id) = req.into_fit_request()?;
    let draft = request.draft().map_err(submit_error)?;
    let family = draft.family().family();
    let (input_id, stored) = input_of(&state, family, corpus_id, graph_id).await?;
    let (stats, input) = match &stored {
        StoredStats::Corpus(c) => (InputStats::Corpus(c), FitInput::Corpus(&input_id)),
        StoredStats::Graph(g) => (InputStats::Graph(g), FitInput::Graph(&input_id)),
    };
    let fit = draft.parse().map_err(submit_error)?;
    let plan = fit.plan(stats, &host(&state)).map_err(submit_error)?;
    check_seed_words(&state, &fit.params().seeds(), &input_id).await?;
    let id = uuid::Uuid::new_v4().to_string();
    let job = state.store.insert_job(plan.new_job(&id, input, state.limits.gate(caller.as_deref()))).await?.map_err(|refused| {
        not_queued(refused, &state.limits, || ApiError::invalid(family.input_field(), format!("{} {input_id:?} was deleted", family.input_noun())))
    })?;
    state.runner.wake();
    let location = format!("/v1/jobs/{id}");
    Ok((StatusCode::ACCEPTED, [(header::LOCATION, location)], Json(job_json(&job))).into_response())
}

impl JobRequest {
    /// The wire's request as a [`FitRequest`] and the ids of the inputs it names (not
    /// both): `params` and `options` must be objects, a missing seed is drawn at random.
    fn into_fit_request(self) -> ApiResult<(FitRequest, Option<String>, Option<String>)> {
        let params = match self.params {
            Value::Null => json!({}),
            v @ Value::Object(_) => v,
            _ => return Err(ApiError::invalid("params", "must be a JSON object")),
        };
        let options = options_of(&self.options)?;
        if self.corpus_id.is_some() && self.graph_id.is_some() {
            return Err(ApiError::invalid("graph_id", "give corpus_id (topic models) or graph_id (graph models), not both"));
        }
        let seed = self.seed.unwrap_or_else(rand::random);
        Ok((FitRequest { model: self.model, params, options, seed }, self.corpus_id, self.graph_id))
    }
}

/// A request's `options` (null: none) as the runner's [`JobOptions`]; errors name
/// `options.<key>`.
pub(super) fn options_of(v: &Value) -> ApiResult<JobOptions> {
    match v {
        Value::Null => Ok(JobOptions::default()),
        Value::Object(_) => JobOptions::from_json(v).map_err(|e| ApiError::invalid(format!("options.{}", e.field), e.to_string())),
        _ => Err(ApiError::invalid("options", "must be a JSON object")),
    }
}

/// What this server's runner can hold: its default threads, its fit memory budget, and
/// whether a fit over several ranks can start (on SQLite this process is the only
/// replica: without a launcher such a job would wait for ever).
pub(super) fn host(state: &AppState) -> Host {
    Host {
        default_threads: state.runner.default_threads(),
        fit_memory_budget: Some(state.runner.fit_memory_budget()),
        starts_worlds: Some(state.runner.starts_worlds() || state.store.is_shared()),
    }
}

/// A refused fit as a 422 naming its field: `params.<key>` for a runner option or a
/// parameter, `model` for an unknown family, `options.ranks`, or `params` with the limit
/// for a fit past the memory budget.
pub(super) fn submit_error(e: SubmitError) -> ApiError {
    match e {
        SubmitError::OptionInParams(e) | SubmitError::Params(e) => e.into(),
        SubmitError::OptionTwice(key) => ApiError::invalid(format!("params.{key}"), e.to_string()),
        SubmitError::UnknownModel(unknown) => unknown_model(&unknown.name),
        e @ (SubmitError::Ranks(_) | SubmitError::NoWorlds { .. }) => ApiError::invalid("options.ranks", e.to_string()),
        e @ SubmitError::OverBudget { .. } => {
            let mut out = ApiError::invalid("params", e.to_string());
            out.limit = Some("fit-memory-mb");
            out
        }
    }
}

/// The summary of a job's stored input, which the family's checks read.
pub(super) enum StoredStats {
    Corpus(CorpusStats),
    Graph(crate::graph::GraphStats),
}

/// The id of the input `family` fits (of `corpus_id` and `graph_id`, not both given,
/// the one it reads) and that input's stored summary; a 422 naming the field otherwise.
pub(super) async fn input_of(state: &AppState, family: Family, corpus_id: Option<String>, graph_id: Option<String>) -> ApiResult<(String, StoredStats)> {
    let (input_id, other_given) = match family.input() {
        Input::Corpus => (corpus_id, graph_id.is_some()),
        Input::Graph => (graph_id, corpus_id.is_some()),
    };
    let input_id = input_id.ok_or_else(|| missing_input(family, other_given))?;
    let field = family.input_field();
    let stats = match family.input() {
        Input::Corpus => {
            let corpus = state.store.get_corpus(&input_id).await?.ok_or_else(|| ApiError::invalid(field, format!("no corpus with id {input_id:?}")))?;
            let mut stats: CorpusStats = serde_json::from_value(corpus.summary["stats"].clone()).map_err(ApiError::internal)?;
            // Corpora stored before covariates existed have none in their summary.
            if let Some(covariates) = corpus.summary.get("covariates") {
                stats.covariates = serde_json::from_value(covariates.clone()).map_err(ApiError::internal)?;
            }
            StoredStats::Corpus(stats)
        }
        Input::Graph => {
            let graph = state.store.get_graph(&input_id).await?.ok_or_else(|| ApiError::invalid(field, format!("no graph with id {input_id:?}")))?;
            StoredStats::Graph(graph.stats)
        }
    };
    Ok((input_id, stats))
}

/// Seed words must be in the corpus' vocabulary (after its preprocessing) unless the
/// params say to leave missing ones out: a 422 naming the word, before anything is
/// queued. Reads the corpus only when there are seeds.
pub(super) async fn check_seed_words(state: &AppState, seeds: &SeedWords, corpus_id: &str) -> ApiResult<()> {
    if seeds.is_empty() {
        return Ok(());
    }
    let blob = state.store.corpus_data(corpus_id).await?.ok_or_else(|| ApiError::invalid("corpus_id", format!("corpus {corpus_id:?} was deleted")))?;
    let seeds = seeds.clone();
    let checked =
        tokio::task::spawn_blocking(move || Corpus::decode(&blob).map(|c| seeds.resolve(&c.lexicon).map(|_| ()))).await.map_err(ApiError::internal)?;
    checked.map_err(ApiError::internal)?.map_err(|e| ApiError::invalid(format!("params.{}", e.field), e.message))
}

/// A 422 for a model name that is not registered, listing the families by input.
fn unknown_model(name: &str) -> ApiError {
    let (corpus, graph) = (registry::names_fitting(Input::Corpus), registry::names_fitting(Input::Graph));
    ApiError::invalid("model", format!("unknown model {name:?}; with corpus_id: {}; with graph_id: {}", corpus.join(", "), graph.join(", ")))
}

/// A 422 for a request without the input its family fits: the model is wrong for the
/// other kind of input when that was given, else the input field is missing.
fn missing_input(family: Family, other_given: bool) -> ApiError {
    let (name, field, noun) = (family.name(), family.input_field(), family.input_noun());
    if other_given {
        let other = if field == "corpus_id" { "graph_id" } else { "corpus_id" };
        return ApiError::invalid("model", format!("{name} fits a {noun}: give {field} instead of {other}"));
    }
    ApiError::invalid(field, format!("required: {name} fits a {noun}, so give {field}"))
}

/// `GET /v1/jobs?status=&offset=&limit=`.
pub async fn list(State(state): State<AppState>, RawQuery(q): RawQuery) -> ApiResult<Json<Value>> {
    let page: Page = parse_query(q.as_deref())?;
    let (offset, limit) = page.bounds()?;
    let status = match page.status.as_deref() {
        None => None,
        Some(s) => Some(JobStatus::parse(s).ok_or_else(|| ApiError::invalid("query.status", format!("unknown status {s:?}: omit it for every status")))?),
    };
    let (rows, total) = state.store.list_jobs(status, offset, limit).await?;
    Ok(Json(json!({"jobs": rows.iter().map(job_json).collect::<Vec<_>>(), "total": total, "offset": offset, "limit": limit})))
}

async fn find(state: &AppState, id: &str) -> ApiResult<JobRow> {
    state.store.get_job(id).await?.ok_or_else(|| ApiError::not_found("job", id))
}

/// `GET /v1/jobs/{id}`: the job, and once it has made a model, that model's
/// convergence report (R̂ and ESS; null for families without one).
pub async fn get_one(State(state): State<AppState>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let job = find(&state, &id).await?;
    let mut answer = job_json(&job);
    if let Some(model_id) = &job.model_id {
        let convergence = state.store.get_model(model_id).await?.map_or(Value::Null, |m| m.diagnostics.get("convergence").cloned().unwrap_or(Value::Null));
        answer["convergence"] = convergence;
    }
    Ok(Json(answer))
}

/// `GET /v1/jobs/{id}/trace`: log-likelihood per token by sweep.
pub async fn trace(State(state): State<AppState>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    find(&state, &id).await?;
    let points = state.store.job_trace(&id).await?;
    let points: Vec<Value> =
        points.iter().map(|p| json!({"iteration": p.iteration, "elapsed_s": p.elapsed_s, "loglik_per_token": p.loglik_per_token, "rates": p.rates})).collect();
    Ok(Json(json!({"job_id": id, "points": points})))
}

/// `POST /v1/jobs/{id}/cancel`: a queued job is cancelled at once, a running one stops
/// at its next sweep boundary.
pub async fn cancel(State(state): State<AppState>, Path(id): Path<String>) -> ApiResult<Response> {
    let job = find(&state, &id).await?;
    if job.status.is_terminal() {
        return Err(ApiError::conflict(format!("job {id} already {}", job.status.as_str())));
    }
    let job = state.store.request_cancel(&id).await?.ok_or_else(|| ApiError::not_found("job", &id))?;
    state.runner.cancel(&id);
    Ok((StatusCode::ACCEPTED, Json(job_json(&job))).into_response())
}
