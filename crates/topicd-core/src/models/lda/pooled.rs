//! Pooling the chains of a multi-chain LDA fit into one model.
//!
//! Why it exists: LDA's topics are exchangeable, so chain c's topic k is not another
//! chain's topic k, and chains may settle in different modes. The model serves the
//! topics of the chain the others agree with most ([`crate::models::consensus`]); every
//! other chain's topics are matched to it by their word distributions
//! ([`crate::models::chains::align_topics`]), and each topic's posterior means (φ, the
//! documents' θ, its share, its fitted α_k) are averaged, weighted by kept sweeps, over
//! the chains that found the same topic up to Monte Carlo error
//! ([`crate::models::consensus::chain_pools`]); θ and the shares are then renormalised.
//! Averaging every chain served blends of different topics below the true K, where
//! chains merge different pairs (decision 0072). The matching's distances are kept in
//! the model: a topic one chain found and another did not shows as a large distance. The convergence report compares the chains on
//! quantities no relabelling changes (the log joint, the hyperparameters, the sorted
//! shares).

use super::LdaModel;
use crate::models::chains;
use crate::models::consensus::{chain_pools, match_to_consensus_pinned};

/// One chain's model and trace ([`chains::ChainResult`]).
pub(super) type ChainResult = chains::ChainResult<LdaModel>;

/// The finished chains and the last one pooled: the reference chain's layout, every
/// array the kept-sweep-weighted mean over the chains that found each topic, every
/// chain's θ draws, the alignments and the convergence report of all chains.
pub(super) fn pool(finished: &[ChainResult], last: ChainResult) -> LdaModel {
    chains::pool(finished, last, |m| &mut m.convergence, merge)
}

/// Several chains' models (in chain order) as one.
fn merge(models: &[&LdaModel]) -> LdaModel {
    let first = models[0];
    let (k, v) = (first.params.topics, first.num_terms);
    let d = first.document_proportions.len() / k.max(1);
    // A seeded fit's seeded topics stay where their seeds put them in every chain.
    let seeded = first.params.seed_words.len();
    let word_rates: Vec<&[f64]> = models.iter().map(|m| m.word_rates.as_slice()).collect();
    let log_joint: Vec<f64> = models.iter().map(|m| m.final_loglik_per_token).collect();
    let (reference, alignments, targets) = match_to_consensus_pinned(&word_rates, &log_joint, k, v, seeded);
    let holds = |c: usize, b: usize| chain_pools(&alignments, reference, c, b);
    // Per topic, the kept sweeps of the chains pooled into it.
    let held_kept: Vec<f64> = (0..k).map(|b| (0..models.len()).filter(|&c| holds(c, b)).map(|c| models[c].kept_sweeps as f64).sum()).collect();
    let total_kept: usize = models.iter().map(|m| m.kept_sweeps).sum();
    let mut pooled = models[reference].clone();
    for x in pooled.word_rates.iter_mut().chain(&mut pooled.document_proportions).chain(&mut pooled.topic_shares).chain(&mut pooled.alpha) {
        *x = 0.0;
    }
    for (c, (m, to)) in models.iter().zip(&targets).enumerate() {
        for (a, &b) in to.iter().enumerate().filter(|&(_, &b)| holds(c, b)) {
            let weight = m.kept_sweeps as f64 / held_kept[b];
            for (x, y) in pooled.word_rates[b * v..(b + 1) * v].iter_mut().zip(&m.word_rates[a * v..(a + 1) * v]) {
                *x += weight * y;
            }
            for doc in 0..d {
                pooled.document_proportions[doc * k + b] += weight * m.document_proportions[doc * k + a];
            }
            pooled.topic_shares[b] += weight * m.topic_shares[a];
            pooled.alpha[b] += weight * m.alpha[a];
        }
    }
    for row in pooled.document_proportions.chunks_mut(k.max(1)).chain(std::iter::once(&mut pooled.topic_shares[..])) {
        let total: f64 = row.iter().sum();
        if total > 0.0 {
            row.iter_mut().for_each(|x| *x /= total);
        }
    }
    let chains = models.len() as f64;
    pooled.kept_sweeps = total_kept;
    pooled.final_loglik_per_token = models.iter().map(|m| m.final_loglik_per_token).sum::<f64>() / chains;
    pooled.mean_doc_topics = models.iter().map(|m| m.mean_doc_topics).sum::<f64>() / chains;
    pooled.beta = models.iter().map(|m| m.beta).sum::<f64>() / chains;
    // Every chain's θ draws, its columns moved to the reference's topics.
    pooled.theta_draws = models.iter().zip(&targets).flat_map(|(m, to)| m.theta_draws.iter().map(move |draw| chains::relabel_columns(draw, to))).collect();
    pooled.alignments = alignments;
    pooled.reference_chain = reference;
    pooled
}

#[cfg(test)]
#[path = "pooled_tests.rs"]
mod tests;
