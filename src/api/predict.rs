//! `POST /v1/models/{id}/predict`: topic proportions and labels for new documents.
//!
//! Why it exists: prediction is the one synchronous request whose cost grows with what
//! the client sends, so its admission is a sequence of its own: the body is admitted by
//! its declared length and read ([`super::body::admitted`]); the documents are parsed,
//! encoded with the model's lexicon and checked against the token caps
//! (`--max-document-tokens`, `--max-request-tokens`, and `--max-predict-work`, tokens ×
//! fold-in iterations × topics, which bounds how long one answer holds the predict
//! threads while others wait);
//! their work is admitted by the tokens and topics it expands to; only then does the
//! request take its turn on the predict pool.

use super::error::{ApiError, ApiResult};
use super::extract::{parse_json, require_json};
use super::limits::Limits;
use super::model_cache::LoadedModel;
use super::request_memory::predict_work_bytes;
use super::AppState;
use crate::corpus::lexicon::EncodedDoc;
use crate::corpus::{RawDocument, TokenLimits};
use crate::models::PredictOptions;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::sync::Arc;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PredictRequest {
    documents: Vec<RawDocument>,
    /// Fold-in sweeps per document (default 100).
    #[serde(default)]
    iterations: Option<usize>,
    #[serde(default)]
    burn_in: Option<usize>,
    /// Seed of the fold-in chains (default 0: the same answer every time).
    #[serde(default)]
    seed: Option<u64>,
    /// Add each document's interval of every topic proportion.
    #[serde(default)]
    intervals: Option<bool>,
    /// The intervals' probability (default 0.95).
    #[serde(default)]
    level: Option<f64>,
}

/// The answer of `POST /v1/models/{id}/predict`, serialised straight from the
/// predictions: a response holds a probability and a proportion per topic for every
/// document (930 numbers a document on linuxdoc), and building them as a `Value` tree
/// first cost a fifth of a prediction's time there. Fields in alphabetical order, as
/// the `Value` maps wrote them.
#[derive(Serialize)]
pub struct PredictResponse {
    model_id: String,
    predictions: Vec<DocumentPrediction>,
    warnings: Vec<Value>,
}

/// One document's prediction (see [`PredictResponse`]).
#[derive(Serialize)]
struct DocumentPrediction {
    id: String,
    labels: Vec<LabelProbability>,
    oov_tokens: u64,
    predicted_labels: Vec<String>,
    tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    topic_proportion_intervals: Option<Vec<crate::models::effects::Interval>>,
    topic_proportions: Vec<f64>,
    unknown_tokens: u64,
}

#[derive(Serialize)]
struct LabelProbability {
    label: String,
    probability: f64,
}

/// `POST /v1/models/{id}/predict`: documents are tokenised exactly as the corpus was.
pub async fn predict(State(state): State<AppState>, Path(id): Path<String>, headers: HeaderMap, body: Body) -> ApiResult<Response> {
    require_json(&headers)?;
    let (body, _body_room) = super::body::admitted(&state.request_memory, &headers, body, state.max_body_bytes).await?;
    let m = state.models.get(&state.store, &id).await?;
    let (m2, limits) = (m.clone(), state.limits.clone());
    let prepared = tokio::task::spawn_blocking(move || prepare(&m2, &body, &limits)).await.map_err(ApiError::internal)??;
    let work = predict_work_bytes(prepared.encoded.len(), prepared.tokens, m.model.num_topics());
    let _work_room = state.request_memory.admit_work(work).await?;
    let _turn = state.pool_turn().await?;
    let pool = state.predict_pool.clone();
    let out = tokio::task::spawn_blocking(move || answer(&m, &pool, prepared)).await.map_err(ApiError::internal)??;
    // Written while the request still holds its room: the answer's text is its peak.
    Ok(Json(out).into_response())
}

/// A predict request parsed, checked and encoded: what the predict threads run.
struct Prepared {
    ids: Vec<String>,
    encoded: Vec<EncodedDoc>,
    /// Tokens of all documents, known and unknown.
    tokens: u64,
    warnings: Vec<Value>,
    options: PredictOptions,
    /// The intervals' level, when asked for.
    level: Option<f64>,
}

