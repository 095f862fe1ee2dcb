//! Collapsed Gibbs for LDA: the state, and the sparse exact sampler for many topics.
//!
//! Why it exists: a plain collapsed Gibbs step costs O(K) per token. Up to
//! [`DENSE_MAX_TOPICS`] topics the vectorised dense kernel ([`super::dense_kernel`]) under
//! the partitioned schedule ([`super::partition`]) is fastest; above it, this module's
//! sparse sampler. Its conditional p(z_i = k | rest) ∝ (n_dk + α) φ̃_wk, with
//! φ̃_wk = (n_kw + β)/(n_k + Vβ), splits into two buckets (in the spirit of SparseLDA,
//! Yao, Mimno & McCallum 2009):
//! - a *document bucket* Σ_{k: n_dk > 0} n_dk φ̃_wk over the document's non-zero topics
//!   only, computed per token in O(K_d);
//! - a *smoothing bucket* Σ_k α_k φ̃_wk (α_k per topic once α is optimised) whose total
//!   is a per-word constant of the current snapshot, so it is only scanned for the
//!   minority of tokens whose draw lands in it (about α₀ / (L_d + α₀) of them).
//!
//! The token's own contribution to the snapshot counts is removed exactly (its own
//! topic's φ̃ is recomputed without it), so every draw is from the exact conditional.
//!
//! Determinism and parallelism: a sparse sweep visits the documents in fixed blocks of
//! about `sync_tokens` tokens (documents of similar length together, so a block's work
//! splits evenly across threads). Within a block the documents are sampled in parallel
//! against a snapshot of the topic-word counts taken at the block's start (the delayed
//! update of AD-LDA, Newman et al. 2009), with live counts of their own; after the block
//! its changes are applied to the counts. Blocks depend on the corpus only, each document
//! draws from its own stream (seed, sweep, document), so the result is identical at any
//! thread count, and staleness is bounded by one block rather than one sweep.

use super::tokens::Tokens;
use crate::inference::collapsed_loglik::{log_p_words_given_topics, TopicPrior};
use crate::models::seeds::SeedPrior;
use crate::rng::{stream, Purpose};
use rand::RngExt;
use rayon::prelude::*;
use std::borrow::Cow;

/// Up to this many topics the dense, vectorised kernel is used; above it, the sparse
/// kernel whose cost per token grows with the document's non-zero topics, not with K.
pub const DENSE_MAX_TOPICS: usize = 256;

/// Whether sweeps with `k` topics use the dense kernel.
pub fn uses_dense_kernel(k: usize) -> bool {
    k <= DENSE_MAX_TOPICS
}

/// The sampler's state: assignments and the counts they imply.
#[derive(Debug, Clone)]
pub struct GibbsState {
    pub num_topics: usize,
    pub num_terms: usize,
    /// α_k, one per topic (all equal unless optimised).
    pub alpha: Vec<f64>,
    pub beta: f64,
    /// Topic of each token, in `Tokens::words` order.
    pub z: Vec<u32>,
    /// Word-major topic-word counts: `n_kw[w * K + k]`.
    pub n_kw: Vec<u32>,
    /// Tokens per topic.
    pub n_k: Vec<u64>,
    /// Seeded topics' pseudo-counts, kept inside `n_kw` (not `n_k`) for the whole fit
    /// so every kernel samples the seeded model unchanged ([`crate::models::seeds`]);
    /// empty without seeds. What is served reads [`GibbsState::data_counts`].
    pub seed_prior: SeedPrior,
}

/// Work counts of one sweep (how sparse the document bucket was, how often the
/// smoothing bucket was scanned).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SweepStats {
    pub tokens: u64,
    /// Σ over tokens of the number of non-zero topics in the token's document.
    pub doc_topics_visited: u64,
    /// Draws that landed in the smoothing bucket (including redrawn ones).
    pub smoothing_draws: u64,
}

impl SweepStats {
    pub(crate) fn merge(self, o: SweepStats) -> SweepStats {
        SweepStats {
            tokens: self.tokens + o.tokens,
            doc_topics_visited: self.doc_topics_visited + o.doc_topics_visited,
            smoothing_draws: self.smoothing_draws + o.smoothing_draws,
        }
    }
    /// Mean number of non-zero document topics per token (the per-token cost).
    pub fn mean_doc_topics(&self) -> f64 {
        self.doc_topics_visited as f64 / self.tokens.max(1) as f64
    }
}

