//! Held-out log-likelihood of new documents under a fitted LDA, by the Chib-style
//! estimator of Murray & Salakhutdinov (2009), as evaluated by Wallach et al. (2009).
//!
//! Why it exists: the held-out evaluation job reports log p(w_d | φ, α) per document, with
//! θ integrated out. With φ fixed, a document's topic assignments z form a small chain of
//! their own: p(z | α) is Dirichlet-multinomial, p(w | z) = Π_n φ_{z_n, w_n}, and the
//! collapsed Gibbs conditional is p(z_n = k | z_-n, w) ∝ (n_k^-n + α_k) φ_{k, w_n}, with the
//! fitted α (one α_k per topic when it was optimised).
//!
//! The estimator (Murray & Salakhutdinov, 2009, Algorithm "Chib-style estimator"):
//! 1. find a high-probability state z* (Gibbs sweeps, then iterated conditional modes);
//! 2. draw s uniformly from 1..S and z^(s) from the *reverse* operator T̃(· ← z*);
//! 3. run the forward operator T from z^(s) to get z^(s+1..S), and, restarted from z^(s),
//!    the reverse operator T̃ to get z^(s−1..1);
//! 4. p(w) ≈ p(w, z*) / ((1/S) Σ_s T(z* ← z^(s))).
//!
//! T is one Gibbs sweep visiting tokens 1..N, T̃ the sweep visiting N..1. Each single-token
//! update is reversible with respect to π(z) = p(z | w), so π(z) T(z' ← z) = π(z') T̃(z ← z')
//! (the sweep in reverse order is the time reversal of the forward sweep). With that
//! identity the law Q of the simulated chain is Q(H) = P_eq(H) · (1/S) Σ_s T(z* ← z^(s)) /
//! π(z*), where P_eq is the law of a stationary forward chain; so the estimate equals
//! p(w) · P_eq(H) / Q(H), an importance weight, and is *unbiased for p(w)* whatever z* is
//! (z* only affects the variance). The tests check this on documents small enough to
//! enumerate.
//!
//! Cost: S sweeps and S evaluations of T(z* ← ·), each O(N K). On the forward half the
//! evaluation of T(z* ← z^(i)) shares the pass that draws z^(i+1): both visit tokens in the
//! order 1..N and, at token n, both states hold z^(i)_{>n} after it (the sweep's state is
//! (z^(i+1)_{<n}, z^(i)_{≥n}), T's is (z*_{<n}, z^(i)_{≥n})), so one pass over the token's
//! φ row serves both count vectors. The reverse half visits N..1 and cannot be fused with
//! T's forward order, so it pays a separate pass.

use crate::corpus::lexicon::EncodedDoc;
use crate::inference::collapsed_loglik::TopicPrior;
use crate::models::CancelToken;
use crate::rng::{stream, Purpose, StreamRng};
use rand::RngExt;
use rayon::prelude::*;

/// Settings of the Chib-style estimator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChibSettings {
    /// Gibbs sweeps from a uniformly random start before iterated conditional modes picks
    /// z*. The estimate is unbiased for any z*; a better z* only lowers its variance. With φ
    /// fixed a single document's chain mixes within a few sweeps, so 100 (a tenth of the
    /// default chain, and cheaper per sweep because no transition probability is scored)
    /// reaches the bulk of the posterior with a wide margin before ICM climbs to a mode.
    pub burn_in: usize,
    /// S, the length of the transition chain (values below 1 are treated as 1).
    pub chain_length: usize,
}

impl Default for ChibSettings {
    /// S = 1000 as in Murray & Salakhutdinov (2009) and Wallach et al. (2009).
    fn default() -> Self {
        ChibSettings { burn_in: 100, chain_length: 1000 }
    }
}

/// The two terms of the estimate: log p̂(w) = `log_joint_star` − `log_mean_transition`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ChibParts {
    /// log p(w, z*).
    pub log_joint_star: f64,
    /// log (1/S) Σ_s T(z* ← z^(s)), always ≤ 0.
    pub log_mean_transition: f64,
}

impl ChibParts {
    fn log_likelihood(&self) -> f64 {
        if self.log_joint_star == f64::NEG_INFINITY {
            f64::NEG_INFINITY
        } else {
            self.log_joint_star - self.log_mean_transition
        }
    }
}

