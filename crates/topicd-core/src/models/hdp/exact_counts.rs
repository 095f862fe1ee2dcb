//! A batch's topic-word counts accumulated exactly, so their sum does not depend on how
//! the documents are split between threads, waves or ranks.
//!
//! Why it exists: a batch summary's N_kw is a sum over the batch's documents of c · r_wk.
//! Summed in floating point, its bits depend on the order of the additions, so a fit
//! whose documents are spread over R ranks could only match one process by adding every
//! document in corpus order, one rank after another (each rank holding all its
//! documents' contributions until the ranks before it are done). Instead every
//! contribution (a value in [0, c]) is rounded to a multiple of 2⁻³⁰ and added as a
//! 64-bit integer: integer addition is associative, so each rank sums its own
//! documents, the ranks' integers are summed by an integer all-reduce
//! ([`crate::ranks::Ranks::sum_u64`]), and the total is turned back into `f64` once.
//! The result is the same for every split. Each contribution moves by at most 2⁻³¹
//! (4.7 × 10⁻¹⁰ of a token), by rounding to nearest, so the errors do not pile up in one
//! direction. A cell holds up to 2³³ tokens (8.6 × 10⁹ of one word in one topic: more
//! than any corpus has; [`MAX_TOKENS`] bounds the corpus). The cells take 8 bytes, as
//! `f64` counts did, so the scattered adds touch no more memory; and since integer sums
//! need no order, a batch's cells are filled by several threads at once, each owning a
//! range of word rows ([`ExactCounts::row_ranges_mut`]).

/// Fractional bits of a cell.
const FRACTION_BITS: i32 = 30;
/// 2³⁰, the scale of a cell.
const SCALE: f64 = 1_073_741_824.0;
/// The most tokens a corpus may have for its counts to fit the cells (2³³).
pub const MAX_TOKENS: u64 = 1 << 33;

/// Counts over a batch's word rows × K topics, as fixed-point integers.
#[derive(Debug, Clone, PartialEq)]
pub struct ExactCounts {
    pub num_topics: usize,
    /// `cells[row * K + k]`, the sum × 2³⁰.
    cells: Vec<i64>,
}

/// `x` × 2³⁰ rounded to the nearest integer (halves away from zero), for a finite `x`
/// with |x| < 2³³ (a count's contribution): a multiplication, an addition and one
/// hardware conversion. Exact up to the rounding: × 2³⁰ only moves the exponent, and
/// adding ½ to a product below 2⁵² is exact.
#[inline]
pub fn to_fixed(x: f64) -> i64 {
    debug_assert!(x.is_finite() && x.abs() < MAX_TOKENS as f64, "a count's contribution: {x}");
    let half = 0.5f64.copysign(x);
    (x * SCALE + half) as i64
}

/// A fixed-point value as the nearest `f64` (exact below 2⁵³ / 2³⁰ tokens).
#[inline]
pub fn from_fixed(v: i64) -> f64 {
    (v as f64) * (-(FRACTION_BITS as f64)).exp2()
}

impl ExactCounts {
    /// Zero counts over `rows` word rows.
    pub fn zeros(rows: usize, num_topics: usize) -> Self {
        ExactCounts { num_topics, cells: vec![0; rows * num_topics] }
    }

    pub fn rows(&self) -> usize {
        self.cells.len() / self.num_topics.max(1)
    }

    /// Add one word's contributions (K values) to row `row`.
    #[inline]
    pub fn add_row(&mut self, row: usize, values: &[f64]) {
        let k = self.num_topics;
        add_to_cells(&mut self.cells[row * k..(row + 1) * k], values);
    }

    /// The cells cut into `parts` runs of whole rows (the first row of each and its
    /// cells), for threads that each fill their own rows.
    pub fn row_ranges_mut(&mut self, parts: usize) -> Vec<(usize, RowCells<'_>)> {
        let (rows, k) = (self.rows(), self.num_topics.max(1));
        let per = rows.div_ceil(parts.max(1)).max(1);
        self.cells.chunks_mut(per * k).enumerate().map(|(i, cells)| (i * per, RowCells { cells, k })).collect()
    }

    /// The counts as `f64`, row-major (`rows × K`).
    pub fn to_f64(&self) -> Vec<f64> {
        self.cells.iter().map(|&v| from_fixed(v)).collect()
    }

    /// The cells as unsigned integers: element-wise wrapping sums of such arrays over
    /// the ranks are the summed cells (two's complement), since the true sums fit.
    pub fn to_words(&self) -> Vec<u64> {
        self.cells.iter().map(|&v| v as u64).collect()
    }

    /// The counts whose cells (summed over ranks) are `words` ([`Self::to_words`]).
    pub fn from_words(words: &[u64], num_topics: usize) -> Self {
        ExactCounts { num_topics, cells: words.iter().map(|&w| w as i64).collect() }
    }
}

