//! Held-out likelihood p(w_d | ζ) of a DCNT/SCNT document: the Chib-style estimator of
//! paper 000, A.4, in the form of Murray & Salakhutdinov (2009).
//!
//! Why it exists: the marginal likelihood of a new document integrates over its topic
//! assignments z, activations v and metadata means u, which no closed form does. With the
//! global parameters ζ fixed, the estimator runs a Markov chain on (z, v, u) for that
//! document alone and turns it into an unbiased estimate of p(w).
//!
//! ## The transition operator
//! T applies three blocks in order: z_n | v, w drawn independently per token
//! (p(z_n = k) ∝ π_k(v) Ω_{k,w_n}); v by entry-wise independence Metropolis–Hastings
//! given z and u (proposal N((A u)_k, λ_v⁻¹), [`update_activations`]); u | v Gaussian
//! ([`UConditional`]). Each block leaves p(z, v, u | w) invariant and is reversible
//! (the v entries are conditionally independent given z and u, so the entry order of
//! the MH sweep does not matter), hence the reverse operator T̃ is the same three blocks
//! in the opposite order (u, v, z), and p(h) T(h' ← h) = p(h') T̃(h ← h').
//!
//! ## The estimate
//! 1. `burn_in` forward sweeps from a prior draw, then coordinate ascent on the joint
//!    (z per token to its most probable topic, each v_k to its conditional mode by
//!    safeguarded Newton, u to its conditional mean) give h* = (z*, v*, u*). Any h* gives
//!    an unbiased estimate; a high-probability one gives a small variance.
//! 2. h^s is drawn from T̃(· ← h*), s uniform on {1..S}; the chain runs forward with T
//!    to S and, restarted from h^s, backward with T̃ to 1.
//! 3. p̂(w) = p(w, h*) · â / ((1/S) Σ_s T(h* ← h^s)), log-sum-exp in log space.
//!
//! The chain's law is Q(H) = P(H) (1/S) Σ_s T(h* ← h^s) / p(h* | w), with P the law of
//! the stationary chain, so E_Q[p̂] = p(w) exactly (Murray & Salakhutdinov, section 3);
//! this needs T(h* ← ·) evaluated as a density, which the next section arranges. The
//! estimate is unbiased for p(w), not for log p(w): its spread on the log scale grows
//! with K̄ and the document length (see `benches/heldout_dcnt.rs`).
//!
//! Cost: the document's Ω columns are gathered once (J distinct terms × K̄), the chain
//! reuses its buffers (no allocation per step) and one [`UConditional`] serves every
//! document of a batch; a step costs O(J K̄ + N log K̄ + K̄²).
//!
//! ## The Metropolis–Hastings point mass, and where this departs from the paper
//! The v block's kernel is a density q(v'_k) min(1, r_k) plus a point mass (rejection) at
//! the current value. At the chain states h^s (whose v entries differ from v* with
//! probability one) T(h* ← h^s) only has its density part, which is what we evaluate:
//! Π_k q(v*_k | u^s) min(1, r_k(v^s_k → v*_k; z*)). The point mass matters only for the
//! first step h* → h^s: rejecting entry k leaves v^s_k = v*_k, a state the stationary
//! chain never visits, so the identity above holds only on the event "every entry
//! moved", whose probability is a(h*) = E_{u ~ p(u|v*)}[Π_k a_k(u)], with a_k(u) the
//! probability that entry k's proposal is accepted from v*_k. We therefore draw u^s from
//! p(u | v*) unconditionally, draw each v^s_k *conditioned on moving* (rejection sampling
//! from the proposal), and multiply by â = Π_k â_k, where â_k is an unbiased estimate of
//! a_k(u^s) from R further proposals that are independent of the conditioned draw. Then
//! E[p̂] = E_u[Π_k a_k(u) · E[ratio | u, moved]] = a(h*) · p(w) / a(h*) = p(w) exactly.
//!
//! This is the paper's lines 10–18 with three changes, each for soundness or variance:
//! - the first step uses T̃ (u, then v, then z), not T (the paper samples z, then v with
//!   u*, then u): T is not reversible, and the identity needs T̃ there;
//! - â_k averages the acceptance *probability* min(1, r_k) over R proposals (a
//!   Rao–Blackwellised form of the paper's accepted fraction ρ_k, never exactly zero),
//!   and the conditioned draw does not reuse those proposals, so the two are
//!   independent given u^s;
//! - every chain state, forward and backward, is scored with the forward T (Murray &
//!   Salakhutdinov eq. 12), not T̃ on the backward states as the paper's line 39 writes.
//!
//! Entries whose ratio is identically one (the last stick, and entries with no token at
//! or after them in z*) always move: a_k = 1 and no samples are spent on them. If an
//! entry's acceptance probability is so small that 10⁷ proposals bring no acceptance,
//! the best proposal is kept (an approximation that no realistic document reaches).

