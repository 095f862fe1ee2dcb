//! HPC (hierarchical Poisson convolution, Airoldi & Bischof 2016): building blocks.
//!
//! Why it exists: HPC's block Gibbs sampler draws each word's log rates μ_f and each
//! document's affinities ξ_d by scheduled conditional HMC. This folder holds the
//! conditionals as [`crate::inference::LogDensity`] values with analytic gradients and
//! Hessians (paper 003, Appendix A.2), checked against finite differences; [`chain`]
//! hands one scan of them to the shared chain driver (which owns the loop,
//! checkpoints and resume), [`fit`] turns the chain into a model ([`model`]), and
//! [`family`] is the `hpc` and `pcm` families (in [`crate::models::registry::REGISTRY`]),
//! one implementation told apart by [`variant`]'s [`Supervision`].

pub mod affinity;
pub mod caches;
pub mod calibration;
pub mod chain;
pub mod data;
pub mod dense_affinities;
pub mod dispersion;
pub mod edit;
#[cfg(test)]
mod edit_tests;
pub mod family;
pub mod fit;
pub mod fit_memory;
#[cfg(test)]
mod fit_tests;
#[cfg(test)]
mod geweke_tests;
pub mod hyper;
pub mod interweave;
pub mod label_posterior;
pub mod model;
pub mod params;
pub mod pooled;
pub mod predict;
pub mod predict_intervals;
pub mod ranked;
pub mod rate_scratch;
pub mod rates;
pub mod refit;
#[cfg(test)]
mod resume_tests;
pub mod retired;
pub mod sampler;
pub mod seed_rates;
#[cfg(test)]
mod seeded_tests;
pub mod simulate;
pub mod split_start;
pub mod start;
pub mod touched;
pub mod tree_prior;
pub mod untouched;
#[cfg(test)]
pub(crate) mod update_tests;
pub mod variances;
pub mod variant;
pub mod warm_start;

pub use family::{HpcFamily, HPC, PCM};
pub use variant::Supervision;
