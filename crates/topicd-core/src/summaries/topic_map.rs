//! The intertopic map, as LDAvis draws it: topics placed in two dimensions so that
//! topics with similar word distributions lie close together.
//!
//! Why it exists: a person looking at a fitted model first wants to see which topics
//! overlap. LDAvis (Sievert & Shirley 2014) answers with the Jensen–Shannon divergence
//! between the topics' word distributions, embedded in the plane by classical
//! multidimensional scaling (principal coordinates), each topic a circle whose area is
//! its share of the tokens. This module computes exactly that from a topic table's
//! frequency rows (normalised to distributions), so the console draws it without doing
//! numerics in the browser. Pure functions, no I/O.

use nalgebra::{DMatrix, SymmetricEigen};
use ndarray::Array2;
use rayon::prelude::*;

/// Topics placed in the plane.
#[derive(Debug, Clone, PartialEq)]
pub struct TopicMap {
    /// Each topic's first and second principal coordinate.
    pub coordinates: Vec<[f64; 2]>,
    /// Share of the scaled dissimilarities' positive spectrum the two axes carry
    /// (1 when two dimensions reproduce them exactly).
    pub explained: [f64; 2],
    /// The Jensen–Shannon divergences, `K × K` row-major (natural logarithms).
    pub divergences: Vec<f64>,
}

impl TopicMap {
    /// Bytes the coordinates and divergences hold on the heap.
    pub fn memory_bytes(&self) -> usize {
        crate::heap_size::vec(&self.coordinates) + crate::heap_size::vec(&self.divergences)
    }
}

/// Jensen–Shannon divergence of two distributions over the same support (natural
/// logarithms, so at most ln 2): ½ KL(p ‖ m) + ½ KL(q ‖ m) with m = (p + q) / 2.
pub fn jensen_shannon(p: &[f64], q: &[f64]) -> f64 {
    let half_kl = |a: f64, m: f64| if a > 0.0 { 0.5 * a * (a / m).ln() } else { 0.0 };
    let d: f64 = p
        .iter()
        .zip(q)
        .map(|(&a, &b)| {
            let m = 0.5 * (a + b);
            half_kl(a, m) + half_kl(b, m)
        })
        .sum();
    d.max(0.0)
}

/// Each row of `frequency` (topics × terms, non-negative) scaled to sum to 1; a row
/// of zeros becomes uniform.
fn distributions(frequency: &Array2<f64>) -> Vec<Vec<f64>> {
    frequency
        .rows()
        .into_iter()
        .map(|row| {
            let total: f64 = row.iter().map(|x| x.max(0.0)).sum();
            let n = row.len().max(1) as f64;
            row.iter().map(|&x| if total > 0.0 { x.max(0.0) / total } else { 1.0 / n }).collect()
        })
        .collect()
}

/// Classical multidimensional scaling of a symmetric dissimilarity matrix `d`
/// (`k × k` row-major) to two dimensions: double-centre −½ d², take the two largest
/// eigenpairs, scale the eigenvectors by the square roots of their (non-negative)
/// eigenvalues. Each axis' sign is fixed so its largest-magnitude coordinate is
/// positive, so the map does not flip between calls.
pub fn classical_mds(d: &[f64], k: usize) -> (Vec<[f64; 2]>, [f64; 2]) {
    if k == 0 {
        return (Vec::new(), [0.0, 0.0]);
    }
    let sq = DMatrix::from_fn(k, k, |i, j| -0.5 * d[i * k + j] * d[i * k + j]);
    let row_means: Vec<f64> = (0..k).map(|i| sq.row(i).sum() / k as f64).collect();
    let grand = row_means.iter().sum::<f64>() / k as f64;
    let centred = DMatrix::from_fn(k, k, |i, j| sq[(i, j)] - row_means[i] - row_means[j] + grand);
    let eigen = SymmetricEigen::new(centred);
    let mut order: Vec<usize> = (0..k).collect();
    order.sort_by(|&a, &b| eigen.eigenvalues[b].total_cmp(&eigen.eigenvalues[a]));
    let positive: f64 = eigen.eigenvalues.iter().filter(|&&l| l > 0.0).sum();
    let mut coordinates = vec![[0.0; 2]; k];
    let mut explained = [0.0; 2];
    for (axis, &e) in order.iter().take(2).enumerate() {
        let lambda = eigen.eigenvalues[e].max(0.0);
        let v = eigen.eigenvectors.column(e);
        let largest = v.iter().copied().max_by(|a, b| a.abs().total_cmp(&b.abs())).unwrap_or(0.0);
        let sign = if largest < 0.0 { -1.0 } else { 1.0 };
        for (c, x) in coordinates.iter_mut().zip(v.iter()) {
            c[axis] = sign * x * lambda.sqrt();
        }
        explained[axis] = if positive > 0.0 { lambda / positive } else { 0.0 };
    }
    (coordinates, explained)
}

/// Σ x ln x over a distribution (0 ln 0 = 0): minus its entropy.
fn neg_entropy(p: &[f64]) -> f64 {
    p.iter().map(|&x| if x > 0.0 { x * x.ln() } else { 0.0 }).sum()
}

/// [`jensen_shannon`] given each distribution's Σ x ln x: since m = (p + q) / 2,
/// ½ KL(p ‖ m) + ½ KL(q ‖ m) = ½ Σ p ln p + ½ Σ q ln q − Σ m ln m, one logarithm per
/// word instead of two (the map's cost is k²/2 of these over the vocabulary).
fn jensen_shannon_from(p: &[f64], q: &[f64], p_neg_entropy: f64, q_neg_entropy: f64) -> f64 {
    let m_neg_entropy: f64 = p
        .iter()
        .zip(q)
        .map(|(&a, &b)| {
            let m = 0.5 * (a + b);
            if m > 0.0 {
                m * m.ln()
            } else {
                0.0
            }
        })
        .sum();
    (0.5 * (p_neg_entropy + q_neg_entropy) - m_neg_entropy).max(0.0)
}

