//! Topic proportions for new documents by fold-in Gibbs with the topics held fixed.
//!
//! Why it exists: `POST /v1/models/{id}/predict` for LDA. With φ fixed at its posterior
//! mean the topic assignments of a new document are conditionally independent of the
//! training corpus, so each document is a small Gibbs chain of its own:
//! p(z_i = k | z_-i) ∝ (n_dk^-i + α_k) φ_k,w_i, with the fitted α (one α_k per topic). θ is averaged over the sweeps after burn-in.

use crate::corpus::lexicon::EncodedDoc;
use crate::rng::{stream, Purpose};
use rand::RngExt;
use rayon::prelude::*;

/// Posterior-mean θ for each document. `phi` is topic-major (`K × V`).
pub fn fold_in(docs: &[EncodedDoc], phi: &[f64], num_topics: usize, alpha: &[f64], iterations: usize, burn_in: usize, seed: u64) -> Vec<Vec<f64>> {
    let num_terms = phi.len() / num_topics;
    docs.par_iter()
        .enumerate()
        .map(|(d, doc)| {
            let words: Vec<usize> =
                doc.terms.iter().zip(&doc.counts).flat_map(|(&t, &n)| std::iter::repeat_n(t as usize, n as usize)).filter(|&w| w < num_terms).collect();
            fold_in_one(&words, phi, num_terms, num_topics, alpha, iterations, burn_in, seed, d as u64)
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn fold_in_one(words: &[usize], phi: &[f64], num_terms: usize, k: usize, alpha: &[f64], iterations: usize, burn_in: usize, seed: u64, index: u64) -> Vec<f64> {
    if words.is_empty() {
        return vec![1.0 / k as f64; k];
    }
    let mut rng = stream(seed, Purpose::Predict, 0, index);
    let mut z: Vec<usize> = words.iter().map(|_| rng.random_range(0..k)).collect();
    let mut n_dk = vec![0u32; k];
    for &t in &z {
        n_dk[t] += 1;
    }
    let mut weights = vec![0.0; k];
    let mut theta = vec![0.0; k];
    let mut kept = 0usize;
    let denom = words.len() as f64 + alpha.iter().sum::<f64>();
    for it in 0..iterations.max(1) {
        for (i, &w) in words.iter().enumerate() {
            n_dk[z[i]] -= 1;
            let mut total = 0.0;
            for t in 0..k {
                total += (n_dk[t] as f64 + alpha[t]) * phi[t * num_terms + w];
                weights[t] = total;
            }
            let u = rng.random::<f64>() * total;
            let t = weights.partition_point(|&c| c <= u).min(k - 1);
            z[i] = t;
            n_dk[t] += 1;
        }
        if it >= burn_in.min(iterations.saturating_sub(1)) {
            kept += 1;
            for t in 0..k {
                theta[t] += (n_dk[t] as f64 + alpha[t]) / denom;
            }
        }
    }
    theta.iter_mut().for_each(|x| *x /= kept as f64);
    theta
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn document_of_one_topic_words_gets_that_topic() {
        // Two topics over four words: topic 0 uses words 0,1; topic 1 uses words 2,3.
        let phi = vec![0.49, 0.49, 0.01, 0.01, 0.01, 0.01, 0.49, 0.49];
        let doc = EncodedDoc { terms: vec![2, 3], counts: vec![10, 10], oov_tokens: 0 };
        let empty = EncodedDoc { terms: vec![], counts: vec![], oov_tokens: 3 };
        let out = fold_in(&[doc, empty], &phi, 2, &[0.1, 0.1], 50, 10, 1);
        // With 20 tokens and α = 0.1, E[θ_1] ≥ (20·0.98 + 0.1)/(20.2) ≈ 0.97 when every
        // token sits on topic 1 with probability 0.98.
        assert!(out[0][1] > 0.9, "{:?}", out[0]);
        assert_eq!(out[1], vec![0.5, 0.5]);
        assert!((out[0].iter().sum::<f64>() - 1.0).abs() < 1e-9);
    }
}
