//! Sparse Cholesky factorisation with a fixed elimination order and pattern.
//!
//! Why it exists: HPC's per-word Hessian lives on the label tree (hundreds of nodes)
//! but is sparse: the tree-structured prior precision plus, for each document holding
//! the word, a small clique over that document's labels. Eliminating nodes children
//! first (a post-order of the tree) makes a pure tree fill-free, and cliques only add
//! fill along tree paths. The pattern of one word never changes during a fit, so its
//! symbolic factorisation ([`SparsePattern`]) is computed once; each scan assembles
//! values ([`SparseSymmetric`]), factors them ([`SparseCholesky`]) and reuses the
//! factor for Newton steps and as the HMC mass matrix.
//!
//! Indices: callers speak of *nodes* `0..n`; internally everything is by elimination
//! *position*. Off-diagonal storage is column-wise (lower triangle by position).

use super::hmc::Metric;
use rand_distr::{Distribution, StandardNormal};

/// The symbolic structure of L for a given elimination order and matrix pattern.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SparsePattern {
    /// Position → node.
    order: Vec<u32>,
    /// Node → position.
    position: Vec<u32>,
    /// Column j's rows (positions > j, sorted) are `rows[col_ptr[j]..col_ptr[j + 1]]`.
    col_ptr: Vec<u32>,
    rows: Vec<u32>,
    /// When every column of L has at most one off-diagonal entry (a tree-structured
    /// matrix in post-order, as the tree-plus-diagonal mass matrix is): for each
    /// position, its node and the node of that entry's row (the node itself if the
    /// column has none). Lets the solves run on the right-hand side by node, without the
    /// column-pointer indirection or a permuted copy.
    tree_link: Option<Vec<[u32; 2]>>,
}

impl SparsePattern {
    /// `order` lists every node once (elimination order); `edges` are the off-diagonal
    /// non-zeros as node pairs (either orientation, duplicates allowed).
    pub fn new(order: &[usize], edges: impl IntoIterator<Item = (usize, usize)>) -> Self {
        let n = order.len();
        let mut position = vec![u32::MAX; n];
        for (p, &node) in order.iter().enumerate() {
            assert_eq!(position[node], u32::MAX, "node {node} appears twice in the order");
            position[node] = p as u32;
        }
        let mut structure: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (a, b) in edges {
            if a == b {
                continue;
            }
            let (pa, pb) = (position[a], position[b]);
            let (lo, hi) = if pa < pb { (pa, pb) } else { (pb, pa) };
            structure[lo as usize].push(hi);
        }
        for s in structure.iter_mut() {
            s.sort_unstable();
            s.dedup();
        }
        // Symbolic elimination: column j's structure, minus its first row, joins the
        // structure of that first row (the elimination-tree parent).
        for j in 0..n {
            if structure[j].len() > 1 {
                let first = structure[j][0] as usize;
                let rest: Vec<u32> = structure[j][1..].to_vec();
                let merged = merge_sorted(&structure[first], &rest);
                structure[first] = merged;
            }
        }
        let mut col_ptr = Vec::with_capacity(n + 1);
        col_ptr.push(0u32);
        let mut rows = Vec::new();
        for s in &structure {
            rows.extend_from_slice(s);
            col_ptr.push(rows.len() as u32);
        }
        let tree_link = (0..n).all(|j| col_ptr[j + 1] - col_ptr[j] <= 1).then(|| {
            (0..n).map(|j| [order[j] as u32, order[if col_ptr[j + 1] > col_ptr[j] { rows[col_ptr[j] as usize] as usize } else { j }] as u32]).collect()
        });
        SparsePattern { order: order.iter().map(|&x| x as u32).collect(), position, col_ptr, rows, tree_link }
    }

    /// The pattern of a tree-structured matrix whose nodes are numbered parents first
    /// (`parent[i] < i` for every non-root node), eliminated in reverse numbering, which
    /// takes every node after its children and so has no fill. It equals
    /// `SparsePattern::new` with that order and the tree's edges, built in O(n) with a
    /// handful of allocations: HPC builds one per word and scan, over the word's touched
    /// subtree.
    pub fn for_tree(parent: &[Option<usize>]) -> Self {
        Self::for_tree_reusing(parent, SparsePattern::default())
    }

