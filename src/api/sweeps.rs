//! `/v1/sweeps`: fit one family at several numbers of topics on one corpus, and compare
//! the fits.
//!
//! Why it exists: choosing K is the first question of a topic-model user (stm's
//! `searchK`). A sweep is one request whose fits are ordinary jobs carrying its id:
//! any replica runs them, over ranks if the options ask, they resume after a restart,
//! and `DELETE /v1/sweeps/{id}` cancels those not yet finished. Every fit of a sweep
//! has the same seed and `test_fraction` (the sweep's `heldout_fraction`), so they hold
//! out the same documents and their held-out scores are paired. A finished fit is
//! scored once, when the sweep is next read ([`super::sweep_view`]), and the scores are
//! kept.

use super::error::{ApiError, ApiResult};
use super::extract::{parse_json, parse_query, read_body, require_json};
use super::jobs::{check_seed_words, host, input_of, options_of, submit_error, StoredStats};
use super::limits::not_queued;
use super::sweep_view::{score_finished, SweepView};
use super::AppState;
use crate::jobs::submit::{FitRequest, SubmitError};
use crate::models::options::JobOptions;
use crate::models::registry::InputStats;
use crate::selection::DEFAULT_HELDOUT_FRACTION;
use crate::store::tokens::Caller;
use crate::store::{FamilyName, FitInput, NewSweep, SweepRow};
use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::{json, Value};

/// The families a sweep fits at several K (HDP infers its own K: it joins a sweep as
/// one more row with `include_hdp`).
const SWEEP_FAMILIES: &[&str] = &["lda", "pcm", "dcnt", "scnt"];
/// Most values of K in one sweep.
pub const MAX_SWEEP_TOPICS: usize = 16;
/// Largest held-out share.
const MAX_HELDOUT_FRACTION: f64 = 0.5;
/// LDA's α re-estimation interval in a sweep whose params name none (tomotopy's default
/// `optim_interval`): a fixed α = 50/K is a prior of weight 50 spread over however many
/// topics, heavy at small K and light at large, so the rows would compare the prior as
/// much as K; with α estimated at each K they compare K (decision 0072).
const SWEEP_LDA_OPTIMIZE_INTERVAL: u64 = 10;
/// LDA's α start in a sweep that estimates α and whose params name no α (tomotopy's
/// default `alpha`): from 50/K the estimate starts from a prior of weight 50, and below
/// the true K its chains settled where they completed held-out documents worse than
/// tomotopy's from 0.1 (decision 0074). A sweep with a fixed α keeps the family's 50/K.
const SWEEP_LDA_ALPHA_START: f64 = 0.1;
/// LDA's `heldout_chain_length` in a sweep whose params name none: no Chib-style
/// estimate at each fit's end. The rows are scored by document completion, and the
/// estimate (S = 1 000 sweeps forward and back over every held-out document) took 10–20 %
/// of a small-K fit's time (decision 0072).
const SWEEP_LDA_HELDOUT_CHAIN_LENGTH: u64 = 0;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SweepRequest {
    corpus_id: String,
    model: String,
    topics: Vec<u64>,
    #[serde(default)]
    chains: Option<u64>,
    #[serde(default)]
    params: Value,
    #[serde(default)]
    options: Value,
    #[serde(default)]
    seed: Option<u64>,
    #[serde(default)]
    heldout_fraction: Option<f64>,
    #[serde(default)]
    include_hdp: bool,
}

/// A checked request: what the sweep's row keeps.
#[derive(Debug, Clone)]
struct SweepSpec {
    corpus_id: String,
    model: String,
    topics: Vec<usize>,
    chains: Option<usize>,
    params: serde_json::Map<String, Value>,
    options: JobOptions,
    seed: u64,
    heldout_fraction: f64,
    include_hdp: bool,
}

