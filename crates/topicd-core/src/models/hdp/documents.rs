//! The documents of an HDP fit this process holds: all of them, or one rank's share of
//! every batch.
//!
//! Why it exists: a memoized pass visits the batches one after another, and each visit's
//! global step needs the whole batch's summary, so a fit over R ranks spreads every
//! batch over the ranks (rank q holds a contiguous run of each batch's documents, from a
//! multiple of [`CHUNK`], so the order in which its small statistics are summed is the
//! single-process order). [`BatchPlan`] is the batches' shape rank 0 computes from the
//! training documents and sends with each rank's documents; [`HdpDocuments`] is what the
//! memo reads: this process' rows, each batch's layout over them, and the sizes of the
//! whole.

use super::local::{BatchLayout, CHUNK};
use crate::corpus::DocTermMatrix;
use crate::ranks::block_range;
use serde::{Deserialize, Serialize};
use std::ops::Range;

/// The batches of the whole training corpus: their documents and words.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BatchPlan {
    /// Batch b is training documents `bounds[b]..bounds[b + 1]`.
    pub bounds: Vec<usize>,
    /// Each batch's distinct words, increasing.
    pub words: Vec<Vec<u32>>,
    pub num_terms: usize,
    pub num_tokens: u64,
}

impl BatchPlan {
    /// `batches` batches of consecutive documents of `matrix` (sizes differing by at
    /// most one; at most one per document).
    pub fn of(matrix: &DocTermMatrix, num_terms: usize, batches: usize) -> (Self, Vec<BatchLayout>) {
        let d = matrix.num_rows();
        let b = batches.min(d).max(1);
        let bounds: Vec<usize> = (0..=b).map(|i| i * d / b).collect();
        let layouts: Vec<BatchLayout> = (0..b).map(|i| BatchLayout::new(matrix, bounds[i]..bounds[i + 1])).collect();
        let words = layouts.iter().map(|l| l.words.clone()).collect();
        (BatchPlan { bounds, words, num_terms, num_tokens: matrix.total_tokens() }, layouts)
    }

    pub fn num_batches(&self) -> usize {
        self.bounds.len() - 1
    }

    pub fn num_docs(&self) -> usize {
        *self.bounds.last().expect("at least one bound")
    }

    /// The training documents of batch `b` that rank `rank` of `ranks` holds: the
    /// chunks [`block_range`] gives it, a contiguous run (empty for a rank beyond the
    /// batch's chunks).
    pub fn share_of(&self, b: usize, rank: usize, ranks: usize) -> Range<usize> {
        let (start, end) = (self.bounds[b], self.bounds[b + 1]);
        let chunks = block_range((end - start).div_ceil(CHUNK), ranks, rank);
        (start + chunks.start * CHUNK).min(end)..(start + chunks.end * CHUNK).min(end)
    }

    /// Every document rank `rank` holds, batch after batch (increasing).
    pub fn documents_of(&self, rank: usize, ranks: usize) -> impl Iterator<Item = usize> + '_ {
        (0..self.num_batches()).flat_map(move |b| self.share_of(b, rank, ranks))
    }
}

/// This process' documents and the batches over them.
pub struct HdpDocuments<'a> {
    /// This process' training documents, in corpus order.
    pub matrix: &'a DocTermMatrix,
    /// Each batch's layout over `matrix`'s rows (this process' share of the batch).
    pub layouts: Vec<BatchLayout>,
    /// Each batch's documents in the whole training corpus.
    pub batch_sizes: Vec<usize>,
    /// Each batch: where this process' share starts within it.
    pub offsets: Vec<usize>,
    pub num_terms: usize,
    /// Training documents and tokens of the whole corpus.
    pub num_docs: usize,
    pub num_tokens: u64,
}

impl<'a> HdpDocuments<'a> {
    /// Every training document, in one process.
    pub fn whole(matrix: &'a DocTermMatrix, num_terms: usize, batches: usize) -> Self {
        let (plan, layouts) = BatchPlan::of(matrix, num_terms, batches);
        let batch_sizes = layouts.iter().map(|l| l.docs.len()).collect();
        HdpDocuments { matrix, offsets: vec![0; layouts.len()], layouts, batch_sizes, num_terms, num_docs: plan.num_docs(), num_tokens: plan.num_tokens }
    }

    /// Rank `rank`'s share of `plan`: `own` holds its documents ([`BatchPlan::documents_of`]).
    pub fn share(own: &'a DocTermMatrix, plan: &BatchPlan, rank: usize, ranks: usize) -> Self {
        let mut at = 0;
        let mut layouts = Vec::with_capacity(plan.num_batches());
        let mut offsets = Vec::with_capacity(plan.num_batches());
        for b in 0..plan.num_batches() {
            let share = plan.share_of(b, rank, ranks);
            offsets.push(share.start - plan.bounds[b]);
            layouts.push(BatchLayout::share(own, at..at + share.len(), plan.words[b].clone()));
            at += share.len();
        }
        assert_eq!(at, own.num_rows(), "the rank holds its shares' documents");
        let batch_sizes = plan.bounds.windows(2).map(|w| w[1] - w[0]).collect();
        HdpDocuments { matrix: own, layouts, batch_sizes, offsets, num_terms: plan.num_terms, num_docs: plan.num_docs(), num_tokens: plan.num_tokens }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every batch's shares cover it in rank order, each starting at a multiple of
    /// CHUNK; ranks beyond a small batch's chunks hold none of it.
    #[test]
    fn shares_tile_every_batch_at_chunk_bounds() {
        let m = DocTermMatrix::from_rows((0..1000).map(|d| vec![(d as u32 % 7, 1)]));
        let (plan, _) = BatchPlan::of(&m, 7, 3);
        for ranks in 1..=6 {
            for b in 0..3 {
                let mut next = plan.bounds[b];
                for q in 0..ranks {
                    let share = plan.share_of(b, q, ranks);
                    assert!(share.is_empty() || share.start == next, "ranks {ranks} batch {b} rank {q}");
                    assert_eq!((share.start - plan.bounds[b]) % CHUNK, 0);
                    next = next.max(share.end);
                }
                assert_eq!(next, plan.bounds[b + 1]);
            }
        }
        let small = DocTermMatrix::from_rows((0..100).map(|_| vec![(0u32, 1)]));
        let (plan, _) = BatchPlan::of(&small, 1, 1);
        assert_eq!(plan.share_of(0, 1, 2), 64..100);
        assert!(plan.share_of(0, 2, 4).is_empty() || plan.share_of(0, 3, 4).is_empty());
    }
}