    /// [`SparsePattern::for_tree`] in the buffers of a pattern no longer needed
    /// (allocation-free once they are large enough); the result does not depend on it.
    pub fn for_tree_reusing(parent: &[Option<usize>], spare: SparsePattern) -> Self {
        let n = parent.len();
        let SparsePattern { mut order, mut position, mut col_ptr, mut rows, tree_link } = spare;
        let mut tree_link = tree_link.unwrap_or_default();
        order.clear();
        order.extend((0..n as u32).rev());
        position.clear();
        position.extend((0..n as u32).map(|node| n as u32 - 1 - node));
        col_ptr.clear();
        col_ptr.push(0u32);
        rows.clear();
        tree_link.clear();
        for &node in &order {
            match parent[node as usize] {
                Some(p) => {
                    assert!(p < node as usize, "node {node}'s parent {p} is not numbered before it");
                    rows.push(position[p]);
                    tree_link.push([node, p as u32]);
                }
                None => tree_link.push([node, node]),
            }
            col_ptr.push(rows.len() as u32);
        }
        SparsePattern { order, position, col_ptr, rows, tree_link: Some(tree_link) }
    }

    pub fn dim(&self) -> usize {
        self.order.len()
    }

    /// Stored off-diagonal entries of L.
    pub fn nnz(&self) -> usize {
        self.rows.len()
    }

    fn column(&self, j: usize) -> std::ops::Range<usize> {
        self.col_ptr[j] as usize..self.col_ptr[j + 1] as usize
    }

    /// Storage index of the entry at positions (row > col).
    fn slot(&self, row: u32, col: u32) -> usize {
        let range = self.column(col as usize);
        let start = range.start;
        let column = &self.rows[range];
        // A column whose rows run without a gap (every column of a dense block, as in a
        // PCM word's Hessian) holds `row` at its offset from the first: no search.
        if let (Some(&first), Some(&last)) = (column.first(), column.last()) {
            if (last - first) as usize + 1 == column.len() && (first..=last).contains(&row) {
                return start + (row - first) as usize;
            }
        }
        match column.binary_search(&row) {
            Ok(i) => start + i,
            Err(_) => panic!("entry ({row}, {col}) is not in the sparsity pattern"),
        }
    }
}

fn merge_sorted(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        let next = match (a.get(i), b.get(j)) {
            (Some(&x), Some(&y)) if x == y => {
                i += 1;
                j += 1;
                x
            }
            (Some(&x), Some(&y)) if x < y => {
                i += 1;
                x
            }
            (Some(_), Some(&y)) => {
                j += 1;
                y
            }
            (Some(&x), None) => {
                i += 1;
                x
            }
            (None, Some(&y)) => {
                j += 1;
                y
            }
            (None, None) => unreachable!(),
        };
        out.push(next);
    }
    out
}

/// A symmetric matrix with a given pattern, assembled entry by entry.
#[derive(Debug, Clone)]
pub struct SparseSymmetric<'p> {
    pattern: &'p SparsePattern,
    /// Diagonal by position.
    diag: Vec<f64>,
    /// Lower off-diagonal values aligned with `pattern.rows`.
    off: Vec<f64>,
}

impl<'p> SparseSymmetric<'p> {
    pub fn zeros(pattern: &'p SparsePattern) -> Self {
        SparseSymmetric { pattern, diag: vec![0.0; pattern.dim()], off: vec![0.0; pattern.nnz()] }
    }

    /// The stored values (diagonal by position, off-diagonal by pattern slot), to keep
    /// a matrix beyond the pattern's borrow.
    pub fn into_parts(self) -> (Vec<f64>, Vec<f64>) {
        (self.diag, self.off)
    }

    /// Rebuild from [`SparseSymmetric::into_parts`] with the same pattern.
    pub fn from_parts(pattern: &'p SparsePattern, diag: Vec<f64>, off: Vec<f64>) -> Self {
        assert_eq!((diag.len(), off.len()), (pattern.dim(), pattern.nnz()), "parts do not match the pattern");
        SparseSymmetric { pattern, diag, off }
    }

