//! Tests of the sparse symmetric factorisation: against dense Cholesky, tree patterns, buffer reuse, repair and the orderings.

use super::*;
use crate::rng::{stream, Purpose};
use nalgebra::DMatrix;
use rand::RngExt;

/// A test matrix: the tree's parent of each node, the edges (tree and extra) and the
/// dense matrix.
type Case = (Vec<Option<usize>>, Vec<(usize, usize)>, DMatrix<f64>);

/// A random SPD matrix on a tree plus a few extra edges, as a sparse and a dense
/// matrix.
fn random_case(seed: u64) -> Case {
    let mut rng = stream(seed, Purpose::Estimate, 0, 0);
    let n = 12;
    let parent: Vec<Option<usize>> = (0..n).map(|i| if i == 0 { None } else { Some(rng.random_range(0..i)) }).collect();
    let mut edges: Vec<(usize, usize)> = parent.iter().enumerate().filter_map(|(c, p)| p.map(|p| (c, p))).collect();
    for _ in 0..6 {
        let (a, b) = (rng.random_range(0..n), rng.random_range(0..n));
        if a != b {
            edges.push((a, b));
        }
    }
    let mut m = DMatrix::<f64>::zeros(n, n);
    for &(a, b) in &edges {
        let v = rng.random::<f64>() - 0.5;
        m[(a, b)] += v;
        m[(b, a)] += v;
    }
    // Diagonal dominance makes it SPD.
    for i in 0..n {
        let row: f64 = (0..n).filter(|&j| j != i).map(|j| m[(i, j)].abs()).sum();
        m[(i, i)] = row + 0.5 + rng.random::<f64>();
    }
    (parent, edges, m)
}

fn assemble<'p>(pattern: &'p SparsePattern, m: &DMatrix<f64>, edges: &[(usize, usize)]) -> SparseSymmetric<'p> {
    let mut s = SparseSymmetric::zeros(pattern);
    for i in 0..m.nrows() {
        s.add_diag(i, m[(i, i)]);
    }
    let mut seen = std::collections::HashSet::new();
    for &(a, b) in edges {
        if seen.insert((a.min(b), a.max(b))) {
            s.add_off(a, b, m[(a, b)]);
        }
    }
    s
}

#[test]
fn solves_and_factors_like_the_dense_cholesky() {
    for seed in 0..5 {
        let (parent, edges, m) = random_case(seed);
        let pattern = SparsePattern::new(&tree_postorder(&parent), edges.iter().copied());
        let s = assemble(&pattern, &m, &edges);
        let x: Vec<f64> = (0..m.nrows()).map(|i| (i as f64 * 0.7).sin()).collect();
        let dense_mx = &m * nalgebra::DVector::from_column_slice(&x);
        let sparse_mx = s.mul(&x);
        for i in 0..x.len() {
            assert!((dense_mx[i] - sparse_mx[i]).abs() < 1e-12);
        }
        let chol = s.cholesky().expect("SPD");
        let mut b = sparse_mx.clone();
        chol.solve_in_place(&mut b);
        for i in 0..x.len() {
            assert!((b[i] - x[i]).abs() < 1e-10, "solve {i}: {} vs {}", b[i], x[i]);
        }
        let dense_logdet = 2.0 * m.clone().cholesky().unwrap().l().diagonal().iter().map(|d| d.ln()).sum::<f64>();
        assert!((chol.log_det() - dense_logdet).abs() < 1e-10);
        // L Lᵀ = A: check through (L z)·(L z') against zᵀ A-free identity: the
        // covariance of L z is A, so A⁻¹ (L z) = L⁻ᵀ z has squared norm ... check
        // directly that solve(L z) · (L z) = |z|².
        assert_solve_inverts_l(&chol, x.len());
    }
}

/// solve(L z) · (L z) = |z|²: the solve applies (L Lᵀ)⁻¹ for the same L that
/// `mul_l` applies.
fn assert_solve_inverts_l(chol: &SparseCholesky<'_>, n: usize) {
    let z: Vec<f64> = (0..n).map(|i| (i as f64 * 1.3).cos()).collect();
    let mut lz = vec![0.0; n];
    chol.mul_l(&z, &mut lz);
    let mut v = lz.clone();
    chol.solve_in_place(&mut v);
    let quad: f64 = v.iter().zip(&lz).map(|(a, b)| a * b).sum();
    let zz: f64 = z.iter().map(|a| a * a).sum();
    assert!((quad - zz).abs() < 1e-9 * zz);
}

