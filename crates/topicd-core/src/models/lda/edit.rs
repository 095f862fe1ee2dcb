//! The state an LDA edit's refit starts from: the parent's assignments rebuilt, the
//! edit done on them ([`crate::models::edit_draws`], shared with DCNT/SCNT), and the
//! child's α.
//!
//! Why it exists: a stored LDA model keeps posterior means (φ, the training documents'
//! θ), not its last assignments; this module checks the parent against the training
//! tokens and hands its posterior to the shared draws (a split's restricted run under
//! the split topic's α_k and the parent's β).
//!
//! Retired topics start empty with α_k = 0, so no sweep can put a token there. The chain
//! then runs as any LDA chain.

use super::model::LdaModel;
use super::tokens::Tokens;
use crate::corpus::lexicon::Lexicon;
use crate::models::edit_draws::{edited_assignments, ParentPosterior};
use crate::models::edits::{EditPlan, Origin, SplitSeedTerms};
use crate::models::start_draws::TokenWords;
use crate::models::{FitError, ParamError};

/// The parent and the plan an edited chain starts from, checked against the training
/// tokens.
pub(super) struct EditedStart<'a> {
    parent: &'a LdaModel,
    plan: &'a EditPlan,
    /// Each split's seed words as term ids, by parent topic: one list per part (empty
    /// for a split without seeds).
    split_words: Vec<SplitSeedTerms>,
}

impl<'a> EditedStart<'a> {
    /// The start of a refit of `parent` edited by `plan`, on the training `tokens` the
    /// parent was fitted on (an error when they do not match it).
    pub(super) fn new(parent: &'a LdaModel, plan: &'a EditPlan, lexicon: &Lexicon, tokens: &Tokens) -> Result<Self, FitError> {
        let kp = plan.parent_topics();
        let fits = parent.params.topics == kp
            && parent.num_terms == tokens.num_terms
            && parent.document_proportions.len() == tokens.num_docs() * kp
            && parent.tokens == tokens.num_tokens() as u64;
        if !fits {
            return Err(FitError::Params(ParamError::new("model", "the parent model was not fitted on this corpus' training documents")));
        }
        let split_words = plan.split_seed_terms(lexicon).map_err(FitError::Params)?;
        Ok(EditedStart { parent, plan, split_words })
    }

    /// The α of the child's topics: a live topic takes its origin's α_k (a merge its
    /// first topic's), a retired one 0.
    pub(super) fn alpha(&self) -> Vec<f64> {
        self.plan
            .origins
            .iter()
            .enumerate()
            .map(|(k, origin)| match origin {
                Origin::Kept => self.parent.alpha[k],
                Origin::Merged { topics } => self.parent.alpha[topics[0]],
                Origin::Split { topic, .. } => self.parent.alpha[*topic],
                Origin::Retired { .. } => 0.0,
            })
            .collect()
    }

    /// The β the parent ended with, which the refit starts from.
    pub(super) fn beta(&self) -> f64 {
        self.parent.beta
    }

    /// The chain's starting assignments, from streams of `seed`.
    pub(super) fn assignments(&self, tokens: &Tokens, seed: u64) -> Vec<u32> {
        let parent =
            ParentPosterior { theta: &self.parent.document_proportions, phi: &self.parent.word_rates, split_alpha: &self.parent.alpha, beta: self.parent.beta };
        let words = TokenWords { words: &tokens.words, doc_ptr: &tokens.doc_ptr, num_terms: tokens.num_terms };
        edited_assignments(self.plan, &self.split_words, parent, words, seed)
    }
}

#[cfg(test)]
#[path = "edit_tests.rs"]
mod tests;
