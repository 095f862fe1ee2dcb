//! How a fit job that starts from a stored model starts (the job row's `start`).
//!
//! Why it exists: the API writes it when it queues an edit's refit or an update, and
//! the runner reads it back when it claims the job; both name one type. It sits apart
//! from [`super::edits`] and [`super::updates`] because it names both.

use super::edits::EditPlan;
use super::updates::UpdateRecord;
use serde::{Deserialize, Serialize};

/// How a fit job starts from its stored model (the job's `start`, read back by the
/// runner).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum StartSpec {
    /// An edit ([`super::edits`]): the checked plan and the seed that drew the
    /// parent's split.
    Edit { plan: EditPlan, split_seed: u64 },
    /// An update ([`super::updates`]): the job's corpus holds the parent's documents
    /// then the new ones; `record` is what the child keeps (with the seed that drew the
    /// parent's split), `corpus_ids` the corpora its documents come from. (Jobs queued
    /// before 2026-12-05 also stored `split_seed` here, equal to the record's; it is
    /// ignored when read.)
    Update { record: UpdateRecord, corpus_ids: Vec<String> },
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// An update's start stored before the split seed lived only in its record (with a
    /// `split_seed` beside it) still reads, and what is written now reads back.
    #[test]
    fn an_update_start_of_either_shape_reads() {
        let record = json!({"corpus_id": "c2", "parent_documents": 10, "new_documents": 3, "new_topics": [4], "split_seed": 7});
        let stored = json!({"kind": "update", "record": record, "split_seed": 7, "corpus_ids": ["c1", "c2"]});
        let spec: StartSpec = serde_json::from_value(stored).unwrap();
        let StartSpec::Update { record, corpus_ids } = &spec else { panic!("{spec:?}") };
        assert_eq!((record.split_seed, record.parent_documents, corpus_ids.len()), (7, 10, 2));
        let back: StartSpec = serde_json::from_value(serde_json::to_value(&spec).unwrap()).unwrap();
        assert_eq!(back, spec);
    }
}