/// What the sparse kernel reads besides the counts themselves (which stay unchanged
/// during a block, so they are their own snapshot): 1/(n_k + Vβ) and the table
/// φ̃_wk = (n_kw + β)/(n_k + Vβ) with its per-word smoothing totals Σ_k α_k φ̃_wk.
pub struct Snapshot {
    /// 1/(n_k + Vβ) in single precision.
    inv: Vec<f32>,
    /// φ̃, word-major (sparse kernel only; empty for the dense one).
    phi: Vec<f32>,
    /// Σ_k α_k φ̃_wk per word (sparse kernel only).
    phi_total: Vec<f64>,
}

impl Snapshot {
    /// A snapshot for `k` topics; the φ̃ table is kept only when `with_table` (the
    /// sparse kernel needs it, see [`uses_dense_kernel`]).
    pub fn new(num_terms: usize, k: usize, with_table: bool) -> Self {
        let table = if with_table { num_terms * k } else { 0 };
        Snapshot { inv: vec![0.0; k], phi: vec![0.0; table], phi_total: vec![0.0; if table > 0 { num_terms } else { 0 }] }
    }

    /// Recompute from the counts (the table in parallel over words).
    pub fn refresh(&mut self, n_kw: &[u32], n_k: &[u64], alpha: &[f64], beta: f64, num_terms: usize) {
        let k = n_k.len();
        let vbeta = num_terms as f64 * beta;
        for (i, &n) in self.inv.iter_mut().zip(n_k) {
            *i = (1.0 / (n as f64 + vbeta)) as f32;
        }
        if self.phi.is_empty() {
            return;
        }
        let (inv, beta) = (&self.inv, beta as f32);
        self.phi.par_chunks_mut(k).zip(self.phi_total.par_iter_mut()).zip(n_kw.par_chunks(k)).for_each(|((phi, total), row)| {
            let mut sum = 0.0;
            for t in 0..k {
                let v = phi_value(row[t], beta, inv[t]);
                phi[t] = v;
                sum += alpha[t] * v as f64;
            }
            *total = sum;
        });
    }
}

/// φ̃ = (n + β)/(n_k + Vβ) in single precision, computed the same way everywhere.
#[inline(always)]
pub(crate) fn phi_value(count: u32, beta: f32, inv: f32) -> f32 {
    (count as f32 + beta) * inv
}

impl GibbsState {
    /// Random initial assignments (one stream per document) and their counts, with a
    /// symmetric α.
    pub fn init(tokens: &Tokens, num_topics: usize, alpha: f64, beta: f64, seed: u64) -> Self {
        Self::init_from(tokens, num_topics, alpha, beta, seed, 0)
    }

    /// [`GibbsState::init`] for a shard whose first document is the corpus' document
    /// `first_doc` (each document's stream is keyed by its index in the corpus); the
    /// counts are the shard's own.
    pub fn init_from(tokens: &Tokens, num_topics: usize, alpha: f64, beta: f64, seed: u64, first_doc: usize) -> Self {
        let mut z = vec![0u32; tokens.num_tokens()];
        let k = num_topics as u32;
        doc_slices(&mut z, &tokens.doc_ptr).into_par_iter().enumerate().for_each(|(d, zs)| {
            let mut rng = stream(seed, Purpose::Init, 0, (first_doc + d) as u64);
            for t in zs.iter_mut() {
                *t = rng.random_range(0..k);
            }
        });
        let mut state = GibbsState {
            num_topics,
            num_terms: tokens.num_terms,
            alpha: vec![alpha; num_topics],
            beta,
            z,
            n_kw: vec![0; tokens.num_terms * num_topics],
            n_k: vec![0; num_topics],
            seed_prior: SeedPrior::default(),
        };
        state.recount(tokens);
        state
    }