use super::activations::{entry_log_ratio, update_activations, UConditional};
use super::point::DcntPoint;
use super::stick::log_stick_weights;
use crate::corpus::EncodedDoc;
use crate::models::CancelToken;
use crate::rng::{stream, Purpose, StreamRng};
use rand::RngExt;
use rand_distr::{Distribution, StandardNormal};
use rayon::prelude::*;

/// One standard normal draw.
#[inline]
pub(super) fn std_normal<R: rand::Rng + ?Sized>(rng: &mut R) -> f64 {
    StandardNormal.sample(rng)
}

/// Settings of the estimator (paper 000, A.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChibSettings {
    /// T: forward sweeps before the coordinate ascent that picks h*.
    pub burn_in: usize,
    /// S: length of the transition chain (at least 1 is used).
    pub chain_length: usize,
    /// R: proposals per activation entry to estimate its acceptance probability.
    pub acceptance_samples: usize,
}

impl Default for ChibSettings {
    fn default() -> Self {
        ChibSettings { burn_in: 1000, chain_length: 1000, acceptance_samples: 2000 }
    }
}

/// Coordinate-ascent rounds when picking h*.
const ASCENT_ROUNDS: usize = 20;
/// Proposals tried for a draw of an activation entry conditioned on moving.
const MAX_CONDITIONED_TRIALS: usize = 10_000_000;
const LN_2PI: f64 = 1.837_877_066_409_345_5;

/// log p(w_d | ζ) for one document (`words` is its token list; ids ≥ V are ignored).
/// The empty document gives 0. Returns NaN if the point is not finite.
pub fn chib_log_likelihood(point: &DcntPoint, features: &[f64], words: &[u32], settings: &ChibSettings, rng: &mut StreamRng) -> f64 {
    let Some(uc) = UConditional::new(&point.a, point.num_topics, point.lambda_v) else {
        return f64::NAN;
    };
    let doc = DocumentTerms::from_tokens(point, words);
    chib_with(point, &uc, features, doc, settings, rng)
}

/// log p(w_d | ζ) for every document, in parallel (rayon), document i on the stream
/// `(seed, Heldout, 0, i)` so the result does not depend on the thread count. `None` if
/// `cancel` fires (checked before each document).
pub fn chib_batch(
    point: &DcntPoint,
    features_per_doc: &[Vec<f64>],
    docs: &[EncodedDoc],
    settings: &ChibSettings,
    seed: u64,
    cancel: &CancelToken,
) -> Option<Vec<f64>> {
    assert_eq!(features_per_doc.len(), docs.len(), "one feature row per document");
    let Some(uc) = UConditional::new(&point.a, point.num_topics, point.lambda_v) else {
        return Some(vec![f64::NAN; docs.len()]);
    };
    (0..docs.len())
        .into_par_iter()
        .map(|i| {
            if cancel.is_cancelled() {
                return None;
            }
            let mut rng = stream(seed, Purpose::Heldout, 0, i as u64);
            let doc = DocumentTerms::from_counts(point, &docs[i].terms, &docs[i].counts);
            Some(chib_with(point, &uc, &features_per_doc[i], doc, settings, &mut rng))
        })
        .collect()
}