/// The intertopic map of a topic table's frequency rows.
pub fn topic_map(frequency: &Array2<f64>) -> TopicMap {
    let rows = distributions(frequency);
    let k = rows.len();
    let neg_entropies: Vec<f64> = rows.par_iter().map(|r| neg_entropy(r)).collect();
    // Each pair once (the upper triangle), then mirrored.
    let pairs: Vec<(usize, usize)> = (0..k).flat_map(|i| (i + 1..k).map(move |j| (i, j))).collect();
    let upper: Vec<f64> = pairs.par_iter().map(|&(i, j)| jensen_shannon_from(&rows[i], &rows[j], neg_entropies[i], neg_entropies[j])).collect();
    let mut divergences = vec![0.0; k * k];
    for (&(i, j), &d) in pairs.iter().zip(&upper) {
        divergences[i * k + j] = d;
        divergences[j * k + i] = d;
    }
    let (coordinates, explained) = classical_mds(&divergences, k);
    TopicMap { coordinates, explained, divergences }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn jensen_shannon_has_its_known_values() {
        assert_eq!(jensen_shannon(&[0.5, 0.5], &[0.5, 0.5]), 0.0);
        // Disjoint supports: ln 2.
        assert!((jensen_shannon(&[1.0, 0.0], &[0.0, 1.0]) - 2f64.ln()).abs() < 1e-15);
        // By hand: p = (0.75, 0.25), q = (0.25, 0.75), m = (0.5, 0.5):
        // ½[0.75 ln 1.5 + 0.25 ln 0.5] · 2 (symmetric) = 0.75 ln 1.5 + 0.25 ln 0.5.
        let expected = 0.75 * 1.5f64.ln() + 0.25 * 0.5f64.ln();
        assert!((jensen_shannon(&[0.75, 0.25], &[0.25, 0.75]) - expected).abs() < 1e-15);
    }

    /// Points that lie in a plane are recovered up to rotation and reflection: every
    /// pairwise distance of the map equals the input's, and two axes explain it all.
    #[test]
    fn the_map_s_divergences_are_the_definition_s() {
        // Random-ish distributions over 50 words, some with zeros.
        let rows: Vec<Vec<f64>> = (0..6)
            .map(|t| {
                let raw: Vec<f64> = (0..50).map(|w| if (w * 7 + t * 3) % 11 == 0 { 0.0 } else { ((w * 31 + t * 17) % 13) as f64 + 0.5 }).collect();
                let total: f64 = raw.iter().sum();
                raw.iter().map(|x| x / total).collect()
            })
            .collect();
        let frequency = Array2::from_shape_vec((6, 50), rows.concat()).unwrap();
        let map = topic_map(&frequency);
        for i in 0..6 {
            assert_eq!(map.divergences[i * 6 + i], 0.0);
            for j in 0..6 {
                // Both forms sum about 50 terms of size up to 0.1 · 3: rounding stays
                // far below 1e-13.
                let d = if i == j { 0.0 } else { jensen_shannon(&rows[i], &rows[j]) };
                assert!((map.divergences[i * 6 + j] - d).abs() < 1e-13, "{i} {j}: {} vs {d}", map.divergences[i * 6 + j]);
                assert_eq!(map.divergences[i * 6 + j], map.divergences[j * 6 + i]);
            }
        }
    }

    #[test]
    fn mds_recovers_planar_points_exactly() {
        let points = [[0.0, 0.0], [3.0, 0.0], [0.0, 4.0], [1.0, 1.0], [-2.0, 0.5]];
        let k = points.len();
        let dist = |a: [f64; 2], b: [f64; 2]| ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2)).sqrt();
        let d: Vec<f64> = (0..k * k).map(|ij| dist(points[ij / k], points[ij % k])).collect();
        let (map, explained) = classical_mds(&d, k);
        for i in 0..k {
            for j in 0..k {
                assert!((dist(map[i], map[j]) - d[i * k + j]).abs() < 1e-9, "{i} {j}");
            }
        }
        assert!((explained[0] + explained[1] - 1.0).abs() < 1e-12, "{explained:?}");
        assert!(explained[0] >= explained[1]);
        // Centred at the origin.
        for axis in 0..2 {
            assert!(map.iter().map(|c| c[axis]).sum::<f64>().abs() < 1e-9);
        }
    }

    #[test]
    fn similar_topics_land_close_and_the_map_is_deterministic() {
        // Topics 0 and 1 share their words; topic 2 uses others. Rows are rates, not
        // distributions (HPC's β): the map normalises them.
        let f = array![[4.0, 4.0, 0.1, 0.1], [3.0, 5.0, 0.1, 0.1], [0.1, 0.1, 2.0, 6.0]];
        let map = topic_map(&f);
        let d = |a: usize, b: usize| ((map.coordinates[a][0] - map.coordinates[b][0]).powi(2) + (map.coordinates[a][1] - map.coordinates[b][1]).powi(2)).sqrt();
        assert!(d(0, 1) < d(0, 2) && d(0, 1) < d(1, 2), "{map:?}");
        assert_eq!(map.divergences[1], map.divergences[3], "symmetric");
        assert_eq!(topic_map(&f), map);
        assert_eq!(topic_map(&Array2::zeros((0, 4))).coordinates.len(), 0);
    }
}