/// Tree patterns take the branch-free solve ([`SparsePattern::tree_link`]); it must
/// agree with the dense solution and with L (solve(L z)·(L z) = |z|²).
#[test]
fn tree_patterns_solve_like_the_dense_cholesky() {
    for seed in 0..5 {
        let (parent, _, _) = random_case(seed);
        let edges: Vec<(usize, usize)> = parent.iter().enumerate().filter_map(|(c, p)| p.map(|p| (c, p))).collect();
        let mut rng = stream(seed + 100, Purpose::Estimate, 0, 0);
        let n = parent.len();
        let mut m = DMatrix::<f64>::zeros(n, n);
        for &(a, b) in &edges {
            let v = -rng.random::<f64>();
            m[(a, b)] = v;
            m[(b, a)] = v;
        }
        for i in 0..n {
            m[(i, i)] = m.row(i).iter().map(|x| x.abs()).sum::<f64>() + 0.1 + rng.random::<f64>();
        }
        let pattern = SparsePattern::new(&tree_postorder(&parent), edges.iter().copied());
        assert!(pattern.tree_link.is_some());
        let s = assemble(&pattern, &m, &edges);
        let chol = s.cholesky().expect("SPD");
        let x: Vec<f64> = (0..n).map(|i| (i as f64 * 0.9).sin()).collect();
        let mut b = (&m * nalgebra::DVector::from_column_slice(&x)).as_slice().to_vec();
        chol.solve_in_place(&mut b);
        for i in 0..n {
            assert!((b[i] - x[i]).abs() < 1e-10, "solve {i}: {} vs {}", b[i], x[i]);
        }
        assert_solve_inverts_l(&chol, n);
    }
}

/// The O(n) tree pattern is the one the general constructor builds for the same
/// order and edges (trees numbered parents first, with one or several roots).
#[test]
fn for_tree_equals_the_general_pattern() {
    for parent in [vec![None, Some(0), Some(0), Some(1), Some(1), Some(2), Some(0)], vec![None, Some(0), None, Some(2), Some(1)], vec![None]] {
        let n = parent.len();
        let edges = parent.iter().enumerate().filter_map(|(c, p)| p.map(|p| (c, p)));
        let order: Vec<usize> = (0..n).rev().collect();
        assert_eq!(SparsePattern::for_tree(&parent), SparsePattern::new(&order, edges));
    }
}

/// Patterns and factors built in the buffers of earlier ones (of other sizes, as a
/// worker's scratch holds them) equal those built fresh, bit for bit.
#[test]
fn reused_buffers_give_the_fresh_pattern_and_factor() {
    let mut spare_pattern = SparsePattern::default();
    let mut spare_factor = FactorBuffers::default();
    for seed in [3, 0, 4, 1] {
        let (parent, _, _) = random_case(seed);
        let parent = &parent[..6 + seed as usize];
        let edges: Vec<(usize, usize)> = parent.iter().enumerate().filter_map(|(c, p)| p.map(|p| (c, p))).collect();
        let pattern = SparsePattern::for_tree_reusing(parent, std::mem::take(&mut spare_pattern));
        assert_eq!(pattern, SparsePattern::for_tree(parent));
        let mut s = SparseSymmetric::zeros(&pattern);
        for (i, &(a, b)) in edges.iter().enumerate() {
            s.add_off(a, b, -0.3 - 0.1 * i as f64);
        }
        for i in 0..parent.len() {
            s.add_diag(i, 2.0 + i as f64);
        }
        let fresh = s.cholesky().expect("diagonally dominant");
        let reused = s.cholesky_reusing(std::mem::take(&mut spare_factor)).expect("diagonally dominant");
        assert_eq!((&fresh.diag, &fresh.inv_diag, &fresh.off, &fresh.tree_value), (&reused.diag, &reused.inv_diag, &reused.off, &reused.tree_value));
        spare_factor = reused.into_buffers();
        spare_pattern = pattern;
    }
}

#[test]
fn a_tree_eliminated_in_post_order_has_no_fill() {
    let parent = vec![None, Some(0), Some(0), Some(1), Some(1), Some(2)];
    let edges: Vec<(usize, usize)> = parent.iter().enumerate().filter_map(|(c, p)| p.map(|p| (c, p))).collect();
    let pattern = SparsePattern::new(&tree_postorder(&parent), edges.iter().copied());
    assert_eq!(pattern.nnz(), edges.len());
}

