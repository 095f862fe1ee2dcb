//! Label probabilities and topic proportions for new documents (paper 003, §3.3).
//!
//! Why it exists: with the rates and hyperparameters at their posterior means, a new
//! document's affinities ξ* are the mode of p(w | ξ) p(ξ | η, λ²) with θ = softmax(ξ)
//! over *all* topics (its labels are unknown). The mode is found by L-BFGS with the
//! analytic gradient ([`DenseAffinities`]): the K × K Hessian is never formed, so
//! hundreds of labels cost O(K · words) per evaluation. P(label k) = logistic(ξ*_k).

use super::dense_affinities::{prediction_isa, DenseAffinities};
use super::model::HpcModel;
use crate::inference::lbfgs::{minimize, LbfgsOptions};

/// ξ* for one document: `words` as (term, count) from
/// [`super::label_posterior::known_words`], `rates` their
/// [`super::label_posterior::document_rates`].
pub fn predict_affinities(model: &HpcModel, words: &[(usize, f64)], rates: &[f64]) -> Vec<f64> {
    if words.is_empty() {
        return model.eta.clone();
    }
    let length: f64 = words.iter().map(|w| w.1).sum::<f64>() / model.mean_length;
    let counts: Vec<f64> = words.iter().map(|w| w.1).collect();
    let target =
        DenseAffinities { length, rate_totals: model.rate_totals(), counts: &counts, rates, eta: &model.eta, lambda2: model.lambda2, isa: prediction_isa() };
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
