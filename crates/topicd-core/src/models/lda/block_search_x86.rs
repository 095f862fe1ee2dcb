//! The block search's operations with AVX-512 and AVX2 intrinsics
//! ([`super::BlockOps`]).
//!
//! Why it exists: the block search ([`super`]) is written once over three forms of its
//! block operations; these two are the x86-64 ones, kept apart so the search itself
//! reads as one job. Each computes the same IEEE single-precision operations on the
//! same operands in the same order as the portable form, so all three give
//! bit-identical draws (`instruction_sets_agree_bit_for_bit`).

use super::{Block, BlockOps, MAX_BLOCKS, WIDTH};

/// Hillis–Steele prefix sums of one register: alignr(y, 0, 16 − s) moves lane i − s to
/// lane i and zeros the lowest s.
///
/// # Safety
/// AVX-512F must be available.
#[inline(always)]
unsafe fn avx512_scan(x: std::arch::x86_64::__m512) -> std::arch::x86_64::__m512 {
    use std::arch::x86_64::*;
    // SAFETY: the caller guarantees AVX-512F.
    unsafe {
        let zero = _mm512_setzero_si512();
        let mut y = _mm512_castps_si512(x);
        y = _mm512_castps_si512(_mm512_add_ps(_mm512_castsi512_ps(y), _mm512_castsi512_ps(_mm512_alignr_epi32::<15>(y, zero))));
        y = _mm512_castps_si512(_mm512_add_ps(_mm512_castsi512_ps(y), _mm512_castsi512_ps(_mm512_alignr_epi32::<14>(y, zero))));
        y = _mm512_castps_si512(_mm512_add_ps(_mm512_castsi512_ps(y), _mm512_castsi512_ps(_mm512_alignr_epi32::<12>(y, zero))));
        y = _mm512_castps_si512(_mm512_add_ps(_mm512_castsi512_ps(y), _mm512_castsi512_ps(_mm512_alignr_epi32::<8>(y, zero))));
        _mm512_castsi512_ps(y)
    }
}

/// [`super::weight`] for sixteen topics, with the topic-word counts `r` already loaded
/// (whole, or masked past K).
///
/// # Safety
/// AVX-512F must be available.
#[inline(always)]
unsafe fn avx512_weights(d: &[u32; WIDTH], r: std::arch::x86_64::__m512i, inv: &[f32; WIDTH], alpha: &[f32; WIDTH], beta: f32) -> Block {
    use std::arch::x86_64::*;
    // SAFETY: the caller guarantees AVX-512F; the loads and the store are of whole
    // 64-byte arrays (unaligned forms).
    unsafe {
        let d = _mm512_cvtepi32_ps(_mm512_loadu_si512(d.as_ptr().cast()));
        let r = _mm512_cvtepi32_ps(r);
        let inv = _mm512_loadu_ps(inv.as_ptr());
        let w = _mm512_mul_ps(_mm512_add_ps(d, _mm512_loadu_ps(alpha.as_ptr())), _mm512_mul_ps(_mm512_add_ps(r, _mm512_set1_ps(beta)), inv));
        let mut out = [0.0f32; WIDTH];
        _mm512_storeu_ps(out.as_mut_ptr(), w);
        out
    }
}

/// AVX-512: one register per block.
pub(crate) struct Avx512;

impl BlockOps for Avx512 {
    #[inline(always)]
    unsafe fn weights(d: &[u32; WIDTH], r: &[u32; WIDTH], inv: &[f32; WIDTH], alpha: &[f32; WIDTH], beta: f32) -> Block {
        use std::arch::x86_64::*;
        // SAFETY: the caller guarantees AVX-512F; the loads and the store are of whole
        // 64-byte arrays (unaligned forms).
        unsafe { avx512_weights(d, _mm512_loadu_si512(r.as_ptr().cast()), inv, alpha, beta) }
    }

    #[inline(always)]
    unsafe fn scan(x: &Block) -> Block {
        use std::arch::x86_64::*;
        // SAFETY: as in `weights`.
        unsafe {
            let mut out = [0.0f32; WIDTH];
            _mm512_storeu_ps(out.as_mut_ptr(), avx512_scan(_mm512_loadu_ps(x.as_ptr())));
            out
        }
    }

