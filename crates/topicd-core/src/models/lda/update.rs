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
use crate::models::start_draws::{draw, split_by_document};
use crate::models::{FitError, ParamError, UpdateStart};
use crate::rng::{stream, Purpose};
use rayon::prelude::*;

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

    /// The chain's starting assignments, from streams of `seed`.
    pub(super) fn assignments(&self, tokens: &Tokens, seed: u64) -> Vec<u32> {
        let mut z = vec![0u32; tokens.num_tokens()];
        let old_end = tokens.doc_ptr[self.parent_documents];
        let (old, new) = z.split_at_mut(old_end);
        self.draw_parent_documents(old, tokens, seed);
        self.fold_in(old, new, tokens, seed);
        z
    }

    /// The parent's documents: each token's topic drawn from θ_dk φ_kw.
    fn draw_parent_documents(&self, z: &mut [u32], tokens: &Tokens, seed: u64) {
        let (k, v) = (self.parent.params.topics, self.parent.num_terms);
        let (theta, phi) = (&self.parent.document_proportions, &self.parent.word_rates);
        let spans = split_by_document(z, &tokens.doc_ptr[..=self.parent_documents]);
        spans.into_par_iter().for_each(|(d, zs)| {
            let mut rng = stream(seed, Purpose::UpdateStart, 0, d as u64);
            let mut weights = vec![0.0; k];
            let theta_d = &theta[d * k..(d + 1) * k];
            for (slot, &w) in zs.iter_mut().zip(&tokens.words[tokens.doc_ptr[d]..tokens.doc_ptr[d + 1]]) {
                *slot = draw(&mut weights, |j| theta_d[j] * phi[j * v + w as usize], &mut rng) as u32;
            }
        });
    }

    /// The new documents, one after another, each token drawn against the counts of
    /// every token before it.
    fn fold_in(&self, old: &[u32], new: &mut [u32], tokens: &Tokens, seed: u64) {
        let k = self.parent.params.topics + self.new_topics;
        let v = tokens.num_terms;
        let (alpha, beta) = (self.alpha(), self.beta());
        let vbeta = v as f64 * beta;
        let mut n_kw = vec![0u32; k * v];
        let mut n_k = vec![0u64; k];
        for (&t, &w) in old.iter().zip(&tokens.words) {
            n_kw[t as usize * v + w as usize] += 1;
            n_k[t as usize] += 1;
        }
        let offset = tokens.doc_ptr[self.parent_documents];
        let mut weights = vec![0.0; k];
        let mut n_dk = vec![0u32; k];
        for d in self.parent_documents..tokens.num_docs() {
            let mut rng = stream(seed, Purpose::UpdateStart, 1, d as u64);
            n_dk.fill(0);
            for i in tokens.doc_ptr[d]..tokens.doc_ptr[d + 1] {
                let w = tokens.words[i] as usize;
                let topic = draw(&mut weights, |j| (n_dk[j] as f64 + alpha[j]) * (n_kw[j * v + w] as f64 + beta) / (n_k[j] as f64 + vbeta), &mut rng);
                n_dk[topic] += 1;
                n_kw[topic * v + w] += 1;
                n_k[topic] += 1;
                new[i - offset] = topic as u32;
            }
        }
    }
}

#[cfg(test)]
#[path = "update_tests.rs"]
pub(crate) mod tests;
