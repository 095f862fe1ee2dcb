//! The memoized fit: the HDP topic model's passes, run by the pass driver.
//!
//! Why it exists: it ties the local step, the memoized summary, the global step and the
//! moves together in the order of bnpy's `MemoVBMovesAlg`: before a pass, choose the
//! merge candidates (and a topic to propose deleting); visit every batch (local step,
//! summary replacement, global step, the proposal's local step); after the pass, decide the
//! delete, else try the merges; then the size reordering. The objective is recorded
//! after every visit once the summary covers every batch, so a test can check that it
//! never decreases. The loop around the passes (cancellation, progress, the stopping
//! rule, checkpoints and resume) is [`crate::models::passes`]'; this module gives it
//! [`HdpPasses`], including the checkpointed state: every batch's summary and their
//! total, each batch's document-topic counts, the sticks, the fallback, merge and
//! delete counters, the delete rank and the records so far (q(φ) is rebuilt from the
//! total exactly as the pass left it).

use super::birth::{self, FRESH_TOPICS};
use super::delete;
use super::globals::TopicWord;
use super::local::LocalTotals;
use super::memo::Memo;
use super::merge::{candidate_pairs, merge_round, reorder_by_size, MergeRound};
use super::params::HdpParams;
use super::proposal::{self, Proposal};
use super::summary::{PairStats, Summary};
use crate::corpus::DocTermMatrix;
use crate::inference::stick_posterior::StickPosterior;
use crate::models::passes::{self, Convergence, PassReport, Passes, Position};
use crate::models::{FitContext, FitError, RestoreError};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::time::Instant;

/// One pass as the model keeps it: what the pass did, without its wall-clock seconds
/// (which would make two fits of one seed differ in their bytes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PassSummary {
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
}

/// One pass as reported in progress and checkpointed: its summary and its wall-clock
/// seconds. Postcard writes a nested struct's fields in place, so this encodes as the
/// flat record checkpoints and version 3 models held.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PassRecord {
    pub summary: PassSummary,
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
    pub passes: Vec<PassSummary>,
    /// The objective after every batch visit and every move, from the first moment the
    /// summary covers every batch.
    pub step_objectives: Vec<f64>,
    pub stick_fallbacks: usize,
    pub documents: usize,
}

/// Fit by memoized VI on the rows of `matrix`.
pub fn fit_memoized(matrix: &DocTermMatrix, num_terms: usize, p: &HdpParams, seed: u64, ctx: &FitContext) -> Result<FitOutcome, FitError> {
    let mut fit = HdpPasses::new(matrix, num_terms, p, seed);
    passes::run(&mut fit, seed, ctx)?;
    Ok(fit.outcome())
}

/// What the passes have recorded so far, and the move counters that carry over from
/// pass to pass.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct Records {
    passes: Vec<PassRecord>,
    /// See [`FitOutcome::step_objectives`].
    steps: Vec<f64>,
    merges_total: usize,
    deletes_total: usize,
    /// The size rank of the next topic proposed for deletion (reset by an accepted delete).
    delete_rank: usize,
    births_total: usize,
    /// The size rank (largest first) of the next topic a birth targets (reset by an
    /// accepted birth).
    birth_rank: usize,
}

/// Passes in a row that were due a delete and accepted none, after which no more deletes
/// are proposed (bnpy's `d_nStuckBeforeQuit`): with a delete due every pass, a fit whose
/// topics have settled would otherwise pay for a rejected proposal (up to four more local
/// steps) in every pass and never stop early.
const DELETE_PATIENCE: usize = 10;

