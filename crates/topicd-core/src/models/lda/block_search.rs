//! A branch-free inverse-CDF draw over at most 256 weights that change two at a time.
//!
//! Why it exists: the dense kernel ([`super::dense_kernel`]) draws one topic per token
//! from K weights of which, along a run of one word, only two change from one token to
//! the next. A linear search with a data-dependent exit mispredicts about once per draw,
//! and a running sum over all K weights is a long chain of dependent adds. Here the
//! topics are cut into blocks of [`WIDTH`] (one AVX-512 vector of single floats); each
//! block keeps its inclusive prefix sums and the block totals keep theirs. A draw counts
//! the block ends at or below u, then that block's prefix sums at or below what is left
//! of u: two vector compares. Changing a weight rescans its block and the block totals,
//! both fixed-size work. Up to [`WIDTH`] topics (one block) the block totals are not kept:
//! the block's own prefix sums are the search, one compare and one scan shorter, with
//! the same draws.
//!
//! The block operations ([`BlockOps`]) are written three times, with AVX-512 and AVX2
//! intrinsics and portably. Each computes the same IEEE single-precision operations on
//! the same operands in the same order (a prefix sum is Hillis–Steele: log₂ WIDTH shifted
//! adds, the lanes below the shift adding +0), so all three give bit-identical draws.

/// Topics per block: one AVX-512 vector of single floats.
pub(crate) const WIDTH: usize = 16;

/// Most blocks (one vector of block totals): at most WIDTH² topics.
pub(crate) const MAX_TOPICS: usize = WIDTH * WIDTH;

/// K rounded up to whole blocks: the length of the padded per-topic vectors the search
/// reads (a document's counts, the inverses).
pub(crate) fn padded(k: usize) -> usize {
    k.div_ceil(WIDTH) * WIDTH
}

/// Sixteen consecutive topics' values.
pub(crate) type Block = [f32; WIDTH];

/// The three block operations the search needs, per instruction set.
///
/// # Safety
/// Every method may use the instructions of the implementing set: call them only on a
/// processor that has them ([`crate::isa::Isa::detect`]).
pub(crate) trait BlockOps {
    /// (d_i + α_i)((r_i + β) inv_i) for the sixteen topics of a block.
    unsafe fn weights(d: &[u32; WIDTH], r: &[u32; WIDTH], inv: &[f32; WIDTH], alpha: &[f32; WIDTH], beta: f32) -> Block;
    /// Inclusive prefix sums, Hillis–Steele: for shift 1, 2, 4, 8,
    /// y_i ← y_i + (y_{i−shift} if i ≥ shift, else +0).
    unsafe fn scan(x: &Block) -> Block;
    /// The two-level search: with u = `unit` × ends[WIDTH − 1], the block b (below
    /// `blocks`) is the number of ends at or below u, and the lane i the number of
    /// scans[b] at or below u − ends[b − 1] (u − 0 for the first block). Computed in
    /// registers: a single-lane load from a block just stored whole would wait for the
    /// store to retire. The default is the portable form (also used for AVX2).
    #[inline(always)]
    unsafe fn locate(ends: &Block, scans: &[Block; MAX_BLOCKS], blocks: usize, unit: f32) -> (usize, usize) {
        let u = unit * ends[WIDTH - 1];
        let b = ends.iter().filter(|&&s| s <= u).count().min(blocks - 1);
        let rest = u - if b == 0 { 0.0 } else { ends[b - 1] };
        (b, scans[b].iter().filter(|&&s| s <= rest).count().min(WIDTH - 1))
    }
    /// The search over a single block (K ≤ [`WIDTH`]): with u = `unit` × scan[WIDTH − 1],
    /// the number of `scan` at or below u. [`BlockOps::locate`] gives the same lane for
    /// one block (its block ends are then that block's total in every lane, so b = 0
    /// and the rest is u − 0 = u) one compare later. The default is the portable form.
    #[inline(always)]
    unsafe fn locate_one(scan: &Block, unit: f32) -> usize {
        let u = unit * scan[WIDTH - 1];
        scan.iter().filter(|&&s| s <= u).count().min(WIDTH - 1)
    }
    /// Store the prefix sums of `x` ([`BlockOps::scan`]) into `out` with one whole-block
    /// store, and return `totals` with lane b, which must be +0 (the fill sets each
    /// lane once, from all zeros), set to their last value (LLVM otherwise
    /// splits the store around that lane, and a later whole-block load of the sums
    /// cannot be forwarded from the pieces). The portable and AVX2 forms use this
    /// default; AVX-512 keeps the sums in a register throughout.
    #[inline(always)]
    unsafe fn scan_block(x: &Block, out: &mut Block, totals: &Block, b: usize) -> Block {
        // SAFETY: forwarded from the caller.
        *out = unsafe { Self::scan(x) };
        let mut totals = *totals;
        totals[b] = out[WIDTH - 1];
        totals
    }
    /// `x` with `delta` added to lanes i and above (default: the portable form). A plain
    /// loop, not `std::array::from_fn`: that one is not always inlined, and an
    /// out-of-line call from the AVX2 kernel runs without AVX2 (it took 17 % of an AVX2
    /// fit's time).
    #[inline(always)]
    unsafe fn add_from(x: &Block, i: usize, delta: f32) -> Block {
        let mut y = *x;
        for (j, v) in y.iter_mut().enumerate() {
            *v += if j >= i { delta } else { 0.0 };
        }
        y
    }
    /// `x` plus, in each lane j, (`d1` if j ≥ i1, else +0) + (`d2` if j ≥ i2, else +0):
    /// two changes with one dependent add (default: the portable form; a
    /// plain loop for the reason given at [`BlockOps::add_from`]).
    #[inline(always)]
    unsafe fn add_two_from(x: &Block, i1: usize, d1: f32, i2: usize, d2: f32) -> Block {
        let mut y = *x;
        for (j, v) in y.iter_mut().enumerate() {
            *v += (if j >= i1 { d1 } else { 0.0 }) + (if j >= i2 { d2 } else { 0.0 });
        }
        y
    }
    /// [`BlockOps::weights`] with only the first `r.len()` (< WIDTH) lanes of r read
    /// (the others count as 0); `inv` must be +0 in those lanes, so their weights are +0.
    unsafe fn weights_partial(d: &[u32; WIDTH], r: &[u32], inv: &[f32; WIDTH], alpha: &[f32; WIDTH], beta: f32) -> Block;
}

