//! A new document's log density over *all* K affinities, for its mode ξ* (paper 003,
//! §3.3), with the word pass vectorised.
//!
//! Why it exists: [`super::affinity::ActiveAffinities`] is the sampler's density of one
//! document's *active* block, a handful of labels, where a plain loop is as fast as any.
//! Prediction spreads θ = softmax(ξ) over every label (K = 465 on linuxdoc), and the
//! word pass, s_f = θᵀβ_f and g += (w_f / s_f) β_f for each distinct word f, is then
//! nearly all of a prediction's time (about two thirds of it, measured with `perf` on
//! linuxdoc). Written as the sampler's loop, s_f is a single chain of dependent
//! additions (the compiler may not reorder floating-point sums) and g takes one division
//! per (word, label); here s_f sums in sixteen independent lanes and each word takes one
//! division. The density is the same as `ActiveAffinities` without the label terms
//! (checked by a test), only rounded differently:
//!
//! log p(ξ | w) = −l Σ_k θ_k B_k + Σ_f w_f log(θᵀβ_f) − Σ_k (ξ_k − η_k)² / (2λ²) + const.
//!
//! The word pass is compiled three times (portable, AVX2, AVX-512; [`crate::isa`]) and
//! the processor's best runs, unless `TOPICD_HPC_ISA` names a slower one. The lanes are
//! explicit in the source and Rust never fuses a multiply with an add, so every path
//! gives the same bits (checked by a test).
//!
//! Sixteen lanes are two AVX-512 registers, and one word's dot product is then a chain of
//! dependent additions on each: `perf` put 60 % of the word pass on that dot product. So
//! the vector paths take a block of words at once (four on AVX-512, two on AVX2, whose
//! sixteen registers hold no more), one θ load serving the block, each word in its own
//! accumulators: 1.10× the predictions a second on linuxdoc
//! (docs/decisions/0028-hpc-word-pass-in-blocks.md). Each word's lanes still add in the
//! same order, and g still takes the words one after another, element by element, so a
//! block gives the bits of one word at a time (checked by a test).

use crate::isa::Isa;

/// The instruction set prediction's word pass runs: the processor's best, unless
/// `TOPICD_HPC_ISA` names a slower one. Read once per process.
pub(crate) fn prediction_isa() -> Isa {
    static SELECTED: std::sync::OnceLock<Isa> = std::sync::OnceLock::new();
    *SELECTED.get_or_init(|| Isa::from_env("TOPICD_HPC_ISA"))
}

/// Lanes of the dot product s_f = θᵀβ_f: independent partial sums (two AVX-512 or
/// four AVX2 registers), combined in a fixed order.
const LANES: usize = 16;

/// The simplified model's log density of a new document's affinities.
pub struct DenseAffinities<'a> {
    /// l, the document's length over the mean training length.
    pub length: f64,
    /// B_k = Σ_f β_fk for every label.
    pub rate_totals: &'a [f64],
    /// w_f for each distinct word of the document.
    pub counts: &'a [f64],
    /// β_f (K values) for each word, in the order of `counts`, word-major.
    pub rates: &'a [f64],
    /// η and λ², the affinities' prior.
    pub eta: &'a [f64],
    pub lambda2: f64,
    /// The word pass's instruction set ([`prediction_isa`] outside tests).
    pub(crate) isa: Isa,
}

impl DenseAffinities<'_> {
    /// The log density at ξ (up to a constant) and its gradient, written into `grad`.
    pub fn logp_grad(&self, xi: &[f64], grad: &mut [f64]) -> f64 {
        let theta = super::affinity::softmax(xi);
        // g_k = ∂/∂θ_k of the word term: −l B_k + Σ_f (w_f / s_f) β_fk.
        let mut g: Vec<f64> = self.rate_totals.iter().map(|b| -self.length * b).collect();
        let mut logp = -self.length * dot(&theta, self.rate_totals);
        logp += word_pass(self.isa, &theta, self.counts, self.rates, &mut g);
        // Chain rule through the softmax, ∂θ_j/∂ξ_k = θ_j(δ_jk − θ_k), then the prior.
        let m = dot(&theta, &g);
        for k in 0..xi.len() {
            let d = xi[k] - self.eta[k];
            logp -= 0.5 * d * d / self.lambda2;
            grad[k] = theta[k] * (g[k] - m) - d / self.lambda2;
        }
        logp
    }
}

