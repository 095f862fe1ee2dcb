//! `GET /v1/models/{a}/compare/{b}`: two topic models' topics matched, each pair's
//! similarity, and the words that rose and fell most.
//!
//! Why it exists: after a refit (another K or seed, an edit, an update) users ask which
//! topic became which and what moved. The matching and measures are
//! [`crate::models::compare`]'s; this handler loads both models, their tables and the
//! names people gave their topics, and writes the answer.

use super::error::{ApiError, ApiResult};
use super::extract::{from_str, parse_query};
use super::topic_query::TopicNames;
use super::AppState;
use crate::models::compare::{compare as compare_models, work, Side, TopicPair, JACCARD_TOP, MAX_WORK};
use crate::models::stability::MATCH_SIMILARITY;
use crate::models::Comparison;
use axum::extract::{Path, RawQuery, State};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

/// Most risen and fallen words listed per pair.
const MAX_WORDS: usize = 100;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CompareQuery {
    /// Risen and fallen words listed per pair (default 10).
    #[serde(default, deserialize_with = "from_str::opt")]
    words: Option<usize>,
}

/// A topic table's rows with an edit's retired topics emptied.
fn without_retired(rows: &ndarray::Array2<f64>, row: &crate::store::models::ModelRow) -> ndarray::Array2<f64> {
    let mut rows = rows.clone();
    let n = rows.nrows();
    for k in super::derived::retired_topics(row).into_keys().filter(|&k| k < n) {
        rows.row_mut(k).fill(0.0);
    }
    rows
}

/// The answer's description of a topic: its id and name.
fn topic_ref(k: usize, names: &TopicNames) -> Value {
    json!({"id": k, "name": names.get(&k)})
}

/// `GET /v1/models/{a}/compare/{b}[?words=N]`.
pub async fn compare(State(state): State<AppState>, Path((a_id, b_id)): Path<(String, String)>, RawQuery(q): RawQuery) -> ApiResult<Json<Value>> {
    let query: CompareQuery = parse_query(q.as_deref())?;
    let words = query.words.unwrap_or(10);
    if words > MAX_WORDS {
        return Err(ApiError::invalid("query.words", format!("at most {MAX_WORDS} words per pair, got {words}")));
    }
    let a = state.models.get(&state.store, &a_id).await?;
    let b = state.models.get(&state.store, &b_id).await?;
    let _turn = state.pool_turn().await?;
    let (a_names, b_names) = (state.store.topic_names(&a_id).await?, state.store.topic_names(&b_id).await?);
    let (ma, mb, pool) = (a.clone(), b.clone(), state.predict_pool.clone());
    let comparison = tokio::task::spawn_blocking(move || {
        // The tables the topic pages computed and keep, not two more.
        let (ra, rb) = (ma.ranked_table(Comparison::Natural, &pool), mb.ranked_table(Comparison::Natural, &pool));
        let (ta, tb) = (&ra.table, &rb.table);
        // An edit's retired topics hold nothing: empty rows, which match nothing.
        let (rows_a, rows_b) = (without_retired(&ta.frequency, &ma.row), without_retired(&tb.frequency, &mb.row));
        let side = |m: &super::model_cache::LoadedModel| (0..m.lexicon.len() as u32).map(|w| m.lexicon.word(w).to_string()).collect::<Vec<String>>();
        let (wa, wb) = (side(&ma), side(&mb));
        let sa = Side { words: wa.iter().map(String::as_str).collect(), rows: &rows_a };
        let sb = Side { words: wb.iter().map(String::as_str).collect(), rows: &rows_b };
        let work = work(&sa, &sb);
        if work > MAX_WORK {
            return Err(ApiError::invalid(
                "other",
                format!(
                    "comparing {} × {} topics over {} words is {work} distance terms, more than {MAX_WORK}: compare models with fewer topics",
                    ta.topics.len(),
                    tb.topics.len(),
                    sa.words.len().max(sb.words.len())
                ),
            ));
        }
        Ok(compare_models(&sa, &sb, words))
    })
    .await
    .map_err(ApiError::internal)??;
    let pair = |p: &TopicPair| {
        json!({
            "a": topic_ref(p.a, &a_names),
            "b": topic_ref(p.b, &b_names),
            "similarity": p.similarity,
            "matched": p.matched,
            "top_words_jaccard": p.top_words_jaccard,
            "rose": p.rose,
            "fell": p.fell,
        })
    };
    let model = |m: &super::model_cache::LoadedModel| json!({"id": m.row.id, "model": m.row.family_name(), "num_topics": m.model.num_topics(), "corpus_id": m.row.corpus_id});
    let pairs: Vec<Value> = comparison.pairs.iter().map(pair).collect();
    let mean =
        if comparison.pairs.is_empty() { None } else { Some(comparison.pairs.iter().map(|p| p.similarity).sum::<f64>() / comparison.pairs.len() as f64) };
    Ok(Json(json!({
        "a": model(&a),
        "b": model(&b),
        "method": {
            "matching": "the pairing of a's topics with b's that minimises the summed L1 distance of their word distributions (over the union of both vocabularies, words by their strings); a topic the other model has no partner for is unpaired",
            "similarity": "1 - L1/2 between the two word distributions (1: the same distribution, 0: no word in common)",
            "matched_at": MATCH_SIMILARITY,
            "top_words_jaccard": format!("Jaccard overlap of the two topics' top {JACCARD_TOP} words"),
        },
        "pairs": pairs,
        "matched": comparison.pairs.iter().filter(|p| p.matched).count(),
        "mean_similarity": mean,
        "unpaired_a": comparison.unpaired_a.iter().map(|&k| topic_ref(k, &a_names)).collect::<Vec<_>>(),
        "unpaired_b": comparison.unpaired_b.iter().map(|&k| topic_ref(k, &b_names)).collect::<Vec<_>>(),
    })))
}
