//! The conditional posterior of one document's topic affinities ξ_d (paper 003, A.2.2).
//!
//! θ_d = softmax of ξ_d over the document's *active* labels only, so the posterior
//! factorises: the active block carries the word likelihood, the label terms and the
//! prior; every inactive coordinate carries only its label term log(1 − σ(ξ)) and its
//! prior, independently of everything else. [`ActiveAffinities`] is the active block:
//!
//! log p(ξ_A) = −l_d Σ_k θ_k B_k + Σ_f w_fd log(Σ_k θ_k β_fk)
//!             + Σ_k [ξ_k − log(1 + e^{ξ_k})] − Σ_k (ξ_k − η_k)² / (2λ²),
//!
//! with B_k = Σ_f β_fk (one vector per scan) and the sum over f only over the words the
//! document contains. [`InactiveAffinity`] is one inactive coordinate; since its
//! conditional does not depend on the document, [`draw_inactive`] draws it exactly.
//! Without observed labels (PCM, and prediction for new documents) the label terms are
//! left out.

use crate::inference::LogDensity;
use nalgebra::DMatrix;
use rand::RngExt;
use rand_distr::{Distribution, StandardNormal};

/// The active block of ξ_d: rates restricted to the document's active labels.
pub struct ActiveAffinities<'a> {
    /// l_d, the document's length over the mean length.
    pub length: f64,
    /// B_k for the active labels.
    pub rate_totals: &'a [f64],
    /// w_fd for each word of the document.
    pub counts: &'a [f64],
    /// β_f restricted to the active labels, one row per word (row-major, words × labels).
    pub beta: &'a [f64],
    /// η restricted to the active labels, and the prior variance λ².
    pub eta: &'a [f64],
    pub lambda2: f64,
    /// Whether the labels' Bernoulli terms log σ(ξ_k) are included (observed labels).
    pub label_terms: bool,
}

pub(crate) fn softmax(xi: &[f64]) -> Vec<f64> {
    let max = xi.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = xi.iter().map(|x| (x - max).exp()).collect();
    let s: f64 = e.iter().sum();
    e.into_iter().map(|x| x / s).collect()
}

/// log(1 + e^x) without overflow.
pub(crate) fn softplus(x: f64) -> f64 {
    if x > 0.0 {
        x + (-x).exp().ln_1p()
    } else {
        x.exp().ln_1p()
    }
}

pub(crate) fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

impl ActiveAffinities<'_> {
    /// θ, the gradient g of the word log-likelihood in θ, and the word log-likelihood.
    fn word_part(&self, theta: &[f64]) -> (Vec<f64>, f64) {
        self.word_terms(theta, true)
    }

    /// As [`Self::word_part`]; without `with_logp` no logarithm is taken (log-likelihood 0).
    fn word_terms(&self, theta: &[f64], with_logp: bool) -> (Vec<f64>, f64) {
        let mut g: Vec<f64> = self.rate_totals.iter().map(|b| -self.length * b).collect();
        let mut logp: f64 = -self.length * theta.iter().zip(self.rate_totals).map(|(t, b)| t * b).sum::<f64>();
        for (w, beta) in self.counts.iter().zip(self.beta.chunks_exact(theta.len())) {
            let s: f64 = theta.iter().zip(beta).map(|(t, b)| t * b).sum();
            if with_logp {
                logp += w * s.ln();
            }
            for (gk, b) in g.iter_mut().zip(beta) {
                *gk += w * b / s;
            }
        }
        (g, if with_logp { logp } else { 0.0 })
    }

    /// The log density (if `with_logp`, else 0) and its gradient.
    fn terms(&self, xi: &[f64], grad: &mut [f64], with_logp: bool) -> f64 {
        let theta = softmax(xi);
        let (g, mut logp) = self.word_terms(&theta, with_logp);
        let m: f64 = theta.iter().zip(&g).map(|(t, x)| t * x).sum();
        for k in 0..xi.len() {
            // Chain rule through the softmax: ∂θ_j/∂ξ_k = θ_j(δ_jk − θ_k).
            grad[k] = theta[k] * (g[k] - m);
            if self.label_terms {
                // Active label: log σ(ξ) = ξ − log(1 + e^ξ).
                if with_logp {
                    logp += xi[k] - softplus(xi[k]);
                }
                grad[k] += 1.0 - sigmoid(xi[k]);
            }
            let d = xi[k] - self.eta[k];
            logp -= 0.5 * d * d / self.lambda2;
            grad[k] -= d / self.lambda2;
        }
        logp
    }

    /// The word part of the log-likelihood at ξ: −l Σ_k θ_k B_k + Σ_f w_f log(θᵀβ_f)
    /// (without the Σ_f w_f log l and log w! constants).
    pub fn word_log_likelihood(&self, xi: &[f64]) -> f64 {
        self.word_terms(&softmax(xi), true).1
    }

    /// The Hessian of the log conditional of the active block.
    pub fn hessian(&self, xi: &[f64]) -> DMatrix<f64> {
        let a = xi.len();
        let theta = softmax(xi);
        let (g, _) = self.word_part(&theta);
        // Q_ki = Σ_f w β_fk β_fi / s_f², the negative θ-Hessian of the word term.
        let mut q = DMatrix::<f64>::zeros(a, a);
        for (w, beta) in self.counts.iter().zip(self.beta.chunks_exact(a)) {
            let s: f64 = theta.iter().zip(beta).map(|(t, b)| t * b).sum();
            let c = w / (s * s);
            for k in 0..a {
                for i in 0..a {
                    q[(k, i)] += c * beta[k] * beta[i];
                }
            }
        }
        let m: f64 = theta.iter().zip(&g).map(|(t, x)| t * x).sum();
        let q_theta: Vec<f64> = (0..a).map(|k| (0..a).map(|i| q[(k, i)] * theta[i]).sum()).collect();
        let tqt: f64 = theta.iter().zip(&q_theta).map(|(t, x)| t * x).sum();
        let mut h = DMatrix::zeros(a, a);
        for k in 0..a {
            for j in 0..a {
                let delta = if k == j { 1.0 } else { 0.0 };
                h[(k, j)] = theta[k] * (delta - theta[j]) * (g[k] - m) + theta[k] * theta[j] * (-q[(k, j)] + q_theta[k] - (g[j] - m) + q_theta[j] - tqt);
            }
            let s = sigmoid(xi[k]);
            if self.label_terms {
                h[(k, k)] -= s * (1.0 - s);
            }
            h[(k, k)] -= 1.0 / self.lambda2;
        }
        h
    }
}

