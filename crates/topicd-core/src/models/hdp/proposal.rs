//! A proposed state that runs beside the current one for a whole pass, and replaces it
//! at the end only if its exact objective is higher: what the delete and birth moves
//! share.
//!
//! Why it exists: a move that changes the set of topics (one fewer, or one topic split
//! into fresh ones) cannot be scored from the current summaries; it needs every document
//! inferred under the proposed topics. A proposal holds its topics' q(φ) (fixed during the
//! pass), its sticks and its documents' counts (warm starts); during the pass every batch
//! also runs the local step under it. At the end its summaries form a valid variational
//! posterior of the proposed model; its objective (optimal q(φ), re-optimised sticks) is
//! exact, so accepting it only when higher keeps the objective from ever decreasing. The
//! price is a second local step on every batch during that pass, and one more for each
//! global and local step the proposal takes of its own before it is decided (a birth's
//! fresh topics settle in a fixed number; a delete is refined only until it wins).

use super::globals::{objective, TopicWord};
use super::local::{batch_local_step, cold_start_counts, BatchLayout, LocalGlobals};
use super::memo::Memo;
use super::params::HdpParams;
use super::summary::Summary;
use crate::corpus::DocTermMatrix;
use crate::inference::stick_posterior::{optimise_stick, StickPosterior};
use crate::ranks::Ranks;

/// A proposed set of topics being evaluated during a pass.
pub struct Proposal {
    /// The proposed topics' q(φ) expectations at the start of the pass.
    topic_word: TopicWord,
    /// The proposal's sticks at the start of the pass.
    stick: StickPosterior,
    batches: Vec<Option<Summary>>,
    /// Each batch's documents' counts over the proposed topics (warm starts).
    doc_topic: Vec<Vec<f64>>,
}

impl Proposal {
    /// A proposal of the topics whose counts are `topics` (a dense summary: only its
    /// `word_topic` is read), sticks `stick` and documents' starting counts `doc_topic`
    /// (one store per batch, rows over the proposed topics).
    pub fn new(topics: &Summary, lambda: f64, stick: StickPosterior, doc_topic: Vec<Vec<f64>>) -> Self {
        let k = topics.num_topics;
        assert_eq!(stick.num_topics(), k, "a stick per proposed topic");
        let batches = vec![None; doc_topic.len()];
        Proposal { topic_word: TopicWord::from_summary(topics, lambda), stick, batches, doc_topic }
    }

    pub fn num_topics(&self) -> usize {
        self.topic_word.num_topics
    }

    /// Restart the documents `restart(b, i)` selects (row i of batch b's store) from the
    /// proposal's global weights ([`cold_start_counts`]) instead of their counts.
    pub fn cold_start_where(&mut self, memo: &Memo, restart: impl Fn(usize, usize) -> bool) {
        let k = self.num_topics();
        let beta = self.stick.expected_beta();
        let p = memo.params;
        let g = LocalGlobals::new(p.alpha, &beta, &self.topic_word.elog_phi, &self.topic_word.exp_elog_phi, p.local_tolerance, p.local_iterations);
        for (b, layout) in memo.docs.layouts.iter().enumerate() {
            for (i, d) in layout.docs.clone().enumerate() {
                if restart(b, i) {
                    let (terms, counts) = memo.docs.matrix.row(d);
                    self.doc_topic[b][i * k..(i + 1) * k].copy_from_slice(&cold_start_counts(&g, terms, counts));
                }
            }
        }
    }

    /// The proposal's local step on batch `b`.
    pub fn visit(&mut self, b: usize, matrix: &DocTermMatrix, layout: &BatchLayout, p: &HdpParams, ranks: &dyn Ranks) {
        let beta = self.stick.expected_beta();
        let g = LocalGlobals::new(p.alpha, &beta, &self.topic_word.elog_phi, &self.topic_word.exp_elog_phi, p.local_tolerance, p.local_iterations);
        let (summary, _) = batch_local_step(&g, matrix, layout, &mut self.doc_topic[b], true, &[], ranks);
        self.batches[b] = Some(summary);
    }

    /// The proposal's whole-data summary (every batch visited).
    fn total(&self, num_terms: usize) -> Option<Summary> {
        let mut total = Summary::dense(num_terms, self.num_topics());
        for b in &self.batches {
            total.add_batch(b.as_ref()?, 1.0);
        }
        Some(total)
    }

    /// `sweeps` more global and local steps over every batch (the proposal's q(φ) and
    /// sticks from its own summaries first), so that fresh topics get to settle.
    pub fn refine(&mut self, memo: &Memo, sweeps: usize) {
        for _ in 0..sweeps {
            let Some(scored) = self.score(memo) else { return };
            self.step_from(scored, memo);
        }
    }

    /// The proposal as it stands: its whole-data summary, the global step from it and
    /// the exact objective there (`None` until every batch has been visited).
    fn score(&self, memo: &Memo) -> Option<Scored> {
        let total = self.total(memo.num_terms)?;
        let p = memo.params;
        let topic_word = TopicWord::from_summary(&total, p.lambda);
        let stick = optimise_stick(&total.stick_stats(), p.alpha, p.gamma, &self.stick).posterior;
        let objective = objective(&total, &topic_word, &stick, p.alpha, p.gamma).total();
        Some(Scored { total, topic_word, stick, objective })
    }

    /// The global step `scored` holds, then a local step over every batch.
    fn step_from(&mut self, scored: Scored, memo: &Memo) {
        self.topic_word = scored.topic_word;
        self.stick = scored.stick;
        for b in 0..self.batches.len() {
            self.visit(b, memo.docs.matrix, &memo.docs.layouts[b], memo.params, memo.ranks);
        }
    }
}

/// A proposal's whole-data summary, the global step from it, and its exact objective.
struct Scored {
    total: Summary,
    topic_word: TopicWord,
    stick: StickPosterior,
    objective: f64,
}

/// At the end of the pass: replace the current state by the proposal if its exact
/// objective is higher. Returns whether it did.
pub fn decide(memo: &mut Memo, proposal: Proposal) -> bool {
    decide_refining(memo, proposal, 0)
}

/// [`decide`], refining the proposal by up to `max_sweeps` more global and local steps
/// ([`Proposal::refine`]) while its objective is not yet higher than the current one:
/// it is accepted as soon as it is, and rejected if it still is not after the last.
pub fn decide_refining(memo: &mut Memo, mut proposal: Proposal, max_sweeps: usize) -> bool {
    let current = memo.objective().total();
    for sweep in 0..=max_sweeps {
        let Some(scored) = proposal.score(memo) else { return false };
        if scored.objective.is_finite() && scored.objective > current {
            memo.batches = proposal.batches;
            memo.doc_topic = proposal.doc_topic;
            memo.total = scored.total;
            memo.stick = scored.stick;
            memo.topic_word = scored.topic_word;
            return true;
        }
        if sweep < max_sweeps {
            proposal.step_from(scored, memo);
        }
    }
    false
}
