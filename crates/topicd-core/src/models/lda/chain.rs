//! LDA's kernels for the chain driver ([`crate::models::chain`]), and its resumable
//! state.
//!
//! Why it exists: `fit_lda` no longer owns a loop. This module is what LDA supplies to
//! the driver: one sweep (the dense kernel's partitioned schedule for K ≤ 256, the
//! sparse kernel's blocks above) followed by the scheduled α/β re-estimation, the
//! collapsed log joint, the posterior sums a kept sweep adds to, and the encoding of
//! everything a checkpoint must carry to continue bit for bit: the assignments z (the
//! counts n_kw, n_k and the dense sampler's n_dk are rebuilt from them exactly), α_k and
//! β as fitted so far, the posterior sums, the sweep-cost sum and the number of
//! optimisations.

use super::hyper;
use super::partition::PartitionedSampler;
use super::sampler::{self, GibbsState, Snapshot, SweepStats};
use super::tokens::Tokens;
use super::LdaParams;
use crate::models::chain::{Chain, Position};
use crate::models::composition::DrawPlan;
use crate::models::convergence::KeptTrace;
use crate::models::seeds::{SeedPrior, SeedRamp};
use crate::models::{FitError, RestoreError};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// A thinned posterior sample: the topic-word counts, word-major and sparse.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TopicWordSample {
    pub num_topics: u32,
    /// `word_ptr[w]..word_ptr[w + 1]` indexes `topics`/`counts` for word w.
    pub word_ptr: Vec<u32>,
    pub topics: Vec<u16>,
    pub counts: Vec<u32>,
}

impl TopicWordSample {
    pub(super) fn from_state(state: &GibbsState) -> Self {
        let k = state.num_topics;
        let mut word_ptr = vec![0u32];
        let (mut topics, mut counts) = (Vec::new(), Vec::new());
        let n_kw = state.data_counts();
        for row in n_kw.chunks(k) {
            for (t, &n) in row.iter().enumerate().filter(|(_, &n)| n > 0) {
                topics.push(t as u16);
                counts.push(n);
            }
            word_ptr.push(topics.len() as u32);
        }
        TopicWordSample { num_topics: k as u32, word_ptr, topics, counts }
    }
}

/// Running sums of φ, θ and topic shares over the kept sweeps, and the convergence
/// trace of those sweeps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct PosteriorSums {
    /// Word-major `V × K`.
    pub phi: Vec<f64>,
    /// `D × K`.
    pub theta: Vec<f64>,
    pub shares: Vec<f64>,
    pub kept: usize,
    /// At each kept sweep: the log joint per token, α's sum and β when they are
    /// re-estimated, and the topic shares sorted.
    pub trace: KeptTrace,
    /// θ of `keep_draws` kept sweeps spread evenly over the chain's `kept_sweeps` (D × K,
    /// f32), for covariate effects by composition.
    pub theta_draws: Vec<Vec<f32>>,
    pub keep_draws: usize,
    pub kept_sweeps: usize,
}

/// How many θ draws a chain keeps, of how many kept sweeps: `keep_draws` shared by the
/// chains, fewer when the fit's draws would pass
/// [`crate::models::composition::THETA_DRAWS_BYTES`] or the chain keeps fewer sweeps.
pub(super) fn theta_draw_plan(params: &LdaParams, num_docs: usize) -> (usize, usize) {
    let s = params.schedule();
    let kept = (1..=s.iterations).filter(|&it| s.is_kept(it)).count();
    let plan = DrawPlan::new(params.keep_draws, params.chains, num_docs, params.topics, kept);
    (plan.keep, plan.kept)
}

impl PosteriorSums {
    /// Empty sums for `num_docs` documents (a shard's), with the θ-draw plan of a fit of
    /// `plan_docs` documents (the whole corpus').
    pub(super) fn new(params: &LdaParams, num_terms: usize, num_docs: usize, plan_docs: usize) -> Self {
        let k = params.topics;
        let (keep_draws, kept_sweeps) = theta_draw_plan(params, plan_docs);
        PosteriorSums {
            phi: vec![0.0; num_terms * k],
            theta: vec![0.0; num_docs * k],
            shares: vec![0.0; k],
            kept: 0,
            trace: trace_of(params),
            theta_draws: Vec::new(),
            keep_draws,
            kept_sweeps,
        }
    }

