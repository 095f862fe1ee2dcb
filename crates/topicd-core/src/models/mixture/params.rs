//! The mixture family's parameters and their schema text.

use crate::models::params::{ParamError, ParamReader, ParamsDoc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What the params schema says beside what [`MixtureParams::from_json`] reads.
pub(super) const DOC: ParamsDoc = ParamsDoc {
    component: "MixtureParams",
    description: "A mixture of unigrams fitted by hard EM (a test-only family: one topic per document). A null value means the default.",
    basic: &["topics", "iterations"],
    keys: &[
        ("topics", "K, the number of topics."),
        ("iterations", "Hard-EM iterations (each re-estimates the rates and reassigns every document)."),
        ("beta", "Symmetric smoothing of each topic's word rates."),
    ],
};

/// The family's parameters, every default filled in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MixtureParams {
    pub topics: usize,
    pub iterations: usize,
    pub beta: f64,
}

impl MixtureParams {
    /// Parse and check `params`; every error names its field.
    pub fn from_json(params: &Value) -> Result<Self, ParamError> {
        let mut r = ParamReader::new(params)?.described_by(&DOC);
        r.one_chain_only("a mixture fitted by hard EM runs no chains")?;
        let topics = r.uint_in_or("topics", 1, 100, 3)? as usize;
        let iterations = r.uint_in_or("iterations", 1, 1_000, 10)? as usize;
        let beta = r.concentration_or("beta", 0.1)?;
        r.finish()?;
        Ok(MixtureParams { topics, iterations, beta })
    }
}
