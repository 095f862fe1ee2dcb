//! Sufficient statistics of the pair responsibilities, per batch and for the whole graph.
//!
//! Why it exists: memoized variational inference keeps each batch's summary from its
//! last visit and the whole-data total; revisiting batch b replaces its contribution
//! (total − old_b + new_b), so after one full pass the global step always sees every
//! pair exactly once, with no learning rate. Everything the global step and the
//! objective need from the O(N² K) responsibilities fits in O(N K) numbers:
//! - `usage` U_ik (paper 002 eq. 51): the expected number of observed pairs in which
//!   node i acts in community k, as sender or receiver;
//! - `edge_mass` S1_k / `gap_mass` S0_k: the diagonal responsibility η_ijkk summed over
//!   linked / unlinked pairs (the Beta–Bernoulli statistics of community k);
//! - `background_loglik`: Σ_ij (1 − Σ_k η_ijkk) log f(ε, x_ij);
//! - `entropy`: Σ_ij H[q(s_ij, r_ij)], fixed once the batch's responsibilities are.

use serde::{Deserialize, Serialize};

/// Statistics of a set of observed pairs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub num_communities: usize,
    /// U, N × K row-major.
    pub usage: Vec<f64>,
    pub edge_mass: Vec<f64>,
    pub gap_mass: Vec<f64>,
    pub background_loglik: f64,
    pub entropy: f64,
}

impl Summary {
    pub fn zeros(num_nodes: usize, num_communities: usize) -> Self {
        let k = num_communities;
        Summary { num_communities: k, usage: vec![0.0; num_nodes * k], edge_mass: vec![0.0; k], gap_mass: vec![0.0; k], background_loglik: 0.0, entropy: 0.0 }
    }

    /// self += sign · other.
    fn accumulate(&mut self, other: &Summary, sign: f64) {
        assert_eq!(self.usage.len(), other.usage.len(), "summaries of different shapes");
        for (a, b) in self.usage.iter_mut().zip(&other.usage) {
            *a += sign * b;
        }
        for (a, b) in self.edge_mass.iter_mut().zip(&other.edge_mass) {
            *a += sign * b;
        }
        for (a, b) in self.gap_mass.iter_mut().zip(&other.gap_mass) {
            *a += sign * b;
        }
        self.background_loglik += sign * other.background_loglik;
        self.entropy += sign * other.entropy;
    }

    pub fn add(&mut self, other: &Summary) {
        self.accumulate(other, 1.0);
    }

    /// Sums over sets of pairs are never negative; subtraction can leave −1e-17-sized
    /// round-off, which would make θ = U + α E[β] non-positive for an emptied community.
    fn clamp_counts(&mut self) {
        for x in self.usage.iter_mut().chain(self.edge_mass.iter_mut()).chain(self.gap_mass.iter_mut()) {
            *x = x.max(0.0);
        }
    }
}

/// The memo: each batch's last summary and their running total.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Memo {
    batches: Vec<Option<Summary>>,
    total: Summary,
}

impl Memo {
    pub fn new(num_batches: usize, num_nodes: usize, num_communities: usize) -> Self {
        Memo { batches: vec![None; num_batches], total: Summary::zeros(num_nodes, num_communities) }
    }

    /// Replace batch `b`'s contribution: total − old + new.
    pub fn replace(&mut self, b: usize, new: Summary) {
        if let Some(old) = self.batches[b].take() {
            self.total.accumulate(&old, -1.0);
        }
        self.total.add(&new);
        self.total.clamp_counts();
        self.batches[b] = Some(new);
    }

    /// The whole-data summary (partial until every batch has been visited once).
    pub fn total(&self) -> &Summary {
        &self.total
    }

    /// Have all batches been visited?
    pub fn complete(&self) -> bool {
        self.batches.iter().all(Option::is_some)
    }

    /// Whether this memo (decoded from a checkpoint) has `num_batches` batches and every
    /// summary in it is shaped for `num_nodes` nodes and `num_communities` communities.
    pub fn fits(&self, num_batches: usize, num_nodes: usize, num_communities: usize) -> bool {
        let shaped = |s: &Summary| {
            s.num_communities == num_communities
                && s.usage.len() == num_nodes * num_communities
                && s.edge_mass.len() == num_communities
                && s.gap_mass.len() == num_communities
        };
        self.batches.len() == num_batches && shaped(&self.total) && self.batches.iter().flatten().all(shaped)
    }
}