/// Check the documents' tokens against the caps: a 422 naming the first document over
/// `--max-document-tokens` (its `text` or `counts`), or `documents` when all of them
/// are over the request's total. Returns the total.
pub(super) fn check_tokens(documents: &[RawDocument], encoded: &[EncodedDoc], caps: &TokenLimits) -> ApiResult<u64> {
    let mut total = 0u64;
    for (i, (raw, doc)) in documents.iter().zip(encoded).enumerate() {
        let tokens = doc.num_tokens().saturating_add(doc.oov_tokens);
        let field = format!("documents[{i}].{}", if raw.counts.is_some() { "counts" } else { "text" });
        caps.check_document(&field, tokens).map_err(|why| {
            let mut e = ApiError::invalid(field, why);
            e.limit = Some("max-document-tokens");
            e
        })?;
        total = total.saturating_add(tokens);
    }
    caps.check_input(total).map_err(|why| {
        let mut e = ApiError::invalid("documents", why);
        e.limit = Some("max-request-tokens");
        e
    })?;
    Ok(total)
}

/// Tokens × fold-in sweeps × topics within `--max-predict-work`: a fold-in visits every
/// token once a sweep and weighs every topic for it, so this bounds what one answer
/// costs the predict threads (an LDA of 50 topics took 1.85 CPU seconds for 10^9 of
/// them; bench/README.md, "Attacks replayed"). A 422 naming `iterations` when fewer
/// sweeps would fit, `documents` otherwise.
fn check_work(tokens: u64, iterations: usize, topics: usize, max: u64) -> ApiResult<()> {
    let per_sweep = tokens.saturating_mul(topics.max(1) as u64);
    let work = per_sweep.saturating_mul(iterations as u64);
    if work <= max {
        return Ok(());
    }
    let field = if per_sweep <= max { "iterations" } else { "documents" };
    let mut e = ApiError::invalid(
        field,
        format!(
            "{tokens} tokens × {iterations} fold-in iterations × {topics} topics is {work}; the server answers at most {max} in one request (--max-predict-work), so that one answer does not hold the predict threads while others wait: send fewer tokens per request or ask for fewer iterations"
        ),
    );
    e.limit = Some("max-predict-work");
    Err(e)
}

/// Encode request documents with the model's lexicon exactly as its corpus was:
/// (ids, encoded documents); a document's id defaults to its index.
pub(super) fn encode_documents(m: &LoadedModel, documents: &[RawDocument]) -> ApiResult<(Vec<String>, Vec<EncodedDoc>)> {
    let mut ids = Vec::with_capacity(documents.len());
    let mut encoded: Vec<EncodedDoc> = Vec::with_capacity(documents.len());
    for (i, doc) in documents.iter().enumerate() {
        let e = match (&doc.text, &doc.counts) {
            (Some(t), None) => m.lexicon.encode_text(&m.pipeline, t),
            (None, Some(c)) => m.lexicon.encode_counts(&m.pipeline, c).map_err(|msg| ApiError::invalid(format!("documents[{i}].counts"), msg))?,
            _ => return Err(ApiError::invalid(format!("documents[{i}]"), "give exactly one of text or counts")),
        };
        ids.push(doc.id.clone().unwrap_or_else(|| i.to_string()));
        encoded.push(e);
    }
    Ok((ids, encoded))
}

/// Most documents a 422 for documents without a known word names one by one.
const MAX_NAMED_DOCUMENTS: usize = 20;

/// A 422 naming `documents` when no document has a word in the model's vocabulary
/// (nothing could be predicted or scored); its detail names each document by its index
/// and, when the request gave one, its id. A request with at least one such word
/// passes: the documents without one are answered with a warning.
pub(super) fn require_a_known_word(documents: &[RawDocument], encoded: &[EncodedDoc]) -> ApiResult<()> {
    if encoded.iter().any(|e| !e.is_empty()) {
        return Ok(());
    }
    let name = |(i, d): (usize, &RawDocument)| match &d.id {
        Some(id) => format!("documents[{i}] (id {id:?})"),
        None => format!("documents[{i}]"),
    };
    let mut named: Vec<String> = documents.iter().enumerate().take(MAX_NAMED_DOCUMENTS).map(name).collect();
    if documents.len() > MAX_NAMED_DOCUMENTS {
        named.push(format!("and {} more", documents.len() - MAX_NAMED_DOCUMENTS));
    }
    let what = if documents.len() == 1 { "the document has no word" } else { "no document has a word" };
    Err(ApiError::invalid(
        "documents",
        format!("{what} in the model's vocabulary after preprocessing, so nothing can be predicted or scored: {}", named.join(", ")),
    ))
}