/// One topic's weight (n_dk + α_k)(n_kw + β)/(n_k + Vβ), from its counts, its α_k and the
/// inverse of its total; every [`BlockOps::weights`] computes exactly this.
#[inline(always)]
pub(crate) fn weight(n_dk: u32, n_kw: u32, inv: f32, alpha: f32, beta: f32) -> f32 {
    // Counts are below 2^31 (Tokens holds fewer tokens), so the signed conversion, a
    // single instruction on every x86 level, is exact where the unsigned is not.
    (n_dk as i32 as f32 + alpha) * ((n_kw as i32 as f32 + beta) * inv)
}

/// Plain Rust, for any processor.
pub(crate) struct Portable;

impl BlockOps for Portable {
    #[inline(always)]
    unsafe fn weights(d: &[u32; WIDTH], r: &[u32; WIDTH], inv: &[f32; WIDTH], alpha: &[f32; WIDTH], beta: f32) -> Block {
        std::array::from_fn(|i| weight(d[i], r[i], inv[i], alpha[i], beta))
    }

    #[inline(always)]
    unsafe fn scan(x: &Block) -> Block {
        let mut y = *x;
        let mut shift = 1;
        while shift < WIDTH {
            let before = y;
            y = std::array::from_fn(|i| before[i] + if i >= shift { before[i - shift] } else { 0.0 });
            shift *= 2;
        }
        y
    }

    #[inline(always)]
    unsafe fn weights_partial(d: &[u32; WIDTH], r: &[u32], inv: &[f32; WIDTH], alpha: &[f32; WIDTH], beta: f32) -> Block {
        std::array::from_fn(|i| weight(d[i], r.get(i).copied().unwrap_or(0), inv[i], alpha[i], beta))
    }
}

/// Hillis–Steele prefix sums of one register: alignr(y, 0, 16 − s) moves lane i − s to
/// lane i and zeros the lowest s.
///
/// # Safety
/// AVX-512F must be available.
#[cfg(target_arch = "x86_64")]
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

/// AVX-512: one register per block.
#[cfg(target_arch = "x86_64")]
pub(crate) struct Avx512;

