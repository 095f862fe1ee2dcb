//! One Metropolis–Hastings update of each of a word's untouched log rates.
//!
//! Why it exists: a node k that no document holding the word has active (see
//! [`super::touched`]) has the conditional
//!
//! p(μ_k | rest) ∝ N(μ_k | m_k, s_k²) · exp(−c_k e^{μ_k}),
//!
//! where N(m_k, s_k²) is the tree prior's conditional given the node's parent and
//! children (precision P = 1/τ²_parent + n_children/τ²_k, mean (μ_parent/τ²_parent +
//! Σ_children μ_c/τ²_k)/P; the root uses N(ψ, γ²) in place of its parent) and c_k =
//! Σ_d l_d θ_dk the word-free linear term. Proposing μ* from N(m_k, s_k²) independently
//! of the current value, the Metropolis–Hastings ratio is the likelihood ratio
//! exp(−c_k (e^{μ*} − e^{μ_k})): one normal draw and one exponential per node (e^{μ_k}
//! is the caller's β of the current value), and an exact draw (always accepted) where
//! c_k = 0. Each step leaves p(μ_k | rest) invariant, so a sweep over the untouched
//! nodes in any fixed order does too.
//!
//! The acceptance test u < e^r (r = log ratio < 0) is decided by the bounds
//! 1 + r ≤ e^r ≤ 1 + r + r²/2 where they settle it, so the usual small r needs no third
//! exponential; the decisions are those of the plain test.
//!
//! The acceptance is high because an untouched node's expected count c_k β_k is small
//! (the word never occurs in the documents it loads on), so the likelihood factor is
//! nearly flat where the prior conditional puts its mass.

use crate::inference::fast_exp;
use rand::RngExt;
use rand_distr::{Distribution, StandardNormal};

/// The tree and the prior's scale parameters, all over nodes.
pub struct UntouchedPrior<'a> {
    pub parent: &'a [Option<usize>],
    pub children: &'a [Vec<usize>],
    pub psi: f64,
    pub gamma2: f64,
    /// 1/τ² of every node as a parent (read only at nodes with children).
    pub inverse_tau2: &'a [f64],
}

/// Metropolis–Hastings steps taken (nodes with c_k > 0) and accepted.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct UntouchedStats {
    pub proposals: usize,
    pub accepted: usize,
}

/// Update every node of `nodes` in order, in place in `mu` (over all nodes). `beta`
/// holds e^μ of each node of `nodes` on entry and after its update on return.
/// `linear` is c over nodes.
pub fn update_untouched<R: rand::Rng + ?Sized>(
    nodes: &[u32],
    prior: &UntouchedPrior,
    linear: &[f64],
    mu: &mut [f64],
    beta: &mut [f64],
    rng: &mut R,
) -> UntouchedStats {
    let mut stats = UntouchedStats::default();
    // Leaves under the same parent share their proposal's precision and spread; the
    // nodes come parents first, so siblings are consecutive.
    let mut leaf_parent = usize::MAX;
    let mut leaf_sd = 0.0;
    for &node in nodes {
        let k = node as usize;
        let children = &prior.children[k];
        let (mean, sd) = match (prior.parent[k], children.is_empty()) {
            (Some(p), true) => {
                if p != leaf_parent {
                    leaf_parent = p;
                    leaf_sd = 1.0 / prior.inverse_tau2[p].sqrt();
                }
                (mu[p], leaf_sd)
            }
            (parent, _) => {
                let (up_precision, up_mean) = match parent {
                    Some(p) => (prior.inverse_tau2[p], mu[p]),
                    None => (1.0 / prior.gamma2, prior.psi),
                };
                let (mut precision, mut weighted) = (up_precision, up_precision * up_mean);
                if !children.is_empty() {
                    let down = prior.inverse_tau2[k];
                    precision += down * children.len() as f64;
                    weighted += down * children.iter().map(|&c| mu[c]).sum::<f64>();
                }
                (weighted / precision, 1.0 / precision.sqrt())
            }
        };
        let z: f64 = StandardNormal.sample(rng);
        let proposal = mean + sd * z;
        let proposed_beta = fast_exp(proposal);
        let c = linear[k];
        if c == 0.0 {
            mu[k] = proposal;
            beta[k] = proposed_beta;
            continue;
        }
        stats.proposals += 1;
        if accept(-c * (proposed_beta - beta[k]), rng) {
            stats.accepted += 1;
            mu[k] = proposal;
            beta[k] = proposed_beta;
        }
    }
    stats
}