impl LogDensity for ActiveAffinities<'_> {
    fn dim(&self) -> usize {
        self.eta.len()
    }

    fn logp_grad(&self, xi: &[f64], grad: &mut [f64]) -> f64 {
        self.terms(xi, grad, true)
    }

    fn grad(&self, xi: &[f64], grad: &mut [f64]) -> bool {
        self.terms(xi, grad, false);
        grad.iter().sum::<f64>().is_finite()
    }
}

/// The mode of a small dense block by Newton steps (−H shifted until positive definite
/// where needed) with a backtracking line search. Returns the mode and the number of
/// repaired Hessians.
pub fn find_block_mode(target: &ActiveAffinities, start: &[f64], max_iterations: usize, tolerance: f64) -> (Vec<f64>, usize) {
    use crate::inference::newton::newton_ascent;
    use crate::inference::{MassMatrix, Metric};
    let mode = newton_ascent(target, start, max_iterations, tolerance, |x, grad| {
        let mass = MassMatrix::from_negative_hessian(&target.hessian(x));
        let mut step = vec![0.0; x.len()];
        mass.velocity(grad, &mut step);
        (step, mass.repaired)
    });
    (mode.point, mode.repairs)
}

/// One inactive coordinate: log(1 − σ(ξ)) − (ξ − η)²/(2λ²).
pub struct InactiveAffinity {
    pub eta: f64,
    pub lambda2: f64,
}

impl InactiveAffinity {
    /// Second derivative of the log density at ξ.
    pub fn hessian(&self, xi: f64) -> f64 {
        let s = sigmoid(xi);
        -s * (1.0 - s) - 1.0 / self.lambda2
    }
}

impl LogDensity for InactiveAffinity {
    fn dim(&self) -> usize {
        1
    }

    fn logp_grad(&self, xi: &[f64], grad: &mut [f64]) -> f64 {
        let d = xi[0] - self.eta;
        grad[0] = -sigmoid(xi[0]) - d / self.lambda2;
        -softplus(xi[0]) - 0.5 * d * d / self.lambda2
    }
}

/// Exact draws from one inactive coordinate's conditional
/// p(ξ) ∝ σ(−ξ) N(ξ | η, λ²), by rejection, set up once per label and scan (every
/// document's inactive coordinate of a label has this same conditional). Two envelopes
/// bound it: σ(−ξ) ≤ 1 gives the proposal N(η, λ²) accepted with probability σ(−ξ);
/// σ(−ξ) ≤ e^{−ξ} gives N(η − λ², λ²) accepted with probability σ(ξ). The envelope whose
/// proposal mean sits on the side where its acceptance is high is used (η − λ²/2 < 0:
/// the first). If 64 proposals in a row are rejected (only for extreme η, λ²), one
/// random-walk Metropolis step from the current value is taken instead, which leaves
/// the conditional invariant too.
///
/// A squeeze saves the exponential of most acceptance tests: the acceptance
/// probability is monotone in the proposal, so for every proposal on the favourable
/// side of `bound` (two standard deviations past the proposal mean) it is at least
/// `floor`, the probability at `bound`, and a uniform below `floor` accepts without
/// computing it. Every decision is the one the plain test would make with the same
/// proposal and uniform, so the draws are identical, only cheaper.
#[derive(Debug, Clone)]
pub struct InactiveSampler {
    eta: f64,
    lambda2: f64,
    sd: f64,
    low_side: bool,
    mean: f64,
    bound: f64,
    floor: f64,
}