    /// The state with assignments `z` (checked by the caller: one topic below
    /// `num_topics` per token) and their counts: how a checkpoint is continued.
    pub fn from_assignments(tokens: &Tokens, num_topics: usize, z: Vec<u32>, alpha: Vec<f64>, beta: f64) -> Self {
        debug_assert_eq!(z.len(), tokens.num_tokens());
        let mut state = GibbsState {
            num_topics,
            num_terms: tokens.num_terms,
            alpha,
            beta,
            z,
            n_kw: vec![0; tokens.num_terms * num_topics],
            n_k: vec![0; num_topics],
            seed_prior: SeedPrior::default(),
        };
        state.recount(tokens);
        state
    }

    /// The state with the seeded topics' pseudo-counts added to its counts, kept there
    /// through every sweep and recount.
    pub fn with_seed_prior(mut self, prior: SeedPrior) -> Self {
        prior.add_to(&mut self.n_kw, self.num_topics);
        self.seed_prior = prior;
        self
    }

    /// Swap the seeds' pseudo-counts for `prior`'s (a [`crate::models::seeds::SeedRamp`]'s
    /// step).
    pub fn replace_seed_prior(&mut self, prior: SeedPrior) {
        self.seed_prior.remove_from(&mut self.n_kw, self.num_topics);
        prior.add_to(&mut self.n_kw, self.num_topics);
        self.seed_prior = prior;
    }

    /// A fresh chain's start under seeds: a seed word's tokens moved to its seeded topic
    /// in the documents that speak of it ([`crate::models::seeds::SeededStart`]; the
    /// rest as drawn), the counts rebuilt. Seeds so act from the first sweep on, and the
    /// prior keeps them for the rest of the fit.
    pub fn start_from_seeds(&mut self, tokens: &Tokens) {
        if self.seed_prior.is_empty() {
            return;
        }
        let start = self.seed_prior.start(self.num_terms);
        for d in 0..tokens.num_docs() {
            let span = tokens.doc_ptr[d]..tokens.doc_ptr[d + 1];
            let words = &tokens.words[span.clone()];
            let mut terms = words.to_vec();
            terms.dedup();
            let starts = start.in_document(&terms);
            // A document's tokens run in increasing word order: term i's tokens follow
            // term i − 1's.
            let mut term = 0;
            for (z, w) in self.z[span].iter_mut().zip(words) {
                while terms[term] != *w {
                    term += 1;
                }
                if let Some(t) = starts[term] {
                    *z = t;
                }
            }
        }
        self.recount(tokens);
    }