fn chib_with(point: &DcntPoint, uc: &UConditional, features: &[f64], doc: DocumentTerms, settings: &ChibSettings, rng: &mut StreamRng) -> f64 {
    if doc.token_term.is_empty() {
        return 0.0;
    }
    let mut chain = Chain::new(point, uc, doc, point.u_mean(features));
    chain.start_from_prior(rng);
    for _ in 0..settings.burn_in {
        chain.forward(rng);
    }
    chain.ascend();
    let star = chain.star();

    let log_acceptance = chain.leave_star(&star, settings.acceptance_samples.max(1), rng);
    let len = settings.chain_length.max(1);
    let s = rng.random_range(0..len);
    let at_s = chain.state.clone();
    let mut sum = LogSumExp::default();
    sum.add(chain.log_transition_to(&star));
    for _ in s + 1..len {
        chain.forward(rng);
        sum.add(chain.log_transition_to(&star));
    }
    chain.restore(&at_s);
    for _ in 0..s {
        chain.reverse(rng);
        sum.add(chain.log_transition_to(&star));
    }
    star.log_joint + log_acceptance - (sum.value() - (len as f64).ln())
}

/// A document reduced to what the chain reads: its distinct in-vocabulary terms with
/// their Ω columns, and each token's term.
struct DocumentTerms {
    /// Ω_{k, term j}, J × K̄ (term-major).
    omega: Vec<f64>,
    /// Tokens of each distinct term.
    term_count: Vec<u32>,
    /// The distinct-term index of each token.
    token_term: Vec<u32>,
}

impl DocumentTerms {
    fn from_tokens(point: &DcntPoint, words: &[u32]) -> Self {
        let mut sorted: Vec<u32> = words.to_vec();
        sorted.sort_unstable();
        let (mut terms, mut counts) = (Vec::new(), Vec::new());
        for w in sorted {
            if terms.last() == Some(&w) {
                *counts.last_mut().expect("a count per term") += 1;
            } else {
                terms.push(w);
                counts.push(1);
            }
        }
        Self::from_counts(point, &terms, &counts)
    }

    fn from_counts(point: &DcntPoint, terms: &[u32], counts: &[u32]) -> Self {
        let (k, v) = (point.num_topics, point.num_terms());
        let (mut omega, mut term_count, mut token_term) = (Vec::new(), Vec::new(), Vec::new());
        for (&w, &c) in terms.iter().zip(counts) {
            if (w as usize) >= v || c == 0 {
                continue;
            }
            let j = term_count.len() as u32;
            omega.extend((0..k).map(|t| point.omega(t, w as usize)));
            term_count.push(c);
            token_term.extend(std::iter::repeat_n(j, c as usize));
        }
        DocumentTerms { omega, term_count, token_term }
    }
}

/// The chain's latent state for one document.
#[derive(Clone)]
struct State {
    /// Topic of each token.
    z: Vec<u32>,
    /// n_k: tokens per topic.
    counts: Vec<u32>,
    v: Vec<f64>,
    u: Vec<f64>,
}

/// The distinguished state h* with what T(h* ← ·) needs.
struct Star {
    counts: Vec<u32>,
    /// Σ_{j>k} n*_j.
    later: Vec<u32>,
    v: Vec<f64>,
    /// Σ_n log Ω_{z*_n, w_n}.
    log_omega: f64,
    /// log p(u* | v*), the u block's (constant) factor of T(h* ← ·).
    log_u_given_v: f64,
    /// log p(w, z*, v*, u*).
    log_joint: f64,
}

/// One document's chain with its buffers; nothing allocates per step.
struct Chain<'a> {
    point: &'a DcntPoint,
    uc: &'a UConditional,
    doc: DocumentTerms,
    k: usize,
    /// ηᵀ φ_d.
    prior_mean: Vec<f64>,
    /// Proposal and prior standard deviation of v given A u: λ_v^{-1/2}.
    sd: f64,
    state: State,
    /// log π(v) for the current v.
    log_pi: Vec<f64>,
    /// π(v) for the current v.
    pi: Vec<f64>,
    /// Per term j, the running sums Σ_{l≤k} π_l Ω_{l,j} for the current v (J × K̄).
    cumulative: Vec<f64>,
    /// A u for the current u.
    au: Vec<f64>,
    noise: Vec<f64>,
}

