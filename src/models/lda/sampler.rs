//! Collapsed Gibbs for LDA with O(1) Metropolis-Hastings steps per token.
//!
//! Why it exists: a plain collapsed Gibbs step costs O(K) per token. Here each token
//! takes `mh_steps` cycles of two proposals (LightLDA, Yuan et al. 2015):
//! - a *word proposal* q_w(k) ∝ (n_kw + β)/(n_k + Vβ), drawn in O(1) from a per-word
//!   alias table over the word's non-zero topics mixed with one shared dense table for
//!   the β part;
//! - a *document proposal* q_d(k) ∝ n_dk + α, drawn in O(1) by picking a random token of
//!   the document (or a uniform topic with probability Kα/(L + Kα)).
//!
//! Both are corrected by a Metropolis-Hastings ratio against the exact collapsed
//! conditional, so each token's kernel leaves p(z_i | z_-i, w) invariant.
//!
//! Determinism and parallelism: within a sweep the topic-word counts n_kw and n_k are
//! those at the start of the sweep (the "delayed update" of AD-LDA, Newman et al. 2009,
//! taken to one partition per document, as in WarpLDA), minus the token's own
//! contribution; the document's own counts are live. Documents are therefore
//! independent within a sweep: each gets its own random stream (seed, sweep, document)
//! and the result is identical at any thread count. Counts are rebuilt word by word
//! after each sweep.

use super::alias::AliasTable;
use super::loglik::{log_p_topics_of_document, log_p_words_given_topics, LgammaOffset};
use super::tokens::Tokens;
use crate::rng::{stream, Purpose};
use rand::RngExt;
use rayon::prelude::*;

/// The sampler's state: assignments and the counts they imply.
#[derive(Debug, Clone)]
pub struct GibbsState {
    pub num_topics: usize,
    pub num_terms: usize,
    pub alpha: f64,
    pub beta: f64,
    /// Topic of each token, in `Tokens::words` order.
    pub z: Vec<u32>,
    /// Word-major topic-word counts: `n_kw[w * K + k]`.
    pub n_kw: Vec<u32>,
    /// Tokens per topic.
    pub n_k: Vec<u64>,
}

/// Acceptance counts of one sweep.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SweepStats {
    pub word_proposals: u64,
    pub word_accepted: u64,
    pub doc_proposals: u64,
    pub doc_accepted: u64,
}

impl SweepStats {
    fn merge(self, o: SweepStats) -> SweepStats {
        SweepStats {
            word_proposals: self.word_proposals + o.word_proposals,
            word_accepted: self.word_accepted + o.word_accepted,
            doc_proposals: self.doc_proposals + o.doc_proposals,
            doc_accepted: self.doc_accepted + o.doc_accepted,
        }
    }
    /// Fraction of proposals that moved a token (proposals equal to the current topic
    /// count as accepted: they are accepted with probability 1).
    pub fn acceptance(&self) -> f64 {
        let p = self.word_proposals + self.doc_proposals;
        if p == 0 {
            1.0
        } else {
            (self.word_accepted + self.doc_accepted) as f64 / p as f64
        }
    }
}

/// Per-sweep word proposals: one sparse alias table per word plus the shared β part.
pub(crate) struct WordProposals {
    sparse: Vec<AliasTable>,
    dense: AliasTable,
}

impl WordProposals {
    pub(crate) fn build(state: &GibbsState) -> Self {
        let k = state.num_topics;
        let vbeta = state.num_terms as f64 * state.beta;
        let inv: Vec<f64> = state.n_k.iter().map(|&n| 1.0 / (n as f64 + vbeta)).collect();
        let sparse = state
            .n_kw
            .par_chunks(k)
            .map(|row| {
                AliasTable::new(row.iter().enumerate().filter(|(_, &n)| n > 0).map(|(t, &n)| (t as u32, n as f64 * inv[t])))
            })
            .collect();
        let dense = AliasTable::new(inv.iter().enumerate().map(|(t, &i)| (t as u32, state.beta * i)));
        WordProposals { sparse, dense }
    }

    #[inline]
    fn draw(&self, w: usize, u: f64) -> u32 {
        let table = &self.sparse[w];
        let a = table.total();
        let x = u * (a + self.dense.total());
        if x < a {
            table.sample(x / a)
        } else {
            self.dense.sample(((x - a) / self.dense.total()).min(0.999_999_999_999))
        }
    }
}

