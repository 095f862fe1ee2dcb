//! A word's touched subtree, the block its rate HMC runs on.
//!
//! Why it exists: most of a word's nodes are *untouched*: no document holding the word
//! has them active, so their conditional involves only the tree prior and the linear
//! term −c_k e^{μ_k}. The touched subtree T_f (the nodes active in some document holding
//! the word, plus their ancestors up to the root) is where the likelihood's log term
//! lives; the sampler draws μ_T by HMC given the others, and each untouched node by a
//! one-dimensional update given its neighbours ([`super::untouched`]). Both are exact
//! MCMC updates of conditionals of p(μ_f | rest), so their composition leaves it
//! invariant.
//!
//! T_f is closed under ancestors, so every untouched node's subtree is untouched and
//! the only edges between T_f and the rest go from a block node down to an untouched
//! child: the block's conditional prior is the tree prior on T_f plus a diagonal
//! boundary term ([`TreePrior::on_block`]), still tree-structured. Block nodes are
//! numbered in the tree's topological order (parents first, the root at index 0), which
//! gives the tree-plus-diagonal mass matrix a fill-free pattern in O(|T_f|)
//! ([`crate::inference::SparsePattern::for_tree`]).

use super::data::HpcData;
use super::tree_prior::{PriorBuffers, TreePrior};

/// The tree's nodes with every parent before its children (breadth-first from the
/// roots).
pub fn topological_order(parent: &[Option<usize>]) -> Vec<u32> {
    let n = parent.len();
    let mut children = vec![Vec::new(); n];
    let mut order: Vec<u32> = Vec::with_capacity(n);
    for (c, p) in parent.iter().enumerate() {
        match p {
            Some(p) => children[*p].push(c as u32),
            None => order.push(c as u32),
        }
    }
    let mut next = 0;
    while next < order.len() {
        let node = order[next] as usize;
        order.extend_from_slice(&children[node]);
        next += 1;
    }
    assert_eq!(order.len(), n, "the parent array has a cycle");
    order
}

/// The touched subtree of `word` in topological order (empty for a word no document
/// holds). `topological` is [`topological_order`] of the data's tree.
pub fn touched_subtree(data: &HpcData, word: usize, topological: &[u32]) -> Vec<u32> {
    let mut in_block = vec![false; data.num_nodes()];
    for &(d, _) in data.word_docs.row(word) {
        for &node in data.active.row(d as usize) {
            let mut cur = Some(node as usize);
            while let Some(c) = cur {
                if in_block[c] {
                    break;
                }
                in_block[c] = true;
                cur = data.parent[c];
            }
        }
    }
    topological.iter().copied().filter(|&node| in_block[node as usize]).collect()
}

/// One word's block in the shapes a scan needs: its nodes' block indices and parents,
/// and the untouched nodes.
pub struct WordBlock<'a> {
    /// Block index → node, parents first.
    pub nodes: &'a [u32],
    /// Node → block index (`u32::MAX` for untouched nodes).
    pub local_of: Vec<u32>,
    /// Each block node's parent as a block index (`None` at the root).
    pub parent: Vec<Option<usize>>,
    /// The untouched nodes, parents first.
    pub untouched: Vec<u32>,
}

/// The owned buffers of a [`WordBlock`], kept between words by the rate block.
#[derive(Debug, Default)]
pub struct BlockBuffers {
    /// Node → u32::MAX everywhere (or empty).
    local_of: Vec<u32>,
    parent: Vec<Option<usize>>,
    untouched: Vec<u32>,
}

impl<'a> WordBlock<'a> {
    /// `nodes` must be closed under ancestors and listed parents first (as
    /// [`touched_subtree`] gives them); `topological` orders the whole tree.
    pub fn new(tree_parent: &[Option<usize>], topological: &[u32], nodes: &'a [u32]) -> Self {
        Self::reusing(tree_parent, topological, nodes, BlockBuffers::default())
    }

    /// [`WordBlock::new`] in the buffers a previous block gave back
    /// ([`WordBlock::into_buffers`]), so the rate block allocates them once per worker
    /// instead of once per word; the result does not depend on what they held.
    pub fn reusing(tree_parent: &[Option<usize>], topological: &[u32], nodes: &'a [u32], buffers: BlockBuffers) -> Self {
        let BlockBuffers { mut local_of, mut parent, mut untouched } = buffers;
        // Given back with every entry u32::MAX (see `into_buffers`), or new.
        if local_of.len() != tree_parent.len() {
            local_of.clear();
            local_of.resize(tree_parent.len(), u32::MAX);
        }
        for (i, &node) in nodes.iter().enumerate() {
            local_of[node as usize] = i as u32;
        }
        parent.clear();
        parent.extend(nodes.iter().map(|&node| {
            tree_parent[node as usize].map(|p| {
                let local = local_of[p] as usize;
                assert!(local < local_of[node as usize] as usize, "the block is not closed under ancestors or not parents first");
                local
            })
        }));
        untouched.clear();
        untouched.extend(topological.iter().copied().filter(|&node| local_of[node as usize] == u32::MAX));
        WordBlock { nodes, local_of, parent, untouched }
    }

    /// The block's buffers for [`WordBlock::reusing`], `local_of` reset to u32::MAX
    /// in O(block size).
    pub fn into_buffers(self) -> BlockBuffers {
        let WordBlock { nodes, mut local_of, parent, untouched } = self;
        for &node in nodes {
            local_of[node as usize] = u32::MAX;
        }
        BlockBuffers { local_of, parent, untouched }
    }

