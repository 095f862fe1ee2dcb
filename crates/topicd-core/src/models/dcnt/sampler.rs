//! One Gibbs scan of DCNT/SCNT: the sampler's state and its per-document and global
//! blocks.
//!
//! Why it exists: it initialises and updates the state ([`DcntState`], defined in
//! [`super::state`]: topic assignments and their counts, every document's u_d and v_d,
//! the [`Globals`]) and owns the order of the blocks in a scan:
//!
//! 1. per document, in parallel: z_dn by the collapsed update of paper 001 eq. 10,
//!    p(z = k) ∝ π_kd (M_kw + β)/(M_k + Wβ), then v_d by [`update_activations`] with
//!    proposal mean A u_d, then u_d by [`UConditional`] (factored once per scan);
//! 2. per document, in parallel within the same blocks: `topic_swaps` within-document
//!    topic swaps ([`swap_sweep`], a Metropolis–Hastings move exchanging two topics'
//!    tokens and activations in one document);
//! 3. the globals: A, λ_A, λ_v, η, μ, λ_f ([`Globals::update`]).
//!
//! Determinism and the one approximation: documents are visited in fixed blocks of
//! about [`SYNC_TOKENS`] tokens. Within a block, documents are sampled in parallel
//! against the topic-word counts M as they were at the block's start, each with exact
//! live corrections for its own tokens' moves (so a block of one document is exact
//! sequential Gibbs); the block's count changes are applied after it, in document
//! order. This is the delayed update of AD-LDA (Newman et al. 2009) with staleness
//! bounded by one block; the topic swaps visit the same blocks the same way. Blocks
//! depend on the corpus only, and document d draws from its own stream `(seed,
//! DcntDocuments, scan, d)` (`DcntSwap` for its swaps), so results do not depend on the
//! thread count. Global draws use `(seed, DcntGlobal, scan, 0)`; scan 0 is the
//! initialisation.

use super::activations::{update_activations, UConditional};
use super::globals::Globals;
use super::params::Priors;
use super::state::{DcntState, Documents};
use super::stick::{log_stick_weights, stick_weights};
use super::swap::swap_sweep;
use super::variant::Covariance;
use super::warm_start::warm_start;
use crate::inference::collapsed_loglik::log_p_words_given_topics;
use crate::models::causes::{NonFinite, Quantity};
use crate::models::seeds::SeedPrior;
use crate::rng::{stream, Purpose, StreamRng};
use rand::RngExt;
use rand_distr::{Distribution, Normal, StandardNormal};
use rayon::prelude::*;
use std::ops::Range;

/// Tokens per synchronisation block (see the module documentation).
pub const SYNC_TOKENS: usize = 16_384;

/// What one scan did.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ScanStats {
    /// Accepted v entries and proposals.
    pub accepted: u64,
    pub proposed: u64,
    /// Accepted within-document topic swaps and proposals.
    pub swaps_accepted: u64,
    pub swaps_proposed: u64,
}

impl ScanStats {
    pub fn acceptance(&self) -> f64 {
        if self.proposed == 0 {
            0.0
        } else {
            self.accepted as f64 / self.proposed as f64
        }
    }

    /// Share of accepted topic swaps (0 when none was proposed).
    pub fn swap_acceptance(&self) -> f64 {
        if self.swaps_proposed == 0 {
            0.0
        } else {
            self.swaps_accepted as f64 / self.swaps_proposed as f64
        }
    }
}

/// One document's results from the parallel pass.
/// One document's new topic assignments: z, its topic counts, and the net changes of
/// M_kw it makes, (word, topic, change).
pub(super) struct Assignments {
    pub z: Vec<u16>,
    pub counts: Vec<u32>,
    pub moves: Vec<(u32, u16, i32)>,
}

struct DocUpdate {
    z: Vec<u16>,
    counts: Vec<u32>,
    u: Vec<f64>,
    v: Vec<f64>,
    accepted: usize,
    /// Net changes of M_kw: (word, topic, change).
    moves: Vec<(u32, u16, i32)>,
}

