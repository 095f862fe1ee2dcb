//! e^x without a library call, for the loops that exponentiate hundreds of log rates
//! per gradient evaluation.
//!
//! Why it exists: HPC's rate block exponentiates every log rate of a word's block at
//! each leapfrog step; through the C library each `exp` is an out-of-line call (with
//! its error-handling wrapper), about 15 % of a steady scan. This version is inlined
//! and branch-free, so the compiler can keep it in registers and vectorise the loops.
//!
//! Method (as fdlibm's): x = k ln 2 + r with k = round(x / ln 2) and |r| ≤ ln 2 / 2,
//! r computed exactly in two parts (Cody–Waite: ln 2 = hi + lo, hi with trailing zero
//! bits so k·hi is exact); e^r by its Taylor polynomial of degree 13 (truncation below
//! 1e-17 relative); the result scaled by 2^k as two powers of two, 2^⌊k/2⌋ · 2^(k −
//! ⌊k/2⌋), so that overflow gives ∞ and gradual underflow gives subnormals and 0 like
//! the library. Relative error within 2 ulp of the exact value (tested against `f64::exp`).
//! NaN gives NaN, −∞ gives 0, +∞ gives ∞.

const LOG2_E: f64 = std::f64::consts::LOG2_E;
/// ln 2 = LN2_HI + LN2_LO (fdlibm's split: LN2_HI ≈ 0.693147180369 has 32 trailing zero
/// bits, LN2_LO ≈ 1.90821492927e-10).
const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
/// 1.5 · 2^52: adding it rounds a double of magnitude below 2^51 to an integer.
const ROUNDER: f64 = 6_755_399_441_055_744.0;

/// e^x (see the module doc).
#[inline]
pub fn fast_exp(x: f64) -> f64 {
    // Beyond these bounds e^x is ∞ or 0 in f64; clamping keeps k small.
    let x = x.clamp(-746.0, 710.0);
    let shifted = x * LOG2_E + ROUNDER;
    let kf = shifted - ROUNDER;
    // kf is an integer in [−1077, 1025], or NaN (then k = 0 and the result is NaN).
    let k = kf as i64;
    let r = (x - kf * LN2_HI) - kf * LN2_LO;
    // Taylor polynomial of e^r, degree 13, by Horner.
    let mut p = 1.0 / 6_227_020_800.0;
    for c in [
        1.0 / 479_001_600.0,
        1.0 / 39_916_800.0,
        1.0 / 3_628_800.0,
        1.0 / 362_880.0,
        1.0 / 40_320.0,
        1.0 / 5_040.0,
        1.0 / 720.0,
        1.0 / 120.0,
        1.0 / 24.0,
        1.0 / 6.0,
        0.5,
        1.0,
        1.0,
    ] {
        p = p * r + c;
    }
    // k ∈ [−1077, 1025]: both halves are normal powers of two. (k + 2048) is positive,
    // so a logical shift halves it.
    let half = ((k + 2048) as u64 >> 1) as i64 - 1024;
    let rest = k - half;
    let scale = |e: i64| f64::from_bits(((e + 1023) as u64) << 52);
    p * scale(half) * scale(rest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{stream, Purpose};
    use rand::RngExt;

    /// Within 2 ulp of the library's e^x (itself within 1 ulp of the exact value) over
    /// the whole finite range, dense near 0 where log rates live, and the same at the
    /// edges: overflow, subnormal results, underflow to 0, ±∞ and NaN.
    #[test]
    fn matches_the_library_exp() {
        let mut rng = stream(5, Purpose::Estimate, 0, 0);
        let check = |x: f64| {
            let (got, want) = (fast_exp(x), x.exp());
            if want == 0.0 || want.is_infinite() {
                assert_eq!(got, want, "x = {x}");
            } else if want < f64::MIN_POSITIVE {
                // Subnormal: absolute error within a couple of the smallest steps.
                assert!((got - want).abs() <= 2.0 * 4.9e-324, "x = {x}: {got:e} vs {want:e}");
            } else {
                let ulps = (got.to_bits() as i64 - want.to_bits() as i64).abs();
                assert!(ulps <= 2, "x = {x}: {got:e} vs {want:e} ({ulps} ulp)");
            }
        };
        for _ in 0..200_000 {
            check(rng.random::<f64>() * 1_460.0 - 750.0);
            check(rng.random::<f64>() * 40.0 - 20.0);
            check((rng.random::<f64>() - 0.5) * 1e-6);
        }
        for x in [0.0, -0.0, 1.0, -1.0, 709.78, 709.79, 710.0, 1e300, -708.3, -708.5, -740.0, -745.0, -745.2, -746.0, -1e300, f64::MIN_POSITIVE] {
            check(x);
        }
        assert_eq!(fast_exp(f64::INFINITY), f64::INFINITY);
        assert_eq!(fast_exp(f64::NEG_INFINITY), 0.0);
        // NaN of either sign (x86 produces negative ones, e.g. from ∞ − ∞).
        assert!(fast_exp(f64::NAN).is_nan());
        assert!(fast_exp(-f64::NAN).is_nan());
        assert!(fast_exp(f64::INFINITY - f64::INFINITY).is_nan());
    }
}
