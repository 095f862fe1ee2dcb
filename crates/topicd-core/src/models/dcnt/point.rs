//! One setting of DCNT's (or SCNT's) global parameters, as the estimators need it.
//!
//! Why it exists: held-out likelihood (Chib), topic covariance and prediction all work
//! with the global parameters held fixed (at a posterior sample or posterior means).
//! This plain struct is the contract between the sampler, which produces it, and
//! those estimators, which only read it.

use serde::{Deserialize, Serialize};

/// Global parameters: u_d ~ N(ηᵀφ_d, I), v_d ~ N(A u_d, λ_v⁻¹ I), words ~ Mult(Ω_z).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DcntPoint {
    /// Truncation K̄.
    pub num_topics: usize,
    /// Metadata dimension F (1 when the corpus has no features: φ_d = 1).
    pub num_features: usize,
    /// The square-root correlation matrix A, K̄ × K̄ row-major (diagonal for SCNT).
    pub a: Vec<f64>,
    /// η, F × K̄ row-major: E[u_d] = ηᵀ φ_d.
    pub eta: Vec<f64>,
    /// Precision of v_d around A u_d.
    pub lambda_v: f64,
    /// Ω, topic-word probabilities, K̄ × V topic-major, rows summing to one.
    pub topic_word: Vec<f64>,
}

impl DcntPoint {
    /// Vocabulary size V.
    pub fn num_terms(&self) -> usize {
        self.topic_word.len() / self.num_topics.max(1)
    }

    /// E[u_d | φ_d] = ηᵀ φ_d (a K̄-vector).
    pub fn u_mean(&self, features: &[f64]) -> Vec<f64> {
        let k = self.num_topics;
        assert_eq!(features.len(), self.num_features, "one value per feature");
        let mut m = vec![0.0; k];
        for (f, &x) in features.iter().enumerate() {
            for (mk, &e) in m.iter_mut().zip(&self.eta[f * k..(f + 1) * k]) {
                *mk += e * x;
            }
        }
        m
    }

    /// A u (a K̄-vector).
    pub fn a_times(&self, u: &[f64]) -> Vec<f64> {
        let k = self.num_topics;
        (0..k).map(|r| self.a[r * k..(r + 1) * k].iter().zip(u).map(|(a, x)| a * x).sum()).collect()
    }

    /// Ω_{k, w}.
    #[inline]
    pub fn omega(&self, k: usize, w: usize) -> f64 {
        self.topic_word[k * self.num_terms() + w]
    }
}