    /// The block's conditional prior given the untouched nodes' current `mu`; `mu` and
    /// `inverse_tau2` (1/τ², read at parent nodes) are over all nodes.
    pub fn prior(&self, tree_parent: &[Option<usize>], psi: f64, gamma2: f64, inverse_tau2: &[f64], mu: &[f64]) -> TreePrior<'_> {
        self.prior_reusing(tree_parent, psi, gamma2, inverse_tau2, mu, PriorBuffers::default())
    }

    /// [`WordBlock::prior`] in the buffers of a previous prior
    /// ([`TreePrior::into_buffers`]); the result does not depend on what they held.
    pub fn prior_reusing(
        &self,
        tree_parent: &[Option<usize>],
        psi: f64,
        gamma2: f64,
        inverse_tau2: &[f64],
        mu: &[f64],
        buffers: PriorBuffers,
    ) -> TreePrior<'_> {
        let PriorBuffers { mut edge_precision, mut boundary } = buffers;
        edge_precision.clear();
        edge_precision.extend(self.nodes.iter().map(|&node| tree_parent[node as usize].map_or(1.0 / gamma2, |p| inverse_tau2[p])));
        boundary.clear();
        for &u in &self.untouched {
            let Some(p) = tree_parent[u as usize] else { continue };
            let local = self.local_of[p];
            if local != u32::MAX {
                if boundary.is_empty() {
                    boundary.resize(self.nodes.len(), (0.0, 0.0));
                }
                let q = inverse_tau2[p];
                let (a, b) = &mut boundary[local as usize];
                *a += q;
                *b += q * mu[u as usize];
            }
        }
        TreePrior::on_block(&self.parent, psi, gamma2, edge_precision, boundary)
    }

    /// μ of the block's nodes into `out` (cleared first).
    pub fn gather_into(&self, mu: &[f64], out: &mut Vec<f64>) {
        out.clear();
        out.extend(self.nodes.iter().map(|&node| mu[node as usize]));
    }

    /// μ of the block's nodes.
    pub fn gather(&self, mu: &[f64]) -> Vec<f64> {
        self.nodes.iter().map(|&node| mu[node as usize]).collect()
    }

    /// Write the block's values back by node.
    pub fn scatter(&self, values: &[f64], out: &mut [f64]) {
        for (&node, &v) in self.nodes.iter().zip(values) {
            out[node as usize] = v;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Root 0; 1, 2 under it; 3, 4 under 1; 5 under 2. Word 0 is in a document with
    /// label 3, word 1 in one with labels 2 and 5, word 2 in none.
    fn data() -> HpcData {
        HpcData::new(
            vec![None, Some(0), Some(0), Some(1), Some(1), Some(2)],
            super::super::Supervision::Labelled,
            vec![vec![3], vec![5], vec![2]],
            vec![vec![(0, 1)], vec![(1, 2)], vec![(1, 1)]],
            3,
        )
    }

    #[test]
    fn subtrees_hold_active_nodes_and_their_ancestors_parents_first() {
        let data = data();
        let order = topological_order(&data.parent);
        assert_eq!(order, vec![0, 1, 2, 3, 4, 5]);
        assert_eq!(touched_subtree(&data, 0, &order), vec![0, 1, 3]);
        assert_eq!(touched_subtree(&data, 1, &order), vec![0, 2, 5]);
        assert!(touched_subtree(&data, 2, &order).is_empty());
        // A tree numbered children first still gets parents first.
        assert_eq!(topological_order(&[Some(2), Some(2), None]), vec![2, 0, 1]);
    }

    /// The block prior's boundary collects the untouched children of block nodes: word
    /// 0's block {0, 1, 3} has untouched children 2 (of 0) and 4 (of 1); 5 hangs off
    /// untouched 2 and adds nothing.
    #[test]
    fn the_block_prior_couples_block_nodes_to_their_untouched_children() {
        let data = data();
        let order = topological_order(&data.parent);
        let nodes = touched_subtree(&data, 0, &order);
        let block = WordBlock::new(&data.parent, &order, &nodes);
        assert_eq!(block.parent, vec![None, Some(0), Some(1)]);
        assert_eq!(block.untouched, vec![2, 4, 5]);
        let tau2 = [0.5, 0.25, 2.0, 1.0, 1.0, 1.0];
        let mu = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6];
        let inverse_tau2: Vec<f64> = tau2.iter().map(|t| 1.0 / t).collect();
        let prior = block.prior(&data.parent, -1.0, 3.0, &inverse_tau2, &mu);
        // log prior of the block given the rest = full log prior + constant: compare
        // differences between two block points against the whole tree's prior.
        let full = TreePrior::new(&data.parent, -1.0, 3.0, &tau2);
        let at = |x: &[f64]| {
            let mut all = mu.to_vec();
            block.scatter(x, &mut all);
            let mut g = vec![0.0; 6];
            let mut gb = vec![0.0; 3];
            (full.logp_grad(&all, &mut g), prior.logp_grad(x, &mut gb), g, gb)
        };
        let (f1, b1, g1, gb1) = at(&[0.7, -0.2, 1.1]);
        let (f2, b2, _, _) = at(&[-0.4, 0.9, 0.0]);
        assert!(((f1 - f2) - (b1 - b2)).abs() < 1e-12, "{} vs {}", f1 - f2, b1 - b2);
        for (i, &node) in nodes.iter().enumerate() {
            assert!((g1[node as usize] - gb1[i]).abs() < 1e-12, "gradient at node {node}");
        }
    }
}
