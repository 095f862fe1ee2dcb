//! LDA over the ranks of a distributed fit, giving the single-process fit's bytes.
//!
//! Why it exists: a corpus whose tokens and assignments do not fit one machine is split
//! over R ranks ([`crate::ranks`]). The partitioned schedule ([`super::partition`])
//! already cuts the documents into P blocks and the vocabulary into P blocks and samples
//! P disjoint cells per round, each from its own stream (seed, sweep, cell); this module
//! runs that same schedule with the document blocks spread over the ranks:
//!
//! - rank q owns the document blocks [`crate::ranks::block_range`]`(P, R, q)`, a
//!   contiguous run, with their tokens, assignments z and document-topic counts n_dk
//!   (the document side, 1/R of it per rank);
//! - every rank keeps an array of the topic-word counts n_kw (the shared side), of which
//!   only the word blocks it is sampling are current: in round r, document block i
//!   samples word block (i + r) mod P, which document block i − 1 samples next round, so
//!   after each round a rank sends the word block of its first document block to the
//!   rank owning the block before it and receives the one its last block needs (one
//!   block per rank and round: the counts that must move, and no more);
//! - the topic totals n_k are the round's snapshot plus the cells' moves, summed over the
//!   ranks as integers after each round, as one process sums its cells;
//! - when a sweep is followed by something that reads all of n_kw (the log joint, a kept
//!   sweep, α/β re-estimation, the end), the ranks gather the word blocks they hold;
//! - every float reduction over documents runs in document order: the log joint's
//!   document terms are passed from rank to rank ([`Ranks::fold_in_rank_order`]), θ is
//!   gathered to rank 0 in rank order, which is document order.
//!
//! So rank 0 ends with exactly the model [`super::fit_lda`] makes from the same corpus,
//! parameters and seed, for every R.
//!
//! The sparse kernel (more than [`super::sampler::DENSE_MAX_TOPICS`] topics) samples
//! the corpus' sync blocks in order against a snapshot; over ranks, each rank samples
//! its own documents of the block and the ranks exchange their moves (word, old topic,
//! new topic) after it, so every rank keeps n_kw whole and applies the same integer
//! moves one process applies.

use super::chain::{encode_state, schedule, step_diagnostics, PosteriorSums, SavedLda};
use super::dense_kernel::lda_isa;
use super::hyper::{self, DocumentTopicHistograms};
use super::partition::{apply_topic_moves, block_bounds, blocks_for_sizes, Partition, PartitionedSampler};
use super::sampler::{self, GibbsState, Snapshot, SweepStats};
use super::tokens::{sync_blocks, Tokens, MIN_BLOCK_DOCUMENTS};
use super::{model_of_ended, pooled, training_set, EndedChain, LdaModel, LdaParams, TopicWordSample};
use crate::corpus::{Corpus, DocTermMatrix};
use crate::models::chain::{self, Chain, Checkpoint, Position, Resume, Schedule};
use crate::models::chains::{chain_seed, ChainResult};
use crate::models::heldout::HeldoutDoc;
use crate::models::{Checkpointing, FitContext, FitError, ParamError, ALWAYS_READY};
use crate::ranks::{block_range, bytes_to_f64s, bytes_to_u32s, f64s_to_bytes, owner_of_block, u32s_to_bytes, Ranks};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
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
    partition: Partition,
    /// The sparse kernel's sync blocks of the whole corpus (empty for the dense one).
    sync_blocks: Vec<Vec<u32>>,
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

    /// Heap bytes of this rank's document side (tokens, their word index, assignments)
    /// for the memory benchmark; n_dk and θ's sums are counted by the chain.
    pub fn document_bytes(&self) -> usize {
        let t = &self.tokens;
        (t.words.len() + t.word_tokens.len()) * 4 + (t.doc_ptr.len() + t.word_ptr.len()) * 8
    }
}

/// How a shard's sweeps run: the dense kernel's partitioned grid, whose word blocks
/// move between the ranks, or the sparse kernel's sync blocks, after each of which the
/// ranks exchange their moves (every rank keeps the counts whole).
enum ShardSweeps {
    Partitioned(PartitionedSampler),
    Blocks(Snapshot),
}