    /// Add a kept sweep: `tokens` are the documents of `self.theta` (a shard's, in a
    /// distributed fit), `num_tokens` the whole corpus' tokens.
    pub(super) fn add(&mut self, state: &GibbsState, tokens: &Tokens, num_tokens: usize) {
        self.kept += 1;
        state.add_word_rates(&mut self.phi);
        state.add_document_proportions(tokens, &mut self.theta);
        let n = num_tokens.max(1) as f64;
        for (s, &c) in self.shares.iter_mut().zip(state.n_k.iter()) {
            *s += c as f64 / n;
        }
        // Draw j is taken at kept sweep ⌊j · kept_sweeps / keep_draws⌋ (0-based): evenly
        // spread, and exactly `keep_draws` of them.
        let plan = DrawPlan { keep: self.keep_draws, kept: self.kept_sweeps };
        if plan.due(self.theta_draws.len(), self.kept) {
            let mut theta = vec![0.0; self.theta.len()];
            state.add_document_proportions(tokens, &mut theta);
            self.theta_draws.push(theta.into_iter().map(|x| x as f32).collect());
        }
    }

    /// Record the kept sweep's traced quantities.
    pub(super) fn trace(&mut self, params: &LdaParams, state: &GibbsState, num_tokens: usize, loglik_per_token: f64) {
        let n = num_tokens.max(1) as f64;
        let shares: Vec<f64> = state.n_k.iter().map(|&c| c as f64 / n).collect();
        let alpha_sum = state.alpha.iter().sum::<f64>();
        let scalars = [alpha_sum, state.beta];
        let traced = traced_scalars(params).len();
        self.trace.push_topic_model(loglik_per_token, &scalars[..traced], &shares);
    }
}

/// The scalar hyperparameters that move, and so are traced: α's sum when it is
/// re-estimated, and β too when it is.
fn traced_scalars(params: &LdaParams) -> &'static [&'static str] {
    match (params.optimize_interval > 0, params.optimize_beta) {
        (false, _) => &[],
        (true, false) => &["alpha_sum"],
        (true, true) => &["alpha_sum", "beta"],
    }
}

/// An empty trace of an LDA chain with these parameters.
pub(super) fn trace_of(params: &LdaParams) -> KeptTrace {
    KeptTrace::topic_model(traced_scalars(params), params.topics)
}

/// How sweeps are scheduled: the dense kernel's partitioned grid, or the sparse
/// kernel's blocks against a snapshot.
enum Sweeps {
    Partitioned(PartitionedSampler),
    Blocks(Snapshot),
}

impl Sweeps {
    fn for_state(tokens: &Tokens, state: &GibbsState) -> Self {
        if sampler::uses_dense_kernel(state.num_topics) {
            Sweeps::Partitioned(PartitionedSampler::new(tokens, state))
        } else {
            Sweeps::Blocks(Snapshot::new(tokens.num_terms, state.num_topics, true))
        }
    }
}

/// A running LDA chain.
pub(super) struct LdaChain<'a> {
    params: &'a LdaParams,
    tokens: &'a Tokens,
    pub state: GibbsState,
    sweeps: Sweeps,
    pub sums: PosteriorSums,
    /// Σ over sweeps of the mean non-zero document topics per token.
    pub doc_topics_sum: f64,
    /// α (and β) re-estimations so far.
    pub optimizations: usize,
    /// The seeds' prior through the sweeps (none without seeds).
    ramp: SeedRamp,
}

/// Format version of [`SavedLda`].
/// Version 2 added the convergence trace to the posterior sums; a version 1 checkpoint
/// is rejected (its fit starts over).
const STATE_VERSION: u32 = 2;

/// What an LDA checkpoint carries (besides the driver's position).
#[derive(Serialize, Deserialize)]
pub(super) struct SavedLda {
    version: u32,
    pub z: Vec<u32>,
    pub alpha: Vec<f64>,
    pub beta: f64,
    pub sums: PosteriorSums,
    pub doc_topics_sum: f64,
    pub optimizations: usize,
}