    #[inline(always)]
    unsafe fn scan_block(x: &Block, out: &mut Block, totals: &Block, b: usize) -> Block {
        use std::arch::x86_64::*;
        // SAFETY: as in `weights`.
        unsafe {
            let scan = avx512_scan(_mm512_loadu_ps(x.as_ptr()));
            _mm512_storeu_ps(out.as_mut_ptr(), scan);
            let last = _mm512_permutexvar_ps(_mm512_set1_epi32(WIDTH as i32 - 1), scan);
            let totals = _mm512_mask_mov_ps(_mm512_loadu_ps(totals.as_ptr()), 1 << b, last);
            let mut new = [0.0f32; WIDTH];
            _mm512_storeu_ps(new.as_mut_ptr(), totals);
            new
        }
    }

    #[inline(always)]
    unsafe fn locate(ends: &Block, scans: &[Block; MAX_BLOCKS], blocks: usize, unit: f32) -> (usize, usize) {
        use std::arch::x86_64::*;
        // SAFETY: as in `weights`; b < blocks ≤ MAX_BLOCKS.
        unsafe {
            let e = _mm512_loadu_ps(ends.as_ptr());
            let u = _mm512_mul_ps(_mm512_set1_ps(unit), _mm512_permutexvar_ps(_mm512_set1_epi32(WIDTH as i32 - 1), e));
            let b = (_mm512_cmp_ps_mask::<_CMP_LE_OQ>(e, u).count_ones() as usize).min(blocks - 1);
            // ends[b − 1] in every lane, or +0 for the first block.
            let before = _mm512_maskz_permutexvar_ps(if b == 0 { 0 } else { 0xffff }, _mm512_set1_epi32(b as i32 - 1), e);
            let rest = _mm512_sub_ps(u, before);
            let s = _mm512_loadu_ps(scans.get_unchecked(b).as_ptr());
            (b, (_mm512_cmp_ps_mask::<_CMP_LE_OQ>(s, rest).count_ones() as usize).min(WIDTH - 1))
        }
    }

    #[inline(always)]
    unsafe fn locate_in(scan: &Block, rest: f32) -> usize {
        use std::arch::x86_64::*;
        // SAFETY: as in `weights`.
        unsafe { (_mm512_cmp_ps_mask::<_CMP_LE_OQ>(_mm512_loadu_ps(scan.as_ptr()), _mm512_set1_ps(rest)).count_ones() as usize).min(WIDTH - 1) }
    }

    #[inline(always)]
    unsafe fn locate_one(scan: &Block, unit: f32) -> usize {
        use std::arch::x86_64::*;
        // SAFETY: as in `weights`.
        unsafe {
            let s = _mm512_loadu_ps(scan.as_ptr());
            let u = _mm512_mul_ps(_mm512_set1_ps(unit), _mm512_permutexvar_ps(_mm512_set1_epi32(WIDTH as i32 - 1), s));
            (_mm512_cmp_ps_mask::<_CMP_LE_OQ>(s, u).count_ones() as usize).min(WIDTH - 1)
        }
    }

    #[inline(always)]
    unsafe fn add_from(x: &Block, i: usize, delta: f32) -> Block {
        use std::arch::x86_64::*;
        // SAFETY: as in `weights`.
        unsafe {
            // Add +0 below lane i rather than mask the add: LLVM turns a masked add
            // into a masked store, which the next load of the block cannot forward from.
            let v = _mm512_loadu_ps(x.as_ptr());
            let y = _mm512_add_ps(v, _mm512_maskz_mov_ps((0xffffu32 << i) as u16, _mm512_set1_ps(delta)));
            let mut out = [0.0f32; WIDTH];
            _mm512_storeu_ps(out.as_mut_ptr(), y);
            out
        }
    }

    #[inline(always)]
    unsafe fn add_two_from(x: &Block, i1: usize, d1: f32, i2: usize, d2: f32) -> Block {
        use std::arch::x86_64::*;
        // SAFETY: as in `weights`.
        unsafe {
            let first = _mm512_maskz_mov_ps((0xffffu32 << i1) as u16, _mm512_set1_ps(d1));
            let second = _mm512_maskz_mov_ps((0xffffu32 << i2) as u16, _mm512_set1_ps(d2));
            let y = _mm512_add_ps(_mm512_loadu_ps(x.as_ptr()), _mm512_add_ps(first, second));
            let mut out = [0.0f32; WIDTH];
            _mm512_storeu_ps(out.as_mut_ptr(), y);
            out
        }
    }

