//! The state an edit's refit starts from: the parent's assignments rebuilt, the edit
//! done on them.
//!
//! Why it exists: a stored LDA model keeps posterior means (φ, the training documents'
//! θ), not its last assignments. A refit that keeps what the user did not touch starts
//! where the parent ended: each training token's topic is drawn from the parent's
//! posterior, p(z = k | d, w) ∝ θ_dk φ_kw (one stream per document), then the plan
//! ([`crate::models::edits::EditPlan`]) moves tokens:
//! - kept topics keep their tokens; a merge's tokens go to its first topic;
//! - a deleted topic's tokens are drawn again from θ_dj φ_jw among the topics that are
//!   not deleted (and go where those go);
//! - a split topic's tokens are divided among its parts by a short collapsed Gibbs run
//!   restricted to them (as a split-merge proposal's restricted scan), started from
//!   the seed words' parts where the split names seeds (those tokens stay in their
//!   part) and at random elsewhere.
//!
//! Retired topics start empty with α_k = 0, so no sweep can put a token there. The chain
//! then runs as any LDA chain.

use super::model::LdaModel;
use super::tokens::Tokens;
use crate::corpus::lexicon::Lexicon;
use crate::models::edits::{EditPlan, Fate, Origin, SplitSeedTerms};
use crate::models::start_draws::{draw, split_by_document};
use crate::models::{FitError, ParamError};
use crate::rng::{stream, Purpose, StreamRng};
use rand::RngExt;
use rayon::prelude::*;

/// Sweeps of a split's restricted run: enough for two parts of a topic to separate by
/// their words' co-occurrence (the refit's sweeps settle them further).
pub const RESTRICTED_SWEEPS: usize = 50;

/// The parent and the plan an edited chain starts from, checked against the training
/// tokens.
pub(super) struct EditedStart<'a> {
    parent: &'a LdaModel,
    plan: &'a EditPlan,
    /// Each split's seed words as term ids, by parent topic: one list per part (empty
    /// for a split without seeds).
    split_words: Vec<SplitSeedTerms>,
}

/// Marks a token whose topic is split and waits for its part.
const PENDING: u32 = u32::MAX;

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
        let mut z = self.rebuilt(tokens, seed);
        for (topic, words) in &self.split_words {
            let Fate::Split { parts, .. } = &self.plan.fates[*topic] else { continue };
            let alpha = self.parent.alpha[*topic];
            let mut rng = stream(seed, Purpose::EditStart, 0, *topic as u64);
            divide(&mut z, tokens, *topic as u32, parts, words, (alpha, self.parent.beta), &mut rng);
        }
        z
    }

    /// Each token's topic drawn from the parent's posterior and moved by the plan; a
    /// split topic's tokens are left marked [`pending`] for [`divide`].
    fn rebuilt(&self, tokens: &Tokens, seed: u64) -> Vec<u32> {
        let (kp, v) = (self.plan.parent_topics(), tokens.num_terms);
        let first_live = self.plan.origins.iter().position(|o| !o.is_retired()).unwrap_or(0) as u32;
        let (theta, phi) = (&self.parent.document_proportions, &self.parent.word_rates);
        let mut z = vec![0u32; tokens.num_tokens()];
        let spans: Vec<(usize, &mut [u32])> = split_by_document(&mut z, &tokens.doc_ptr);
        spans.into_par_iter().for_each(|(d, zs)| {
            let mut rng = stream(seed, Purpose::EditStart, 1, d as u64);
            let theta_d = &theta[d * kp..(d + 1) * kp];
            let mut weights = vec![0.0; kp];
            for (slot, &w) in zs.iter_mut().zip(&tokens.words[tokens.doc_ptr[d]..tokens.doc_ptr[d + 1]]) {
                let weight = |k: usize| theta_d[k] * phi[k * v + w as usize];
                let drawn = draw(&mut weights, weight, &mut rng);
                let topic = match self.plan.fates[drawn] {
                    Fate::Deleted | Fate::Retired => draw(&mut weights, |k| if self.is_deleted(k) { 0.0 } else { weight(k) }, &mut rng),
                    _ => drawn,
                };
                *slot = match (self.plan.destination(topic), &self.plan.fates[topic]) {
                    (Some(child), _) => child as u32,
                    (None, Fate::Split { .. }) => pending(topic),
                    // Only when every weight is zero (a document the parent gave no mass).
                    (None, _) => first_live,
                };
            }
        });
        z
    }

    fn is_deleted(&self, parent_topic: usize) -> bool {
        matches!(self.plan.fates[parent_topic], Fate::Deleted | Fate::Retired)
    }
}