    /// The counts of the tokens alone (without the seeds' pseudo-counts): what the
    /// served word distributions, shares and kept samples read.
    pub fn data_counts(&self) -> Cow<'_, [u32]> {
        if self.seed_prior.is_empty() {
            return Cow::Borrowed(&self.n_kw);
        }
        let mut n_kw = self.n_kw.clone();
        self.seed_prior.remove_from(&mut n_kw, self.num_topics);
        Cow::Owned(n_kw)
    }

    /// Rebuild n_kw (word by word, in parallel) and n_k from the assignments (and the
    /// seeds' pseudo-counts).
    pub fn recount(&mut self, tokens: &Tokens) {
        let k = self.num_topics;
        let z = &self.z;
        self.n_kw.par_chunks_mut(k).enumerate().for_each(|(w, row)| {
            row.fill(0);
            for &p in tokens.positions_of(w) {
                row[z[p as usize] as usize] += 1;
            }
        });
        let n_kw = &self.n_kw;
        self.n_k = (0..k).into_par_iter().map(|t| n_kw.iter().skip(t).step_by(k).map(|&n| n as u64).sum()).collect();
        self.seed_prior.add_to(&mut self.n_kw, k);
    }

    /// One sweep of the sparse sampler over every token, block by block (see the module
    /// docs); the dense kernel's sweeps are [`super::partition::PartitionedSampler::sweep`].
    pub fn sweep(&mut self, tokens: &Tokens, snapshot: &mut Snapshot, seed: u64, iteration: u64) -> SweepStats {
        self.sweep_shard(tokens, snapshot, (seed, iteration), &tokens.blocks, 0, &mut |moves| vec![moves])
    }

    /// One sparse sweep over the documents `first_doc..` (`tokens`; a shard of a
    /// distributed fit, or every document): the corpus' sync `blocks` in order (corpus
    /// document ids), each block's own documents sampled in parallel against the block's
    /// snapshot, then the moves (word, old topic, new topic) of every rank, as `gather`
    /// returns them, applied to the counts, which every rank keeps whole. Integer moves,
    /// so the counts end as one process leaves them.
    pub fn sweep_shard(
        &mut self,
        tokens: &Tokens,
        snapshot: &mut Snapshot,
        key: (u64, u64),
        blocks: &[Vec<u32>],
        first_doc: usize,
        gather: &mut dyn FnMut(Vec<u32>) -> Vec<Vec<u32>>,
    ) -> SweepStats {
        let (seed, iteration) = key;
        let k = self.num_topics;
        let (beta, num_terms) = (self.beta, self.num_terms);
        let vbeta = num_terms as f64 * beta;
        let GibbsState { z, n_kw, n_k, alpha, .. } = self;
        let alpha: &[f64] = alpha;
        let mut slots: Vec<Option<&mut [u32]>> = doc_slices(z, &tokens.doc_ptr).into_iter().map(Some).collect();
        let own = first_doc..first_doc + tokens.num_docs();
        let mut stats = SweepStats::default();
        for block in blocks {
            snapshot.refresh(n_kw, n_k, alpha, beta, num_terms);
            let mut docs: Vec<(usize, &mut [u32])> = block
                .iter()
                .map(|&d| d as usize)
                .filter(|d| own.contains(d))
                .map(|d| (d, slots[d - first_doc].take().expect("each document is in one block")))
                .collect();
            let before: Vec<u32> = docs.iter().flat_map(|(_, zs)| zs.iter().copied()).collect();
            let kernel = TokenKernel { n_kw, n_k, snapshot, k, alpha, beta, vbeta };
            let words_of = |d: usize| &tokens.words[tokens.doc_ptr[d - first_doc]..tokens.doc_ptr[d - first_doc + 1]];
            let rng_of = |d: usize| stream(seed, Purpose::Sweep, iteration, d as u64);
            let block_stats = docs
                .par_iter_mut()
                .map_init(|| DocScratch::new(k), |scratch, (d, zs)| sample_document(zs, words_of(*d), scratch, &kernel, &mut rng_of(*d)))
                .reduce(SweepStats::default, SweepStats::merge);
            stats = stats.merge(block_stats);
            let mut moves = Vec::new();
            let mut old_topics = before.iter();
            for (d, zs) in &docs {
                for (&new, &w) in zs.iter().zip(words_of(*d)) {
                    let old = *old_topics.next().expect("one saved topic per token");
                    if new != old {
                        moves.extend([w, old, new]);
                    }
                }
            }
            for rank_moves in gather(moves) {
                for m in rank_moves.chunks_exact(3) {
                    let (w, old, new) = (m[0] as usize, m[1] as usize, m[2] as usize);
                    n_kw[w * k + old] -= 1;
                    n_kw[w * k + new] += 1;
                    n_k[old] -= 1;
                    n_k[new] += 1;
                }
            }
        }
        stats
    }

    /// log p(w, z | α, β).
    pub fn log_joint(&self, tokens: &Tokens) -> f64 {
        let docs: f64 = self.log_p_topics_by_document(tokens).iter().sum(); // summed in document order: the same total at any thread count
        self.log_p_words() + docs
    }

    /// log p(w | z, β), the topic-word part of the log joint (under the seeded prior
    /// when there are seeds).
    pub fn log_p_words(&self) -> f64 {
        let seeded = if self.seed_prior.is_empty() { 0.0 } else { self.seed_prior.log_joint_correction(self.beta) };
        log_p_words_given_topics(&self.n_kw, &self.n_k, self.num_terms, self.beta) + seeded
    }

    /// log p(z_d | α) of each document, in document order.
    pub fn log_p_topics_by_document(&self, tokens: &Tokens) -> Vec<f64> {
        let k = self.num_topics;
        let prior = TopicPrior::new(&self.alpha, 1024);
        (0..tokens.num_docs())
            .into_par_iter()
            .map_init(
                || vec![0u32; k],
                |n_dk, d| {
                    n_dk.fill(0);
                    for &t in &self.z[tokens.doc_ptr[d]..tokens.doc_ptr[d + 1]] {
                        n_dk[t as usize] += 1;
                    }
                    prior.log_p(n_dk)
                },
            )
            .collect::<Vec<f64>>()
    }

    /// φ_kw = (n_kw + β)/(n_k + Vβ) of the tokens' counts (seeds' pseudo-counts left
    /// out), added word-major into `acc` (`V × K`).
    pub fn add_word_rates(&self, acc: &mut [f64]) {
        let k = self.num_topics;
        let vbeta = self.num_terms as f64 * self.beta;
        let n_kw = self.data_counts();
        let inv: Vec<f64> = self.n_k.iter().map(|&n| 1.0 / (n as f64 + vbeta)).collect();
        acc.par_chunks_mut(k).zip(n_kw.par_chunks(k)).for_each(|(a, row)| {
            for t in 0..k {
                a[t] += (row[t] as f64 + self.beta) * inv[t];
            }
        });
    }

    /// θ_dk = (n_dk + α_k)/(L_d + α₀), added into `acc` (`D × K`).
    pub fn add_document_proportions(&self, tokens: &Tokens, acc: &mut [f64]) {
        let k = self.num_topics;
        let total: f64 = self.alpha.iter().sum();
        acc.par_chunks_mut(k).enumerate().for_each(|(d, a)| {
            let zs = &self.z[tokens.doc_ptr[d]..tokens.doc_ptr[d + 1]];
            let denom = zs.len() as f64 + total;
            for (x, &alpha) in a.iter_mut().zip(&self.alpha) {
                *x += alpha / denom;
            }
            for &t in zs {
                a[t as usize] += 1.0 / denom;
            }
        });
    }
}

