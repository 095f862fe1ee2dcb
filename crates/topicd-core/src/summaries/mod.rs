//! Summaries of fitted topics: frequency, exclusivity and FREX rankings, and the
//! coherence of their top words (gensim's measures, on the training corpus), and the
//! intertopic map (LDAvis' Jensen–Shannon divergences in principal coordinates).
//!
//! Why it exists: every model's topics are read the same way, from a
//! [`crate::models::TopicTable`] of posterior-mean frequencies and exclusivities; the
//! ranking is recomputed at query time for any exclusivity weight, without a refit.
//! Pure functions, no I/O.

pub mod coherence;
pub mod cooccurrence;
pub mod frex;
pub mod intervals;
pub mod representative;
pub mod topic_map;

pub use crate::models::exclusivity::topic_given_word;
pub use coherence::{model_coherence, topic_coherence, Measure};
pub use cooccurrence::Occurrences;
pub use frex::{ecdf, rank_topic, top_terms, Rank, RankedTable, WordScore};

/// The `n` first of `items` in the order `cmp` gives (all of them when there are fewer):
/// one partial selection, then a sort of those `n` only.
pub fn first_n_by<T>(mut items: Vec<T>, n: usize, cmp: impl Fn(&T, &T) -> std::cmp::Ordering) -> Vec<T> {
    if n < items.len() {
        items.select_nth_unstable_by(n, &cmp);
        items.truncate(n);
    }
    items.sort_unstable_by(cmp);
    items
}
