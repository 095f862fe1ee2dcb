//! The dense, vectorised token draw over live counts, for moderate K.
//!
//! Why it exists: for K up to a few hundred, computing all K weights
//! (n_dk + α)(n_kw + β)/(n_k + Vβ) with SIMD is cheaper than walking a document's non-zero
//! topics one by one (long documents keep most topics non-zero). This kernel resamples the
//! tokens of one cell of the partitioned schedule ([`super::partition`]), which owns the
//! document-topic rows of its documents and the topic-word rows of its words outright:
//! both are updated live, token by token, and only the topic totals n_k are the round's
//! snapshot plus the cell's own moves. Each draw removes the token from all three counts
//! first, so it is from the exact collapsed conditional given the counts the cell sees.
//!
//! Arithmetic: weights in single precision, 1/(n_k + Vβ) kept per topic and refreshed
//! for the two topics a token leaves and joins, and a two-level inverse-CDF search that
//! first picks one of 8 "lanes" (topics k ≡ l mod 8, whose sums are vector adds) and then
//! a topic within it. The body is compiled three times, for AVX-512, for AVX2 and
//! portably, and the processor's best is chosen at run time; the three give bit-identical
//! draws, because no floating-point operation is fused or reordered (checked by a test).

use super::sampler::SweepStats;
use crate::rng::StreamRng;
use rand::RngExt;

/// Lanes of the two-level search (topics k ≡ l mod LANES form lane l).
const LANES: usize = 8;

/// The instruction sets the kernel is compiled for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Isa {
    Portable,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    #[cfg(target_arch = "x86_64")]
    Avx512,
}

impl Isa {
    /// The best instruction set this processor supports.
    pub(crate) fn detect() -> Isa {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512bw") && std::is_x86_feature_detected!("avx512vl") {
                return Isa::Avx512;
            }
            if std::is_x86_feature_detected!("avx2") {
                return Isa::Avx2;
            }
        }
        Isa::Portable
    }

    /// Every instruction set this processor supports (for tests).
    #[cfg(test)]
    pub(crate) fn available() -> Vec<Isa> {
        let mut out = vec![Isa::Portable];
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx2") {
                out.push(Isa::Avx2);
            }
            if Isa::detect() == Isa::Avx512 {
                out.push(Isa::Avx512);
            }
        }
        out
    }
}

/// The counts one cell reads and writes besides its documents' rows: the topic-word rows
/// of the cell's words, and n_k as the cell sees it.
pub(crate) struct CellCounts<'a> {
    pub(crate) k: usize,
    pub(crate) alpha: f32,
    pub(crate) beta: f32,
    pub(crate) vbeta: f32,
    /// Word-major n_kw rows of words `first_word..`, updated live.
    pub(crate) word_rows: &'a mut [u32],
    pub(crate) first_word: usize,
    /// n_k: the round's snapshot plus this cell's own moves.
    pub(crate) n_k: Vec<u64>,
    /// 1/(n_k + Vβ), padded with zeros to a whole number of lanes.
    inv: Vec<f32>,
    /// One draw's weights, padded with zeros like `inv`.
    weights: Vec<f32>,
}

impl<'a> CellCounts<'a> {
    pub(crate) fn new(k: usize, alpha: f64, beta: f64, vbeta: f64, word_rows: &'a mut [u32], first_word: usize, n_k: Vec<u64>) -> Self {
        let padded = k.div_ceil(LANES) * LANES;
        let vbeta = vbeta as f32;
        let mut inv = vec![0.0f32; padded];
        for (i, &n) in inv.iter_mut().zip(&n_k) {
            *i = inverse_total(n, vbeta);
        }
        CellCounts { k, alpha: alpha as f32, beta: beta as f32, vbeta, word_rows, first_word, n_k, inv, weights: vec![0.0; padded] }
    }

