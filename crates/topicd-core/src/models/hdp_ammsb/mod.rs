//! HDP-aMMSB: assortative mixed-membership communities with an HDP prior over
//! communities, fitted by memoized variational inference (paper 002, appendix C; bnpy's
//! `HDPAssortativeMMSB`).
//!
//! Model: β ~ GEM(γ) (top-level sticks, truncated at K); each node π_i ~ Dir(α β); each
//! community a link probability φ_k ~ Beta(τ1, τ0); for each observed pair (i, j), a
//! sender state s ~ π_i and a receiver state r ~ π_j, and x_ij ~ Bernoulli(φ_k) if
//! s = r = k, else Bernoulli(ε) with ε fixed.
//!
//! - [`params`]: job parameters, defaults and limits;
//! - [`pairs`]: observed pairs and the batches that own them;
//! - [`state`]: the global posteriors q(π), q(φ), q(u) and their updates;
//! - [`summary`]: per-batch and whole-data statistics, the memo;
//! - [`local`]: the O(N² K) local step (eqs. 49–51);
//! - [`objective`]: the exact whole-data objective;
//! - [`init`]: the starting point, seeded by label propagation;
//! - [`fit`]: the memoized passes (run by [`crate::models::passes`]);
//! - [`model`]: the stored model;
//! - [`family`]: the `hdp_ammsb` family (parameter checks, fit, decode), above the rest.

pub mod family;
pub mod fit;
pub mod fit_memory;
pub mod init;
pub mod local;
pub mod model;
pub mod objective;
pub mod pairs;
pub mod params;
pub mod state;
pub mod summary;

#[cfg(test)]
mod fit_tests;
#[cfg(test)]
mod resume_tests;

pub use family::{HdpAmmsbFamily, HDP_AMMSB};
pub use model::AmmsbModel;
pub use params::AmmsbParams;
