//! The delete move: a whole pass that also infers every document without one topic,
//! accepted only if the resulting exact objective beats the current one.
//!
//! Why it exists: merges only combine topics, so a topic that mixes two true topics (a
//! typical leftover of initialising from whole documents) can never be removed by them.
//! A delete proposal removes topic k from a copy of the model at the start of a pass: the
//! other topics' q(φ) (fixed during the pass) and sticks with k's expected weight spread
//! over the rest. During the pass every batch also runs the local step under the proposal,
//! warm-started from its documents' counts without topic k, so k's tokens go wherever the
//! other topics explain them best. At the end of the pass the proposal's summaries form a
//! valid variational posterior of the K − 1 topic model; its objective (optimal q(φ),
//! re-optimised sticks) is exact, and the proposal replaces the current state only if it is
//! higher. The price is a second local step on every batch during that pass.

use super::globals::{objective, TopicWord};
use super::local::{batch_local_step, BatchLayout, LocalGlobals};
use super::memo::Memo;
use super::params::HdpParams;
use super::summary::Summary;
use crate::corpus::DocTermMatrix;
use crate::inference::stick_posterior::{optimise_stick, StickPosterior};
use crate::ranks::Ranks;

/// A pending delete of one topic.
pub struct DeleteProposal {
    pub topic: usize,
    /// The other topics' q(φ) expectations at the start of the pass.
    topic_word: TopicWord,
    /// The proposal's sticks at the start of the pass.
    stick: StickPosterior,
    batches: Vec<Option<Summary>>,
    doc_topic: Vec<Vec<f64>>,
}

impl DeleteProposal {
    /// Propose deleting `topic` (K ≥ 2) from the current state.
    pub fn new(memo: &Memo, topic: usize) -> Self {
        let k = memo.num_topics();
        assert!(k >= 2 && topic < k, "delete {topic} of {k}");
        let topic_word = TopicWord::from_summary(&memo.total.without_topic(topic), memo.params.lambda);
        let mut beta = memo.stick.expected_beta();
        beta.remove(topic);
        let mut omega = memo.stick.omega.clone();
        omega.remove(topic);
        let stick = StickPosterior::from_expected_beta(&beta, omega);
        let doc_topic = memo
            .doc_topic
            .iter()
            .map(|store| store.chunks(k).flat_map(|row| row.iter().enumerate().filter(|&(t, _)| t != topic).map(|(_, &x)| x)).collect())
            .collect();
        DeleteProposal { topic, topic_word, stick, batches: vec![None; memo.docs.layouts.len()], doc_topic }
    }

    /// The proposal's local step on batch `b`.
    pub fn visit(&mut self, b: usize, matrix: &DocTermMatrix, layout: &BatchLayout, p: &HdpParams, ranks: &dyn Ranks) {
        let beta = self.stick.expected_beta();
        let g = LocalGlobals::new(p.alpha, &beta, &self.topic_word.elog_phi, &self.topic_word.exp_elog_phi, p.local_tolerance, p.local_iterations);
        let (summary, _) = batch_local_step(&g, matrix, layout, &mut self.doc_topic[b], true, &[], ranks);
        self.batches[b] = Some(summary);
    }
}

/// At the end of the pass: replace the current state by the proposal if its exact
/// objective is higher. Returns whether it did.
pub fn decide(memo: &mut Memo, proposal: DeleteProposal) -> bool {
    if proposal.batches.iter().any(Option::is_none) {
        return false;
    }
    let p = memo.params;
    let mut total = Summary::dense(memo.num_terms, memo.num_topics() - 1);
    for b in proposal.batches.iter().flatten() {
        total.add_batch(b, 1.0);
    }
    let topic_word = TopicWord::from_summary(&total, p.lambda);
    let fit = optimise_stick(&total.stick_stats(), p.alpha, p.gamma, &proposal.stick);
    let proposed = objective(&total, &topic_word, &fit.posterior, p.alpha, p.gamma).total();
    if !proposed.is_finite() || proposed <= memo.objective().total() {
        return false;
    }
    memo.batches = proposal.batches;
    memo.doc_topic = proposal.doc_topic;
    memo.total = total;
    memo.stick = fit.posterior;
    memo.topic_word = topic_word;
    true
}

/// The topic to propose deleting: the `rank`-th smallest by expected tokens (ranks cycle
/// while proposals are rejected, so every topic gets its turn).
pub fn choose_topic(total: &Summary, rank: usize) -> usize {
    let k = total.num_topics;
    let mut order: Vec<usize> = (0..k).collect();
    order.sort_by(|&a, &b| total.topic_counts[a].total_cmp(&total.topic_counts[b]).then(a.cmp(&b)));
    order[rank % k]
}
