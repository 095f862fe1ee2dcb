//! The delete move: a whole pass that also infers every document without one topic,
//! accepted only if the resulting exact objective beats the current one.
//!
//! Why it exists: merges only combine topics, so a topic that mixes two true topics (a
//! typical leftover of initialising from whole documents) can never be removed by them.
//! A delete proposal ([`super::proposal`]) removes topic k from a copy of the model at the
//! start of a pass: the other topics' q(φ) and sticks with k's expected weight spread over
//! the rest, every document warm-started from its counts without topic k, so k's tokens
//! go wherever the other topics explain them best.

use super::memo::Memo;
use super::proposal::Proposal;
use super::summary::Summary;
use crate::inference::stick_posterior::StickPosterior;

/// Propose deleting `topic` (K ≥ 2) from the current state.
pub fn propose(memo: &Memo, topic: usize) -> Proposal {
    let k = memo.num_topics();
    assert!(k >= 2 && topic < k, "delete {topic} of {k}");
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
    Proposal::new(&memo.total.without_topic(topic), memo.params.lambda, stick, doc_topic)
}

/// The topic to propose deleting: the `rank`-th smallest by expected tokens among the
/// topics from `protected` on (ranks cycle while proposals are rejected, so every such
/// topic gets its turn); `None` when every topic is protected.
pub fn choose_topic(total: &Summary, rank: usize, protected: usize) -> Option<usize> {
    let k = total.num_topics;
    let mut order: Vec<usize> = (protected..k).collect();
    order.sort_by(|&a, &b| total.topic_counts[a].total_cmp(&total.topic_counts[b]).then(a.cmp(&b)));
    (!order.is_empty()).then(|| order[rank % order.len()])
}
