//! The sampler's state and the training documents it runs on, as plain data.
//!
//! Why it exists: both the scan ([`super::sampler`]) and the within-document topic swap
//! ([`super::swap`]) read and change [`DcntState`] over [`Documents`], and the scan
//! calls the swap. With the types here, below both, the swap does not name the
//! sampler and the two stay free of an import circle. The state's initialisation and
//! its Gibbs blocks are [`super::sampler`]'s.

use super::globals::Globals;
use super::params::Priors;
use super::variant::Covariance;
use crate::models::seeds::SeedPrior;
use std::ops::Range;

/// The training documents in the sampler's layout.
#[derive(Debug, Clone)]
pub struct Documents {
    /// Per document: the distinct terms and their counts (CSR row order). Tokens are
    /// the terms expanded by count, in this order.
    pub rows: Vec<(Vec<u32>, Vec<u32>)>,
    /// `token_offsets[d]..token_offsets[d + 1]` are document d's tokens.
    pub token_offsets: Vec<usize>,
    /// Φ, D × F row-major.
    pub features: Vec<f64>,
    pub num_features: usize,
    pub num_terms: usize,
}

impl Documents {
    pub fn new(rows: Vec<(Vec<u32>, Vec<u32>)>, features: Vec<f64>, num_features: usize, num_terms: usize) -> Self {
        assert_eq!(features.len(), rows.len() * num_features, "one feature row per document");
        let mut token_offsets = vec![0];
        for (_, counts) in &rows {
            token_offsets.push(token_offsets.last().copied().unwrap_or(0) + counts.iter().map(|&c| c as usize).sum::<usize>());
        }
        Documents { rows, token_offsets, features, num_features, num_terms }
    }

    pub fn num_docs(&self) -> usize {
        self.rows.len()
    }

    pub fn num_tokens(&self) -> usize {
        *self.token_offsets.last().unwrap_or(&0)
    }

    pub fn phi(&self, d: usize) -> &[f64] {
        &self.features[d * self.num_features..(d + 1) * self.num_features]
    }

    /// Consecutive document ranges of about `sync_tokens` tokens each.
    pub fn blocks(&self, sync_tokens: usize) -> Vec<Range<usize>> {
        let mut out = Vec::new();
        let mut start = 0;
        for d in 0..self.num_docs() {
            if self.token_offsets[d + 1] - self.token_offsets[start] >= sync_tokens {
                out.push(start..d + 1);
                start = d + 1;
            }
        }
        if start < self.num_docs() {
            out.push(start..self.num_docs());
        }
        out
    }
}

/// The sampler's state.
#[derive(Debug, Clone)]
pub struct DcntState {
    pub num_topics: usize,
    /// DCNT's full A or SCNT's diagonal one.
    pub covariance: Covariance,
    pub priors: Priors,
    /// Topic of each token (document-major, in [`Documents`] token order).
    pub z: Vec<u16>,
    /// n_dk, D × K̄.
    pub doc_topic: Vec<u32>,
    /// M_kw, word-major V × K̄.
    pub word_topic: Vec<u32>,
    /// M_k.
    pub topic_totals: Vec<u64>,
    /// u_d rows, D × K̄.
    pub u: Vec<f64>,
    /// v_d rows, D × K̄.
    pub v: Vec<f64>,
    pub globals: Globals,
    /// Within-document topic swaps proposed per document and scan (0: none).
    pub topic_swaps: usize,
    /// The seeds' pseudo-counts, kept inside `word_topic` (not `topic_totals`) through
    /// every scan and recount ([`crate::models::seeds`]); empty without seeds.
    pub seed_prior: SeedPrior,
}
