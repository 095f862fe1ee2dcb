//! DCNT's and SCNT's kernels for the chain driver ([`crate::models::chain`]), and their
//! resumable state.
//!
//! Why it exists: `fit_dcnt` no longer owns a loop. This module is what the family
//! supplies to the driver: one Gibbs scan followed by the finiteness check of the global
//! parameters, the log joint, the posterior sums a kept scan adds to (with the last kept
//! A, η, λ_v and the thinned sample), and the encoding of everything the next scan
//! reads, so that a resumed chain continues bit for bit: the assignments z (n_dk, M_kw
//! and M_k are rebuilt from them exactly), every document's u_d and v_d, the global
//! parameters (A, η, μ, λ_f, λ_A, λ_v), the posterior sums and the last kept loadings.
//! Nothing else carries over from scan to scan: the v_d proposals are independence
//! draws from the prior (no adaptive scale), the u_d conditional and the topic swap's
//! A⁻¹ are factored afresh every scan, and the synchronisation blocks depend on the
//! corpus only.

use super::params::DcntParams;
use super::sample::{active_topics, DcntSample, Loadings};
use super::sampler::SYNC_TOKENS;
use super::state::{DcntState, Documents};
use super::stick::stick_weights;
use super::variant::Covariance;
use crate::models::causes::{NonFinite, Quantity};
use crate::models::chain::{Chain, Position, Schedule};
use crate::models::convergence::KeptTrace;
use crate::models::seeds::SeedPrior;
use crate::models::{FitError, RestoreError};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::ops::Range;

/// The chain driver's view of DCNT's parameters.
pub fn schedule(p: &DcntParams) -> Schedule {
    Schedule { iterations: p.iterations, burn_in: p.burn_in, thin: p.thin, loglik_every: p.loglik_every }
}

/// Running sums over kept scans.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct PosteriorSums {
    /// Ω, K̄ × V topic-major.
    pub omega: Vec<f64>,
    pub shares: Vec<f64>,
    /// π(v_d), D × K̄.
    pub proportions: Vec<f64>,
    pub a: Vec<f64>,
    pub eta: Vec<f64>,
    pub lambda_v: f64,
    pub acceptance: f64,
    pub kept: usize,
    /// A, η and λ_v of `keep_draws` scans spread evenly over every scan after burn-in
    /// ([`draw_due`]; not only the thinned, kept ones: the loadings are small, and the
    /// default 200 draws then need no more than 200 scans after burn-in).
    pub draws: Vec<Loadings>,
    pub keep_draws: usize,
    /// At every kept scan: the log joint per token, λ_v, λ_a and the topic shares
    /// sorted.
    pub trace: KeptTrace,
}

/// The precisions traced at every kept scan.
const TRACED: [&str; 2] = ["lambda_v", "lambda_a"];

impl PosteriorSums {
    /// Sums for K̄ topics, F features, V terms and D documents, keeping up to
    /// `keep_draws` draws of the loadings.
    fn new(k: usize, f: usize, v: usize, docs: usize, keep_draws: usize) -> Self {
        PosteriorSums {
            draws: Vec::new(),
            keep_draws,
            omega: vec![0.0; k * v],
            shares: vec![0.0; k],
            proportions: vec![0.0; docs * k],
            a: vec![0.0; k * k],
            eta: vec![0.0; f * k],
            lambda_v: 0.0,
            acceptance: 0.0,
            kept: 0,
            trace: KeptTrace::topic_model(&TRACED, k),
        }
    }

    /// Add the current state; `acceptance` is its scan's share of accepted v entries.
    pub fn add(&mut self, state: &DcntState, docs: &Documents, acceptance: f64) {
        let k = state.num_topics;
        self.kept += 1;
        for (s, x) in self.omega.iter_mut().zip(state.topic_word(docs.num_terms)) {
            *s += x;
        }
        let n = docs.num_tokens().max(1) as f64;
        for (s, &c) in self.shares.iter_mut().zip(&state.topic_totals) {
            *s += c as f64 / n;
        }
        for d in 0..docs.num_docs() {
            for (s, p) in self.proportions[d * k..(d + 1) * k].iter_mut().zip(stick_weights(&state.v[d * k..(d + 1) * k])) {
                *s += p;
            }
        }
        let g = &state.globals;
        self.a.iter_mut().zip(&g.a).for_each(|(s, x)| *s += x);
        self.eta.iter_mut().zip(&g.eta).for_each(|(s, x)| *s += x);
        self.lambda_v += g.lambda_v;
        self.acceptance += acceptance;
    }

