//! One rank's documents: the grid's plan rank 0 computes, the shard each rank builds
//! from its documents' counts, and rank 0's scatter of the corpus.
//!
//! Why it exists: the preprocessing (vocabulary, pruning, the held-out split,
//! covariates) is global, so rank 0 does it once and sends each rank the counts of its
//! run of document blocks with the plan of the whole grid; its verdict goes first, so a
//! bad input ends every rank.

use crate::corpus::{Corpus, DocTermMatrix};
use crate::models::heldout::HeldoutDoc;
use crate::models::lda::fit::{heldout_docs, training_design, training_set};
use crate::models::lda::partition::{block_bounds, blocks_for_sizes, Partition};
use crate::models::lda::sampler;
use crate::models::lda::tokens::{sync_blocks, Tokens, MIN_BLOCK_DOCUMENTS};
use crate::models::lda::LdaParams;
use crate::models::{FitError, ParamError};
use crate::ranks::{block_range, Ranks};
use serde::{Deserialize, Serialize};
use std::ops::Range;

/// One rank's documents and the whole grid's shape.
pub struct LdaShard {
    /// This rank's training documents, the corpus' `first_doc..first_doc + tokens.num_docs()`.
    pub tokens: Tokens,
    pub first_doc: usize,
    /// The corpus-order index of this shard's first token.
    pub first_token: usize,
    /// Training documents and tokens of the whole corpus.
    pub num_docs: usize,
    pub num_tokens: usize,
    /// The grid restricted to this rank's document blocks.
    pub(super) partition: Partition,
    /// The sparse kernel's sync blocks of the whole corpus (empty for the dense one).
    pub(super) sync_blocks: Vec<Vec<u32>>,
    /// This rank's document blocks (global indices).
    pub blocks: Range<usize>,
}

/// The whole grid's shape, which rank 0 computes from the training documents and sends
/// every rank with its documents.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShardPlan {
    /// P, blocks per side.
    blocks: usize,
    /// Document block b is training documents `doc_bounds[b]..doc_bounds[b + 1]`.
    doc_bounds: Vec<usize>,
    /// Word block b is words `word_bounds[b]..word_bounds[b + 1]`.
    word_bounds: Vec<usize>,
    /// Document block b's first token in the corpus' token order.
    token_bounds: Vec<usize>,
    num_docs: usize,
    num_tokens: usize,
    num_terms: usize,
    /// The sparse kernel's sync blocks of the whole corpus (global document ids), when
    /// it samples (more than [`sampler::DENSE_MAX_TOPICS`] topics); empty otherwise.
    sync_blocks: Vec<Vec<u32>>,
}

impl ShardPlan {
    /// The grid of the training documents' counts: P from the corpus' size, the bounds
    /// from its document lengths and word masses; and the sparse kernel's sync blocks of
    /// `sync_tokens` when it samples.
    pub fn of(training: &DocTermMatrix, num_terms: usize, p: &LdaParams) -> Self {
        let num_docs = training.num_rows();
        let mut doc_ptr = Vec::with_capacity(num_docs + 1);
        let mut word_ptr = vec![0usize; num_terms + 1];
        doc_ptr.push(0);
        for d in 0..num_docs {
            let (terms, counts) = training.row(d);
            let mut length = 0;
            for (&t, &n) in terms.iter().zip(counts) {
                word_ptr[t as usize + 1] += n as usize;
                length += n as usize;
            }
            doc_ptr.push(doc_ptr[d] + length);
        }
        for w in 0..num_terms {
            word_ptr[w + 1] += word_ptr[w];
        }
        let num_tokens = doc_ptr[num_docs];
        let blocks = blocks_for_sizes(num_tokens, num_docs, num_terms);
        let sync_blocks = if sampler::uses_dense_kernel(p.topics) { Vec::new() } else { sync_blocks(&doc_ptr, p.sync_tokens, MIN_BLOCK_DOCUMENTS) };
        let doc_bounds = block_bounds(&doc_ptr, blocks);
        let token_bounds = doc_bounds.iter().map(|&d| doc_ptr[d]).collect();
        ShardPlan { blocks, token_bounds, doc_bounds, word_bounds: block_bounds(&word_ptr, blocks), num_docs, num_tokens, num_terms, sync_blocks }
    }

    /// The training documents rank `rank` of `ranks` owns.
    pub fn documents_of(&self, rank: usize, ranks: usize) -> Range<usize> {
        let blocks = block_range(self.blocks, ranks, rank);
        self.doc_bounds[blocks.start]..self.doc_bounds[blocks.end]
    }
}

/// The rows `documents` of `counts`, as a matrix of their own.
fn rows_of(counts: &DocTermMatrix, documents: Range<usize>) -> DocTermMatrix {
    DocTermMatrix::from_rows(documents.map(|d| {
        let (terms, counts) = counts.row(d);
        terms.iter().copied().zip(counts.iter().copied()).collect()
    }))
}