impl<'a> Chain<'a> {
    fn new(point: &'a DcntPoint, uc: &'a UConditional, doc: DocumentTerms, prior_mean: Vec<f64>) -> Self {
        let k = point.num_topics;
        let n = doc.token_term.len();
        let j = doc.term_count.len();
        Chain {
            point,
            uc,
            k,
            prior_mean,
            sd: 1.0 / point.lambda_v.sqrt(),
            state: State { z: vec![0; n], counts: vec![0; k], v: vec![0.0; k], u: vec![0.0; k] },
            log_pi: vec![0.0; k],
            pi: vec![0.0; k],
            cumulative: vec![0.0; j * k],
            au: vec![0.0; k],
            noise: vec![0.0; k],
            doc,
        }
    }

    /// (u, v) from the prior, then z given v.
    fn start_from_prior(&mut self, rng: &mut StreamRng) {
        for (u, m) in self.state.u.iter_mut().zip(&self.prior_mean) {
            *u = m + std_normal(rng);
        }
        self.refresh_au();
        for (v, m) in self.state.v.iter_mut().zip(&self.au) {
            *v = m + self.sd * std_normal(rng);
        }
        self.refresh_weights();
        self.draw_z(rng);
    }

    /// T: z | v, then v | z, u (MH), then u | v.
    fn forward(&mut self, rng: &mut StreamRng) {
        self.draw_z(rng);
        update_activations(&mut self.state.v, &self.au, self.point.lambda_v, &self.state.counts, rng);
        self.refresh_weights();
        self.uc.draw_into(&self.state.v, &self.prior_mean, &mut self.noise, &mut self.state.u, rng);
        self.refresh_au();
    }

    /// T̃: u | v, then v | z, u (MH), then z | v.
    fn reverse(&mut self, rng: &mut StreamRng) {
        self.uc.draw_into(&self.state.v, &self.prior_mean, &mut self.noise, &mut self.state.u, rng);
        self.refresh_au();
        update_activations(&mut self.state.v, &self.au, self.point.lambda_v, &self.state.counts, rng);
        self.refresh_weights();
        self.draw_z(rng);
    }

    fn restore(&mut self, saved: &State) {
        self.state.clone_from(saved);
        self.refresh_weights();
        self.refresh_au();
    }

    fn refresh_au(&mut self) {
        let k = self.k;
        for (r, out) in self.au.iter_mut().enumerate() {
            *out = self.point.a[r * k..(r + 1) * k].iter().zip(&self.state.u).map(|(a, u)| a * u).sum();
        }
    }

    fn refresh_weights(&mut self) {
        let k = self.k;
        log_stick_weights(&self.state.v, &mut self.log_pi);
        for (p, &lp) in self.pi.iter_mut().zip(&self.log_pi) {
            *p = lp.exp();
        }
        for (row, omega) in self.cumulative.chunks_exact_mut(k).zip(self.doc.omega.chunks_exact(k)) {
            let mut acc = 0.0;
            for ((c, &p), &o) in row.iter_mut().zip(&self.pi).zip(omega) {
                acc += p * o;
                *c = acc;
            }
        }
    }

    /// z_n ~ p(z_n | v, w_n) for every token, and the counts.
    fn draw_z(&mut self, rng: &mut StreamRng) {
        let k = self.k;
        self.state.counts.iter_mut().for_each(|c| *c = 0);
        for (z, &j) in self.state.z.iter_mut().zip(&self.doc.token_term) {
            let row = &self.cumulative[j as usize * k..(j as usize + 1) * k];
            let x = rng.random::<f64>() * row[k - 1];
            let t = row.partition_point(|&c| c <= x).min(k - 1);
            *z = t as u32;
            self.state.counts[t] += 1;
        }
    }