/// log p(w | φ, α) of one document by the Chib-style estimator (0.0 for an empty document;
/// −∞ when some word has zero probability under every topic).
///
/// `phi` is topic-major (`K × V`), `alpha` the Dirichlet parameter of each topic (K values);
/// every word must be below V (panics otherwise: the caller maps its terms to the model's
/// vocabulary, as [`chib_batch`] does).
pub fn chib_log_likelihood(words: &[u32], phi: &[f64], num_topics: usize, alpha: &[f64], settings: &ChibSettings, rng: &mut StreamRng) -> f64 {
    chib_parts(words, phi, num_topics, alpha, settings, rng).log_likelihood()
}

/// [`chib_log_likelihood`] for each document, in parallel over documents; document d draws
/// from `rng::stream(seed, Heldout, 0, d)`, so the thread count never changes a number.
/// Terms outside the model's vocabulary (≥ V) are ignored, as in fold-in. `None` if
/// `cancel` fires (checked before each document).
pub fn chib_batch(
    docs: &[EncodedDoc],
    phi: &[f64],
    num_topics: usize,
    alpha: &[f64],
    settings: &ChibSettings,
    seed: u64,
    cancel: &CancelToken,
) -> Option<Vec<f64>> {
    assert!(num_topics > 0 && phi.len().is_multiple_of(num_topics), "φ must hold K × V entries");
    let num_terms = (phi.len() / num_topics) as u32;
    docs.par_iter()
        .enumerate()
        .map(|(d, doc)| {
            if cancel.is_cancelled() {
                return None;
            }
            let words: Vec<u32> =
                doc.terms.iter().zip(&doc.counts).filter(|&(&t, _)| t < num_terms).flat_map(|(&t, &n)| std::iter::repeat_n(t, n as usize)).collect();
            let mut rng = stream(seed, Purpose::Heldout, 0, d as u64);
            Some(chib_log_likelihood(&words, phi, num_topics, alpha, settings, &mut rng))
        })
        .collect()
}

/// The estimator, returning both of its terms.
pub(crate) fn chib_parts(words: &[u32], phi: &[f64], num_topics: usize, alpha: &[f64], settings: &ChibSettings, rng: &mut StreamRng) -> ChibParts {
    if words.is_empty() {
        return ChibParts { log_joint_star: 0.0, log_mean_transition: 0.0 };
    }
    let table = TokenTopicTable::new(words, phi, num_topics, alpha);
    if !table.every_token_possible() {
        return ChibParts { log_joint_star: f64::NEG_INFINITY, log_mean_transition: 0.0 };
    }
    let mut chain = DocumentChain::new(table);
    chain.randomize(rng);
    for _ in 0..settings.burn_in {
        chain.sweep(Order::Forward, rng);
    }
    chain.climb_to_mode();
    let z_star = chain.z.clone();
    let log_joint_star = chain.table.log_joint(&z_star, &chain.counts.n);

    let length = settings.chain_length.max(1);
    let s = rng.random_range(0..length);
    let mut log_transitions = vec![0.0; length];
    // z^(s) ~ T̃(· ← z*).
    chain.sweep(Order::Reverse, rng);
    let z_s = chain.z.clone();
    // Forward half: the pass that draws z^(i+1) scores T(z* ← z^(i)).
    for slot in &mut log_transitions[s..length - 1] {
        *slot = chain.sweep_scoring(&z_star, rng);
    }
    log_transitions[length - 1] = chain.log_transition_to(&z_star, Order::Forward);
    // Reverse half, restarted from z^(s): z^(j) ~ T̃(· ← z^(j+1)).
    chain.set_state(&z_s);
    for slot in log_transitions[..s].iter_mut().rev() {
        chain.sweep(Order::Reverse, rng);
        *slot = chain.log_transition_to(&z_star, Order::Forward);
    }
    ChibParts { log_joint_star, log_mean_transition: log_mean_exp(&log_transitions) }
}

/// The order in which a sweep visits the tokens: T is `Forward`, T̃ is `Reverse`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Order {
    Forward,
    Reverse,
}

impl Order {
    /// Token positions of an N-token document in this order.
    fn positions(self, len: usize) -> impl Iterator<Item = usize> {
        (0..len).map(move |i| match self {
            Order::Forward => i,
            Order::Reverse => len - 1 - i,
        })
    }
}

/// The document's fixed data: φ_{k, w_n} for every token n (a dense N × K table, so the
/// chain never touches the V-wide φ again), K and α.
pub(crate) struct TokenTopicTable {
    num_topics: usize,
    alpha: Vec<f64>,
    phi_by_token: Vec<f64>,
}

