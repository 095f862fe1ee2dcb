//! The global variational parameters and their coordinate-ascent updates.
//!
//! Why it exists: after every memoized batch the global step refits, from the whole-data
//! summary, (1) each node's membership posterior q(π_i) = Dir(θ_i1, …, θ_iK, θ_i,rem),
//! (2) each community's link posterior q(φ_k) = Beta(λ1_k, λ0_k) and (3) the top-level
//! sticks q(u_k) = Beta(ρ_k ω_k, (1 − ρ_k) ω_k). Each update maximises the objective of
//! [`super::objective`] in its own block with the others fixed, so the objective never
//! decreases:
//! - θ_ik = U_ik + α E[β_k] (k ≤ K), θ_i,rem = α E[β_rem] (the usage U has no remainder
//!   entry: pair states range over the K instantiated communities only);
//! - λ1_k = τ1 + S1_k, λ0_k = τ0 + S0_k, with S1_k (S0_k) the diagonal responsibility of
//!   community k summed over linked (unlinked) pairs;
//! - (ρ, ω) by [`crate::inference::stick_posterior::optimise_stick`] with the nodes as groups,
//!   which never returns a lower stick objective than its start; θ and the sticks are
//!   alternated [`STICK_ROUNDS`] times, as bnpy's `HDPAssortativeMMSB` does.

use super::summary::Summary;
use crate::inference::stick_posterior::{optimise_stick, StickPosterior, StickStats};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use statrs::function::gamma::digamma;

/// θ ↔ sticks alternations in one global step.
pub const STICK_ROUNDS: usize = 2;

/// q(π), q(φ) and q(u).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GlobalState {
    pub num_nodes: usize,
    /// Truncation K.
    pub num_communities: usize,
    pub stick: StickPosterior,
    /// θ, N × (K + 1) row-major, the remainder last in each row.
    pub theta: Vec<f64>,
    /// λ1 (pseudo-links) and λ0 (pseudo-non-links) of each community, K each.
    pub link_on: Vec<f64>,
    pub link_off: Vec<f64>,
}

/// What one stick refit reported.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StickReport {
    pub converged: bool,
    pub fell_back: bool,
}

impl GlobalState {
    /// Row width of θ and E[log π]: K + 1.
    pub fn width(&self) -> usize {
        self.num_communities + 1
    }

    pub fn theta_row(&self, i: usize) -> &[f64] {
        let w = self.width();
        &self.theta[i * w..(i + 1) * w]
    }

    /// E[log π_ik] = ψ(θ_ik) − ψ(Σ_k θ_ik), N × (K + 1), the remainder last.
    pub fn expected_log_pi(&self) -> Vec<f64> {
        let w = self.width();
        let mut out = vec![0.0; self.theta.len()];
        out.par_chunks_mut(w).zip(self.theta.par_chunks(w)).for_each(|(o, t)| {
            let total = digamma(t.iter().sum::<f64>());
            for (o, &x) in o.iter_mut().zip(t) {
                *o = digamma(x) - total;
            }
        });
        out
    }

    /// E[π_ik] = θ_ik / Σ_k θ_ik for one node, remainder last.
    pub fn expected_pi(&self, i: usize) -> Vec<f64> {
        let t = self.theta_row(i);
        let total: f64 = t.iter().sum();
        t.iter().map(|x| x / total).collect()
    }

    /// (E[log φ_k], E[log(1 − φ_k)]) for every community.
    pub fn expected_log_link(&self) -> (Vec<f64>, Vec<f64>) {
        self.link_on
            .iter()
            .zip(&self.link_off)
            .map(|(&a, &b)| {
                let total = digamma(a + b);
                (digamma(a) - total, digamma(b) - total)
            })
            .unzip()
    }

    /// Posterior mean link probability of each community.
    pub fn link_probability(&self) -> Vec<f64> {
        self.link_on.iter().zip(&self.link_off).map(|(a, b)| a / (a + b)).collect()
    }

    /// θ = U + α E[β] for every node (the optimum given the sticks).
    pub fn update_memberships(&mut self, usage: &[f64], alpha: f64) {
        let (k, w) = (self.num_communities, self.width());
        let prior: Vec<f64> = self.stick.expected_beta().iter().map(|b| alpha * b).collect();
        self.theta.par_chunks_mut(w).zip(usage.par_chunks(k)).for_each(|(t, u)| {
            for c in 0..k {
                t[c] = u[c] + prior[c];
            }
            t[k] = prior[k];
        });
    }

    /// λ = τ + S (the optimum given the responsibilities).
    pub fn update_links(&mut self, summary: &Summary, tau1: f64, tau0: f64) {
        self.link_on = summary.edge_mass.iter().map(|s| tau1 + s).collect();
        self.link_off = summary.gap_mass.iter().map(|s| tau0 + s).collect();
    }

    /// What the nodes contribute to the stick objective: G = N and Σ_i E[log π_i].
    pub fn stick_stats(&self) -> StickStats {
        let w = self.width();
        let elog = self.expected_log_pi();
        let mut sum_log_pi = vec![0.0; w];
        for row in elog.chunks(w) {
            for (s, x) in sum_log_pi.iter_mut().zip(row) {
                *s += x;
            }
        }
        StickStats { num_groups: self.num_nodes as f64, sum_log_pi }
    }

    /// The whole global step from a whole-data summary: links, then θ and the sticks
    /// alternated [`STICK_ROUNDS`] times, ending with θ optimal for the final sticks.
    pub fn global_step(&mut self, summary: &Summary, alpha: f64, gamma: f64, tau1: f64, tau0: f64) -> StickReport {
        self.update_links(summary, tau1, tau0);
        self.update_memberships(&summary.usage, alpha);
        let mut report = StickReport { converged: true, fell_back: false };
        for _ in 0..STICK_ROUNDS {
            let fit = optimise_stick(&self.stick_stats(), alpha, gamma, &self.stick);
            report.converged &= fit.converged;
            report.fell_back |= fit.fell_back;
            self.stick = fit.posterior;
            self.update_memberships(&summary.usage, alpha);
        }
        report
    }
}