    /// Whether every length fits K̄ topics, F features, V terms and D documents.
    fn fits(&self, k: usize, f: usize, v: usize, docs: usize) -> bool {
        let traced = self.trace.names == KeptTrace::topic_model(&TRACED, k).names && self.trace.is_consistent() && self.trace.draws() == self.kept;
        let lengths = [(self.omega.len(), k * v), (self.shares.len(), k), (self.proportions.len(), docs * k), (self.a.len(), k * k), (self.eta.len(), f * k)];
        let draws = self.draws.len() <= self.keep_draws && self.draws.iter().all(|d| d.a.len() == k * k && d.eta.len() == f * k);
        traced && draws && lengths.iter().all(|(got, want)| got == want)
    }
}

/// Whether scan `it` (1-based) is one whose loadings are kept as a draw: of the
/// N = iterations − burn-in scans after burn-in, min(`keep_draws`, N) spread evenly
/// (scan burn-in + s where ⌊s·m/N⌋ steps up), so the draws cover the whole kept part of
/// the chain whatever `thin` is.
pub fn draw_due(schedule: &Schedule, keep_draws: usize, it: usize) -> bool {
    let after = schedule.iterations.saturating_sub(schedule.burn_in);
    if it <= schedule.burn_in || it > schedule.iterations || after == 0 {
        return false;
    }
    let (s, m) = (it - schedule.burn_in, keep_draws.min(after));
    s * m / after > (s - 1) * m / after
}

/// A, η and λ_v as they are now.
fn loadings(state: &DcntState) -> Loadings {
    let g = &state.globals;
    Loadings { a: g.a.clone(), eta: g.eta.clone(), lambda_v: g.lambda_v }
}

/// A running DCNT or SCNT chain.
pub(super) struct DcntChain<'a> {
    docs: &'a Documents,
    blocks: Vec<Range<usize>>,
    schedule: Schedule,
    pub state: DcntState,
    pub sums: PosteriorSums,
    /// The last kept A, η and λ_v (the initial ones until a scan is kept).
    pub last: Loadings,
    /// The latest scan's share of accepted v entries.
    acceptance: f64,
}

/// Format version of [`SavedDcnt`] (4: draws of the loadings from every scan after
/// burn-in, not only kept ones; 3: the posterior sums keep the convergence trace; 2:
/// draws of the loadings; older checkpoints are rejected and their fit starts over).
const STATE_VERSION: u32 = 4;

/// What a DCNT checkpoint inside the chain carries (besides the driver's position).
#[derive(Serialize, Deserialize)]
struct SavedDcnt {
    version: u32,
    z: Vec<u16>,
    u: Vec<f64>,
    v: Vec<f64>,
    globals: super::globals::Globals,
    sums: PosteriorSums,
    last: Loadings,
}

/// [`SavedDcnt`] borrowed from a running chain, for encoding.
#[derive(Serialize)]
struct SavedDcntRef<'s> {
    version: u32,
    z: &'s [u16],
    u: &'s [f64],
    v: &'s [f64],
    globals: &'s super::globals::Globals,
    sums: &'s PosteriorSums,
    last: &'s Loadings,
}

fn all_finite(xs: &[f64]) -> bool {
    xs.iter().all(|x| x.is_finite())
}

/// Whether a K̄ × K̄ A has the family's form: any A for DCNT, zeros off the diagonal for
/// SCNT.
fn has_form(a: &[f64], k: usize, covariance: Covariance) -> bool {
    match covariance {
        Covariance::Full => true,
        Covariance::Diagonal => a.iter().enumerate().all(|(i, &x)| i / k == i % k || x == 0.0),
    }
}