impl TokenTopicTable {
    pub(crate) fn new(words: &[u32], phi: &[f64], num_topics: usize, alpha: &[f64]) -> Self {
        assert!(num_topics > 0 && phi.len().is_multiple_of(num_topics), "φ must hold K × V entries");
        assert_eq!(alpha.len(), num_topics, "one α_k per topic");
        let num_terms = phi.len() / num_topics;
        let mut phi_by_token = Vec::with_capacity(words.len() * num_topics);
        for &w in words {
            let w = w as usize;
            assert!(w < num_terms, "word {w} outside the vocabulary of {num_terms} terms");
            phi_by_token.extend((0..num_topics).map(|k| phi[k * num_terms + w]));
        }
        TokenTopicTable { num_topics, alpha: alpha.to_vec(), phi_by_token }
    }

    fn len(&self) -> usize {
        self.phi_by_token.len() / self.num_topics
    }

    #[inline]
    fn row(&self, n: usize) -> &[f64] {
        &self.phi_by_token[n * self.num_topics..(n + 1) * self.num_topics]
    }

    /// Whether every token has positive probability under some topic (else p(w) = 0).
    fn every_token_possible(&self) -> bool {
        self.phi_by_token.chunks(self.num_topics).all(|row| row.iter().any(|&p| p > 0.0))
    }

    /// log p(w, z) = log p(z | α) + Σ_n log φ_{z_n, w_n}; `counts` are z's topic counts.
    pub(crate) fn log_joint(&self, z: &[usize], counts: &[u32]) -> f64 {
        let topics = TopicPrior::new(&self.alpha, z.len() + 1).log_p(counts);
        let words: f64 = z.iter().enumerate().map(|(n, &t)| self.row(n)[t].ln()).sum();
        topics + words
    }

    /// log of the probability that one sweep in `order` started at `from` lands exactly at
    /// `to`: the product over visited tokens of the sequential conditionals, each evaluated
    /// with the earlier-visited tokens already at `to` and the later ones still at `from`.
    pub(crate) fn log_sweep_probability(&self, from: &[usize], to: &[usize], order: Order, scratch: &mut TopicCounts) -> f64 {
        scratch.recount(from);
        let mut product = ProbabilityProduct::new();
        for n in order.positions(self.len()) {
            scratch.remove(from[n]);
            let row = self.row(n);
            let target = to[n];
            product.push(scratch.shifted[target] * row[target] / weighted_total(&scratch.shifted, row));
            scratch.add(to[n]);
        }
        product.ln()
    }
}

/// Topic counts of a document: the integers n_k are the truth; `shifted` = n_k + α_k is
/// recomputed from them at every change (never accumulated, so it cannot drift).
pub(crate) struct TopicCounts {
    n: Vec<u32>,
    shifted: Vec<f64>,
    alpha: Vec<f64>,
}

impl TopicCounts {
    pub(crate) fn new(alpha: &[f64]) -> Self {
        TopicCounts { n: vec![0; alpha.len()], shifted: alpha.to_vec(), alpha: alpha.to_vec() }
    }

    fn recount(&mut self, z: &[usize]) {
        self.n.fill(0);
        for &t in z {
            self.n[t] += 1;
        }
        for ((s, &n), &a) in self.shifted.iter_mut().zip(&self.n).zip(&self.alpha) {
            *s = n as f64 + a;
        }
    }

    fn copy_from(&mut self, other: &TopicCounts) {
        self.n.copy_from_slice(&other.n);
        self.shifted.copy_from_slice(&other.shifted);
    }

    #[inline]
    fn remove(&mut self, t: usize) {
        self.n[t] -= 1;
        self.shifted[t] = self.n[t] as f64 + self.alpha[t];
    }

    #[inline]
    fn add(&mut self, t: usize) {
        self.n[t] += 1;
        self.shifted[t] = self.n[t] as f64 + self.alpha[t];
    }
}

/// One document's collapsed Gibbs chain over z with φ fixed, with every buffer it needs
/// allocated once.
struct DocumentChain {
    table: TokenTopicTable,
    z: Vec<usize>,
    counts: TopicCounts,
    /// Counts of the state T(z* ← ·) is evaluated in.
    scratch: TopicCounts,
    /// Unnormalised conditional of the token being resampled.
    weights: Vec<f64>,
}

impl DocumentChain {
    fn new(table: TokenTopicTable) -> Self {
        let (k, len) = (table.num_topics, table.len());
        let (counts, scratch) = (TopicCounts::new(&table.alpha), TopicCounts::new(&table.alpha));
        DocumentChain { z: vec![0; len], counts, scratch, weights: vec![0.0; k], table }
    }

