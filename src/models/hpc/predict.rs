//! Label probabilities and topic proportions for new documents (paper 003, §3.3).
//!
//! Why it exists: with the rates and hyperparameters at their posterior means, a new
//! document's affinities ξ* are the mode of p(w | ξ) p(ξ | η, λ²) with θ = softmax(ξ)
//! over *all* topics (its labels are unknown). The mode is found by L-BFGS with the
//! analytic gradient: the K × K Hessian is never formed, so hundreds of labels cost
//! O(K · words) per evaluation. P(label k) = logistic(ξ*_k).

use super::affinity::ActiveAffinities;
use super::model::HpcModel;
use crate::inference::lbfgs::{minimize, LbfgsOptions};
use crate::inference::LogDensity;

/// ξ* for one document given as (term, count) pairs.
pub fn predict_affinities(model: &HpcModel, words: impl Iterator<Item = (usize, f64)>) -> Vec<f64> {
    let k = model.labels.len();
    let n = k + 1;
    let words: Vec<(usize, f64)> = words.filter(|&(w, _)| w < model.num_terms).collect();
    if words.is_empty() {
        return model.eta.clone();
    }
    let length: f64 = words.iter().map(|w| w.1).sum::<f64>() / model.mean_length;
    let counts: Vec<f64> = words.iter().map(|w| w.1).collect();
    let mut beta = Vec::with_capacity(words.len() * k);
    for &(w, _) in &words {
        beta.extend(model.mu[w * n + 1..(w + 1) * n].iter().map(|&m| (m as f64).exp()));
    }
    let target = ActiveAffinities {
        length,
        rate_totals: model.rate_totals(),
        counts: &counts,
        beta: &beta,
        eta: &model.eta,
        lambda2: model.lambda2,
        label_terms: false,
    };
    // θ to about 1e-4 is all a caller reads (proportions, or logistic(ξ*) against a
    // threshold); the tighter 1e-6 / 1e-12 cost prediction speed for nothing visible.
    let options = LbfgsOptions { max_iterations: 500, gradient_tolerance: 1e-4, function_tolerance: 1e-9, ..LbfgsOptions::default() };
    let result = minimize(
        |x, g| {
            let logp = target.logp_grad(x, g);
            g.iter_mut().for_each(|v| *v = -*v);
            -logp
        },
        &model.eta,
        &options,
    );
    result.x
}
