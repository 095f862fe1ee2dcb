//! Edits of a fitted model's topics (merge, split, delete), checked and planned before
//! any family refits from them.
//!
//! Why it exists: a user who disagrees with a topic should not have to refit from
//! scratch and lose every other topic's id and name. `POST /v1/models/{id}/edits` names
//! operations on the parent's topics; this module reads them (every error naming its
//! operation), checks them against the parent (topics that exist and are live, each
//! topic in at most one operation) and turns them into an [`EditPlan`]: what becomes of
//! each parent topic and where each child topic comes from. A family that refits from an
//! edited state (LDA's `edit`) reads the plan; the API and runner read it for the names
//! and the record the child model keeps. Family-free: no sampler here.
//!
//! Ids stay stable by construction. The child has the parent's topics in their places,
//! then one new topic per extra part of each split, in the order of the operations:
//! - untouched topics keep their id (and their name);
//! - a merge keeps the first listed topic's id and name; the other topics of the merge
//!   are *retired*;
//! - a split's first part keeps the topic's id, the others take new ids after the
//!   parent's last;
//! - a deleted topic is retired.
//!
//! A retired topic keeps its slot, holds no tokens and has prior weight 0 (so no token
//! can enter it): the model's topics keep the numbering clients, effects and console
//! links already use, and a later edit or update sees the same ids.

use super::params::ParamError;
use super::seeds::{self, SeedTopic};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// Most operations one edit takes.
pub const MAX_OPERATIONS: usize = 100;
/// Most parts one split makes.
pub const MAX_SPLIT_PARTS: usize = 16;

/// One operation on the parent's topics, as the request gives it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum EditOp {
    /// The topics' tokens joined in the first listed topic.
    Merge { topics: Vec<usize> },
    /// The topic's tokens divided among `into` parts: by `seed_words` per part where
    /// given (one seed per part), and by a short run restricted to those tokens.
    Split {
        topic: usize,
        into: usize,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        seed_words: Vec<SeedTopic>,
    },
    /// The topic's tokens resampled among the other topics.
    Delete { topic: usize },
}

impl EditOp {
    /// The parent topics the operation names.
    pub fn topics(&self) -> Vec<usize> {
        match self {
            EditOp::Merge { topics } => topics.clone(),
            EditOp::Split { topic, .. } | EditOp::Delete { topic } => vec![*topic],
        }
    }
}

/// What becomes of one parent topic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "fate", rename_all = "snake_case")]
pub enum Fate {
    /// Left as it is, at the same id.
    Kept,
    /// Its tokens go to child topic `topic`: the merge's first topic, whose own fate
    /// names itself.
    MergedInto { topic: usize },
    /// Its tokens are redrawn among the live topics that are not deleted.
    Deleted,
    /// Its tokens are divided among the child topics `parts` (the first is its own id).
    Split { operation: usize, parts: Vec<usize> },
    /// Retired before this edit (it holds no tokens).
    Retired,
}

/// Where one child topic comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "from", rename_all = "snake_case")]
pub enum Origin {
    /// The parent's topic of the same id, untouched.
    Kept,
    /// The parent's `topics` joined (the first is this id).
    Merged { topics: Vec<usize> },
    /// Part `part` of the parent's topic `topic`.
    Split { topic: usize, part: usize },
    /// No topic: retired by this edit or an earlier one (`reason` says how).
    Retired { reason: String },
}

impl Origin {
    pub fn is_retired(&self) -> bool {
        matches!(self, Origin::Retired { .. })
    }
}

/// An edit checked against its parent: the parent topics' fates and the child topics'
/// origins.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EditPlan {
    pub operations: Vec<EditOp>,
    /// One per parent topic.
    pub fates: Vec<Fate>,
    /// One per child topic (the parent's count plus each split's extra parts).
    pub origins: Vec<Origin>,
}

/// A split's parent topic and its parts' seed words as term ids (one list per part;
/// none for a split without seeds).
pub type SplitSeedTerms = (usize, Vec<Vec<u32>>);

/// Retired topics of a model and why, by id (empty for a model no edit made).
pub type RetiredTopics = BTreeMap<usize, String>;