impl Records {
    /// Whether a delete is proposed in pass `pass` (the records hold the passes before
    /// it): when `p` schedules one, unless the last [`DELETE_PATIENCE`] passes that
    /// scheduled one accepted none.
    fn deletes_in(&self, p: &HdpParams, pass: usize) -> bool {
        if !p.deletes_in(pass) {
            return false;
        }
        let due = self.passes.iter().rev().filter(|r| p.deletes_in(r.summary.pass)).take(DELETE_PATIENCE);
        let (tried, accepted) = due.fold((0, false), |(n, any), r| (n + 1, any || r.summary.deleted));
        tried < DELETE_PATIENCE || accepted
    }
}

/// A move whose proposal runs beside the current state for a pass.
#[derive(Debug, Clone, Copy, PartialEq)]
enum ProposedMove {
    Delete,
    Birth,
}

/// What the moves at the end of a pass did.
struct Moves {
    deleted: bool,
    born: bool,
    merges: MergeRound,
    reordered: bool,
}

impl Moves {
    /// Whether a move was accepted (the objective's change then says nothing about
    /// convergence).
    fn changed_the_model(&self) -> bool {
        self.deleted || self.born || self.merges.accepted > 0 || self.reordered
    }
}

/// A running HDP fit: the memoized state and the records.
pub struct HdpPasses<'a> {
    memo: Memo<'a>,
    /// A delete or birth proposal being evaluated during the current pass.
    proposal: Option<(ProposedMove, Proposal)>,
    /// The fit's seed (births draw their fresh topics' starts from it).
    seed: u64,
    tokens: f64,
    records: Records,
}

impl<'a> HdpPasses<'a> {
    /// The fit's starting point ([`Memo::new`]).
    pub fn new(matrix: &'a DocTermMatrix, num_terms: usize, p: &'a HdpParams, seed: u64) -> Self {
        Self::over(Memo::new(matrix, num_terms, p, seed), seed)
    }

    /// The fit of seed `seed` from `memo`'s starting point (one rank's, over ranks).
    pub fn over(memo: Memo<'a>, seed: u64) -> Self {
        let tokens = memo.docs.num_tokens.max(1) as f64;
        HdpPasses { memo, proposal: None, seed, tokens, records: Records::default() }
    }

    /// The fitted global state.
    pub fn outcome(self) -> FitOutcome {
        let memo = self.memo;
        let (k, v, lambda) = (memo.num_topics(), memo.num_terms, memo.params.lambda);
        let mut topic_word = vec![0.0; k * v];
        for w in 0..v {
            for t in 0..k {
                topic_word[t * v + w] = lambda + memo.total.word_topic[w * k + t].max(0.0);
            }
        }
        FitOutcome {
            num_topics: k,
            topic_word,
            stick: memo.stick.clone(),
            topic_tokens: memo.total.topic_counts.iter().map(|&n| n.max(0.0)).collect(),
            passes: self.records.passes.into_iter().map(|r| r.summary).collect(),
            step_objectives: self.records.steps,
            stick_fallbacks: memo.stick_fallbacks,
            documents: memo.docs.num_docs,
        }
    }

    /// Before pass `pass`: the merge candidates to track (none unless merges follow this
    /// pass), and the delete or birth proposal that rides along, if one is due.
    fn prepare_moves(&mut self, pass: usize) -> Vec<(usize, usize)> {
        let memo = &mut self.memo;
        let p = memo.params;
        let pairs = if p.merges_after(pass) { candidate_pairs(&memo.total, p.merge_pairs, memo.protected) } else { Vec::new() };
        let k = memo.num_topics();
        let deletable = if k >= 2 { delete::choose_topic(&memo.total, self.records.delete_rank, memo.protected) } else { None };
        if let (true, Some(topic)) = (self.records.deletes_in(p, pass), deletable) {
            self.proposal = Some((ProposedMove::Delete, delete::propose(memo, topic)));
        } else if p.births_in(pass) {
            let topic = birth::choose_topic(&memo.total, self.records.birth_rank, memo.birth_baseline.as_deref());
            let fresh = FRESH_TOPICS.min(p.topics + 1 - k);
            self.proposal = birth::propose(memo, topic, fresh, self.seed, pass).map(|b| (ProposedMove::Birth, b));
        }
        pairs
    }

