//! Intervals on HPC's and PCM's predicted topic proportions: draws from the Laplace
//! approximation of a new document's affinities at their mode.
//!
//! Why it exists: HPC predicts by a mode, not by samples: ξ* maximises p(w | ξ) p(ξ | η,
//! λ²) and θ = softmax(ξ*) ([`super::predict`]), and the model keeps no draws of a new
//! document's ξ. Its uncertainty comes from the curvature at the mode: ξ ~ N(ξ*,
//! (−H)⁻¹), H the Hessian of that log density at ξ*, and each draw's softmax is a draw of
//! θ. The density is the active block's over every topic without label terms
//! ([`ActiveAffinities`] with `label_terms: false`, whose gradient and Hessian are checked
//! against finite differences), so the Hessian is the one the training sampler's HMC
//! mass matrix uses. Where −H is not positive definite (ξ* a saddle the optimiser
//! stopped on), it is shifted along the diagonal until it is ([`MassMatrix`]), which
//! narrows the draws.
//!
//! An approximation on two counts, both stated in the answer's documentation: the
//! density is not Gaussian in ξ (θ = softmax(ξ) under a Gaussian prior), and the rates
//! are fixed at their posterior means (the fit's own uncertainty about them is not
//! propagated).
//!
//! Determinism: document d's draws come from stream `(seed, Predict, 2, d)`, which
//! neither the mode search (deterministic) nor LDA's fold-in (iterations 0 and 1) use.

use super::affinity::{softmax, ActiveAffinities};
use super::model::HpcModel;
use crate::inference::{MassMatrix, Metric};
use crate::models::effects::{interval, Interval};
use crate::rng::{stream, Purpose};

/// Laplace draws per document: the 2.5 % quantile of 400 draws rests on 10 of them.
pub const LAPLACE_DRAWS: usize = 400;

/// One document's `level` interval of every topic's proportion. `words`, `rates` and
/// `xi` are those of the document's prediction
/// ([`super::label_posterior::known_words`], [`super::label_posterior::document_rates`],
/// [`super::predict::predict_affinities`]); `index` keys its random stream.
pub fn laplace_intervals(model: &HpcModel, words: &[(usize, f64)], rates: &[f64], xi: &[f64], seed: u64, index: u64, level: f64) -> Vec<Interval> {
    let counts: Vec<f64> = words.iter().map(|w| w.1).collect();
    let density = ActiveAffinities {
        length: counts.iter().sum::<f64>() / model.mean_length,
        rate_totals: model.rate_totals(),
        counts: &counts,
        beta: rates,
        eta: &model.eta,
        lambda2: model.lambda2,
        label_terms: false,
    };
    let thetas = laplace_draws(&density, xi, &mut stream(seed, Purpose::Predict, 2, index), LAPLACE_DRAWS);
    (0..xi.len()).map(|t| interval(&thetas.iter().map(|theta| theta[t]).collect::<Vec<f64>>(), level)).collect()
}

/// `n` draws of θ = softmax(ξ), ξ ~ N(ξ*, (−H)⁻¹), H the Hessian of `density` at `xi`.
fn laplace_draws<R: rand::Rng + ?Sized>(density: &ActiveAffinities, xi: &[f64], rng: &mut R, n: usize) -> Vec<Vec<f64>> {
    // M = −H: a momentum p ~ N(0, M) turned into a velocity M⁻¹p is N(0, M⁻¹), the
    // Laplace approximation's spread around ξ*.
    let metric = MassMatrix::from_negative_hessian(&density.hessian(xi));
    let (mut p, mut step) = (vec![0.0; xi.len()], vec![0.0; xi.len()]);
    (0..n)
        .map(|_| {
            metric.sample_momentum(rng, &mut p);
            metric.velocity(&p, &mut step);
            softmax(&xi.iter().zip(&step).map(|(x, s)| x + s).collect::<Vec<f64>>())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The draws' ξ have the Laplace distribution: on a two-topic density, log(θ₁/θ₀) =
    /// ξ₁ − ξ₀ (softmax's shift cancels) has mean ξ*₁ − ξ*₀ within 4 standard errors and
    /// variance (e₁ − e₀)ᵀ(−H)⁻¹(e₁ − e₀) within 4 standard errors of a sample variance
    /// (√(2/n) relative, n = 40 000).
    #[test]
    fn draws_spread_as_the_inverse_negative_hessian() {
        use nalgebra::DMatrix;
        let (length, rate_totals, counts, beta, eta, lambda2) = (1.0, [2.0, 1.5], [3.0, 2.0], [0.3, 0.05, 0.1, 0.4], [0.2, -0.1], 1.5);
        let density = ActiveAffinities { length, rate_totals: &rate_totals, counts: &counts, beta: &beta, eta: &eta, lambda2, label_terms: false };
        let xi = [0.4, -0.3];
        let h: DMatrix<f64> = density.hessian(&xi);
        let cov = (-h.clone()).try_inverse().expect("invertible");
        // Var(ξ₁ − ξ₀) = c₀₀ + c₁₁ − 2c₀₁.
        let want = cov[(0, 0)] + cov[(1, 1)] - 2.0 * cov[(0, 1)];
        assert!(!MassMatrix::from_negative_hessian(&h).repaired, "a mode's −H is positive definite here");
        let n = 40_000;
        let ratios: Vec<f64> =
            laplace_draws(&density, &xi, &mut stream(3, Purpose::Estimate, 0, 0), n).iter().map(|theta| (theta[1] / theta[0]).ln()).collect();
        let mean = ratios.iter().sum::<f64>() / n as f64;
        let var = ratios.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        assert!((mean - (xi[1] - xi[0])).abs() < 4.0 * (want / n as f64).sqrt(), "mean {mean} against {}", xi[1] - xi[0]);
        assert!((var / want - 1.0).abs() < 4.0 * (2.0 / n as f64).sqrt(), "variance {var} against {want}");
    }
}
