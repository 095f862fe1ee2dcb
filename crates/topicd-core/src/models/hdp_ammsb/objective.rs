//! The whole-data variational objective (the ELBO, with the HDP surrogate bound).
//!
//! Why it exists: memoized inference is coordinate ascent on one objective; computing it
//! exactly after every pass is how a fit reports progress and how the tests check that
//! no step ever lowers it. With q(s, r) fixed by the last local step of each batch
//! (summarised in [`Summary`]) and the current globals:
//!
//! L = Σ_k [ c_B(τ1, τ0) − c_B(λ1_k, λ0_k) + (S1_k + τ1 − λ1_k) E log φ_k
//!           + (S0_k + τ0 − λ0_k) E log(1 − φ_k) ]                        (links)
//!   + Σ_ij (1 − Σ_k η_ijkk) log f_ε(x_ij)                                 (background)
//!   + Σ_ij H[q(s_ij, r_ij)]                                               (entropy)
//!   + Σ_i [ −c_D(θ_i) + Σ_{k≤K} (U_ik − θ_ik) E log π_ik − θ_i,rem E log π_i,rem ]
//!   + L_stick(ρ, ω)  (crate::inference::stick_posterior::stick_objective, groups = nodes)
//!
//! with c_B(a, b) = log Γ(a + b) − log Γ(a) − log Γ(b) and c_D(θ) = log Γ(Σθ) − Σ log Γ(θ).
//! The stick part holds E[log p(u)] − E[log q(u)], the surrogate of the Dirichlet
//! normaliser and the α E[β_k] part of E[log p(π_i | αβ)]; the "−1" parts of log p(π) and
//! log q(π) cancel. The updates of [`super::state`] and [`super::local`] are the exact
//! block maximisers of this L.

use super::params::AmmsbParams;
use super::state::GlobalState;
use super::summary::Summary;
use crate::inference::stick_posterior::stick_objective;
use rayon::prelude::*;
use statrs::function::gamma::{digamma, ln_gamma};

/// The objective's terms, kept apart for diagnostics and tests.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ObjectiveTerms {
    pub links: f64,
    pub background: f64,
    pub entropy: f64,
    pub memberships: f64,
    pub stick: f64,
}

impl ObjectiveTerms {
    pub fn total(&self) -> f64 {
        self.links + self.background + self.entropy + self.memberships + self.stick
    }
}

/// log normaliser of Beta(a, b) (as a density's log Γ(a + b) − log Γ(a) − log Γ(b)).
pub fn c_beta(a: f64, b: f64) -> f64 {
    ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b)
}

/// log normaliser of Dir(θ).
pub fn c_dir(theta: &[f64]) -> f64 {
    ln_gamma(theta.iter().sum()) - theta.iter().map(|&t| ln_gamma(t)).sum::<f64>()
}

/// L at the current globals for the responsibilities summarised in `summary`.
pub fn objective(state: &GlobalState, summary: &Summary, p: &AmmsbParams) -> ObjectiveTerms {
    let k = state.num_communities;
    let w = state.width();
    let prior = c_beta(p.tau1, p.tau0);
    let links = (0..k)
        .map(|c| {
            let (a, b) = (state.link_on[c], state.link_off[c]);
            let total = digamma(a + b);
            let (elog_on, elog_off) = (digamma(a) - total, digamma(b) - total);
            prior - c_beta(a, b) + (summary.edge_mass[c] + p.tau1 - a) * elog_on + (summary.gap_mass[c] + p.tau0 - b) * elog_off
        })
        .sum();
    let per_node: Vec<f64> = state
        .theta
        .par_chunks(w)
        .zip(summary.usage.par_chunks(k))
        .map(|(t, u)| {
            let total = digamma(t.iter().sum::<f64>());
            let mut v = -c_dir(t);
            for c in 0..w {
                let used = if c < k { u[c] } else { 0.0 };
                v += (used - t[c]) * (digamma(t[c]) - total);
            }
            v
        })
        .collect();
    let memberships = per_node.iter().sum();
    let stick = stick_objective(&state.stick.rho, &state.stick.omega, &state.stick_stats(), p.alpha, p.gamma);
    ObjectiveTerms { links, background: summary.background_loglik, entropy: summary.entropy, memberships, stick }
}