/// Document `d`'s start drawn from the prior given the initial `globals`, from stream
/// `(seed, DcntDocuments, 0, d)`: u_d ~ N(ηᵀφ_d, I), v_d ~ N(A u_d, λ_v⁻¹ I), then every
/// z_dn ~ Mult(π(v_d)). Returns (u_d, v_d, z_d).
fn prior_document(docs: &Documents, globals: &Globals, d: usize, seed: u64) -> (Vec<f64>, Vec<f64>, Vec<u16>) {
    let mut rng = stream(seed, Purpose::DcntDocuments, 0, d as u64);
    let u: Vec<f64> = globals
        .u_mean(docs.phi(d))
        .iter()
        .map(|m| {
            let e: f64 = StandardNormal.sample(&mut rng);
            m + e
        })
        .collect();
    let sd = 1.0 / globals.lambda_v.sqrt();
    let v: Vec<f64> = globals.a_times(&u).iter().map(|&m| Normal::new(m, sd).expect("finite sd").sample(&mut rng)).collect();
    let n = docs.token_offsets[d + 1] - docs.token_offsets[d];
    let pi = stick_weights(&v);
    let z = (0..n).map(|_| draw_topic(&pi, rng.random::<f64>())).collect();
    (u, v, z)
}

/// The topic a uniform `x` in [0, 1) picks from the weights `pi` (summing to 1) by
/// their cumulative sums: the last topic when rounding leaves `x` past them all.
pub(super) fn draw_topic(pi: &[f64], x: f64) -> u16 {
    let mut acc = 0.0;
    pi.iter()
        .position(|p| {
            acc += p;
            x < acc
        })
        .unwrap_or(pi.len() - 1) as u16
}

impl DcntState {
    /// Initialise as the toy experiment ("set the precision parameters to their prior
    /// mean of 1, and sample all other variables from their prior", 001 §4.1): globals
    /// by [`Globals::initial`] from stream `(seed, DcntGlobal, 0, 0)`, then per document
    /// u_d ~ N(ηᵀφ_d, I), v_d ~ N(A u_d, I) and every z_dn ~ Mult(π(v_d)), its prior
    /// given v_d, from `(seed, DcntDocuments, 0, d)`; `topic_swaps` swaps per document
    /// and scan. (z used to start uniform over the K̄ topics, a departure from the
    /// paper: every topic then starts as the same blend of every bar, and on the bars
    /// data two topics often settled on one bar while another held two.) With
    /// `warm_start_sweeps` > 0, z and v are then moved by [`warm_start`]'s collapsed
    /// sweeps (ended early once `stop` says so) and u_d is drawn given the new v_d from
    /// `(seed, DcntWarmStart, 0, d)`.
    #[allow(clippy::too_many_arguments)]
    pub fn init(
        docs: &Documents,
        num_topics: usize,
        covariance: Covariance,
        priors: Priors,
        topic_swaps: usize,
        warm_start_sweeps: usize,
        seed_prior: SeedPrior,
        seed: u64,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Self {
        let k = num_topics;
        let mut grng = stream(seed, Purpose::DcntGlobal, 0, 0);
        let globals = Globals::initial(k, docs.num_features, covariance, &mut grng);
        let per_doc: Vec<(Vec<f64>, Vec<f64>, Vec<u16>)> = (0..docs.num_docs()).into_par_iter().map(|d| prior_document(docs, &globals, d, seed)).collect();
        let mut state = DcntState {
            num_topics: k,
            covariance,
            priors,
            z: Vec::with_capacity(docs.num_tokens()),
            doc_topic: vec![0; docs.num_docs() * k],
            word_topic: vec![0; docs.num_terms * k],
            topic_totals: vec![0; k],
            u: Vec::with_capacity(docs.num_docs() * k),
            v: Vec::with_capacity(docs.num_docs() * k),
            globals,
            topic_swaps,
            seed_prior,
        };
        for (u, v, z) in per_doc {
            state.u.extend(u);
            state.v.extend(v);
            state.z.extend(z);
        }
        if !state.seed_prior.is_empty() && warm_start_sweeps > 0 {
            state.uniform_assignments(docs, seed);
        }
        state.start_from_seeds(docs);
        state.recount(docs);
        if warm_start_sweeps > 0 {
            state.start_warm(docs, warm_start_sweeps, seed, stop);
        }
        state
    }

    /// The collapsed start ([`warm_start`]): z and v from it, then u_d from its
    /// conditional given the new v_d under the initial globals.
    fn start_warm(&mut self, docs: &Documents, sweeps: usize, seed: u64, stop: &(dyn Fn() -> bool + Sync)) {
        let k = self.num_topics;
        let blocks = docs.blocks(SYNC_TOKENS);
        self.v = warm_start(docs, &mut self.z, k, (self.priors.beta, &self.seed_prior), sweeps, &blocks, seed, stop);
        self.recount(docs);
        self.draw_u_given_v(docs, (seed, Purpose::DcntWarmStart, 0));
    }

    /// Every u_d drawn from its conditional given v_d under the current globals,
    /// document d from stream `(seed, purpose, iteration, d)` (`key`).
    pub(super) fn draw_u_given_v(&mut self, docs: &Documents, key: (u64, Purpose, u64)) {
        let (seed, purpose, iteration) = key;
        let k = self.num_topics;
        let uc = UConditional::new(&self.globals.a, k, self.globals.lambda_v).expect("the prior's draws are finite");
        let u: Vec<f64> = (0..docs.num_docs())
            .into_par_iter()
            .flat_map_iter(|d| {
                let mut rng = stream(seed, purpose, iteration, d as u64);
                uc.draw(&self.v[d * k..(d + 1) * k], &self.globals.u_mean(docs.phi(d)), &mut rng)
            })
            .collect();
        self.u = u;
    }

    /// Every token's topic drawn uniformly (one stream per document), where a seeded fit's
    /// collapsed start begins, as LDA's chains do: from the prior's start, whose sticks
    /// give a few topics most tokens, a seeded topic that starts large collects the
    /// corpus' common words and its seeds cannot pull it back (on AppStream the
    /// "audio" seed's topic held "files, use, data" after 200 collapsed sweeps).
    fn uniform_assignments(&mut self, docs: &Documents, seed: u64) {
        let k = self.num_topics as u16;
        for d in 0..docs.num_docs() {
            let mut rng = stream(seed, Purpose::DcntWarmStart, u64::MAX, d as u64);
            for t in &mut self.z[docs.token_offsets[d]..docs.token_offsets[d + 1]] {
                *t = rng.random_range(0..k);
            }
        }
    }

    /// A seed word's tokens moved to its seeded topic in the documents that speak of it,
    /// as LDA's seeded start ([`crate::models::seeds::SeededStart`]): seeds act from the
    /// first scan on.
    fn start_from_seeds(&mut self, docs: &Documents) {
        if self.seed_prior.is_empty() {
            return;
        }
        let start = self.seed_prior.start(docs.num_terms);
        for d in 0..docs.num_docs() {
            let mut t = docs.token_offsets[d];
            let (terms, counts) = &docs.rows[d];
            let starts = start.in_document(terms);
            for (&topic, &c) in starts.iter().zip(counts) {
                for _ in 0..c {
                    if let Some(topic) = topic {
                        self.z[t] = topic as u16;
                    }
                    t += 1;
                }
            }
        }
    }

    /// M_kw of the tokens alone (the seeds' pseudo-counts taken out): what Ω's means
    /// and the kept samples read.
    pub fn data_word_topic(&self) -> std::borrow::Cow<'_, [u32]> {
        if self.seed_prior.is_empty() {
            return std::borrow::Cow::Borrowed(&self.word_topic);
        }
        let mut counts = self.word_topic.clone();
        self.seed_prior.remove_from(&mut counts, self.num_topics);
        std::borrow::Cow::Owned(counts)
    }

