//! The conditional posterior of one word's log rates μ_f (paper 003, A.2.1):
//!
//! log p(μ_f | rest) = −Σ_d l_d θ_dᵀβ_f + Σ_d w_fd log(θ_dᵀβ_f) + log N(μ_f | ψ1, Λ⁻¹),
//! β_f = exp(μ_f).
//!
//! Only documents containing the word enter the log term; the linear term is one
//! vector c = Σ_d l_d θ_d shared by every word of a scan. θ_d is sparse: a document
//! touches only its active labels. Node 0 is the corpus root, which no θ_d loads on.

use super::tree_prior::TreePrior;
use crate::inference::LogDensity;
use nalgebra::DMatrix;

/// One document containing the word: its count and its sparse θ_d over nodes.
#[derive(Debug, Clone)]
pub struct WordInDocument {
    pub count: f64,
    /// (node, θ_dk) for the document's active labels.
    pub theta: Vec<(usize, f64)>,
}

/// The conditional of μ_f as a log density.
pub struct RateConditional<'a> {
    pub docs: &'a [WordInDocument],
    /// c = Σ_d l_d θ_d over nodes (c_0 = 0).
    pub linear: &'a [f64],
    pub prior: &'a TreePrior,
}

impl RateConditional<'_> {
    fn likelihood_grad(&self, beta: &[f64], grad: &mut [f64]) -> f64 {
        let mut logp = 0.0;
        for (k, (&c, &b)) in self.linear.iter().zip(beta).enumerate() {
            logp -= c * b;
            grad[k] = -c * b;
        }
        for doc in self.docs {
            let s: f64 = doc.theta.iter().map(|&(k, t)| t * beta[k]).sum();
            logp += doc.count * s.ln();
            for &(k, t) in &doc.theta {
                grad[k] += doc.count * t * beta[k] / s;
            }
        }
        logp
    }

    /// The Hessian of the log conditional at μ: −ΘᵀWΘ∘ββᵀ + G − Λ (dense; the nodes a
    /// word's documents touch make it sparse in practice).
    pub fn hessian(&self, mu: &[f64]) -> DMatrix<f64> {
        let n = mu.len();
        let beta: Vec<f64> = mu.iter().map(|m| m.exp()).collect();
        let mut grad = vec![0.0; n];
        self.likelihood_grad(&beta, &mut grad);
        let mut h = DMatrix::zeros(n, n);
        for k in 0..n {
            h[(k, k)] = grad[k];
        }
        for doc in self.docs {
            let s: f64 = doc.theta.iter().map(|&(k, t)| t * beta[k]).sum();
            let wt = doc.count / (s * s);
            for &(k, tk) in &doc.theta {
                for &(j, tj) in &doc.theta {
                    h[(k, j)] -= wt * tk * beta[k] * tj * beta[j];
                }
            }
        }
        self.prior.add_hessian(&mut h);
        h
    }
}

/// The conditional mode by Newton steps with a backtracking line search. Where −H is
/// not positive definite (away from the mode the chain-rule term G can make it
/// indefinite) it is shifted along the diagonal first. Returns the mode and the number
/// of repaired Hessians.
pub fn find_mode(cond: &RateConditional, start: &[f64], max_iterations: usize, tolerance: f64) -> (Vec<f64>, usize) {
    let n = start.len();
    let mut mu = start.to_vec();
    let mut grad = vec![0.0; n];
    let mut logp = cond.logp_grad(&mu, &mut grad);
    let mut repairs = 0;
    for _ in 0..max_iterations {
        let mut m = -cond.hessian(&mu);
        let mut shift = 0.0;
        let chol = loop {
            if let Some(c) = m.clone().cholesky() {
                break c;
            }
            shift = if shift == 0.0 { 1e-6 * m.diagonal().amax().max(1e-8) } else { shift * 10.0 };
            for i in 0..n {
                m[(i, i)] += shift;
            }
        };
        repairs += (shift > 0.0) as usize;
        let step = chol.solve(&nalgebra::DVector::from_column_slice(&grad));
        let mut t = 1.0;
        let mut next_grad = vec![0.0; n];
        loop {
            let candidate: Vec<f64> = mu.iter().zip(step.iter()).map(|(m, s)| m + t * s).collect();
            let next = cond.logp_grad(&candidate, &mut next_grad);
            if next.is_finite() && next >= logp {
                let gain = next - logp;
                mu = candidate;
                logp = next;
                grad.copy_from_slice(&next_grad);
                if gain < tolerance {
                    return (mu, repairs);
                }
                break;
            }
            t *= 0.5;
            if t < 1e-12 {
                return (mu, repairs);
            }
        }
    }
    (mu, repairs)
}