impl SavedLda {
    /// Decode a checkpoint's state and check it against a corpus of `num_tokens` tokens,
    /// `num_docs` documents and `num_terms` words and these parameters, so bad bytes are
    /// an error, not a panic.
    pub(super) fn decode_for(bytes: &[u8], params: &LdaParams, sizes: (usize, usize, usize), position: &Position) -> Result<Self, RestoreError> {
        const WHAT: &str = "LDA state";
        let s: SavedLda = postcard::from_bytes(bytes).map_err(|e| RestoreError::undecodable(WHAT, e))?;
        let (num_tokens, d, v) = sizes;
        let k = params.topics;
        let checks = [
            (s.version == STATE_VERSION, "state version"),
            (s.z.len() == num_tokens, "number of assignments"),
            (s.z.iter().all(|&t| (t as usize) < k), "topic ids"),
            // α_k = 0 is an edit's retired topic; some topic must be live.
            (s.alpha.len() == k && s.alpha.iter().all(|a| a.is_finite() && *a >= 0.0) && s.alpha.iter().any(|a| *a > 0.0), "α"),
            (s.beta.is_finite() && s.beta > 0.0, "β"),
            (s.sums.phi.len() == v * k && s.sums.theta.len() == d * k && s.sums.shares.len() == k, "posterior sums"),
            (s.sums.kept == position.kept && s.sums.trace.draws() == position.kept, "kept sweeps"),
            (s.sums.trace.names == trace_of(params).names && s.sums.trace.is_consistent(), "convergence trace"),
            (
                (s.sums.keep_draws, s.sums.kept_sweeps) == theta_draw_plan(params, d)
                    && s.sums.theta_draws.len() <= s.sums.keep_draws
                    && s.sums.theta_draws.iter().all(|t| t.len() == d * k),
                "kept topic-proportion draws",
            ),
            (s.optimizations <= position.iteration, "optimisations"),
        ];
        RestoreError::first_mismatch(WHAT, &checks)?;
        Ok(s)
    }
}

impl<'a> LdaChain<'a> {
    /// A chain from random initial assignments, without seeds.
    #[cfg(test)]
    pub fn new(params: &'a LdaParams, tokens: &'a Tokens, seed: u64) -> Self {
        Self::seeded(params, tokens, seed, SeedRamp::default())
    }

    /// A chain from random initial assignments under the seeds' `ramp` (empty: none).
    pub fn seeded(params: &'a LdaParams, tokens: &'a Tokens, seed: u64, ramp: SeedRamp) -> Self {
        let mut state = GibbsState::init(tokens, params.topics, params.alpha, params.beta, seed).with_seed_prior(ramp.after(0));
        state.start_from_seeds(tokens);
        let sums = PosteriorSums::new(params, tokens.num_terms, tokens.num_docs(), tokens.num_docs());
        Self::assemble(params, tokens, state, sums, 0.0, 0, ramp)
    }

    /// A chain from given assignments and α (an edit's start, [`super::edit`]) under the
    /// seeds' `prior`.
    pub fn from_start(params: &'a LdaParams, tokens: &'a Tokens, prior: SeedPrior, z: Vec<u32>, alpha: Vec<f64>, beta: f64) -> Self {
        let state = GibbsState::from_assignments(tokens, params.topics, z, alpha, beta).with_seed_prior(prior.clone());
        let sums = PosteriorSums::new(params, tokens.num_terms, tokens.num_docs(), tokens.num_docs());
        Self::assemble(params, tokens, state, sums, 0.0, 0, SeedRamp::none(prior))
    }

    fn assemble(
        params: &'a LdaParams,
        tokens: &'a Tokens,
        state: GibbsState,
        sums: PosteriorSums,
        doc_topics_sum: f64,
        optimizations: usize,
        ramp: SeedRamp,
    ) -> Self {
        let sweeps = Sweeps::for_state(tokens, &state);
        LdaChain { params, tokens, state, sweeps, sums, doc_topics_sum, optimizations, ramp }
    }