    /// A[node, node] += value.
    pub fn add_diag(&mut self, node: usize, value: f64) {
        self.diag[self.pattern.position[node] as usize] += value;
    }

    /// A[a, b] += value and A[b, a] += value (a ≠ b; the pair must be in the pattern).
    pub fn add_off(&mut self, a: usize, b: usize, value: f64) {
        let (pa, pb) = (self.pattern.position[a], self.pattern.position[b]);
        let (row, col) = if pa > pb { (pa, pb) } else { (pb, pa) };
        let s = self.pattern.slot(row, col);
        self.off[s] += value;
    }

    /// A x for x and the result by node.
    pub fn mul(&self, x: &[f64]) -> Vec<f64> {
        let p = self.pattern;
        let mut y = vec![0.0; p.dim()];
        for j in 0..p.dim() {
            let nj = p.order[j] as usize;
            y[nj] += self.diag[j] * x[nj];
            for e in p.column(j) {
                let ni = p.order[p.rows[e] as usize] as usize;
                y[ni] += self.off[e] * x[nj];
                y[nj] += self.off[e] * x[ni];
            }
        }
        y
    }

    /// The Cholesky factor, or `None` if the matrix is not (numerically) positive
    /// definite.
    pub fn cholesky(&self) -> Option<SparseCholesky<'p>> {
        self.cholesky_reusing(FactorBuffers::default())
    }

    /// [`SparseSymmetric::cholesky`] in the buffers of a factor no longer needed
    /// ([`SparseCholesky::into_buffers`]); the result does not depend on what they held.
    pub fn cholesky_reusing(&self, spare: FactorBuffers) -> Option<SparseCholesky<'p>> {
        let p = self.pattern;
        let FactorBuffers { mut diag, mut inv_diag, mut off, tree_value } = spare;
        diag.clear();
        diag.extend_from_slice(&self.diag);
        off.clear();
        off.extend_from_slice(&self.off);
        for j in 0..p.dim() {
            let d = diag[j];
            if !d.is_finite() || d <= 0.0 {
                return None;
            }
            let l = d.sqrt();
            diag[j] = l;
            let col = p.column(j);
            for e in col.clone() {
                off[e] /= l;
            }
            for e1 in col.clone() {
                let (a, v1) = (p.rows[e1], off[e1]);
                diag[a as usize] -= v1 * v1;
                for e2 in e1 + 1..col.end {
                    let s = p.slot(p.rows[e2], a);
                    off[s] -= v1 * off[e2];
                }
            }
        }
        inv_diag.clear();
        inv_diag.extend(diag.iter().map(|d| 1.0 / d));
        // Tree patterns: the single off-diagonal value of each column (0 where none).
        let tree_value = p.tree_link.as_ref().map(|_| {
            let mut values = tree_value.unwrap_or_default();
            values.clear();
            values.extend((0..p.dim()).map(|j| p.column(j).next().map_or(0.0, |e| off[e])));
            values
        });
        Some(SparseCholesky { pattern: p, diag, inv_diag, off, tree_value })
    }

    /// [`SparseSymmetric::cholesky_repaired`] in the buffers of a factor no longer
    /// needed, used when no repair is needed (the shifted trials allocate).
    pub fn cholesky_repaired_reusing(&self, spare: FactorBuffers) -> (SparseCholesky<'p>, bool) {
        match self.cholesky_reusing(spare) {
            Some(c) => (c, false),
            None => self.cholesky_repaired(),
        }
    }

    /// The Cholesky factor of A + shift·I with the smallest shift (growing tenfold from
    /// 1e-6 of the largest diagonal entry) that makes it positive definite; returns the
    /// factor and whether a shift was needed. A matrix no finite shift repairs (a NaN or
    /// infinite off-diagonal entry, from state a corrupt checkpoint restored) gets the
    /// largest finite diagonal entry times I instead of a search that never ends.
    pub fn cholesky_repaired(&self) -> (SparseCholesky<'p>, bool) {
        if let Some(c) = self.cholesky() {
            return (c, false);
        }
        let scale = self.diag.iter().fold(1e-8f64, |a, &d| if d.is_finite() { a.max(d.abs()) } else { a });
        let mut shift = scale * 1e-6;
        let mut shifted = self.clone();
        for d in shifted.diag.iter_mut() {
            if !d.is_finite() {
                *d = scale;
            }
        }
        loop {
            let mut trial = shifted.clone();
            trial.diag.iter_mut().for_each(|d| *d += shift);
            if let Some(c) = trial.cholesky() {
                return (c, true);
            }
            shift *= 10.0;
            if !shift.is_finite() {
                let mut diagonal = self.clone();
                diagonal.diag.fill(scale);
                diagonal.off.fill(0.0);
                return (diagonal.cholesky().expect("a positive diagonal matrix factors"), true);
            }
        }
    }
}

