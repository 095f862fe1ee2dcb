//! DCNT and SCNT: correlated topics driven by document metadata, with logistic
//! stick-breaking over a truncation K̄ (Kim & Sudderth 2011).
//!
//! - [`stick`]: π(v), the stick-breaking map from activations to topic weights;
//! - [`point`]: the global parameters the estimators read;
//! - [`activations`]: the v_d (independence MH) and u_d (Gaussian) updates.

pub mod activations;
pub mod point;
pub mod stick;
