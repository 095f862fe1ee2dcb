//! The partitioned schedule of the dense sampler (Yan, Xu & Qi 2009; tomotopy's
//! `PARTITION`), deterministic at any thread count.
//!
//! Why it exists: parallel collapsed Gibbs needs threads that do not write the same
//! counts. The documents are cut into P blocks and the vocabulary into P blocks, both of
//! about equal token mass, which makes a P × P grid of cells (the tokens of document
//! block i whose words are in word block j). A sweep is P rounds; round r samples the P
//! cells (i, (i + r) mod P), which share no document and no word, so each cell owns the
//! document-topic rows of its documents and the topic-word rows of its words and updates
//! both live. Only the topic totals n_k are shared: each cell sees the round's snapshot
//! plus its own moves, and the cells' moves are added up after the round (integer sums,
//! so their order does not matter). Every draw is from the exact collapsed conditional
//! given those counts; the only staleness is the other cells' moves of the same round in
//! n_k, bounded by one round (1/P of a sweep).
//!
//! P depends on the corpus only, each cell draws from its own stream (seed, sweep, cell)
//! and visits its tokens in a fixed order, so the result is identical at any thread
//! count. Within a round, threads take cells from a queue, largest first, so the round's
//! work balances whatever the number of threads.

use super::block_search::padded;
use super::dense_kernel::{lda_isa, CellCounts, Isa};
use super::sampler::{GibbsState, SweepStats};
use super::tokens::Tokens;
use crate::rng::{stream, Purpose};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Tokens per cell the automatic block count aims at (at least). Each cell visits every
/// document of its block once, so smaller cells mean more, shorter visits; on linuxdoc
/// (2.4 M tokens) P = 8 (cells of ≈ 37 000 tokens) sampled about 10 % faster than P = 12
/// and 20 % faster than P = 24 on one thread, and a round's 8 cells still split evenly
/// over 2 threads (largest first: 99.7 % of the ideal by token counts).
pub const CELL_TOKENS: usize = 32_768;

/// Most blocks per side: P rounds per sweep, P² cells.
pub const MAX_BLOCKS: usize = 16;

/// Blocks per side for a corpus: about sqrt(N / CELL_TOKENS), at most [`MAX_BLOCKS`] and
/// never more than there are documents or words.
pub fn blocks_for(tokens: &Tokens) -> usize {
    blocks_for_sizes(tokens.num_tokens(), tokens.num_docs(), tokens.num_terms)
}

/// [`blocks_for`] from a corpus' sizes: N tokens, D documents, V words.
pub fn blocks_for_sizes(num_tokens: usize, num_docs: usize, num_terms: usize) -> usize {
    let by_mass = ((num_tokens / CELL_TOKENS) as f64).sqrt() as usize;
    by_mass.clamp(1, MAX_BLOCKS).min(num_docs.max(1)).min(num_terms.max(1))
}

/// Block b of P starts at the first item whose cumulative token count (`ptr`, the
/// items' token offsets) reaches b·N/P; the last bound is the number of items.
pub fn block_bounds(ptr: &[usize], p: usize) -> Vec<usize> {
    let items = ptr.len() - 1;
    let n = ptr[items];
    let mut bounds: Vec<usize> = (0..p).map(|b| ptr[..items].partition_point(|&c| c * p < b * n)).collect();
    bounds.push(items);
    bounds
}

/// The grid: document blocks, word blocks and where each cell's tokens are. A shard of
/// a distributed fit holds the document blocks `first_block..` of the whole grid, its
/// documents numbered from its first.
#[derive(Debug, Clone)]
pub struct Partition {
    /// P, blocks per side.
    pub blocks: usize,
    /// The global index of this grid's document block 0 (0 in one process).
    pub first_block: usize,
    /// Document block `first_block + i` is documents `doc_bounds[i]..doc_bounds[i + 1]`.
    pub doc_bounds: Vec<usize>,
    /// Word block j is words `word_bounds[j]..word_bounds[j + 1]`.
    pub word_bounds: Vec<usize>,
    /// Document d's tokens in word block j are positions
    /// `cell_ptr[d * (P + 1) + j]..cell_ptr[d * (P + 1) + j + 1]`.
    cell_ptr: Vec<usize>,
    /// Tokens of cell (i, j) at `i * P + j` (i counted from `first_block`).
    pub cell_tokens: Vec<usize>,
}

impl Partition {
    /// Cut `tokens` into `blocks` × `blocks` cells of about equal mass per block.
    pub fn new(tokens: &Tokens, blocks: usize) -> Self {
        let p = blocks.max(1);
        Self::with_bounds(tokens, p, 0, block_bounds(&tokens.doc_ptr, p), block_bounds(&tokens.word_ptr, p))
    }