    /// Visit every batch in order, recording the objective once the summary covers all
    /// of them; `None` as soon as `stop` says so (part-way through the pass).
    fn visit_batches(&mut self, pairs: &[(usize, usize)], stop: &dyn Fn() -> bool) -> Option<LocalTotals> {
        let mut totals = LocalTotals::default();
        for b in 0..self.memo.docs.layouts.len() {
            if self.memo.ranks.agree(stop()) {
                return None;
            }
            let t = self.memo.visit(b, pairs);
            // The proposal's own local step on the batch just visited (it reads only the
            // batch, so after the current state's global step as before).
            if let Some((_, proposal)) = self.proposal.as_mut() {
                proposal.visit(b, self.memo.docs.matrix, &self.memo.docs.layouts[b], self.memo.params, self.memo.ranks);
            }
            totals.iterations += t.iterations;
            totals.documents += t.documents;
            if self.memo.complete() {
                self.records.steps.push(self.memo.objective().total());
            }
        }
        Some(totals)
    }

    /// After the batches of pass `pass`: decide the delete, else try the merges of
    /// `pairs`; then the size reordering.
    fn decide_moves(&mut self, pass: usize, pairs: &[(usize, usize)]) -> Moves {
        let (memo, records) = (&mut self.memo, &mut self.records);
        let p = memo.params;
        let (deleted, born) = match self.proposal.take() {
            Some((ProposedMove::Delete, proposal)) => (proposal::decide_refining(memo, proposal, delete::REFINE_SWEEPS), false),
            Some((ProposedMove::Birth, mut proposal)) => {
                proposal.refine(memo, birth::REFINE_SWEEPS);
                (false, proposal::decide(memo, proposal))
            }
            None => (false, false),
        };
        if deleted {
            records.delete_rank = 0;
            records.deletes_total += 1;
        } else if records.deletes_in(p, pass) {
            records.delete_rank += 1;
        }
        if born {
            records.birth_rank = 0;
            records.births_total += 1;
        } else if p.births_in(pass) {
            records.birth_rank += 1;
        }
        if deleted || born {
            records.steps.push(memo.objective().total());
        }
        // The tracked pair statistics describe the state before an accepted proposal.
        let merging = p.merges_after(pass) && !deleted && !born;
        let merges = if merging { merge_round(memo, pairs) } else { MergeRound::default() };
        if merging {
            records.steps.push(merges.objective);
        }
        records.merges_total += merges.accepted;
        let reordered = reorder_by_size(memo);
        Moves { deleted, born, merges, reordered }
    }

    /// The diagnostics a pass reports in progress.
    fn diagnostics(&self, record: &PassRecord) -> serde_json::Map<String, serde_json::Value> {
        let mut d = serde_json::Map::new();
        d.insert("objective".into(), json!(record.summary.objective));
        d.insert("objective_per_token".into(), json!(record.summary.objective / self.tokens));
        d.insert("active_topics".into(), json!(record.summary.topics));
        d.insert("seconds_per_pass".into(), json!(record.seconds));
        d.insert("merges_accepted".into(), json!(record.summary.merges_accepted));
        d.insert("merges_proposed".into(), json!(record.summary.merges_proposed));
        d.insert("merges_total".into(), json!(self.records.merges_total));
        d.insert("deleted".into(), json!(record.summary.deleted));
        d.insert("deletes_total".into(), json!(self.records.deletes_total));
        d.insert("births_total".into(), json!(self.records.births_total));
        d.insert("mean_local_iterations".into(), json!(record.summary.local_iterations));
        d.insert("stick_fallbacks".into(), json!(self.memo.stick_fallbacks));
        d
    }
}

