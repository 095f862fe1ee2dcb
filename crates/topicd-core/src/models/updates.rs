//! Updates of a fitted model with new documents: what an update keeps and records.
//!
//! Why it exists: a team whose corpus grows should not refit from scratch and lose its
//! topics' ids and names. `POST /v1/models/{id}/update` fits the parent's documents and
//! new ones (joined by [`crate::corpus::append`], the parent's first) from the parent's
//! state; a family that can says so (`capabilities.updates`) and implements
//! [`super::ModelFamily::fit_updated`]. Ids stay stable by construction: the parent's
//! topics keep their ids (retired slots stay retired), and `new_topics` empty topics
//! are appended after them for the new documents to fill. Family-free: no sampler here.

use super::edits::{EditRecord, RetiredTopics};
use serde::{Deserialize, Serialize};

/// Most empty topics one update adds.
pub const MAX_NEW_TOPICS: usize = 100;

/// What an updated model records of how it was made (the model's `update`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UpdateRecord {
    /// The corpus of the new documents.
    pub corpus_id: String,
    /// How many documents the parent held (the joined corpus' first ones).
    pub parent_documents: usize,
    /// How many documents the update added.
    pub new_documents: usize,
    /// The ids of the topics added empty (after the parent's).
    pub new_topics: Vec<usize>,
    /// The parent's retired topics, which stay retired (an edit's merged-away and
    /// deleted topics) and why.
    #[serde(default, skip_serializing_if = "RetiredTopics::is_empty")]
    pub retired: RetiredTopics,
    /// The seed that drew the held-out split the parent's documents keep.
    pub split_seed: u64,
}

/// How a model was made from its parent (the model row's `derivation`): stored as the
/// record itself, told apart by an edit's `operations`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Derivation {
    Edit(EditRecord),
    Update(UpdateRecord),
}

impl Derivation {
    /// The derivation a stored record holds (`None`: not one this server knows).
    pub fn read(stored: &serde_json::Value) -> Option<Derivation> {
        if stored.get("operations").is_some() {
            serde_json::from_value(stored.clone()).ok().map(Derivation::Edit)
        } else {
            serde_json::from_value(stored.clone()).ok().map(Derivation::Update)
        }
    }

    /// The retired topics the model has (what an edit or update of it keeps retired).
    pub fn retired(&self) -> RetiredTopics {
        match self {
            Derivation::Edit(record) => record.retired(),
            Derivation::Update(record) => record.retired.clone(),
        }
    }

    /// The seed that drew the model's held-out split, where the record keeps it (a
    /// derived model's split is its first ancestor's).
    pub fn split_seed(&self) -> Option<u64> {
        match self {
            Derivation::Edit(record) => record.split_seed,
            Derivation::Update(record) => Some(record.split_seed),
        }
    }

    /// How the model was made: `edit` or `update`.
    pub fn how(&self) -> &'static str {
        match self {
            Derivation::Edit(_) => "edit",
            Derivation::Update(_) => "update",
        }
    }
}

/// The child of an update of a parent with `parent_topics` topics (retired ones
/// included), adding `new_topics`: the ids of the added topics.
pub fn added_topics(parent_topics: usize, new_topics: usize) -> Vec<usize> {
    (parent_topics..parent_topics + new_topics).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::edits::{self, EditOp};

    #[test]
    fn an_update_record_and_an_edit_record_read_back_as_themselves() {
        let plan = edits::plan(vec![EditOp::Merge { topics: vec![0, 2] }], 4, &RetiredTopics::new()).unwrap();
        let edit = Derivation::Edit(EditRecord::of(&plan, 7));
        let update = Derivation::Update(UpdateRecord {
            corpus_id: "c2".into(),
            parent_documents: 10,
            new_documents: 3,
            new_topics: added_topics(4, 2),
            retired: edit.retired(),
            split_seed: 7,
        });
        for d in [&edit, &update] {
            let back = Derivation::read(&serde_json::to_value(d).unwrap()).unwrap();
            assert_eq!(&back, d);
        }
        assert_eq!(update.retired(), edit.retired(), "an update keeps its parent's retired topics");
        assert_eq!(update.retired().keys().copied().collect::<Vec<_>>(), vec![2]);
        let Derivation::Update(record) = update else { unreachable!() };
        assert_eq!(record.new_topics, vec![4, 5]);
    }
}
