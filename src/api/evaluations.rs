//! Evaluating a fitted model: held-out likelihood and test-split evaluation jobs, and
//! the Monte Carlo topic correlations of correlated-topic models.
//!
//! Why it exists: these requests take a model rather than a corpus. The expensive ones
//! (a Chib-style estimate per document, re-scoring a test split) are queued as jobs of
//! their own kind, polled at `/v1/jobs/{id}` like fits, with the result in the finished
//! job's `result`. Documents are encoded and checked here, before anything is queued,
//! so bad input changes nothing.

use super::error::{ApiError, ApiResult};
use super::extract::{from_str, parse_json, parse_query, require_json};
use super::families::require_capability;
use super::jobs::job_json;
use super::limits::{check_document_count, not_queued};
use super::predict::{check_tokens, encode_documents, require_a_known_word};
use super::AppState;
use crate::corpus::RawDocument;
use crate::models::heldout::{EstimatorSettings, HeldoutDoc};
use crate::store::jobs::{JobKind, NewEvaluationJob};
use crate::store::tokens::Caller;
use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HeldoutRequest {
    documents: Vec<RawDocument>,
    /// Estimator settings (model specific; unknown keys are a 422).
    #[serde(default)]
    params: Value,
    /// Seed of the estimator's chains (default 0: the same request gives the same answer).
    #[serde(default)]
    seed: Option<u64>,
}

/// `POST /v1/models/{id}/heldout-likelihood` → 202 with the evaluation job.
pub async fn heldout(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    require_json(&headers)?;
    let (body, _body_room) = super::body::admitted(&state.request_memory, &headers, body, state.max_body_bytes).await?;
    let m = state.models.get(&state.store, &id).await?;
    require_capability(m.row.family_name(), |c| c.heldout_likelihood, "held-out likelihood estimator")?;
    let m2 = m.clone();
    let max_documents = state.limits.max_request_documents;
    let token_caps = state.limits.request_tokens();
    let threads = state.runner.default_threads();
    let (params, seed, (input, memory)) = tokio::task::spawn_blocking(move || -> ApiResult<(Value, u64, (Vec<u8>, u64))> {
        let req: HeldoutRequest = parse_json(&body)?;
        check_document_count(req.documents.len(), max_documents)?;
        let settings = match req.params {
            Value::Null => EstimatorSettings::default(),
            v @ Value::Object(_) => EstimatorSettings::from_json(&v)?,
            _ => return Err(ApiError::invalid("params", "must be a JSON object")),
        };
        // Checks the settings against this model's estimator; the family declared that
        // it has one. The job stores the typed settings' JSON.
        if m2.model.heldout_scorer(&settings)?.is_none() {
            return Err(ApiError::internal(format!("{} declares a held-out likelihood estimator but its model has none", m2.row.family_name())));
        }
        let (ids, encoded) = encode_documents(&m2, &req.documents)?;
        check_tokens(&req.documents, &encoded, &token_caps)?;
        require_a_known_word(&req.documents, &encoded)?;
        check_sizes(&encoded, m2.model.num_topics())?;
        let names = m2.model.feature_names();
        let mut docs = Vec::with_capacity(ids.len());
        for (i, ((id, doc), raw)) in ids.into_iter().zip(encoded).zip(&req.documents).enumerate() {
            let features = feature_row(&names, raw, i)?;
            docs.push(HeldoutDoc { id, doc, features });
        }
        let input = postcard::to_allocvec(&docs).map_err(ApiError::internal)?;
        let longest = docs.iter().map(|d| d.doc.num_tokens()).max().unwrap_or(0);
        let memory = heldout_memory_bytes(m2.model.memory_bytes() + m2.lexicon.memory_bytes(), input.len(), longest, m2.model.num_topics(), threads);
        Ok((settings.to_json(), req.seed.unwrap_or(0), (input, memory)))
    })
    .await
    .map_err(ApiError::internal)??;
    let job_id = uuid::Uuid::new_v4().to_string();
    let job = state
        .store
        .insert_evaluation_job(NewEvaluationJob {
            id: &job_id,
            kind: JobKind::HeldoutLikelihood,
            source_model_id: &id,
            corpus_id: None,
            model: m.row.family.clone().map_err(ApiError::internal)?,
            params: &params,
            seed,
            input: Some(input),
            queue: state.limits.gate(caller.as_deref()),
            memory_bytes: Some(memory),
        })
        .await?
        .map_err(|refused| not_queued(refused, &state.limits, || ApiError::not_found("model", &id)))?;
    accepted(&state, &job)
}

/// Most known tokens of one held-out document, and most tokens × topics (an estimator
/// keeps a tokens × K table per document and its time grows with both); the request's
/// total is `--max-request-tokens` ([`check_tokens`]).
const MAX_DOC_TOKENS: u64 = 100_000;
const MAX_DOC_TOKEN_TOPICS: u64 = 20_000_000;

/// A held-out likelihood job's estimated peak memory: the runner's decoded copy of the
/// model, the stored documents (read, then decoded), and each scoring thread's
/// tokens × K table of `f64` for the longest document.
fn heldout_memory_bytes(model_bytes: usize, input_bytes: usize, longest_tokens: u64, topics: usize, threads: usize) -> u64 {
    model_bytes as u64 + 2 * input_bytes as u64 + threads as u64 * longest_tokens * topics as u64 * 8
}

/// Reject documents too large to score before anything is queued.
fn check_sizes(docs: &[crate::corpus::lexicon::EncodedDoc], num_topics: usize) -> ApiResult<()> {
    for (i, d) in docs.iter().enumerate() {
        let n = d.num_tokens();
        if n > MAX_DOC_TOKENS || n.saturating_mul(num_topics as u64) > MAX_DOC_TOKEN_TOPICS {
            return Err(ApiError::invalid(
                format!("documents[{i}]"),
                format!(
                    "{n} tokens is too many to score with {num_topics} topics (at most {MAX_DOC_TOKENS} tokens and {MAX_DOC_TOKEN_TOPICS} tokens × topics)"
                ),
            ));
        }
    }
    Ok(())
}

