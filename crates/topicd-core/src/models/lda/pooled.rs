//! Pooling the chains of a multi-chain LDA fit into one model.
//!
//! Why it exists: LDA's topics are exchangeable, so chain c's topic k is not chain 0's
//! topic k. Each later chain's topics are matched to chain 0's by their word
//! distributions ([`crate::models::chains::align_topics`]), permuted, and the posterior
//! means averaged, weighted by kept sweeps: φ, θ, the topic shares and the fitted α_k.
//! The matching's distances are kept in the model: a topic one chain found and another
//! did not shows as a large distance. The convergence report compares the chains on
//! quantities no relabelling changes (the log joint, the hyperparameters, the sorted
//! shares).

use super::LdaModel;
use crate::models::chains::{self, match_to_first_pinned};

/// One chain's model and trace ([`chains::ChainResult`]).
pub(super) type ChainResult = chains::ChainResult<LdaModel>;

/// The finished chains and the last one pooled: chain 0's layout, every array the
/// kept-sweep-weighted mean of the aligned chains', with the alignments and the
/// convergence report of all chains.
pub(super) fn pool(finished: &[ChainResult], last: ChainResult) -> LdaModel {
    chains::pool(finished, last, |m| &mut m.convergence, merge)
}

/// Several chains' models (chain 0 first) as one.
fn merge(models: &[&LdaModel]) -> LdaModel {
    let reference = models[0];
    let (k, v) = (reference.params.topics, reference.num_terms);
    let d = reference.document_proportions.len() / k.max(1);
    // A seeded fit's seeded topics stay where their seeds put them in every chain.
    let seeded = reference.params.seed_words.len();
    let (alignments, targets) = match_to_first_pinned(&models.iter().map(|m| m.word_rates.as_slice()).collect::<Vec<_>>(), k, v, seeded);
    let total_kept: usize = models.iter().map(|m| m.kept_sweeps).sum();
    let mut pooled = reference.clone();
    for x in pooled.word_rates.iter_mut().chain(&mut pooled.document_proportions).chain(&mut pooled.topic_shares).chain(&mut pooled.alpha) {
        *x = 0.0;
    }
    for (m, to) in models.iter().zip(&targets) {
        let weight = m.kept_sweeps as f64 / total_kept as f64;
        for (a, &b) in to.iter().enumerate() {
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
    let chains = models.len() as f64;
    pooled.kept_sweeps = total_kept;
    pooled.final_loglik_per_token = models.iter().map(|m| m.final_loglik_per_token).sum::<f64>() / chains;
    pooled.mean_doc_topics = models.iter().map(|m| m.mean_doc_topics).sum::<f64>() / chains;
    pooled.beta = models.iter().map(|m| m.beta).sum::<f64>() / chains;
    // Every chain's θ draws, later chains' columns moved to chain 0's topics.
    pooled.theta_draws = models.iter().zip(&targets).flat_map(|(m, to)| m.theta_draws.iter().map(move |draw| chains::relabel_columns(draw, to))).collect();
    pooled.alignments = alignments;
    pooled
}

#[cfg(test)]
#[path = "pooled_tests.rs"]
mod tests;
