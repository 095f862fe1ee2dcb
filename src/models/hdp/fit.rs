//! The memoized fit loop: passes over the batches, merges, progress and cancellation.
//!
//! Why it exists: it ties the local step, the memoized summary, the global step and the
//! moves together in the order of bnpy's `MemoVBMovesAlg`: before a pass, choose the
//! merge candidates (and a topic to propose deleting); visit every batch (local step,
//! summary replacement, global step, the proposal's local step); after the pass, decide the
//! delete, else try the merges; then the size reordering. The objective is recorded
//! after every visit once the summary covers every batch, so a test can check that it
//! never decreases.

use super::delete::{self, DeleteProposal};
use super::memo::Memo;
use super::merge::{candidate_pairs, merge_round, reorder_by_size};
use super::params::HdpParams;
use super::stick::StickPosterior;
use crate::corpus::DocTermMatrix;
use crate::models::{FitContext, FitError, Progress};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::time::Instant;

/// One pass, as reported in progress and kept with the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PassRecord {
    pub pass: usize,
    /// The objective after the pass and its moves.
    pub objective: f64,
    /// Active topics after the pass.
    pub topics: usize,
    pub merges_accepted: usize,
    pub merges_proposed: usize,
    /// Whether a delete proposal was accepted in this pass.
    pub deleted: bool,
    pub reordered: bool,
    /// Mean coordinate-ascent iterations per document.
    pub local_iterations: f64,
    pub seconds: f64,
}

/// The fitted global state.
#[derive(Debug, Clone)]
pub struct FitOutcome {
    pub num_topics: usize,
    /// λ + N_kw, topic-major (`K × V`).
    pub topic_word: Vec<f64>,
    pub stick: StickPosterior,
    /// N_k, expected tokens per topic.
    pub topic_tokens: Vec<f64>,
    pub passes: Vec<PassRecord>,
    /// The objective after every batch visit and every move, from the first moment the
    /// summary covers every batch.
    pub step_objectives: Vec<f64>,
    pub stick_fallbacks: usize,
    pub documents: usize,
}

/// Fit by memoized VI on the rows of `matrix`.
pub fn fit_memoized(matrix: &DocTermMatrix, num_terms: usize, p: &HdpParams, seed: u64, ctx: &FitContext) -> Result<FitOutcome, FitError> {
    let mut memo = Memo::new(matrix, num_terms, p, seed);
    let tokens = matrix.total_tokens().max(1) as f64;
    let mut passes: Vec<PassRecord> = Vec::new();
    let mut steps = Vec::new();
    let mut merges_total = 0usize;
    let (mut deletes_total, mut delete_rank) = (0usize, 0usize);
    for pass in 1..=p.passes {
        let started = Instant::now();
        let merging = p.merges_after(pass);
        let pairs = if merging { candidate_pairs(&memo.total, p.merge_pairs) } else { Vec::new() };
        if p.deletes_in(pass) && memo.num_topics() >= 2 {
            let topic = delete::choose_topic(&memo.total, delete_rank);
            memo.proposal = Some(DeleteProposal::new(&memo, topic));
        }
        let (mut iterations, mut documents) = (0usize, 0usize);
        for b in 0..memo.layouts.len() {
            if ctx.cancel.is_cancelled() {
                return Err(FitError::Cancelled);
            }
            let t = memo.visit(b, &pairs);
            iterations += t.iterations;
            documents += t.documents;
            if memo.complete() {
                steps.push(memo.objective().total());
            }
        }
        let deleted = match memo.proposal.take() {
            Some(proposal) => delete::decide(&mut memo, proposal),
            None => false,
        };
        if deleted {
            delete_rank = 0;
            deletes_total += 1;
            steps.push(memo.objective().total());
        } else if p.deletes_in(pass) {
            delete_rank += 1;
        }
        // The tracked pair statistics describe the state before an accepted delete.
        let round = if merging && !deleted { merge_round(&mut memo, &pairs) } else { Default::default() };
        if merging && !deleted {
            steps.push(round.objective);
        }
        let reordered = reorder_by_size(&mut memo);
        let objective = memo.objective().total();
        steps.push(objective);
        if !objective.is_finite() {
            return Err(FitError::Numerical(format!("objective is {objective} after pass {pass}")));
        }
        merges_total += round.accepted;
        let record = PassRecord {
            pass,
            objective,
            topics: memo.num_topics(),
            merges_accepted: round.accepted,
            merges_proposed: round.proposed,
            deleted,
            reordered,
            local_iterations: iterations as f64 / documents.max(1) as f64,
            seconds: started.elapsed().as_secs_f64(),
        };
        let mut diagnostics = serde_json::Map::new();
        diagnostics.insert("objective".into(), json!(objective));
        diagnostics.insert("objective_per_token".into(), json!(objective / tokens));
        diagnostics.insert("active_topics".into(), json!(record.topics));
        diagnostics.insert("seconds_per_pass".into(), json!(record.seconds));
        diagnostics.insert("merges_accepted".into(), json!(round.accepted));
        diagnostics.insert("merges_proposed".into(), json!(round.proposed));
        diagnostics.insert("merges_total".into(), json!(merges_total));
        diagnostics.insert("deleted".into(), json!(deleted));
        diagnostics.insert("deletes_total".into(), json!(deletes_total));
        diagnostics.insert("mean_local_iterations".into(), json!(record.local_iterations));
        diagnostics.insert("stick_fallbacks".into(), json!(memo.stick_fallbacks));
        (ctx.progress)(Progress { iteration: pass as u64, total: p.passes as u64, loglik_per_token: None, diagnostics });
        let previous = passes.last().map(|r| r.objective);
        passes.push(record);
        if let Some(prev) = previous {
            let settled =
                round.accepted == 0 && !deleted && !p.deletes_in(pass + 1) && !reordered && objective - prev <= p.convergence_tolerance * objective.abs();
            if settled && p.convergence_tolerance > 0.0 {
                break;
            }
        }
    }
    let k = memo.num_topics();
    let v = num_terms;
    let mut topic_word = vec![0.0; k * v];
    for w in 0..v {
        for t in 0..k {
            topic_word[t * v + w] = p.lambda + memo.total.word_topic[w * k + t].max(0.0);
        }
    }
    Ok(FitOutcome {
        num_topics: k,
        topic_word,
        stick: memo.stick.clone(),
        topic_tokens: memo.total.topic_counts.iter().map(|&n| n.max(0.0)).collect(),
        passes,
        step_objectives: steps,
        stick_fallbacks: memo.stick_fallbacks,
        documents: matrix.num_rows(),
    })
}
