//! LDA's hyperparameter optimisation: an asymmetric α (and optionally a symmetric β)
//! re-estimated from the current topic assignments, as MALLET's `--optimize-interval`
//! and tomotopy's `optim_interval`.
//!
//! Why it exists: a symmetric α forces every topic to the same prior weight in every
//! document, while real corpora have a few topics (boilerplate, common vocabulary) that
//! most documents use. Every `optimize_interval` sweeps (after `optimize_burn_in`), α is
//! set to the maximiser of p(z | α) for the current assignments z by Minka's fixed point
//! ([`crate::inference::dirichlet`]), warm-started from the previous α; with
//! `optimize_beta`, β likewise maximises p(w | z, β) over a symmetric β.
//!
//! Determinism: the fixed points read integer histograms of the counts (documents per
//! topic count, documents per length, topic-word cells per count, topics per total),
//! which are exact integer reductions, and then run sequentially: the same assignments
//! give the same α and β at any thread count.

use super::sampler::GibbsState;
use super::tokens::Tokens;
use crate::inference::dirichlet::{add_to_histogram, optimize_asymmetric, optimize_symmetric, FixedPointSettings};
use rayon::prelude::*;

/// The histograms α's fixed point reads: `components[k][n]` = documents with n_dk = n,
/// `lengths[L]` = documents with L tokens.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DocumentTopicHistograms {
    pub components: Vec<Vec<u64>>,
    pub lengths: Vec<u64>,
}

impl DocumentTopicHistograms {
    fn empty(k: usize) -> Self {
        DocumentTopicHistograms { components: vec![Vec::new(); k], lengths: Vec::new() }
    }

    /// Element-wise sum (integer, so the order of merging does not matter).
    pub fn merge(mut self, other: Self) -> Self {
        let add = |into: &mut Vec<u64>, from: &[u64]| {
            if into.len() < from.len() {
                into.resize(from.len(), 0);
            }
            for (a, &b) in into.iter_mut().zip(from) {
                *a += b;
            }
        };
        for (a, b) in self.components.iter_mut().zip(&other.components) {
            add(a, b);
        }
        add(&mut self.lengths, &other.lengths);
        self
    }
}

/// Histograms of the document-topic counts implied by `state.z`, in parallel over
/// documents.
pub fn document_topic_histograms(state: &GibbsState, tokens: &Tokens) -> DocumentTopicHistograms {
    let k = state.num_topics;
    (0..tokens.num_docs())
        .into_par_iter()
        .fold(
            || (DocumentTopicHistograms::empty(k), vec![0u32; k]),
            |(mut h, mut n_dk), d| {
                let zs = &state.z[tokens.doc_ptr[d]..tokens.doc_ptr[d + 1]];
                n_dk.fill(0);
                for &t in zs {
                    n_dk[t as usize] += 1;
                }
                for (hist, &n) in h.components.iter_mut().zip(&n_dk) {
                    if n > 0 {
                        add_to_histogram(hist, n as usize);
                    }
                }
                add_to_histogram(&mut h.lengths, zs.len());
                (h, n_dk)
            },
        )
        .map(|(h, _)| h)
        .reduce(|| DocumentTopicHistograms::empty(k), DocumentTopicHistograms::merge)
}

/// What one optimisation did: fixed-point steps for α and for β (0 if not optimised).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OptimizeReport {
    pub alpha_steps: usize,
    pub beta_steps: usize,
}

/// Re-estimate `state.alpha` (one α_k per topic) from the current assignments and, if
/// `beta_too`, a symmetric `state.beta` from the topic-word counts.
pub fn optimize(state: &mut GibbsState, tokens: &Tokens, beta_too: bool) -> OptimizeReport {
    let h = document_topic_histograms(state, tokens);
    optimize_with(state, &h, beta_too)
}

/// [`optimize`] given the histograms of every document's topic counts (summed over the
/// shards of a distributed fit); β reads `state.n_kw`, which must be whole.
pub fn optimize_with(state: &mut GibbsState, h: &DocumentTopicHistograms, beta_too: bool) -> OptimizeReport {
    let settings = FixedPointSettings::default();
    let alpha_steps = optimize_live_alpha(&mut state.alpha, h, &settings);
    let mut beta_steps = 0;
    if beta_too {
        let mut cells = Vec::new();
        for &n in state.n_kw.iter().filter(|&&n| n > 0) {
            add_to_histogram(&mut cells, n as usize);
        }
        let mut totals = Vec::new();
        for &n in &state.n_k {
            add_to_histogram(&mut totals, n as usize);
        }
        let (beta, steps) = optimize_symmetric(state.beta, state.num_terms, &cells, &totals, &settings);
        state.beta = beta;
        beta_steps = steps;
    }
    OptimizeReport { alpha_steps, beta_steps }
}

/// Re-estimate α over the live topics only: a retired topic (α_k = 0, left by an edit,
/// [`super::edit`]) holds no token and stays at 0 rather than rising to the fixed
/// point's floor, which would let tokens back in.
fn optimize_live_alpha(alpha: &mut [f64], h: &DocumentTopicHistograms, settings: &FixedPointSettings) -> usize {
    let live: Vec<usize> = (0..alpha.len()).filter(|&k| alpha[k] > 0.0).collect();
    if live.len() == alpha.len() {
        return optimize_asymmetric(alpha, &h.components, &h.lengths, settings);
    }
    let mut live_alpha: Vec<f64> = live.iter().map(|&k| alpha[k]).collect();
    let components: Vec<Vec<u64>> = live.iter().map(|&k| h.components[k].clone()).collect();
    let steps = optimize_asymmetric(&mut live_alpha, &components, &h.lengths, settings);
    for (&k, a) in live.iter().zip(live_alpha) {
        alpha[k] = a;
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The parallel histograms equal a direct count, at 1 and 3 threads.
    #[test]
    fn histograms_count_documents_by_topic_count() {
        let counts = crate::corpus::DocTermMatrix::from_rows(vec![vec![(0, 2), (1, 1), (3, 1)], vec![(1, 2), (2, 3)], vec![(3, 4)]]);
        let tokens = Tokens::from_counts(&counts, 4);
        let mut state = GibbsState::init(&tokens, 3, 0.4, 0.3, 11);
        // Document 0: topics [0, 2, 1, 1]; document 1: [2, 2, 0, 1, 1]; document 2: [1; 4].
        state.z = vec![0, 2, 1, 1, 2, 2, 0, 1, 1, 1, 1, 1, 1];
        state.recount(&tokens);
        let expected = DocumentTopicHistograms { components: vec![vec![0, 2], vec![0, 0, 2, 0, 1], vec![0, 1, 1]], lengths: vec![0, 0, 0, 0, 2, 1] };
        for threads in [1, 3] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            assert_eq!(pool.install(|| document_topic_histograms(&state, &tokens)), expected, "{threads} threads");
        }
    }
}
