//! How a request names a topic and how an answer heads one, shared by every handler
//! that lists or reads topics (topics, coherence, representative documents, names).
//!
//! Why it exists: the handlers read the same `rank`/`weight` query and the same topic
//! path segment (an id or a label), and head a topic the same way; keeping that here
//! lets each handler import it without importing another handler.

use super::error::{ApiError, ApiResult};
use crate::models::stability::TopicStability;
use crate::models::TopicTable;
use crate::summaries::Rank;
use serde_json::{json, Value};

/// The checked `rank` and `weight` query parameters (shared with `/coherence`).
pub(super) fn rank_and_weight(rank: Option<&str>, weight: Option<f64>, default_rank: Rank) -> ApiResult<(Rank, f64)> {
    let rank = match rank {
        None => default_rank,
        Some(r) => Rank::parse(r).ok_or_else(|| ApiError::invalid("query.rank", "must be frequency, exclusivity or frex"))?,
    };
    let weight = weight.unwrap_or(0.5);
    if !(0.0..=1.0).contains(&weight) {
        return Err(ApiError::invalid("query.weight", "must be a number in [0, 1]"));
    }
    Ok((rank, weight))
}

pub(super) fn rank_name(r: Rank) -> &'static str {
    match r {
        Rank::Frequency => "frequency",
        Rank::Exclusivity => "exclusivity",
        Rank::Frex => "frex",
    }
}

/// A topic's id, label, name (given by a rename, else null), tree links, share and
/// stability across the fit's chains (`stability`: the model's, one per topic; null
/// for a one-chain fit).
pub(super) fn topic_header(table: &TopicTable, k: usize, names: &TopicNames, stability: Option<&[TopicStability]>) -> Value {
    let t = &table.topics[k];
    json!({
        "id": k,
        "label": t.label,
        "name": names.get(&k),
        "parent": t.parent,
        "children": t.children,
        "proportion": t.proportion,
        "stability": stability.and_then(|s| s.get(k)),
    })
}

/// Names given to a model's topics, by topic id.
pub(super) type TopicNames = std::collections::HashMap<usize, String>;

/// The topic a path segment names: its id in the model's numbering, or its label.
pub(super) fn resolve_topic(table: &TopicTable, topic: &str) -> ApiResult<usize> {
    match topic.parse::<usize>() {
        Ok(k) if k < table.topics.len() => Ok(k),
        Ok(k) => Err(ApiError::not_found("topic", &k.to_string())),
        Err(_) => table.topics.iter().position(|t| t.label.as_deref() == Some(topic)).ok_or_else(|| ApiError::not_found("topic", topic)),
    }
}