impl InactiveSampler {
    pub fn new(eta: f64, lambda2: f64) -> Self {
        let sd = lambda2.sqrt();
        let low_side = eta - 0.5 * lambda2 < 0.0;
        let mean = if low_side { eta } else { eta - lambda2 };
        let (bound, floor) = if low_side { (mean + 2.0 * sd, sigmoid(-(mean + 2.0 * sd))) } else { (mean - 2.0 * sd, sigmoid(mean - 2.0 * sd)) };
        InactiveSampler { eta, lambda2, sd, low_side, mean, bound, floor }
    }

    /// One draw; returns the new value and whether it was an exact draw.
    pub fn draw<R: rand::Rng + ?Sized>(&self, current: f64, rng: &mut R) -> (f64, bool) {
        for _ in 0..64 {
            let z: f64 = StandardNormal.sample(rng);
            let x = self.mean + self.sd * z;
            let u = rng.random::<f64>();
            let favourable = if self.low_side { x <= self.bound } else { x >= self.bound };
            if favourable && u < self.floor {
                return (x, true);
            }
            let accept = if self.low_side { sigmoid(-x) } else { sigmoid(x) };
            if u < accept {
                return (x, true);
            }
        }
        let target = InactiveAffinity { eta: self.eta, lambda2: self.lambda2 };
        let mut g = [0.0];
        let z: f64 = StandardNormal.sample(rng);
        let proposal = current + self.sd.min(1.0) * z;
        let log_ratio = target.logp_grad(&[proposal], &mut g) - target.logp_grad(&[current], &mut g);
        if rng.random::<f64>().ln() < log_ratio {
            (proposal, false)
        } else {
            (current, false)
        }
    }
}