/// A chain of LDA's sweeps over one rank's shard.
struct RankedChain<'a> {
    params: &'a LdaParams,
    shard: &'a LdaShard,
    ranks: &'a dyn Ranks,
    schedule: Schedule,
    state: GibbsState,
    sweeps: ShardSweeps,
    sums: PosteriorSums,
    doc_topics_sum: f64,
    optimizations: usize,
}

impl<'a> RankedChain<'a> {
    /// The chain a checkpoint's state continues: this rank's slice of the assignments,
    /// θ's sums and draws; the counts summed over the ranks.
    fn restore(params: &'a LdaParams, shard: &'a LdaShard, ranks: &'a dyn Ranks, saved: SavedLda) -> Self {
        let k = params.topics;
        let (docs, tokens) = (shard.first_doc..shard.first_doc + shard.tokens.num_docs(), shard.first_token..shard.first_token + shard.tokens.num_tokens());
        let rows = docs.start * k..docs.end * k;
        let SavedLda { z, alpha, beta, mut sums, doc_topics_sum, optimizations, .. } = saved;
        sums.theta = sums.theta[rows.clone()].to_vec();
        for draw in &mut sums.theta_draws {
            *draw = draw[rows.clone()].to_vec();
        }
        let mut state = GibbsState::from_assignments(&shard.tokens, k, z[tokens].to_vec(), alpha, beta);
        ranks.sum_u32(&mut state.n_kw);
        ranks.sum_u64(&mut state.n_k);
        let mut chain = Self::assemble(params, shard, ranks, state, sums);
        (chain.doc_topics_sum, chain.optimizations) = (doc_topics_sum, optimizations);
        chain
    }

    /// Random initial assignments (each document's stream keyed by its corpus index) and
    /// the counts summed over the ranks.
    fn new(params: &'a LdaParams, shard: &'a LdaShard, ranks: &'a dyn Ranks, seed: u64) -> Self {
        let mut state = GibbsState::init_from(&shard.tokens, params.topics, params.alpha, params.beta, seed, shard.first_doc);
        ranks.sum_u32(&mut state.n_kw);
        ranks.sum_u64(&mut state.n_k);
        let sums = PosteriorSums::new(params, shard.tokens.num_terms, shard.tokens.num_docs(), shard.num_docs);
        Self::assemble(params, shard, ranks, state, sums)
    }

    fn assemble(params: &'a LdaParams, shard: &'a LdaShard, ranks: &'a dyn Ranks, state: GibbsState, sums: PosteriorSums) -> Self {
        let sweeps = if sampler::uses_dense_kernel(params.topics) {
            ShardSweeps::Partitioned(PartitionedSampler::over(&shard.tokens, &state, shard.partition.clone(), lda_isa()))
        } else {
            ShardSweeps::Blocks(Snapshot::new(shard.tokens.num_terms, params.topics, true))
        };
        RankedChain { params, shard, ranks, schedule: schedule(params), state, sweeps, sums, doc_topics_sum: 0.0, optimizations: 0 }
    }

    /// After round `round`: hand the word block of this rank's first document block to
    /// the rank that samples it next round, and take the one this rank's last block
    /// needs from the rank that sampled it.
    fn pass_word_blocks(state: &mut GibbsState, shard: &LdaShard, ranks: &dyn Ranks, round: usize) {
        let (p, r, me) = (shard.grid_blocks(), ranks.size(), ranks.rank());
        let blocks = &shard.blocks;
        if blocks.is_empty() {
            return;
        }
        let k = state.num_topics;
        let bounds = &shard.partition.word_bounds;
        let rows = |j: usize| bounds[j] * k..bounds[j + 1] * k;
        let send_block = (blocks.start + round) % p;
        let to = owner_of_block(p, r, (blocks.start + p - 1) % p);
        let receive_block = (blocks.end + round) % p;
        let from = owner_of_block(p, r, blocks.end % p);
        let outgoing = (to != me).then(|| u32s_to_bytes(&state.n_kw[rows(send_block)]));
        let incoming = ranks.exchange(outgoing.as_deref().map(|bytes| (to, bytes)), (from != me).then_some(from));
        if let Some(bytes) = incoming {
            state.n_kw[rows(receive_block)].copy_from_slice(&bytes_to_u32s(&bytes));
        }
    }

