//! The local step: pair responsibilities in O(K) per pair (paper 002, eqs. 49–51).
//!
//! Why it exists: the pair (i, j) has K² joint states (s_ij, r_ij) with
//! q(s = ℓ, r = m) = η_ijℓm ∝ π̃_iℓ π̃_jm f_ℓm(x_ij), where π̃_ik = exp E[log π_ik],
//! f_kk(x) = exp E[log φ_k^x (1 − φ_k)^(1−x)] and f_ℓm(x) = ε^x (1 − ε)^(1−x) for ℓ ≠ m.
//! Because every off-diagonal state shares one likelihood, only the K diagonal entries
//! are ever formed:
//! - eq. 49: Z_ij = Σ_k π̃_ik π̃_jk f_kk + f_ε (π̃_i π̃_j − Σ_k π̃_ik π̃_jk), π̃_i = Σ_k π̃_ik;
//! - eq. 50: Σ_{m≠ℓ} η_ijℓm = f_ε π̃_iℓ (π̃_j − π̃_jℓ) / Z_ij, so the sender's marginal
//!   is η_ijℓℓ plus that, and symmetrically for the receiver;
//! - eq. 51: U_iℓ sums those marginals over the pairs where i sends and where it receives.
//!
//! The entropy of η needs no K² sum either: log η_ijℓm = log π̃_iℓ + log π̃_jm +
//! log f_ℓm − log Z_ij, so Σ_ij H[η_ij] = Σ_ij log Z_ij − Σ_ik U_ik E[log π_ik] −
//! Σ_k (S1_k E[log φ_k] + S0_k E[log(1 − φ_k)]) − Σ_ij η_ij,bg log f_ε(x_ij), from the
//! batch's own statistics and the weights the responsibilities were computed with.
//!
//! Parallel and thread-count independent: phase 1 runs over the batch's owner nodes (their
//! sender marginals, the link statistics, log Z), phase 2 over every node as a receiver
//! (recomputing Z_ij, O(K), rather than scattering into shared rows); each task writes
//! only its own row and results are reduced in node order.

use super::pairs::PairLayout;
use super::state::GlobalState;
use super::summary::Summary;
use crate::graph::Graph;
use rayon::prelude::*;

/// Everything the local step reads from the global parameters, computed once per batch.
#[derive(Debug, Clone)]
pub struct LocalWeights {
    pub num_communities: usize,
    /// E[log π_ik] for k ≤ K, N × K.
    pub log_pi: Vec<f64>,
    /// π̃_ik = exp E[log π_ik], N × K.
    pub pi_tilde: Vec<f64>,
    /// π̃_i = Σ_k π̃_ik.
    pub pi_tilde_sum: Vec<f64>,
    /// E[log f_kk(x)] and f_kk(x), indexed `[x as usize][k]`.
    pub log_link: [Vec<f64>; 2],
    pub link: [Vec<f64>; 2],
    /// log f_ε(x) = log(1 − ε), log ε; and f_ε(x).
    pub log_background: [f64; 2],
    pub background: [f64; 2],
}

impl LocalWeights {
    pub fn new(state: &GlobalState, epsilon: f64) -> Self {
        let k = state.num_communities;
        let elog = state.expected_log_pi();
        let log_pi: Vec<f64> = elog.chunks(k + 1).flat_map(|row| row[..k].iter().copied()).collect();
        let pi_tilde: Vec<f64> = log_pi.iter().map(|x| x.exp()).collect();
        let pi_tilde_sum = pi_tilde.chunks(k).map(|r| r.iter().sum()).collect();
        let (on, off) = state.expected_log_link();
        let link = [off.iter().map(|x| x.exp()).collect(), on.iter().map(|x| x.exp()).collect()];
        let log_background = [(-epsilon).ln_1p(), epsilon.ln()];
        LocalWeights { num_communities: k, log_pi, pi_tilde, pi_tilde_sum, log_link: [off, on], link, log_background, background: log_background.map(f64::exp) }
    }

    fn pi(&self, i: usize) -> &[f64] {
        let k = self.num_communities;
        &self.pi_tilde[i * k..(i + 1) * k]
    }

    /// Eq. 49 for the pair (sender i, receiver j) with observation x: fills `diag` with the
    /// normalised diagonal responsibilities η_ijkk and returns the pair's normaliser.
    #[inline]
    pub fn pair_diagonal(&self, i: usize, j: usize, x: bool, diag: &mut [f64]) -> PairNorm {
        let (pi, pj) = (self.pi(i), self.pi(j));
        let f = &self.link[x as usize];
        let fe = self.background[x as usize];
        let mut same = 0.0; // Σ_k π̃_ik π̃_jk
        let mut fore = 0.0; // Σ_k π̃_ik π̃_jk f_kk
        for k in 0..self.num_communities {
            let both = pi[k] * pj[k];
            same += both;
            diag[k] = both * f[k];
            fore += diag[k];
        }
        // Σ_{ℓ≠m} π̃_iℓ π̃_jm ≥ 0; the subtraction may round below zero.
        let off_mass = (self.pi_tilde_sum[i] * self.pi_tilde_sum[j] - same).max(0.0);
        let z = fore + fe * off_mass;
        let inv = 1.0 / z;
        diag.iter_mut().for_each(|d| *d *= inv);
        PairNorm { z, background: fe * off_mass * inv, scale: fe * inv }
    }

