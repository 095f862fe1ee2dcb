//! `/v1/models`: fitted models, their topics (frequency, exclusivity, FREX; with their
//! coherence on request, see [`super::coherence`]) and predictions for new documents.

use super::coherence::{coherence_of, number, CoherenceOptions, CoherenceParams, CoherenceResult};
use super::error::{ApiError, ApiResult};
use super::extract::{from_str, parse_json, parse_query, read_body, require_json, Page};
use super::model_cache::LoadedModel;
use super::request_memory;
use super::topic_intervals;
use super::topic_pages::PageBody;
use super::topic_query::{rank_and_weight, rank_name, resolve_topic, topic_header};
use super::AppState;
use crate::corpus::lexicon::EncodedDoc;
use crate::corpus::RawDocument;
use crate::models::{Comparison, PredictOptions};
use crate::store::{DeleteOutcome, ModelRow};
use crate::summaries::{Rank, WordScore};
use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::sync::Arc;

fn model_json(r: &ModelRow) -> Value {
    json!({
        "id": r.id,
        "model": r.family,
        "job_id": r.job_id,
        "corpus_id": r.corpus_id,
        "graph_id": r.graph_id,
        "params": r.params,
        "seed": r.seed,
        "created_at": r.created_at,
        "num_topics": r.num_topics,
        "diagnostics": r.diagnostics,
        "capabilities": crate::models::registry::lookup(&r.family).map(|f| f.capabilities()),
    })
}

/// `GET /v1/models`.
pub async fn list(State(state): State<AppState>, RawQuery(q): RawQuery) -> ApiResult<Json<Value>> {
    let page: Page = parse_query(q.as_deref())?;
    if page.status.is_some() {
        return Err(ApiError::invalid("query.status", "models have no status"));
    }
    let (offset, limit) = page.bounds()?;
    let (rows, total) = state.store.list_models(offset, limit).await?;
    Ok(Json(json!({"models": rows.iter().map(model_json).collect::<Vec<_>>(), "total": total, "offset": offset, "limit": limit})))
}

/// `GET /v1/models/{id}`.
pub async fn get_one(State(state): State<AppState>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let row = state.store.get_model(&id).await?.ok_or_else(|| ApiError::not_found("model", &id))?;
    let mut v = model_json(&row);
    v["thinned_samples"] = json!(state.store.sample_iterations(&row.job_id).await?.len());
    Ok(Json(v))
}

/// `GET /v1/models/{id}/evaluation`: the test-split scores computed when the model was
/// fitted (supervised models fitted with a test split).
pub async fn evaluation(State(state): State<AppState>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let row = state.store.get_model(&id).await?.ok_or_else(|| ApiError::not_found("model", &id))?;
    match row.diagnostics.get("evaluation") {
        Some(e) if !e.is_null() => Ok(Json(json!({"model_id": row.id, "evaluation": e}))),
        _ => Err(ApiError::no_evaluation(&id)),
    }
}