    #[inline(always)]
    unsafe fn weights_partial(d: &[u32; WIDTH], r: &[u32], inv: &[f32; WIDTH], alpha: &[f32; WIDTH], beta: f32) -> Block {
        use std::arch::x86_64::*;
        debug_assert!(r.len() < WIDTH);
        // SAFETY: the caller guarantees AVX-512F; the masked load touches only the lanes
        // below `r.len()`, which are in bounds (masked-off lanes never fault).
        unsafe {
            let mask = ((1u32 << r.len()) - 1) as u16;
            avx512_weights(d, _mm512_maskz_loadu_epi32(mask, r.as_ptr().cast()), inv, alpha, beta)
        }
    }
}

/// Hillis–Steele prefix sums of sixteen lanes held as two AVX2 registers (lanes 0–7
/// and 8–15), in the order of [`BlockOps::scan`].
///
/// # Safety
/// AVX2 must be available.
#[inline(always)]
unsafe fn avx2_scan(mut lo: std::arch::x86_64::__m256, mut hi: std::arch::x86_64::__m256) -> (std::arch::x86_64::__m256, std::arch::x86_64::__m256) {
    use std::arch::x86_64::*;
    // SAFETY: the caller guarantees AVX2.
    unsafe {
        let zero = _mm256_setzero_ps();
        // Shifts of 1, 2, 4 across the sixteen lanes: rotate each half by s
        // (lane i takes lane i − s mod 8), then the low s lanes of the high half
        // come from the top of the low half and those of the low half are 0.
        macro_rules! shifted_add {
            ($s:literal, $mask:literal) => {{
                let index =
                    _mm256_setr_epi32((8 - $s) % 8, (9 - $s) % 8, (10 - $s) % 8, (11 - $s) % 8, (12 - $s) % 8, (13 - $s) % 8, (14 - $s) % 8, (15 - $s) % 8);
                let lo_rot = _mm256_permutevar8x32_ps(lo, index);
                let hi_rot = _mm256_permutevar8x32_ps(hi, index);
                let lo_in = _mm256_blend_ps::<$mask>(zero, lo_rot);
                let hi_in = _mm256_blend_ps::<$mask>(lo_rot, hi_rot);
                lo = _mm256_add_ps(lo, lo_in);
                hi = _mm256_add_ps(hi, hi_in);
            }};
        }
        shifted_add!(1, 0b1111_1110);
        shifted_add!(2, 0b1111_1100);
        shifted_add!(4, 0b1111_0000);
        // Shift of 8: the high half adds the low half, the low half adds +0.
        hi = _mm256_add_ps(hi, lo);
        lo = _mm256_add_ps(lo, zero);
        (lo, hi)
    }
}

/// How many of a block's sixteen values are at or below `bound`.
///
/// # Safety
/// AVX2 must be available.
#[inline(always)]
unsafe fn avx2_count_at_or_below(block: &Block, bound: f32) -> usize {
    use std::arch::x86_64::*;
    // SAFETY: the caller guarantees AVX2; the loads are of eight elements at offset 0
    // or 8 of a sixteen-element block.
    unsafe {
        let bound = _mm256_set1_ps(bound);
        let lo = _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_LE_OQ>(_mm256_loadu_ps(block.as_ptr()), bound));
        let hi = _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_LE_OQ>(_mm256_loadu_ps(block.as_ptr().add(8)), bound));
        (lo.count_ones() + hi.count_ones()) as usize
    }
}

/// All ones in lanes `lane` to 15 of sixteen (two registers of eight), zeros below: read
/// from a static window rather than built with a broadcast and compares. Adding
/// `delta & mask` adds +0 below `lane`, as the portable form does.
///
/// # Safety
/// AVX2 must be available, and `lane` < WIDTH.
#[inline(always)]
unsafe fn avx2_from_lane(lane: usize) -> (std::arch::x86_64::__m256, std::arch::x86_64::__m256) {
    use std::arch::x86_64::*;
    static FROM: [i32; 2 * WIDTH] = {
        let mut window = [0; 2 * WIDTH];
        let mut j = WIDTH;
        while j < 2 * WIDTH {
            window[j] = -1;
            j += 1;
        }
        window
    };
    debug_assert!(lane < WIDTH);
    // SAFETY: WIDTH − lane + 16 ≤ 2 WIDTH, so the sixteen elements read are in the window.
    unsafe {
        let at = FROM.as_ptr().add(WIDTH - lane);
        (_mm256_loadu_ps(at.cast()), _mm256_loadu_ps(at.add(8).cast()))
    }
}