    /// Rebuild n_dk, M_kw (with the seeds' pseudo-counts) and M_k from z.
    pub fn recount(&mut self, docs: &Documents) {
        let k = self.num_topics;
        self.doc_topic.iter_mut().for_each(|x| *x = 0);
        self.word_topic.iter_mut().for_each(|x| *x = 0);
        self.topic_totals.iter_mut().for_each(|x| *x = 0);
        for d in 0..docs.num_docs() {
            let mut t = docs.token_offsets[d];
            let (terms, counts) = &docs.rows[d];
            for (&w, &c) in terms.iter().zip(counts) {
                for _ in 0..c {
                    let topic = self.z[t] as usize;
                    self.doc_topic[d * k + topic] += 1;
                    self.word_topic[w as usize * k + topic] += 1;
                    self.topic_totals[topic] += 1;
                    t += 1;
                }
            }
        }
        self.seed_prior.add_to(&mut self.word_topic, k);
    }

    /// One full scan (see the module documentation); an error when the current
    /// globals have broken down numerically (u's precision no longer factors).
    pub fn scan(&mut self, docs: &Documents, blocks: &[Range<usize>], seed: u64, scan: u64) -> Result<ScanStats, NonFinite> {
        let mut stats = self.sample_documents(docs, blocks, seed, scan)?;
        let swaps = swap_sweep(self, docs, blocks, (seed, scan), self.topic_swaps);
        (stats.swaps_accepted, stats.swaps_proposed) = (swaps.accepted, swaps.proposed);
        let mut grng = stream(seed, Purpose::DcntGlobal, scan, 0);
        self.globals.update(&self.u, &self.v, &docs.features, self.covariance, &self.priors, &mut grng);
        Ok(stats)
    }

