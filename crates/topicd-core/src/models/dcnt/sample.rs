//! What the chain produces besides its posterior sums: the loadings (A, η, λ_v), the
//! thinned sample a kept scan records, and the count of active topics.
//!
//! Why it exists: the chain ([`super::chain`]) builds these, the fit ([`super::fit`])
//! turns them into the model, and the model ([`super::model`]) stores [`Loadings`].
//! Defined here, below all three, the chain names neither the fit nor the model, so
//! chain, fit, model and scoring stay free of import circles.

use super::state::DcntState;
use serde::{Deserialize, Serialize};

/// Share of tokens above which a topic counts as active.
pub const ACTIVE_SHARE: f64 = 0.01;

/// One setting of A, η and λ_v (a posterior mean or a sample).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Loadings {
    /// K̄ × K̄ row-major.
    pub a: Vec<f64>,
    /// F × K̄ row-major.
    pub eta: Vec<f64>,
    pub lambda_v: f64,
}

/// A thinned posterior sample: topic-word counts (word-major, sparse, like LDA's) and
/// the loadings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DcntSample {
    pub num_topics: u32,
    /// `word_ptr[w]..word_ptr[w + 1]` indexes `topics`/`counts` for word w.
    pub word_ptr: Vec<u32>,
    pub topics: Vec<u16>,
    pub counts: Vec<u32>,
    pub a: Vec<f64>,
    pub eta: Vec<f64>,
    pub lambda_v: f64,
}

impl DcntSample {
    pub(super) fn from_state(state: &DcntState) -> Self {
        let k = state.num_topics;
        let mut word_ptr = vec![0u32];
        let (mut topics, mut counts) = (Vec::new(), Vec::new());
        for row in state.data_word_topic().chunks(k) {
            for (t, &n) in row.iter().enumerate().filter(|(_, &n)| n > 0) {
                topics.push(t as u16);
                counts.push(n);
            }
            word_ptr.push(topics.len() as u32);
        }
        let g = &state.globals;
        DcntSample { num_topics: k as u32, word_ptr, topics, counts, a: g.a.clone(), eta: g.eta.clone(), lambda_v: g.lambda_v }
    }
}

/// Topics whose share is above [`ACTIVE_SHARE`].
pub(super) fn active_topics(shares: impl IntoIterator<Item = f64>) -> usize {
    shares.into_iter().filter(|&s| s > ACTIVE_SHARE).count()
}
