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
pub mod select;
pub mod topic_map;

pub use crate::models::exclusivity::topic_given_word;
pub use coherence::{model_coherence, topic_coherence, Measure};
pub use cooccurrence::Occurrences;
pub use frex::{ecdf, rank_topic, top_terms, Rank, RankedTable, WordScore};
pub use select::first_n_by;
