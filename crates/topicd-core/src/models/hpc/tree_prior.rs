//! The Gaussian diffusion of a word's log rates down the label tree (paper 003, §2.1):
//! μ_root ~ N(ψ, γ²) and μ_child ~ N(μ_parent, τ²_parent).
//!
//! Nodes are numbered 0 (the implicit corpus root) and 1..=K (the labels). The prior
//! precision Λ is tree-structured: every edge adds its precision to both ends' diagonal
//! entries and subtracts it from the two off-diagonal entries.
//!
//! The same prior also serves a *block* of nodes conditioned on the others
//! ([`TreePrior::on_block`]): a word's touched subtree, which holds the root and every
//! ancestor of its nodes, numbered in its own indices. Its nodes' outside neighbours
//! are children hanging off the block; each edge (t, u) to a fixed child u adds
//! −½ q (μ_u − μ_t)², i.e. −½ q μ_t² + q μ_u μ_t up to a constant, so the block's
//! conditional prior is the tree prior on the block plus a per-node "boundary" quadratic
//! (precision a_t = Σ q, linear coefficient b_t = Σ q μ_u): the principal submatrix Λ_TT
//! and the conditional mean's linear term, tree-structured again.

use crate::inference::SparseSymmetric;
use nalgebra::DMatrix;

/// The tree and the variances of one word's prior.
#[derive(Debug, Clone)]
pub struct TreePrior<'a> {
    /// Parent of each node; `parent[0]` is `None` (the root), labels have `Some`.
    pub parent: &'a [Option<usize>],
    pub psi: f64,
    pub gamma2: f64,
    /// 1/τ² of the edge above each node (1/γ² at node 0), computed once so that the
    /// gradient, evaluated many times per HMC draw, divides nothing.
    edge_precision: Vec<f64>,
    /// Per node, (a_t, b_t) of the edges to fixed children outside the block: the term
    /// −½ a_t μ_t² + b_t μ_t. Empty when the prior covers the whole tree.
    boundary: Vec<(f64, f64)>,
}

impl<'a> TreePrior<'a> {
    /// The prior with τ² of each node as a parent (used by the edges to its children).
    pub fn new(parent: &'a [Option<usize>], psi: f64, gamma2: f64, tau2: &[f64]) -> Self {
        let edge_precision = parent.iter().map(|p| match p {
            Some(p) => 1.0 / tau2[*p],
            None => 1.0 / gamma2,
        });
        TreePrior { parent, psi, gamma2, edge_precision: edge_precision.collect(), boundary: Vec::new() }
    }

    /// The conditional prior of a block of nodes given the rest. `parent` is over the
    /// block's own indices (index 0 must be the tree's root, with prior N(ψ, γ²)),
    /// `edge_precision` the precision of the edge above each block node (unused at the
    /// root), `boundary` each block node's (a_t, b_t) from its children outside the
    /// block (see the module doc).
    pub fn on_block(parent: &'a [Option<usize>], psi: f64, gamma2: f64, edge_precision: Vec<f64>, boundary: Vec<(f64, f64)>) -> Self {
        assert_eq!(edge_precision.len(), parent.len());
        assert!(boundary.is_empty() || boundary.len() == parent.len());
        TreePrior { parent, psi, gamma2, edge_precision, boundary }
    }
}

/// The owned buffers of a [`TreePrior`], kept between words by the rate block.
#[derive(Debug, Default)]
pub struct PriorBuffers {
    pub(super) edge_precision: Vec<f64>,
    pub(super) boundary: Vec<(f64, f64)>,
}

impl TreePrior<'_> {
    /// The prior's buffers, for [`super::touched::WordBlock::prior_reusing`].
    pub fn into_buffers(self) -> PriorBuffers {
        PriorBuffers { edge_precision: self.edge_precision, boundary: self.boundary }
    }

    pub fn num_nodes(&self) -> usize {
        self.parent.len()
    }

    /// log N(μ | ψ1, Λ⁻¹) up to a constant; adds its gradient into `grad`.
    pub fn logp_grad(&self, mu: &[f64], grad: &mut [f64]) -> f64 {
        let d0 = mu[0] - self.psi;
        let mut logp = -0.5 * d0 * d0 / self.gamma2;
        grad[0] -= d0 / self.gamma2;
        for (c, (p, &q)) in self.parent.iter().zip(&self.edge_precision).enumerate() {
            if let Some(p) = *p {
                let diff = mu[c] - mu[p];
                logp -= 0.5 * q * diff * diff;
                grad[c] -= q * diff;
                grad[p] += q * diff;
            }
        }
        for ((g, &m), &(a, b)) in grad.iter_mut().zip(mu).zip(&self.boundary) {
            logp += (b - 0.5 * a * m) * m;
            *g += b - a * m;
        }
        logp
    }

    /// The prior Hessian −Λ, added into a dense `h`.
    pub fn add_hessian(&self, h: &mut DMatrix<f64>) {
        h[(0, 0)] -= 1.0 / self.gamma2;
        for (c, (p, &q)) in self.parent.iter().zip(&self.edge_precision).enumerate() {
            if let Some(p) = *p {
                h[(c, c)] -= q;
                h[(p, p)] -= q;
                h[(c, p)] += q;
                h[(p, c)] += q;
            }
        }
        for (t, &(a, _)) in self.boundary.iter().enumerate() {
            h[(t, t)] -= a;
        }
    }

    /// Λ (the prior precision, the negative prior Hessian), added into a sparse `m`
    /// whose pattern holds the tree edges.
    pub fn add_precision(&self, m: &mut SparseSymmetric) {
        m.add_diag(0, 1.0 / self.gamma2);
        for (c, (p, &q)) in self.parent.iter().zip(&self.edge_precision).enumerate() {
            if let Some(p) = *p {
                m.add_diag(c, q);
                m.add_diag(p, q);
                m.add_off(c, p, -q);
            }
        }
        for (t, &(a, _)) in self.boundary.iter().enumerate() {
            m.add_diag(t, a);
        }
    }
}
