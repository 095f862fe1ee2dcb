//! Which node pairs the model observes, and which memoized batch owns each.
//!
//! Why it exists: memoized inference needs every observed pair in exactly one batch so
//! that the whole-data summary is the sum of the batch summaries. Batches are
//! contiguous ranges of *owner* nodes; a batch owns the pairs its nodes own:
//! - directed graphs: node i owns the N − 1 ordered pairs (i, j), j ≠ i (both directions
//!   of a node pair are separate observations, x_ij = [i → j]);
//! - undirected graphs: the unordered pair {i, j}, i < j, is owned by i when i + j is
//!   even and by j when it is odd, so every node owns about (N − 1)/2 pairs and batches
//!   of equal size carry equal work (owning {i, j} by min(i, j) would give node 0 N − 1
//!   pairs and node N − 1 none).
//!
//! An owned pair is always read as (owner, partner): the owner's membership draws the
//! sender state s, the partner's the receiver state r. For an undirected pair the
//! orientation is immaterial (the assortative likelihood depends only on s = r).

use std::ops::Range;

/// The batches of owner nodes and the ownership rule.
#[derive(Debug, Clone, PartialEq)]
pub struct PairLayout {
    num_nodes: usize,
    directed: bool,
    batches: Vec<Range<usize>>,
}

impl PairLayout {
    /// `num_batches` contiguous owner ranges of near-equal size (1 ≤ batches ≤ nodes).
    pub fn new(num_nodes: usize, directed: bool, num_batches: usize) -> Self {
        let b = num_batches.clamp(1, num_nodes.max(1));
        let batches = (0..b).map(|t| (t * num_nodes / b)..((t + 1) * num_nodes / b)).collect();
        PairLayout { num_nodes, directed, batches }
    }

    pub fn num_nodes(&self) -> usize {
        self.num_nodes
    }

    pub fn directed(&self) -> bool {
        self.directed
    }

    pub fn num_batches(&self) -> usize {
        self.batches.len()
    }

    /// The owner nodes of batch `b`.
    pub fn batch(&self, b: usize) -> Range<usize> {
        self.batches[b].clone()
    }

    /// Does `owner` own the observed pair (owner, partner)?
    #[inline]
    pub fn owns(&self, owner: usize, partner: usize) -> bool {
        if owner == partner {
            return false;
        }
        if self.directed {
            return true;
        }
        let even = (owner + partner).is_multiple_of(2);
        if owner < partner {
            even
        } else {
            !even
        }
    }

    /// Observed pairs: N(N − 1) directed, N(N − 1)/2 undirected.
    pub fn num_pairs(&self) -> usize {
        let n = self.num_nodes;
        if self.directed {
            n * n.saturating_sub(1)
        } else {
            n * n.saturating_sub(1) / 2
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pair_is_owned_once_and_work_is_balanced() {
        for (n, directed, b) in [(7, false, 3), (10, false, 4), (6, true, 2), (2, false, 1)] {
            let layout = PairLayout::new(n, directed, b);
            let mut seen = vec![0usize; n * n];
            for t in 0..layout.num_batches() {
                for i in layout.batch(t) {
                    for j in 0..n {
                        if layout.owns(i, j) {
                            let key = if directed { i * n + j } else { i.min(j) * n + i.max(j) };
                            seen[key] += 1;
                        }
                    }
                }
            }
            let owned: usize = seen.iter().sum();
            assert_eq!(owned, layout.num_pairs(), "n={n} directed={directed}");
            assert!(seen.iter().all(|&c| c <= 1));
            if !directed {
                // Every node owns ⌊(N−1)/2⌋ or ⌈(N−1)/2⌉ pairs, give or take one.
                for i in 0..n {
                    let own = (0..n).filter(|&j| layout.owns(i, j)).count();
                    assert!(own + 1 >= (n - 1) / 2 && own <= n.div_ceil(2), "node {i} owns {own} of n={n}");
                }
            }
        }
    }
}