impl Passes for HdpPasses<'_> {
    fn family(&self) -> &'static str {
        "hdp"
    }

    fn params_key(&self) -> Vec<u8> {
        postcard::to_allocvec(&self.memo.params).expect("plain data encodes")
    }

    fn max_passes(&self) -> usize {
        self.memo.params.passes
    }

    fn convergence(&self) -> Convergence {
        Convergence::RelativeGain { tolerance: self.memo.params.convergence_tolerance }
    }

    fn pass(&mut self, pass: usize, stop: &dyn Fn() -> bool) -> Option<PassReport> {
        let started = Instant::now();
        let pairs = self.prepare_moves(pass);
        let local = self.visit_batches(&pairs, stop)?;
        let moves = self.decide_moves(pass, &pairs);
        let objective = self.memo.objective().total();
        self.records.steps.push(objective);
        let summary = PassSummary {
            pass,
            objective,
            topics: self.memo.num_topics(),
            merges_accepted: moves.merges.accepted,
            merges_proposed: moves.merges.proposed,
            deleted: moves.deleted,
            reordered: moves.reordered,
            local_iterations: local.iterations as f64 / local.documents.max(1) as f64,
        };
        let record = PassRecord { summary, seconds: started.elapsed().as_secs_f64() };
        let diagnostics = self.diagnostics(&record);
        self.records.passes.push(record);
        let p = self.memo.params;
        let moves_pending = moves.changed_the_model() || self.records.deletes_in(p, pass + 1) || p.births_in(pass + 1);
        Some(PassReport { objective, moves_pending, loglik_per_token: None, diagnostics })
    }

    fn agree(&self, decision: bool) -> bool {
        self.memo.ranks.agree(decision)
    }

    /// Over ranks, the documents' counts are gathered to rank 0 in document order (the
    /// single-process state, so the checkpoint resumes over any number of ranks); the
    /// other ranks return nothing.
    fn save(&self) -> Vec<u8> {
        let m = &self.memo;
        let gathered;
        let doc_topic: &[Vec<f64>] = if m.ranks.size() == 1 {
            &m.doc_topic
        } else {
            let mine = postcard::to_allocvec(&m.doc_topic).expect("plain data encodes");
            let Some(parts) = m.ranks.gather_to_root(&mine) else { return Vec::new() };
            let mut whole: Vec<Vec<f64>> = vec![Vec::new(); m.doc_topic.len()];
            for part in parts {
                let rows: Vec<Vec<f64>> = postcard::from_bytes(&part).expect("a rank's counts decode");
                for (w, r) in whole.iter_mut().zip(rows) {
                    w.extend(r);
                }
            }
            gathered = whole;
            &gathered
        };
        let saved = SavedRef {
            version: STATE_VERSION,
            batches: &m.batches,
            doc_topic,
            total: &m.total,
            stick: &m.stick,
            stick_fallbacks: m.stick_fallbacks,
            records: &self.records,
        };
        postcard::to_allocvec(&saved).expect("plain data encodes")
    }

    fn restore(&mut self, state: &[u8], position: &Position) -> Result<(), RestoreError> {
        const WHAT: &str = "HDP state";
        let s: SavedHdp = postcard::from_bytes(state).map_err(|e| RestoreError::undecodable(WHAT, e))?;
        if let Some(part) = s.misfit(&self.memo, position) {
            return Err(RestoreError::Mismatch { what: WHAT, part });
        }
        let m = &mut self.memo;
        let k = s.total.num_topics;
        // This process' rows of each batch (all of them in one process).
        let doc_topic = if m.ranks.size() == 1 {
            s.doc_topic
        } else {
            s.doc_topic.iter().zip(m.docs.layouts.iter().zip(&m.docs.offsets)).map(|(all, (l, &at))| all[at * k..(at + l.docs.len()) * k].to_vec()).collect()
        };
        m.topic_word = TopicWord::from_summary(&s.total, m.params.lambda);
        m.batches = s.batches;
        m.doc_topic = doc_topic;
        m.total = s.total;
        m.stick = s.stick;
        m.stick_fallbacks = s.stick_fallbacks;
        self.proposal = None;
        self.records = s.records;
        Ok(())
    }
}