/// `DELETE /v1/models/{id}`.
pub async fn delete(State(state): State<AppState>, Path(id): Path<String>) -> ApiResult<StatusCode> {
    match state.store.delete_model(&id).await? {
        DeleteOutcome::Deleted => {
            state.models.forget(&id);
            Ok(StatusCode::NO_CONTENT)
        }
        DeleteOutcome::NotFound => Err(ApiError::not_found("model", &id)),
        DeleteOutcome::InUse(jobs) => Err(ApiError::conflict(format!("model {id} is used by evaluation job(s) {}; cancel them or wait", jobs.join(", ")))),
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TopicsQuery {
    #[serde(default, deserialize_with = "from_str::opt")]
    n: Option<usize>,
    #[serde(default)]
    rank: Option<String>,
    #[serde(default, deserialize_with = "from_str::opt")]
    weight: Option<f64>,
    #[serde(default)]
    comparison: Option<String>,
    #[serde(default)]
    format: Option<String>,
    /// `coherence`: add each topic's coherence (options below).
    #[serde(default)]
    with: Option<String>,
    #[serde(default)]
    measure: Option<String>,
    #[serde(default)]
    window: Option<String>,
    #[serde(default, deserialize_with = "from_str::opt")]
    top_n: Option<usize>,
    /// With `with=intervals`: the intervals' probability (default 0.95).
    #[serde(default, deserialize_with = "from_str::opt")]
    level: Option<f64>,
}

/// Checked query options shared by both topic endpoints.
struct TopicsOptions {
    n: usize,
    rank: Rank,
    weight: f64,
    comparison: Comparison,
    csv: bool,
    /// `with=coherence`: over each topic's top `top_n` words by `rank`.
    coherence: Option<CoherenceOptions>,
    /// `with=intervals`: the intervals' level.
    intervals: Option<f64>,
}

impl TopicsOptions {
    /// What identifies the page these options ask of `endpoint` (with the model and its
    /// names); none when it carries coherence, which has its own cache.
    fn page_key(&self, endpoint: &str) -> Option<String> {
        if self.coherence.is_some() {
            return None;
        }
        let intervals = self.intervals.map_or(String::new(), |l| format!("|intervals {:x}", l.to_bits()));
        Some(format!("{endpoint}|{}|{:?}|{:x}|{:?}|{}{intervals}", self.n, self.rank, self.weight.to_bits(), self.comparison, self.csv))
    }
}

impl TopicsQuery {
    /// `max_n`: the server's `--max-n`.
    fn check(self, default_rank: Rank, max_n: usize) -> ApiResult<TopicsOptions> {
        let n = self.n.unwrap_or(10);
        if !(1..=max_n).contains(&n) {
            let mut e = ApiError::invalid("query.n", format!("must be between 1 and {max_n}"));
            e.limit = Some("max-n");
            return Err(e);
        }
        let (rank, weight) = rank_and_weight(self.rank.as_deref(), self.weight, default_rank)?;
        let comparison = match self.comparison.as_deref() {
            None | Some("siblings") | Some("natural") => Comparison::Natural,
            Some("all") => Comparison::All,
            Some(_) => return Err(ApiError::invalid("query.comparison", "must be siblings or all")),
        };
        let csv = match self.format.as_deref() {
            None | Some("json") => false,
            Some("csv") => true,
            Some(_) => return Err(ApiError::invalid("query.format", "must be json or csv")),
        };
        let (mut with_coherence, mut with_intervals) = (false, false);
        for part in self.with.iter().flat_map(|w| w.split(',')) {
            match part {
                "coherence" => with_coherence = true,
                "intervals" => with_intervals = true,
                _ => return Err(ApiError::invalid("query.with", "must be coherence, intervals or both (comma-separated)")),
            }
        }
        let intervals = match (with_intervals, self.level) {
            (false, None) => None,
            (false, Some(_)) => return Err(ApiError::invalid("query.level", "is the level of with=intervals, which is not asked for")),
            (true, _) if csv => return Err(ApiError::invalid("query.format", "with=intervals is served as JSON only")),
            (true, Some(l)) if !(l > 0.0 && l < 1.0) => return Err(ApiError::invalid("query.level", "must be between 0 and 1 (exclusive)")),
            (true, level) => Some(level.unwrap_or(super::topic_intervals::DEFAULT_LEVEL)),
        };
        let params = CoherenceParams { measure: self.measure, window: self.window, top_n: self.top_n };
        // A coherence option asks for coherence as `with=coherence` does.
        with_coherence |= params.measure.is_some() || params.window.is_some() || params.top_n.is_some();
        let coherence = if with_coherence { Some(params.check()?) } else { None };
        Ok(TopicsOptions { n, rank, weight, comparison, csv, coherence, intervals })
    }
}

fn words_json(m: &LoadedModel, words: &[WordScore]) -> Vec<Value> {
    words.iter().map(|w| json!({"word": m.lexicon.word(w.term), "frequency": w.frequency, "exclusivity": w.exclusivity, "frex": w.frex})).collect()
}

fn csv_escape(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// One topic of a CSV table: index, label, name, ranked words.
type CsvTopic = (usize, Option<String>, Option<String>, Vec<(String, WordScore)>);

/// The topic table as CSV; with coherence (one value per row of `rows`), a last
/// `coherence` column repeats each topic's value on its rows (empty when not finite).
fn csv_page(rows: Vec<CsvTopic>, coherence: Option<&[f64]>) -> PageBody {
    let mut out = String::from("topic,label,name,rank,word,frequency,exclusivity,frex");
    out.push_str(if coherence.is_some() { ",coherence\n" } else { "\n" });
    for (r, (k, label, name, words)) in rows.into_iter().enumerate() {
        let extra = coherence.map_or(String::new(), |c| format!(",{}", if c[r].is_finite() { c[r].to_string() } else { String::new() }));
        for (i, (word, s)) in words.iter().enumerate() {
            out.push_str(&format!(
                "{k},{},{},{},{},{},{},{}{extra}\n",
                csv_escape(label.as_deref().unwrap_or("")),
                csv_escape(name.as_deref().unwrap_or("")),
                i + 1,
                csv_escape(word),
                s.frequency,
                s.exclusivity,
                s.frex
            ));
        }
    }
    PageBody::new("text/csv; charset=utf-8", out)
}

/// `GET /v1/models/{id}/topics?n=&rank=&weight=&comparison=&format=`.
pub async fn topics(State(state): State<AppState>, Path(id): Path<String>, RawQuery(q): RawQuery) -> ApiResult<Response> {
    let opts = parse_query::<TopicsQuery>(q.as_deref())?.check(Rank::Frequency, state.limits.max_n)?;
    let m = state.models.get(&state.store, &id).await?;
    let names = m.topic_pages.names(&state.store, &id).await?;
    let key = opts.page_key("topics");
    if let Some(page) = key.as_deref().and_then(|k| m.topic_pages.page(&names, k)) {
        return Ok(page.into_response());
    }
    let turn = state.pool_turn().await?;
    // The same page may have been built while this request waited for its turn.
    if let Some(page) = key.as_deref().and_then(|k| m.topic_pages.page(&names, k)) {
        return Ok(page.into_response());
    }
    let (m2, pool) = (m.clone(), state.predict_pool.clone());
    let (rank, weight, n, comparison) = (opts.rank, opts.weight, opts.n, opts.comparison);
    let top_n = opts.coherence.map(|c| c.top_n);
    let (table, ranked, top_words) = tokio::task::spawn_blocking(move || {
        let table = m2.ranked_table(comparison, &pool);
        pool.install(|| {
            use rayon::prelude::*;
            let ranked: Vec<Vec<WordScore>> = (0..table.table.topics.len()).into_par_iter().map(|k| table.rank(k, rank, weight, Some(n))).collect();
            let top_words: Option<Vec<Vec<u32>>> =
                top_n.map(|t| (0..table.table.topics.len()).into_par_iter().map(|k| table.top_terms(k, rank, weight, t)).collect());
            (table, ranked, top_words)
        })
    })
    .await
    .map_err(ApiError::internal)?;
    drop(turn);
    let coherence = match (opts.coherence, top_words) {
        (Some(c), Some(words)) => Some(coherence_of(&state, &m, c, words).await?),
        _ => None,
    };
    let page = if opts.csv {
        let rows = ranked
            .into_iter()
            .enumerate()
            .map(|(k, ws)| {
                (
                    k,
                    table.table.topics[k].label.clone(),
                    names.names.get(&k).cloned(),
                    ws.into_iter().map(|w| (m.lexicon.word(w.term).to_string(), w)).collect(),
                )
            })
            .collect();
        csv_page(rows, coherence.as_ref().map(|(_, c)| c.per_topic.as_slice()))
    } else {
        let topics: Vec<Value> = ranked
            .iter()
            .enumerate()
            .map(|(k, ws)| {
                let mut t = topic_header(&table.table, k, &names.names);
                t["words"] = json!(words_json(&m, ws));
                if let Some((_, c)) = &coherence {
                    t["coherence"] = number(c.per_topic[k]);
                }
                t
            })
            .collect();
        let mut body = json!({"model_id": id, "rank": rank_name(opts.rank), "weight": opts.weight, "n": opts.n, "topics": topics});
        add_coherence_summary(&mut body, coherence.as_ref());
        if let Some(level) = opts.intervals {
            let listed: Vec<Vec<u32>> = ranked.iter().map(|ws| ws.iter().map(|w| w.term).collect()).collect();
            let (summaries, draws) = topic_intervals::intervals_of(&state, &m, listed, opts.rank, opts.weight, opts.n, level).await?;
            for (t, s) in body["topics"].as_array_mut().into_iter().flatten().zip(&summaries) {
                let mut words = t["words"].take();
                topic_intervals::add_to_topic(t, &mut words, s);
                t["words"] = words;
            }
            body["intervals"] = topic_intervals::summary_json(draws, level, opts.n);
        }
        json_page(&body)?
    };
    if let Some(key) = key {
        m.topic_pages.keep(&names, key, page.clone());
    }
    Ok(page.into_response())
}

/// A JSON body as a page.
fn json_page(body: &Value) -> ApiResult<PageBody> {
    Ok(PageBody::new("application/json", serde_json::to_vec(body).map_err(ApiError::internal)?))
}

/// The `coherence` object (settings and mean) of a topic table asked `with=coherence`.
fn add_coherence_summary(body: &mut Value, coherence: Option<&(String, CoherenceResult)>) {
    if let Some((corpus_id, c)) = coherence {
        body["coherence"] = c.summary_json(corpus_id);
    }
}

/// `GET /v1/models/{id}/topics/{topic}/frex`: one topic's FREX ranking; `topic` is an
/// index or a label.
pub async fn topic_frex(State(state): State<AppState>, Path((id, topic)): Path<(String, String)>, RawQuery(q): RawQuery) -> ApiResult<Response> {
    let opts = parse_query::<TopicsQuery>(q.as_deref())?.check(Rank::Frex, state.limits.max_n)?;
    let m = state.models.get(&state.store, &id).await?;
    let names = m.topic_pages.names(&state.store, &id).await?;
    let key = opts.page_key(&format!("frex/{topic}"));
    if let Some(page) = key.as_deref().and_then(|k| m.topic_pages.page(&names, k)) {
        return Ok(page.into_response());
    }
    let turn = state.pool_turn().await?;
    if let Some(page) = key.as_deref().and_then(|k| m.topic_pages.page(&names, k)) {
        return Ok(page.into_response());
    }
    let m2 = m.clone();
    let comparison = opts.comparison;
    let pool = state.predict_pool.clone();
    let ranked = tokio::task::spawn_blocking(move || m2.ranked_table(comparison, &pool)).await.map_err(ApiError::internal)?;
    let table = &ranked.table;
    let k = resolve_topic(table, &topic)?;
    let words = ranked.rank(k, opts.rank, opts.weight, Some(opts.n));
    drop(turn);
    let coherence = match opts.coherence {
        Some(c) => {
            let top = ranked.top_terms(k, opts.rank, opts.weight, c.top_n);
            Some(coherence_of(&state, &m, c, vec![top]).await?)
        }
        None => None,
    };
    let page = if opts.csv {
        let rows = vec![(
            k,
            table.topics[k].label.clone(),
            names.names.get(&k).cloned(),
            words.into_iter().map(|w| (m.lexicon.word(w.term).to_string(), w)).collect(),
        )];
        csv_page(rows, coherence.as_ref().map(|(_, c)| c.per_topic.as_slice()))
    } else {
        let mut topic = topic_header(table, k, &names.names);
        if let Some((_, c)) = &coherence {
            topic["coherence"] = number(c.per_topic[0]);
        }
        let mut body = json!({
            "model_id": id,
            "topic": topic,
            "rank": rank_name(opts.rank),
            "weight": opts.weight,
            "words": words_json(&m, &words),
        });
        add_coherence_summary(&mut body, coherence.as_ref());
        if let Some(level) = opts.intervals {
            // Only this topic's words are listed: the other topics' draws are not read.
            let mut listed = vec![Vec::new(); table.topics.len()];
            listed[k] = words.iter().map(|w| w.term).collect();
            let (summaries, draws) = topic_intervals::intervals_of(&state, &m, listed, opts.rank, opts.weight, opts.n, level).await?;
            let (mut topic, mut words) = (body["topic"].take(), body["words"].take());
            topic_intervals::add_to_topic(&mut topic, &mut words, &summaries[k]);
            (body["topic"], body["words"]) = (topic, words);
            body["intervals"] = topic_intervals::summary_json(draws, level, opts.n);
        }
        json_page(&body)?
    };
    if let Some(key) = key {
        m.topic_pages.keep(&names, key, page.clone());
    }
    Ok(page.into_response())
}

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
    let body = read_body(body, state.max_body_bytes).await?;
    let m = state.models.get(&state.store, &id).await?;
    let pool = state.predict_pool.clone();
    let max_documents = state.limits.max_request_documents;
    let _room = state.request_memory.admit(request_memory::predict_bytes(&body, m.model.num_topics(), max_documents)).await?;
    let _turn = state.pool_turn().await?;
    let out = tokio::task::spawn_blocking(move || predict_blocking(&m, &pool, &body, max_documents)).await.map_err(ApiError::internal)??;
    // Written while the request still holds its room: the answer's text is its peak.
    Ok(Json(out).into_response())
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

fn predict_blocking(m: &Arc<LoadedModel>, pool: &rayon::ThreadPool, body: &[u8], max_documents: usize) -> ApiResult<PredictResponse> {
    let req: PredictRequest = parse_json(body)?;
    super::limits::check_document_count(req.documents.len(), max_documents)?;
    let iterations = req.iterations.unwrap_or(100);
    if !(1..=10_000).contains(&iterations) {
        return Err(ApiError::invalid("iterations", "must be between 1 and 10000"));
    }
    let burn_in = req.burn_in.unwrap_or(iterations / 2);
    if burn_in >= iterations {
        return Err(ApiError::invalid("burn_in", "must be less than iterations"));
    }
    let (ids, encoded) = encode_documents(m, &req.documents)?;
    require_a_known_word(&req.documents, &encoded)?;
    let warnings: Vec<Value> = encoded.iter().enumerate().filter(|(_, e)| e.is_empty()).map(|(i, e)| predict_warning(i, &ids[i], e.oov_tokens)).collect();
    let level = match (req.intervals.unwrap_or(false), req.level) {
        (false, None) => None,
        (false, Some(_)) => return Err(ApiError::invalid("level", "is the level of intervals, which are not asked for")),
        (true, Some(l)) if !(l > 0.0 && l < 1.0) => return Err(ApiError::invalid("level", "must be between 0 and 1 (exclusive)")),
        (true, l) => Some(l.unwrap_or(super::topic_intervals::DEFAULT_LEVEL)),
    };
    if level.is_some() {
        super::families::require_capability(&m.row.family, |c| c.prediction_intervals, "intervals on predictions")?;
    }
    let options = PredictOptions { iterations, burn_in, seed: req.seed.unwrap_or(0) };
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