impl<'a> DcntChain<'a> {
    /// A chain from the initialisation of [`DcntState::init`]; `stop` ends a collapsed
    /// start early (a cancelled job).
    pub fn new(p: &DcntParams, covariance: Covariance, docs: &'a Documents, prior: &SeedPrior, seed: u64, stop: &(dyn Fn() -> bool + Sync)) -> Self {
        let state = DcntState::init(docs, p.topics, covariance, p.priors, p.topic_swaps, p.warm_start, prior.clone(), seed, stop);
        let sums = PosteriorSums::new(p.topics, docs.num_features, docs.num_terms, docs.num_docs(), p.draws_per_chain());
        let last = loadings(&state);
        Self::assemble(p, docs, state, sums, last)
    }

    /// A chain from a started `state` (an update's, [`super::update`]).
    pub fn from_state(p: &DcntParams, docs: &'a Documents, state: DcntState) -> Self {
        let sums = PosteriorSums::new(p.topics, docs.num_features, docs.num_terms, docs.num_docs(), p.draws_per_chain());
        let last = loadings(&state);
        Self::assemble(p, docs, state, sums, last)
    }

    fn assemble(p: &DcntParams, docs: &'a Documents, state: DcntState, sums: PosteriorSums, last: Loadings) -> Self {
        DcntChain { docs, blocks: docs.blocks(SYNC_TOKENS), schedule: schedule(p), state, sums, last, acceptance: f64::NAN }
    }

    /// A chain continued from [`Chain::save`]'s bytes; every length, topic id and
    /// parameter is checked against the documents and `p`, so bad bytes are an error,
    /// not a panic.
    pub fn restore(
        p: &DcntParams,
        covariance: Covariance,
        docs: &'a Documents,
        prior: &SeedPrior,
        bytes: &[u8],
        position: &Position,
    ) -> Result<Self, RestoreError> {
        const WHAT: &str = "DCNT state";
        let s: SavedDcnt = postcard::from_bytes(bytes).map_err(|e| RestoreError::undecodable(WHAT, e))?;
        let (k, f, d) = (p.topics, docs.num_features, docs.num_docs());
        let g = &s.globals;
        // No chain gets near these magnitudes; beyond them the conditionals' sums of
        // squares overflow and the draws' distributions cannot be built.
        let positive = |x: f64| (1e-50..=1e50).contains(&x);
        let bounded = |xs: &[f64]| xs.iter().all(|x| x.abs() <= 1e50);
        let checks = [
            (s.version == STATE_VERSION, "state version"),
            (s.z.len() == docs.num_tokens() && s.z.iter().all(|&t| (t as usize) < k), "topic assignments"),
            (s.u.len() == d * k && s.v.len() == d * k && bounded(&s.u) && bounded(&s.v), "activations"),
            (g.num_topics == k && g.num_features == f, "global parameters' sizes"),
            (g.a.len() == k * k && bounded(&g.a) && has_form(&g.a, k, covariance), "A"),
            (g.eta.len() == f * k && bounded(&g.eta) && g.mu.len() == f && bounded(&g.mu), "η and μ"),
            (g.lambda_f.len() == f && g.lambda_f.iter().all(|&x| positive(x)) && positive(g.lambda_a) && positive(g.lambda_v), "precisions"),
            (s.sums.fits(k, f, docs.num_terms, d) && s.sums.kept == position.kept && s.sums.keep_draws == p.draws_per_chain(), "posterior sums"),
            (s.last.a.len() == k * k && s.last.eta.len() == f * k, "last kept loadings"),
        ];
        RestoreError::first_mismatch(WHAT, &checks)?;
        let mut state = DcntState {
            num_topics: k,
            covariance,
            priors: p.priors,
            z: s.z,
            doc_topic: vec![0; d * k],
            word_topic: vec![0; docs.num_terms * k],
            topic_totals: vec![0; k],
            u: s.u,
            v: s.v,
            globals: s.globals,
            topic_swaps: p.topic_swaps,
            seed_prior: prior.clone(),
        };
        state.recount(docs);
        Ok(Self::assemble(p, docs, state, s.sums, s.last))
    }
}

