//! The model layer: one trait pair that every topic model implements.
//!
//! Why it exists: the job runner, the store and the HTTP API treat every model the same
//! way. A [`ModelFamily`] checks parameters, fits a model from a corpus and decodes a
//! stored one; a fitted [`TopicModel`] answers the questions clients ask (topic tables,
//! predictions) and encodes itself. Graph models have their own pair
//! ([`community`]); [`registry`] lists both kinds once. Adding a model means one folder
//! under `models/` and one line in [`registry::REGISTRY`].
//!
//! Invariants: models are synchronous, run inside whatever rayon pool the caller
//! installed, never touch HTTP, SQL or tokio, and are fully determined by
//! `(corpus, params, seed)`.

pub mod after_chain;
pub mod capabilities;
#[cfg(test)]
mod capabilities_tests;
pub mod causes;
pub mod chain;
pub mod chain_fit;
pub mod chains;
pub mod community;
pub mod compare;
pub mod completion;
pub mod composition;
pub mod consensus;
pub mod contract;
pub mod convergence;
pub mod dcnt;
pub mod design;
#[cfg(test)]
pub(crate) mod edit_checks;
pub mod edit_draws;
pub mod edits;
pub mod effects;
pub mod encoding_upgrade;
pub mod erased;
pub mod errors;
pub mod exclusivity;
pub mod fit_context;
pub mod hdp;
pub mod hdp_ammsb;
pub mod heldout;
pub mod hpc;
pub mod job_start;
pub mod lda;
pub mod memory;
#[cfg(feature = "test-family")]
pub mod mixture;
pub mod options;
#[cfg(test)]
mod param_bounds_tests;
pub mod params;
pub mod passes;
pub mod registry;
pub mod seeds;
pub mod slots;
pub mod slotted;
pub mod splits;
pub mod stability;
pub mod start_draws;
pub mod state_bytes;
#[cfg(test)]
pub(crate) mod test_kit;
pub mod topic_draws;
pub mod updates;

pub use contract::{
    proportions_with_intervals, Comparison, DocPrediction, DocumentProportions, EditStart, ModelFamily, PredictOptions, PredictionWithIntervals, RankedModel,
    TableOptions, TopicCorrelations, TopicDraw, TopicInfo, TopicModel, TopicTable, UpdateStart,
};
pub use erased::FitParams;
pub use errors::{FailureKind, FitError, ModelError, RestoreError};
pub use fit_context::{CancelToken, Checkpointing, FitContext, Progress, SavedCheckpoints, Stage, StepKind, ALWAYS_READY, STAGE_KEY};
pub use params::ParamError;
