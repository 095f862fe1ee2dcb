//! What HPC's sampler keeps between scans (Algorithm 1's caches): each word's touched
//! subtree and sparsity pattern, the likelihood Hessians at the last mode refit, and
//! β = e^μ with its column sums as the last rate block left them.
//!
//! Why it exists: the caches outlive a scan and a checkpoint carries part of them
//! ([`Caches::resumed`]); the scan itself ([`super::sampler`]) reads and writes them.

use super::data::HpcData;
use super::rates::Curvature;
use super::touched::{topological_order, touched_subtree, WordBlock};
use crate::inference::{fast_exp, minimum_degree_order, SparsePattern};
use crate::models::RestoreError;
use nalgebra::DMatrix;
use rayon::prelude::*;
use std::collections::HashMap;

/// −(likelihood Hessian) of one word's block at the last mode refit, as its two sparse parts (see
/// [`Caches::likelihood_hessians`]).
pub type RateHessian = (Vec<f64>, Vec<f64>);

/// What the sampler keeps between scans: per-word sparsity patterns and the cached
/// likelihood Hessians of Algorithm 1.
pub struct Caches {
    pub(super) curvature: Curvature,
    /// The tree's nodes, parents first.
    pub(super) topological: Vec<u32>,
    /// Each word's touched subtree (the nodes its rate HMC runs on), parents first.
    pub(super) blocks: Vec<Vec<u32>>,
    /// With [`Curvature::Full`], each word's pattern over its block's indices; with
    /// [`Curvature::TreeDiagonal`] none (the block's tree pattern is built per scan by
    /// [`SparsePattern::for_tree`], in O(block size)).
    pub(super) patterns: Vec<SparsePattern>,
    /// −(likelihood Hessian of the block's conditional) at the last mode, per word, as
    /// sparse parts.
    pub(super) rate_hessians: Vec<(Vec<f64>, Vec<f64>)>,
    /// −(likelihood Hessian) of the active block at the last mode, per document.
    pub(super) affinity_hessians: Vec<DMatrix<f64>>,
    /// β = exp(μ), word-major V × N, as the last rate block left μ (empty before it
    /// ran), and its column sums B_k = Σ_f β_fk. Written once per scan and read by the
    /// affinity block, the log-likelihood and the estimands, so no other pass
    /// exponentiates the V × N log rates or allocates a matrix of them.
    pub(super) beta: Vec<f64>,
    pub(super) rate_totals: Vec<f64>,
    /// Whether `beta` is e^μ of the state, as the last rate block left it (caches
    /// belong to one chain, whose μ only that block changes): the untouched nodes'
    /// updates read their current e^μ from it instead of exponentiating again.
    pub(super) beta_is_current: bool,
}

/// A word's pattern before ordering: its fingerprint, block size and edges.
type PatternKey = (u64, usize, Vec<(usize, usize)>);

/// Each word's elimination pattern: the tree edges inside its block and the
/// co-occurrence pairs (all inside it), in block indices, ordered by minimum degree.
/// Words with the same block size and edges share one ordering, computed once: in a PCM
/// fit every document holds every topic, so every word's pattern is the same dense one,
/// and ordering it once per word was a third of a short fit's time (an edit's refit).
fn word_patterns(data: &HpcData, topological: &[u32], blocks: &[Vec<u32>]) -> Vec<SparsePattern> {
    let keys: Vec<PatternKey> = blocks
        .par_iter()
        .enumerate()
        .map(|(f, nodes)| {
            let block = WordBlock::new(&data.parent, topological, nodes);
            let edges: Vec<(usize, usize)> = data
                .word_hessian_edges(f)
                .into_iter()
                .filter_map(|(a, b)| {
                    let (la, lb) = (block.local_of[a], block.local_of[b]);
                    (la != u32::MAX && lb != u32::MAX).then_some((la as usize, lb as usize))
                })
                .collect();
            (fingerprint(nodes.len(), &edges), nodes.len(), edges)
        })
        .collect();
    // Distinct (size, edges) by fingerprint, compared in full on a match.
    let mut by_fingerprint: HashMap<u64, Vec<usize>> = HashMap::new();
    let mut firsts: Vec<usize> = Vec::new();
    let index: Vec<usize> = (0..keys.len())
        .map(|f| {
            let (print, n, edges) = &keys[f];
            let candidates = by_fingerprint.entry(*print).or_default();
            if let Some(&i) = candidates.iter().find(|&&i| keys[firsts[i]].1 == *n && keys[firsts[i]].2 == *edges) {
                return i;
            }
            firsts.push(f);
            candidates.push(firsts.len() - 1);
            firsts.len() - 1
        })
        .collect();
    let patterns: Vec<SparsePattern> = firsts
        .par_iter()
        .map(|&f| {
            let (_, n, edges) = &keys[f];
            SparsePattern::new(&minimum_degree_order(*n, edges.iter().copied()), edges.iter().copied())
        })
        .collect();
    index.into_iter().map(|i| patterns[i].clone()).collect()
}

/// A cheap hash of a block's size and edges (FNV-1a over their numbers).
fn fingerprint(n: usize, edges: &[(usize, usize)]) -> u64 {
    let mix = |h: u64, x: usize| (h ^ x as u64).wrapping_mul(0x0000_0100_0000_01b3);
    edges.iter().fold(mix(0xcbf2_9ce4_8422_2325, n), |h, &(a, b)| mix(mix(h, a), b))
}