/// `cells[t] += values[t]` as fixed-point, for contributions c · r ≥ 0 (what the local
/// step adds): [`to_fixed`] without the sign, the product held inside [0, 2⁶³) (a NaN
/// or negative value adds 0, an impossible one past 2³³ tokens saturates), so that the
/// conversion needs no checks.
#[inline]
fn add_to_cells(cells: &mut [i64], values: &[f64]) {
    const LIMIT: f64 = 9.223_372_036_854_774e18; // the largest f64 below 2⁶³
    for (cell, &x) in cells.iter_mut().zip(values) {
        // Not `clamp`: it would keep a NaN, which `max` turns into 0.
        #[allow(clippy::manual_clamp)]
        let scaled = (x * SCALE + 0.5).max(0.0).min(LIMIT);
        // SAFETY: `scaled` is finite and in [0, 2⁶³): `max` turns NaN and −∞ into 0.
        *cell += unsafe { scaled.to_int_unchecked::<i64>() };
    }
}

/// A run of whole rows of an [`ExactCounts`] (row 0 here is its first row).
pub struct RowCells<'a> {
    cells: &'a mut [i64],
    k: usize,
}

impl RowCells<'_> {
    /// How many rows this run holds.
    pub fn rows(&self) -> usize {
        self.cells.len() / self.k
    }

    /// Add one word's contributions to this run's row `row`.
    #[inline]
    pub fn add_row(&mut self, row: usize, values: &[f64]) {
        let k = self.k;
        add_to_cells(&mut self.cells[row * k..(row + 1) * k], values);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};

    /// Multiples of 2⁻³⁰ convert exactly both ways; others round to the nearest one.
    #[test]
    fn values_round_to_the_nearest_step() {
        for x in [0.0, 1.0, 0.5, 3.75, 2047.875, 1e9 + 0.5, 2f64.powi(-30), -7.125, 8.0e9] {
            assert_eq!(from_fixed(to_fixed(x)), x, "{x}");
        }
        let step = 2f64.powi(-30);
        assert_eq!(to_fixed(0.49 * step), 0);
        assert_eq!(to_fixed(0.51 * step), 1);
        assert_eq!(to_fixed(-0.51 * step), -1);
        assert_eq!(to_fixed(1.5 * step), 2, "halves away from zero");
    }

    /// The sum does not depend on the order or grouping of the additions, and cells
    /// summed as wrapping integers over "ranks" give the same cells (with negative
    /// values, so the two's complement matters).
    #[test]
    fn sums_are_independent_of_order_and_split() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let values: Vec<f64> =
            (0..4000).map(|i| if i % 7 == 0 { -rng.random::<f64>() * 1e6 } else { rng.random::<f64>() * 10f64.powi(rng.random_range(-12..4)) }).collect();
        let k = 4;
        let mut whole = ExactCounts::zeros(1, k);
        for row in values.chunks(k) {
            whole.add_row(0, row);
        }
        let mut reversed = ExactCounts::zeros(1, k);
        for row in values.chunks(k).rev() {
            reversed.add_row(0, row);
        }
        assert_eq!(whole, reversed);
        for ranks in [2usize, 3, 5] {
            let mut summed = vec![0u64; k];
            let per = values.len() / k;
            for q in 0..ranks {
                let mut part = ExactCounts::zeros(1, k);
                for row in values.chunks(k).skip(q * per / ranks).take((q + 1) * per / ranks - q * per / ranks) {
                    part.add_row(0, row);
                }
                for (s, w) in summed.iter_mut().zip(part.to_words()) {
                    *s = s.wrapping_add(w);
                }
            }
            assert_eq!(ExactCounts::from_words(&summed, k), whole, "{ranks} ranks");
        }
    }

    /// Rows filled run by run (as threads do) give the cells one pass gives.
    #[test]
    fn row_runs_fill_the_same_cells() {
        let (rows, k) = (10, 3);
        let value = |r: usize, t: usize| (r * 7 + t) as f64 / 3.0;
        let mut whole = ExactCounts::zeros(rows, k);
        for r in 0..rows {
            whole.add_row(r, &(0..k).map(|t| value(r, t)).collect::<Vec<_>>());
        }
        for parts in [1, 3, 4, 20] {
            let mut runs = ExactCounts::zeros(rows, k);
            for (first, mut cells) in runs.row_ranges_mut(parts) {
                for r in 0..cells.rows() {
                    cells.add_row(r, &(0..k).map(|t| value(first + r, t)).collect::<Vec<_>>());
                }
            }
            assert_eq!(runs, whole, "{parts} parts");
        }
    }

    /// Integer counts sum exactly; a sum of many small responsibilities stays within its
    /// rounding bound (half a step each) of the floating-point sum.
    #[test]
    fn counts_sum_within_their_rounding_bound() {
        let mut c = ExactCounts::zeros(2, 2);
        for i in 0..1000u32 {
            c.add_row(i as usize % 2, &[i as f64, 0.25]);
        }
        let sums = c.to_f64();
        assert_eq!(sums, vec![(0..1000).step_by(2).sum::<u32>() as f64, 125.0, (1..1000).step_by(2).sum::<u32>() as f64, 125.0]);
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let xs: Vec<f64> = (0..100_000).map(|_| rng.random::<f64>() * 3.0).collect();
        let mut exact = ExactCounts::zeros(1, 1);
        xs.iter().for_each(|&x| exact.add_row(0, &[x]));
        let float: f64 = xs.iter().sum();
        assert!((exact.to_f64()[0] - float).abs() <= xs.len() as f64 * 2f64.powi(-31) + 1e-9, "{} vs {float}", exact.to_f64()[0]);
    }
}
