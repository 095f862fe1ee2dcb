//! Topic proportions (and the paper's label probabilities) for new documents (paper 003,
//! §3.3).
//!
//! Why it exists: with the rates and hyperparameters at their posterior means, a new
//! document's affinities ξ* are the mode of p(w | ξ) p(ξ | η, λ²) with θ = softmax(ξ)
//! over *all* topics (its labels are unknown). The mode is found by L-BFGS with the
//! analytic gradient ([`DenseAffinities`]): the K × K Hessian is never formed, so
//! hundreds of labels cost O(K · words) per evaluation. P(label k) = logistic(ξ*_k).
//!
//! The density is not log-concave in ξ (θ = softmax(ξ) under a Gaussian prior), and on
//! long documents it has several modes: θ on a label or on its parent, on one set of
//! labels or another. A single start at η found a mode worse by more than 0.01 nats than
//! the best of four starts for 11 % of linuxdoc's test documents (by 12 nats or more for
//! 5 %; docs/decisions/0026-hpc-mode-two-starts.md). So the mode is sought from two
//! starts and the higher kept: η with a first step scaled by the prior's variance λ², and
//! the candidate explanation the words favour most (the label set of the training
//! documents, or the single label, with the highest prior times likelihood), its labels
//! raised above the rest. Both are deterministic, so the answer does not depend on the
//! thread count.

use super::dense_affinities::{prediction_isa, DenseAffinities};
use super::label_posterior::Evidence;
use super::model::HpcModel;
use crate::inference::lbfgs::{minimize, LbfgsOptions, LbfgsResult};

/// How far above the largest η the favoured explanation's labels start: e³ ≈ 20 times
/// the weight of any other label, so θ starts with most of its mass on them.
const EXPLANATION_LIFT: f64 = 3.0;

/// ξ* for one document: `words` as (term, count) from
/// [`super::label_posterior::known_words`], `rates` their
/// [`super::label_posterior::document_rates`], `evidence` their [`Evidence`].
pub fn predict_affinities(model: &HpcModel, words: &[(usize, f64)], rates: &[f64], evidence: &Evidence) -> Vec<f64> {
    if words.is_empty() {
        return model.eta.clone();
    }
    let counts: Vec<f64> = words.iter().map(|w| w.1).collect();
    let target = mode_density(model, &counts, rates);
    let starts = [(model.eta.clone(), Some(model.lambda2)), (explanation_start(model, evidence), None)];
    best_mode(&target, &starts).x
}

/// The density whose mode is ξ*: a document's word `counts` (in the order of its
/// `rates`) under the model's rates and affinity prior.
pub(crate) fn mode_density<'a>(model: &'a HpcModel, counts: &'a [f64], rates: &'a [f64]) -> DenseAffinities<'a> {
    let length = counts.iter().sum::<f64>() / model.mean_length;
    DenseAffinities { length, rate_totals: model.rate_totals(), counts, rates, eta: &model.eta, lambda2: model.lambda2, isa: prediction_isa() }
}

/// The L-BFGS mode of `target` from each (start, first step scale), the one of highest
/// density kept (the first on a tie).
pub(crate) fn best_mode(target: &DenseAffinities, starts: &[(Vec<f64>, Option<f64>)]) -> LbfgsResult {
    // θ to about 1e-4 is all a caller reads (proportions, or logistic(ξ*) against a
    // threshold); the tighter 1e-6 / 1e-12 cost prediction speed for nothing visible.
    let options = LbfgsOptions { max_iterations: 500, gradient_tolerance: 1e-4, function_tolerance: 1e-9, ..LbfgsOptions::default() };
    let negative_log_density = |x: &[f64], g: &mut [f64]| {
        let logp = target.logp_grad(x, g);
        g.iter_mut().for_each(|v| *v = -*v);
        -logp
    };
    starts
        .iter()
        .map(|(x0, scale)| minimize(negative_log_density, x0, &LbfgsOptions { first_step_scale: *scale, ..options.clone() }))
        .reduce(|best, next| if next.value < best.value { next } else { best })
        .expect("at least one start")
}

/// η with the labels of the explanation the words favour most raised by
/// [`EXPLANATION_LIFT`] above the largest η: among the model's candidate label sets
/// (log π_S + log p(w | S), θ even over S, untempered), or among the single labels by
/// their likelihood when the model has no sets (the mode predictor's and PCM's models).
pub(crate) fn explanation_start(model: &HpcModel, evidence: &Evidence) -> Vec<f64> {
    let sets = &model.prediction.sets;
    let favoured: Vec<usize> = if sets.is_empty() {
        vec![argmax(&evidence.single)]
    } else {
        let scores: Vec<f64> = evidence.sets.iter().zip(sets).map(|(ll, set)| ll + set.log_prior).collect();
        sets[argmax(&scores)].labels.iter().map(|&j| j as usize).collect()
    };
    let top = model.eta.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut start = model.eta.clone();
    for j in favoured {
        start[j] = top + EXPLANATION_LIFT;
    }
    start
}

/// Index of the largest value (the first of equals; NaN never wins).
fn argmax(values: &[f64]) -> usize {
    values.iter().enumerate().fold((0, f64::NEG_INFINITY), |(bi, bv), (i, &v)| if v > bv { (i, v) } else { (bi, bv) }).0
}
