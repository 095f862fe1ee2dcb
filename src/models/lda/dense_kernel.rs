//! The dense, vectorised form of the token draw, for moderate K.
//!
//! Why it exists: for K up to a few hundred, computing all K weights
//! (n_dk + α) φ̃_wk with SIMD is cheaper than walking the document's non-zero topics one
//! by one (long documents keep most topics non-zero). The draw is the same exact
//! conditional as the sparse kernel's; only the arithmetic layout differs: weights in
//! single precision, and a two-level inverse-CDF search that first picks one of 8
//! "lanes" (topics k ≡ l mod 8, whose sums are vector adds) and then a topic within it. AVX2 is used when the processor has it (detected at run
//! time); the portable path computes bit-identical results, because no operation is
//! fused or reordered.

use super::sampler::{phi_value, SweepStats, TokenKernel};
use crate::rng::StreamRng;
use rand::RngExt;

/// Lanes of the two-level search (topics k ≡ l mod LANES form lane l).
const LANES: usize = 8;

/// Per-thread scratch: the document's counts and the weights of one draw.
pub(crate) struct DenseScratch {
    /// n_dk as f32 (exact for counts below 2^24).
    pub(crate) counts: Vec<f32>,
    weights: Vec<f32>,
}

impl DenseScratch {
    pub(crate) fn new(k: usize) -> Self {
        // Padding weights stay 0, so lanes can be summed over whole rows of LANES.
        let padded = k.div_ceil(LANES) * LANES;
        DenseScratch { counts: vec![0.0; padded], weights: vec![0.0; padded] }
    }
}

/// Resample every token of one document with the dense kernel.
pub(crate) fn sample_document(zs: &mut [u32], words: &[u32], scratch: &mut DenseScratch, kernel: &TokenKernel, rng: &mut StreamRng) -> SweepStats {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the processor supports AVX2 (checked just above).
            return unsafe { sample_document_avx2(zs, words, scratch, kernel, rng) };
        }
    }
    sample_document_portable(zs, words, scratch, kernel, rng)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn sample_document_avx2(zs: &mut [u32], words: &[u32], scratch: &mut DenseScratch, kernel: &TokenKernel, rng: &mut StreamRng) -> SweepStats {
    sample_document_portable(zs, words, scratch, kernel, rng)
}

#[inline(always)]
fn sample_document_portable(zs: &mut [u32], words: &[u32], scratch: &mut DenseScratch, kernel: &TokenKernel, rng: &mut StreamRng) -> SweepStats {
    scratch.counts.fill(0.0);
    for &t in zs.iter() {
        scratch.counts[t as usize] += 1.0;
    }
    let mut stats = SweepStats::default();
    for i in 0..zs.len() {
        if let Some(&next) = words.get(i + 1) {
            prefetch(kernel.count_row(next as usize));
        }
        // Before its visit a token still holds its topic from the snapshot.
        let own = zs[i] as usize;
        scratch.counts[own] -= 1.0;
        let t = draw(kernel, words[i] as usize, own, scratch, rng, &mut stats);
        scratch.counts[t] += 1.0;
        zs[i] = t as u32;
    }
    stats
}

/// Ask for the start of a row to be brought into cache ahead of its use.
#[inline(always)]
fn prefetch(row: &[u32]) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint that never faults, and the pointer is in bounds.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let p = row.as_ptr() as *const i8;
        let bytes = std::mem::size_of_val(row);
        let mut offset = 0;
        while offset < bytes {
            _mm_prefetch(p.add(offset), _MM_HINT_T0);
            offset += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = row;
}

/// One exact draw: weights (n_dk + α) φ̃_wk, then a draw of `own` is kept with
/// probability φ̃'/φ̃ (see `TokenKernel::keep_own`).
#[inline(always)]
pub(crate) fn draw(kernel: &TokenKernel, w: usize, own: usize, s: &mut DenseScratch, rng: &mut StreamRng, stats: &mut SweepStats) -> usize {
    let k = kernel.k;
    let (row, inv) = (kernel.count_row(w), kernel.inv());
    let (alpha, beta) = (kernel.alpha as f32, kernel.beta as f32);
    for (((x, &n), &c), &i) in s.weights[..k].iter_mut().zip(&s.counts[..k]).zip(row).zip(inv) {
        *x = (n + alpha) * phi_value(c, beta, i);
    }
    // Lane sums: vertical adds over rows of LANES weights.
    let mut lanes = [0.0f32; LANES];
    for chunk in s.weights.chunks_exact(LANES) {
        for l in 0..LANES {
            lanes[l] += chunk[l];
        }
    }
    let total: f32 = lanes.iter().sum();
    stats.tokens += 1;
    stats.doc_topics_visited += k as u64;
    loop {
        let mut u = rng.random::<f32>() * total;
        // Lane, then topic within it; rounding can leave u past the end: then the last
        // topic of the lane reached.
        let mut lane = LANES - 1;
        for (l, &c) in lanes.iter().enumerate() {
            if u < c {
                lane = l;
                break;
            }
            u -= c;
        }
        let mut t = lane;
        let mut k_at = lane;
        while k_at < k {
            t = k_at;
            let x = s.weights[k_at];
            if u < x {
                break;
            }
            u -= x;
            k_at += LANES;
        }
        let t = t.min(k - 1);
        if t != own || rng.random::<f64>() < kernel.keep_own(w, own) {
            return t;
        }
    }
}