/// [`super::weight`] for the eight topics of `out` from lane `half` (0 or 8) on, with
/// their topic-word counts `r` already loaded (whole, or masked past K).
///
/// # Safety
/// AVX2 must be available, and `half` is 0 or 8.
#[inline(always)]
unsafe fn avx2_half_weights(
    out: &mut Block,
    half: usize,
    d: &[u32; WIDTH],
    r: std::arch::x86_64::__m256i,
    inv: &[f32; WIDTH],
    alpha: &[f32; WIDTH],
    beta: f32,
) {
    use std::arch::x86_64::*;
    debug_assert!(half == 0 || half == 8);
    // SAFETY: the caller guarantees AVX2; each load and store is of eight elements at
    // offset 0 or 8 of a sixteen-element array.
    unsafe {
        let dv = _mm256_cvtepi32_ps(_mm256_loadu_si256(d.as_ptr().add(half).cast()));
        let rv = _mm256_cvtepi32_ps(r);
        let iv = _mm256_loadu_ps(inv.as_ptr().add(half));
        let w = _mm256_mul_ps(_mm256_add_ps(dv, _mm256_loadu_ps(alpha.as_ptr().add(half))), _mm256_mul_ps(_mm256_add_ps(rv, _mm256_set1_ps(beta)), iv));
        _mm256_storeu_ps(out.as_mut_ptr().add(half), w);
    }
}

/// AVX2: a block is two registers of eight.
pub(crate) struct Avx2;

impl BlockOps for Avx2 {
    #[inline(always)]
    unsafe fn weights(d: &[u32; WIDTH], r: &[u32; WIDTH], inv: &[f32; WIDTH], alpha: &[f32; WIDTH], beta: f32) -> Block {
        use std::arch::x86_64::*;
        // SAFETY: the caller guarantees AVX2; each load and store is of eight elements
        // at offset 0 or 8 of a sixteen-element array.
        unsafe {
            let mut out = [0.0f32; WIDTH];
            for half in [0, 8] {
                avx2_half_weights(&mut out, half, d, _mm256_loadu_si256(r.as_ptr().add(half).cast()), inv, alpha, beta);
            }
            out
        }
    }

    #[inline(always)]
    unsafe fn scan(x: &Block) -> Block {
        use std::arch::x86_64::*;
        // SAFETY: as in `weights`.
        unsafe {
            let (lo, hi) = avx2_scan(_mm256_loadu_ps(x.as_ptr()), _mm256_loadu_ps(x.as_ptr().add(8)));
            let mut out = [0.0f32; WIDTH];
            _mm256_storeu_ps(out.as_mut_ptr(), lo);
            _mm256_storeu_ps(out.as_mut_ptr().add(8), hi);
            out
        }
    }

    /// The portable form's steps, with each count taken as two 8-lane compare masks
    /// (`movmskps`) and their popcounts: LLVM lowers the portable count to a chain of
    /// packs and a byte mask, which on an Intel Xeon left this path 7 % slower.
    #[inline(always)]
    unsafe fn locate(ends: &Block, scans: &[Block; MAX_BLOCKS], blocks: usize, unit: f32) -> (usize, usize) {
        // SAFETY: the caller guarantees AVX2; b < blocks ≤ MAX_BLOCKS.
        unsafe {
            let u = unit * ends[WIDTH - 1];
            let b = avx2_count_at_or_below(ends, u).min(blocks - 1);
            let rest = u - if b == 0 { 0.0 } else { ends[b - 1] };
            (b, Self::locate_in(scans.get_unchecked(b), rest))
        }
    }

    #[inline(always)]
    unsafe fn locate_in(scan: &Block, rest: f32) -> usize {
        // SAFETY: the caller guarantees AVX2.
        unsafe { avx2_count_at_or_below(scan, rest).min(WIDTH - 1) }
    }

