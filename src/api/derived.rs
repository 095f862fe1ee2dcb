//! What a stored model's row says of how it was made from another: its record, its
//! retired topics, the seed of its held-out split, and a refit's default length.
//!
//! Why it exists: edits, updates, the lineage, the comparison and the topic list all
//! read a derived model's record; keeping the reading here lets each of them name this
//! module rather than one another.

use crate::models::edits::RetiredTopics;
use crate::models::updates::Derivation;
use crate::store::ModelRow;
use serde_json::Value;

/// Fewest sweeps of an edit's refit or an update by default.
pub const MIN_DEFAULT_ITERATIONS: usize = 20;

/// The sweeps of a fit from a stored model (an edit's refit, an update) when the
/// request names none: a quarter of the parent's sweeps or passes (at least [`MIN_DEFAULT_ITERATIONS`]).
/// It starts from the parent's state, so it needs far fewer sweeps than the parent: on
/// AppStream an edit's untouched topics' distance to the parent's was the same after 50,
/// 100 and 200 sweeps (bench/README.md, *Edits*).
pub fn default_iterations(parent: &ModelRow) -> usize {
    // Sweeps for the samplers, passes for the variational families.
    let parent_sweeps = parent.params.get("iterations").or_else(|| parent.params.get("passes")).and_then(Value::as_u64).unwrap_or(200) as usize;
    (parent_sweeps / 4).max(MIN_DEFAULT_ITERATIONS)
}

/// How the model was made from its parent, if it was: its stored record.
pub fn derivation_of(row: &ModelRow) -> Option<Derivation> {
    row.derivation.as_ref().and_then(Derivation::read)
}

/// The retired topics of a stored model (an edit's child, or an update of one) and
/// why; none for a model no edit made.
pub fn retired_topics(row: &ModelRow) -> RetiredTopics {
    derivation_of(row).map(|d| d.retired()).unwrap_or_default()
}

/// The seed that drew a stored model's held-out split: a derived model's first
/// ancestor's (its record keeps it), else its own.
pub fn split_seed_of(row: &ModelRow) -> u64 {
    derivation_of(row).and_then(|d| d.split_seed()).unwrap_or(row.seed)
}