#[cfg(target_arch = "x86_64")]
impl BlockOps for Avx512 {
    #[inline(always)]
    unsafe fn weights(d: &[u32; WIDTH], r: &[u32; WIDTH], inv: &[f32; WIDTH], alpha: &[f32; WIDTH], beta: f32) -> Block {
        use std::arch::x86_64::*;
        // SAFETY: the caller guarantees AVX-512F; the loads and the store are of whole
        // 64-byte arrays (unaligned forms).
        unsafe {
            let d = _mm512_cvtepi32_ps(_mm512_loadu_si512(d.as_ptr().cast()));
            let r = _mm512_cvtepi32_ps(_mm512_loadu_si512(r.as_ptr().cast()));
            let inv = _mm512_loadu_ps(inv.as_ptr());
            let w = _mm512_mul_ps(_mm512_add_ps(d, _mm512_loadu_ps(alpha.as_ptr())), _mm512_mul_ps(_mm512_add_ps(r, _mm512_set1_ps(beta)), inv));
            let mut out = [0.0f32; WIDTH];
            _mm512_storeu_ps(out.as_mut_ptr(), w);
            out
        }
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
            let dv = _mm512_cvtepi32_ps(_mm512_loadu_si512(d.as_ptr().cast()));
            let rv = _mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(mask, r.as_ptr().cast()));
            let iv = _mm512_loadu_ps(inv.as_ptr());
            let w = _mm512_mul_ps(_mm512_add_ps(dv, _mm512_loadu_ps(alpha.as_ptr())), _mm512_mul_ps(_mm512_add_ps(rv, _mm512_set1_ps(beta)), iv));
            let mut out = [0.0f32; WIDTH];
            _mm512_storeu_ps(out.as_mut_ptr(), w);
            out
        }
    }
}

/// Hillis–Steele prefix sums of sixteen lanes held as two AVX2 registers (lanes 0–7
/// and 8–15), in the order of [`BlockOps::scan`].
///
/// # Safety
/// AVX2 must be available.
#[cfg(target_arch = "x86_64")]
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
#[cfg(target_arch = "x86_64")]
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
#[cfg(target_arch = "x86_64")]
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

/// AVX2: a block is two registers of eight.
#[cfg(target_arch = "x86_64")]
pub(crate) struct Avx2;

#[cfg(target_arch = "x86_64")]
impl BlockOps for Avx2 {
    #[inline(always)]
    unsafe fn weights(d: &[u32; WIDTH], r: &[u32; WIDTH], inv: &[f32; WIDTH], alpha: &[f32; WIDTH], beta: f32) -> Block {
        use std::arch::x86_64::*;
        // SAFETY: the caller guarantees AVX2; each load and store is of eight elements
        // at offset 0 or 8 of a sixteen-element array.
        unsafe {
            let mut out = [0.0f32; WIDTH];
            for half in [0, 8] {
                let dv = _mm256_cvtepi32_ps(_mm256_loadu_si256(d.as_ptr().add(half).cast()));
                let rv = _mm256_cvtepi32_ps(_mm256_loadu_si256(r.as_ptr().add(half).cast()));
                let iv = _mm256_loadu_ps(inv.as_ptr().add(half));
                let w = _mm256_mul_ps(_mm256_add_ps(dv, _mm256_loadu_ps(alpha.as_ptr().add(half))), _mm256_mul_ps(_mm256_add_ps(rv, _mm256_set1_ps(beta)), iv));
                _mm256_storeu_ps(out.as_mut_ptr().add(half), w);
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
            (b, avx2_count_at_or_below(scans.get_unchecked(b), rest).min(WIDTH - 1))
        }
    }

    #[inline(always)]
    unsafe fn locate_one(scan: &Block, unit: f32) -> usize {
        // SAFETY: the caller guarantees AVX2.
        unsafe { avx2_count_at_or_below(scan, unit * scan[WIDTH - 1]).min(WIDTH - 1) }
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
                let dv = _mm256_cvtepi32_ps(_mm256_loadu_si256(d.as_ptr().add(half).cast()));
                let rv = _mm256_cvtepi32_ps(_mm256_maskload_epi32(r.as_ptr().wrapping_add(half).cast(), mask));
                let iv = _mm256_loadu_ps(inv.as_ptr().add(half));
                let w = _mm256_mul_ps(_mm256_add_ps(dv, _mm256_loadu_ps(alpha.as_ptr().add(half))), _mm256_mul_ps(_mm256_add_ps(rv, _mm256_set1_ps(beta)), iv));
                _mm256_storeu_ps(out.as_mut_ptr().add(half), w);
            }
            out
        }
    }
}

/// One draw's weights and their block sums (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct BlockSearch {
    /// Blocks in use: K / WIDTH rounded up.
    blocks: usize,
    /// Inclusive prefix sums of the weights within each block (+0 past K).
    scans: [Block; MAX_BLOCKS],
    /// Inclusive prefix sums of the block totals (+0 past `blocks`); the last is the
    /// sum of all weights. Not kept by the `_one_block` methods: that block's last
    /// prefix sum is the total.
    ends: Block,
}