/// The error of a refit whose stored parent was not fitted on the corpus' training
/// documents (or not with the plan's topics), `why` saying how: it names `model`.
pub fn not_the_parent(why: &str) -> super::FitError {
    super::FitError::Params(ParamError::new("model", format!("the parent model was not fitted on this corpus' training documents: {why}")))
}

/// Read `operations` (a list of operation objects); errors name the operation and key
/// (`operations[1].into`).
pub fn parse_operations(v: &Value) -> Result<Vec<EditOp>, ParamError> {
    let items =
        v.as_array().ok_or_else(|| ParamError::new("operations", "must be a list of operations ({\"op\": \"merge\" | \"split\" | \"delete\", ...})"))?;
    if items.is_empty() || items.len() > MAX_OPERATIONS {
        return Err(ParamError::new("operations", format!("must hold 1 to {MAX_OPERATIONS} operations, got {}", items.len())));
    }
    items.iter().enumerate().map(|(i, item)| parse_operation(i, item)).collect()
}

/// One operation object.
fn parse_operation(i: usize, item: &Value) -> Result<EditOp, ParamError> {
    let at = |key: &str| format!("operations[{i}]{key}");
    let obj = item.as_object().ok_or_else(|| ParamError::new(at(""), format!("must be an object with \"op\", got {item}")))?;
    let op = obj.get("op").and_then(Value::as_str).ok_or_else(|| ParamError::new(at(".op"), "must be \"merge\", \"split\" or \"delete\""))?;
    let allowed: &[&str] = match op {
        "merge" => &["op", "topics"],
        "split" => &["op", "topic", "into", "seed_words"],
        "delete" => &["op", "topic"],
        other => return Err(ParamError::new(at(".op"), format!("{other:?} is not an operation: \"merge\", \"split\" or \"delete\""))),
    };
    if let Some(k) = obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(ParamError::new(at(&format!(".{k}")), format!("unknown key for a {op}: it takes {}", allowed[1..].join(", "))));
    }
    let topic_at = |key: &str, v: Option<&Value>| -> Result<usize, ParamError> {
        v.and_then(Value::as_u64).map(|t| t as usize).ok_or_else(|| ParamError::new(at(key), "must be a topic id (an integer ≥ 0)"))
    };
    match op {
        "merge" => {
            let list = obj.get("topics").and_then(Value::as_array).ok_or_else(|| ParamError::new(at(".topics"), "must be a list of topic ids"))?;
            let topics = list.iter().enumerate().map(|(j, t)| topic_at(&format!(".topics[{j}]"), Some(t))).collect::<Result<Vec<_>, _>>()?;
            Ok(EditOp::Merge { topics })
        }
        "split" => {
            let topic = topic_at(".topic", obj.get("topic"))?;
            let into =
                obj.get("into").and_then(Value::as_u64).ok_or_else(|| ParamError::new(at(".into"), "must be the number of parts (an integer ≥ 2)"))? as usize;
            let seed_words = match obj.get("seed_words") {
                None => Vec::new(),
                Some(v) => seeds::parse_topics(v).map_err(|e| ParamError::new(format!("{}.{}", at(""), e.field), e.message))?,
            };
            Ok(EditOp::Split { topic, into, seed_words })
        }
        _ => Ok(EditOp::Delete { topic: topic_at(".topic", obj.get("topic"))? }),
    }
}

