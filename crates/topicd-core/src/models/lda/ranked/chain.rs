//! A chain of LDA's sweeps over one rank's shard, on the shared chain driver.
//!
//! Why it exists: it is `LdaChain` with the document side cut to the shard: the dense
//! kernel's rounds pass word blocks from rank to rank, the sparse kernel's sync blocks
//! exchange their moves, n_kw is gathered whole only when something reads it all, the
//! log joint's document terms are added in document order, and `save` gathers the
//! single-process checkpoint state to rank 0.

use super::shard::LdaShard;
use crate::models::chain::{Chain, Schedule};
use crate::models::lda::chain::{encode_state, step_diagnostics, PosteriorSums, SavedLda};
use crate::models::lda::dense_kernel::lda_isa;
use crate::models::lda::fit::EndedChain;
use crate::models::lda::hyper::{self, DocumentTopicHistograms};
use crate::models::lda::partition::{apply_topic_moves, PartitionedSampler};
use crate::models::lda::sampler::{self, GibbsState, Snapshot, SweepStats};
use crate::models::lda::{LdaParams, TopicWordSample};
use crate::models::FitError;
use crate::ranks::{block_range, bytes_to_f64s, bytes_to_u32s, f64s_to_bytes, owner_of_block, u32s_to_bytes, Ranks};
use serde_json::{Map, Value};
use std::ops::Range;

/// How a shard's sweeps run: the dense kernel's partitioned grid, whose word blocks
/// move between the ranks, or the sparse kernel's sync blocks, after each of which the
/// ranks exchange their moves (every rank keeps the counts whole).
enum ShardSweeps {
    Partitioned(PartitionedSampler),
    Blocks(Snapshot),
}

/// A chain of LDA's sweeps over one rank's shard.
pub(super) struct RankedChain<'a> {
    params: &'a LdaParams,
    shard: &'a LdaShard,
    ranks: &'a dyn Ranks,
    schedule: Schedule,
    state: GibbsState,
    sweeps: ShardSweeps,
    pub(super) sums: PosteriorSums,
    doc_topics_sum: f64,
    optimizations: usize,
}

impl<'a> RankedChain<'a> {
    /// The chain a checkpoint's state continues: this rank's slice of the assignments,
    /// θ's sums and draws; the counts summed over the ranks.
    pub(super) fn restore(params: &'a LdaParams, shard: &'a LdaShard, ranks: &'a dyn Ranks, saved: SavedLda) -> Self {
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
    pub(super) fn new(params: &'a LdaParams, shard: &'a LdaShard, ranks: &'a dyn Ranks, seed: u64) -> Self {
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
        RankedChain { params, shard, ranks, schedule: params.schedule(), state, sweeps, sums, doc_topics_sum: 0.0, optimizations: 0 }
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
    pub(super) fn into_ended(mut self) -> Option<EndedChain> {
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
        self.ranks.agree(decision)
    }
}
