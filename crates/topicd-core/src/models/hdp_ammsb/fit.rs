//! The memoized fit: initialise, then pass over the batches until the objective stops
//! rising, run by the pass driver.
//!
//! Why it exists: it orders the steps that make memoized variational inference a
//! coordinate ascent: for each batch b, the local step under the current globals
//! ([`super::local::local_step`]), the memo update total − old_b + new_b, and the global
//! step on the whole-data total ([`GlobalState::global_step`]). The objective
//! ([`super::objective`]) is evaluated after each full pass; during the first pass the
//! total covers only the batches visited so far, so the trace starts after pass 1 and
//! never decreases from there (up to float round-off). The loop around the passes
//! (cancellation, progress, the stopping rule, checkpoints and resume) is
//! [`crate::models::passes`]'; this module gives it [`AmmsbPasses`], whose checkpointed
//! state is the global posteriors, the memo (every batch's summary and their total),
//! the objective trace and the stick fallback count.
//!
//! The starting point is [`super::init::initial_state`].
//!
//! Progress after every pass: `loglik_per_token` = the objective per observed pair (a
//! lower bound on the log-likelihood per pair); diagnostics `objective`,
//! `active_communities`, `seconds_per_pass`, `stick_fell_back` (whether any stick refit
//! this pass fell back). Cancellation is polled before every batch.

use super::init::initial_state;
use super::local::{local_step, LocalWeights};
use super::model::{AmmsbModel, ENCODING_VERSION};
use super::objective::objective;
use super::pairs::PairLayout;
use super::params::AmmsbParams;
use super::state::GlobalState;
use super::summary::Memo;
use crate::graph::Graph;
use crate::models::passes::{self, Convergence, PassReport, Passes, Position};
use crate::models::{FitContext, FitError, RestoreError};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::time::Instant;

/// Fit HDP-aMMSB to `graph`.
pub fn fit_ammsb(graph: &Graph, p: &AmmsbParams, seed: u64, ctx: &FitContext) -> Result<AmmsbModel, FitError> {
    let n = graph.num_nodes();
    if n < 2 {
        return Err(FitError::InvalidInput(crate::models::causes::InvalidInput::TooFewNodes { nodes: n }));
    }
    fit_from_state(graph, p, initial_state(graph, p, seed), seed, ctx)
}

/// Memoized passes from a given starting state (the fit proper; tests start it from
/// chosen states). `seed` is the one the state was made with: it names the fit's
/// checkpoints.
pub fn fit_from_state(graph: &Graph, p: &AmmsbParams, state: GlobalState, seed: u64, ctx: &FitContext) -> Result<AmmsbModel, FitError> {
    let mut fit = AmmsbPasses::new(graph, p, state);
    let finish = passes::run(&mut fit, seed, ctx)?;
    Ok(fit.into_model(finish.converged))
}

/// A running HDP-aMMSB fit.
pub struct AmmsbPasses<'a> {
    graph: &'a Graph,
    params: &'a AmmsbParams,
    layout: PairLayout,
    /// Observed pairs, the unit of the stopping rule and of the reported objective.
    num_pairs: f64,
    epsilon: f64,
    state: GlobalState,
    memo: Memo,
    /// The objective after each pass.
    trace: Vec<f64>,
    stick_fallbacks: usize,
}

impl<'a> AmmsbPasses<'a> {
    /// A fit of `graph` from `state`.
    pub fn new(graph: &'a Graph, p: &'a AmmsbParams, state: GlobalState) -> Self {
        let n = graph.num_nodes();
        assert_eq!((state.num_nodes, state.num_communities), (n, p.communities), "state shaped for another graph or truncation");
        let layout = PairLayout::new(n, graph.directed, p.num_batches(n));
        let epsilon = p.epsilon_for(graph.num_edges(), layout.num_pairs());
        let memo = Memo::new(layout.num_batches(), n, p.communities);
        AmmsbPasses { graph, params: p, num_pairs: layout.num_pairs() as f64, layout, epsilon, state, memo, trace: Vec::new(), stick_fallbacks: 0 }
    }