    /// Sender marginals Σ_m η_ijℓm (eq. 50 plus the diagonal), added into `row`.
    #[inline]
    pub fn add_sender_marginal(&self, i: usize, j: usize, diag: &[f64], norm: &PairNorm, row: &mut [f64]) {
        let (pi, pj) = (self.pi(i), self.pi(j));
        let sj = self.pi_tilde_sum[j];
        for k in 0..self.num_communities {
            row[k] += diag[k] + norm.scale * pi[k] * (sj - pj[k]).max(0.0);
        }
    }

    /// Receiver marginals Σ_ℓ η_ijℓm, added into `col`.
    #[inline]
    pub fn add_receiver_marginal(&self, i: usize, j: usize, diag: &[f64], norm: &PairNorm, col: &mut [f64]) {
        self.add_sender_marginal(j, i, diag, norm, col)
    }
}

/// The normaliser of one pair's responsibilities.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairNorm {
    /// Z_ij (eq. 49).
    pub z: f64,
    /// Total off-diagonal ("background") responsibility, 1 − Σ_k η_ijkk.
    pub background: f64,
    /// f_ε / Z_ij, the factor of eq. 50.
    pub scale: f64,
}

/// What one owner node's pairs contribute in phase 1.
struct OwnerStats {
    sender: Vec<f64>,
    edge_mass: Vec<f64>,
    gap_mass: Vec<f64>,
    background_loglik: f64,
    log_z: f64,
}

/// Responsibilities of batch `b`'s pairs under `w`, summarised.
pub fn local_step(graph: &Graph, layout: &PairLayout, b: usize, w: &LocalWeights) -> Summary {
    let k = w.num_communities;
    let n = layout.num_nodes();
    let owners = layout.batch(b);

    // Phase 1: each owner's pairs, as sender.
    let per_owner: Vec<OwnerStats> = owners
        .clone()
        .into_par_iter()
        .map(|i| {
            let mut s = OwnerStats { sender: vec![0.0; k], edge_mass: vec![0.0; k], gap_mass: vec![0.0; k], background_loglik: 0.0, log_z: 0.0 };
            let mut diag = vec![0.0; k];
            for j in (0..n).filter(|&j| layout.owns(i, j)) {
                let x = graph.has_edge(i, j);
                let norm = w.pair_diagonal(i, j, x, &mut diag);
                w.add_sender_marginal(i, j, &diag, &norm, &mut s.sender);
                let mass = if x { &mut s.edge_mass } else { &mut s.gap_mass };
                mass.iter_mut().zip(&diag).for_each(|(m, d)| *m += d);
                s.background_loglik += norm.background * w.log_background[x as usize];
                s.log_z += norm.z.ln();
            }
            s
        })
        .collect();

    // Phase 2: every node as the receiver of the batch's pairs.
    let mut usage = vec![0.0; n * k];
    usage.par_chunks_mut(k).enumerate().for_each(|(j, col)| {
        let mut diag = vec![0.0; k];
        for i in owners.clone().filter(|&i| layout.owns(i, j)) {
            let norm = w.pair_diagonal(i, j, graph.has_edge(i, j), &mut diag);
            w.add_receiver_marginal(i, j, &diag, &norm, col);
        }
    });

    let mut summary = Summary::zeros(n, k);
    let mut log_z = 0.0;
    for (i, s) in owners.zip(&per_owner) {
        usage[i * k..(i + 1) * k].iter_mut().zip(&s.sender).for_each(|(u, x)| *u += x);
        summary.edge_mass.iter_mut().zip(&s.edge_mass).for_each(|(a, x)| *a += x);
        summary.gap_mass.iter_mut().zip(&s.gap_mass).for_each(|(a, x)| *a += x);
        summary.background_loglik += s.background_loglik;
        log_z += s.log_z;
    }
    summary.usage = usage;

    let usage_term: f64 = summary.usage.iter().zip(&w.log_pi).map(|(u, l)| if *u == 0.0 { 0.0 } else { u * l }).sum();
    let link_term: f64 = (0..k).map(|c| summary.edge_mass[c] * w.log_link[1][c] + summary.gap_mass[c] * w.log_link[0][c]).sum();
    summary.entropy = log_z - usage_term - link_term - summary.background_loglik;
    summary
}