    /// The grid of P blocks per side over `tokens`, which hold the document blocks
    /// `first_block..first_block + doc_bounds.len() - 1` (`doc_bounds` counted from the
    /// shard's first document), with the whole corpus' word blocks.
    pub fn with_bounds(tokens: &Tokens, p: usize, first_block: usize, doc_bounds: Vec<usize>, word_bounds: Vec<usize>) -> Self {
        let local_blocks = doc_bounds.len() - 1;
        let mut cell_ptr = Vec::with_capacity(tokens.num_docs() * (p + 1));
        for d in 0..tokens.num_docs() {
            let (a, b) = (tokens.doc_ptr[d], tokens.doc_ptr[d + 1]);
            let words = &tokens.words[a..b];
            assert!(words.is_sorted(), "tokens of a document are in word order (Tokens::from_counts)");
            cell_ptr.extend(word_bounds[..p].iter().map(|&first| a + words.partition_point(|&w| (w as usize) < first)));
            cell_ptr.push(b);
        }
        let mut cell_tokens = vec![0; local_blocks * p];
        for i in 0..local_blocks {
            for d in doc_bounds[i]..doc_bounds[i + 1] {
                for j in 0..p {
                    cell_tokens[i * p + j] += cell_ptr[d * (p + 1) + j + 1] - cell_ptr[d * (p + 1) + j];
                }
            }
        }
        Partition { blocks: p, first_block, doc_bounds, word_bounds, cell_ptr, cell_tokens }
    }

    /// Positions of document d's tokens in word block j.
    /// Document blocks this grid holds.
    pub fn local_blocks(&self) -> usize {
        self.doc_bounds.len() - 1
    }

    fn cell_range(&self, d: usize, j: usize) -> std::ops::Range<usize> {
        let at = d * (self.blocks + 1) + j;
        self.cell_ptr[at]..self.cell_ptr[at + 1]
    }
}

/// Sweeps under the partitioned schedule: the grid, the live document-topic counts and
/// the instruction set of the kernel.
#[derive(Debug, Clone)]
pub struct PartitionedSampler {
    pub partition: Partition,
    /// n_dk, document-major, each row padded with zeros to whole blocks of the kernel's
    /// search (`D × padded(K)`), kept equal to what `z` implies.
    doc_topics: Vec<u32>,
    isa: Isa,
}

/// One cell's share of a round: its tokens' topics and the rows it owns.
struct Cell<'a> {
    doc_block: usize,
    word_block: usize,
    /// Topics of document block `doc_block`'s tokens (from its first token on).
    z: &'a mut [u32],
    /// n_dk rows of document block `doc_block`.
    doc_rows: &'a mut [u32],
    /// n_kw rows of word block `word_block`.
    word_rows: &'a mut [u32],
}

impl PartitionedSampler {
    /// A sampler for `state` over `tokens` with the corpus' block count ([`blocks_for`]).
    pub fn new(tokens: &Tokens, state: &GibbsState) -> Self {
        Self::with_blocks(tokens, state, blocks_for(tokens))
    }

    /// A sampler with `blocks` blocks per side.
    pub fn with_blocks(tokens: &Tokens, state: &GibbsState, blocks: usize) -> Self {
        Self::with_isa(tokens, state, blocks, lda_isa())
    }

    pub(crate) fn with_isa(tokens: &Tokens, state: &GibbsState, blocks: usize, isa: Isa) -> Self {
        Self::over(tokens, state, Partition::new(tokens, blocks), isa)
    }

    /// A sampler over a given grid (a shard's, in a distributed fit).
    pub(crate) fn over(tokens: &Tokens, state: &GibbsState, partition: Partition, isa: Isa) -> Self {
        let stride = padded(state.num_topics);
        let mut doc_topics = vec![0u32; tokens.num_docs() * stride];
        for (d, row) in doc_topics.chunks_mut(stride).enumerate() {
            for &t in &state.z[tokens.doc_ptr[d]..tokens.doc_ptr[d + 1]] {
                row[t as usize] += 1;
            }
        }
        PartitionedSampler { partition, doc_topics, isa }
    }

    /// One sweep: P rounds of P disjoint cells (see the module docs).
    pub fn sweep(&mut self, state: &mut GibbsState, tokens: &Tokens, seed: u64, iteration: u64) -> SweepStats {
        let mut stats = SweepStats::default();
        for round in 0..self.partition.blocks {
            let (moves, round_stats) = self.round(state, tokens, seed, iteration, round);
            apply_topic_moves(&mut state.n_k, &moves);
            stats = stats.merge(round_stats);
        }
        stats
    }