/// One exact draw from an inactive coordinate's conditional ([`InactiveSampler`]).
pub fn draw_inactive<R: rand::Rng + ?Sized>(eta: f64, lambda2: f64, current: f64, rng: &mut R) -> (f64, bool) {
    InactiveSampler::new(eta, lambda2).draw(current, rng)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inference::finite_diff::check_gradient_and_hessian;
    use crate::rng::{stream, Purpose};
    use rand::RngExt;

    /// A block of three active topics over the nine-word `beta`, the label terms on or off.
    fn three_topic_block(beta: &[f64], label_terms: bool) -> ActiveAffinities<'_> {
        ActiveAffinities { length: 1.3, rate_totals: &[2.0, 1.5, 3.0], counts: &[2.0, 1.0, 4.0], beta, eta: &[-0.5, 0.2, 0.0], lambda2: 2.0, label_terms }
    }

    #[test]
    fn active_block_gradient_and_hessian_match_finite_differences() {
        let beta = [0.3, 0.05, 0.2, 0.01, 0.4, 0.1, 0.2, 0.2, 0.6];
        let mut rng = stream(11, Purpose::Estimate, 0, 0);
        for label_terms in [true, false] {
            let target = three_topic_block(&beta, label_terms);
            for _ in 0..5 {
                let xi: Vec<f64> = (0..3).map(|_| rng.random::<f64>() * 4.0 - 2.0).collect();
                check_gradient_and_hessian(&target, |x| target.hessian(x), &xi);
            }
        }
    }

    /// The gradient-only evaluation HMC uses inside a trajectory gives exactly the
    /// gradient of the full evaluation.
    #[test]
    fn gradient_only_evaluation_matches_the_full_one() {
        let beta = [0.3, 0.05, 0.2, 0.01, 0.4, 0.1, 0.2, 0.2, 0.6];
        let mut rng = stream(13, Purpose::Estimate, 0, 0);
        for label_terms in [true, false] {
            let target = three_topic_block(&beta, label_terms);
            for _ in 0..5 {
                let xi: Vec<f64> = (0..3).map(|_| rng.random::<f64>() * 4.0 - 2.0).collect();
                let (mut full, mut only) = ([0.0; 3], [0.0; 3]);
                assert!(target.logp_grad(&xi, &mut full).is_finite());
                assert!(target.grad(&xi, &mut only));
                assert_eq!(full, only);
            }
        }
    }

    #[test]
    fn inactive_coordinate_gradient_and_hessian_match_finite_differences() {
        let target = InactiveAffinity { eta: -1.0, lambda2: 0.7 };
        for xi in [-3.0, -0.2, 0.0, 1.5, 4.0] {
            check_gradient_and_hessian(&target, |x| DMatrix::from_element(1, 1, target.hessian(x[0])), &[xi]);
        }
    }

    /// The exact inactive draws have the conditional's mean and variance, computed by
    /// quadrature on a fine grid. 200 000 draws: the mean's standard error is
    /// sqrt(var/n); five of them are allowed, and the variance gets five standard errors
    /// of a sample variance (≈ var·sqrt(2/n), slightly more for non-normal tails).
    #[test]
    fn inactive_draws_have_the_conditional_moments() {
        for (eta, lambda2) in [(-3.0, 1.0), (0.5, 2.0), (4.0, 1.5)] {
            let target = InactiveAffinity { eta, lambda2 };
            let mut g = [0.0];
            let grid: Vec<f64> = (0..40_001).map(|i| eta - 12.0 * lambda2.sqrt() + i as f64 * 24.0 * lambda2.sqrt() / 40_000.0).collect();
            let w: Vec<f64> = grid.iter().map(|&x| target.logp_grad(&[x], &mut g).exp()).collect();
            let z: f64 = w.iter().sum();
            let mean: f64 = grid.iter().zip(&w).map(|(x, w)| x * w).sum::<f64>() / z;
            let var: f64 = grid.iter().zip(&w).map(|(x, w)| (x - mean).powi(2) * w).sum::<f64>() / z;
            let mut rng = stream(16, Purpose::Estimate, 0, 0);
            let n = 200_000;
            let draws: Vec<f64> = (0..n).map(|_| draw_inactive(eta, lambda2, eta, &mut rng).0).collect();
            let m = draws.iter().sum::<f64>() / n as f64;
            let v = draws.iter().map(|x| (x - m).powi(2)).sum::<f64>() / n as f64;
            assert!((m - mean).abs() < 5.0 * (var / n as f64).sqrt(), "eta {eta}: mean {m} vs {mean}");
            assert!((v - var).abs() < 5.0 * var * (2.0 / n as f64).sqrt() * 1.5, "eta {eta}: var {v} vs {var}");
        }
    }

    /// The plain rejection sampler (no squeeze), as [`InactiveSampler`] was before it:
    /// the reference the squeezed one must match draw for draw.
    fn draw_inactive_plain(eta: f64, lambda2: f64, current: f64, rng: &mut crate::rng::StreamRng) -> (f64, bool) {
        let sd = lambda2.sqrt();
        let low_side = eta - 0.5 * lambda2 < 0.0;
        let mean = if low_side { eta } else { eta - lambda2 };
        for _ in 0..64 {
            let z: f64 = StandardNormal.sample(rng);
            let x = mean + sd * z;
            let accept = if low_side { sigmoid(-x) } else { sigmoid(x) };
            if rng.random::<f64>() < accept {
                return (x, true);
            }
        }
        let target = InactiveAffinity { eta, lambda2 };
        let mut g = [0.0];
        let z: f64 = StandardNormal.sample(rng);
        let proposal = current + sd.min(1.0) * z;
        let log_ratio = target.logp_grad(&[proposal], &mut g) - target.logp_grad(&[current], &mut g);
        if rng.random::<f64>().ln() < log_ratio {
            (proposal, false)
        } else {
            (current, false)
        }
    }

    /// The squeeze only skips exponentials: from the same random stream the squeezed
    /// sampler returns exactly the plain sampler's values (bit for bit), on both
    /// envelopes and through the Metropolis fallback (η = 40, λ² = 100 rejects 64
    /// proposals in a row).
    #[test]
    fn squeezed_inactive_draws_equal_the_plain_ones() {
        for (eta, lambda2) in [(-6.0, 1.0), (-3.0, 1.0), (0.5, 2.0), (4.0, 1.5), (-0.2, 0.3), (40.0, 100.0)] {
            let sampler = InactiveSampler::new(eta, lambda2);
            let mut a = stream(17, Purpose::Estimate, 0, 0);
            let mut b = stream(17, Purpose::Estimate, 0, 0);
            let (mut x, mut y) = (eta, eta);
            let mut fallbacks = 0;
            for _ in 0..20_000 {
                let (next_x, exact) = sampler.draw(x, &mut a);
                let (next_y, _) = draw_inactive_plain(eta, lambda2, y, &mut b);
                assert_eq!(next_x.to_bits(), next_y.to_bits(), "eta {eta}, lambda2 {lambda2}");
                fallbacks += !exact as usize;
                (x, y) = (next_x, next_y);
            }
            if lambda2 == 100.0 {
                assert!(fallbacks > 0, "the fallback path was not exercised");
            }
        }
    }
}
