//! Topic proportions for new documents by fold-in Gibbs with the topics held fixed.
//!
//! Why it exists: `POST /v1/models/{id}/predict` for LDA. With φ fixed at its posterior
//! mean the topic assignments of a new document are conditionally independent of the
//! training corpus, so each document is a small Gibbs chain of its own:
//! p(z_i = k | z_-i) ∝ (n_dk^-i + α_k) φ_k,w_i, with the fitted α (one α_k per topic). θ is averaged over the sweeps after burn-in.
//!
//! With intervals ([`fold_in_with_intervals`]), each kept sweep also draws θ from its
//! conditional Dirichlet(n_d· + α), from a stream of its own (so the chain is the same
//! one `fold_in` runs), and each topic's equal-tailed interval is taken over those
//! draws: the document's posterior given φ at its posterior mean (φ's own uncertainty
//! is not in it).

use crate::corpus::lexicon::EncodedDoc;
use crate::models::effects::{interval, ProportionsWithIntervals};
use crate::rng::{stream, Purpose};
use rand::RngExt;
use rand_distr::{Distribution, Gamma};
use rayon::prelude::*;

/// Posterior-mean θ for each document. `phi` is topic-major (`K × V`).
pub fn fold_in(docs: &[EncodedDoc], phi: &[f64], num_topics: usize, alpha: &[f64], iterations: usize, burn_in: usize, seed: u64) -> Vec<Vec<f64>> {
    let num_terms = phi.len() / num_topics;
    docs.par_iter()
        .enumerate()
        .map(|(d, doc)| fold_in_one(&known_tokens(doc, num_terms), phi, num_terms, num_topics, alpha, iterations, burn_in, seed, d as u64, None))
        .collect()
}

/// A document's tokens, one word id each, without words outside the model's `num_terms`.
fn known_tokens(doc: &EncodedDoc, num_terms: usize) -> Vec<usize> {
    doc.terms.iter().zip(&doc.counts).flat_map(|(&t, &n)| std::iter::repeat_n(t as usize, n as usize)).filter(|&w| w < num_terms).collect()
}

/// Each document's θ as [`fold_in`] gives it and its `level` interval of every topic's
/// proportion (see the module documentation), from the same chain.
#[allow(clippy::too_many_arguments)]
pub fn fold_in_with_intervals(
    docs: &[EncodedDoc],
    phi: &[f64],
    num_topics: usize,
    alpha: &[f64],
    iterations: usize,
    burn_in: usize,
    seed: u64,
    level: f64,
) -> Vec<ProportionsWithIntervals> {
    let num_terms = phi.len() / num_topics;
    docs.par_iter()
        .enumerate()
        .map(|(d, doc)| {
            let mut draws = Vec::new();
            let theta = fold_in_one(&known_tokens(doc, num_terms), phi, num_terms, num_topics, alpha, iterations, burn_in, seed, d as u64, Some(&mut draws));
            (theta, (0..num_topics).map(|t| interval(&draws.iter().map(|x: &Vec<f64>| x[t]).collect::<Vec<f64>>(), level)).collect())
        })
        .collect()
}

