//! The minimum-cost perfect matching of a square cost matrix (the assignment problem).
//!
//! Why it exists: topics are exchangeable, so two chains of the same topic model find
//! the same topics under different labels. Before their posterior means are pooled, each
//! chain's topics are matched to the first chain's by the permutation that minimises the
//! summed distance between matched topics' word distributions: an assignment problem.
//! Solved here by the shortest augmenting path form of the Hungarian method (Kuhn 1955,
//! Munkres 1957, in Jonker and Volgenant's O(n³) formulation with row and column
//! potentials). Pure numerics: no topics here.

/// The permutation `p` (row `i` matched to column `p[i]`) minimising Σᵢ cost[i][p[i]]
/// for the `n × n` row-major `cost` (finite entries). Ties are broken by the order of
/// the search, which depends only on `cost`.
///
/// # Panics
/// When `cost.len()` is not `n * n`.
pub fn min_cost_assignment(cost: &[f64], n: usize) -> Vec<usize> {
    assert_eq!(cost.len(), n * n, "an n × n cost matrix");
    // 1-based arrays with a virtual column 0, as in the classical formulation.
    let mut u = vec![0.0; n + 1];
    let mut v = vec![0.0; n + 1];
    // row_of[j]: the row matched to column j (0 = none).
    let mut row_of = vec![0usize; n + 1];
    let mut way = vec![0usize; n + 1];
    for i in 1..=n {
        row_of[0] = i;
        let mut j0 = 0;
        let mut min_to = vec![f64::INFINITY; n + 1];
        let mut used = vec![false; n + 1];
        loop {
            used[j0] = true;
            let i0 = row_of[j0];
            let mut delta = f64::INFINITY;
            let mut j1 = 0;
            for j in 1..=n {
                if used[j] {
                    continue;
                }
                let reduced = cost[(i0 - 1) * n + (j - 1)] - u[i0] - v[j];
                if reduced < min_to[j] {
                    min_to[j] = reduced;
                    way[j] = j0;
                }
                if min_to[j] < delta {
                    delta = min_to[j];
                    j1 = j;
                }
            }
            for j in 0..=n {
                if used[j] {
                    u[row_of[j]] += delta;
                    v[j] -= delta;
                } else {
                    min_to[j] -= delta;
                }
            }
            j0 = j1;
            if row_of[j0] == 0 {
                break;
            }
        }
        // Flip the augmenting path back to the virtual column.
        loop {
            let j1 = way[j0];
            row_of[j0] = row_of[j1];
            j0 = j1;
            if j0 == 0 {
                break;
            }
        }
    }
    let mut matched = vec![0; n];
    for j in 1..=n {
        matched[row_of[j] - 1] = j - 1;
    }
    matched
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{stream, Purpose};
    use rand::RngExt;

    fn total(cost: &[f64], n: usize, p: &[usize]) -> f64 {
        (0..n).map(|i| cost[i * n + p[i]]).sum()
    }

    /// Every permutation of 0..n (Heap's algorithm).
    fn permutations(n: usize) -> Vec<Vec<usize>> {
        fn go(k: usize, a: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
            if k <= 1 {
                out.push(a.clone());
                return;
            }
            for i in 0..k {
                go(k - 1, a, out);
                let j = if k.is_multiple_of(2) { i } else { 0 };
                a.swap(j, k - 1);
            }
        }
        let mut out = Vec::new();
        go(n, &mut (0..n).collect(), &mut out);
        out
    }

    /// On random matrices small enough to enumerate, the matching's cost is the least
    /// over all n! permutations, and the matching is a permutation.
    #[test]
    fn matches_enumeration_on_small_matrices() {
        for n in 1..=7 {
            let all = permutations(n);
            for trial in 0..20 {
                let mut rng = stream(n as u64, Purpose::Estimate, trial, 0);
                // Integer costs make ties common, which the search must survive.
                let cost: Vec<f64> = (0..n * n).map(|_| (rng.random::<u32>() % 9) as f64 - 3.0).collect();
                let p = min_cost_assignment(&cost, n);
                let mut seen = p.clone();
                seen.sort();
                assert_eq!(seen, (0..n).collect::<Vec<_>>());
                let best = all.iter().map(|q| total(&cost, n, q)).fold(f64::INFINITY, f64::min);
                assert_eq!(total(&cost, n, &p), best, "n = {n}, trial {trial}");
            }
        }
    }

    /// A permuted identity-like matrix is matched back to its permutation.
    #[test]
    fn recovers_a_planted_permutation() {
        let n = 60;
        let planted: Vec<usize> = (0..n).map(|i| (i * 17 + 5) % n).collect();
        let mut rng = stream(3, Purpose::Estimate, 0, 0);
        let cost: Vec<f64> = (0..n * n).map(|c| if planted[c / n] == c % n { 0.1 * rng.random::<f64>() } else { 1.0 + rng.random::<f64>() }).collect();
        assert_eq!(min_cost_assignment(&cost, n), planted);
        assert!(min_cost_assignment(&[], 0).is_empty());
    }
}
