//! `/v1/models/{id}/coherence`, the `with=coherence` option of the topic tables, and
//! `/v1/corpora/{id}/tokens` (the tokens coherence counts, for checking it elsewhere).
//!
//! Why it exists: coherence reads a second stored object, the model's training corpus,
//! and its options (measure, window, top words) are shared by three endpoints; the
//! numbers themselves are [`crate::summaries::coherence`]'s. Coherence counts every
//! document of the stored corpus, test-split documents included.

use super::error::{ApiError, ApiResult};
use super::extract::{from_str, parse_query};
use super::model_cache::LoadedModel;
use super::topic_query::{rank_and_weight, rank_name};
use super::AppState;
use crate::corpus::Corpus;
use crate::models::Comparison;
use crate::summaries::{model_coherence, Measure, Occurrences, Rank};
use axum::extract::{Path, RawQuery, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;

/// Largest `top_n` (pairs grow with its square).
const MAX_TOP_N: usize = 100;
/// Largest sliding window, in tokens.
const MAX_WINDOW: usize = 100_000;

/// The coherence options as they arrive (in this endpoint's and the topic tables'
/// queries).
#[derive(Debug, Default)]
pub struct CoherenceParams {
    pub measure: Option<String>,
    pub window: Option<String>,
    pub top_n: Option<usize>,
}

/// How virtual documents are formed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// The measure's gensim default when the corpus kept token order, else documents.
    Default,
    Document,
    Sliding(usize),
}

/// Checked coherence options.
#[derive(Debug, Clone, Copy)]
pub struct CoherenceOptions {
    pub measure: Measure,
    pub window: Window,
    pub top_n: usize,
}

impl CoherenceParams {
    pub fn check(&self) -> ApiResult<CoherenceOptions> {
        let measure = match self.measure.as_deref() {
            None => Measure::CNpmi,
            Some(m) => Measure::parse(m).ok_or_else(|| ApiError::invalid("query.measure", "must be u_mass, c_npmi, c_uci or c_v"))?,
        };
        let window = match self.window.as_deref() {
            None => Window::Default,
            Some("document") => Window::Document,
            Some(w) => match w.parse::<usize>() {
                Ok(n) if (1..=MAX_WINDOW).contains(&n) => Window::Sliding(n),
                _ => return Err(ApiError::invalid("query.window", format!("must be document or a number of tokens between 1 and {MAX_WINDOW}"))),
            },
        };
        if measure == Measure::UMass && matches!(window, Window::Sliding(_)) {
            return Err(ApiError::invalid("query.window", "u_mass counts documents (gensim's boolean document estimate): window must be document or absent"));
        }
        let top_n = self.top_n.unwrap_or(10);
        if !(2..=MAX_TOP_N).contains(&top_n) {
            return Err(ApiError::invalid("query.top_n", format!("must be between 2 and {MAX_TOP_N}")));
        }
        Ok(CoherenceOptions { measure, window, top_n })
    }
}

/// What was computed, for the response.
pub struct CoherenceResult {
    pub opts: CoherenceOptions,
    /// The window used: `None` for documents.
    pub window: Option<usize>,
    pub num_virtual_documents: u64,
    pub per_topic: Vec<f64>,
    pub mean: f64,
}

/// A coherence value as JSON: not finite (a top word that never occurs) → null.
pub fn number(x: f64) -> Value {
    if x.is_finite() {
        json!(x)
    } else {
        Value::Null
    }
}

impl CoherenceResult {
    /// The settings and the mean, as the `coherence` object of a response.
    pub fn summary_json(&self, corpus_id: &str) -> Value {
        json!({
            "measure": self.opts.measure.name(),
            "window": self.window.map_or(json!("document"), |w| json!(w)),
            "top_n": self.opts.top_n,
            "corpus_id": corpus_id,
            "num_virtual_documents": self.num_virtual_documents,
            "mean": number(self.mean),
        })
    }
}

/// The decoded training corpus of a topic model, or why there is none (`needs`: what
/// the caller reads in it, for the message when it has been deleted).
pub(super) async fn training_corpus(state: &AppState, m: &LoadedModel, needs: &str) -> ApiResult<(String, Arc<Corpus>)> {
    let id = m.row.corpus_id.clone().ok_or_else(|| ApiError::not_offered("the model has no training corpus"))?;
    let blob = state.store.corpus_data(&id).await?.ok_or_else(|| ApiError::conflict(format!("the model's training corpus {id} has been deleted; {needs}")))?;
    let corpus = tokio::task::spawn_blocking(move || Corpus::decode(&blob)).await.map_err(ApiError::internal)?.map_err(ApiError::internal)?;
    Ok((id, Arc::new(corpus)))
}

/// Resolves the window against what the corpus kept; errors name the parameter.
fn resolve_window(opts: &CoherenceOptions, corpus: &Corpus) -> ApiResult<Option<usize>> {
    let ordered = corpus.token_order.is_some();
    let no_order = |field: &str, what: String| {
        ApiError::invalid(field, format!("{what}, but this corpus keeps no token order (it has bag-of-words documents, `counts`, or was stored before topicd kept token order); use window=document, or measure=u_mass or c_npmi"))
    };
    match (opts.window, opts.measure.default_window()) {
        (Window::Document, _) | (Window::Default, None) => Ok(None),
        (Window::Default, Some(w)) if ordered => Ok(Some(w)),
        (Window::Default, Some(_)) if opts.measure != Measure::CV => Ok(None),
        (Window::Default, Some(w)) => Err(no_order("query.measure", format!("c_v slides a window of {w} tokens over each document"))),
        (Window::Sliding(w), _) if ordered => Ok(Some(w)),
        (Window::Sliding(w), _) => Err(no_order("query.window", format!("a window of {w} tokens slides over each document's tokens in order"))),
    }
}