    /// Resample every token of one document's part of the cell: `zs` their topics,
    /// `words` their words (all in this cell's word range), `doc` the document's n_d·.
    pub(crate) fn resample(&mut self, isa: Isa, zs: &mut [u32], words: &[u32], doc: &mut [u32], rng: &mut StreamRng, stats: &mut SweepStats) {
        match isa {
            Isa::Portable => resample_portable(self, zs, words, doc, rng, stats),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `Isa::Avx2` is only produced when the processor has AVX2.
            Isa::Avx2 => unsafe { resample_avx2(self, zs, words, doc, rng, stats) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `Isa::Avx512` is only produced when the processor has these features.
            Isa::Avx512 => unsafe { resample_avx512(self, zs, words, doc, rng, stats) },
        }
    }

    /// The topic-word row of word `w` (which must be in the cell's word range).
    #[inline(always)]
    fn row_start(&self, w: u32) -> usize {
        (w as usize - self.first_word) * self.k
    }
}

/// 1/(n + Vβ) in single precision (n through i64, a single conversion on every x86
/// level; n_k is far below 2^63).
#[inline(always)]
fn inverse_total(n: u64, vbeta: f32) -> f32 {
    1.0 / (n as i64 as f32 + vbeta)
}

/// Ask for a row to be brought into cache ahead of its use.
#[inline(always)]
fn prefetch(row: &[u32]) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint that never faults, and the pointer is in bounds.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let p = row.as_ptr() as *const i8;
        let mut offset = 0;
        while offset < std::mem::size_of_val(row) {
            _mm_prefetch(p.add(offset), _MM_HINT_T0);
            offset += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = row;
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn resample_avx2(c: &mut CellCounts, zs: &mut [u32], words: &[u32], doc: &mut [u32], rng: &mut StreamRng, stats: &mut SweepStats) {
    resample_portable(c, zs, words, doc, rng, stats)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
unsafe fn resample_avx512(c: &mut CellCounts, zs: &mut [u32], words: &[u32], doc: &mut [u32], rng: &mut StreamRng, stats: &mut SweepStats) {
    resample_portable(c, zs, words, doc, rng, stats)
}

#[inline(always)]
fn resample_portable(c: &mut CellCounts, zs: &mut [u32], words: &[u32], doc: &mut [u32], rng: &mut StreamRng, stats: &mut SweepStats) {
    let (k, alpha, beta, vbeta) = (c.k, c.alpha, c.beta, c.vbeta);
    let doc = &mut doc[..k];
    let mut lanes = [0.0f32; LANES];
    // The word and the drawn topic of the previous token. A document's tokens of a word
    // are consecutive, and from one of them to the next only the counts of two topics
    // move (the one the last token joined, the one this token leaves), so only their
    // weights are recomputed and their lanes' sums adjusted.
    let mut previous: Option<(u32, usize)> = None;
    for (i, (z, &w)) in zs.iter_mut().zip(words).enumerate() {
        // The next word's row: its first touch in a cell is usually a cache miss.
        if let Some(&next) = words.get(i + 1) {
            let at = c.row_start(next);
            prefetch(&c.word_rows[at..at + k]);
        }
        let own = *z as usize;
        let start = c.row_start(w);
        // Take the token out of every count it is in.
        doc[own] -= 1;
        c.word_rows[start + own] -= 1;
        c.n_k[own] -= 1;
        c.inv[own] = inverse_total(c.n_k[own], vbeta);
        let row = &c.word_rows[start..start + k];
        match previous {
            Some((word, joined)) if word == w => {
                refresh_weight(joined, row, doc, &c.inv, &mut c.weights, &mut lanes, alpha, beta);
                if own != joined {
                    refresh_weight(own, row, doc, &c.inv, &mut c.weights, &mut lanes, alpha, beta);
                }
            }
            _ => lanes = fill_weights(row, doc, &c.inv[..k], &mut c.weights, alpha, beta),
        }
        let t = search(&c.weights, &lanes, k, rng);
        doc[t] += 1;
        c.word_rows[start + t] += 1;
        c.n_k[t] += 1;
        c.inv[t] = inverse_total(c.n_k[t], vbeta);
        *z = t as u32;
        previous = Some((w, t));
    }
    stats.tokens += zs.len() as u64;
    stats.doc_topics_visited += (zs.len() * k) as u64;
}

/// The weight (n_dk + α)(n_kw + β)/(n_k + Vβ) of one topic, from its counts and inverse.
#[inline(always)]
fn weight(n_dk: u32, n_kw: u32, inv: f32, alpha: f32, beta: f32) -> f32 {
    // Counts are below 2^31 (Tokens holds fewer tokens), so the signed conversion, a
    // single instruction on every x86 level, is exact where the unsigned is not.
    (n_dk as i32 as f32 + alpha) * ((n_kw as i32 as f32 + beta) * inv)
}

/// Recompute every topic's weight into `weights` (K rounded up to whole lanes, zero past
/// K) and return the lane sums.
#[inline(always)]
fn fill_weights(row: &[u32], doc: &[u32], inv: &[f32], weights: &mut [f32], alpha: f32, beta: f32) -> [f32; LANES] {
    let k = row.len();
    for (((x, &n), &c), &i) in weights[..k].iter_mut().zip(doc).zip(row).zip(inv) {
        *x = weight(n, c, i, alpha, beta);
    }
    // Lane sums: vertical adds over rows of LANES weights.
    let mut lanes = [0.0f32; LANES];
    for chunk in weights.chunks_exact(LANES) {
        for l in 0..LANES {
            lanes[l] += chunk[l];
        }
    }
    lanes
}

/// Recompute topic t's weight after its counts moved, and adjust its lane's sum.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn refresh_weight(t: usize, row: &[u32], doc: &[u32], inv: &[f32], weights: &mut [f32], lanes: &mut [f32; LANES], alpha: f32, beta: f32) {
    let new = weight(doc[t], row[t], inv[t], alpha, beta);
    lanes[t % LANES] += new - weights[t];
    weights[t] = new;
}

/// One draw of a topic with probability proportional to `weights[..k]`, whose lane sums
/// are `lanes`.
#[inline(always)]
fn search(weights: &[f32], lanes: &[f32; LANES], k: usize, rng: &mut StreamRng) -> usize {
    let total: f32 = lanes.iter().sum();
    let mut u = rng.random::<f32>() * total;
    // Lane, then topic within it; rounding can leave u past the end: then the last
    // topic of the lane reached (every topic's weight is positive).
    let mut lane = LANES - 1;
    for (l, &s) in lanes.iter().enumerate() {
        if u < s {
            lane = l;
            break;
        }
        u -= s;
    }
    let mut t = lane;
    let mut at = lane;
    while at < k {
        t = at;
        let x = weights[at];
        if u < x {
            break;
        }
        u -= x;
        at += LANES;
    }
    t.min(k - 1)
}
