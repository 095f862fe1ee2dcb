//! The hierarchical Dirichlet process: the shared top-level stick ([`stick`]).
//!
//! Why it exists: HDP models (the topic model, HDP-aMMSB) share the top-level stick
//! posterior and its optimiser; each model adds its own local step and summaries.

pub mod stick;
