//! DCNT and SCNT: correlated topics driven by document metadata, with logistic
//! stick-breaking over a truncation K̄ (Kim & Sudderth 2011).
//!
//! - [`stick`]: π(v), the stick-breaking map from activations to topic weights;
//! - [`point`]: the global parameters the estimators read;
//! - [`activations`]: the v_d (independence MH) and u_d (Gaussian) updates;
//! - [`params`]: job parameters, priors and defaults (the toy experiment's);
//! - [`variant`]: [`Covariance`], which family a fit is: DCNT's full A or SCNT's diagonal one;
//! - [`globals`]: the global parameters and their conjugate draws;
//! - [`state`]: the sampler's state and the training documents, as plain data;
//! - [`sampler`]: the state's initialisation and one Gibbs scan (z, v, u per document;
//!   topic swaps; then globals);
//! - [`swap`]: the within-document topic swap, an exact Metropolis–Hastings move;
//! - [`sample`]: what the chain produces: loadings, thinned samples, active topics;
//! - [`chain`]: what the family supplies to the shared chain driver (one scan, the log
//!   joint, the posterior sums, the checkpointed state);
//! - [`fit`]: split, the chains on the driver, posterior means, held-out scores after them;
//! - [`pooled`]: several chains' models as one, later chains' topics matched to the first's;
//! - [`predict`]: fold-in topic proportions of new documents;
//! - [`model`]: the stored [`model::DcntModel`];
//! - [`heldout`]: the Chib-style held-out likelihood p(w_d | ζ) (paper 000, A.4);
//! - [`covariance`]: the Monte Carlo covariance of topic weights (paper 000, A.3);
//! - [`scoring`]: both, as a fitted model offers them to evaluation jobs;
//! - [`effects`]: covariate effects from the kept draws, under the model's own prior;
//! - [`family`]: the `dcnt`/`scnt` families and the model's served face, above the rest.

pub mod activations;
pub mod chain;
pub mod covariance;
pub mod edit;
pub mod effects;
pub mod family;
pub mod fit;
pub mod fit_memory;
pub mod globals;
pub mod heldout;
pub mod model;
pub mod params;
pub mod point;
pub mod pooled;
pub mod predict;
pub mod sample;
pub mod sampler;
pub mod scoring;
pub mod state;
pub mod stick;
pub mod swap;
pub mod update;
pub mod variant;
pub mod warm_start;

#[cfg(test)]
mod bars_tests;
#[cfg(test)]
mod correlation_trace;
#[cfg(test)]
mod edit_tests;
#[cfg(test)]
mod geweke_tests;
#[cfg(test)]
mod heldout_tests;
#[cfg(test)]
mod resume_tests;
#[cfg(test)]
mod seeded_tests;
#[cfg(test)]
mod update_tests;

pub use family::{DcntFamily, DCNT, SCNT};
pub use model::DcntModel;
pub use params::DcntParams;
pub use variant::Covariance;