    /// Make all of n_kw current on every rank: at a sweep's end rank q holds the word
    /// blocks numbered as its document blocks; gather them.
    fn gather_word_blocks(&mut self) {
        let (p, r) = (self.shard.grid_blocks(), self.ranks.size());
        if r == 1 || matches!(self.sweeps, ShardSweeps::Blocks(_)) {
            return;
        }
        let k = self.state.num_topics;
        let bounds = &self.shard.partition.word_bounds;
        let rows_of = |blocks: Range<usize>| bounds[blocks.start] * k..bounds[blocks.end] * k;
        let mine = u32s_to_bytes(&self.state.n_kw[rows_of(self.shard.blocks.clone())]);
        for (q, bytes) in self.ranks.all_gather(&mine).into_iter().enumerate() {
            if q != self.ranks.rank() {
                self.state.n_kw[rows_of(block_range(p, r, q))].copy_from_slice(&bytes_to_u32s(&bytes));
            }
        }
    }

    /// α (and β) re-estimated from every rank's document-topic histograms, summed in
    /// rank order (integers).
    fn optimize(&mut self) -> hyper::OptimizeReport {
        let local = hyper::document_topic_histograms(&self.state, &self.shard.tokens);
        let bytes = postcard::to_allocvec(&local).expect("plain data encodes");
        let all = self.ranks.all_gather(&bytes).into_iter().map(|b| postcard::from_bytes::<DocumentTopicHistograms>(&b).expect("a rank's histograms decode"));
        let h = all.reduce(DocumentTopicHistograms::merge).expect("at least one rank");
        hyper::optimize_with(&mut self.state, &h, self.params.optimize_beta)
    }

    /// Gather 8-byte floats of every rank to rank 0, in rank (= document) order.
    fn gather_f64s(&self, mine: &[f64]) -> Option<Vec<f64>> {
        self.ranks.gather_to_root(&f64s_to_bytes(mine)).map(|parts| parts.iter().flat_map(|b| bytes_to_f64s(b)).collect())
    }

    /// Every kept θ draw with every document's rows, on rank 0 (empty elsewhere).
    fn gather_draws(&self) -> Vec<Vec<f32>> {
        let mut out = Vec::new();
        for draw in &self.sums.theta_draws {
            let bytes: Vec<u8> = draw.iter().flat_map(|x| x.to_le_bytes()).collect();
            if let Some(parts) = self.ranks.gather_to_root(&bytes) {
                out.push(parts.iter().flat_map(|b| b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().expect("four bytes")))).collect());
            }
        }
        out
    }

    /// The chain's result on rank 0: the posterior sums with every document's θ.
    fn into_ended(mut self) -> Option<EndedChain> {
        if self.sums.kept == 0 {
            // No sweep fell on the thinning grid: the final state (n_kw was gathered after
            // the last sweep, which computes the log joint).
            self.sums.add(&self.state, &self.shard.tokens, self.shard.num_tokens);
        }
        let theta = self.gather_f64s(&self.sums.theta);
        let draws = self.gather_draws();
        let theta = theta?;
        let mut sums = self.sums;
        sums.theta = theta;
        sums.theta_draws = draws;
        Some(EndedChain {
            alpha: self.state.alpha,
            beta: self.state.beta,
            sums,
            doc_topics_sum: self.doc_topics_sum,
            optimizations: self.optimizations,
            num_tokens: self.shard.num_tokens,
        })
    }
}

