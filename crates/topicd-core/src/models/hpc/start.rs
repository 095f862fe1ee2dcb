//! Where an HPC or PCM chain starts: HPC's own starting point, or an update's parent.
//!
//! Why it exists: an update keeps the parent's topics (labels for HPC, latent topics for
//! PCM) and should cost a fraction of a refit (issue 60). A stored HPC model keeps its
//! posterior means E[μ] (word-major, node 0 the root), η, λ² and the hyperparameters'
//! last values, which is what the rate and affinity blocks need to start near where the
//! parent ended:
//! - μ: the parent's E[μ] for its words and nodes; a new word (or a new PCM topic's
//!   node) starts as a fresh chain's (its smoothed frequency, [`HpcState::initial`]);
//! - (ψ, γ², ν, σ²), λ² and η: the parent's (a new PCM topic's η_k at 0, as PCM's);
//! - ξ: every document's from η as a fresh chain's (the parent keeps no ξ_d); the first
//!   affinity block draws them given the started rates.
//!
//! Every stage of the fit (first chains, the refit with validation documents) starts
//! from it, as a fit's stages start from [`HpcState::initial`].

use super::chain::HpcChain;
use super::data::HpcData;
use super::model::HpcModel;
use super::params::HpcParams;
use super::sampler::{initial_affinities, HpcState};
use super::variant::Supervision;
use crate::corpus::Corpus;
use crate::models::causes::{Internal, Stored};
use crate::models::{FitError, ParamError, UpdateStart};

/// The parent an update starts from, checked against the corpus and the fit's roles.
pub struct UpdatedStart {
    parent: HpcModel,
}

/// What a chain starts from.
#[derive(Clone, Copy)]
pub enum ChainStart<'a> {
    /// A fit's own starting point.
    Initial,
    /// An update's parent.
    Updated(&'a UpdatedStart),
}

impl ChainStart<'_> {
    /// The chain of seed `seed` on `data`.
    pub(super) fn chain<'d>(self, data: &'d HpcData, p: &'d HpcParams, seed: u64) -> HpcChain<'d> {
        match self {
            ChainStart::Initial => HpcChain::new(data, p, seed),
            ChainStart::Updated(from) => HpcChain::from_state(data, p, from.state(data, seed)),
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
        Ok(UpdatedStart { parent })
    }

    /// The chain's starting state on `data` (seed `seed` for what starts afresh).
    fn state(&self, data: &HpcData, seed: u64) -> HpcState {
        let parent = &self.parent;
        let mut state = HpcState::initial(data, seed);
        let (n, n_old) = (data.num_nodes(), parent.mu.len() / parent.num_terms.max(1));
        for f in 0..parent.num_terms.min(data.num_terms()) {
            for node in 0..n_old.min(n) {
                state.mu[f * n + node] = parent.mu[f * n_old + node] as f64;
            }
        }
        let s = &parent.summary;
        (state.psi, state.gamma2, state.nu, state.sigma2, state.lambda2) = (s.psi, s.gamma2, s.nu, s.sigma2, parent.lambda2);
        let kept = parent.eta.len().min(state.eta.len());
        state.eta[..kept].copy_from_slice(&parent.eta[..kept]);
        state.xi = initial_affinities(data, &state.eta);
        state
    }
}
