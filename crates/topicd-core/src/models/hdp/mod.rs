//! The HDP topic model by memoized variational inference (Hughes, Kim & Sudderth 2015;
//! paper 002 and bnpy's `HDPTopicModel` / `MemoVBMovesAlg`).
//!
//! - [`params`]: job parameters and defaults;
//! - [`summary`]: per-batch and whole-data sufficient statistics, merge-pair statistics;
//! - [`local`]: per-document coordinate ascent and a batch's summary;
//! - [`globals`]: q(φ) from the summary and the exact whole-data objective;
//! - [`memo`]: the memoized state (visit a batch: local step, total − old + new, global step);
//! - [`merge`]: merge moves and the size reordering, accepted only when the objective rises;
//! - [`proposal`]: a pass-long proposed set of topics, kept only when the objective rises;
//! - [`delete`]: the delete move (a proposal without one topic);
//! - [`birth`]: the birth move (a proposal with one topic split into fresh ones);
//! - [`family`]: the registry's entry (params checks, memory, decoding);
//! - [`fit`]: a fit in one process (training split, design, held-out completion);
//! - [`passes`]: the passes (their loop, progress, cancellation and checkpoints are
//!   [`crate::models::passes`]');
//! - [`model`]: the stored model (topic table, prediction, encoding);
//! - [`edit`]: an edit's refit (the parent's topics with the edit done, the live topics'
//!   passes);
//! - [`retired`]: an edit's retired topics, left out of the passes and put back in the
//!   child's slots;
//! - [`update`]: an update's start (the parent's topics kept, the new documents as more
//!   batches);
//!
//! The objective is the ELBO with bnpy's surrogate lower bound for the Dirichlet
//! normaliser E[log Γ(α) − Σ_k log Γ(α β_k)] (see [`crate::inference::stick_posterior`], shared with HDP-aMMSB), so it is itself a lower
//! bound on the log marginal likelihood.

pub mod birth;
pub mod delete;
pub mod documents;
pub mod edit;
pub mod exact_counts;
pub mod family;
pub mod fit;
pub mod fit_memory;
pub mod globals;
pub mod local;
pub mod memo;
pub mod merge;
pub mod model;
pub mod params;
pub mod passes;
pub mod proposal;
pub mod ranked;
pub mod retired;
pub mod summary;
pub mod update;

#[cfg(test)]
mod birth_tests;
#[cfg(test)]
mod edit_tests;
#[cfg(test)]
mod fit_tests;
#[cfg(test)]
mod ranked_tests;
#[cfg(test)]
mod resume_tests;
#[cfg(test)]
mod update_tests;

pub use edit::fit_hdp_edited;
pub use family::{HdpFamily, MAX_STATE_ENTRIES};
pub use fit::fit_hdp;
pub use model::HdpModel;
pub use params::HdpParams;
