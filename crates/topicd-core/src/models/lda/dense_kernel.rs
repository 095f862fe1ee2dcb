//! The dense, vectorised token draw over live counts, for moderate K.
//!
//! Why it exists: for K up to a few hundred, computing all K weights
//! (n_dk + α_k)(n_kw + β)/(n_k + Vβ) with SIMD is cheaper than walking a document's non-zero
//! topics one by one (long documents keep most topics non-zero). This kernel resamples the
//! tokens of one cell of the partitioned schedule ([`super::partition`]), which owns the
//! document-topic rows of its documents and the topic-word rows of its words outright:
//! both are updated live, token by token, and only the topic totals n_k are the round's
//! snapshot plus the cell's own moves. Each draw removes the token from all three counts
//! first, so it is from the exact collapsed conditional given the counts the cell sees.
//!
//! A document's tokens of one word are consecutive, and from one of them to the next only
//! two topics' counts move (the topic the last token joined, the one this token leaves):
//! along such a run only those two weights change, and the search's sums are moved by
//! the differences instead of being rebuilt (rebuilt every [`REFILL_AFTER`] tokens, which
//! bounds their rounding).
//!
//! Arithmetic: weights in single precision; 1/(n_k + Vβ) kept per topic together with
//! its neighbours 1/(n_k ± 1 + Vβ), so a move reads its new inverses instead of waiting
//! on a division; the draw is the branch-free block search of [`super::block_search`].
//! The body is compiled three times, for AVX-512, for AVX2 and portably, and the
//! processor's best is chosen at run time; the three give bit-identical draws (checked by
//! a test).

use super::block_search::{padded, weight, BlockOps, BlockSearch, Portable, WIDTH};
#[cfg(target_arch = "x86_64")]
use super::block_search::{Avx2, Avx512};
use super::sampler::SweepStats;
pub(crate) use crate::isa::Isa;
use crate::rng::StreamRng;
use rand::RngExt;

/// The instruction set LDA fits run: the processor's best, unless `TOPICD_LDA_ISA`
/// names a slower one ([`Isa::from_env`]). The paths give bit-identical chains, so the
/// choice never changes a result. Read once per process.
pub(crate) fn lda_isa() -> Isa {
    static SELECTED: std::sync::OnceLock<Isa> = std::sync::OnceLock::new();
    *SELECTED.get_or_init(|| Isa::from_env("TOPICD_LDA_ISA"))
}

/// The counts one cell reads and writes besides its documents' rows: the topic-word rows
/// of the cell's words, and n_k as the cell sees it.
pub(crate) struct CellCounts<'a> {
    pub(crate) k: usize,
    /// α_k in single precision, padded with +0 to whole blocks.
    pub(crate) alpha: Vec<f32>,
    pub(crate) beta: f32,
    pub(crate) vbeta: f32,
    /// Word-major n_kw rows of words `first_word..`, updated live.
    pub(crate) word_rows: &'a mut [u32],
    pub(crate) first_word: usize,
    /// n_k: the round's snapshot plus this cell's own moves.
    pub(crate) n_k: Vec<u64>,
    /// 1/(n_k + Vβ), padded with +0 to whole blocks.
    inv: Vec<f32>,
    /// 1/(n_k − 1 + Vβ) and 1/(n_k + 1 + Vβ): a move reads its new inverse from these
    /// (the same bits a division would give) and computes the next one off the path to
    /// the next draw.
    inv_down: Vec<f32>,
    inv_up: Vec<f32>,
    /// One draw's weights and their sums.
    search: BlockSearch,
}

impl<'a> CellCounts<'a> {
    /// Counts for `k` topics with priors α_k (`alpha`, K values) and β.
    pub(crate) fn new(k: usize, alpha: &[f64], beta: f64, vbeta: f64, word_rows: &'a mut [u32], first_word: usize, n_k: Vec<u64>) -> Self {
        assert_eq!(alpha.len(), k, "one α_k per topic");
        let vbeta = vbeta as f32;
        let mut alpha: Vec<f32> = alpha.iter().map(|&a| a as f32).collect();
        alpha.resize(padded(k), 0.0);
        let inverses = |shift: fn(u64) -> u64| n_k.iter().map(|&n| inverse_total(shift(n), vbeta)).collect();
        let (mut inv, inv_down, inv_up): (Vec<f32>, _, _) = (inverses(|n| n), inverses(|n| n.saturating_sub(1)), inverses(|n| n + 1));
        inv.resize(padded(k), 0.0);
        CellCounts { k, alpha, beta: beta as f32, vbeta, word_rows, first_word, n_k, inv, inv_down, inv_up, search: BlockSearch::new(k) }
    }

    /// Resample every token of one document's part of the cell: `zs` their topics,
    /// `words` their words (all in this cell's word range), `doc` the document's n_d·,
    /// padded with zeros to whole blocks of the search ([`padded`]).
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

