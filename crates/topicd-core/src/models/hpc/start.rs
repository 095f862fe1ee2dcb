//! Where an HPC or PCM chain starts: HPC's own starting point, an update's parent, or
//! an edit's ([`super::edit`]).
//!
//! Why it exists: an update keeps the parent's topics (labels for HPC, latent topics for
//! PCM) and should cost a fraction of a refit (issue 60). A stored HPC model keeps its
//! posterior means E[μ] (word-major, node 0 the root), η, λ² and the hyperparameters'
//! last values, which is what the rate and affinity blocks need to start near where the
//! parent ended:
//! - μ: the parent's E[μ] for its words and nodes; a new word (or a new PCM topic's
//!   node) starts as a fresh chain's (its smoothed frequency, [`HpcState::initial`]);
//! - (ψ, γ², ν, σ²), λ² and η: the parent's (a new PCM topic's η_k at 0, as PCM's);
//! - ξ: HPC's every document's from η as a fresh chain's (the parent keeps no ξ_d; the
//!   first affinity block draws them given the started rates); PCM's from each
//!   document's weights fitted under the started rates (the new topics' too), and τ² at
//!   its conditional mode, as an edit's refit starts ([`super::warm_start`]).
//!
//! Every stage of the fit (first chains, the refit with validation documents) starts
//! from it, as a fit's stages start from [`HpcState::initial`].

use super::chain::HpcChain;
use super::data::HpcData;
use super::edit::EditedStart;
use super::model::HpcModel;
use super::params::HpcParams;
use super::sampler::{initial_affinities, HpcState};
use super::variant::Supervision;
use super::warm_start::{affinities_of_weights, conditional_mode_tau2, ParentFit};
use crate::corpus::Corpus;
use crate::models::causes::{Internal, Stored};
use crate::models::slots::Slots;
use crate::models::{FitError, ParamError, UpdateStart};

/// The parent an update starts from, checked against the corpus and the fit's roles.
pub struct UpdatedStart {
    parent: HpcModel,
    supervision: Supervision,
    /// The child's topics: the parent's (an edited parent's retired ones stay retired,
    /// [`super::retired`]) and the new ones.
    slots: Slots,
}

/// What a chain starts from.
#[derive(Clone, Copy)]
pub enum ChainStart<'a> {
    /// A fit's own starting point.
    Initial,
    /// An update's parent.
    Updated(&'a UpdatedStart),
    /// An edit's parent, on the live topics ([`super::edit`]).
    Edited(&'a EditedStart),
}

impl ChainStart<'_> {
    /// The chain of seed `seed` on `data`.
    pub(super) fn chain<'d>(self, data: &'d HpcData, p: &'d HpcParams, seed: u64) -> HpcChain<'d> {
        match self {
            ChainStart::Initial => HpcChain::new(data, p, seed),
            ChainStart::Updated(from) => HpcChain::from_state(data, p, from.state(data, seed)),
            ChainStart::Edited(from) => HpcChain::from_state(data, p, from.state(data, seed)),
        }
    }
}

fn mismatch(why: &str) -> FitError {
    FitError::Params(ParamError::new("corpus_id", format!("the parent model was not fitted on this corpus' first documents: {why}")))
}

impl UpdatedStart {
    /// The start of an update from the stored `start.parent` on `corpus` under the
    /// update's params `p`, whose first `start.parent_documents` documents have
    /// `parent_roles` training, validation, test and unlabelled documents (drawn with
    /// `start.split_seed`): an error naming
    /// `corpus_id` when the parent is of the other variant, has another label tree (HPC)
    /// or other topics (PCM), or its documents are not the corpus' first ones on the
    /// same sides of the split.
    pub fn new(start: &UpdateStart<'_>, corpus: &Corpus, p: &HpcParams, supervision: Supervision, parent_roles: [usize; 4]) -> Result<Self, FitError> {
        let parent = HpcModel::decode(start.parent).map_err(|e| FitError::Internal(Internal::Corrupt { what: Stored::Model, detail: e.to_string() }))?;
        if parent.supervision != supervision {
            return Err(mismatch("it is of the other variant"));
        }
        let same_topics = match supervision {
            Supervision::Labelled => parent.labels == corpus.labels.names,
            Supervision::Unsupervised => parent.params.topics + start.new_topics == p.topics,
        };
        if !same_topics {
            return Err(mismatch("its labels (or topics) are not the update's"));
        }
        let s = &parent.summary;
        // A refit's rates are fitted on the training and validation documents together.
        let [train, validation, test, unlabelled] = parent_roles;
        let fitted_on = if parent.refitted_with_validation { train + validation } else { train };
        let fits = start.parent_documents <= corpus.num_documents()
            && parent.num_terms <= corpus.num_terms()
            && [fitted_on, validation, test, unlabelled] == [s.training_documents, s.validation_documents, s.test_documents, s.unlabelled_documents];
        if !fits {
            return Err(mismatch("its documents or their sides of the held-out split differ"));
        }
        // HPC's topics are its labels (`p.topics` is PCM's alone); PCM keeps an edited
        // parent's retired slots retired.
        let slots = match supervision {
            Supervision::Labelled => Slots::retiring(&[], parent.labels.len()),
            Supervision::Unsupervised => Slots::retiring(&parent.retired_slots(), p.topics),
        };
        Ok(UpdatedStart { parent, supervision, slots })
    }

    /// The child's topics and which of them the chains sample.
    pub fn slots(&self) -> &Slots {
        &self.slots
    }

    /// The chain's starting state on `data` (seed `seed` for what starts afresh).
    fn state(&self, data: &HpcData, seed: u64) -> HpcState {
        let parent = &self.parent;
        let mut state = HpcState::initial(data, seed);
        let (n, n_old) = (data.num_nodes(), parent.mu.len() / parent.num_terms.max(1));
        // Compact node i + 1 is child topic live[i], the parent's node live[i] + 1 when
        // the parent has it (a new topic starts afresh).
        let nodes: Vec<(usize, usize)> =
            std::iter::once((0, 0)).chain(self.slots.live().iter().enumerate().map(|(i, &t)| (i + 1, t + 1))).filter(|&(c, o)| c < n && o < n_old).collect();
        for f in 0..parent.num_terms.min(data.num_terms()) {
            for &(node, old) in &nodes {
                state.mu[f * n + node] = parent.mu[f * n_old + old] as f64;
            }
        }
        let s = &parent.summary;
        (state.psi, state.gamma2, state.nu, state.sigma2, state.lambda2) = (s.psi, s.gamma2, s.nu, s.sigma2, parent.lambda2);
        let k = state.eta.len();
        for (i, &t) in self.slots.live().iter().enumerate().filter(|&(i, &t)| i < k && t < parent.eta.len()) {
            state.eta[i] = parent.eta[t];
        }
        match self.supervision {
            Supervision::Labelled => state.xi = initial_affinities(data, &state.eta),
            Supervision::Unsupervised => {
                let (v, k) = (data.num_terms(), n - 1);
                let rates: Vec<f64> = state.mu.chunks(n).flat_map(|row| row[1..].iter().map(|m| m.exp())).collect();
                let fitted = ParentFit::of_rates(rates, v, &state.eta, data);
                let eta_mean = state.eta.iter().sum::<f64>() / k as f64;
                state.xi = fitted.weights.chunks(k).flat_map(|theta| affinities_of_weights(theta, eta_mean)).collect();
                state.tau2 = conditional_mode_tau2(&state.mu, n, state.nu, state.sigma2);
            }
        }
        state
    }
}
