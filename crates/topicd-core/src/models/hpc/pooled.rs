//! Pooling the chains of a multi-chain HPC or PCM fit into one model.
//!
//! Why it exists: a job with `chains` > 1 runs that many chains on the same documents
//! ([`crate::models::chains`]); the model is their posterior means together. HPC's
//! topics are the labels of the uploaded tree, so chain c's topic k is chain 0's topic
//! k and no matching is needed. PCM's latent topics are exchangeable: each later
//! chain's topics are matched to chain 0's by their word distributions (the expected
//! rates E[β] of a topic, normalised over the vocabulary;
//! [`crate::models::chains::match_to_first_pinned`], a seeded fit's seeded topics kept
//! in place).
//!
//! Averaged under the matching, weighted by kept scans: the frequency and exclusivity
//! tables, the posterior mean log rates μ (the root's column stays in place) and the
//! topic shares; the acceptance rates too, and the repair counts add up. Every chain's
//! θ draws are kept, relabelled. The affinity
//! prior's η and λ² and the last scan's hyperparameters in the summary are chain 0's
//! (they are the chain's state, not posterior means). The convergence report compares
//! the chains on the log-likelihood, the hyperparameters and the sorted shares, which
//! no relabelling changes.

use super::model::HpcModel;
use super::variant::Supervision;
use crate::models::chains::{self, match_to_first_pinned};

/// One chain's model and trace ([`chains::ChainResult`]).
pub(super) type ChainResult = chains::ChainResult<HpcModel>;

/// The finished chains and the last one pooled into one model with every chain's
/// convergence report.
pub(super) fn pool(finished: &[ChainResult], last: ChainResult) -> HpcModel {
    chains::pool(finished, last, |m| &mut m.convergence, merge)
}

/// Several chains' models (chain 0 first) as one.
fn merge(models: &[&HpcModel]) -> HpcModel {
    let reference = models[0];
    let (k, v) = (reference.labels.len(), reference.num_terms);
    let (alignments, targets) = match reference.supervision {
        Supervision::Labelled => (Vec::new(), vec![(0..k).collect::<Vec<usize>>(); models.len()]),
        Supervision::Unsupervised => {
            let distributions: Vec<Vec<f64>> = models.iter().map(|m| normalised_rows(&m.frequency, v)).collect();
            // A seeded fit's seeded topics stay where their seeds put them in every chain.
            match_to_first_pinned(&distributions.iter().map(Vec::as_slice).collect::<Vec<_>>(), k, v, reference.seeds.topics.len())
        }
    };
    let total_kept: usize = models.iter().map(|m| m.summary.kept_scans).sum();
    let mut pooled = reference.clone();
    let (mut frequency, mut exclusivity, mut exclusivity_all) = (vec![0.0f64; k * v], vec![0.0f64; k * v], vec![0.0f64; k * v]);
    let mut mu = vec![0.0f64; reference.mu.len()];
    pooled.shares.iter_mut().for_each(|x| *x = 0.0);
    let s = &mut pooled.summary;
    (s.rate_acceptance, s.affinity_acceptance) = (0.0, 0.0);
    (s.mode_hessian_repairs, s.mass_matrix_repairs, s.inactive_fallbacks) = (0, 0, 0);
    for (m, to) in models.iter().zip(&targets) {
        let weight = m.summary.kept_scans as f64 / total_kept as f64;
        for (a, &b) in to.iter().enumerate() {
            for (table, own) in [(&mut frequency, &m.frequency), (&mut exclusivity, &m.exclusivity), (&mut exclusivity_all, &m.exclusivity_all)] {
                for (x, &y) in table[b * v..(b + 1) * v].iter_mut().zip(&own[a * v..(a + 1) * v]) {
                    *x += weight * y as f64;
                }
            }
            pooled.shares[b] += weight * m.shares[a];
        }
        // μ is word-major over the K + 1 nodes, node 0 the root.
        for (row, own) in mu.chunks_mut(k + 1).zip(m.mu.chunks(k + 1)) {
            row[0] += weight * own[0] as f64;
            for (a, &b) in to.iter().enumerate() {
                row[b + 1] += weight * own[a + 1] as f64;
            }
        }
        let s = &mut pooled.summary;
        s.rate_acceptance += weight * m.summary.rate_acceptance;
        s.affinity_acceptance += weight * m.summary.affinity_acceptance;
        s.mode_hessian_repairs += m.summary.mode_hessian_repairs;
        s.mass_matrix_repairs += m.summary.mass_matrix_repairs;
        s.inactive_fallbacks += m.summary.inactive_fallbacks;
    }
    let to_f32 = |xs: Vec<f64>| xs.into_iter().map(|x| x as f32).collect::<Vec<f32>>();
    (pooled.frequency, pooled.exclusivity, pooled.exclusivity_all, pooled.mu) = (to_f32(frequency), to_f32(exclusivity), to_f32(exclusivity_all), to_f32(mu));
    let chains = models.len() as f64;
    pooled.summary.kept_scans = total_kept;
    pooled.summary.final_loglik_per_token = models.iter().map(|m| m.summary.final_loglik_per_token).sum::<f64>() / chains;
    pooled.summary.final_label_loglik = models.iter().map(|m| m.summary.final_label_loglik).sum::<f64>() / chains;
    // Every chain's θ draws, later chains' columns moved to chain 0's topics.
    pooled.theta_draws = models.iter().zip(&targets).flat_map(|(m, to)| m.theta_draws.iter().map(move |draw| chains::relabel_columns(draw, to))).collect();
    pooled.chains = models.len();
    pooled.alignments = alignments;
    pooled
}

/// Each `v`-long row of `table` divided by its sum (a topic's expected rates as a
/// distribution over words).
fn normalised_rows(table: &[f32], v: usize) -> Vec<f64> {
    table
        .chunks(v)
        .flat_map(|row| {
            let total: f64 = row.iter().map(|&x| x as f64).sum();
            row.iter().map(move |&x| if total > 0.0 { x as f64 / total } else { 0.0 })
        })
        .collect()
}