    /// Take a token of word `w` in topic `z` out of every count it is in: the document's
    /// n_d· (`doc`), the word's row and n_k with its inverses.
    #[inline(always)]
    fn take_out(&mut self, doc: &mut [u32], z: u32, w: u32) {
        let (own, k) = (z as usize, self.k);
        assert!(own < k, "topic {own} of a token is below K = {k}");
        let start = self.row_start(w);
        let row = &mut self.word_rows[start..start + k];
        // SAFETY: own < K, and row and doc hold at least K counts.
        unsafe {
            *doc.get_unchecked_mut(own) -= 1;
            *row.get_unchecked_mut(own) -= 1;
            self.topic_left(own);
        }
    }

    /// The changes in two weights since the last draw of a run of one word: `joined`
    /// gained the word's previous token and `own` lost this one (`doc` and `row` are the
    /// counts after both moves). Each weight before the moves is recomputed from the
    /// counts before them: the same operands, so the same bits the search holds.
    ///
    /// # Safety
    /// `joined` and `own` are below K.
    #[inline(always)]
    unsafe fn weight_changes(&self, doc: &[u32], row: &[u32], joined: usize, own: usize) -> (f32, f32) {
        let beta = self.beta;
        // SAFETY: joined and own are below K, and every slice read holds K values.
        unsafe {
            let (d, r) = (*doc.get_unchecked(joined), *row.get_unchecked(joined));
            let alpha = *self.alpha.get_unchecked(joined);
            let joined_delta =
                weight(d, r, *self.inv.get_unchecked(joined), alpha, beta) - weight(d - 1, r - 1, *self.inv_down.get_unchecked(joined), alpha, beta);
            let (d, r) = (*doc.get_unchecked(own), *row.get_unchecked(own));
            let alpha = *self.alpha.get_unchecked(own);
            let own_delta = weight(d, r, *self.inv.get_unchecked(own), alpha, beta) - weight(d + 1, r + 1, *self.inv_up.get_unchecked(own), alpha, beta);
            (joined_delta, own_delta)
        }
    }

    /// A token left topic t: n_k and its three inverses move down by one.
    ///
    /// # Safety
    /// t < K.
    #[inline(always)]
    unsafe fn topic_left(&mut self, t: usize) {
        debug_assert!(t < self.k);
        // SAFETY: n_k, inv_down and inv_up hold K entries, inv whole blocks, and t < K.
        unsafe {
            let n = self.n_k.get_unchecked_mut(t);
            *n -= 1;
            let below = inverse_total(n.saturating_sub(1), self.vbeta);
            let (current, lower) = (*self.inv.get_unchecked(t), *self.inv_down.get_unchecked(t));
            *self.inv_up.get_unchecked_mut(t) = current;
            *self.inv.get_unchecked_mut(t) = lower;
            *self.inv_down.get_unchecked_mut(t) = below;
        }
    }