    /// As AVX-512's: the block total enters lane b of `totals` in registers. The
    /// portable form's single-lane store into `totals` made the next whole-block load
    /// of it wait for that store to retire (a failed store forwarding: 17 % of an AVX2
    /// fit's time).
    #[inline(always)]
    unsafe fn scan_block(x: &Block, out: &mut Block, totals: &Block, b: usize) -> Block {
        use std::arch::x86_64::*;
        // SAFETY: as in `weights`.
        unsafe {
            let (lo, hi) = avx2_scan(_mm256_loadu_ps(x.as_ptr()), _mm256_loadu_ps(x.as_ptr().add(8)));
            _mm256_storeu_ps(out.as_mut_ptr(), lo);
            _mm256_storeu_ps(out.as_mut_ptr().add(8), hi);
            let last = _mm256_permutevar8x32_ps(hi, _mm256_set1_epi32(WIDTH as i32 / 2 - 1));
            // Lane b of sixteen: the window of ONE_LANE that puts its −1 there.
            static ONE_LANE: [i32; 2 * WIDTH] = {
                let mut window = [0; 2 * WIDTH];
                window[WIDTH - 1] = -1;
                window
            };
            let at = ONE_LANE.as_ptr().add(WIDTH - 1 - b);
            let is_lo = _mm256_loadu_ps(at.cast());
            let is_hi = _mm256_loadu_ps(at.add(8).cast());
            // Lane b of `totals` is +0 (all bits clear), so OR-ing in the masked total sets
            // it exactly; and + or are single-cycle, where a variable blend on Intel is a
            // chain of three micro-ops from one block to the next.
            let t_lo = _mm256_or_ps(_mm256_loadu_ps(totals.as_ptr()), _mm256_and_ps(last, is_lo));
            let t_hi = _mm256_or_ps(_mm256_loadu_ps(totals.as_ptr().add(8)), _mm256_and_ps(last, is_hi));
            let mut new = [0.0f32; WIDTH];
            _mm256_storeu_ps(new.as_mut_ptr(), t_lo);
            _mm256_storeu_ps(new.as_mut_ptr().add(8), t_hi);
            new
        }
    }

    /// The portable form's operations, with the lanes from i on selected by a mask read
    /// from a static window: LLVM compiled the portable loop's `j >= i` for AVX2 into
    /// 64-bit compares, packs and inserts, dozens of instructions on the path from one
    /// draw to the next (two thirds of linuxdoc's tokens take this path).
    #[inline(always)]
    unsafe fn add_from(x: &Block, i: usize, delta: f32) -> Block {
        use std::arch::x86_64::*;
        // SAFETY: the caller guarantees AVX2 and i < WIDTH ([`avx2_from_lane`]).
        unsafe {
            let (from_lo, from_hi) = avx2_from_lane(i);
            let d = _mm256_set1_ps(delta);
            let mut out = [0.0f32; WIDTH];
            _mm256_storeu_ps(out.as_mut_ptr(), _mm256_add_ps(_mm256_loadu_ps(x.as_ptr()), _mm256_and_ps(d, from_lo)));
            _mm256_storeu_ps(out.as_mut_ptr().add(8), _mm256_add_ps(_mm256_loadu_ps(x.as_ptr().add(8)), _mm256_and_ps(d, from_hi)));
            out
        }
    }

    /// As [`Avx2::add_from`], for two changes with one dependent add.
    #[inline(always)]
    unsafe fn add_two_from(x: &Block, i1: usize, d1: f32, i2: usize, d2: f32) -> Block {
        use std::arch::x86_64::*;
        // SAFETY: as in `add_from`.
        unsafe {
            let (first_lo, first_hi) = avx2_from_lane(i1);
            let (second_lo, second_hi) = avx2_from_lane(i2);
            let (d1, d2) = (_mm256_set1_ps(d1), _mm256_set1_ps(d2));
            let lo = _mm256_add_ps(_mm256_and_ps(d1, first_lo), _mm256_and_ps(d2, second_lo));
            let hi = _mm256_add_ps(_mm256_and_ps(d1, first_hi), _mm256_and_ps(d2, second_hi));
            let mut out = [0.0f32; WIDTH];
            _mm256_storeu_ps(out.as_mut_ptr(), _mm256_add_ps(_mm256_loadu_ps(x.as_ptr()), lo));
            _mm256_storeu_ps(out.as_mut_ptr().add(8), _mm256_add_ps(_mm256_loadu_ps(x.as_ptr().add(8)), hi));
            out
        }
    }

    #[inline(always)]
    unsafe fn weights_partial(d: &[u32; WIDTH], r: &[u32], inv: &[f32; WIDTH], alpha: &[f32; WIDTH], beta: f32) -> Block {
        use std::arch::x86_64::*;
        debug_assert!(r.len() < WIDTH);
        // SAFETY: the caller guarantees AVX2; masked loads touch only the lanes below
        // `r.len()`, which are in bounds (masked-off lanes never fault).
        unsafe {
            let mut out = [0.0f32; WIDTH];
            let position = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
            for half in [0usize, 8] {
                let mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(r.len() as i32 - half as i32), position);
                avx2_half_weights(&mut out, half, d, _mm256_maskload_epi32(r.as_ptr().wrapping_add(half).cast(), mask), inv, alpha, beta);
            }
            out
        }
    }
}
