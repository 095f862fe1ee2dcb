//! A PCM refit from an edit: the live topics sampled alone, started from the parent's
//! rates with the edit done on them, then put back in the child's slots.
//!
//! Why it exists: a user who merges, splits or deletes PCM topics keeps every other
//! topic's id, name and rates (issue 59). PCM's topics are Poisson rates and documents'
//! affinities, not token assignments, so the edit is done on the rates:
//! - a kept topic starts at the parent's E[μ_·k] and η_k;
//! - a merge's topic starts at the share-weighted mean of its topics' rates
//!   (β_f = Σ_t s_t β_ft / Σ_t s_t, which keeps each document's expected counts when its
//!   weights add up) and η = log Σ_t exp η_t;
//! - a split's parts start from a restricted run on the topic's expected counts
//!   ([`super::split_start`]), η_k plus the log of each part's weight;
//! - a deleted or merged-away topic is *retired*: left out of the fit altogether.
//!
//! The chains sample the live topics only and the model is put back in the child's K
//! slots afterwards ([`super::retired`]).
//!
//! The root's rates, (ψ, γ², ν, σ²) and λ² are the parent's. Each training document's
//! ξ starts from its weights fitted to its words under the parent's rates
//! ([`ParentFit`]), the edit done on them, and each word's τ² at its conditional mode
//! given the started rates ([`super::warm_start`], which says why).

use super::data::HpcData;
use super::model::HpcModel;
use super::sampler::HpcState;
use super::split_start::{divide, Part};
use super::variant::Supervision;
use super::warm_start::{affinities_of_weights, conditional_mode_tau2, ParentFit};
use crate::corpus::Corpus;
use crate::models::causes::{Internal, Stored};
use crate::models::edits::{not_the_parent, EditPlan, Fate, Origin, SplitSeedTerms};
use crate::models::slots::Slots;
use crate::models::{EditStart, FitError};
use crate::rng::{stream, Purpose};

/// The parent and the plan an edited PCM fit starts from.
pub struct EditedStart {
    parent: HpcModel,
    plan: EditPlan,
    /// The child's topics, the retired ones left out of the chains.
    slots: Slots,
    /// Each split's seed words as term ids, by parent topic: one list per part (empty
    /// for a split without seeds).
    split_words: Vec<SplitSeedTerms>,
}

impl EditedStart {
    /// The start of a refit of the stored `start.parent` edited by `start.plan`, on
    /// `corpus` with `training` training documents: an error naming `model` when the
    /// parent is not a PCM model of this corpus with the plan's topics.
    pub fn new(start: &EditStart<'_>, corpus: &Corpus, training: usize) -> Result<Self, FitError> {
        let parent = HpcModel::decode(start.parent).map_err(|e| FitError::Internal(Internal::Corrupt { what: Stored::Model, detail: e.to_string() }))?;
        if parent.supervision != Supervision::Unsupervised {
            return Err(not_the_parent("it is an HPC model"));
        }
        if parent.labels.len() != start.plan.parent_topics() {
            return Err(not_the_parent("its topics are not the edit's"));
        }
        if parent.num_terms != corpus.num_terms() || parent.summary.training_documents != training {
            return Err(not_the_parent("its vocabulary or training documents differ"));
        }
        let split_words = start.plan.split_seed_terms(&corpus.lexicon).map_err(FitError::Params)?;
        let slots = start.plan.child_slots();
        Ok(EditedStart { parent, plan: start.plan.clone(), slots, split_words })
    }

    /// The child's topics and which of them the chains sample.
    pub fn slots(&self) -> &Slots {
        &self.slots
    }