    /// A token joined topic t: n_k and its three inverses move up by one.
    ///
    /// # Safety
    /// t < K.
    #[inline(always)]
    unsafe fn topic_joined(&mut self, t: usize) {
        debug_assert!(t < self.k);
        // SAFETY: as in `topic_left`.
        unsafe {
            let n = self.n_k.get_unchecked_mut(t);
            *n += 1;
            let above = inverse_total(*n + 1, self.vbeta);
            let (current, upper) = (*self.inv.get_unchecked(t), *self.inv_up.get_unchecked(t));
            *self.inv_down.get_unchecked_mut(t) = current;
            *self.inv.get_unchecked_mut(t) = upper;
            *self.inv_up.get_unchecked_mut(t) = above;
        }
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
#[target_feature(enable = "avx2,popcnt")]
unsafe fn resample_avx2(c: &mut CellCounts, zs: &mut [u32], words: &[u32], doc: &mut [u32], rng: &mut StreamRng, stats: &mut SweepStats) {
    // SAFETY: this function is compiled for AVX2, which the caller guarantees.
    unsafe { resample_sized::<Avx2>(c, zs, words, doc, rng, stats) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,popcnt")]
unsafe fn resample_avx512(c: &mut CellCounts, zs: &mut [u32], words: &[u32], doc: &mut [u32], rng: &mut StreamRng, stats: &mut SweepStats) {
    // SAFETY: this function is compiled for AVX-512, which the caller guarantees.
    unsafe { resample_sized::<Avx512>(c, zs, words, doc, rng, stats) }
}

fn resample_portable(c: &mut CellCounts, zs: &mut [u32], words: &[u32], doc: &mut [u32], rng: &mut StreamRng, stats: &mut SweepStats) {
    // SAFETY: the portable block operations need no particular instruction set.
    unsafe { resample_sized::<Portable>(c, zs, words, doc, rng, stats) }
}

/// The kernel compiled for one block of topics (K ≤ [`WIDTH`]: the search skips its
/// block ends, [`BlockSearch::fill_sized`]), for two (K ≤ 2 [`WIDTH`]: it keeps its two
/// ends as scalars) or for any number, chosen once per call so no body carries another's
/// branches.
///
/// # Safety
/// `O`'s instruction set must be available.
#[inline(always)]
unsafe fn resample_sized<O: BlockOps>(c: &mut CellCounts, zs: &mut [u32], words: &[u32], doc: &mut [u32], rng: &mut StreamRng, stats: &mut SweepStats) {
    // SAFETY (every call): forwarded from the caller.
    match c.k.div_ceil(WIDTH) {
        1 => unsafe { resample_with::<O, 1>(c, zs, words, doc, rng, stats) },
        2 => unsafe { resample_with::<O, 2>(c, zs, words, doc, rng, stats) },
        _ => unsafe { resample_with::<O, 0>(c, zs, words, doc, rng, stats) },
    }
}

/// Along a run of one word, the block sums are changed by differences (see
/// [`BlockSearch::change_two_weights`]); after this many tokens of a run they are rebuilt from
/// the counts, which bounds their rounding.
const REFILL_AFTER: u32 = 32;

/// The kernel over one document's part of a cell, with block operations `O`, over
/// exactly `BLOCKS` blocks of topics (1 or 2) or any number (0).
///
/// # Safety
/// `O`'s instruction set must be available, and `BLOCKS` (if not 0) must be K's number
/// of blocks.
#[inline(always)]
unsafe fn resample_with<O: BlockOps, const BLOCKS: usize>(
    c: &mut CellCounts,
    zs: &mut [u32],
    words: &[u32],
    doc: &mut [u32],
    rng: &mut StreamRng,
    stats: &mut SweepStats,
) {
    let (k, beta) = (c.k, c.beta);
    assert!(zs.len() == words.len() && doc.len() == padded(k));
    // The word and the drawn topic of the previous token, and how many tokens ago the
    // weights were last filled. A document's tokens of a word are consecutive, and from
    // one of them to the next only the counts of two topics move (the one the last
    // token joined, the one this token leaves), so only their weights change.
    let mut previous: Option<(u32, usize)> = None;
    let mut since_fill = 0u32;
    if let (Some(&z), Some(&w)) = (zs.first(), words.first()) {
        c.take_out(doc, z, w);
    }
    for i in 0..zs.len() {
        let w = words[i];
        // The next word's row: its first touch in a cell is usually a cache miss.
        if let Some(&next) = words.get(i + 1) {
            if next != w {
                let at = c.row_start(next);
                prefetch(&c.word_rows[at..at + k]);
            }
        }
        // The token was taken out of its counts before the previous token's topic joined
        // them ([`CellCounts::take_out`]).
        let own = zs[i] as usize;
        let start = c.row_start(w);
        let row = &c.word_rows[start..start + k];
        match previous {
            Some((word, joined)) if word == w && since_fill < REFILL_AFTER => {
                // Since the last draw, `joined` gained this word's previous token and
                // `own` lost this one; every other topic's counts, so its weight, are as
                // they were. The weights the search holds are recomputed from the counts
                // before the moves (the same operands, so the same bits) to get each
                // difference. If the token leaves the topic the last one joined, that
                // topic's counts, and so every weight, are back where they were.
                if own != joined {
                    // SAFETY: joined and own are below K; the instruction set is the caller's.
                    unsafe {
                        let (joined_delta, own_delta) = c.weight_changes(doc, row, joined, own);
                        c.search.change_two_weights_sized::<O, BLOCKS>(joined, joined_delta, own, own_delta);
                    }
                }
                since_fill += 1;
            }
            _ => {
                // SAFETY: forwarded from the caller.
                unsafe { c.search.fill_sized::<O, BLOCKS>(row, doc, &c.inv, &c.alpha, beta) };
                since_fill = 0;
            }
        }
        // SAFETY: forwarded from the caller.
        let t = unsafe { c.search.draw_sized::<O, BLOCKS>(rng.random::<f32>(), k) };
        debug_assert!(t < k);
        // The next token leaves its topic before this one joins t: the counts after both
        // moves are the same in either order, and this order lets the next token's loads
        // of its own topic's counts go ahead of the stores for t (the processor would
        // otherwise hold them until t, and so the stores' addresses, are known, since the
        // two topics are often the same).
        if i + 1 < zs.len() {
            c.take_out(doc, zs[i + 1], words[i + 1]);
        }
        // SAFETY (this block): a draw is below K.
        unsafe {
            *doc.get_unchecked_mut(t) += 1;
            *c.word_rows.get_unchecked_mut(start + t) += 1;
            c.topic_joined(t);
        }
        zs[i] = t as u32;
        previous = Some((w, t));
    }
    stats.tokens += zs.len() as u64;
    stats.doc_topics_visited += (zs.len() * k) as u64;
}
