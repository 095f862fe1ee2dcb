//! `/v1/models`: fitted models, their topics (frequency, exclusivity, FREX; with their
//! coherence on request, see [`super::coherence`]) and predictions for new documents.

use super::coherence::{coherence_of, number, CoherenceOptions, CoherenceParams, CoherenceResult};
use super::csv_cells::csv_text_cell;
use super::error::{ApiError, ApiResult};
use super::extract::{from_str, parse_query, Page};
use super::model_cache::LoadedModel;
use super::topic_intervals;
use super::topic_pages::PageBody;
use super::topic_query::{rank_and_weight, rank_name, resolve_topic, topic_header, TopicNames};
use super::AppState;
use crate::models::stability::TopicStability;
use crate::models::{Comparison, TopicTable};
use crate::store::{DeleteOutcome, ModelRow};
use crate::summaries::{Rank, WordScore};
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

pub(super) fn model_json(r: &ModelRow) -> Value {
    let derivation = super::derived::derivation_of(r);
    let record = |how: &str| derivation.as_ref().filter(|d| d.how() == how).and(r.derivation.clone());
    json!({
        "id": r.id,
        "model": r.family_name(),
        "job_id": r.job_id,
        "corpus_id": r.corpus_id,
        "graph_id": r.graph_id,
        "params": r.params,
        "seed": r.seed,
        "created_at": r.created_at,
        "num_topics": r.num_topics,
        "diagnostics": r.diagnostics,
        "capabilities": r.family.as_ref().ok().map(|f| f.family().capabilities()),
        "parent_model_id": r.parent_model_id,
        "edit": record("edit"),
        "update": record("update"),
        "corpus_ids": r.corpus_ids,
        "num_documents": r.num_documents,
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

/// One topic of a CSV table: index, label, name, stability, ranked words.
type CsvTopic = (usize, Option<String>, Option<String>, Option<TopicStability>, Vec<(String, WordScore)>);

/// Every topic of a ranked table as a CSV topic.
fn csv_topics(m: &LoadedModel, table: &TopicTable, names: &TopicNames, stability: Option<&[TopicStability]>, ranked: Vec<Vec<WordScore>>) -> Vec<CsvTopic> {
    ranked
        .into_iter()
        .enumerate()
        .map(|(k, ws)| {
            (
                k,
                table.topics[k].label.clone(),
                names.get(&k).cloned(),
                stability.and_then(|s| s.get(k).copied()),
                ws.into_iter().map(|w| (m.lexicon.word(w.term).to_string(), w)).collect(),
            )
        })
        .collect()
}

/// The topic table as CSV, text cells through [`csv_text_cell`] and numbers as written;
/// each row carries its topic's stability (`stability_chains`, `stability_matched`,
/// `stability_similarity`: empty for a one-chain fit); with coherence (one value per
/// row of `rows`), a last `coherence` column repeats each topic's value on its rows
/// (empty when not finite).
fn csv_page(rows: Vec<CsvTopic>, coherence: Option<&[f64]>) -> PageBody {
    let mut out = String::from("topic,label,name,rank,word,frequency,exclusivity,frex,stability_chains,stability_matched,stability_similarity");
    out.push_str(if coherence.is_some() { ",coherence\n" } else { "\n" });
    for (r, (k, label, name, stability, words)) in rows.into_iter().enumerate() {
        let stability = stability.map_or(",,".to_string(), |s| format!("{},{},{}", s.chains, s.matched, s.similarity));
        let extra = coherence.map_or(String::new(), |c| format!(",{}", if c[r].is_finite() { c[r].to_string() } else { String::new() }));
        for (i, (word, s)) in words.iter().enumerate() {
            out.push_str(&format!(
                "{k},{},{},{},{},{},{},{},{stability}{extra}\n",
                csv_text_cell(label.as_deref().unwrap_or("")),
                csv_text_cell(name.as_deref().unwrap_or("")),
                i + 1,
                csv_text_cell(word),
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
    let stability = m.model.topic_stability();
    let page = if opts.csv {
        csv_page(csv_topics(&m, &table.table, &names.names, stability.as_deref(), ranked), coherence.as_ref().map(|(_, c)| c.per_topic.as_slice()))
    } else {
        let topics: Vec<Value> = ranked
            .iter()
            .enumerate()
            .map(|(k, ws)| {
                let mut t = topic_header(&table.table, k, &names.names, stability.as_deref());
                t["words"] = json!(words_json(&m, ws));
                if let Some((_, c)) = &coherence {
                    t["coherence"] = number(c.per_topic[k]);
                }
                t
            })
            .collect();
        let mut body = json!({"model_id": id, "rank": rank_name(opts.rank), "weight": opts.weight, "n": opts.n, "topics": topics});
        for (k, reason) in super::derived::retired_topics(&m.row) {
            if let Some(t) = body["topics"].get_mut(k) {
                t["retired"] = json!(reason);
            }
        }
        if let Some(unstable) = unstable_topics(stability.as_deref()) {
            body["unstable_topics"] = json!(unstable);
        }
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

/// The topics some other chain of the fit holds no match for (`None` when every topic
/// recurs in every chain, or the fit had one chain).
fn unstable_topics(stability: Option<&[TopicStability]>) -> Option<Vec<usize>> {
    let unstable: Vec<usize> = stability?.iter().enumerate().filter(|(_, s)| !s.in_every_chain()).map(|(k, _)| k).collect();
    (!unstable.is_empty()).then_some(unstable)
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
    let stability = m.model.topic_stability();
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
            stability.as_ref().and_then(|s| s.get(k).copied()),
            words.into_iter().map(|w| (m.lexicon.word(w.term).to_string(), w)).collect(),
        )];
        csv_page(rows, coherence.as_ref().map(|(_, c)| c.per_topic.as_slice()))
    } else {
        let mut topic = topic_header(table, k, &names.names, stability.as_deref());
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