/// Check `operations` against a parent of `parent_topics` topics whose `retired` ones
/// hold nothing, and plan the child: errors name the operation.
pub fn plan(operations: Vec<EditOp>, parent_topics: usize, retired: &RetiredTopics) -> Result<EditPlan, ParamError> {
    let mut fates: Vec<Fate> = (0..parent_topics).map(|k| if retired.contains_key(&k) { Fate::Retired } else { Fate::Kept }).collect();
    let mut touched_by: Vec<Option<usize>> = vec![None; parent_topics];
    let mut origins: Vec<Origin> = (0..parent_topics)
        .map(|k| match retired.get(&k) {
            Some(reason) => Origin::Retired { reason: reason.clone() },
            None => Origin::Kept,
        })
        .collect();
    for (i, op) in operations.iter().enumerate() {
        let at = |key: &str| format!("operations[{i}]{key}");
        let mut claim = |topic: usize, key: String| -> Result<(), ParamError> {
            if topic >= parent_topics {
                return Err(ParamError::new(
                    key,
                    format!("topic {topic} does not exist: the model has {parent_topics} topics, 0 to {}", parent_topics.saturating_sub(1)),
                ));
            }
            if let Some(reason) = retired.get(&topic) {
                return Err(ParamError::new(key, format!("topic {topic} holds no tokens ({reason})")));
            }
            if let Some(j) = touched_by[topic] {
                return Err(ParamError::new(key, format!("topic {topic} is already changed by operations[{j}]: each topic takes part in one operation")));
            }
            touched_by[topic] = Some(i);
            Ok(())
        };
        match op {
            EditOp::Merge { topics } => {
                if topics.len() < 2 {
                    return Err(ParamError::new(at(".topics"), "a merge joins at least two topics"));
                }
                if let Some((j, &t)) = topics.iter().enumerate().find(|(j, t)| topics[..*j].contains(t)) {
                    return Err(ParamError::new(at(&format!(".topics[{j}]")), format!("merges topic {t} with itself")));
                }
                for (j, &t) in topics.iter().enumerate() {
                    claim(t, at(&format!(".topics[{j}]")))?;
                }
                let target = topics[0];
                for &t in &topics[1..] {
                    fates[t] = Fate::MergedInto { topic: target };
                    origins[t] = Origin::Retired { reason: format!("merged into {target}") };
                }
                fates[target] = Fate::MergedInto { topic: target };
                origins[target] = Origin::Merged { topics: topics.clone() };
            }
            EditOp::Split { topic, into, seed_words } => {
                claim(*topic, at(".topic"))?;
                if !(2..=MAX_SPLIT_PARTS).contains(into) {
                    return Err(ParamError::new(at(".into"), format!("a split makes 2 to {MAX_SPLIT_PARTS} parts, got {into}")));
                }
                if !seed_words.is_empty() && seed_words.len() != *into {
                    return Err(ParamError::new(at(".seed_words"), format!("one seed per part: {into} parts, {} seeds", seed_words.len())));
                }
                let mut parts = vec![*topic];
                origins[*topic] = Origin::Split { topic: *topic, part: 0 };
                for part in 1..*into {
                    parts.push(origins.len());
                    origins.push(Origin::Split { topic: *topic, part });
                }
                fates[*topic] = Fate::Split { operation: i, parts };
            }
            EditOp::Delete { topic } => {
                claim(*topic, at(".topic"))?;
                fates[*topic] = Fate::Deleted;
                origins[*topic] = Origin::Retired { reason: "deleted".into() };
            }
        }
    }
    if origins.iter().all(Origin::is_retired) {
        return Err(ParamError::new("operations", "the edit leaves no topic: keep at least one"));
    }
    Ok(EditPlan { operations, fates, origins })
}

impl EditPlan {
    /// The child's number of topics (retired ones included).
    pub fn child_topics(&self) -> usize {
        self.origins.len()
    }

    /// The parent's number of topics.
    pub fn parent_topics(&self) -> usize {
        self.fates.len()
    }

    /// The child topic each parent topic's tokens go to when the edit leaves them in
    /// one topic (kept or merged); `None` for deleted, split and retired topics.
    pub fn destination(&self, parent_topic: usize) -> Option<usize> {
        match self.fates[parent_topic] {
            Fate::Kept => Some(parent_topic),
            Fate::MergedInto { topic } => Some(topic),
            _ => None,
        }
    }

    /// The child's topic slots: its retired topics and which stay live.
    pub fn child_slots(&self) -> super::slots::Slots {
        super::slots::Slots::retiring(&self.retired().into_keys().collect::<Vec<_>>(), self.child_topics())
    }

    /// The child's retired topics and why.
    pub fn retired(&self) -> RetiredTopics {
        self.origins
            .iter()
            .enumerate()
            .filter_map(|(k, o)| match o {
                Origin::Retired { reason } => Some((k, reason.clone())),
                _ => None,
            })
            .collect()
    }

