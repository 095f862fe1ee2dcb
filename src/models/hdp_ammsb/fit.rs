//! The memoized fit loop: initialise, then pass over the batches until the objective
//! stops rising.
//!
//! Why it exists: it orders the steps that make memoized variational inference a
//! coordinate ascent: for each batch b, the local step under the current globals
//! ([`super::local::local_step`]), the memo update total − old_b + new_b, and the global
//! step on the whole-data total ([`GlobalState::global_step`]). The objective
//! ([`super::objective`]) is evaluated after each full pass; during the first pass the
//! total covers only the batches visited so far, so the trace starts after pass 1 and
//! never decreases from there (up to float round-off).
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
use crate::models::{FitContext, FitError, Progress};
use serde_json::json;
use std::time::Instant;

/// Fit HDP-aMMSB to `graph`.
pub fn fit_ammsb(graph: &Graph, p: &AmmsbParams, seed: u64, ctx: &FitContext) -> Result<AmmsbModel, FitError> {
    let n = graph.num_nodes();
    if n < 2 {
        return Err(FitError::Numerical("a graph needs at least two nodes".into()));
    }
    fit_from_state(graph, p, initial_state(graph, p, seed), ctx)
}

/// Memoized passes from a given starting state (the fit proper; tests start it from
/// chosen states).
pub fn fit_from_state(graph: &Graph, p: &AmmsbParams, mut state: GlobalState, ctx: &FitContext) -> Result<AmmsbModel, FitError> {
    let n = graph.num_nodes();
    assert_eq!((state.num_nodes, state.num_communities), (n, p.communities), "state shaped for another graph or truncation");
    let layout = PairLayout::new(n, graph.directed, p.num_batches(n));
    let num_pairs = layout.num_pairs() as f64;
    let epsilon = p.epsilon_for(graph.num_edges(), layout.num_pairs());
    let mut memo = Memo::new(layout.num_batches(), n, p.communities);
    let mut trace: Vec<f64> = Vec::new();
    let mut stick_fallbacks = 0usize;
    let mut converged = false;
    for pass in 1..=p.passes {
        let started = Instant::now();
        let mut fell_back = false;
        for b in 0..layout.num_batches() {
            if ctx.cancel.is_cancelled() {
                return Err(FitError::Cancelled);
            }
            let weights = LocalWeights::new(&state, epsilon);
            memo.replace(b, local_step(graph, &layout, b, &weights));
            let report = state.global_step(memo.total(), p.alpha, p.gamma, p.tau1, p.tau0);
            if report.fell_back {
                fell_back = true;
                stick_fallbacks += 1;
            }
        }
        let value = objective(&state, memo.total(), p).total();
        if !value.is_finite() {
            return Err(FitError::Numerical(format!("the objective became {value} in pass {pass}")));
        }
        let gain = trace.last().map(|last| (value - last) / num_pairs);
        trace.push(value);
        let model_now = AmmsbModel::active_of(&state);
        let mut diagnostics = serde_json::Map::new();
        diagnostics.insert("objective".into(), json!(value));
        diagnostics.insert("active_communities".into(), json!(model_now.len()));
        diagnostics.insert("seconds_per_pass".into(), json!(started.elapsed().as_secs_f64()));
        diagnostics.insert("stick_fell_back".into(), json!(fell_back));
        (ctx.progress)(Progress { iteration: pass as u64, total: p.passes as u64, loglik_per_token: Some(value / num_pairs), diagnostics });
        if let Some(g) = gain {
            if g < p.tolerance {
                converged = true;
                break;
            }
        }
    }
    debug_assert!(memo.complete());
    Ok(AmmsbModel {
        version: ENCODING_VERSION,
        params: p.clone(),
        node_names: graph.nodes.clone(),
        directed: graph.directed,
        num_edges: graph.num_edges(),
        batches: layout.num_batches(),
        epsilon,
        state,
        objective_trace: trace,
        converged,
        stick_fallbacks,
    })
}
