//! A PCM chain started from fitted rates: each document's topic weights fitted to its
//! words under them, and the affinities and variances that follow.
//!
//! Why it exists: an edit's refit ([`super::edit`]) and an update ([`super::start`])
//! start from a parent's sharp rates. Started as a fresh chain's (every ξ_d at η, τ² at
//! 0.5), the first scans meet those rates with generic documents: on AppStream an
//! edit's untouched topics moved 0.40–0.45 in L1 instead of 0.24–0.25 and the mass
//! matrices needed 59 000 repairs instead of 760 (decision 0066). So each document's ξ
//! starts from its weights fitted under the started rates ([`ParentFit`],
//! [`affinities_of_weights`]), and each word's τ² at its conditional mode given them
//! ([`conditional_mode_tau2`]).

use super::affinity::softmax;
use super::data::HpcData;
use super::model::HpcModel;
use rayon::prelude::*;

/// EM steps that fit a training document's topic weights to its words.
const WEIGHT_STEPS: usize = 10;

/// The smallest weight a document's start gives a live topic (its ξ about 9 below the
/// largest): a topic the parent gave it nothing stays reachable.
pub(super) const WEIGHT_FLOOR: f64 = 1e-4;

/// The parent's rates and each training document's topic weights fitted to its words
/// under them: what a split divides, and where an edited chain's affinities start.
pub(super) struct ParentFit {
    pub(super) num_terms: usize,
    /// exp(E[μ]) of the parent's topics, word-major V × K (the root left out).
    pub(super) rates: Vec<f64>,
    /// Σ_f of each topic's rates.
    pub(super) totals: Vec<f64>,
    /// Each training document's weights θ_d over the parent's topics, document-major.
    pub weights: Vec<f64>,
}

impl ParentFit {
    /// The parent's rates, and the weights of `data`'s documents: [`WEIGHT_STEPS`] EM
    /// steps of the mixture of the topics' word distributions φ_k = β_k / B_k, from
    /// softmax(η) (a document's own, so the fit does not depend on the thread count).
    pub(super) fn new(parent: &HpcModel, data: &HpcData) -> Self {
        let (v, k) = (parent.num_terms, parent.labels.len());
        let n = k + 1;
        let rates: Vec<f64> = (0..v).flat_map(|f| (1..n).map(move |node| (f, node))).map(|(f, node)| (parent.mu[f * n + node] as f64).exp()).collect();
        Self::of_rates(rates, v, &parent.eta, data)
    }

    /// The weights of `data`'s documents under `rates` (exp μ of K topics over `v`
    /// words, word-major, the root left out) from softmax(`eta`), as [`Self::new`].
    pub(super) fn of_rates(rates: Vec<f64>, v: usize, eta: &[f64], data: &HpcData) -> Self {
        let k = eta.len();
        let totals: Vec<f64> = (0..k).map(|j| (0..v).map(|f| rates[f * k + j]).sum::<f64>().max(f64::MIN_POSITIVE)).collect();
        let prior = softmax(eta);
        let weights = (0..data.num_docs())
            .into_par_iter()
            .flat_map_iter(|d| {
                let words = data.doc_words.row(d);
                let phi = |f: u32, j: usize| rates[f as usize * k + j] / totals[j];
                let mut theta = prior.clone();
                let mut next = vec![0.0; k];
                for _ in 0..WEIGHT_STEPS {
                    next.iter_mut().for_each(|x| *x = 0.0);
                    for &(f, x) in words {
                        let z: f64 = (0..k).map(|j| theta[j] * phi(f, j)).sum();
                        if z > 0.0 {
                            (0..k).for_each(|j| next[j] += x * theta[j] * phi(f, j) / z);
                        }
                    }
                    let s: f64 = next.iter().sum();
                    if s <= 0.0 {
                        break;
                    }
                    theta.iter_mut().zip(&next).for_each(|(t, n)| *t = n / s);
                }
                theta
            })
            .collect();
        ParentFit { num_terms: v, rates, totals, weights }
    }

    /// Topic `topic`'s expected counts in each training document that has any:
    /// (document, [(word, count)]).
    pub(super) fn topic_counts(&self, data: &HpcData, topic: usize) -> Vec<(u32, Vec<(u32, f64)>)> {
        let k = self.totals.len();
        let phi = |f: u32, j: usize| self.rates[f as usize * k + j] / self.totals[j];
        (0..data.num_docs())
            .into_par_iter()
            .filter_map(|d| {
                let theta = &self.weights[d * k..(d + 1) * k];
                let own: Vec<(u32, f64)> = data
                    .doc_words
                    .row(d)
                    .iter()
                    .filter_map(|&(f, x)| {
                        let z: f64 = (0..k).map(|j| theta[j] * phi(f, j)).sum();
                        let c = if z > 0.0 { x * theta[topic] * phi(f, topic) / z } else { 0.0 };
                        (c > 1e-9).then_some((f, c))
                    })
                    .collect();
                (!own.is_empty()).then_some((d as u32, own))
            })
            .collect()
    }
}

/// A document's ξ over K topics from its weights `theta` (any scale): floored at
/// [`WEIGHT_FLOOR`] after normalising, ξ = log θ shifted to `eta_mean` (θ = softmax(ξ)
/// ignores the shift; the prior N(η, λ²) does not).
pub(super) fn affinities_of_weights(theta: &[f64], eta_mean: f64) -> Vec<f64> {
    let total = theta.iter().sum::<f64>().max(f64::MIN_POSITIVE);
    let logs: Vec<f64> = theta.iter().map(|x| (x / total).max(WEIGHT_FLOOR).ln()).collect();
    let shift = eta_mean - logs.iter().sum::<f64>() / logs.len() as f64;
    logs.into_iter().map(|l| l + shift).collect()
}

/// Each word's τ²_f (the root's, PCM's one parent node) at its conditional mode given the
/// started rates: (ν σ² + Σ_k (μ_fk − μ_f0)²) / (ν + K + 2), the mode of its scaled
/// inverse-χ² conditional. A fresh chain's 0.5 suits its smooth start; against a
/// parent's spread rates it made the first mode searches' prior too tight or too loose.
pub(super) fn conditional_mode_tau2(mu: &[f64], n: usize, nu: f64, sigma2: f64) -> Vec<f64> {
    mu.chunks(n)
        .flat_map(|row| {
            let squares: f64 = row[1..].iter().map(|m| (m - row[0]).powi(2)).sum();
            let mode = (nu * sigma2 + squares) / (nu + (n - 1) as f64 + 2.0);
            std::iter::repeat_n(mode, n)
        })
        .collect()
}