    /// A chain's starting state on the live topics of `data`, what is drawn afresh from
    /// streams of `seed`.
    pub(super) fn state(&self, data: &HpcData, seed: u64) -> HpcState {
        let parent = &self.parent;
        let (v, n, kp) = (data.num_terms(), data.num_nodes(), parent.labels.len());
        let np = kp + 1;
        let mut state = HpcState::initial(data, seed);
        let fitted = ParentFit::new(parent, data);
        let parts = self.split_parts(&fitted, data, seed);
        let parent_log_rate = |f: usize, t: usize| parent.mu[f * np + t + 1] as f64;
        for (i, &child) in self.slots.live().iter().enumerate() {
            let (column, eta): (Vec<f64>, f64) = match &self.plan.origins[child] {
                Origin::Kept => ((0..v).map(|f| parent_log_rate(f, child)).collect(), parent.eta[child]),
                Origin::Merged { topics } => {
                    let shares: Vec<f64> = topics.iter().map(|&t| parent.shares[t].max(1e-12)).collect();
                    let total: f64 = shares.iter().sum();
                    let mean_rate = |f: usize| topics.iter().zip(&shares).map(|(&t, s)| s * parent_log_rate(f, t).exp()).sum::<f64>() / total;
                    ((0..v).map(|f| mean_rate(f).ln()).collect(), topics.iter().map(|&t| parent.eta[t].exp()).sum::<f64>().ln())
                }
                Origin::Split { topic, part } => {
                    let p = &parts.iter().find(|(t, _)| t == topic).expect("every split is divided").1[*part];
                    (p.rates.iter().map(|r| r.max(f64::MIN_POSITIVE).ln()).collect(), parent.eta[*topic] + p.weight.ln())
                }
                Origin::Retired { .. } => unreachable!("live topics only"),
            };
            for (f, &m) in column.iter().enumerate() {
                state.mu[f * n + i + 1] = m;
            }
            state.eta[i] = eta;
        }
        for f in 0..v {
            state.mu[f * n] = parent.mu[f * np] as f64;
        }
        let s = &parent.summary;
        (state.psi, state.gamma2, state.nu, state.sigma2, state.lambda2) = (s.psi, s.gamma2, s.nu, s.sigma2, parent.lambda2);
        state.xi = self.affinities(&fitted, &parts, &state.eta);
        state.tau2 = conditional_mode_tau2(&state.mu, n, state.nu, state.sigma2);
        state
    }

    /// Each document's ξ over the live topics from its weights under the parent
    /// (`fitted`), the edit done on them: a kept topic's weight, a merge's summed, a split
    /// part's the topic's times the part's weight; a deleted topic's weight is dropped.
    /// ξ_d from those ([`affinities_of_weights`], around η's mean).
    fn affinities(&self, fitted: &ParentFit, parts: &[(usize, Vec<Part>)], eta: &[f64]) -> Vec<f64> {
        let kp = self.plan.parent_topics();
        let live = self.slots.live();
        let eta_mean = eta.iter().sum::<f64>() / eta.len() as f64;
        fitted
            .weights
            .chunks(kp)
            .flat_map(|theta| {
                let child: Vec<f64> = live
                    .iter()
                    .map(|&c| match &self.plan.origins[c] {
                        Origin::Kept => theta[c],
                        Origin::Merged { topics } => topics.iter().map(|&t| theta[t]).sum(),
                        Origin::Split { topic, part } => {
                            theta[*topic] * parts.iter().find(|(t, _)| t == topic).expect("every split is divided").1[*part].weight
                        }
                        Origin::Retired { .. } => unreachable!("live topics only"),
                    })
                    .collect();
                affinities_of_weights(&child, eta_mean)
            })
            .collect()
    }

    /// Each split topic's parts, by parent topic (one stream of `seed` per split).
    fn split_parts(&self, fitted: &ParentFit, data: &HpcData, seed: u64) -> Vec<(usize, Vec<Part>)> {
        self.split_words
            .iter()
            .filter_map(|(topic, words)| {
                let Fate::Split { parts, .. } = &self.plan.fates[*topic] else { return None };
                let mut rng = stream(seed, Purpose::EditStart, 0, *topic as u64);
                Some((*topic, divide(fitted, data, *topic, parts.len(), words, &mut rng)))
            })
            .collect()
    }
}
