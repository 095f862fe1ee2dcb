//! `GET /v1/models/{id}/topics/{topic}/documents?n=`: a topic's representative documents.
//!
//! Why it exists: after a topic's words, people read the documents most about it (the
//! console's explorer shows them beside the words). The documents come from the model's
//! training corpus: the fit's posterior-mean proportions where the model keeps them
//! (LDA, DCNT/SCNT: the training documents), else every corpus document folded in
//! through the model's own prediction. Either is computed once per loaded model and kept
//! in the model cache; ranking is [`crate::summaries::representative`]. Each document
//! comes with its id, first words and the excerpt of its uploaded text (text uploads; see
//! [`crate::corpus::excerpt`]) and the `meta` its upload gave it.

use super::coherence::training_corpus;
use super::error::{ApiError, ApiResult};
use super::extract::parse_query;
use super::model_cache::LoadedModel;
use super::ranked_documents::RankedDocuments;
use super::topic_query::{resolve_topic, topic_header};
use super::AppState;
use crate::corpus::lexicon::EncodedDoc;
use crate::corpus::{meta, Corpus};
use crate::models::{Comparison, DocumentProportions, PredictOptions};
use crate::summaries::representative::{DocumentTopics, ProportionSource};
use axum::extract::{Path, RawQuery, State};
use axum::Json;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;

/// Documents returned unless `n` says otherwise, and the most `n` may ask for.
const DEFAULT_N: usize = 10;
const MAX_N: usize = 100;
/// Words of a document's text shown (when the corpus kept token order).
const FIRST_WORDS: usize = 30;

/// `GET /v1/models/{id}/topics/{topic}/documents`.
pub async fn list(State(state): State<AppState>, Path((id, topic)): Path<(String, String)>, RawQuery(q): RawQuery) -> ApiResult<Json<Value>> {
    let n = parse_n(q.as_deref())?;
    let m = state.models.get(&state.store, &id).await?;
    let ranked = match m.document_topics.get() {
        Some(r) => r.clone(),
        None => {
            let (_, corpus) = training_corpus(&state, &m, "representative documents are read from it").await?;
            let _turn = state.pool_turn().await?;
            let (m2, pool) = (m.clone(), state.predict_pool.clone());
            let r = tokio::task::spawn_blocking(move || pool.install(|| ranked_documents(&m2, &corpus))).await.map_err(ApiError::internal)??;
            m.document_topics.get_or_init(|| Arc::new(r)).clone()
        }
    };
    let names = m.topic_pages.names(&state.store, &id).await?.names;
    let (m2, pool) = (m.clone(), state.predict_pool.clone());
    let ranked_table = tokio::task::spawn_blocking(move || m2.ranked_table(Comparison::Natural, &pool)).await.map_err(ApiError::internal)?;
    let table = &ranked_table.table;
    let k = resolve_topic(table, &topic)?;
    let topics = &ranked.topics;
    let documents: Vec<Value> = topics
        .top(k, n)
        .into_iter()
        .map(|(row, share)| {
            // Posterior means are averages of proportions: rounding can leave one a
            // hair above 1 (a one-topic model's 1.0000000000000002); a share is at most 1.
            let proportions: Vec<f64> = topics.row(row).iter().map(|p| p.clamp(0.0, 1.0)).collect();
            let mut doc = json!({
                "id": ranked.ids[row],
                "share": share.clamp(0.0, 1.0),
                "first_words": ranked.first_words[row],
                "topic_proportions": proportions,
            });
            if let Some(text) = &ranked.texts[row] {
                doc["text"] = json!(text);
            }
            if let Some(meta) = &ranked.meta[row] {
                doc["meta"] = meta.clone();
            }
            doc
        })
        .collect();
    Ok(Json(json!({
        "model_id": id,
        "corpus_id": m.row.corpus_id,
        "topic": topic_header(table, k, &names, m.model.topic_stability().as_deref()),
        "source": topics.source.name(),
        "documents_ranked": topics.proportions.documents.len(),
        "documents": documents,
    })))
}

/// `n` from the query (1 to [`MAX_N`], default [`DEFAULT_N`]); any other parameter is
/// refused by name.
fn parse_n(query: Option<&str>) -> ApiResult<usize> {
    let params: HashMap<String, String> = parse_query(query)?;
    if let Some(other) = params.keys().find(|k| k.as_str() != "n") {
        return Err(ApiError::invalid(format!("query.{other}"), "unknown parameter; this endpoint takes n"));
    }
    match params.get("n") {
        None => Ok(DEFAULT_N),
        Some(s) => s
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_N).contains(n))
            .ok_or_else(|| ApiError::invalid("query.n", format!("must be an integer from 1 to {MAX_N}, got {s:?}"))),
    }
}

/// The model's documents over `corpus`, with the ids, first words and meta of their rows.
fn ranked_documents(m: &LoadedModel, corpus: &Corpus) -> ApiResult<RankedDocuments> {
    let topics = document_topics(m, corpus)?;
    let docs = &topics.proportions.documents;
    let ids = docs.iter().map(|&d| corpus.doc_ids[d].clone()).collect();
    let first_words = docs.iter().map(|&d| first_words(corpus, d)).collect();
    let texts = docs.iter().map(|&d| corpus.doc_excerpts.as_ref().and_then(|t| t[d].clone())).collect();
    let meta_text = |d: usize| corpus.doc_meta.as_ref().and_then(|m| m[d].as_deref());
    let meta = docs.iter().map(|&d| meta_text(d).and_then(meta::parse)).collect();
    let meta_bytes = docs.iter().map(|&d| 4 * meta_text(d).map_or(0, str::len)).sum();
    Ok(RankedDocuments { topics, ids, first_words, texts, meta, meta_bytes })
}

/// The model's document proportions over `corpus`: the fit's, or every document folded in.
fn document_topics(m: &LoadedModel, corpus: &Corpus) -> ApiResult<DocumentTopics> {
    let num_topics = m.model.num_topics();
    if let Some(proportions) = m.model.training_proportions(corpus, m.row.seed) {
        return Ok(DocumentTopics { source: ProportionSource::Fit, proportions, num_topics });
    }
    let docs: Vec<EncodedDoc> = (0..corpus.num_documents())
        .map(|d| {
            let (terms, counts) = corpus.counts.row(d);
            EncodedDoc { terms: terms.to_vec(), counts: counts.to_vec(), oov_tokens: 0 }
        })
        .collect();
    let predictions = m.model.predict(&docs, &PredictOptions { seed: m.row.seed, ..PredictOptions::default() }).map_err(ApiError::internal)?;
    let mut rows = Vec::with_capacity(docs.len() * num_topics);
    for p in &predictions {
        if p.topic_proportions.len() != num_topics {
            return Err(ApiError::internal(format!("a folded-in document has {} proportions, not {num_topics}", p.topic_proportions.len())));
        }
        rows.extend_from_slice(&p.topic_proportions);
    }
    Ok(DocumentTopics { source: ProportionSource::FoldIn, proportions: DocumentProportions { documents: (0..docs.len()).collect(), rows }, num_topics })
}

/// The document's first words after preprocessing, when the corpus kept token order.
fn first_words(corpus: &Corpus, d: usize) -> Option<String> {
    let order = corpus.token_order.as_ref()?;
    let (start, end) = (order.indptr[d] as usize, order.indptr[d + 1] as usize);
    let words: Vec<&str> = order.tokens[start..end.min(start + FIRST_WORDS)].iter().map(|&t| corpus.lexicon.word(t)).collect();
    Some(words.join(" "))
}
