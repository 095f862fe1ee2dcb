//! The state an update's fit starts from: the parent's documents where the parent left
//! them, the new documents folded in.
//!
//! Why it exists: a model updated with new documents should keep its topics (ids,
//! names, words) and cost a fraction of a refit. The chain starts from:
//! - the parent's training documents, each token's topic drawn from the parent's
//!   posterior, p(z = k | d, w) ∝ θ_dk φ_kw (one stream per document; a stored LDA
//!   model keeps posterior means, not z, as for an edit);
//! - then the new training documents, folded in one after another by collapsed Gibbs
//!   against the counts so far: p(z = k) ∝ (n_dk + α_k)(n_kw + β)/(n_k + Vβ), every
//!   draw added to the counts before the next (o-LDA's initialisation, Canini, Shi and
//!   Griffiths 2009), one stream per document, in document order.
//!
//! `new_topics` empty topics follow the parent's with the mean live α. A word no
//! parent topic holds weighs (n_kw + β)/(n_k + Vβ) ≈ β/n_k in an old topic and 1/V
//! in an empty one, so new vocabulary starts new topics rather than diluting old ones.
//! Retired topics keep α_k = 0 and no tokens. The chain then runs as any LDA chain.

use super::model::LdaModel;
use super::tokens::Tokens;
use crate::models::start_draws::{draw_from_parent, fold_in, TokenWords};
use crate::models::{FitError, ParamError, UpdateStart};

/// The parent an updated chain starts from, checked against the training tokens.
pub(super) struct UpdatedStart<'a> {
    parent: &'a LdaModel,
    /// Training documents (the first ones of the tokens) that are the parent's.
    parent_documents: usize,
    new_topics: usize,
}

impl<'a> UpdatedStart<'a> {
    /// The start of an update of `parent` on the training `tokens`, whose first
    /// `parent_training` documents are the parent's training documents (an error when
    /// they do not match it).
    pub(super) fn new(parent: &'a LdaModel, start: &UpdateStart<'_>, tokens: &Tokens, parent_training: usize) -> Result<Self, FitError> {
        let k = parent.params.topics;
        let parent_tokens = tokens.doc_ptr.get(parent_training).copied().unwrap_or(usize::MAX) as u64;
        let fits = parent.document_proportions.len() == parent_training * k && parent.num_terms <= tokens.num_terms && parent.tokens == parent_tokens;
        if !fits {
            return Err(FitError::Params(ParamError::new(
                "corpus_id",
                "the parent model was not fitted on this corpus' first documents (or the new documents' split tags move the parent's across its held-out split)",
            )));
        }
        Ok(UpdatedStart { parent, parent_documents: parent_training, new_topics: start.new_topics })
    }

    /// The parent's α_k, then the mean of its live α_k for each new topic.
    pub(super) fn alpha(&self) -> Vec<f64> {
        let live: Vec<f64> = self.parent.alpha.iter().copied().filter(|&a| a > 0.0).collect();
        let fresh = if live.is_empty() { self.parent.params.alpha } else { live.iter().sum::<f64>() / live.len() as f64 };
        let mut alpha = self.parent.alpha.clone();
        alpha.extend(std::iter::repeat_n(fresh, self.new_topics));
        alpha
    }

    /// The β the parent ended with, which the update starts from.
    pub(super) fn beta(&self) -> f64 {
        self.parent.beta
    }

    /// The chain's starting assignments, from streams of `seed` (the fold-in cut short
    /// when `stop` says so).
    pub(super) fn assignments(&self, tokens: &Tokens, seed: u64, stop: &dyn Fn() -> bool) -> Vec<u32> {
        let mut z = vec![0u32; tokens.num_tokens()];
        let words = TokenWords { words: &tokens.words, doc_ptr: &tokens.doc_ptr, num_terms: tokens.num_terms };
        let parent = (&self.parent.document_proportions[..], &self.parent.word_rates[..], self.parent.num_terms);
        draw_from_parent(&mut z, words, self.parent_documents, parent, seed);
        fold_in(&mut z, words, self.parent_documents, (&self.alpha(), self.beta()), seed, stop);
        z
    }
}

#[cfg(test)]
#[path = "update_tests.rs"]
pub(crate) mod tests;