    /// The per-document half of a scan: z, v and u of every document, block by block.
    pub fn sample_documents(&mut self, docs: &Documents, blocks: &[Range<usize>], seed: u64, scan: u64) -> Result<ScanStats, NonFinite> {
        let k = self.num_topics;
        let u_conditional = UConditional::new(&self.globals.a, k, self.globals.lambda_v).ok_or_else(|| NonFinite::at_scan(Quantity::UPrecision, scan))?;
        let mut stats = ScanStats::default();
        for block in blocks {
            let updates: Vec<DocUpdate> = block.clone().into_par_iter().map(|d| self.sample_document(docs, d, &u_conditional, seed, scan)).collect();
            for (d, up) in block.clone().zip(updates) {
                let DocUpdate { z, counts, u, v, accepted, moves } = up;
                self.apply_assignments(docs, d, &Assignments { z, counts, moves });
                self.u[d * k..(d + 1) * k].copy_from_slice(&u);
                self.v[d * k..(d + 1) * k].copy_from_slice(&v);
                stats.accepted += accepted as u64;
                stats.proposed += k as u64;
            }
        }
        Ok(stats)
    }

    /// z, v and u of document d against the block-start counts.
    fn sample_document(&self, docs: &Documents, d: usize, u_conditional: &UConditional, seed: u64, scan: u64) -> DocUpdate {
        let k = self.num_topics;
        let mut rng = stream(seed, Purpose::DcntDocuments, scan, d as u64);
        let mut v = self.v[d * k..(d + 1) * k].to_vec();
        let pi = stick_weights(&v);
        let Assignments { z, counts, moves } = self.sample_assignments(docs, d, &pi, &mut rng);
        let u_old = &self.u[d * k..(d + 1) * k];
        let accepted = update_activations(&mut v, &self.globals.a_times(u_old), self.globals.lambda_v, &counts, &mut rng);
        let u = u_conditional.draw(&v, &self.globals.u_mean(docs.phi(d)), &mut rng);
        DocUpdate { z, counts, u, v, accepted, moves }
    }

    /// Document d's z given its stick weights `pi`, token by token against the
    /// block-start counts with exact live corrections for the document's own moves:
    /// p(z = k) ∝ π_k (M_kw + β)/(M_k + Wβ), M_kw carrying the seeds' pseudo-counts.
    pub(super) fn sample_assignments(&self, docs: &Documents, d: usize, pi: &[f64], rng: &mut StreamRng) -> Assignments {
        let k = self.num_topics;
        let (terms, term_counts) = &docs.rows[d];
        let start = docs.token_offsets[d];
        let mut z = self.z[start..docs.token_offsets[d + 1]].to_vec();
        let mut counts = self.doc_topic[d * k..(d + 1) * k].to_vec();
        let beta = self.priors.beta;
        let w_beta = docs.num_terms as f64 * beta;
        // Live corrections for this document's own moves: per distinct term and topic,
        // and per topic.
        let mut term_delta = vec![0i32; terms.len() * k];
        let mut total_delta = vec![0i64; k];
        let mut inv_total: Vec<f64> = (0..k).map(|j| 1.0 / (self.topic_totals[j] as f64 + w_beta)).collect();
        let mut weights = vec![0.0; k];
        let mut t = 0;
        for (j, (&w, &c)) in terms.iter().zip(term_counts).enumerate() {
            let row = &self.word_topic[w as usize * k..(w as usize + 1) * k];
            let delta = &mut term_delta[j * k..(j + 1) * k];
            for _ in 0..c {
                let old = z[t] as usize;
                let mut sum = 0.0;
                for topic in 0..k {
                    let own = (topic == old) as i64;
                    let m_kw = row[topic] as i64 + delta[topic] as i64 - own;
                    let inv = if own == 1 { 1.0 / ((self.topic_totals[old] as i64 + total_delta[old] - 1) as f64 + w_beta) } else { inv_total[topic] };
                    sum += pi[topic] * (m_kw as f64 + beta) * inv;
                    weights[topic] = sum;
                }
                let target = rng.random::<f64>() * sum;
                let new = weights.iter().position(|&c| target < c).unwrap_or(k - 1);
                if new != old {
                    z[t] = new as u16;
                    counts[old] -= 1;
                    counts[new] += 1;
                    delta[old] -= 1;
                    delta[new] += 1;
                    total_delta[old] -= 1;
                    total_delta[new] += 1;
                    for x in [old, new] {
                        inv_total[x] = 1.0 / ((self.topic_totals[x] as i64 + total_delta[x]) as f64 + w_beta);
                    }
                }
                t += 1;
            }
        }
        let moves = terms
            .iter()
            .enumerate()
            .flat_map(|(j, &w)| term_delta[j * k..(j + 1) * k].iter().enumerate().filter(|(_, &c)| c != 0).map(move |(topic, &c)| (w, topic as u16, c)))
            .collect();
        Assignments { z, counts, moves }
    }