/// A = L Lᵀ in elimination order.
#[derive(Debug, Clone)]
pub struct SparseCholesky<'p> {
    pattern: &'p SparsePattern,
    diag: Vec<f64>,
    /// 1 / diag, so the solves multiply instead of divide.
    inv_diag: Vec<f64>,
    off: Vec<f64>,
    /// For tree patterns ([`SparsePattern::tree_link`]): each column's off-diagonal
    /// value, 0 where the column has none.
    tree_value: Option<Vec<f64>>,
}

/// The owned buffers of a [`SparseCholesky`], kept between factorisations.
#[derive(Debug, Default)]
pub struct FactorBuffers {
    diag: Vec<f64>,
    inv_diag: Vec<f64>,
    off: Vec<f64>,
    tree_value: Option<Vec<f64>>,
}

impl SparseCholesky<'_> {
    /// The factor's buffers, for [`SparseSymmetric::cholesky_reusing`].
    pub fn into_buffers(self) -> FactorBuffers {
        FactorBuffers { diag: self.diag, inv_diag: self.inv_diag, off: self.off, tree_value: self.tree_value }
    }

    /// Solve A x = b in place (b and x by node).
    pub fn solve_in_place(&self, b: &mut [f64]) {
        let p = self.pattern;
        if let (Some(link), Some(value)) = (&p.tree_link, &self.tree_value) {
            // One entry per column: a column without one links to its own node with
            // value 0, which leaves b unchanged, so the loops need no branch.
            for (j, &[node, row]) in link.iter().enumerate() {
                let x = b[node as usize] * self.inv_diag[j];
                b[node as usize] = x;
                b[row as usize] -= value[j] * x;
            }
            for (j, &[node, row]) in link.iter().enumerate().rev() {
                b[node as usize] = (b[node as usize] - value[j] * b[row as usize]) * self.inv_diag[j];
            }
            return;
        }
        thread_local! {
            static SCRATCH: std::cell::RefCell<Vec<f64>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        SCRATCH.with(|scratch| {
            let mut y = scratch.borrow_mut();
            y.clear();
            y.extend(p.order.iter().map(|&node| b[node as usize]));
            self.solve_permuted(&mut y);
            for (j, &node) in p.order.iter().enumerate() {
                b[node as usize] = y[j];
            }
        });
    }

    /// Forward and back substitution on a right-hand side already in elimination order.
    fn solve_permuted(&self, y: &mut [f64]) {
        let p = self.pattern;
        for j in 0..p.dim() {
            y[j] *= self.inv_diag[j];
            let yj = y[j];
            for e in p.column(j) {
                y[p.rows[e] as usize] -= self.off[e] * yj;
            }
        }
        for j in (0..p.dim()).rev() {
            let mut s = y[j];
            for e in p.column(j) {
                s -= self.off[e] * y[p.rows[e] as usize];
            }
            y[j] = s * self.inv_diag[j];
        }
    }

    /// L z for z by position; the result by node (a draw from N(0, A) when z is
    /// standard normal).
    pub fn mul_l(&self, z: &[f64], out: &mut [f64]) {
        let p = self.pattern;
        thread_local! {
            static SCRATCH: std::cell::RefCell<Vec<f64>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        SCRATCH.with(|scratch| {
            let mut y = scratch.borrow_mut();
            y.clear();
            y.resize(p.dim(), 0.0);
            for j in 0..p.dim() {
                y[j] += self.diag[j] * z[j];
                for e in p.column(j) {
                    y[p.rows[e] as usize] += self.off[e] * z[j];
                }
            }
            for (j, &node) in p.order.iter().enumerate() {
                out[node as usize] = y[j];
            }
        });
    }

    /// log det A.
    pub fn log_det(&self) -> f64 {
        2.0 * self.diag.iter().map(|d| d.ln()).sum::<f64>()
    }
}

impl Metric for SparseCholesky<'_> {
    fn dim(&self) -> usize {
        self.pattern.dim()
    }

    fn sample_momentum<R: rand::Rng + ?Sized>(&self, rng: &mut R, p: &mut [f64]) {
        thread_local! {
            static NORMALS: std::cell::RefCell<Vec<f64>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        NORMALS.with(|normals| {
            let mut z = normals.borrow_mut();
            z.clear();
            z.extend((0..self.dim()).map(|_| -> f64 { StandardNormal.sample(&mut *rng) }));
            self.mul_l(&z, p);
        });
    }

    fn velocity(&self, p: &[f64], v: &mut [f64]) {
        v.copy_from_slice(p);
        self.solve_in_place(v);
    }
}

/// A minimum-degree elimination order for the graph on `n` nodes with `edges`: nodes
/// are eliminated greedily by smallest current degree (ties by index), their remaining
/// neighbours joined into a clique as elimination would fill them in. On a tree it
/// eliminates leaves first and gives no fill; on a tree plus the label co-occurrence
/// cliques of one word it keeps the fill near the graph's small treewidth, where a
/// fixed tree post-order lets fill cascade up the tree into a dense block.
pub fn minimum_degree_order(n: usize, edges: impl IntoIterator<Item = (usize, usize)>) -> Vec<usize> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let mut adjacency: Vec<Vec<u32>> = vec![Vec::new(); n];
    for (a, b) in edges {
        if a != b {
            adjacency[a].push(b as u32);
            adjacency[b].push(a as u32);
        }
    }
    for adj in adjacency.iter_mut() {
        adj.sort_unstable();
        adj.dedup();
    }
    let mut eliminated = vec![false; n];
    let mut heap: BinaryHeap<Reverse<(usize, usize)>> = (0..n).map(|v| Reverse((adjacency[v].len(), v))).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(Reverse((degree, v))) = heap.pop() {
        if eliminated[v] || degree != adjacency[v].len() {
            continue; // stale entry
        }
        eliminated[v] = true;
        order.push(v);
        let neighbours = std::mem::take(&mut adjacency[v]);
        for &u in &neighbours {
            let u = u as usize;
            // Drop v from u's list and join u with every other neighbour of v.
            let others: Vec<u32> = neighbours.iter().copied().filter(|&w| w as usize != u).collect();
            let current: Vec<u32> = adjacency[u].iter().copied().filter(|&w| w as usize != v).collect();
            adjacency[u] = merge_sorted(&current, &others);
            heap.push(Reverse((adjacency[u].len(), u)));
        }
    }
    order
}

/// A post-order of a tree given by parents (`None` = a root): every node comes after
/// all of its descendants. Eliminating in this order makes a tree-structured matrix
/// fill-free.
pub fn tree_postorder(parent: &[Option<usize>]) -> Vec<usize> {
    let n = parent.len();
    let mut children = vec![Vec::new(); n];
    let mut roots = Vec::new();
    for (c, p) in parent.iter().enumerate() {
        match p {
            Some(p) => children[*p].push(c),
            None => roots.push(c),
        }
    }
    let mut order = Vec::with_capacity(n);
    // Iterative DFS: (node, children visited?).
    let mut stack: Vec<(usize, bool)> = roots.into_iter().rev().map(|r| (r, false)).collect();
    while let Some((node, expanded)) = stack.pop() {
        if expanded {
            order.push(node);
        } else {
            stack.push((node, true));
            for &c in children[node].iter().rev() {
                stack.push((c, false));
            }
        }
    }
    assert_eq!(order.len(), n, "the parent array has a cycle");
    order
}

#[cfg(test)]
#[path = "sparse_cholesky_tests.rs"]
mod tests;