impl GibbsState {
    /// Random initial assignments (one stream per document) and their counts.
    pub fn init(tokens: &Tokens, num_topics: usize, alpha: f64, beta: f64, seed: u64) -> Self {
        let mut z = vec![0u32; tokens.num_tokens()];
        let k = num_topics as u32;
        doc_slices(&mut z, &tokens.doc_ptr).into_par_iter().enumerate().for_each(|(d, zs)| {
            let mut rng = stream(seed, Purpose::Init, 0, d as u64);
            for t in zs.iter_mut() {
                *t = rng.random_range(0..k);
            }
        });
        let mut state = GibbsState {
            num_topics,
            num_terms: tokens.num_terms,
            alpha,
            beta,
            z,
            n_kw: vec![0; tokens.num_terms * num_topics],
            n_k: vec![0; num_topics],
        };
        state.recount(tokens);
        state
    }

    /// Rebuild n_kw (word by word, in parallel) and n_k from the assignments.
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
        self.n_k = (0..k)
            .into_par_iter()
            .map(|t| n_kw.iter().skip(t).step_by(k).map(|&n| n as u64).sum())
            .collect();
    }

    /// One sweep over every token; counts are rebuilt at the end.
    pub fn sweep(&mut self, tokens: &Tokens, seed: u64, iteration: u64, mh_steps: usize) -> SweepStats {
        let proposals = WordProposals::build(self);
        let k = self.num_topics;
        let (alpha, beta) = (self.alpha, self.beta);
        let vbeta = self.num_terms as f64 * beta;
        let kernel = TokenKernel { n_kw: &self.n_kw, n_k: &self.n_k, proposals: &proposals, k, alpha, beta, vbeta };
        let stats = doc_slices(&mut self.z, &tokens.doc_ptr)
            .into_par_iter()
            .enumerate()
            .with_min_len(16)
            .map_init(
                || vec![0u32; k],
                |n_dk, (d, zs)| {
                    let words = &tokens.words[tokens.doc_ptr[d]..tokens.doc_ptr[d + 1]];
                    let mut rng = stream(seed, Purpose::Sweep, iteration, d as u64);
                    sample_document(zs, words, n_dk, &kernel, mh_steps, &mut rng)
                },
            )
            .reduce(SweepStats::default, SweepStats::merge);
        self.recount(tokens);
        stats
    }

    /// log p(w, z | α, β).
    pub fn log_joint(&self, tokens: &Tokens) -> f64 {
        let k = self.num_topics;
        let words = log_p_words_given_topics(&self.n_kw, &self.n_k, self.num_terms, self.beta);
        let by_count = LgammaOffset::new(self.alpha, 1024);
        let docs: f64 = (0..tokens.num_docs())
            .into_par_iter()
            .map_init(
                || vec![0u32; k],
                |n_dk, d| {
                    n_dk.fill(0);
                    for &t in &self.z[tokens.doc_ptr[d]..tokens.doc_ptr[d + 1]] {
                        n_dk[t as usize] += 1;
                    }
                    log_p_topics_of_document(n_dk, &by_count, self.alpha)
                },
            )
            .collect::<Vec<f64>>()
            .iter()
            .sum(); // summed in document order: the same total at any thread count
        words + docs
    }

    /// φ_kw = (n_kw + β)/(n_k + Vβ), added word-major into `acc` (`V × K`).
    pub fn add_word_rates(&self, acc: &mut [f64]) {
        let k = self.num_topics;
        let vbeta = self.num_terms as f64 * self.beta;
        let inv: Vec<f64> = self.n_k.iter().map(|&n| 1.0 / (n as f64 + vbeta)).collect();
        acc.par_chunks_mut(k).zip(self.n_kw.par_chunks(k)).for_each(|(a, row)| {
            for t in 0..k {
                a[t] += (row[t] as f64 + self.beta) * inv[t];
            }
        });
    }

    /// θ_dk = (n_dk + α)/(L_d + Kα), added into `acc` (`D × K`).
    pub fn add_document_proportions(&self, tokens: &Tokens, acc: &mut [f64]) {
        let k = self.num_topics;
        acc.par_chunks_mut(k).enumerate().for_each(|(d, a)| {
            let zs = &self.z[tokens.doc_ptr[d]..tokens.doc_ptr[d + 1]];
            let denom = zs.len() as f64 + k as f64 * self.alpha;
            for x in a.iter_mut() {
                *x += self.alpha / denom;
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

/// Everything a token's MH kernel reads besides the document itself: the frozen
/// topic-word counts, the word proposals and the priors.
pub(crate) struct TokenKernel<'a> {
    n_kw: &'a [u32],
    n_k: &'a [u64],
    proposals: &'a WordProposals,
    k: usize,
    alpha: f64,
    beta: f64,
    vbeta: f64,
}

impl TokenKernel<'_> {
    /// Run `mh_steps` cycles for token `i` of a document whose assignments are `zs`
    /// (`zs[i]` holds the starting topic) and whose counts `n_dk` exclude token i.
    /// `own` is the token's topic in the frozen counts. Returns the new topic; `zs[i]`
    /// is kept equal to the current topic throughout.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn resample(&self, zs: &mut [u32], i: usize, w: usize, own: usize, n_dk: &[u32], mh_steps: usize, rng: &mut crate::rng::StreamRng, stats: &mut SweepStats) -> usize {
        let (k, alpha, beta, vbeta) = (self.k, self.alpha, self.beta, self.vbeta);
        let row = &self.n_kw[w * k..(w + 1) * k];
        let n_k = self.n_k;
        let len = zs.len() as f64;
        let doc_mass = len + k as f64 * alpha;
        let mut s = zs[i] as usize;
        // Word factor of the target, with the token's own frozen contribution removed.
        let target_word = |t: usize| {
            let me = (t == own) as u32;
            ((row[t] - me) as f64 + beta) / ((n_k[t] - me as u64) as f64 + vbeta)
        };
        // The word proposal's (unnormalised) density.
        let proposal_word = |t: usize| (row[t] as f64 + beta) / (n_k[t] as f64 + vbeta);
        for _ in 0..mh_steps {
            // Word proposal: target ratio × reverse/forward proposal ratio.
            let t = self.proposals.draw(w, rng.random::<f64>()) as usize;
            stats.word_proposals += 1;
            if t == s {
                stats.word_accepted += 1;
            } else {
                let ratio = (n_dk[t] as f64 + alpha) * target_word(t) * proposal_word(s)
                    / ((n_dk[s] as f64 + alpha) * target_word(s) * proposal_word(t));
                if ratio >= 1.0 || rng.random::<f64>() < ratio {
                    s = t;
                    zs[i] = s as u32;
                    stats.word_accepted += 1;
                }
            }
            // Document proposal q(t) ∝ n_dk^-i + 1{t = s} + α: a random token of the
            // document (token i itself included) or a uniform topic. The (n_dk + α)
            // factors of target and proposal cancel, leaving the word factor.
            let u = rng.random::<f64>() * doc_mass;
            let t = if u < len { zs[u as usize] as usize } else { (((u - len) / alpha) as usize).min(k - 1) };
            stats.doc_proposals += 1;
            if t == s {
                stats.doc_accepted += 1;
            } else {
                let ratio = target_word(t) / target_word(s);
                if ratio >= 1.0 || rng.random::<f64>() < ratio {
                    s = t;
                    zs[i] = s as u32;
                    stats.doc_accepted += 1;
                }
            }
        }
        s
    }
}

/// Resample every token of one document. `n_dk` is scratch space of length K.
fn sample_document(zs: &mut [u32], words: &[u32], n_dk: &mut [u32], kernel: &TokenKernel, mh_steps: usize, rng: &mut crate::rng::StreamRng) -> SweepStats {
    n_dk.fill(0);
    for &t in zs.iter() {
        n_dk[t as usize] += 1;
    }
    let mut stats = SweepStats::default();
    for i in 0..zs.len() {
        // Before its visit a token still holds its topic from the frozen counts.
        let own = zs[i] as usize;
        n_dk[own] -= 1;
        let s = kernel.resample(zs, i, words[i] as usize, own, n_dk, mh_steps, rng, &mut stats);
        n_dk[s] += 1;
    }
    stats
}

#[cfg(test)]
#[path = "sampler_checks.rs"]
mod checks;
