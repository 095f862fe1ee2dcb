//! DCNT and SCNT: correlated topics driven by document metadata, with logistic
//! stick-breaking over a truncation K̄ (Kim & Sudderth 2011).
//!
//! - [`stick`]: π(v), the stick-breaking map from activations to topic weights;
//! - [`point`]: the global parameters the estimators read;
//! - [`activations`]: the v_d (independence MH) and u_d (Gaussian) updates;
//! - [`params`]: job parameters, priors and defaults (the toy experiment's);
//! - [`globals`]: the global parameters and their conjugate draws;
//! - [`sampler`]: the state and one Gibbs scan (z, v, u per document; then globals);
//! - [`fit`]: split, scan loop, progress, samples, posterior means;
//! - [`predict`]: fold-in topic proportions of new documents;
//! - [`model`]: the `dcnt`/`scnt` families and the stored [`model::DcntModel`].

pub mod activations;
pub mod fit;
pub mod globals;
pub mod model;
pub mod params;
pub mod point;
pub mod predict;
pub mod sampler;
pub mod stick;

#[cfg(test)]
mod bars_tests;
#[cfg(test)]
mod geweke_tests;

pub use model::{DcntFamily, DcntModel, DCNT, SCNT};
pub use params::DcntParams;