/// A document's features in the model's order: absent names are 0 (as in a corpus);
/// names the model does not know are a 422 naming them.
fn feature_row(names: &[String], doc: &RawDocument, index: usize) -> ApiResult<Vec<f64>> {
    let mut row = vec![0.0; names.len()];
    for (name, &value) in doc.features.iter().flatten() {
        let field = format!("documents[{index}].features.{name}");
        let slot = names.iter().position(|n| n == name).ok_or_else(|| {
            if names.is_empty() {
                ApiError::invalid(&field, "this model reads no metadata features")
            } else {
                ApiError::invalid(&field, format!("unknown feature; the model reads {}", names.join(", ")))
            }
        })?;
        if !value.is_finite() {
            return Err(ApiError::invalid(field, "must be a finite number"));
        }
        row[slot] = value;
    }
    Ok(row)
}

/// `POST /v1/models/{id}/evaluation` → 202: re-score a supervised model on the test
/// split of its corpus (the same split the fit held out).
pub async fn evaluate(State(state): State<AppState>, caller: Option<Extension<Caller>>, Path(id): Path<String>) -> ApiResult<Response> {
    let row = state.store.get_model(&id).await?.ok_or_else(|| ApiError::not_found("model", &id))?;
    require_capability(row.family_name(), |c| c.label_evaluation, "test-split evaluation")?;
    if row.diagnostics.get("evaluation").is_none_or(Value::is_null) {
        return Err(ApiError::not_offered("the model was fitted without a test split: nothing to evaluate"));
    }
    let corpus_id = row.corpus_id.clone().ok_or_else(|| ApiError::not_offered(format!("{} models were fitted on a graph, not a corpus", row.family_name())))?;
    let job_id = uuid::Uuid::new_v4().to_string();
    let job = state
        .store
        .insert_evaluation_job(NewEvaluationJob {
            id: &job_id,
            kind: JobKind::Evaluation,
            source_model_id: &id,
            corpus_id: Some(&corpus_id),
            model: row.family.clone().map_err(ApiError::internal)?,
            params: &row.params,
            seed: row.seed,
            input: None,
            queue: state.limits.gate(caller.as_deref()),
            memory_bytes: None,
        })
        .await?
        .map_err(|refused| not_queued(refused, &state.limits, || ApiError::conflict(format!("model {id} or its corpus {corpus_id} no longer exists"))))?;
    accepted(&state, &job)
}

fn accepted(state: &AppState, job: &crate::store::JobRow) -> ApiResult<Response> {
    state.runner.wake();
    let location = format!("/v1/jobs/{}", job.id);
    Ok((StatusCode::ACCEPTED, [(header::LOCATION, location)], Json(job_json(job))).into_response())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CorrelationsQuery {
    #[serde(default, deserialize_with = "from_str::opt")]
    draws: Option<usize>,
    #[serde(default, deserialize_with = "from_str::opt")]
    seed: Option<u64>,
}

/// Most draws per document a correlations request may ask for.
const MAX_DRAWS: usize = 100_000;
/// Most draws × topics (the memory one document's simulation holds).
const MAX_DRAW_VALUES: usize = 20_000_000;

/// `GET /v1/models/{id}/correlations?draws=&seed=`: Monte Carlo covariance and
/// correlation of topic weights (DCNT, SCNT), topic ids as in `/topics`.
pub async fn correlations(State(state): State<AppState>, Path(id): Path<String>, RawQuery(q): RawQuery) -> ApiResult<Json<Value>> {
    let query: CorrelationsQuery = parse_query(q.as_deref())?;
    let draws = query.draws.unwrap_or(5_000);
    if !(2..=MAX_DRAWS).contains(&draws) {
        return Err(ApiError::invalid("query.draws", format!("must be between 2 and {MAX_DRAWS}")));
    }
    let seed = query.seed.unwrap_or(0);
    let m = state.models.get(&state.store, &id).await?;
    require_capability(m.row.family_name(), |c| c.correlations, "topic correlations")?;
    // The estimator keeps every draw of a document's weights: bound draws × topics.
    if draws.saturating_mul(m.model.num_topics()) > MAX_DRAW_VALUES {
        return Err(ApiError::invalid("query.draws", format!("draws × topics must be at most {MAX_DRAW_VALUES} ({} topics)", m.model.num_topics())));
    }
    let _turn = state.pool_turn().await?;
    let (m2, pool) = (m.clone(), state.predict_pool.clone());
    let result = tokio::task::spawn_blocking(move || pool.install(|| m2.model.correlations(draws, seed))).await.map_err(ApiError::internal)?;
    let c = result.ok_or_else(|| ApiError::internal(format!("{} declares topic correlations but its model has none", m.row.family_name())))?;
    let k = c.num_topics;
    let rows = |v: &[f64]| v.chunks(k.max(1)).map(|r| r.to_vec()).collect::<Vec<_>>();
    let (activation_covariance, activation_correlation) = match &c.activation {
        Some((cov, corr)) => (json!(rows(cov)), json!(rows(corr))),
        None => (Value::Null, Value::Null),
    };
    Ok(Json(json!({
        "model_id": id,
        "topics": (0..k).collect::<Vec<_>>(),
        "draws": c.draws,
        "seed": seed,
        "mean": c.mean,
        "covariance": rows(&c.covariance),
        "correlation": rows(&c.correlation),
        "activation_covariance": activation_covariance,
        "activation_correlation": activation_correlation,
    })))
}