#[test]
fn an_indefinite_matrix_is_repaired() {
    let parent = vec![None, Some(0)];
    let pattern = SparsePattern::new(&tree_postorder(&parent), [(0, 1)]);
    let mut s = SparseSymmetric::zeros(&pattern);
    s.add_diag(0, 1.0);
    s.add_diag(1, -0.5);
    assert!(s.cholesky().is_none());
    let (c, repaired) = s.cholesky_repaired();
    assert!(repaired);
    assert!(c.log_det().is_finite());
}

#[test]
fn minimum_degree_orders_every_node_once_and_keeps_trees_fill_free() {
    let parent = [None, Some(0), Some(0), Some(1), Some(1), Some(2), Some(2), Some(2)];
    let edges: Vec<(usize, usize)> = parent.iter().enumerate().filter_map(|(c, p)| p.map(|p| (c, p))).collect();
    let order = minimum_degree_order(parent.len(), edges.iter().copied());
    let mut sorted = order.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..parent.len()).collect::<Vec<_>>());
    assert_eq!(SparsePattern::new(&order, edges.iter().copied()).nnz(), edges.len());
    // The random cases factor correctly in this order too.
    for seed in 0..5 {
        let (parent, edges, m) = random_case(seed);
        let order = minimum_degree_order(parent.len(), edges.iter().copied());
        let pattern = SparsePattern::new(&order, edges.iter().copied());
        let s = assemble(&pattern, &m, &edges);
        let x: Vec<f64> = (0..m.nrows()).map(|i| (i as f64 * 0.3).cos()).collect();
        let mut b = s.mul(&x);
        s.cholesky().expect("SPD").solve_in_place(&mut b);
        assert!(b.iter().zip(&x).all(|(a, c)| (a - c).abs() < 1e-10));
    }
}

/// A star of cliques hanging off a deep tree: minimum degree fills far less than the
/// tree post-order.
#[test]
fn minimum_degree_fills_less_than_post_order_on_cross_tree_cliques() {
    // Root 0, 4 top nodes, each with 10 children (nodes 5..45).
    let mut parent = vec![None];
    parent.extend((0..4).map(|_| Some(0)));
    for t in 1..=4 {
        parent.extend((0..10).map(|_| Some(t)));
    }
    let mut edges: Vec<(usize, usize)> = parent.iter().enumerate().filter_map(|(c, p)| p.map(|p| (c, p))).collect();
    // Pairs of leaves in different subtrees.
    for i in 0..30 {
        edges.push((5 + (i * 7) % 40, 5 + (i * 13 + 11) % 40));
    }
    let post = SparsePattern::new(&tree_postorder(&parent), edges.iter().copied()).nnz();
    let md = SparsePattern::new(&minimum_degree_order(parent.len(), edges.iter().copied()), edges.iter().copied()).nnz();
    assert!(md < post, "minimum degree {md} vs post-order {post}");
}

#[test]
fn post_order_puts_children_first() {
    let parent = vec![Some(3), None, Some(1), Some(1), Some(0)];
    let order = tree_postorder(&parent);
    let pos: Vec<usize> = (0..5).map(|n| order.iter().position(|&x| x == n).unwrap()).collect();
    for (c, p) in parent.iter().enumerate() {
        if let Some(p) = p {
            assert!(pos[c] < pos[*p]);
        }
    }
}

/// Every stored entry's slot is where its row stands in its column, whether the column's
/// rows run without a gap (the shortcut) or not (the search), on random patterns and on
/// a dense one (every column gap-free).
#[test]
fn every_entry_finds_its_own_slot() {
    let dense: Vec<(usize, usize)> = (0..9).flat_map(|a| (0..a).map(move |b| (a, b))).collect();
    let mut patterns = vec![SparsePattern::new(&(0..9).collect::<Vec<_>>(), dense)];
    for seed in 0..20 {
        let (_, edges, _) = random_case(seed);
        patterns.push(SparsePattern::new(&minimum_degree_order(12, edges.iter().copied()), edges));
    }
    let (mut gap_free, mut gapped) = (0, 0);
    for p in &patterns {
        for col in 0..p.dim() {
            let range = p.column(col);
            let rows = &p.rows[range.clone()];
            if rows.windows(2).all(|w| w[1] == w[0] + 1) {
                gap_free += 1;
            } else {
                gapped += 1;
            }
            for (i, &row) in rows.iter().enumerate() {
                assert_eq!(p.slot(row, col as u32), range.start + i, "entry ({row}, {col})");
            }
        }
    }
    assert!(gap_free > 0 && gapped > 0, "both paths ran: {gap_free} gap-free columns, {gapped} gapped");
}
