//! DCNT and SCNT: correlated topics driven by document metadata, with logistic
//! stick-breaking over a truncation K̄ (Kim & Sudderth 2011).
//!
//! - [`stick`]: π(v), the stick-breaking map from activations to topic weights;
//! - [`point`]: the global parameters the estimators read;
//! - [`activations`]: the v_d (independence MH) and u_d (Gaussian) updates;
//! - [`heldout`]: the Chib-style held-out likelihood p(w_d | ζ) (paper 000, A.4);
//! - [`covariance`]: the Monte Carlo covariance of topic weights (paper 000, A.3).

pub mod activations;
pub mod covariance;
pub mod heldout;
pub mod point;
pub mod stick;

#[cfg(test)]
mod heldout_tests;