/// The mark of a token waiting for a part of parent topic `topic`'s split.
fn pending(topic: usize) -> u32 {
    PENDING - topic as u32
}

/// Divide the tokens marked pending for `topic` among the child topics `parts`: a
/// collapsed Gibbs run of [`RESTRICTED_SWEEPS`] sweeps over those tokens alone, with
/// prior `(alpha, beta)` per part. A token of a seed word of part j starts in part j
/// and stays there; the others start at random.
fn divide(z: &mut [u32], tokens: &Tokens, topic: u32, parts: &[usize], seed_words: &[Vec<u32>], prior: (f64, f64), rng: &mut StreamRng) {
    let mark = pending(topic as usize);
    let (n, v) = (parts.len(), tokens.num_terms);
    let (alpha, beta) = prior;
    let mut pinned_part = vec![u8::MAX; v];
    for (j, words) in seed_words.iter().enumerate() {
        for &w in words {
            if pinned_part[w as usize] == u8::MAX {
                pinned_part[w as usize] = j as u8;
            }
        }
    }
    // The split's tokens: (document, word, part, pinned), in document order.
    let mut split: Vec<(u32, u32, usize, bool)> = Vec::new();
    for d in 0..tokens.num_docs() {
        let span = tokens.doc_ptr[d]..tokens.doc_ptr[d + 1];
        for (&t, &w) in z[span.clone()].iter().zip(&tokens.words[span]) {
            if t == mark {
                let pin = pinned_part[w as usize];
                let part = if pin != u8::MAX { pin as usize } else { rng.random_range(0..n) };
                split.push((d as u32, w, part, pin != u8::MAX));
            }
        }
    }
    let mut n_jw = vec![0u32; n * v];
    let mut n_j = vec![0u64; n];
    let mut n_dj = std::collections::HashMap::<(u32, usize), u32>::new();
    for &(d, w, j, _) in &split {
        n_jw[j * v + w as usize] += 1;
        n_j[j] += 1;
        *n_dj.entry((d, j)).or_default() += 1;
    }
    let vbeta = v as f64 * beta;
    let mut weights = vec![0.0; n];
    for _ in 0..RESTRICTED_SWEEPS {
        for token in split.iter_mut().filter(|t| !t.3) {
            let (d, w, old, _) = *token;
            n_jw[old * v + w as usize] -= 1;
            n_j[old] -= 1;
            *n_dj.get_mut(&(d, old)).expect("counted") -= 1;
            let new = draw(
                &mut weights,
                |j| (*n_dj.get(&(d, j)).unwrap_or(&0) as f64 + alpha) * (n_jw[j * v + w as usize] as f64 + beta) / (n_j[j] as f64 + vbeta),
                rng,
            );
            n_jw[new * v + w as usize] += 1;
            n_j[new] += 1;
            *n_dj.entry((d, new)).or_default() += 1;
            token.2 = new;
        }
    }
    let mut placed = split.iter();
    for t in z.iter_mut().filter(|t| **t == mark) {
        let &(_, _, j, _) = placed.next().expect("one per marked token");
        *t = parts[j] as u32;
    }
}

#[cfg(test)]
#[path = "edit_tests.rs"]
mod tests;
