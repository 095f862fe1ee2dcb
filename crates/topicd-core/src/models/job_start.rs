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
    /// then the new ones; `record` is what the child keeps, `corpus_ids` the corpora
    /// its documents come from.
    Update { record: UpdateRecord, split_seed: u64, corpus_ids: Vec<String> },
}