impl SweepRequest {
    /// Check what needs no corpus; errors name the field.
    fn check(self) -> ApiResult<SweepSpec> {
        if !SWEEP_FAMILIES.contains(&self.model.as_str()) {
            return Err(ApiError::invalid(
                "model",
                format!("a sweep fits {} at each K (hdp infers K: add it as a row with include_hdp)", SWEEP_FAMILIES.join(", ")),
            ));
        }
        if self.topics.is_empty() || self.topics.len() > MAX_SWEEP_TOPICS {
            return Err(ApiError::invalid("topics", format!("give 1 to {MAX_SWEEP_TOPICS} numbers of topics")));
        }
        let mut topics: Vec<usize> = self.topics.iter().map(|&k| k as usize).collect();
        topics.sort_unstable();
        if topics.windows(2).any(|w| w[0] == w[1]) {
            return Err(ApiError::invalid("topics", "each number of topics once"));
        }
        let mut params = match self.params {
            Value::Null => serde_json::Map::new(),
            Value::Object(map) => map,
            _ => return Err(ApiError::invalid("params", "must be a JSON object")),
        };
        for (key, given_by) in [("topics", "topics"), ("chains", "chains"), ("test_fraction", "heldout_fraction")] {
            if params.contains_key(key) {
                return Err(ApiError::invalid(format!("params.{key}"), format!("a sweep sets {key} for every fit: give it as the sweep's {given_by}")));
            }
        }
        if self.model == "lda" {
            params.entry("optimize_interval").or_insert(json!(SWEEP_LDA_OPTIMIZE_INTERVAL));
            if params["optimize_interval"] != json!(0) {
                params.entry("alpha").or_insert(json!(SWEEP_LDA_ALPHA_START));
            }
            params.entry("heldout_chain_length").or_insert(json!(SWEEP_LDA_HELDOUT_CHAIN_LENGTH));
        }
        let options = options_of(&self.options)?;
        let heldout_fraction = self.heldout_fraction.unwrap_or(DEFAULT_HELDOUT_FRACTION);
        if !(heldout_fraction > 0.0 && heldout_fraction <= MAX_HELDOUT_FRACTION) {
            return Err(ApiError::invalid(
                "heldout_fraction",
                format!("must be above 0 and at most {MAX_HELDOUT_FRACTION}: the fits are compared on the documents held out"),
            ));
        }
        Ok(SweepSpec {
            corpus_id: self.corpus_id,
            model: self.model,
            topics,
            chains: self.chains.map(|c| c as usize),
            params,
            options,
            seed: self.seed.unwrap_or_else(rand::random),
            heldout_fraction,
            include_hdp: self.include_hdp,
        })
    }
}

impl SweepSpec {
    /// The fit request of one row: `Some(k)` for the swept family at K = k, `None` for
    /// the HDP row (at its defaults, which infer K; the sweep's split).
    fn fit_request(&self, k: Option<usize>) -> FitRequest {
        let (model, params) = match k {
            Some(k) => {
                let mut params = self.params.clone();
                params.insert("topics".into(), json!(k));
                if let Some(c) = self.chains {
                    params.insert("chains".into(), json!(c));
                }
                params.insert("test_fraction".into(), json!(self.heldout_fraction));
                (self.model.clone(), Value::Object(params))
            }
            // The HDP's defaults infer K (deletes every pass, decision 0070).
            None => ("hdp".to_string(), json!({"test_fraction": self.heldout_fraction})),
        };
        FitRequest { model, params, options: self.options, seed: self.seed }
    }

    /// What the sweep's row keeps.
    fn to_json(&self) -> Value {
        json!({
            "topics": self.topics,
            "chains": self.chains,
            "params": self.params,
            "options": self.options.to_json(),
            "seed": self.seed,
            "heldout_fraction": self.heldout_fraction,
            "include_hdp": self.include_hdp,
        })
    }
}

/// A row's refusal, its field the sweep's own where the sweep set the parameter.
fn row_error(k: Option<usize>, e: SubmitError) -> ApiError {
    let which = k.map_or("the HDP row".to_string(), |k| format!("K = {k}"));
    match &e {
        SubmitError::Params(p) if ["topics", "chains", "test_fraction"].contains(&p.field.as_str()) => {
            let field = if p.field == "test_fraction" { "heldout_fraction" } else { p.field.as_str() };
            ApiError::invalid(field, format!("{which}: {}", p.message))
        }
        _ => {
            let mut out = submit_error(e);
            out.detail = format!("{which}: {}", out.detail);
            out
        }
    }
}