/// A Metropolis–Hastings decision with log ratio `r`: u < e^r for a uniform u, with the
/// exponential computed only where 1 + r ≤ e^r ≤ 1 + r + r²/2 (r ≤ 0) leave it open.
fn accept<R: rand::Rng + ?Sized>(r: f64, rng: &mut R) -> bool {
    if r >= 0.0 {
        return true;
    }
    let u = rng.random::<f64>();
    if u < 1.0 + r {
        return true;
    }
    if u >= 1.0 + r + 0.5 * r * r {
        return false;
    }
    u < r.exp()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inference::geweke::mean_and_variance_of_mean;
    use crate::rng::{stream, Purpose};

    /// Exact moments by quadrature: root 0 (fixed), untouched node 1 under it with
    /// untouched children 2 and 3 (leaf 3 never active: c = 0). The joint conditional
    /// of (μ1, μ2, μ3) given μ0 is N-tree × exp(−c1 e^{μ1} − c2 e^{μ2}); μ3 integrates
    /// out analytically (its conditional given μ1 is N(μ1, τ²_1)), so the marginal of
    /// (μ1, μ2) is a 2-D density computed on a grid, and E[μ3] = E[μ1], E[μ3²] =
    /// E[μ1²] + τ²_1. Repeated sweeps must reproduce the means and second moments:
    /// z-scores with batch-means standard errors (50 batches of 2 000 sweeps), |z| < 4.5
    /// (about 1e-4 chance of a false alarm over the 6 scores). A missing or wrong
    /// likelihood ratio moves E[μ1] by about 0.5, hundreds of standard errors.
    /// The squeezed decision equals the plain u < e^r for the same uniform, over log
    /// ratios from tiny to large.
    #[test]
    fn squeezed_decisions_equal_the_plain_test() {
        let mut rng = stream(72, Purpose::Estimate, 0, 0);
        for i in 0..200_000 {
            let r = -(10f64).powf(-6.0 + 8.0 * (i as f64 / 200_000.0));
            let mut copy = rng.clone();
            let u = copy.random::<f64>();
            assert_eq!(accept(r, &mut rng), u < r.exp(), "r = {r}, u = {u}");
        }
    }

    #[test]
    fn sweeps_reproduce_the_conditional_moments_by_quadrature() {
        let parent = [None, Some(0), Some(1), Some(1)];
        let children = vec![vec![1], vec![2, 3], vec![], vec![]];
        let tau2 = [0.8, 0.5, 1.0, 1.0];
        let mu0 = 0.3;
        let linear = [0.0, 2.0, 5.0, 0.0];
        let inverse_tau2: Vec<f64> = tau2.iter().map(|t| 1.0 / t).collect();
        let prior = UntouchedPrior { parent: &parent, children: &children, psi: 0.0, gamma2: 1.0, inverse_tau2: &inverse_tau2 };
        // Quadrature of (μ1, μ2) on [−8, 5]².
        let log_density =
            |m1: f64, m2: f64| -> f64 { -0.5 * (m1 - mu0).powi(2) / tau2[0] - 0.5 * (m2 - m1).powi(2) / tau2[1] - linear[1] * m1.exp() - linear[2] * m2.exp() };
        let (lo, hi, steps) = (-8.0, 5.0, 1300);
        let h = (hi - lo) / steps as f64;
        let mut moments = [0.0f64; 5]; // mass, E m1, E m1², E m2, E m2²
        for i in 0..=steps {
            for j in 0..=steps {
                let (a, b) = (lo + i as f64 * h, lo + j as f64 * h);
                let w = log_density(a, b).exp();
                moments[0] += w;
                moments[1] += w * a;
                moments[2] += w * a * a;
                moments[3] += w * b;
                moments[4] += w * b * b;
            }
        }
        let (e1, e11, e2, e22) = (moments[1] / moments[0], moments[2] / moments[0], moments[3] / moments[0], moments[4] / moments[0]);
        let want = [e1, e11, e2, e22, e1, e11 + tau2[1]];

        let mut rng = stream(71, Purpose::Estimate, 0, 0);
        let mut mu = vec![mu0, 0.0, 0.0, 0.0];
        let mut beta: Vec<f64> = mu.iter().map(|&m| fast_exp(m)).collect();
        let mut chains = vec![Vec::new(); 6];
        let mut stats = UntouchedStats::default();
        for sweep in 0..101_000 {
            let s = update_untouched(&[1, 2, 3], &prior, &linear, &mut mu, &mut beta, &mut rng);
            assert_eq!(mu[0], mu0, "the fixed node moved");
            assert!(beta[1..].iter().zip(&mu[1..]).all(|(b, &m)| *b == fast_exp(m)), "β is e^μ after the update");
            if sweep < 1_000 {
                continue;
            }
            stats.proposals += s.proposals;
            stats.accepted += s.accepted;
            for (chain, x) in chains.iter_mut().zip([mu[1], mu[1] * mu[1], mu[2], mu[2] * mu[2], mu[3], mu[3] * mu[3]]) {
                chain.push(x);
            }
        }
        assert_eq!(stats.proposals, 200_000, "nodes 1 and 2 take MH steps, node 3 an exact draw");
        for (i, (chain, want)) in chains.iter().zip(want).enumerate() {
            let (mean, var) = mean_and_variance_of_mean(chain);
            let z = (mean - want) / var.sqrt();
            assert!(z.abs() < 4.5, "moment {i}: chain {mean}, quadrature {want}, z = {z:.2}");
        }
        let acceptance = stats.accepted as f64 / stats.proposals as f64;
        assert!(acceptance > 0.3, "acceptance {acceptance}");
    }
}