impl LdaShard {
    /// Rank `rank`'s shard of `ranks`: its documents' counts `own` (the plan's
    /// [`ShardPlan::documents_of`]) as tokens, and the grid over them.
    pub fn new(plan: &ShardPlan, own: &DocTermMatrix, rank: usize, ranks: usize) -> Self {
        let blocks = block_range(plan.blocks, ranks, rank);
        let first_doc = plan.doc_bounds[blocks.start];
        let tokens = Tokens::from_counts(own, plan.num_terms);
        assert_eq!(tokens.num_docs(), plan.doc_bounds[blocks.end] - first_doc, "the shard holds its blocks' documents");
        let local_bounds = plan.doc_bounds[blocks.start..=blocks.end].iter().map(|&d| d - first_doc).collect();
        let partition = Partition::with_bounds(&tokens, plan.blocks, blocks.start, local_bounds, plan.word_bounds.clone());
        LdaShard {
            tokens,
            first_doc,
            first_token: plan.token_bounds[blocks.start],
            num_docs: plan.num_docs,
            num_tokens: plan.num_tokens,
            partition,
            blocks,
            sync_blocks: plan.sync_blocks.clone(),
        }
    }

    /// Rank `rank`'s shard cut from the training documents' counts (every document at
    /// hand: tests, and rank 0's own shard).
    pub fn cut(training: &DocTermMatrix, num_terms: usize, p: &LdaParams, rank: usize, ranks: usize) -> Self {
        let plan = ShardPlan::of(training, num_terms, p);
        Self::new(&plan, &rows_of(training, plan.documents_of(rank, ranks)), rank, ranks)
    }

    /// P, blocks per side of the whole grid.
    pub fn grid_blocks(&self) -> usize {
        self.partition.blocks
    }
}

/// What rank 0 keeps of the corpus once the shards are sent: what the model needs
/// besides the chains.
pub(super) struct RootPart {
    pub test_documents: usize,
    pub heldout: Vec<HeldoutDoc>,
    pub design: Option<(crate::models::design::DesignSpec, Vec<f64>)>,
}

/// Rank 0: split the corpus, send every other rank its shard and keep its own; the
/// others: receive theirs. Every rank gets rank 0's error, if any.
pub(super) fn scatter(corpus: Option<Corpus>, p: &LdaParams, seed: u64, ranks: &dyn Ranks) -> Result<(LdaShard, Option<RootPart>), FitError> {
    let (rank, size) = (ranks.rank(), ranks.size());
    let prepared = corpus.map(|mut corpus| -> Result<_, FitError> {
        let (held_out, test_documents, training) = training_set(&corpus, p, seed)?;
        // The training counts without a copy when nothing is held out.
        let training = match training {
            std::borrow::Cow::Owned(m) => Some(m),
            std::borrow::Cow::Borrowed(_) => None,
        };
        let design = training_design(&corpus, p, &held_out)?;
        let root = RootPart { test_documents, heldout: heldout_docs(&corpus, &held_out), design };
        let training = training.unwrap_or_else(|| std::mem::replace(&mut corpus.counts, DocTermMatrix::from_rows(std::iter::empty())));
        let plan = ShardPlan::of(&training, corpus.num_terms(), p);
        Ok((plan, training, root))
    });
    // Rank 0 says whether the fit goes ahead; on an error every rank returns it.
    let mut verdict = match &prepared {
        Some(Err(e)) => postcard::to_allocvec(&Some(e.to_string())).expect("plain data encodes"),
        _ => postcard::to_allocvec(&None::<String>).expect("plain data encodes"),
    };
    ranks.broadcast(0, &mut verdict);
    if let Some(message) = postcard::from_bytes::<Option<String>>(&verdict).expect("rank 0's verdict decodes") {
        return Err(match prepared {
            Some(Err(e)) => e,
            _ => FitError::Params(ParamError::new("ranks", format!("rank 0: {message}"))),
        });
    }
    match prepared {
        Some(Ok((plan, training, root))) => {
            for q in 1..size {
                let own = rows_of(&training, plan.documents_of(q, size));
                let bytes = postcard::to_allocvec(&(&plan, &own)).expect("plain data encodes");
                ranks.exchange(Some((q, &bytes)), None);
            }
            let own = rows_of(&training, plan.documents_of(rank, size));
            drop(training);
            Ok((LdaShard::new(&plan, &own, rank, size), Some(root)))
        }
        _ => {
            let bytes = ranks.exchange(None, Some(0)).expect("rank 0 sends every rank its shard");
            let (plan, own): (ShardPlan, DocTermMatrix) = postcard::from_bytes(&bytes).expect("rank 0's shard decodes");
            Ok((LdaShard::new(&plan, &own, rank, size), None))
        }
    }
}
