//! Pooling the chains of a multi-chain DCNT or SCNT fit into one model.
//!
//! Why it exists: two chains may put the same topic at different places in the stick
//! order, so chain c's topic k is not chain 0's topic k. Each later chain's topics are
//! matched to chain 0's by their word distributions
//! ([`crate::models::chains::align_topics`]) and the posterior means of what belongs to
//! a topic are averaged under that matching, weighted by kept scans: Ω, the topic
//! shares and the documents' proportions.
//!
//! The loadings (A, η, λ_v) are not averaged: a topic's row of A and column of η act
//! through its place in the stick order, which is the chain's own, so a permuted
//! average would be a different model. The model's point values (`mean`, `last`, which
//! prediction and the held-out estimator read) stay chain 0's, and every chain's draws
//! are kept as drawn, with the matching that maps a draw's expected shares onto the
//! model's topics ([`super::model::DcntModel::draw_topics`]); the effects, being
//! shares, pool exactly.
//!
//! The convergence report compares the chains on what no relabelling changes (the log
//! joint, λ_v, λ_A and the sorted shares).

use super::model::DcntModel;
use super::sample::active_topics;
use crate::models::chains::{self, match_to_first_pinned};

/// One chain's model and trace ([`chains::ChainResult`]).
pub(super) type ChainResult = chains::ChainResult<DcntModel>;

/// The finished chains and the last one pooled: chain 0's layout and loadings, Ω, the
/// shares and the proportions as kept-scan-weighted means of the aligned chains', every
/// chain's draws, the alignments and the convergence report of all chains.
pub(super) fn pool(finished: &[ChainResult], last: ChainResult) -> DcntModel {
    chains::pool(finished, last, |m| &mut m.convergence, merge)
}

/// Several chains' models (chain 0 first) as one.
fn merge(models: &[&DcntModel]) -> DcntModel {
    let reference = models[0];
    let (k, v) = (reference.params.topics, reference.num_terms);
    let d = reference.document_proportions.len() / k.max(1);
    // Seeded topics are pooled with themselves (topic i is seed i in every chain).
    let (alignments, targets) =
        match_to_first_pinned(&models.iter().map(|m| m.topic_word.as_slice()).collect::<Vec<_>>(), k, v, reference.params.seeds.topics.len());
    let total_kept: usize = models.iter().map(|m| m.kept_scans).sum();
    let mut pooled = reference.clone();
    for x in pooled.topic_word.iter_mut().chain(&mut pooled.document_proportions).chain(&mut pooled.topic_shares) {
        *x = 0.0;
    }
    pooled.mh_acceptance = 0.0;
    for (m, to) in models.iter().zip(&targets) {
        let weight = m.kept_scans as f64 / total_kept as f64;
        for (a, &b) in to.iter().enumerate() {
            for (x, y) in pooled.topic_word[b * v..(b + 1) * v].iter_mut().zip(&m.topic_word[a * v..(a + 1) * v]) {
                *x += weight * y;
            }
            for doc in 0..d {
                pooled.document_proportions[doc * k + b] += weight * m.document_proportions[doc * k + a];
            }
            pooled.topic_shares[b] += weight * m.topic_shares[a];
        }
        pooled.mh_acceptance += weight * m.mh_acceptance;
    }
    pooled.active_topics = active_topics(pooled.topic_shares.iter().copied());
    pooled.kept_scans = total_kept;
    pooled.final_loglik_per_token = models.iter().map(|m| m.final_loglik_per_token).sum::<f64>() / models.len() as f64;
    pooled.draws = models.iter().flat_map(|m| m.draws.iter().cloned()).collect();
    pooled.draws_per_chain = models.iter().map(|m| m.draws.len()).collect();
    pooled.alignments = alignments;
    pooled
}
