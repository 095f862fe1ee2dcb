//! `with=intervals` on the topic tables: how sure each listed word's scores and each
//! topic's share are.
//!
//! Why it exists: a table's numbers are posterior means; a model that kept samples
//! (LDA, DCNT, SCNT) can say how far each could be off and how often a word is in its
//! topic's top n. This reads the job's stored samples, has the model turn each into a
//! draw of the table ([`crate::models::TopicModel::topic_draw`]) and summarises the
//! draws at the words the served table lists ([`crate::summaries::intervals`]); the
//! handler in [`super::models`] adds the result to its page.

use super::error::{ApiError, ApiResult};
use super::model_cache::LoadedModel;
use super::AppState;
use crate::summaries::intervals::{topic_intervals, IntervalSettings, TopicIntervals};
use crate::summaries::Rank;
use serde_json::{json, Value};
use std::sync::Arc;

/// The default probability of an interval.
pub const DEFAULT_LEVEL: f64 = 0.95;

/// The summaries of `listed` (term ids per topic) over the kept samples of the model's
/// job (each topic's over the samples of the chains pooled into it), and the number of
/// samples read.
pub async fn intervals_of(
    state: &AppState,
    m: &Arc<LoadedModel>,
    listed: Vec<Vec<u32>>,
    rank: Rank,
    weight: f64,
    n: usize,
    level: f64,
) -> ApiResult<(Vec<TopicIntervals>, usize)> {
    super::families::require_capability(m.row.family_name(), |c| c.summary_intervals, "kept samples to draw intervals on summaries from")?;
    let samples = state.store.samples(&m.row.job_id).await?;
    if samples.is_empty() {
        return Err(ApiError::conflict(format!("the job that fitted model {} kept no samples", m.row.id)));
    }
    let _turn = state.pool_turn().await?;
    let (m2, pool) = (m.clone(), state.predict_pool.clone());
    let settings = IntervalSettings { rank, weight, n, level };
    let (summaries, used) = tokio::task::spawn_blocking(move || {
        pool.install(|| {
            let draw = |i: usize| {
                let (it, bytes) = &samples[i];
                // A sample the model cannot read is left out; the answer says how many
                // draws were used.
                m2.model.topic_draw(*it as u64, bytes).ok().flatten()
            };
            topic_intervals(samples.len(), draw, &listed, &settings)
        })
    })
    .await
    .map_err(ApiError::internal)?;
    if used == 0 {
        return Err(ApiError::conflict(format!("none of the samples kept for model {} could be read", m.row.id)));
    }
    Ok((summaries, used))
}

/// A posterior mean and interval as JSON.
fn interval_json(i: &crate::models::effects::Interval) -> Value {
    json!({"mean": i.mean, "lower": i.lower, "upper": i.upper})
}

/// Add `s` to a topic's JSON (its `proportion_interval` and `interval_draws`) and to
/// its words' JSON (in the listed order, each an `intervals` object).
pub fn add_to_topic(topic: &mut Value, words: &mut Value, s: &TopicIntervals) {
    topic["proportion_interval"] = interval_json(&s.share);
    topic["interval_draws"] = json!(s.draws);
    if let Some(words) = words.as_array_mut() {
        for (w, i) in words.iter_mut().zip(&s.words) {
            w["intervals"] = json!({
                "frequency": interval_json(&i.frequency),
                "exclusivity": interval_json(&i.exclusivity),
                "frex": interval_json(&i.frex),
                "in_top_n": i.in_top_n,
            });
        }
    }
}

/// Where the intervals come from, for the page's `intervals` object.
pub fn summary_json(draws: usize, level: f64, n: usize) -> Value {
    json!({"draws": draws, "level": level, "top_n": n, "source": "the fit's kept samples of the topic-word counts, each read as a table at its Dirichlet mean"})
}