/// The WIDTH values of `values` from `at` on.
#[inline(always)]
fn whole_block<T>(values: &[T], at: usize) -> &[T; WIDTH] {
    values[at..at + WIDTH].try_into().expect("a whole block")
}

/// Most blocks.
pub(crate) const MAX_BLOCKS: usize = MAX_TOPICS / WIDTH;

impl BlockSearch {
    pub(crate) fn new(k: usize) -> Self {
        assert!((1..=MAX_TOPICS).contains(&k), "the block search takes 1 to {MAX_TOPICS} topics, not {k}");
        BlockSearch { blocks: k.div_ceil(WIDTH), scans: [[0.0; WIDTH]; MAX_BLOCKS], ends: [0.0; WIDTH] }
    }

    /// Recompute every topic's weight and every sum from the weights: `row` holds the K
    /// topic-word counts, `doc`, `inv` and `alpha` the document's counts, the inverses and
    /// the α_k padded with zeros to whole blocks.
    ///
    /// # Safety
    /// `O`'s instruction set must be available.
    #[inline(always)]
    pub(crate) unsafe fn fill<O: BlockOps>(&mut self, row: &[u32], doc: &[u32], inv: &[f32], alpha: &[f32], beta: f32) {
        let k = row.len();
        let padded = self.blocks * WIDTH;
        assert!(k.div_ceil(WIDTH) == self.blocks && doc.len() == padded && inv.len() == padded && alpha.len() == padded);
        let full = k / WIDTH;
        let mut totals = [0.0f32; WIDTH];
        for b in 0..self.blocks {
            let at = b * WIDTH;
            // SAFETY (both calls): forwarded from the caller.
            let weights = if b < full {
                unsafe { O::weights(whole_block(doc, at), whole_block(row, at), whole_block(inv, at), whole_block(alpha, at), beta) }
            } else {
                // The last, partial block: +0 past K.
                unsafe { O::weights_partial(whole_block(doc, at), &row[at..], whole_block(inv, at), whole_block(alpha, at), beta) }
            };
            // SAFETY: forwarded from the caller.
            totals = unsafe { O::scan_block(&weights, &mut self.scans[b], &totals, b) };
        }
        // SAFETY: forwarded from the caller.
        self.ends = unsafe { O::scan(&totals) };
    }

    /// Add `delta1` to topic t1's weight and `delta2` to topic t2's (t1 ≠ t2): to their
    /// blocks' prefix sums from each topic on and to the block ends from each block on.
    /// The sums then carry the rounding of each change: callers refill after a bounded
    /// number of changes.
    ///
    /// # Safety
    /// `O`'s instruction set must be available, and both topics are below K.
    #[inline(always)]
    pub(crate) unsafe fn change_two_weights<O: BlockOps>(&mut self, t1: usize, delta1: f32, t2: usize, delta2: f32) {
        let (b1, i1, b2, i2) = (t1 / WIDTH, t1 % WIDTH, t2 / WIDTH, t2 % WIDTH);
        debug_assert!(b1 < self.blocks && b2 < self.blocks);
        // SAFETY: b1, b2 < blocks ≤ MAX_BLOCKS; the instruction set is the caller's
        // guarantee.
        unsafe {
            if b1 == b2 {
                let scan = self.scans.get_unchecked_mut(b1);
                *scan = O::add_two_from(scan, i1, delta1, i2, delta2);
            } else {
                let scan = self.scans.get_unchecked_mut(b1);
                *scan = O::add_from(scan, i1, delta1);
                let scan = self.scans.get_unchecked_mut(b2);
                *scan = O::add_from(scan, i2, delta2);
            }
            self.ends = O::add_two_from(&self.ends, b1, delta1, b2, delta2);
        }
    }

    /// The first topic whose cumulative weight exceeds `unit` × the total (`unit` in
    /// [0, 1)), for K topics. Rounding can put u at or past the end of a block or of the
    /// last topic: the index is then kept inside the blocks and below K (every topic's
    /// weight is positive, so any such topic is a possible draw).
    ///
    /// # Safety
    /// `O`'s instruction set must be available.
    #[inline(always)]
    pub(crate) unsafe fn draw<O: BlockOps>(&self, unit: f32, k: usize) -> usize {
        // SAFETY: forwarded from the caller.
        let (b, i) = unsafe { O::locate(&self.ends, &self.scans, self.blocks, unit) };
        (b * WIDTH + i).min(k - 1)
    }