/// Format version of [`SavedHdp`].
const STATE_VERSION: u32 = 2;

/// What an HDP checkpoint carries (besides the driver's position). q(φ) is not in it:
/// at a pass boundary it is always [`TopicWord::from_summary`] of the total (the last
/// visit's global step, a delete, the merges' refresh and the reordering each leave it
/// so), which is recomputed on restore.
#[derive(Deserialize)]
struct SavedHdp {
    version: u32,
    batches: Vec<Option<Summary>>,
    doc_topic: Vec<Vec<f64>>,
    total: Summary,
    stick: StickPosterior,
    stick_fallbacks: usize,
    records: Records,
}

/// [`SavedHdp`] borrowed from a running fit (the same encoding).
#[derive(Serialize)]
struct SavedRef<'s> {
    version: u32,
    batches: &'s [Option<Summary>],
    doc_topic: &'s [Vec<f64>],
    total: &'s Summary,
    stick: &'s StickPosterior,
    stick_fallbacks: usize,
    records: &'s Records,
}

impl SavedHdp {
    /// The first thing that does not fit `memo`'s corpus and parameters, or the driver's
    /// `position`; `None` when everything does (so the fit cannot index out of bounds).
    fn misfit(&self, memo: &Memo, position: &Position) -> Option<&'static str> {
        let k = self.total.num_topics;
        let v = memo.num_terms;
        let r = &self.records;
        let dense = self.total.words.len() == v && self.total.words.iter().enumerate().all(|(i, &w)| w as usize == i);
        let layouts = &memo.docs.layouts;
        let batches_fit = self.batches.len() == layouts.len()
            && self.batches.iter().zip(layouts).all(|(b, layout)| b.as_ref().is_some_and(|b| b.num_topics == k && b.words == layout.words && shaped(b)));
        let doc_topic_fits = self.doc_topic.len() == layouts.len() && self.doc_topic.iter().zip(&memo.docs.batch_sizes).all(|(d, &n)| d.len() == n * k);
        let last = r.passes.last().map(|x| x.summary.objective.to_bits());
        let checks = [
            (self.version == STATE_VERSION, "state version"),
            (k >= 1 && k <= memo.params.topics, "number of topics"),
            (dense && shaped(&self.total), "whole-data summary"),
            (batches_fit, "batch summaries"),
            (doc_topic_fits, "document-topic counts"),
            (self.stick.rho.len() == k && self.stick.omega.len() == k, "sticks"),
            (r.passes.len() == position.pass && r.passes.iter().enumerate().all(|(i, x)| x.summary.pass == i + 1), "pass records"),
            (last == position.objective.map(f64::to_bits), "last objective"),
            (r.merges_total == r.passes.iter().map(|x| x.summary.merges_accepted).sum::<usize>(), "merge count"),
            (r.deletes_total == r.passes.iter().filter(|x| x.summary.deleted).count(), "delete count"),
        ];
        checks.iter().find(|(ok, _)| !ok).map(|(_, what)| *what)
    }
}

/// Whether a summary's arrays have the lengths its topic count and rows say, and its
/// tracked pairs name topics it has.
fn shaped(s: &Summary) -> bool {
    let k = s.num_topics;
    s.word_topic.len() == s.words.len() * k && s.topic_counts.len() == k && s.entropy.len() == k && s.sum_log_pi.len() == k + 1 && pairs_shaped(&s.pairs, k)
}

fn pairs_shaped(p: &PairStats, k: usize) -> bool {
    let n = p.pairs.len();
    p.entropy.len() == n && p.sum_log_pi.len() == n && p.local.len() == n && p.pairs.iter().all(|&(a, b)| a < b && b < k)
}