/// `POST /v1/sweeps` → 202 with `Location`: every row's fit checked as `POST /v1/jobs`
/// checks one, then the sweep and its jobs queued together (or nothing).
pub async fn create(State(state): State<AppState>, caller: Option<Extension<Caller>>, headers: HeaderMap, body: Body) -> ApiResult<Response> {
    require_json(&headers)?;
    let body = read_body(body, state.max_body_bytes).await?;
    let spec = parse_json::<SweepRequest>(&body)?.check()?;
    let family = FamilyName::parse(&spec.model).map_err(|_| ApiError::invalid("model", "not a family this server fits"))?;
    let (corpus_id, stored) = input_of(&state, family.family(), Some(spec.corpus_id.clone()), None).await?;
    let StoredStats::Corpus(stats) = stored else { return Err(ApiError::internal("a sweep's family fits a corpus")) };
    let rows: Vec<Option<usize>> = spec.topics.iter().map(|&k| Some(k)).chain(spec.include_hdp.then_some(None)).collect();
    let host = host(&state);
    let mut fits = Vec::with_capacity(rows.len());
    for &k in &rows {
        fits.push(spec.fit_request(k).draft().and_then(|d| d.parse()).map_err(|e| row_error(k, e))?);
    }
    let mut plans = Vec::with_capacity(fits.len());
    for (fit, &k) in fits.iter().zip(&rows) {
        plans.push(fit.plan(InputStats::Corpus(&stats), &host).map_err(|e| row_error(k, e))?);
    }
    if let Some(first) = fits.first() {
        check_seed_words(&state, &first.params().seeds(), &corpus_id).await?;
    }
    let ids: Vec<String> = rows.iter().map(|_| uuid::Uuid::new_v4().to_string()).collect();
    let gate = state.limits.gate(caller.as_deref());
    let jobs: Vec<_> = plans.iter().zip(&ids).map(|(plan, id)| plan.new_job(id, FitInput::Corpus(&corpus_id), gate)).collect();
    let sweep_id = uuid::Uuid::new_v4().to_string();
    let request = spec.to_json();
    let sweep = NewSweep { id: &sweep_id, corpus_id: &corpus_id, model: family, request: &request, queue: gate };
    let sweep = state
        .store
        .insert_sweep(sweep, &jobs)
        .await?
        .map_err(|refused| not_queued(refused, &state.limits, || ApiError::invalid("corpus_id", format!("corpus {corpus_id:?} was deleted"))))?;
    state.runner.wake();
    let jobs = state.store.sweep_jobs(&sweep_id).await?;
    let body = SweepView::new(&sweep, &jobs, &[]).to_json();
    Ok((StatusCode::ACCEPTED, [(header::LOCATION, format!("/v1/sweeps/{sweep_id}"))], Json(body)).into_response())
}

async fn find(state: &AppState, id: &str) -> ApiResult<SweepRow> {
    state.store.get_sweep(id).await?.ok_or_else(|| ApiError::not_found("sweep", id))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SweepQuery {
    #[serde(default)]
    format: Option<String>,
}

/// `GET /v1/sweeps/{id}?format=json|csv`: the sweep's status, a row per fit (its
/// scores once it has succeeded) and the suggested number of topics.
pub async fn get_one(State(state): State<AppState>, Path(id): Path<String>, RawQuery(q): RawQuery) -> ApiResult<Response> {
    let query: SweepQuery = parse_query(q.as_deref())?;
    let csv = match query.format.as_deref() {
        None | Some("json") => false,
        Some("csv") => true,
        Some(_) => return Err(ApiError::invalid("query.format", "must be json or csv")),
    };
    let sweep = find(&state, &id).await?;
    let jobs = state.store.sweep_jobs(&id).await?;
    let scores = state.store.sweep_scores(&id).await?;
    score_finished(&state, &sweep, &jobs, &scores);
    let view = SweepView::new(&sweep, &jobs, &scores);
    Ok(if csv { ([(header::CONTENT_TYPE, "text/csv; charset=utf-8")], view.to_csv()).into_response() } else { Json(view.to_json()).into_response() })
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListQuery {
    #[serde(default)]
    corpus_id: Option<String>,
}

/// Most sweeps one list answers.
const LIST_LIMIT: i64 = 100;

/// `GET /v1/sweeps?corpus_id=`: the newest sweeps (of one corpus), without their scores.
pub async fn list(State(state): State<AppState>, RawQuery(q): RawQuery) -> ApiResult<Json<Value>> {
    let query: ListQuery = parse_query(q.as_deref())?;
    let sweeps = state.store.list_sweeps(query.corpus_id.as_deref(), LIST_LIMIT).await?;
    let mut out = Vec::with_capacity(sweeps.len());
    for sweep in &sweeps {
        let jobs = state.store.sweep_jobs(&sweep.id).await?;
        out.push(SweepView::new(sweep, &jobs, &[]).summary_json());
    }
    Ok(Json(json!({"sweeps": out})))
}

/// `DELETE /v1/sweeps/{id}`: cancel every fit of the sweep not yet finished (queued
/// ones at once, running ones at their next sweep boundary); finished fits and their
/// models stay. 202 with the sweep.
pub async fn cancel(State(state): State<AppState>, Path(id): Path<String>) -> ApiResult<Response> {
    let sweep = state.store.cancel_sweep(&id).await?.ok_or_else(|| ApiError::not_found("sweep", &id))?;
    let jobs = state.store.sweep_jobs(&id).await?;
    for job in &jobs {
        state.runner.cancel(&job.id);
    }
    let scores = state.store.sweep_scores(&id).await?;
    Ok((StatusCode::ACCEPTED, Json(SweepView::new(&sweep, &jobs, &scores).to_json())).into_response())
}