    /// [`BlockSearch::fill`] for at most [`WIDTH`] topics (one block): the block's prefix
    /// sums are the whole search, so the block ends are neither built nor kept. Use
    /// only with the other `_one_block` methods.
    ///
    /// # Safety
    /// As [`BlockSearch::fill`]'s.
    #[inline(always)]
    pub(crate) unsafe fn fill_one_block<O: BlockOps>(&mut self, row: &[u32], doc: &[u32], inv: &[f32], alpha: &[f32], beta: f32) {
        assert!(self.blocks == 1 && doc.len() == WIDTH && inv.len() == WIDTH && alpha.len() == WIDTH);
        // SAFETY (both calls): forwarded from the caller.
        self.scans[0] = unsafe {
            let weights = if row.len() == WIDTH {
                O::weights(whole_block(doc, 0), whole_block(row, 0), whole_block(inv, 0), whole_block(alpha, 0), beta)
            } else {
                O::weights_partial(whole_block(doc, 0), row, whole_block(inv, 0), whole_block(alpha, 0), beta)
            };
            O::scan(&weights)
        };
    }

    /// [`BlockSearch::change_two_weights`] for one block.
    ///
    /// # Safety
    /// As [`BlockSearch::change_two_weights`]'s.
    #[inline(always)]
    pub(crate) unsafe fn change_two_weights_one_block<O: BlockOps>(&mut self, t1: usize, delta1: f32, t2: usize, delta2: f32) {
        debug_assert!(self.blocks == 1 && t1 < WIDTH && t2 < WIDTH);
        // SAFETY: forwarded from the caller.
        self.scans[0] = unsafe { O::add_two_from(&self.scans[0], t1, delta1, t2, delta2) };
    }

    /// [`BlockSearch::fill`], or [`BlockSearch::fill_one_block`] when `ONE_BLOCK`: a
    /// kernel compiled for one size calls these.
    ///
    /// # Safety
    /// As [`BlockSearch::fill`]'s, and `ONE_BLOCK` only for one block.
    #[inline(always)]
    pub(crate) unsafe fn fill_sized<O: BlockOps, const ONE_BLOCK: bool>(&mut self, row: &[u32], doc: &[u32], inv: &[f32], alpha: &[f32], beta: f32) {
        // SAFETY (both calls): forwarded from the caller.
        if ONE_BLOCK {
            unsafe { self.fill_one_block::<O>(row, doc, inv, alpha, beta) }
        } else {
            unsafe { self.fill::<O>(row, doc, inv, alpha, beta) }
        }
    }

    /// [`BlockSearch::change_two_weights`], or its one-block form when `ONE_BLOCK`.
    ///
    /// # Safety
    /// As [`BlockSearch::change_two_weights`]'s, and `ONE_BLOCK` only for one block.
    #[inline(always)]
    pub(crate) unsafe fn change_two_weights_sized<O: BlockOps, const ONE_BLOCK: bool>(&mut self, t1: usize, delta1: f32, t2: usize, delta2: f32) {
        // SAFETY (both calls): forwarded from the caller.
        if ONE_BLOCK {
            unsafe { self.change_two_weights_one_block::<O>(t1, delta1, t2, delta2) }
        } else {
            unsafe { self.change_two_weights::<O>(t1, delta1, t2, delta2) }
        }
    }

    /// [`BlockSearch::draw`], or [`BlockSearch::draw_one_block`] when `ONE_BLOCK`.
    ///
    /// # Safety
    /// `O`'s instruction set must be available, and `ONE_BLOCK` only for one block.
    #[inline(always)]
    pub(crate) unsafe fn draw_sized<O: BlockOps, const ONE_BLOCK: bool>(&self, unit: f32, k: usize) -> usize {
        // SAFETY (both calls): forwarded from the caller.
        if ONE_BLOCK {
            unsafe { self.draw_one_block::<O>(unit, k) }
        } else {
            unsafe { self.draw::<O>(unit, k) }
        }
    }

    /// [`BlockSearch::draw`] for one block: the same topic for the same weights and
    /// `unit` ([`BlockOps::locate_one`]).
    ///
    /// # Safety
    /// `O`'s instruction set must be available.
    #[inline(always)]
    pub(crate) unsafe fn draw_one_block<O: BlockOps>(&self, unit: f32, k: usize) -> usize {
        debug_assert!(self.blocks == 1);
        // SAFETY: forwarded from the caller.
        unsafe { O::locate_one(&self.scans[0], unit) }.min(k - 1)
    }
}

#[cfg(test)]
#[path = "block_search_tests.rs"]
mod tests;