/// One document's chain; with `draws`, a θ drawn from Dirichlet(n_d· + α) at each kept
/// sweep is pushed there (a document without known words draws from Dirichlet(α)).
#[allow(clippy::too_many_arguments)]
fn fold_in_one(
    words: &[usize],
    phi: &[f64],
    num_terms: usize,
    k: usize,
    alpha: &[f64],
    iterations: usize,
    burn_in: usize,
    seed: u64,
    index: u64,
    mut draws: Option<&mut Vec<Vec<f64>>>,
) -> Vec<f64> {
    // The Dirichlet draws' own stream: iteration 1 of the purpose, which the chain
    // (iteration 0) never uses.
    let mut draw_rng = stream(seed, Purpose::Predict, 1, index);
    let mut dirichlet = |n_dk: &[u32]| -> Vec<f64> {
        let g: Vec<f64> = (0..k).map(|t| Gamma::new(f64::from(n_dk[t]) + alpha[t], 1.0).expect("a positive shape").sample(&mut draw_rng)).collect();
        let total: f64 = g.iter().sum::<f64>().max(f64::MIN_POSITIVE);
        g.into_iter().map(|x| x / total).collect()
    };
    if words.is_empty() {
        if let Some(out) = draws.as_deref_mut() {
            let zero = vec![0u32; k];
            out.extend((0..iterations.saturating_sub(burn_in).max(1)).map(|_| dirichlet(&zero)));
        }
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
            if let Some(out) = draws.as_deref_mut() {
                out.push(dirichlet(&n_dk));
            }
        }
    }
    theta.iter_mut().for_each(|x| *x /= kept as f64);
    theta
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A one-token document's posterior is known exactly: z = t with probability
    /// ∝ α_t φ_t,w, and θ | z ~ Dirichlet(α + e_z), so θ₀ is a two-Beta mixture. Every
    /// sweep of a one-token chain draws z exactly, so the D = 4 000 kept draws are
    /// independent: the exact mixture CDF at the reported 2.5 % and 97.5 % ends is
    /// within 4 standard errors (√(p(1 − p)/D) ≈ 0.0025) of 0.025 and 0.975, and the
    /// interval's mean within 4 standard errors (the mixture's sd over √D) of the exact
    /// mean.
    #[test]
    fn intervals_of_a_one_token_document_match_the_exact_posterior() {
        use statrs::function::beta::beta_reg;
        let phi = vec![0.8, 0.2, 0.3, 0.7];
        let alpha = [0.5, 0.5];
        let doc = EncodedDoc { terms: vec![0], counts: vec![1], oov_tokens: 0 };
        let draws = 4_000;
        let out = fold_in_with_intervals(std::slice::from_ref(&doc), &phi, 2, &alpha, draws, 0, 11, 0.95);
        let p0 = 0.4 / 0.55;
        let cdf = |x: f64| p0 * beta_reg(1.5, 0.5, x) + (1.0 - p0) * beta_reg(0.5, 1.5, x);
        let i = out[0].1[0];
        let se = |p: f64| (p * (1.0 - p) / draws as f64).sqrt();
        assert!((cdf(i.lower) - 0.025).abs() < 4.0 * se(0.025), "lower {} at CDF {}", i.lower, cdf(i.lower));
        assert!((cdf(i.upper) - 0.975).abs() < 4.0 * se(0.975), "upper {} at CDF {}", i.upper, cdf(i.upper));
        let mean = p0 * 0.75 + (1.0 - p0) * 0.25;
        // E[θ₀²] of Beta(a, b) is a(a + 1)/((a + b)(a + b + 1)); here a + b = 2.
        let second = p0 * (1.5 * 2.5 / 6.0) + (1.0 - p0) * (0.5 * 1.5 / 6.0);
        let sd = (second - mean * mean).sqrt();
        assert!((i.mean - mean).abs() < 4.0 * sd / (draws as f64).sqrt(), "{} vs {mean}", i.mean);
        // The chain is fold_in's: the same point estimate, bit for bit.
        let point = fold_in(std::slice::from_ref(&doc), &phi, 2, &alpha, draws, 0, 11);
        assert_eq!(point[0], out[0].0);
        assert!((point[0][0] - mean).abs() < 0.02);
        let empty = EncodedDoc { terms: vec![], counts: vec![], oov_tokens: 2 };
        let prior = fold_in_with_intervals(&[empty], &phi, 2, &alpha, 200, 100, 1, 0.9);
        assert!(prior[0].1[0].lower < 0.1 && prior[0].1[0].upper > 0.9, "Dirichlet(0.5, 0.5) is wide: {:?}", prior[0].1[0]);
    }

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
