//! The state a DCNT or SCNT edit's refit starts from: the parent's assignments drawn
//! again with the edit done on them, on the child's live topics.
//!
//! Why it exists: a user who merges, splits or deletes DCNT topics keeps every other
//! topic's id, name and words (issue 59). A stored DCNT model keeps posterior means, so
//! each training token's topic is drawn from the parent's posterior π̄_dk Ω̄_kw and moved
//! by the plan exactly as LDA's edit moves it ([`crate::models::edit_draws`]; a split's
//! restricted run under the collapsed start's α, [`super::warm_start::ALPHA`], and the
//! model's β). The chains then run on the live topics alone, in the child's order
//! (compact topic i is child topic `live()[i]`, so every kept topic keeps its place in
//! the stick order relative to the others), and the model is served in the child's slots
//! ([`crate::models::slotted`]): a retired topic takes no stick and no loading.
//! A parent that was itself edited is read in its own served ids (its retired slots
//! empty), which are the plan's.
//!
//! From the assignments the state is an update's: v_d from the smoothed proportions, u_d
//! drawn given v_d, A, η and the precisions from the prior ([`super::update`]).

use super::model::DcntModel;
use super::params::DcntParams;
use super::state::{DcntState, Documents};
use super::update::{started_state, token_words};
use super::variant::Covariance;
use super::warm_start::ALPHA;
use crate::corpus::lexicon::Lexicon;
use crate::models::edit_draws::{edited_assignments, ParentPosterior};
use crate::models::edits::{not_the_parent, EditPlan, SplitSeedTerms};
use crate::models::seeds::SeedPrior;
use crate::models::slots::Slots;
use crate::models::start_draws::TokenWords;
use crate::models::{EditStart, FitError};
use crate::rng::Purpose;

/// The parent and the plan an edited chain starts from.
pub(super) struct EditedStart {
    /// The parent's training documents' proportions, D × K_parent, in its served ids.
    theta: Vec<f64>,
    /// The parent's word distributions, K_parent × V, in its served ids.
    phi: Vec<f64>,
    beta: f64,
    plan: EditPlan,
    /// The child's topics; the chains run on the live ones.
    slots: Slots,
    /// Each split's seed words as term ids, by parent topic.
    split_words: Vec<SplitSeedTerms>,
}

impl EditedStart {
    /// The start of a refit of the stored `start.parent` edited by `start.plan`, for a
    /// fit of `covariance` whose training documents are `train` (corpus indices) and
    /// `docs`, over `lexicon`, its chains on the live topics of `slots` (the plan's child
    /// slots): an error naming `model` when the parent is not a model of this family
    /// fitted on those documents with the plan's topics.
    pub(super) fn new(
        start: &EditStart<'_>,
        (covariance, slots): (Covariance, Slots),
        (train, docs): (&[usize], &Documents),
        lexicon: &Lexicon,
    ) -> Result<Self, FitError> {
        let parent = DcntModel::decode_parent(start.parent)?;
        let parent_slots = parent.slots_or_all();
        let plan = start.plan;
        if parent.covariance != covariance {
            return Err(not_the_parent(&format!("it is a {} model", parent.covariance.family_name())));
        }
        if parent_slots.total() != plan.parent_topics() {
            return Err(not_the_parent("its topics are not the edit's"));
        }
        if parent.train_documents != train || parent.tokens != docs.num_tokens() as u64 || parent.num_terms != docs.num_terms {
            return Err(not_the_parent("its vocabulary or training documents differ"));
        }
        let v = parent.num_terms;
        let (kc, kp) = (parent_slots.live().len(), parent_slots.total());
        let mut phi = vec![0.0; kp * v];
        for (i, &slot) in parent_slots.live().iter().enumerate() {
            phi[slot * v..(slot + 1) * v].copy_from_slice(&parent.topic_word[i * v..(i + 1) * v]);
        }
        let theta = parent.document_proportions.chunks(kc).flat_map(|row| parent_slots.spread(row, 0.0)).collect();
        let split_words = plan.split_seed_terms(lexicon).map_err(FitError::Params)?;
        Ok(EditedStart { theta, phi, beta: parent.params.priors.beta, plan: plan.clone(), slots, split_words })
    }

    /// A chain's starting state on the live topics (`p`, from
    /// [`DcntParams::on_live_topics`]) of the training `docs`, from streams of `seed`.
    pub(super) fn state(&self, docs: &Documents, (p, covariance): (&DcntParams, Covariance), prior: SeedPrior, seed: u64) -> DcntState {
        let words = token_words(docs);
        let tokens = TokenWords { words: &words, doc_ptr: &docs.token_offsets, num_terms: docs.num_terms };
        let split_alpha = vec![ALPHA; self.plan.parent_topics()];
        let parent = ParentPosterior { theta: &self.theta, phi: &self.phi, split_alpha: &split_alpha, beta: self.beta };
        let child = edited_assignments(&self.plan, &self.split_words, parent, tokens, seed);
        // Child ids to compact ones: every token sits in a live topic.
        let z: Vec<u16> = child.into_iter().map(|t| self.slots.compact_of(t as usize).expect("no token in a retired topic") as u16).collect();
        started_state(docs, (p, covariance), prior, z, (seed, Purpose::EditStart))
    }
}