impl Chain for RankedChain<'_> {
    fn step(&mut self, seed: u64, iteration: usize) -> Result<Map<String, Value>, FitError> {
        let mut stats = SweepStats::default();
        match &mut self.sweeps {
            ShardSweeps::Partitioned(partitioned) => {
                for round in 0..self.shard.grid_blocks() {
                    let (mut moves, round_stats) = partitioned.round(&mut self.state, &self.shard.tokens, seed, iteration as u64, round);
                    self.ranks.sum_u64(&mut moves);
                    apply_topic_moves(&mut self.state.n_k, &moves);
                    stats = stats.merge(round_stats);
                    Self::pass_word_blocks(&mut self.state, self.shard, self.ranks, round);
                }
            }
            ShardSweeps::Blocks(snapshot) => {
                let ranks = self.ranks;
                let mut gather = |moves: Vec<u32>| ranks.all_gather(&u32s_to_bytes(&moves)).iter().map(|b| bytes_to_u32s(b)).collect();
                let shard = self.shard;
                stats = self.state.sweep_shard(&shard.tokens, snapshot, (seed, iteration as u64), &shard.sync_blocks, shard.first_doc, &mut gather);
            }
        }
        let mut totals = [stats.tokens, stats.doc_topics_visited, stats.smoothing_draws];
        self.ranks.sum_u64(&mut totals);
        let stats = SweepStats { tokens: totals[0], doc_topics_visited: totals[1], smoothing_draws: totals[2] };
        self.doc_topics_sum += stats.mean_doc_topics();
        let optimizes = self.params.optimizes_after(iteration);
        let s = &self.schedule;
        if optimizes || s.is_kept(iteration) || s.computes_loglik(iteration) {
            self.gather_word_blocks();
        }
        let optimized = optimizes.then(|| self.optimize());
        self.optimizations += optimized.is_some() as usize;
        Ok(step_diagnostics(&stats, &self.state, optimized))
    }

    fn log_joint_per_token(&self) -> f64 {
        let words = self.state.log_p_words();
        let mine = self.state.log_p_topics_by_document(&self.shard.tokens);
        // One process sums the documents' terms in document order starting from the
        // empty sum; the ranks continue that one running sum.
        let docs = self.ranks.fold_in_rank_order(std::iter::empty::<f64>().sum(), &|running| mine.iter().fold(running, |a, &b| a + b));
        (words + docs) / self.shard.num_tokens.max(1) as f64
    }

    fn keep(&mut self, loglik_per_token: f64) -> Option<Vec<u8>> {
        let n = self.shard.num_tokens;
        self.sums.add(&self.state, &self.shard.tokens, n);
        self.sums.trace(self.params, &self.state, n, loglik_per_token);
        self.ranks.is_root().then(|| postcard::to_allocvec(&TopicWordSample::from_state(&self.state)).expect("plain data encodes"))
    }

    /// A collective: rank 0 gets the single-process chain's checkpoint state (every
    /// document's assignments and θ sums gathered in document order), the other ranks
    /// an empty vector.
    fn save(&self) -> Vec<u8> {
        let z = self.ranks.gather_to_root(&u32s_to_bytes(&self.state.z)).map(|parts| parts.iter().flat_map(|b| bytes_to_u32s(b)).collect::<Vec<u32>>());
        let theta = self.gather_f64s(&self.sums.theta);
        let draws = self.gather_draws();
        let (Some(z), Some(theta)) = (z, theta) else { return Vec::new() };
        let mut sums = self.sums.clone();
        sums.theta = theta;
        sums.theta_draws = draws;
        encode_state(&z, &self.state.alpha, self.state.beta, &sums, self.doc_topics_sum, self.optimizations)
    }

    /// Rank 0's decision, on every rank.
    fn agree(&self, decision: bool) -> bool {
        let mut flag = vec![decision as u8];
        self.ranks.broadcast(0, &mut flag);
        flag[0] == 1
    }
}

/// What rank 0 keeps of the corpus once the shards are sent: what the model needs
/// besides the chains.
struct RootPart {
    test_documents: usize,
    heldout: Vec<HeldoutDoc>,
    design: Option<(crate::models::design::DesignSpec, Vec<f64>)>,
}

