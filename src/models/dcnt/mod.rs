//! DCNT and SCNT: correlated topics driven by document metadata, with logistic
//! stick-breaking over a truncation K̄ (Kim & Sudderth 2011).
//!
//! - [`stick`]: π(v), the stick-breaking map from activations to topic weights;
//! - [`point`]: the global parameters the estimators read.

pub mod point;
pub mod stick;