impl Caches {
    pub fn new(data: &HpcData, curvature: Curvature) -> Self {
        let topological = topological_order(&data.parent);
        let blocks: Vec<Vec<u32>> = (0..data.num_terms()).into_par_iter().map(|f| touched_subtree(data, f, &topological)).collect();
        let patterns: Vec<SparsePattern> = match curvature {
            Curvature::Full => word_patterns(data, &topological, &blocks),
            Curvature::TreeDiagonal => Vec::new(),
        };
        Caches {
            curvature,
            topological,
            blocks,
            patterns,
            rate_hessians: vec![(Vec::new(), Vec::new()); data.num_terms()],
            affinity_hessians: vec![DMatrix::zeros(0, 0); data.num_docs()],
            beta: Vec::new(),
            rate_totals: Vec::new(),
            beta_is_current: false,
        }
    }

    /// β = exp(μ) (word-major) and B_k = Σ_f β_fk as of the last rate block, or as of
    /// `mu` if no rate block has run with these caches (then computed here).
    pub fn rates(&mut self, mu: &[f64], num_nodes: usize) -> (&[f64], &[f64]) {
        if self.beta.len() != mu.len() {
            self.beta = mu.par_iter().map(|&m| fast_exp(m)).collect();
            self.rate_totals = column_sums(&self.beta, num_nodes);
        }
        (&self.beta, &self.rate_totals)
    }

    /// Caches for a chain continued from a checkpoint at state `mu`, with the likelihood
    /// Hessians a running chain's caches held ([`Caches::likelihood_hessians`];
    /// documents' as column-major values). The word blocks and patterns are rebuilt from
    /// the data; β is e^μ of the state, which is exactly what the last rate block left
    /// (it writes e^μ of every value it sets, [`fast_exp`] as here, and nothing else
    /// changes μ), so it is recomputed rather than stored. Every Hessian must have its
    /// word's (document's) shape: a resumed chain has run at least one scan, and scan 1
    /// refits every mode.
    pub fn resumed(
        data: &HpcData,
        curvature: Curvature,
        mu: &[f64],
        rate_hessians: Vec<(Vec<f64>, Vec<f64>)>,
        affinity_hessians: Vec<Vec<f64>>,
    ) -> Result<Self, RestoreError> {
        const WHAT: &str = "HPC state's cached Hessians";
        let mut caches = Caches::new(data, curvature);
        if rate_hessians.len() != data.num_terms() || affinity_hessians.len() != data.num_docs() || mu.len() != data.num_terms() * data.num_nodes() {
            return Err(RestoreError::Mismatch { what: WHAT, part: "words and documents" });
        }
        if let Some(f) = (0..data.num_terms()).find(|&f| (rate_hessians[f].0.len(), rate_hessians[f].1.len()) != caches.rate_hessian_shape(data, f)) {
            return Err(RestoreError::inconsistent(WHAT, format!("word {f}'s Hessian does not have its block's shape")));
        }
        let affinity: Vec<DMatrix<f64>> = affinity_hessians
            .into_iter()
            .enumerate()
            .map(|(d, values)| {
                let a = data.active.row(d).len();
                (values.len() == a * a)
                    .then(|| DMatrix::from_vec(a, a, values))
                    .ok_or_else(|| RestoreError::inconsistent(WHAT, format!("document {d}'s Hessian is not {a} × {a}")))
            })
            .collect::<Result<_, _>>()?;
        caches.rate_hessians = rate_hessians;
        caches.affinity_hessians = affinity;
        caches.rates(mu, data.num_nodes());
        caches.beta_is_current = true;
        Ok(caches)
    }

    /// The (diagonal, off-diagonal) lengths of word `f`'s cached likelihood Hessian once
    /// a mode was fitted: its block's pattern (nothing for a word without a block).
    fn rate_hessian_shape(&self, data: &HpcData, f: usize) -> (usize, usize) {
        let nodes = &self.blocks[f];
        match self.curvature {
            Curvature::Full => (self.patterns[f].dim(), self.patterns[f].nnz()),
            // The tree's edges inside the block: every block node but the root has its
            // parent in the block (blocks are closed under ancestors).
            Curvature::TreeDiagonal => (nodes.len(), nodes.iter().filter(|&&node| data.parent[node as usize].is_some()).count()),
        }
    }

    /// The likelihood Hessians cached at the last mode refit, by word and by document:
    /// what a checkpoint must carry of the caches (see [`Caches::resumed`]).
    pub fn likelihood_hessians(&self) -> (&[RateHessian], &[DMatrix<f64>]) {
        (&self.rate_hessians, &self.affinity_hessians)
    }

    /// The documents' cached likelihood Hessians, for the affinity block of a rank
    /// (whose β is not these caches').
    pub(crate) fn affinity_hessians_mut(&mut self) -> &mut [DMatrix<f64>] {
        &mut self.affinity_hessians
    }

    /// Stored non-zeros of all word factors (a measure of the rate block's cost).
    pub fn factor_nonzeros(&self) -> usize {
        match self.curvature {
            Curvature::Full => self.patterns.iter().map(|p| p.nnz() + p.dim()).sum(),
            // A tree over m nodes: m diagonal and m − 1 off-diagonal entries.
            Curvature::TreeDiagonal => self.blocks.iter().map(|b| (2 * b.len()).saturating_sub(1)).sum(),
        }
    }
}

/// Column sums of a row-major matrix with `n` columns, summed in row order (so the
/// result does not depend on the thread count).
pub(crate) fn column_sums(matrix: &[f64], n: usize) -> Vec<f64> {
    let mut totals = vec![0.0; n];
    for row in matrix.chunks(n) {
        totals.iter_mut().zip(row).for_each(|(t, b)| *t += b);
    }
    totals
}