    /// Apply document d's new assignments to the shared counts (what a block does for
    /// each of its documents).
    pub(super) fn apply_assignments(&mut self, docs: &Documents, d: usize, a: &Assignments) {
        let k = self.num_topics;
        let t = docs.token_offsets[d];
        self.z[t..t + a.z.len()].copy_from_slice(&a.z);
        self.doc_topic[d * k..(d + 1) * k].copy_from_slice(&a.counts);
        for &(w, topic, change) in &a.moves {
            let cell = &mut self.word_topic[w as usize * k + topic as usize];
            *cell = (*cell as i64 + change as i64) as u32;
            let total = &mut self.topic_totals[topic as usize];
            *total = (*total as i64 + change as i64) as u64;
        }
    }

    /// log p(w | z) with Ω collapsed plus log p(z | v) = Σ_dk n_dk log π_kd.
    pub fn log_joint(&self, docs: &Documents) -> f64 {
        let k = self.num_topics;
        let seeded = if self.seed_prior.is_empty() { 0.0 } else { self.seed_prior.log_joint_correction(self.priors.beta) };
        let words = log_p_words_given_topics(&self.word_topic, &self.topic_totals, docs.num_terms, self.priors.beta) + seeded;
        let topics: f64 = (0..docs.num_docs())
            .into_par_iter()
            .map(|d| {
                let mut log_pi = vec![0.0; k];
                log_stick_weights(&self.v[d * k..(d + 1) * k], &mut log_pi);
                self.doc_topic[d * k..(d + 1) * k].iter().zip(&log_pi).filter(|(&n, _)| n > 0).map(|(&n, &lp)| n as f64 * lp).sum::<f64>()
            })
            .collect::<Vec<f64>>()
            .iter()
            .sum();
        words + topics
    }

    /// Ω from the tokens' counts (pseudo-counts left out): (M_kw + β)/(M_k + Wβ),
    /// topic-major K̄ × V.
    pub fn topic_word(&self, num_terms: usize) -> Vec<f64> {
        let k = self.num_topics;
        let beta = self.priors.beta;
        let counts = self.data_word_topic();
        let mut out = vec![0.0; k * num_terms];
        for w in 0..num_terms {
            for topic in 0..k {
                out[topic * num_terms + w] = (counts[w * k + topic] as f64 + beta) / (self.topic_totals[topic] as f64 + num_terms as f64 * beta);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The paper initialises z from its prior given v (001 §4.1): over 400 documents of
    /// 50 tokens, each topic's count matches Σ_d N_d π_k(v_d) within 4.5 standard
    /// deviations (given v, counts are multinomial: variance Σ_d N_d π_dk (1 − π_dk)).
    /// A uniform start (K̄ = 6: 1/6 each) misses the sticks' decreasing weights by far.
    #[test]
    fn initial_topics_are_drawn_from_the_stick_weights() {
        let (docs_n, tokens, k) = (400usize, 50u32, 6usize);
        let rows = (0..docs_n).map(|d| (vec![0, 1 + (d % 3) as u32], vec![tokens / 2, tokens - tokens / 2])).collect();
        let docs = Documents::new(rows, vec![1.0; docs_n], 1, 4);
        let state = DcntState::init(&docs, k, Covariance::Diagonal, Priors::default(), 0, 0, SeedPrior::default(), 3, &|| false);
        for topic in 0..k {
            let (mut observed, mut expected, mut variance) = (0.0, 0.0, 0.0);
            for d in 0..docs_n {
                let pi = stick_weights(&state.v[d * k..(d + 1) * k])[topic];
                observed += state.doc_topic[d * k + topic] as f64;
                expected += tokens as f64 * pi;
                variance += tokens as f64 * pi * (1.0 - pi);
            }
            let z = (observed - expected) / variance.sqrt();
            assert!(z.abs() < 4.5, "topic {topic}: observed {observed}, expected {expected:.1}, z = {z:.2}");
        }
    }
}
