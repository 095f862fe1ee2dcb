//! Pooling the chains of a multi-chain DCNT or SCNT fit into one model.
//!
//! Why it exists: two chains may put the same topic at different places in the stick
//! order, so chain c's topic k is not another chain's topic k, and two chains may find
//! different topics. The reference chain is the one the others agree with most
//! ([`crate::models::consensus`]); every other chain's topics are matched to it by
//! their word distributions, and a topic's posterior means (Ω, its share, the
//! documents' proportions of it) are averaged, weighted by kept scans, over the chains
//! that found it: the reference and every chain whose matched topic is the same topic
//! up to Monte Carlo error ([`crate::models::consensus::chain_pools`]). A chain that
//! settled on another topic there says nothing of this one, and averaging it in would
//! blur the served topic's words into the words every topic shares (decisions 0071,
//! 0072). The documents' proportions and the shares are then renormalised to sum to 1.
//! The effects' draws come from the chains that hold the topic at stability's looser
//! match ([`crate::models::consensus::chain_holds`]): their spread is part of the
//! topic's uncertainty.
//!
//! The loadings (A, η, λ_v) are not averaged: a topic's row of A and column of η act
//! through its place in the stick order, which is the chain's own, so a permuted
//! average would be a different model. The model's point values (`mean`, `last`, which
//! prediction and the held-out estimator read) stay the reference chain's, and every
//! chain's draws are kept as drawn, with the matching that maps a draw's expected
//! shares onto the model's topics ([`super::model::DcntModel::draw_topics`]); the
//! effects, being shares, pool exactly.
//!
//! The convergence report compares the chains on what no relabelling changes (the log
//! joint, λ_v, λ_A and the sorted shares).

use super::model::DcntModel;
use super::sample::active_topics;
use crate::models::chains;
use crate::models::consensus::{chain_pools, match_to_consensus_pinned};

/// One chain's model and trace ([`chains::ChainResult`]).
pub(super) type ChainResult = chains::ChainResult<DcntModel>;

/// The finished chains and the last one pooled: the reference chain's layout and
/// loadings, Ω, the shares and the proportions as kept-scan-weighted means over the
/// chains that found each topic, every chain's draws, the alignments and the convergence
/// report of all chains.
pub(super) fn pool(finished: &[ChainResult], last: ChainResult) -> DcntModel {
    chains::pool(finished, last, |m| &mut m.convergence, merge)
}

/// Several chains' models (in chain order) as one.
fn merge(models: &[&DcntModel]) -> DcntModel {
    let first = models[0];
    let (k, v) = (first.params.topics, first.num_terms);
    let d = first.document_proportions.len() / k.max(1);
    // Seeded topics are pooled with themselves (topic i is seed i in every chain).
    let word_rates: Vec<&[f64]> = models.iter().map(|m| m.topic_word.as_slice()).collect();
    let log_joint: Vec<f64> = models.iter().map(|m| m.final_loglik_per_token).collect();
    let (reference, alignments, targets) = match_to_consensus_pinned(&word_rates, &log_joint, k, v, first.params.seeds.topics.len());
    let holds = |c: usize, b: usize| chain_pools(&alignments, reference, c, b);
    // Per topic, the kept scans of the chains pooled into it.
    let held_kept: Vec<f64> = (0..k).map(|b| (0..models.len()).filter(|&c| holds(c, b)).map(|c| models[c].kept_scans as f64).sum()).collect();
    let total_kept: usize = models.iter().map(|m| m.kept_scans).sum();
    let mut pooled = models[reference].clone();
    for x in pooled.topic_word.iter_mut().chain(&mut pooled.document_proportions).chain(&mut pooled.topic_shares) {
        *x = 0.0;
    }
    pooled.mh_acceptance = 0.0;
    for (c, (m, to)) in models.iter().zip(&targets).enumerate() {
        for (a, &b) in to.iter().enumerate().filter(|&(_, &b)| holds(c, b)) {
            let weight = m.kept_scans as f64 / held_kept[b];
            for (x, y) in pooled.topic_word[b * v..(b + 1) * v].iter_mut().zip(&m.topic_word[a * v..(a + 1) * v]) {
                *x += weight * y;
            }
            for doc in 0..d {
                pooled.document_proportions[doc * k + b] += weight * m.document_proportions[doc * k + a];
            }
            pooled.topic_shares[b] += weight * m.topic_shares[a];
        }
        pooled.mh_acceptance += m.kept_scans as f64 / total_kept as f64 * m.mh_acceptance;
    }
    for row in pooled.document_proportions.chunks_mut(k.max(1)).chain(std::iter::once(&mut pooled.topic_shares[..])) {
        let total: f64 = row.iter().sum();
        if total > 0.0 {
            row.iter_mut().for_each(|x| *x /= total);
        }
    }
    pooled.active_topics = active_topics(pooled.topic_shares.iter().copied());
    pooled.kept_scans = total_kept;
    pooled.final_loglik_per_token = models.iter().map(|m| m.final_loglik_per_token).sum::<f64>() / models.len() as f64;
    pooled.draws = models.iter().flat_map(|m| m.draws.iter().cloned()).collect();
    pooled.draws_per_chain = models.iter().map(|m| m.draws.len()).collect();
    pooled.alignments = alignments;
    pooled.reference_chain = reference;
    pooled
}
