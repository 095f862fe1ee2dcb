//! HDP-aMMSB's fit memory estimate.
//!
//! Why it exists: the service admits fits by their estimated peak memory
//! ([`crate::models::memory`] holds the parts every family shares); this is HDP-aMMSB's own
//! formula, next to the buffers it counts, so a change to them is seen beside it.

use crate::graph::GraphStats;
use crate::models::memory::{peak, W4, W8};

/// HDP-aMMSB: memoized variational inference over batches of
/// owner nodes of a graph.
pub fn estimate(g: &GraphStats, p: &super::params::AmmsbParams, threads: usize) -> u64 {
    let (n, e, k) = (g.num_nodes as u64, g.num_edges as u64, p.communities as u64);
    let b = p.num_batches(g.num_nodes) as u64;
    // The decoded graph: node names (a `String` and its text, about 40) and adjacency
    // lists (a `Vec` of 24 per node, 4 per neighbour; an undirected edge twice), and the
    // stored blob beside it while decoding.
    let arcs = if g.directed { e } else { 2 * e };
    let graph = 2 * (64 * n + W4 * arcs);
    // `GlobalState`: θ (N × (K + 1) f64).
    let state = W8 * n * (k + 1);
    // The memo: a summary per batch and their total, each with the usage U (N × K f64).
    let memo = W8 * (b + 1) * n * k;
    // A batch's local step: E[log π] and π̃ (N × K f64 each), the new usage (N × K) and
    // its owners' statistics.
    let local = 4 * W8 * n * k;
    let steady = graph + state + memo + local;
    // A checkpoint: the memo and θ.
    let checkpoint = memo + state;
    // The end: the model holds θ and the names; encoded beside it.
    let end = steady + 2 * (state + 40 * n);
    peak(steady, checkpoint, end, threads)
}