/// Split `z` into one mutable slice per document.
fn doc_slices<'a>(z: &'a mut [u32], doc_ptr: &[usize]) -> Vec<&'a mut [u32]> {
    let mut out = Vec::with_capacity(doc_ptr.len().saturating_sub(1));
    let mut rest = z;
    for w in doc_ptr.windows(2) {
        let (head, tail) = rest.split_at_mut(w[1] - w[0]);
        out.push(head);
        rest = tail;
    }
    out
}

/// A document's topic counts as a list of its non-zero topics with their counts
/// (O(1) updates), plus scratch space for the cumulative weights.
pub(crate) struct DocScratch {
    /// Non-zero topics and, aligned, their counts.
    topics: Vec<u32>,
    counts: Vec<u32>,
    /// Position of each topic in `topics`, or `ABSENT`.
    pos: Vec<u32>,
    cumulative: Vec<f64>,
}

const ABSENT: u32 = u32::MAX;

impl DocScratch {
    pub(crate) fn new(k: usize) -> Self {
        DocScratch { topics: Vec::with_capacity(k), counts: Vec::with_capacity(k), pos: vec![ABSENT; k], cumulative: vec![0.0; k] }
    }

    /// Reset to the counts of `zs`.
    pub(crate) fn load(&mut self, zs: &[u32]) {
        for &t in &self.topics {
            self.pos[t as usize] = ABSENT;
        }
        self.topics.clear();
        self.counts.clear();
        for &t in zs {
            self.inc(t as usize);
        }
    }

    #[inline]
    pub(crate) fn inc(&mut self, t: usize) {
        match self.pos[t] {
            ABSENT => {
                self.pos[t] = self.topics.len() as u32;
                self.topics.push(t as u32);
                self.counts.push(1);
            }
            p => self.counts[p as usize] += 1,
        }
    }

    #[inline]
    pub(crate) fn dec(&mut self, t: usize) {
        let p = self.pos[t] as usize;
        self.counts[p] -= 1;
        if self.counts[p] == 0 {
            let last = self.topics.len() - 1;
            self.topics.swap(p, last);
            self.counts.swap(p, last);
            self.pos[self.topics[p] as usize] = p as u32;
            self.topics.pop();
            self.counts.pop();
            self.pos[t] = ABSENT;
        }
    }
}