/// Coherence of the given top words (term ids per topic) on the model's training corpus.
pub async fn coherence_of(state: &AppState, m: &LoadedModel, opts: CoherenceOptions, top_words: Vec<Vec<u32>>) -> ApiResult<(String, CoherenceResult)> {
    let (corpus_id, corpus) = training_corpus(state, m, "coherence counts its documents").await?;
    let window = resolve_window(&opts, &corpus)?;
    let _turn = state.pool_turn().await?;
    let pool = state.predict_pool.clone();
    let (num_virtual_documents, per_topic, mean) = tokio::task::spawn_blocking(move || {
        pool.install(|| {
            let words: Vec<u32> = top_words.iter().flatten().copied().collect();
            let occ = match (window, &corpus.token_order) {
                (Some(w), Some(order)) => Occurrences::from_windows(order, &words, w),
                _ => Occurrences::from_documents(&corpus.counts, &words),
            };
            let (per_topic, mean) = model_coherence(opts.measure, &occ, &top_words);
            (occ.num_docs, per_topic, mean)
        })
    })
    .await
    .map_err(ApiError::internal)?;
    Ok((corpus_id, CoherenceResult { opts, window, num_virtual_documents, per_topic, mean }))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CoherenceQuery {
    #[serde(default)]
    measure: Option<String>,
    #[serde(default)]
    window: Option<String>,
    #[serde(default, deserialize_with = "from_str::opt")]
    top_n: Option<usize>,
    #[serde(default)]
    rank: Option<String>,
    #[serde(default, deserialize_with = "from_str::opt")]
    weight: Option<f64>,
}

/// `GET /v1/models/{id}/coherence?measure=&window=&top_n=&rank=&weight=`: each topic's
/// coherence over its top `top_n` words (by `rank`, default frequency) and their mean.
pub async fn coherence(State(state): State<AppState>, Path(id): Path<String>, RawQuery(q): RawQuery) -> ApiResult<Response> {
    let query: CoherenceQuery = parse_query(q.as_deref())?;
    let opts = CoherenceParams { measure: query.measure.clone(), window: query.window.clone(), top_n: query.top_n }.check()?;
    let (rank, weight) = rank_and_weight(query.rank.as_deref(), query.weight, Rank::Frequency)?;
    let m = state.models.get(&state.store, &id).await?;
    let turn = state.pool_turn().await?;
    let (m2, pool) = (m.clone(), state.predict_pool.clone());
    let (labels, top_words) = tokio::task::spawn_blocking(move || {
        let table = m2.ranked_table(Comparison::Natural, &pool);
        pool.install(|| {
            use rayon::prelude::*;
            let top: Vec<Vec<u32>> = (0..table.table.topics.len()).into_par_iter().map(|k| table.top_terms(k, rank, weight, opts.top_n)).collect();
            (table.table.topics.iter().map(|t| t.label.clone()).collect::<Vec<_>>(), top)
        })
    })
    .await
    .map_err(ApiError::internal)?;
    drop(turn);
    let (corpus_id, result) = coherence_of(&state, &m, opts, top_words.clone()).await?;
    let topics: Vec<Value> = top_words
        .iter()
        .enumerate()
        .map(|(k, words)| {
            json!({
                "id": k,
                "label": labels[k],
                "coherence": number(result.per_topic[k]),
                "words": words.iter().map(|&t| m.lexicon.word(t)).collect::<Vec<_>>(),
            })
        })
        .collect();
    let mut body = result.summary_json(&corpus_id);
    body["model_id"] = json!(id);
    body["rank"] = json!(rank_name(rank));
    body["weight"] = json!(weight);
    body["topics"] = json!(topics);
    Ok(Json(body).into_response())
}

/// `GET /v1/corpora/{id}/tokens`: NDJSON, one line per document in corpus order:
/// `{"id", "tokens": [...]}` (the kept tokens in text order) for corpora that kept token
/// order, else `{"id", "counts": {word: count}}`. These are exactly the tokens
/// coherence counts (give them to gensim to reproduce its numbers).
pub async fn tokens(State(state): State<AppState>, Path(id): Path<String>) -> ApiResult<Response> {
    let blob = state.store.corpus_data(&id).await?.ok_or_else(|| ApiError::not_found("corpus", &id))?;
    let body = tokio::task::spawn_blocking(move || -> ApiResult<String> {
        let c = Corpus::decode(&blob).map_err(ApiError::internal)?;
        let mut out = String::new();
        for d in 0..c.num_documents() {
            let line = match &c.token_order {
                Some(order) => json!({"id": c.doc_ids[d], "tokens": order.doc(d).iter().map(|&t| c.lexicon.word(t)).collect::<Vec<_>>()}),
                None => {
                    let (terms, counts) = c.counts.row(d);
                    let bag: serde_json::Map<String, Value> = terms.iter().zip(counts).map(|(&t, &n)| (c.lexicon.word(t).to_string(), json!(n))).collect();
                    json!({"id": c.doc_ids[d], "counts": bag})
                }
            };
            out.push_str(&line.to_string());
            out.push('\n');
        }
        Ok(out)
    })
    .await
    .map_err(ApiError::internal)??;
    Ok(([(header::CONTENT_TYPE, "application/x-ndjson")], body).into_response())
}
