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
//! the block's own prefix sums are the search, one compare and one scan shorter; with
//! two blocks the two ends are kept as scalars, and choosing the block is one scalar
//! compare. Both give the same draws as the general search.
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
        // SAFETY: forwarded from the caller.
        (b, unsafe { Self::locate_in(&scans[b], rest) })
    }
    /// The lane search inside one block: the number of `scan` at or below `rest`, at
    /// most the last lane ([`BlockOps::locate`]'s second step). The default is the
    /// portable form.
    #[inline(always)]
    unsafe fn locate_in(scan: &Block, rest: f32) -> usize {
        scan.iter().filter(|&&s| s <= rest).count().min(WIDTH - 1)
    }
    /// The search over a single block (K ≤ [`WIDTH`]): with u = `unit` × scan[WIDTH − 1],
    /// the number of `scan` at or below u. [`BlockOps::locate`] gives the same lane for
    /// one block (its block ends are then that block's total in every lane, so b = 0
    /// and the rest is u − 0 = u) one compare later. The default is the portable form.
    #[inline(always)]
    unsafe fn locate_one(scan: &Block, unit: f32) -> usize {
        // SAFETY: forwarded from the caller.
        unsafe { Self::locate_in(scan, unit * scan[WIDTH - 1]) }
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

#[cfg(target_arch = "x86_64")]
#[path = "block_search_x86.rs"]
mod x86;
#[cfg(target_arch = "x86_64")]
pub(crate) use x86::{Avx2, Avx512};

/// One draw's weights and their block sums (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct BlockSearch {
    /// Blocks in use: K / WIDTH rounded up.
    blocks: usize,
    /// Inclusive prefix sums of the weights within each block (+0 past K).
    scans: [Block; MAX_BLOCKS],
    /// Inclusive prefix sums of the block totals (+0 past `blocks`); the last is the
    /// sum of all weights. The one-block `_sized` methods keep none (that block's last
    /// prefix sum is the total), the two-block ones only lanes 0 and 1.
    ends: Block,
}

/// The WIDTH values of `values` from `at` on.
#[inline(always)]
fn whole_block<T>(values: &[T], at: usize) -> &[T; WIDTH] {
    values[at..at + WIDTH].try_into().expect("a whole block")
}

/// Most blocks.
pub(crate) const MAX_BLOCKS: usize = MAX_TOPICS / WIDTH;