    /// Coordinate ascent on log p(w, z, v, u) from the current state: each block to its
    /// conditional mode, until z stops changing and v settles.
    fn ascend(&mut self) {
        let k = self.k;
        let lambda = self.point.lambda_v;
        for _ in 0..ASCENT_ROUNDS {
            // z_n: the most probable topic of its term given v.
            let mut z_changed = false;
            self.state.counts.iter_mut().for_each(|c| *c = 0);
            for (z, &j) in self.state.z.iter_mut().zip(&self.doc.token_term) {
                let row = &self.cumulative[j as usize * k..(j as usize + 1) * k];
                let mut best = (0usize, row[0]);
                for t in 1..k {
                    let w = row[t] - row[t - 1];
                    if w > best.1 {
                        best = (t, w);
                    }
                }
                z_changed |= *z != best.0 as u32;
                *z = best.0 as u32;
                self.state.counts[best.0] += 1;
            }
            // v_k: the mode of N(v_k | (A u)_k, 1/λ) σ(v_k)^{n_k} σ(−v_k)^{later_k}.
            let mut later: u32 = self.state.counts.iter().sum();
            let mut v_change: f64 = 0.0;
            for t in 0..k {
                later -= self.state.counts[t];
                let (n, l) = if t + 1 == k { (0, 0) } else { (self.state.counts[t], later) };
                let mode = activation_mode(self.au[t], lambda, n as f64, l as f64, self.state.v[t]);
                v_change = v_change.max((mode - self.state.v[t]).abs());
                self.state.v[t] = mode;
            }
            self.refresh_weights();
            // u: its conditional mean.
            let mean = self.uc.mean(&self.state.v, &self.prior_mean);
            self.state.u.copy_from_slice(&mean);
            self.refresh_au();
            if !z_changed && v_change < 1e-9 {
                break;
            }
        }
    }

    /// The current state as h*, with log p(w, h*) and the constants of T(h* ← ·).
    fn star(&self) -> Star {
        let k = self.k;
        let st = &self.state;
        let mut later = vec![0u32; k];
        let mut acc = 0;
        for t in (0..k).rev() {
            later[t] = acc;
            acc += st.counts[t];
        }
        let log_omega: f64 = st.z.iter().zip(&self.doc.token_term).map(|(&z, &j)| self.doc.omega[j as usize * k + z as usize].ln()).sum();
        let log_u_prior: f64 = st.u.iter().zip(&self.prior_mean).map(|(u, m)| -0.5 * (u - m) * (u - m)).sum::<f64>() - 0.5 * k as f64 * LN_2PI;
        let log_v_prior: f64 = st.v.iter().zip(&self.au).map(|(&v, &m)| self.log_proposal(v, m)).sum();
        let log_z_prior: f64 = st.counts.iter().zip(&self.log_pi).filter(|(&n, _)| n > 0).map(|(&n, &lp)| n as f64 * lp).sum();
        Star {
            counts: st.counts.clone(),
            later,
            v: st.v.clone(),
            log_omega,
            log_u_given_v: self.uc.log_density(&st.u, &st.v, &self.prior_mean),
            log_joint: log_u_prior + log_v_prior + log_z_prior + log_omega,
        }
    }

    /// log N(x | mean, 1/λ_v).
    #[inline]
    fn log_proposal(&self, x: f64, mean: f64) -> f64 {
        let d = (x - mean) / self.sd;
        -0.5 * d * d - self.sd.ln() - 0.5 * LN_2PI
    }