    /// A uniform start over the topics with α_k > 0. A topic with α_k = 0 (an edit's
    /// retired slot) must start empty: two tokens placed there would keep each other
    /// there (n_dk > 0 gives it weight), and log p(z | α) of a state using it is -∞.
    /// With every α_k > 0 the draws are those of a uniform start over all K.
    fn randomize(&mut self, rng: &mut StreamRng) {
        let live: Vec<usize> = (0..self.table.num_topics).filter(|&k| self.table.alpha[k] > 0.0).collect();
        self.z.iter_mut().for_each(|t| *t = live[rng.random_range(0..live.len())]);
        self.counts.recount(&self.z);
    }

    fn set_state(&mut self, z: &[usize]) {
        self.z.copy_from_slice(z);
        self.counts.recount(z);
    }

    /// One Gibbs sweep in `order`.
    fn sweep(&mut self, order: Order, rng: &mut StreamRng) {
        let DocumentChain { table, z, counts, weights, .. } = self;
        for n in order.positions(table.len()) {
            counts.remove(z[n]);
            let total = fill_weights(weights, &counts.shifted, table.row(n));
            let t = draw_index(weights, total, rng.random::<f64>());
            counts.add(t);
            z[n] = t;
        }
    }

    /// One forward sweep z → z', returning log T(`target` ← z) evaluated in the same pass.
    fn sweep_scoring(&mut self, target: &[usize], rng: &mut StreamRng) -> f64 {
        let DocumentChain { table, z, counts, scratch, weights } = self;
        scratch.copy_from(counts);
        let mut product = ProbabilityProduct::new();
        for n in 0..table.len() {
            let (old, goal) = (z[n], target[n]);
            counts.remove(old);
            scratch.remove(old);
            let row = table.row(n);
            let (total, target_total) = fill_weights_and_total(weights, &counts.shifted, &scratch.shifted, row);
            product.push(scratch.shifted[goal] * row[goal] / target_total);
            scratch.add(goal);
            let t = draw_index(weights, total, rng.random::<f64>());
            counts.add(t);
            z[n] = t;
        }
        product.ln()
    }

    /// log of the probability that one sweep in `order` from the current state lands at
    /// `target`.
    fn log_transition_to(&mut self, target: &[usize], order: Order) -> f64 {
        self.table.log_sweep_probability(&self.z, target, order, &mut self.scratch)
    }