/// The weights of block `b` of the K = `row.len()` topics ([`BlockOps::weights`]; the
/// last block, if partial, +0 past K).
///
/// # Safety
/// `O`'s instruction set must be available.
#[inline(always)]
unsafe fn block_weights<O: BlockOps>(b: usize, row: &[u32], doc: &[u32], inv: &[f32], alpha: &[f32], beta: f32) -> Block {
    let at = b * WIDTH;
    // SAFETY (both calls): forwarded from the caller.
    if at + WIDTH <= row.len() {
        unsafe { O::weights(whole_block(doc, at), whole_block(row, at), whole_block(inv, at), whole_block(alpha, at), beta) }
    } else {
        unsafe { O::weights_partial(whole_block(doc, at), &row[at..], whole_block(inv, at), whole_block(alpha, at), beta) }
    }
}

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
        let mut totals = [0.0f32; WIDTH];
        for b in 0..self.blocks {
            // SAFETY (both calls): forwarded from the caller.
            let weights = unsafe { block_weights::<O>(b, row, doc, inv, alpha, beta) };
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
        // SAFETY (both calls): forwarded from the caller.
        let (b1, b2) = unsafe { self.change_two_scans::<O>(t1, delta1, t2, delta2) };
        self.ends = unsafe { O::add_two_from(&self.ends, b1, delta1, b2, delta2) };
    }

    /// The blocks' prefix sums' part of [`BlockSearch::change_two_weights`]; returns the
    /// two topics' blocks.
    ///
    /// # Safety
    /// As [`BlockSearch::change_two_weights`]'s.
    #[inline(always)]
    unsafe fn change_two_scans<O: BlockOps>(&mut self, t1: usize, delta1: f32, t2: usize, delta2: f32) -> (usize, usize) {
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
        }
        (b1, b2)
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

    /// [`BlockSearch::fill`], or for a kernel compiled for exactly `BLOCKS` blocks (1 or
    /// 2; 0 is any number, the general fill) a fill without the block ends' vector. With
    /// one block its prefix sums are the whole search; with two, the two ends the search
    /// reads are kept as scalars in `ends[0]` and `ends[1]`, the same values the vector
    /// would hold there (every lane from 1 on of the scanned totals is t₀ + t₁, the lanes
    /// past the second adding +0). A kernel calls only the `_sized` methods, with one
    /// `BLOCKS`.
    ///
    /// # Safety
    /// As [`BlockSearch::fill`]'s, and `BLOCKS` (if not 0) must be the number of blocks.
    #[inline(always)]
    pub(crate) unsafe fn fill_sized<O: BlockOps, const BLOCKS: usize>(&mut self, row: &[u32], doc: &[u32], inv: &[f32], alpha: &[f32], beta: f32) {
        if BLOCKS == 0 {
            // SAFETY: forwarded from the caller.
            return unsafe { self.fill::<O>(row, doc, inv, alpha, beta) };
        }
        let padded = BLOCKS * WIDTH;
        assert!(self.blocks == BLOCKS && doc.len() == padded && inv.len() == padded && alpha.len() == padded);
        let mut before = 0.0f32;
        for b in 0..BLOCKS {
            // SAFETY: forwarded from the caller.
            let scan = unsafe { O::scan(&block_weights::<O>(b, row, doc, inv, alpha, beta)) };
            if BLOCKS == 2 {
                // The first end is t₀ (+0 added), the second t₁ + t₀ as the scan adds them.
                before = if b == 0 { scan[WIDTH - 1] } else { scan[WIDTH - 1] + before };
                self.ends[b] = before;
            }
            self.scans[b] = scan;
        }
    }

    /// [`BlockSearch::change_two_weights`], or for exactly `BLOCKS` blocks (1 or 2) the
    /// same change without the block ends' vector: one block has none, and two change
    /// their scalar ends as the vector's lanes 0 and 1 would change.
    ///
    /// # Safety
    /// As [`BlockSearch::change_two_weights`]'s, and `BLOCKS` (if not 0) must be the
    /// number of blocks.
    #[inline(always)]
    pub(crate) unsafe fn change_two_weights_sized<O: BlockOps, const BLOCKS: usize>(&mut self, t1: usize, delta1: f32, t2: usize, delta2: f32) {
        match BLOCKS {
            1 => {
                debug_assert!(self.blocks == 1 && t1 < WIDTH && t2 < WIDTH);
                // SAFETY: forwarded from the caller.
                self.scans[0] = unsafe { O::add_two_from(&self.scans[0], t1, delta1, t2, delta2) };
            }
            2 => {
                debug_assert!(self.blocks == 2);
                // SAFETY: forwarded from the caller.
                let (b1, b2) = unsafe { self.change_two_scans::<O>(t1, delta1, t2, delta2) };
                // As `add_two_from` changes lanes 0 and 1 of the ends.
                self.ends[0] += (if b1 == 0 { delta1 } else { 0.0 }) + (if b2 == 0 { delta2 } else { 0.0 });
                self.ends[1] += delta1 + delta2;
            }
            // SAFETY: forwarded from the caller.
            _ => unsafe { self.change_two_weights::<O>(t1, delta1, t2, delta2) },
        }
    }

    /// [`BlockSearch::draw`], or for exactly `BLOCKS` blocks (1 or 2) the same topic for
    /// the same weights and `unit` without the block ends' vector: one block is searched
    /// alone ([`BlockOps::locate_one`]), and of two the second is chosen when u reaches
    /// either end ([`BlockOps::locate`] counts the ends at or below u, at most the last
    /// block), its lane found at u less the first end.
    ///
    /// # Safety
    /// `O`'s instruction set must be available, and `BLOCKS` (if not 0) must be the number
    /// of blocks.
    #[inline(always)]
    pub(crate) unsafe fn draw_sized<O: BlockOps, const BLOCKS: usize>(&self, unit: f32, k: usize) -> usize {
        match BLOCKS {
            1 => {
                debug_assert!(self.blocks == 1);
                // SAFETY: forwarded from the caller.
                unsafe { O::locate_one(&self.scans[0], unit) }.min(k - 1)
            }
            2 => {
                debug_assert!(self.blocks == 2);
                let (first, last) = (self.ends[0], self.ends[1]);
                let u = unit * last;
                let second = (first <= u) | (last <= u);
                let rest = u - if second { first } else { 0.0 };
                // SAFETY: forwarded from the caller.
                let (s0, s1) = (&self.scans[0], &self.scans[1]);
                let lane = unsafe { O::locate_in(if second { s1 } else { s0 }, rest) };
                (usize::from(second) * WIDTH + lane).min(k - 1)
            }
            // SAFETY: forwarded from the caller.
            _ => unsafe { self.draw::<O>(unit, k) },
        }
    }
}

#[cfg(test)]
#[path = "block_search_tests.rs"]
mod tests;
