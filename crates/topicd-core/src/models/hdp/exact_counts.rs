//! A batch's topic-word counts accumulated exactly, so their sum does not depend on how
//! the documents are split between threads, waves or ranks.
//!
//! Why it exists: a batch summary's N_kw is a sum over the batch's documents of c · r_wk.
//! Summed in floating point, its bits depend on the order of the additions, so a fit
//! whose documents are spread over R ranks could only match one process by adding every
//! document in corpus order, one rank after another (each rank holding all its
//! documents' contributions until the ranks before it are done). Instead every
//! contribution (a value in [0, c]) is added as a fixed-point integer with 64 fractional
//! bits: integer addition is associative, so each rank sums its own documents, the ranks'
//! integers are summed by an integer all-reduce ([`crate::ranks::Ranks::sum_u64`], over
//! three 43-bit limbs so that no carry is lost), and the total is rounded to `f64` once.
//! The result is the same for every split; it differs from a floating-point sum only by
//! contributions below 2⁻⁶⁴ (a count that small is dropped) and is closer to the exact
//! sum than a long floating-point sum is.

/// Fractional bits of a cell.
const FRACTION_BITS: i32 = 64;
/// Bits of each limb of a cell on the wire (three limbs: 43 + 43 + the signed rest).
const LIMB_BITS: u32 = 43;

/// Counts over a batch's word rows × K topics, as fixed-point integers.
#[derive(Debug, Clone, PartialEq)]
pub struct ExactCounts {
    pub num_topics: usize,
    /// `cells[row * K + k]`, the sum × 2⁶⁴.
    cells: Vec<i128>,
}

/// `x` × 2⁶⁴ rounded toward zero, for a finite `x` with |x| < 2⁶³ (a count's
/// contribution); two hardware conversions instead of a software `f64 → i128`.
#[inline]
pub fn to_fixed(x: f64) -> i128 {
    debug_assert!(x.is_finite() && x.abs() < 9.2e18, "a count's contribution: {x}");
    let magnitude = x.abs();
    let whole = magnitude.trunc();
    // Both steps are exact: x − trunc(x) is representable, and × 2⁶⁴ only moves the
    // exponent; the second truncation drops what lies below 2⁻⁶⁴.
    let fraction = ((magnitude - whole) * 18_446_744_073_709_551_616.0) as u64;
    let value = ((whole as u64 as i128) << FRACTION_BITS) | fraction as i128;
    if x < 0.0 {
        -value
    } else {
        value
    }
}

/// A fixed-point value as the nearest `f64` (one rounding).
#[inline]
pub fn from_fixed(v: i128) -> f64 {
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
        for (cell, &x) in self.cells[row * k..(row + 1) * k].iter_mut().zip(values) {
            *cell += to_fixed(x);
        }
    }

    /// The counts as `f64`, row-major (`rows × K`).
    pub fn to_f64(&self) -> Vec<f64> {
        self.cells.iter().map(|&v| from_fixed(v)).collect()
    }

    /// The cells as three limbs each (low 43 bits, next 43 bits, the signed rest), laid
    /// out limb after limb: element-wise integer sums of such arrays over the ranks
    /// (wrapping `u64`, so two's complement) are the limbs of the summed cells, for up
    /// to 2²⁰ ranks (each low limb's sum stays below 2⁶³).
    pub fn to_limbs(&self) -> Vec<u64> {
        let n = self.cells.len();
        let mask = (1i128 << LIMB_BITS) - 1;
        let mut limbs = vec![0u64; 3 * n];
        for (i, &v) in self.cells.iter().enumerate() {
            limbs[i] = (v & mask) as u64;
            limbs[n + i] = ((v >> LIMB_BITS) & mask) as u64;
            limbs[2 * n + i] = (v >> (2 * LIMB_BITS)) as i64 as u64;
        }
        limbs
    }

    /// The counts whose limbs (summed over ranks) are `limbs` ([`Self::to_limbs`]).
    pub fn from_limbs(limbs: &[u64], num_topics: usize) -> Self {
        let n = limbs.len() / 3;
        let cells = (0..n)
            .map(|i| {
                let (low, mid, high) = (limbs[i] as i128, limbs[n + i] as i128, limbs[2 * n + i] as i64 as i128);
                low + (mid << LIMB_BITS) + (high << (2 * LIMB_BITS))
            })
            .collect();
        ExactCounts { num_topics, cells }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};

    /// Values with a finite binary expansion above 2⁻⁶⁴ convert exactly both ways.
    #[test]
    fn dyadic_values_round_trip() {
        for x in [0.0, 1.0, 0.5, 3.75, 1e15 + 0.5, 2f64.powi(-64), -7.125, 4.0e18] {
            assert_eq!(from_fixed(to_fixed(x)), x, "{x}");
        }
        // Below 2⁻⁶⁴ nothing is kept; just above, the value truncated to 2⁻⁶⁴.
        assert_eq!(to_fixed(2f64.powi(-66)), 0);
        assert_eq!(to_fixed(1.5 * 2f64.powi(-64)), 1);
    }

    /// The sum does not depend on the order or grouping of the additions, and limbs
    /// summed as wrapping integers over "ranks" give the same cells (with negative and
    /// large values, so every limb carries).
    #[test]
    fn sums_are_independent_of_order_and_split() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let values: Vec<f64> =
            (0..4000).map(|i| if i % 7 == 0 { -rng.random::<f64>() * 1e12 } else { rng.random::<f64>() * 10f64.powi(rng.random_range(-20..15)) }).collect();
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
            let mut summed = vec![0u64; 3 * k];
            let per = values.len() / k;
            for q in 0..ranks {
                let mut part = ExactCounts::zeros(1, k);
                for row in values.chunks(k).skip(q * per / ranks).take((q + 1) * per / ranks - q * per / ranks) {
                    part.add_row(0, row);
                }
                for (s, l) in summed.iter_mut().zip(part.to_limbs()) {
                    *s = s.wrapping_add(l);
                }
            }
            assert_eq!(ExactCounts::from_limbs(&summed, k), whole, "{ranks} ranks");
        }
    }

    /// The rounded total is within one rounding of the exact sum of the truncated
    /// contributions: for integers (exact in both) it equals the `f64` sum.
    #[test]
    fn integer_counts_sum_exactly() {
        let mut c = ExactCounts::zeros(2, 2);
        for i in 0..1000u32 {
            c.add_row(i as usize % 2, &[i as f64, 0.25]);
        }
        let sums = c.to_f64();
        assert_eq!(sums, vec![(0..1000).step_by(2).sum::<u32>() as f64, 125.0, (1..1000).step_by(2).sum::<u32>() as f64, 125.0]);
    }
}