/// Rank 0: split the corpus, send every other rank its shard and keep its own; the
/// others: receive theirs. Every rank gets rank 0's error, if any.
fn scatter(corpus: Option<Corpus>, p: &LdaParams, seed: u64, ranks: &dyn Ranks) -> Result<(LdaShard, Option<RootPart>), FitError> {
    let (rank, size) = (ranks.rank(), ranks.size());
    let prepared = corpus.map(|mut corpus| -> Result<_, FitError> {
        let (held_out, test_documents, training) = training_set(&corpus, p, seed)?;
        // The training counts without a copy when nothing is held out.
        let training = match training {
            std::borrow::Cow::Owned(m) => Some(m),
            std::borrow::Cow::Borrowed(_) => None,
        };
        let design = super::training_design(&corpus, p, &held_out)?;
        let root = RootPart { test_documents, heldout: super::heldout_docs(&corpus, &held_out), design };
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

/// Fit LDA over `ranks`: rank 0 holds the corpus (`Some`) and sends every rank its
/// shard; then the same split, chains, pooling and held-out scoring as
/// [`super::fit_lda`], the sweeps spread over the ranks. Rank 0 returns the model, the
/// others `None`.
///
/// Checkpoints: rank 0's `ctx` says how often and takes them, in the single-process
/// format (the state gathered in document order), so a fit checkpointed over R ranks
/// resumes over R' ranks or in one process, and the reverse; rank 0's `resume_from` is
/// sent to every rank; the stop and checkpoint decisions are rank 0's. The other ranks'
/// `ctx` should report nothing (their checkpoint settings are not read). Checkpoints of
/// several chains over ranks are not taken yet.
pub fn fit_lda_ranked(corpus: Option<Corpus>, p: &LdaParams, seed: u64, ctx: &FitContext, ranks: &dyn Ranks) -> Result<Option<LdaModel>, FitError> {
    let mut settings = vec![ctx.checkpoint.every.is_some() as u8];
    ranks.broadcast(0, &mut settings);
    let mut resume = ctx.checkpoint.resume_from.map(<[u8]>::to_vec).unwrap_or_default();
    ranks.broadcast(0, &mut resume);
    let checkpoints = settings[0] == 1 || !resume.is_empty();
    if p.chains > 1 && checkpoints {
        return Err(FitError::Params(ParamError::new("ranks", "a fit of several chains over several ranks does not take checkpoints yet: use chains 1")));
    }
    let (shard, root) = scatter(corpus, p, seed, ranks)?;
    let v = shard.tokens.num_terms;
    let test_documents = root.as_ref().map_or(0, |r| r.test_documents);
    let schedule = schedule(p);
    // Rank 0 keeps its context's checkpoint settings; the others hand nothing over and
    // follow rank 0's decisions (`RankedChain::agree`).
    let (no_save, no_resume) = (|_: u64, _: Vec<u8>| {}, |_: Resume| {});
    let checkpoint = if ranks.is_root() {
        Checkpointing { resume_from: None, ..ctx.checkpoint }
    } else {
        let every = (settings[0] == 1).then_some(std::time::Duration::ZERO);
        Checkpointing { every, save: &no_save, resume_from: None, resumed: &no_resume, ready: ALWAYS_READY }
    };
    let local = FitContext { checkpoint, ..*ctx };
    let mut finished: Vec<super::pooled::ChainResult> = Vec::new();
    for c in 0..p.chains {
        let seed_c = chain_seed(seed, c);
        let (mut ranked, position) = match start(&resume, p, &shard, ranks, root.as_ref(), seed_c, &local)? {
            RankedStart::Chain(chain, position) => (chain, position),
            RankedStart::Scoring(model, scored, end) => {
                let root = root.as_ref().expect("only rank 0 resumes in the scoring");
                let at = crate::models::after_chain::EndOfChain { family: "lda", seed: seed_c, schedule: &schedule, position: end };
                let mut model = *model;
                (local.progress)(crate::models::Progress { iteration: end.iteration as u64, total: end.iteration as u64, ..Default::default() });
                model.heldout = Some(super::score_heldout(&model, &root.heldout, p, Some(scored), &at, &local)?);
                return Ok(Some(model));
            }
            RankedStart::Done => return Ok(None),
        };
        let end = chain::run(ranked.as_mut(), "lda", seed_c, &schedule, position, &local)?;
        let trace = std::mem::take(&mut ranked.sums.trace);
        let Some(ended) = (*ranked).into_ended() else { continue };
        let root = root.as_ref().expect("rank 0 has the corpus' part");
        let mut model = model_of_ended(p, ended, v, test_documents, &end);
        if let Some((spec, rows)) = &root.design {
            (model.design, model.design_rows) = (Some(spec.clone()), rows.clone());
        }
        let result = ChainResult { model, trace };
        if c + 1 < p.chains {
            finished.push(result);
            continue;
        }
        let mut model = pooled::pool(&finished, result);
        if test_documents > 0 {
            let at = crate::models::after_chain::EndOfChain { family: "lda", seed: seed_c, schedule: &schedule, position: end };
            model.heldout = Some(super::score_heldout(&model, &root.heldout, p, None, &at, &local)?);
        }
        return Ok(Some(model));
    }
    Ok(None)
}

/// Where a rank's chain starts: a chain (fresh or restored), rank 0's held-out scoring
/// resumed after the chain, or, on the other ranks, nothing left to do.
enum RankedStart<'a> {
    Chain(Box<RankedChain<'a>>, Position),
    Scoring(Box<LdaModel>, crate::models::heldout::ScoredSoFar, Position),
    Done,
}

/// The start every rank agrees on: from `resume` (the same bytes on every rank) when
/// it decodes and fits, else fresh; rank 0 reports which.
fn start<'a>(
    resume: &[u8],
    p: &'a LdaParams,
    shard: &'a LdaShard,
    ranks: &'a dyn Ranks,
    root: Option<&RootPart>,
    seed: u64,
    ctx: &FitContext,
) -> Result<RankedStart<'a>, FitError> {
    let fresh = || RankedStart::Chain(Box::new(RankedChain::new(p, shard, ranks, seed)), Position::START);
    if resume.is_empty() {
        return Ok(fresh());
    }
    let schedule = schedule(p);
    let sizes = (shard.num_tokens, shard.num_docs, shard.tokens.num_terms);
    let outcome: Result<RankedStart<'a>, String> = Checkpoint::decode_for(resume, "lda", seed, &schedule).and_then(|c| {
        if c.position.iteration < schedule.iterations {
            // Every rank reads the same bytes with the same checks: they agree.
            let saved = SavedLda::decode_for(&c.state, p, sizes, &c.position)?;
            return Ok(RankedStart::Chain(Box::new(RankedChain::restore(p, shard, ranks, saved)), c.position));
        }
        // At the chain's end: rank 0 scores the held-out documents; the others are done
        // once rank 0 has accepted the state.
        let accepted = root.map(|root| {
            crate::models::after_chain::Start::<RankedChain, LdaModel>::restore(
                &c.state,
                &c.position,
                schedule.iterations,
                |_| Err("a chain state at the chain's end".into()),
                |m, scored| super::restore_after_chain(p, shard.num_tokens, sizes.2, root.test_documents, seed, m, scored, &c.position),
            )
        });
        let mut verdict = vec![accepted.as_ref().is_none_or(|a| a.is_ok()) as u8];
        ranks.broadcast(0, &mut verdict);
        match accepted {
            Some(Ok(crate::models::after_chain::Start::Scoring(model, scored))) => Ok(RankedStart::Scoring(model, scored, c.position)),
            Some(Err(reason)) => Err(reason),
            Some(Ok(_)) => Err("a chain state at the chain's end".into()),
            None if verdict[0] == 1 => Ok(RankedStart::Done),
            None => Err("rank 0 rejected the state after the chain".into()),
        }
    });
    match outcome {
        Ok(start) => {
            if let RankedStart::Chain(_, position) | RankedStart::Scoring(_, _, position) = &start {
                (ctx.checkpoint.resumed)(Resume::From(position.iteration as u64));
            }
            Ok(start)
        }
        Err(reason) => {
            (ctx.checkpoint.resumed)(Resume::Rejected(format!("checkpoint rejected, starting from iteration 0: {reason}")));
            Ok(fresh())
        }
    }
}

#[cfg(test)]
#[path = "ranked_checks.rs"]
mod checks;