    /// Iterated conditional modes: move each token to its most probable topic given the
    /// others until a full pass changes nothing. Every move strictly raises p(w, z), so the
    /// loop ends; the pass cap only guards against ties broken differently by rounding.
    fn climb_to_mode(&mut self) {
        const MAX_PASSES: usize = 1000;
        let DocumentChain { table, z, counts, .. } = self;
        for _ in 0..MAX_PASSES {
            let mut changed = false;
            for (n, topic) in z.iter_mut().enumerate() {
                let old = *topic;
                counts.remove(old);
                let row = table.row(n);
                let (mut best, mut best_weight) = (old, counts.shifted[old] * row[old]);
                for (t, (&c, &p)) in counts.shifted.iter().zip(row).enumerate() {
                    if c * p > best_weight {
                        best = t;
                        best_weight = c * p;
                    }
                }
                counts.add(best);
                if best != old {
                    *topic = best;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
    }
}

/// Σ_k a_k b_k with four running sums in a fixed order (vectorisable, deterministic).
#[inline]
fn weighted_total(a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0.0f64; 4];
    let (a4, b4) = (a.chunks_exact(4), b.chunks_exact(4));
    let (a_tail, b_tail) = (a4.remainder(), b4.remainder());
    for (x, y) in a4.zip(b4) {
        for j in 0..4 {
            acc[j] += x[j] * y[j];
        }
    }
    let tail: f64 = a_tail.iter().zip(b_tail).map(|(x, y)| x * y).sum();
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
}

/// weights_k = shifted_k φ_k; returns Σ_k weights_k.
#[inline]
fn fill_weights(weights: &mut [f64], shifted: &[f64], row: &[f64]) -> f64 {
    let mut acc = [0.0f64; 4];
    let mut w4 = weights.chunks_exact_mut(4);
    let (s4, r4) = (shifted.chunks_exact(4), row.chunks_exact(4));
    let (s_tail, r_tail) = (s4.remainder(), r4.remainder());
    for ((w, s), r) in (&mut w4).zip(s4).zip(r4) {
        for j in 0..4 {
            w[j] = s[j] * r[j];
            acc[j] += w[j];
        }
    }
    let mut tail = 0.0;
    for ((w, s), r) in w4.into_remainder().iter_mut().zip(s_tail).zip(r_tail) {
        *w = s * r;
        tail += *w;
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
}

/// [`fill_weights`] for the chain's counts and, in the same pass over φ's row, the
/// normaliser Σ_k target_shifted_k φ_k of the state T is evaluated in.
#[inline]
fn fill_weights_and_total(weights: &mut [f64], shifted: &[f64], target_shifted: &[f64], row: &[f64]) -> (f64, f64) {
    let (mut acc, mut target_acc) = ([0.0f64; 4], [0.0f64; 4]);
    let mut w4 = weights.chunks_exact_mut(4);
    let (s4, t4, r4) = (shifted.chunks_exact(4), target_shifted.chunks_exact(4), row.chunks_exact(4));
    let (s_tail, t_tail, r_tail) = (s4.remainder(), t4.remainder(), r4.remainder());
    for (((w, s), t), r) in (&mut w4).zip(s4).zip(t4).zip(r4) {
        for j in 0..4 {
            w[j] = s[j] * r[j];
            acc[j] += w[j];
            target_acc[j] += t[j] * r[j];
        }
    }
    let (mut tail, mut target_tail) = (0.0, 0.0);
    for (((w, s), t), r) in w4.into_remainder().iter_mut().zip(s_tail).zip(t_tail).zip(r_tail) {
        *w = s * r;
        tail += *w;
        target_tail += t * r;
    }
    ((acc[0] + acc[1]) + (acc[2] + acc[3]) + tail, (target_acc[0] + target_acc[1]) + (target_acc[2] + target_acc[3]) + target_tail)
}

/// The index k with Σ_{j<k} w_j ≤ u·total < Σ_{j≤k} w_j, for u in [0, 1). Skips four
/// weights at a time while their sum stays below the target.
#[inline]
fn draw_index(weights: &[f64], total: f64, u: f64) -> usize {
    let target = u * total;
    let mut cumulative = 0.0;
    let mut start = 0;
    for block in weights.chunks_exact(4) {
        let sum = (block[0] + block[1]) + (block[2] + block[3]);
        if cumulative + sum > target {
            break;
        }
        cumulative += sum;
        start += 4;
    }
    for (i, &w) in weights[start..].iter().enumerate() {
        cumulative += w;
        if cumulative > target {
            return start + i;
        }
    }
    // Rounding left the target at or above the running sum: the last possible topic.
    weights.iter().rposition(|&w| w > 0.0).unwrap_or(0)
}

/// A product of probabilities kept as mantissa × 2^exponent, so that it neither underflows
/// nor needs a logarithm per factor. Factors below the smallest normal number (or zero) go
/// to a log-space remainder instead.
struct ProbabilityProduct {
    /// In [1, 2).
    mantissa: f64,
    exponent: i64,
    log_rest: f64,
}

impl ProbabilityProduct {
    const EXPONENT_MASK: u64 = 0x7ff << 52;

    fn new() -> Self {
        ProbabilityProduct { mantissa: 1.0, exponent: 0, log_rest: 0.0 }
    }

    #[inline]
    fn push(&mut self, p: f64) {
        if (f64::MIN_POSITIVE..=4.0).contains(&p) {
            // mantissa ∈ [1, 2) and p ≥ the smallest normal, so the product is normal.
            let bits = (self.mantissa * p).to_bits();
            self.exponent += ((bits & Self::EXPONENT_MASK) >> 52) as i64 - 1023;
            self.mantissa = f64::from_bits((bits & !Self::EXPONENT_MASK) | (1023 << 52));
        } else {
            self.log_rest += p.ln();
        }
    }

    fn ln(&self) -> f64 {
        self.mantissa.ln() + self.exponent as f64 * std::f64::consts::LN_2 + self.log_rest
    }
}

/// log((1/n) Σ_i exp(x_i)), stable for very negative x.
fn log_mean_exp(values: &[f64]) -> f64 {
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if max == f64::NEG_INFINITY {
        return f64::NEG_INFINITY;
    }
    let sum: f64 = values.iter().map(|&v| (v - max).exp()).sum();
    max + (sum / values.len() as f64).ln()
}

#[cfg(test)]
#[path = "heldout_tests.rs"]
mod tests;