    /// The names the child's topics start with, from the parent's: an untouched topic
    /// and a merge's first topic keep theirs; a split's parts take their seeds' names,
    /// or without seeds its first part keeps the topic's name; retired and other new
    /// topics have none.
    pub fn child_names(&self, parent_names: &BTreeMap<usize, String>) -> Vec<(usize, String)> {
        let mut names = Vec::new();
        for (k, origin) in self.origins.iter().enumerate() {
            let name = match origin {
                Origin::Kept => parent_names.get(&k).cloned(),
                Origin::Merged { topics } => parent_names.get(&topics[0]).cloned(),
                Origin::Split { topic, part } => match &self.fates[*topic] {
                    Fate::Split { operation, .. } => match &self.operations[*operation] {
                        EditOp::Split { seed_words, .. } if !seed_words.is_empty() => Some(seed_words[*part].name.clone()),
                        _ if *part == 0 => parent_names.get(topic).cloned(),
                        _ => None,
                    },
                    _ => None,
                },
                Origin::Retired { .. } => None,
            };
            if let Some(n) = name {
                names.push((k, n));
            }
        }
        names
    }

    /// Each split's seed words as term ids of `lexicon`, by parent topic: one list per
    /// part (empty for a split without seeds); an error naming a word the vocabulary
    /// lacks.
    pub fn split_seed_terms(&self, lexicon: &crate::corpus::lexicon::Lexicon) -> Result<Vec<SplitSeedTerms>, ParamError> {
        self.split_seeds()
            .into_iter()
            .map(|(topic, seeds)| {
                if seeds.is_empty() {
                    return Ok((topic, Vec::new()));
                }
                let as_seeds = seeds::SeedWords { topics: seeds.to_vec(), missing: seeds::MissingSeedWords::Reject, ..seeds::SeedWords::default() };
                Ok((topic, as_seeds.resolve(lexicon)?.words))
            })
            .collect()
    }

    /// What a family whose seeded topics are the first ones (`seeds`) and whose fits
    /// need two topics asks of an edit: no operation names a seeded topic (the error
    /// names the operation and the seed), and at least two topics stay live (the error
    /// names `operations`). `model` names the family's models in the messages.
    pub fn check_seeded_and_live(&self, seeds: &seeds::SeedWords, model: &str) -> Result<(), ParamError> {
        for (i, op) in self.operations.iter().enumerate() {
            if let Some(&t) = op.topics().iter().find(|&&t| t < seeds.topics.len()) {
                let name = &seeds.topics[t].name;
                return Err(ParamError::new(
                    format!("operations[{i}]"),
                    format!("topic {t} is seeded ({name:?}): {model}'s seeded topics stay as fitted; edit its other topics, or refit with other seeds"),
                ));
            }
        }
        let live = self.origins.iter().filter(|o| !o.is_retired()).count();
        if live < 2 {
            return Err(ParamError::new("operations", format!("the edit leaves {live} live topic: {model} keeps at least 2")));
        }
        Ok(())
    }

    /// The split operations' seeds, by parent topic (empty where a split has none).
    pub fn split_seeds(&self) -> Vec<(usize, &[SeedTopic])> {
        self.operations
            .iter()
            .filter_map(|op| match op {
                EditOp::Split { topic, seed_words, .. } => Some((*topic, seed_words.as_slice())),
                _ => None,
            })
            .collect()
    }
}

/// What a child model keeps of the edit that made it (`edit` on `GET /v1/models/{id}`):
/// the operations, and each child topic's origin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EditRecord {
    pub operations: Vec<EditOp>,
    pub topics: Vec<Origin>,
    /// The seed that drew the child's held-out split (its parent's split); absent in
    /// records stored before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split_seed: Option<u64>,
}

impl EditRecord {
    /// The record of a refit by `plan` whose split `split_seed` drew.
    pub fn of(plan: &EditPlan, split_seed: u64) -> Self {
        EditRecord { operations: plan.operations.clone(), topics: plan.origins.clone(), split_seed: Some(split_seed) }
    }

    /// The retired topics a record leaves (what a later edit of the child checks against).
    pub fn retired(&self) -> RetiredTopics {
        EditPlan { operations: Vec::new(), fates: Vec::new(), origins: self.topics.clone() }.retired()
    }
}

#[cfg(test)]
#[path = "edits_tests.rs"]
mod tests;