    /// The stored model, `converged` as the driver found it.
    pub fn into_model(self, converged: bool) -> AmmsbModel {
        debug_assert!(self.memo.complete());
        AmmsbModel {
            version: ENCODING_VERSION,
            params: self.params.clone(),
            node_names: self.graph.nodes.clone(),
            directed: self.graph.directed,
            num_edges: self.graph.num_edges(),
            batches: self.layout.num_batches(),
            epsilon: self.epsilon,
            state: self.state,
            objective_trace: self.trace,
            converged,
            stick_fallbacks: self.stick_fallbacks,
        }
    }
}

impl Passes for AmmsbPasses<'_> {
    fn family(&self) -> &'static str {
        "hdp_ammsb"
    }

    fn params_key(&self) -> Vec<u8> {
        postcard::to_allocvec(self.params).expect("plain data encodes")
    }

    fn max_passes(&self) -> usize {
        self.params.passes
    }

    fn convergence(&self) -> Convergence {
        Convergence::GainPerUnit { tolerance: self.params.tolerance, units: self.num_pairs }
    }

    fn pass(&mut self, _pass: usize, stop: &dyn Fn() -> bool) -> Option<PassReport> {
        let p = self.params;
        let started = Instant::now();
        let mut fell_back = false;
        for b in 0..self.layout.num_batches() {
            if stop() {
                return None;
            }
            let weights = LocalWeights::new(&self.state, self.epsilon);
            self.memo.replace(b, local_step(self.graph, &self.layout, b, &weights));
            let report = self.state.global_step(self.memo.total(), p.alpha, p.gamma, p.tau1, p.tau0);
            if report.fell_back {
                fell_back = true;
                self.stick_fallbacks += 1;
            }
        }
        let value = objective(&self.state, self.memo.total(), p).total();
        self.trace.push(value);
        let mut diagnostics = serde_json::Map::new();
        diagnostics.insert("objective".into(), json!(value));
        diagnostics.insert("active_communities".into(), json!(AmmsbModel::active_of(&self.state).len()));
        diagnostics.insert("seconds_per_pass".into(), json!(started.elapsed().as_secs_f64()));
        diagnostics.insert("stick_fell_back".into(), json!(fell_back));
        Some(PassReport { objective: value, moves_pending: false, loglik_per_token: Some(value / self.num_pairs), diagnostics })
    }

    fn save(&self) -> Vec<u8> {
        let saved = SavedRef { version: STATE_VERSION, state: &self.state, memo: &self.memo, trace: &self.trace, stick_fallbacks: self.stick_fallbacks };
        postcard::to_allocvec(&saved).expect("plain data encodes")
    }

    fn restore(&mut self, bytes: &[u8], position: &Position) -> Result<(), RestoreError> {
        const WHAT: &str = "HDP-aMMSB state";
        let s: SavedAmmsb = postcard::from_bytes(bytes).map_err(|e| RestoreError::undecodable(WHAT, e))?;
        let (n, k) = (self.graph.num_nodes(), self.params.communities);
        let g = &s.state;
        let checks = [
            (s.version == STATE_VERSION, "state version"),
            (g.num_nodes == n && g.num_communities == k, "state shape"),
            (g.theta.len() == n * (k + 1) && g.link_on.len() == k && g.link_off.len() == k, "memberships and links"),
            (g.stick.rho.len() == k && g.stick.omega.len() == k, "sticks"),
            (s.memo.fits(self.layout.num_batches(), n, k) && s.memo.complete(), "memo"),
            (s.trace.len() == position.pass && s.trace.last().map(|x| x.to_bits()) == position.objective.map(f64::to_bits), "objective trace"),
        ];
        RestoreError::first_mismatch(WHAT, &checks)?;
        self.state = s.state;
        self.memo = s.memo;
        self.trace = s.trace;
        self.stick_fallbacks = s.stick_fallbacks;
        Ok(())
    }
}

/// Format version of [`SavedAmmsb`].
const STATE_VERSION: u32 = 1;

/// What an HDP-aMMSB checkpoint carries (besides the driver's position).
#[derive(Deserialize)]
struct SavedAmmsb {
    version: u32,
    state: GlobalState,
    memo: Memo,
    trace: Vec<f64>,
    stick_fallbacks: usize,
}

/// [`SavedAmmsb`] borrowed from a running fit (the same encoding).
#[derive(Serialize)]
struct SavedRef<'s> {
    version: u32,
    state: &'s GlobalState,
    memo: &'s Memo,
    trace: &'s [f64],
    stick_fallbacks: usize,
}
