//! Per-worker buffers of the rate block's per-word set-up.
//!
//! Why it exists: for every word and scan the rate block builds the word's block
//! ([`super::touched::WordBlock`]), its conditional prior, the compact copy of its
//! documents ([`super::rates::RateConditional`]), the tree pattern of its mass matrix,
//! the mass matrix and its factor: a dozen vectors of the block's size. Building them
//! in buffers a rayon worker keeps from one word to the next (`map_init`) replaces a
//! dozen allocations per word by a few per worker. Every builder clears or overwrites
//! what it reuses, so a word's draws depend on the word alone, not on which worker's
//! buffers it got.

use super::rates::ConditionalBuffers;
use super::touched::BlockBuffers;
use super::tree_prior::PriorBuffers;
use crate::inference::{FactorBuffers, SparsePattern};

/// The buffers one worker reuses across the words it updates.
#[derive(Debug, Default)]
pub(crate) struct RateScratch {
    pub block: BlockBuffers,
    pub prior: PriorBuffers,
    pub conditional: ConditionalBuffers,
    /// The block's tree pattern (tree-plus-diagonal curvature only).
    pub tree_pattern: SparsePattern,
    /// The mass matrix's diagonal and off-diagonal values.
    pub mass: (Vec<f64>, Vec<f64>),
    pub factor: FactorBuffers,
    /// 1/τ² over all nodes, written at parent nodes (0 elsewhere, never written).
    pub inverse_tau2: Vec<f64>,
    /// μ of the block's nodes, the HMC's state.
    pub block_mu: Vec<f64>,
}