impl LogDensity for RateConditional<'_> {
    fn dim(&self) -> usize {
        self.prior.num_nodes()
    }

    fn logp_grad(&self, mu: &[f64], grad: &mut [f64]) -> f64 {
        let beta: Vec<f64> = mu.iter().map(|m| m.exp()).collect();
        self.likelihood_grad(&beta, grad) + self.prior.logp_grad(mu, grad)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inference::finite_diff::check_gradient_and_hessian;
    use crate::rng::{stream, Purpose};
    use rand::RngExt;

    /// Root 0; labels 1, 2 under the root; 3, 4 under 1.
    fn setup() -> (Vec<WordInDocument>, Vec<f64>, TreePrior) {
        let docs = vec![
            WordInDocument { count: 3.0, theta: vec![(1, 0.7), (2, 0.3)] },
            WordInDocument { count: 1.0, theta: vec![(3, 1.0)] },
            WordInDocument { count: 5.0, theta: vec![(3, 0.2), (4, 0.5), (2, 0.3)] },
        ];
        let linear = vec![0.0, 1.1, 0.9, 1.4, 0.6];
        let prior = TreePrior { parent: vec![None, Some(0), Some(0), Some(1), Some(1)], psi: -1.0, gamma2: 4.0, tau2: vec![0.5, 0.2, 1.0, 1.0, 1.0] };
        (docs, linear, prior)
    }

    #[test]
    fn gradient_and_hessian_match_finite_differences() {
        let (docs, linear, prior) = setup();
        let cond = RateConditional { docs: &docs, linear: &linear, prior: &prior };
        let mut rng = stream(9, Purpose::Estimate, 0, 0);
        for _ in 0..5 {
            let mu: Vec<f64> = (0..cond.dim()).map(|_| rng.random::<f64>() * 3.0 - 2.0).collect();
            check_gradient_and_hessian(&cond, |x| cond.hessian(x), &mu);
        }
    }

    /// HMC with the negative Hessian at the mode as mass matrix accepts nearly always
    /// on this small, well-conditioned conditional, and its draws stay finite.
    #[test]
    fn hmc_on_the_rate_conditional_accepts() {
        use crate::inference::{hmc_step, MassMatrix};
        let (docs, linear, prior) = setup();
        let cond = RateConditional { docs: &docs, linear: &linear, prior: &prior };
        let (mut mu, _) = find_mode(&cond, &vec![-1.0; cond.dim()], 100, 1e-12);
        let mut g = vec![0.0; mu.len()];
        cond.logp_grad(&mu, &mut g);
        assert!(g.iter().all(|x| x.abs() < 1e-5), "not at the mode: {g:?}");
        let mass = MassMatrix::from_negative_hessian(&cond.hessian(&mu));
        let mut rng = stream(10, Purpose::Estimate, 0, 0);
        let mut accepted = 0;
        for _ in 0..500 {
            accepted += hmc_step(&cond, &mut mu, &mass, 0.3, 5, &mut rng).accepted as usize;
            assert!(mu.iter().all(|m| m.is_finite()));
        }
        assert!(accepted > 400, "accepted {accepted} of 500");
    }
}