impl Chain for DcntChain<'_> {
    fn step(&mut self, seed: u64, iteration: usize) -> Result<Map<String, Value>, FitError> {
        let stats = self.state.scan(self.docs, &self.blocks, seed, iteration as u64).map_err(FitError::Numerical)?;
        let g = &self.state.globals;
        if !(g.lambda_v.is_finite() && g.lambda_a.is_finite() && all_finite(&g.a) && all_finite(&g.eta) && all_finite(&g.mu) && all_finite(&g.lambda_f)) {
            return Err(FitError::Numerical(NonFinite::at_scan(Quantity::GlobalParameters, iteration as u64)));
        }
        self.acceptance = stats.acceptance();
        if self.sums.draws.len() < self.sums.keep_draws && draw_due(&self.schedule, self.sums.keep_draws, iteration) {
            self.sums.draws.push(loadings(&self.state));
        }
        let n = self.docs.num_tokens().max(1) as f64;
        let kept = self.sums.kept + self.schedule.is_kept(iteration) as usize;
        let mut diagnostics = Map::new();
        diagnostics.insert("active_topics".into(), json!(active_topics(self.state.topic_totals.iter().map(|&c| c as f64 / n))));
        diagnostics.insert("mh_acceptance".into(), json!(stats.acceptance()));
        diagnostics.insert("swap_acceptance".into(), json!(stats.swap_acceptance()));
        diagnostics.insert("lambda_v".into(), json!(g.lambda_v));
        diagnostics.insert("lambda_a".into(), json!(g.lambda_a));
        diagnostics.insert("kept_scans".into(), json!(kept));
        Ok(diagnostics)
    }

    fn log_joint_per_token(&self) -> f64 {
        self.state.log_joint(self.docs) / self.docs.num_tokens().max(1) as f64
    }

    fn keep(&mut self, loglik_per_token: f64) -> Option<Vec<u8>> {
        self.sums.add(&self.state, self.docs, self.acceptance);
        let n = self.docs.num_tokens().max(1) as f64;
        let shares: Vec<f64> = self.state.topic_totals.iter().map(|&c| c as f64 / n).collect();
        let g = &self.state.globals;
        self.sums.trace.push_topic_model(loglik_per_token, &[g.lambda_v, g.lambda_a], &shares);
        self.last = loadings(&self.state);
        let sample = DcntSample::from_state(&self.state);
        Some(postcard::to_allocvec(&sample).expect("plain data encodes"))
    }

    fn save(&self) -> Vec<u8> {
        let s = &self.state;
        let saved = SavedDcntRef { version: STATE_VERSION, z: &s.z, u: &s.u, v: &s.v, globals: &s.globals, sums: &self.sums, last: &self.last };
        postcard::to_allocvec(&saved).expect("plain data encodes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// min(keep, N) draws over the N scans after burn-in, evenly: the last scan always,
    /// none during burn-in or past the end, and every scan when keep ≥ N.
    #[test]
    fn draws_spread_evenly_over_the_scans_after_burn_in() {
        let schedule = Schedule { iterations: 1_000, burn_in: 500, thin: 10, loglik_every: 10 };
        let due = |keep: usize| (0..=1_001).filter(|&it| draw_due(&schedule, keep, it)).collect::<Vec<_>>();
        let d200 = due(200);
        assert_eq!(d200.len(), 200);
        assert_eq!((d200[0], d200[199]), (503, 1_000));
        let gaps: Vec<usize> = d200.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(gaps.iter().all(|&g| g == 2 || g == 3), "{gaps:?}");
        assert_eq!(due(500), (501..=1_000).collect::<Vec<_>>());
        assert_eq!(due(900).len(), 500, "at most the scans after burn-in");
        assert_eq!(due(1), vec![1_000]);
        assert!(due(0).is_empty());
        let no_burn = Schedule { burn_in: 0, ..schedule };
        assert_eq!((0..=1_000).filter(|&it| draw_due(&no_burn, 4, it)).collect::<Vec<_>>(), vec![250, 500, 750, 1_000]);
    }
}
