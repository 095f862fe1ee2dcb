//! Where the parts of a split PCM topic start: a short restricted run on the topic's
//! share of the training counts.
//!
//! Why it exists: an edit that splits PCM topic k must start its parts apart, or the
//! refit's sampler begins with `into` copies of one topic and spends its sweeps breaking
//! the tie (LDA's edit divides the topic's tokens by a restricted Gibbs run, the
//! split-merge proposals' restricted scan; this is its Poisson form). A stored PCM model
//! keeps rates (E[μ], η), not allocations, so:
//! 1. each training document's topic weights θ_d are fitted to its words under the
//!    parent's rates (a few EM steps of the mixture, from softmax(η):
//!    [`super::warm_start::ParentFit`]);
//! 2. topic k's expected counts X_df = x_df θ_dk φ_fk / Σ_j θ_dj φ_fj, with φ the
//!    rates normalised per topic, are what the split divides;
//! 3. X ≈ W H by Poisson (KL) factorisation of rank `into` with multiplicative updates
//!    ([`RESTRICTED_SWEEPS`] of them), which is EM for a Poisson factorisation of X; a
//!    seed word of part j has H_ij = 0 for every other part i from the start, and a
//!    multiplicative update keeps a zero at zero, so its counts stay in part j;
//! 4. part j's rates are topic k's total rate B_k times its word distribution (mixed
//!    with a tenth of topic k's own, so no rate is 0), and its weight is its share of X.
//!
//! Deterministic for a seed: the documents' weights need no random numbers, and H and W
//! start from one stream per split.

use super::data::HpcData;
use super::warm_start::ParentFit;
use crate::rng::StreamRng;
use rand::RngExt;

/// Multiplicative updates of the restricted run (each one of W and of H): enough for
/// the parts of a topic to separate by their words' co-occurrence; the refit's sweeps
/// settle them further.
pub const RESTRICTED_SWEEPS: usize = 50;

/// How much of the parent topic's own word distribution each part's start keeps.
const PARENT_MIX: f64 = 0.1;

/// One part of a split topic: its starting rates over the vocabulary and its share of
/// the topic's expected counts.
pub(super) struct Part {
    pub rates: Vec<f64>,
    pub weight: f64,
}

/// Divide the parent's topic `topic` into `parts` parts on the training documents of
/// `data` (the parent's vocabulary; `fit` holds their weights), a seed word of part j
/// held in part j.
pub(super) fn divide(fit: &ParentFit, data: &HpcData, topic: usize, parts: usize, seed_words: &[Vec<u32>], rng: &mut StreamRng) -> Vec<Part> {
    let (v, k) = (fit.num_terms, fit.totals.len());
    let (rates, totals) = (&fit.rates, &fit.totals);
    let counts = fit.topic_counts(data, topic);
    let (w, h) = factorise(&counts, v, parts, seed_words, rng);
    let column_mass: Vec<f64> = (0..parts).map(|j| counts.iter().map(|(d, _)| w[*d as usize * parts + j]).sum::<f64>()).collect();
    let row_mass: Vec<f64> = (0..parts).map(|j| h[j * v..(j + 1) * v].iter().sum::<f64>()).collect();
    let mass: Vec<f64> = (0..parts).map(|j| column_mass[j] * row_mass[j]).collect();
    let all: f64 = mass.iter().sum::<f64>().max(f64::MIN_POSITIVE);
    (0..parts)
        .map(|j| {
            let part_rates = (0..v)
                .map(|f| {
                    let own = if row_mass[j] > 0.0 { h[j * v + f] / row_mass[j] } else { 1.0 / v as f64 };
                    let parents = rates[f * k + topic] / totals[topic];
                    totals[topic] * ((1.0 - PARENT_MIX) * own + PARENT_MIX * parents)
                })
                .collect();
            Part { rates: part_rates, weight: (mass[j] / all).max(1e-3) }
        })
        .collect()
}

/// Rank-`parts` Poisson factorisation of the sparse `counts` (documents' rows over `v`
/// words): W (document-major, `parts` per document of the corpus' numbering) and H
/// (part-major, `v` per part), started at random around the counts' scale with each
/// seed word held in its part.
fn factorise(counts: &[(u32, Vec<(u32, f64)>)], v: usize, parts: usize, seed_words: &[Vec<u32>], rng: &mut StreamRng) -> (Vec<f64>, Vec<f64>) {
    let docs = counts.iter().map(|(d, _)| *d as usize + 1).max().unwrap_or(0);
    let mut word_totals = vec![0.0; v];
    counts.iter().flat_map(|(_, row)| row).for_each(|&(f, c)| word_totals[f as usize] += c);
    let mut h: Vec<f64> = (0..parts * v).map(|i| word_totals[i % v] * (0.5 + rng.random::<f64>())).collect();
    for (j, words) in seed_words.iter().enumerate() {
        for &f in words {
            for other in (0..parts).filter(|&i| i != j) {
                h[other * v + f as usize] = 0.0;
            }
        }
    }
    let mut w: Vec<f64> = (0..docs * parts).map(|_| 0.5 + rng.random::<f64>()).collect();
    let mut numerator = vec![0.0; parts * v];
    for _ in 0..RESTRICTED_SWEEPS {
        // H ← H ∘ (Wᵀ (X / WH)) / (Wᵀ 1)
        numerator.iter_mut().for_each(|x| *x = 0.0);
        let mut w_sums = vec![0.0; parts];
        for (d, row) in counts {
            let wd = &w[*d as usize * parts..(*d as usize + 1) * parts];
            wd.iter().zip(&mut w_sums).for_each(|(x, s)| *s += x);
            for &(f, c) in row {
                let f = f as usize;
                let fitted: f64 = (0..parts).map(|j| wd[j] * h[j * v + f]).sum();
                if fitted > 0.0 {
                    (0..parts).for_each(|j| numerator[j * v + f] += wd[j] * c / fitted);
                }
            }
        }
        for j in 0..parts {
            for f in 0..v {
                h[j * v + f] *= numerator[j * v + f] / w_sums[j].max(f64::MIN_POSITIVE);
            }
        }
        // W ← W ∘ ((X / WH) Hᵀ) / (1 Hᵀ)
        let h_sums: Vec<f64> = (0..parts).map(|j| h[j * v..(j + 1) * v].iter().sum::<f64>().max(f64::MIN_POSITIVE)).collect();
        for (d, row) in counts {
            let wd = &mut w[*d as usize * parts..(*d as usize + 1) * parts];
            let mut num = vec![0.0; parts];
            for &(f, c) in row {
                let f = f as usize;
                let fitted: f64 = (0..parts).map(|j| wd[j] * h[j * v + f]).sum();
                if fitted > 0.0 {
                    (0..parts).for_each(|j| num[j] += h[j * v + f] * c / fitted);
                }
            }
            (0..parts).for_each(|j| wd[j] *= num[j] / h_sums[j]);
        }
    }
    (w, h)
}