/// The warning of a prediction for a document with no known word.
fn predict_warning(index: usize, id: &str, unknown: u64) -> Value {
    let why = if unknown == 0 {
        "the document has no token after preprocessing".to_string()
    } else {
        format!("none of the document's {unknown} tokens is in the model's vocabulary")
    };
    json!({
        "field": format!("documents[{index}]"),
        "id": id,
        "detail": format!("{why}: its topic proportions and labels come from the model alone, not from the document"),
    })
}

/// Parse, check and encode a predict body (the caller holds room for the body).
fn prepare(m: &LoadedModel, body: &[u8], limits: &Limits) -> ApiResult<Prepared> {
    let req: PredictRequest = parse_json(body)?;
    super::limits::check_document_count(req.documents.len(), limits.max_request_documents)?;
    let iterations = req.iterations.unwrap_or(100);
    if !(1..=10_000).contains(&iterations) {
        return Err(ApiError::invalid("iterations", "must be between 1 and 10000"));
    }
    let burn_in = req.burn_in.unwrap_or(iterations / 2);
    if burn_in >= iterations {
        return Err(ApiError::invalid("burn_in", "must be less than iterations"));
    }
    let (ids, encoded) = encode_documents(m, &req.documents)?;
    let tokens = check_tokens(&req.documents, &encoded, &limits.request_tokens())?;
    check_work(tokens, iterations, m.model.num_topics(), limits.max_predict_work)?;
    require_a_known_word(&req.documents, &encoded)?;
    let warnings: Vec<Value> = encoded.iter().enumerate().filter(|(_, e)| e.is_empty()).map(|(i, e)| predict_warning(i, &ids[i], e.oov_tokens)).collect();
    let level = match (req.intervals.unwrap_or(false), req.level) {
        (false, None) => None,
        (false, Some(_)) => return Err(ApiError::invalid("level", "is the level of intervals, which are not asked for")),
        (true, Some(l)) if !(l > 0.0 && l < 1.0) => return Err(ApiError::invalid("level", "must be between 0 and 1 (exclusive)")),
        (true, l) => Some(l.unwrap_or(super::topic_intervals::DEFAULT_LEVEL)),
    };
    if level.is_some() {
        super::families::require_capability(m.row.family_name(), |c| c.prediction_intervals, "intervals on predictions")?;
    }
    let options = PredictOptions { iterations, burn_in, seed: req.seed.unwrap_or(0) };
    Ok(Prepared { ids, encoded, tokens, warnings, options, level })
}

/// Run a prepared prediction on the predict threads (the caller holds a turn).
fn answer(m: &Arc<LoadedModel>, pool: &rayon::ThreadPool, prepared: Prepared) -> ApiResult<PredictResponse> {
    let Prepared { ids, encoded, warnings, options, level, .. } = prepared;
    // With intervals, one inference per document gives both.
    let (preds, mut intervals) = match level {
        Some(l) => match pool.install(|| m.model.predict_with_intervals(&encoded, &options, l)).map_err(ApiError::internal)? {
            Some(both) => {
                let (preds, intervals): (Vec<_>, Vec<_>) = both.into_iter().unzip();
                (preds, Some(intervals.into_iter()))
            }
            None => (pool.install(|| m.model.predict(&encoded, &options)).map_err(ApiError::internal)?, None),
        },
        None => (pool.install(|| m.model.predict(&encoded, &options)).map_err(ApiError::internal)?, None),
    };
    let predictions = preds
        .into_iter()
        .zip(ids)
        .zip(&encoded)
        .map(|((p, id), e)| DocumentPrediction {
            topic_proportion_intervals: intervals.as_mut().and_then(|i| i.next()),
            id,
            tokens: e.counts.iter().map(|&c| c as u64).sum::<u64>(),
            unknown_tokens: e.oov_tokens,
            oov_tokens: e.oov_tokens,
            topic_proportions: p.topic_proportions,
            labels: p.labels.into_iter().map(|(label, probability)| LabelProbability { label, probability }).collect(),
            predicted_labels: p.predicted_labels,
        })
        .collect();
    Ok(PredictResponse { model_id: m.row.id.clone(), predictions, warnings })
}