    /// A chain continued from [`Chain::save`]'s bytes; every length and topic id is
    /// checked against the corpus and parameters, so bad bytes are an error, not a panic.
    /// `ramp` is the fit's: a restored chain within it continues it (each sweep of the
    /// ramp sets its own prior).
    pub fn restore(params: &'a LdaParams, tokens: &'a Tokens, ramp: SeedRamp, bytes: &[u8], position: &Position) -> Result<Self, RestoreError> {
        let s = SavedLda::decode_for(bytes, params, (tokens.num_tokens(), tokens.num_docs(), tokens.num_terms), position)?;
        let state = GibbsState::from_assignments(tokens, params.topics, s.z, s.alpha, s.beta).with_seed_prior(ramp.after(position.iteration));
        Ok(Self::assemble(params, tokens, state, s.sums, s.doc_topics_sum, s.optimizations, ramp))
    }
}

impl Chain for LdaChain<'_> {
    fn step(&mut self, seed: u64, iteration: usize) -> Result<Map<String, Value>, FitError> {
        if let Some(prior) = self.ramp.at(iteration) {
            self.state.replace_seed_prior(prior);
        }
        let (state, tokens) = (&mut self.state, self.tokens);
        let stats = match &mut self.sweeps {
            Sweeps::Partitioned(sampler) => sampler.sweep(state, tokens, seed, iteration as u64),
            Sweeps::Blocks(snapshot) => state.sweep(tokens, snapshot, seed, iteration as u64),
        };
        self.doc_topics_sum += stats.mean_doc_topics();
        // As tomotopy: re-estimate after the sweep, so this sweep's log joint is taken at
        // the new α (and β).
        let optimized = self.params.optimizes_after(iteration).then(|| hyper::optimize(state, tokens, self.params.optimize_beta));
        self.optimizations += optimized.is_some() as usize;
        Ok(step_diagnostics(&stats, state, optimized))
    }

    fn log_joint_per_token(&self) -> f64 {
        self.state.log_joint(self.tokens) / self.tokens.num_tokens().max(1) as f64
    }

    fn keep(&mut self, loglik_per_token: f64) -> Option<Vec<u8>> {
        let n = self.tokens.num_tokens();
        self.sums.add(&self.state, self.tokens, n);
        self.sums.trace(self.params, &self.state, n, loglik_per_token);
        let sample = TopicWordSample::from_state(&self.state);
        Some(postcard::to_allocvec(&sample).expect("plain data encodes"))
    }

    fn save(&self) -> Vec<u8> {
        let s = &self.state;
        encode_state(&s.z, &s.alpha, s.beta, &self.sums, self.doc_topics_sum, self.optimizations)
    }
}

/// What a sweep reports in its progress: its work counts, and the new α and β when it
/// re-estimated them.
pub(super) fn step_diagnostics(stats: &SweepStats, state: &GibbsState, optimized: Option<hyper::OptimizeReport>) -> Map<String, Value> {
    let mut diagnostics = Map::new();
    diagnostics.insert("mean_doc_topics".into(), json!(stats.mean_doc_topics()));
    diagnostics.insert("smoothing_draws".into(), json!(stats.smoothing_draws));
    if let Some(report) = optimized {
        diagnostics.insert("alpha_sum".into(), json!(state.alpha.iter().sum::<f64>()));
        diagnostics.insert("alpha_steps".into(), json!(report.alpha_steps));
        diagnostics.insert("beta".into(), json!(state.beta));
    }
    diagnostics
}

/// The bytes of an LDA chain's checkpoint state ([`LdaChain::restore`] reads them).
pub(super) fn encode_state(z: &[u32], alpha: &[f64], beta: f64, sums: &PosteriorSums, doc_topics_sum: f64, optimizations: usize) -> Vec<u8> {
    #[derive(Serialize)]
    struct SavedRef<'s> {
        version: u32,
        z: &'s [u32],
        alpha: &'s [f64],
        beta: f64,
        sums: &'s PosteriorSums,
        doc_topics_sum: f64,
        optimizations: usize,
    }
    let saved = SavedRef { version: STATE_VERSION, z, alpha, beta, sums, doc_topics_sum, optimizations };
    postcard::to_allocvec(&saved).expect("plain data encodes")
}