    /// Round `round` of a sweep over this grid's cells: each cell (i, (i + round) mod P)
    /// updates its documents' and words' counts live; the topic totals `state.n_k` are
    /// left at the round's snapshot and the cells' net moves per topic returned (as
    /// wrapping two's-complement `u64`), for the caller to add (in one process) or sum
    /// over the ranks first.
    pub fn round(&mut self, state: &mut GibbsState, tokens: &Tokens, seed: u64, iteration: u64, round: usize) -> (Vec<u64>, SweepStats) {
        let part = &self.partition;
        let (p, first) = (part.blocks, part.first_block);
        let k = state.num_topics;
        let (alpha, beta) = (state.alpha.clone(), state.beta);
        let vbeta = state.num_terms as f64 * beta;
        let isa = self.isa;
        let mut stats = SweepStats::default();
        let mut moves = vec![0u64; k];
        {
            let snapshot = state.n_k.clone();
            let mut z_parts = split_at_bounds(&mut state.z, part.doc_bounds.iter().map(|&d| tokens.doc_ptr[d]));
            let mut doc_parts = split_at_bounds(&mut self.doc_topics, part.doc_bounds.iter().map(|&d| d * padded(k)));
            let mut word_parts: Vec<Option<&mut [u32]>> =
                split_at_bounds(&mut state.n_kw, part.word_bounds.iter().map(|&w| w * k)).into_iter().map(Some).collect();
            let local = part.local_blocks();
            let mut cells: Vec<Cell> = Vec::with_capacity(local);
            for (i, (z, doc_rows)) in z_parts.drain(..).zip(doc_parts.drain(..)).enumerate() {
                let j = (first + i + round) % p;
                let word_rows = word_parts[j].take().expect("each word block is in one cell per round");
                cells.push(Cell { doc_block: i, word_block: j, z, doc_rows, word_rows });
            }
            // Largest cells first, so the round ends on small ones (ties: document block).
            cells.sort_by_key(|c| (std::cmp::Reverse(part.cell_tokens[c.doc_block * p + c.word_block]), c.doc_block));
            let queue: Vec<Mutex<Option<Cell>>> = cells.into_iter().map(|c| Mutex::new(Some(c))).collect();
            let done: Vec<Mutex<Option<CellResult>>> = (0..local).map(|_| Mutex::new(None)).collect();
            let next = AtomicUsize::new(0);
            let work = || loop {
                let at = next.fetch_add(1, Ordering::Relaxed);
                let Some(slot) = queue.get(at) else { break };
                let cell = slot.lock().expect("cell lock").take().expect("each cell is taken once");
                let result = sample_cell(cell, part, tokens, &snapshot, (k, &alpha, beta, vbeta), isa, (seed, iteration));
                *done[at].lock().expect("result lock") = Some(result);
            };
            if rayon::current_num_threads() > 1 {
                rayon::broadcast(|_| work());
            } else {
                work();
            }
            // Every cell's moves: Σ (cell's n_k − snapshot); integer sums, so the order
            // of the cells does not matter.
            for slot in done {
                let (cell_n_k, cell_stats) = slot.into_inner().expect("result lock").expect("every cell ran");
                for ((moved, &seen), &before) in moves.iter_mut().zip(&cell_n_k).zip(&snapshot) {
                    *moved = moved.wrapping_add(seen.wrapping_sub(before));
                }
                stats = stats.merge(cell_stats);
            }
        }
        (moves, stats)
    }
}

/// n_k += the round's net moves (wrapping two's complement: the totals stay
/// non-negative, the moves may not be).
pub fn apply_topic_moves(n_k: &mut [u64], moves: &[u64]) {
    for (total, &moved) in n_k.iter_mut().zip(moves) {
        *total = total.wrapping_add(moved);
    }
}

/// What a cell hands back: n_k as it left it, and its work counts.
type CellResult = (Vec<u64>, SweepStats);

/// Resample one cell's tokens, document by document.
fn sample_cell(cell: Cell, part: &Partition, tokens: &Tokens, snapshot: &[u64], model: (usize, &[f64], f64, f64), isa: Isa, key: (u64, u64)) -> CellResult {
    let (k, alpha, beta, vbeta) = model;
    let (i, j, p) = (cell.doc_block, cell.word_block, part.blocks);
    let mut rng = stream(key.0, Purpose::Sweep, key.1, ((part.first_block + i) * p + j) as u64);
    let first_doc = part.doc_bounds[i];
    let first_token = tokens.doc_ptr[first_doc];
    let doc_stride = padded(k);
    let mut counts = CellCounts::new(k, alpha, beta, vbeta, cell.word_rows, part.word_bounds[j], snapshot.to_vec());
    let mut stats = SweepStats::default();
    for d in first_doc..part.doc_bounds[i + 1] {
        let range = part.cell_range(d, j);
        if range.is_empty() {
            continue;
        }
        let words = &tokens.words[range.clone()];
        let zs = &mut cell.z[range.start - first_token..range.end - first_token];
        let doc = &mut cell.doc_rows[(d - first_doc) * doc_stride..(d - first_doc + 1) * doc_stride];
        counts.resample(isa, zs, words, doc, &mut rng, &mut stats);
    }
    (counts.n_k, stats)
}

/// Split `items` at the ascending offsets `bounds` (the first must be 0, the last
/// `items.len()`) into consecutive mutable parts.
fn split_at_bounds<T>(items: &mut [T], bounds: impl Iterator<Item = usize>) -> Vec<&mut [T]> {
    let mut parts = Vec::new();
    let mut rest = items;
    let mut at = 0;
    for (n, b) in bounds.enumerate() {
        if n == 0 {
            debug_assert_eq!(b, 0);
            continue;
        }
        let (head, tail) = std::mem::take(&mut rest).split_at_mut(b - at);
        parts.push(head);
        rest = tail;
        at = b;
    }
    debug_assert!(rest.is_empty());
    parts
}

#[cfg(test)]
#[path = "partition_tests.rs"]
mod tests;