    /// The first step h* → h^s by T̃ (u, v, z), every v entry conditioned on moving.
    /// Returns log â, the estimated probability that every entry moves.
    fn leave_star(&mut self, star: &Star, samples: usize, rng: &mut StreamRng) -> f64 {
        let k = self.k;
        self.uc.draw_into(&star.v, &self.prior_mean, &mut self.noise, &mut self.state.u, rng);
        self.refresh_au();
        let mut log_acceptance = 0.0;
        for t in 0..k {
            let (n, l, mean) = (star.counts[t], star.later[t], self.au[t]);
            let propose = |rng: &mut StreamRng| mean + self.sd * std_normal(rng);
            if t + 1 == k || n + l == 0 {
                // The ratio is identically one: every proposal is accepted.
                self.state.v[t] = propose(rng);
                continue;
            }
            let current = star.v[t];
            let accepted: f64 = (0..samples).map(|_| entry_log_ratio(current, propose(rng), t, k, n, l).min(0.0).exp()).sum();
            log_acceptance += (accepted / samples as f64).ln();
            let mut best = (f64::NEG_INFINITY, current);
            let mut moved = None;
            for _ in 0..MAX_CONDITIONED_TRIALS {
                let x = propose(rng);
                let log_ratio = entry_log_ratio(current, x, t, k, n, l);
                if log_ratio >= 0.0 || rng.random::<f64>().ln() < log_ratio {
                    moved = Some(x);
                    break;
                }
                if log_ratio > best.0 {
                    best = (log_ratio, x);
                }
            }
            self.state.v[t] = moved.unwrap_or(best.1);
        }
        self.refresh_weights();
        self.draw_z(rng);
        log_acceptance
    }

    /// log T(h* ← current state): p(z* | v) · Π_k q(v*_k | (A u)_k) min(1, r_k) · p(u* | v*).
    fn log_transition_to(&self, star: &Star) -> f64 {
        let k = self.k;
        let st = &self.state;
        let mut log_t = star.log_omega + star.log_u_given_v;
        for (&n, &lp) in star.counts.iter().zip(&self.log_pi) {
            if n > 0 {
                log_t += n as f64 * lp;
            }
        }
        for (row, &c) in self.cumulative.chunks_exact(k).zip(&self.doc.term_count) {
            log_t -= c as f64 * row[k - 1].ln();
        }
        for t in 0..k {
            log_t += self.log_proposal(star.v[t], self.au[t]) + entry_log_ratio(st.v[t], star.v[t], t, k, star.counts[t], star.later[t]).min(0.0);
        }
        log_t
    }
}

/// argmax_x −λ/2 (x − m)² + n log σ(x) + l log σ(−x): the root of the decreasing
/// derivative −λ(x − m) + n σ(−x) − l σ(x), which lies in [m − l/λ, m + n/λ]; Newton
/// steps kept inside a shrinking bracket.
fn activation_mode(m: f64, lambda: f64, n: f64, l: f64, start: f64) -> f64 {
    let sigmoid = |x: f64| 1.0 / (1.0 + (-x).exp());
    let (mut lo, mut hi) = (m - l / lambda, m + n / lambda);
    let mut x = start.clamp(lo, hi);
    for _ in 0..100 {
        let s = sigmoid(x);
        let grad = -lambda * (x - m) + n * (1.0 - s) - l * s;
        if grad > 0.0 {
            lo = x;
        } else {
            hi = x;
        }
        let curvature = lambda + (n + l) * s * (1.0 - s);
        let mut next = x + grad / curvature;
        if !(next > lo && next < hi) {
            next = 0.5 * (lo + hi);
        }
        if (next - x).abs() < 1e-12 * (1.0 + x.abs()) {
            return next;
        }
        x = next;
    }
    x
}

/// Streaming log Σ exp(x_i).
#[derive(Default)]
struct LogSumExp {
    max: Option<f64>,
    sum: f64,
}

impl LogSumExp {
    fn add(&mut self, x: f64) {
        if x == f64::NEG_INFINITY {
            return;
        }
        match self.max {
            Some(m) if x <= m => self.sum += (x - m).exp(),
            Some(m) => {
                self.sum = self.sum * (m - x).exp() + 1.0;
                self.max = Some(x);
            }
            None => {
                self.max = Some(x);
                self.sum = 1.0;
            }
        }
    }

    fn value(&self) -> f64 {
        match self.max {
            Some(m) => m + self.sum.ln(),
            None => f64::NEG_INFINITY,
        }
    }
}