/// Σ_f w_f log s_f over the words, adding (w_f / s_f) β_f to `g` (s_f = θᵀβ_f), on the
/// instruction set `isa`.
fn word_pass(isa: Isa, theta: &[f64], counts: &[f64], rates: &[f64], g: &mut [f64]) -> f64 {
    match isa {
        // One word's sixteen lanes fill eight of SSE2's sixteen registers, two words'
        // would fill them all: blocks of one.
        Isa::Portable => word_pass_body::<Portable, 1>(theta, counts, rates, g),
        // SAFETY: `isa` is one the processor supports (`Isa::detect` or `Isa::available`).
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => unsafe { word_pass_avx2(theta, counts, rates, g) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => unsafe { word_pass_avx512(theta, counts, rates, g) },
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn word_pass_avx2(theta: &[f64], counts: &[f64], rates: &[f64], g: &mut [f64]) -> f64 {
    // Two words' lanes (eight registers) and θ's four leave room in AVX2's sixteen.
    word_pass_body::<x86::Avx2, 2>(theta, counts, rates, g)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn word_pass_avx512(theta: &[f64], counts: &[f64], rates: &[f64], g: &mut [f64]) -> f64 {
    // Four words' lanes are eight of AVX-512's thirty-two registers.
    word_pass_body::<x86::Avx512, 4>(theta, counts, rates, g)
}

/// The word pass's body, inlined into each instruction set's copy: the words in blocks
/// of `N`, then the rest one by one, with the bits of one word at a time.
#[inline(always)]
fn word_pass_body<L: Lanes, const N: usize>(theta: &[f64], counts: &[f64], rates: &[f64], g: &mut [f64]) -> f64 {
    let k = theta.len();
    let blocked = counts.len() / N * N;
    let mut logp = 0.0;
    for start in (0..blocked).step_by(N) {
        let betas: [&[f64]; N] = std::array::from_fn(|i| &rates[(start + i) * k..(start + i + 1) * k]);
        let words: [f64; N] = std::array::from_fn(|i| counts[start + i]);
        // SAFETY: the caller runs this copy only where `L`'s instruction set exists.
        logp = block_pass(unsafe { L::partial_sums::<N>(theta, betas) }, logp, theta, words, betas, g);
    }
    for (&w, beta) in counts[blocked..].iter().zip(rates[blocked * k..].chunks_exact(k)) {
        // SAFETY: as above.
        logp = block_pass(unsafe { L::partial_sums::<1>(theta, [beta]) }, logp, theta, [w], [beta], g);
    }
    logp
}

/// A block's share of the word pass from its words' lane sums `acc`: logp plus
/// Σ w_f log s_f, the words in order, and g += (w_f / s_f) β_f, returning the new logp.
/// One division per word, not per (word, label); g takes the block's words one after
/// another, element by element, so any block size and vector width give the same bits.
#[inline(always)]
fn block_pass<const N: usize>(acc: [[f64; LANES]; N], mut logp: f64, theta: &[f64], words: [f64; N], betas: [&[f64]; N], g: &mut [f64]) -> f64 {
    let mut ratio = [0.0; N];
    for i in 0..N {
        let s = combine(acc[i], theta, betas[i]);
        logp += words[i] * s.ln();
        ratio[i] = words[i] / s;
    }
    let betas = betas.map(|b| &b[..g.len()]);
    for (k, gk) in g.iter_mut().enumerate() {
        let mut v = *gk;
        for i in 0..N {
            v += ratio[i] * betas[i][k];
        }
        *gk = v;
    }
    logp
}

/// Σ_i a_i b_i: the lanes' partial sums of [`Lanes::partial_sums`] added in a fixed
/// tree, then the elements past the last whole group of [`LANES`].
#[inline(always)]
fn combine(acc: [f64; LANES], a: &[f64], b: &[f64]) -> f64 {
    let whole = a.len() / LANES * LANES;
    let tail: f64 = a[whole..].iter().zip(&b[whole..]).map(|(x, y)| x * y).sum();
    let mut width = LANES;
    let mut acc = acc;
    while width > 1 {
        width /= 2;
        for i in 0..width {
            acc[i] += acc[i + width];
        }
    }
    acc[0] + tail
}

/// Σ_i a_i b_i in the order of the word pass (portable lanes): the ξ-side sums.
pub(crate) fn dot(a: &[f64], b: &[f64]) -> f64 {
    // SAFETY: the portable lanes need no instruction set.
    let [acc] = unsafe { Portable::partial_sums::<1>(a, [b]) };
    combine(acc, a, b)
}

/// [`LANES`] partial sums of dot products: for each of the `N` vectors b, lane j adds
/// a_i b_i for every i ≡ j (mod LANES) below the last whole group, one multiply then one
/// add per element, so every implementation and every `N` gives the same bits.
trait Lanes {
    /// # Safety
    /// The implementation's instruction set must be available; `a` and every `b` have
    /// the same length.
    unsafe fn partial_sums<const N: usize>(a: &[f64], b: [&[f64]; N]) -> [[f64; LANES]; N];
}

/// Plain Rust lanes.
struct Portable;

impl Lanes for Portable {
    #[inline(always)]
    unsafe fn partial_sums<const N: usize>(a: &[f64], b: [&[f64]; N]) -> [[f64; LANES]; N] {
        debug_assert!(b.iter().all(|b| b.len() == a.len()));
        let mut acc = [[0.0f64; LANES]; N];
        for (group, x) in a.chunks_exact(LANES).enumerate() {
            for (acc, b) in acc.iter_mut().zip(&b) {
                let y = &b[group * LANES..(group + 1) * LANES];
                for j in 0..LANES {
                    acc[j] += x[j] * y[j];
                }
            }
        }
        acc
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Lanes, LANES};
    use std::arch::x86_64::*;

    /// Lanes held in `LANES / WIDTH` registers of `WIDTH` doubles, with one instruction
    /// set's load, multiply, add and store (one multiply then one add per element).
    macro_rules! register_lanes {
        ($name:ident, $width:literal, $zero:ident, $load:ident, $mul:ident, $add:ident, $store:ident) => {
            pub(super) struct $name;

            impl Lanes for $name {
                #[inline(always)]
                unsafe fn partial_sums<const N: usize>(a: &[f64], b: [&[f64]; N]) -> [[f64; LANES]; N] {
                    debug_assert!(b.iter().all(|b| b.len() == a.len()));
                    let whole = a.len() / LANES * LANES;
                    let mut out = [[0.0f64; LANES]; N];
                    // SAFETY: every load is inside the first `whole` elements of `a` and
                    // of every `b`; the instruction set is available (the caller's
                    // contract).
                    unsafe {
                        let mut acc = [[$zero(); LANES / $width]; N];
                        let mut i = 0;
                        while i < whole {
                            for q in 0..LANES / $width {
                                let x = $load(a.as_ptr().add(i + $width * q));
                                for (acc, b) in acc.iter_mut().zip(&b) {
                                    let y = $load(b.as_ptr().add(i + $width * q));
                                    acc[q] = $add(acc[q], $mul(x, y));
                                }
                            }
                            i += LANES;
                        }
                        for (acc, out) in acc.iter().zip(out.iter_mut()) {
                            for (q, acc) in acc.iter().enumerate() {
                                $store(out.as_mut_ptr().add($width * q), *acc);
                            }
                        }
                    }
                    out
                }
            }
        };
    }

    // Four 4-wide registers.
    register_lanes!(Avx2, 4, _mm256_setzero_pd, _mm256_loadu_pd, _mm256_mul_pd, _mm256_add_pd, _mm256_storeu_pd);
    // Two 8-wide registers.
    register_lanes!(Avx512, 8, _mm512_setzero_pd, _mm512_loadu_pd, _mm512_mul_pd, _mm512_add_pd, _mm512_storeu_pd);
}

#[cfg(test)]
mod tests {
    use super::super::affinity::ActiveAffinities;
    use super::*;
    use crate::inference::LogDensity;
    use crate::rng::{stream, Purpose};
    use rand::RngExt;

    /// A random document over `k` labels: (counts, word-major rates, B, η, ξ).
    #[allow(clippy::type_complexity)]
    fn case(k: usize, words: usize, seed: u64) -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
        let mut rng = stream(seed, Purpose::Synthetic, 0, 0);
        let counts: Vec<f64> = (0..words).map(|_| (1 + rng.random_range(0..5)) as f64).collect();
        let beta: Vec<f64> = (0..words * k).map(|_| (rng.random::<f64>() * 4.0 - 7.0).exp()).collect();
        // B_k sums the rates over a vocabulary larger than the document's words.
        let totals: Vec<f64> = (0..k).map(|_| 0.5 + rng.random::<f64>()).collect();
        let eta: Vec<f64> = (0..k).map(|_| -3.0 + rng.random::<f64>()).collect();
        let xi: Vec<f64> = eta.iter().map(|e| e + 2.0 * rng.random::<f64>() - 1.0).collect();
        (counts, beta, totals, eta, xi)
    }

    #[test]
    fn equals_the_samplers_density_without_label_terms() {
        // The same density as ActiveAffinities over every label (label terms off), so
        // the two may differ by rounding only: relative 1e-12 on value and gradient.
        for (k, words, seed) in [(3, 4, 1), (8, 10, 2), (37, 25, 3), (130, 60, 4)] {
            let (counts, beta, totals, eta, xi) = case(k, words, seed);
            let dense = DenseAffinities { length: 1.3, rate_totals: &totals, counts: &counts, rates: &beta, eta: &eta, lambda2: 1.7, isa: Isa::Portable };
            let active = ActiveAffinities { length: 1.3, rate_totals: &totals, counts: &counts, beta: &beta, eta: &eta, lambda2: 1.7, label_terms: false };
            let (mut g1, mut g2) = (vec![0.0; k], vec![0.0; k]);
            let (v1, v2) = (dense.logp_grad(&xi, &mut g1), active.logp_grad(&xi, &mut g2));
            assert!((v1 - v2).abs() <= 1e-12 * v2.abs().max(1.0), "k={k}: {v1} against {v2}");
            let scale = g2.iter().fold(1.0f64, |m, x| m.max(x.abs()));
            for (a, b) in g1.iter().zip(&g2) {
                assert!((a - b).abs() <= 1e-12 * scale, "k={k}: gradient {a} against {b}");
            }
        }
    }

    #[test]
    fn gradient_matches_central_differences() {
        // Central differences with step h err by O(h²) ≈ 1e-10 here, and by the value's
        // rounding over h (1e-16 · |f| / h ≈ 1e-9): 1e-6 relative to the largest
        // component is far above both and far below any wrong term.
        let k = 21;
        let (counts, beta, totals, eta, xi) = case(k, 17, 9);
        let dense = DenseAffinities { length: 0.8, rate_totals: &totals, counts: &counts, rates: &beta, eta: &eta, lambda2: 0.9, isa: Isa::Portable };
        let mut grad = vec![0.0; k];
        dense.logp_grad(&xi, &mut grad);
        let scale = grad.iter().fold(1.0f64, |m, x| m.max(x.abs()));
        let h = 1e-5;
        let mut scratch = vec![0.0; k];
        for j in 0..k {
            let (mut up, mut down) = (xi.clone(), xi.clone());
            up[j] += h;
            down[j] -= h;
            let numeric = (dense.logp_grad(&up, &mut scratch) - dense.logp_grad(&down, &mut scratch)) / (2.0 * h);
            assert!((numeric - grad[j]).abs() <= 1e-6 * scale, "coordinate {j}: {numeric} against {}", grad[j]);
        }
    }

    #[test]
    fn every_instruction_set_gives_the_same_bits() {
        // The lanes are fixed in the source, so the vectorised copies must agree with the
        // portable one exactly, value and gradient, at lengths with and without a tail.
        for (k, words, seed) in [(5, 3, 11), (64, 40, 12), (465, 30, 13)] {
            let (counts, beta, totals, eta, xi) = case(k, words, seed);
            let at = |isa: Isa| {
                let dense = DenseAffinities { length: 1.1, rate_totals: &totals, counts: &counts, rates: &beta, eta: &eta, lambda2: 1.4, isa };
                let mut grad = vec![0.0; k];
                let value = dense.logp_grad(&xi, &mut grad);
                (value.to_bits(), grad.iter().map(|g| g.to_bits()).collect::<Vec<u64>>())
            };
            let reference = at(Isa::Portable);
            for isa in Isa::available() {
                assert_eq!(at(isa), reference, "k={k}: {isa:?} differs from the portable path");
            }
        }
    }

    /// A word pass body: (θ, counts, rates, g) to Σ w_f log s_f.
    type WordPass = fn(&[f64], &[f64], &[f64], &mut [f64]) -> f64;

    #[test]
    fn blocks_of_words_give_the_bits_of_one_word_at_a_time() {
        // The vector paths take words in blocks (four on AVX-512, two on AVX2); the same
        // blocking on the portable lanes must give the bits of one word at a time, for
        // every number of words: none, fewer than a block, whole blocks, a remainder.
        let k = 37;
        for words in 0..10 {
            let (counts, beta, _, _, xi) = case(k, words, 20 + words as u64);
            let theta = super::super::affinity::softmax(&xi);
            let run = |pass: WordPass| {
                let mut g: Vec<f64> = (0..k).map(|j| j as f64 * 0.25 - 3.0).collect();
                let value = pass(&theta, &counts, &beta, &mut g);
                (value.to_bits(), g.iter().map(|v| v.to_bits()).collect::<Vec<u64>>())
            };
            let one = run(word_pass_body::<Portable, 1>);
            assert_eq!(run(word_pass_body::<Portable, 2>), one, "{words} words in blocks of 2");
            assert_eq!(run(word_pass_body::<Portable, 3>), one, "{words} words in blocks of 3");
            assert_eq!(run(word_pass_body::<Portable, 4>), one, "{words} words in blocks of 4");
        }
    }

    #[test]
    fn dot_sums_every_element_whatever_the_length() {
        for n in [0, 1, 7, 8, 9, 16, 23, 465] {
            let a: Vec<f64> = (0..n).map(|i| i as f64 + 0.5).collect();
            let b: Vec<f64> = (0..n).map(|i| 1.0 / (i as f64 + 1.0)).collect();
            let plain: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!((dot(&a, &b) - plain).abs() <= 1e-12 * plain.abs().max(1.0), "n={n}");
        }
    }
}