/// Everything a token's draw reads besides its document: the snapshot counts, φ̃
/// computed from them and the priors.
pub(crate) struct TokenKernel<'a> {
    pub(crate) n_kw: &'a [u32],
    pub(crate) n_k: &'a [u64],
    pub(crate) snapshot: &'a Snapshot,
    pub(crate) k: usize,
    pub(crate) alpha: &'a [f64],
    pub(crate) beta: f64,
    pub(crate) vbeta: f64,
}

impl TokenKernel<'_> {
    /// φ̃_w· from the snapshot table (sparse kernel).
    #[inline]
    pub(crate) fn phi_row(&self, w: usize) -> &[f32] {
        &self.snapshot.phi[w * self.k..(w + 1) * self.k]
    }

    /// φ̃'/φ̃ for the token's own topic: the probability of keeping a draw of it, where
    /// φ̃ is the weight the draw used and φ̃' excludes the token's own count from the
    /// snapshot (so the ratio is ≤ 1 up to rounding).
    #[inline]
    pub(crate) fn keep_own(&self, w: usize, own: usize) -> f64 {
        let k = self.k;
        let used = phi_value(self.n_kw[w * k + own], self.beta as f32, self.snapshot.inv[own]) as f64;
        ((self.n_kw[w * k + own] - 1) as f64 + self.beta) / ((self.n_k[own] - 1) as f64 + self.vbeta) / used
    }

    /// Draw token i's topic (word `w`, topic `own` in the snapshot) from the exact
    /// conditional given its document's counts `doc`, which exclude the token.
    ///
    /// Draws come from (n_dk + α_k) φ̃_wk with the snapshot's φ̃; a draw of `own` is kept
    /// with probability φ̃'/φ̃, where φ̃' excludes the token's own snapshot count (never
    /// larger), and redrawn otherwise. The accepted draw has the exact conditional.
    #[inline]
    pub(crate) fn draw(&self, w: usize, own: usize, doc: &mut DocScratch, rng: &mut crate::rng::StreamRng, stats: &mut SweepStats) -> usize {
        let k = self.k;
        let phi = self.phi_row(w);
        let keep_own = self.keep_own(w, own);
        let n = doc.topics.len();
        let cumulative = &mut doc.cumulative[..n];
        let mut b = 0.0;
        for ((c, &t), &count) in cumulative.iter_mut().zip(&doc.topics).zip(&doc.counts) {
            b += count as f64 * phi[t as usize] as f64;
            *c = b;
        }
        stats.tokens += 1;
        stats.doc_topics_visited += n as u64;
        let a = self.snapshot.phi_total[w];
        loop {
            let u = rng.random::<f64>() * (a + b);
            let t = if u < b {
                let j = cumulative.partition_point(|&c| c <= u).min(n - 1);
                doc.topics[j] as usize
            } else {
                // Smoothing bucket: scan α_k φ̃_wk.
                stats.smoothing_draws += 1;
                let target = u - b;
                let mut c = 0.0;
                // Rounding may leave the target past the last partial sum: then the last
                // topic (every topic has weight ≥ β/(n_k + Vβ) > 0).
                let mut pick = k - 1;
                for (t, (&p, &alpha)) in phi.iter().zip(self.alpha).enumerate() {
                    c += alpha * p as f64;
                    if target < c {
                        pick = t;
                        break;
                    }
                }
                pick
            };
            if t != own || rng.random::<f64>() < keep_own {
                return t;
            }
        }
    }
}

/// Resample every token of one document.
fn sample_document(zs: &mut [u32], words: &[u32], doc: &mut DocScratch, kernel: &TokenKernel, rng: &mut crate::rng::StreamRng) -> SweepStats {
    doc.load(zs);
    let mut stats = SweepStats::default();
    for i in 0..zs.len() {
        // Before its visit a token still holds its topic from the frozen counts.
        let own = zs[i] as usize;
        doc.dec(own);
        let t = kernel.draw(words[i] as usize, own, doc, rng, &mut stats);
        doc.inc(t);
        zs[i] = t as u32;
    }
    stats
}

#[cfg(test)]
#[path = "sampler_tests.rs"]
pub(crate) mod tests;
