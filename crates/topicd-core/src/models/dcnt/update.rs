//! The state an update's DCNT or SCNT chain starts from: the parent's documents where
//! the parent left them, the new documents folded in.
//!
//! Why it exists: an update keeps the parent's topics (ids, names, words) and should
//! cost a fraction of a refit (issue 60; LDA's [`crate::models::lda`] `update` does the
//! same for LDA). A stored DCNT model keeps posterior means, not assignments, so the
//! chain starts from:
//! - the parent's training documents: each token's topic drawn from the parent's
//!   posterior, p(z = k | d, w) ∝ π̄_dk Ω̄_kw (one stream per document);
//! - the new training documents, folded in one after another by collapsed Gibbs
//!   against the counts so far, p(z = k) ∝ (n_dk + α)(M_kw + β)/(M_k + Wβ) with the
//!   collapsed start's α ([`super::warm_start::ALPHA`]), every draw added before the
//!   next (o-LDA's initialisation, as for LDA), one stream per document in order;
//! - each document's v_d set so that π(v_d) is its smoothed proportions, and u_d drawn
//!   from its conditional given v_d, under globals drawn from the prior: the collapsed
//!   start's last step ([`super::warm_start`]), without its relabelling, so every topic
//!   keeps its id (its place in the stick order).
//!
//! `new_topics` empty topics follow the parent's, at the last sticks. An edited parent's
//! retired slots stay retired: its model holds its live topics alone, the chains run
//! on those and the new ones, and the child keeps the slots ([`crate::models::slotted`]). A, η and the
//! precisions start from the prior, as a fresh chain's: their sizes change with the
//! topics, and the first scans draw them given the started activations.

use super::globals::Globals;
use super::model::DcntModel;
use super::params::DcntParams;
use super::state::{DcntState, Documents};
use super::variant::Covariance;
use super::warm_start::{smoothed_activations, ALPHA};
use crate::models::seeds::SeedPrior;
use crate::models::start_draws::{draw_from_parent, fold_in, TokenWords};
use crate::models::{FitError, ParamError, UpdateStart};
use crate::rng::{stream, Purpose};

/// The parent an updated chain starts from, checked against the fit's split.
pub(super) struct UpdatedStart {
    parent: DcntModel,
    /// Training documents (the first of the fit's) that are the parent's.
    parent_documents: usize,
}

impl UpdatedStart {
    /// The start of an update from `parent` (`start.parent` decoded) for a fit, on the
    /// parent's live topics and the new ones (`p`), whose training
    /// and held-out documents (corpus indices) are `split`, on the training `docs` with
    /// metadata columns `feature_names`: an error naming `corpus_id` when the parent's
    /// documents are not the corpus' first ones, on the same sides of the split, with
    /// the same tokens and metadata columns.
    pub(super) fn new(
        (parent, start): (DcntModel, &UpdateStart<'_>),
        (p, covariance): (&DcntParams, Covariance),
        split: (&[usize], &[usize]),
        docs: &Documents,
        feature_names: &[String],
    ) -> Result<Self, FitError> {
        let old = |docs: &[usize]| docs.iter().take_while(|&&d| d < start.parent_documents).copied().collect::<Vec<_>>();
        let (train, heldout) = split;
        let parent_documents = parent.train_documents.len();
        let fits = parent.covariance == covariance
            && parent.params.topics + start.new_topics == p.topics
            && old(train) == parent.train_documents
            && old(heldout) == parent.heldout_documents
            && parent.num_terms <= docs.num_terms
            && docs.token_offsets.get(parent_documents).map(|&n| n as u64) == Some(parent.tokens);
        if !fits {
            return Err(FitError::Params(ParamError::new(
                "corpus_id",
                "the parent model was not fitted on this corpus' first documents (or the new documents' split tags move the parent's across its held-out split)",
            )));
        }
        if parent.feature_names != feature_names {
            return Err(FitError::Params(ParamError::new(
                "corpus_id",
                format!(
                    "the documents' metadata columns are {feature_names:?}, the model was fitted with {:?}: give the new documents the same `features` (or none, as the model's)",
                    parent.feature_names
                ),
            )));
        }
        Ok(UpdatedStart { parent, parent_documents })
    }

    /// The chain's starting state for `p` on the training `docs`, from streams of `seed`
    /// (the fold-in cut short when `stop` says so).
    pub(super) fn state(
        &self,
        docs: &Documents,
        (p, covariance): (&DcntParams, Covariance),
        prior: SeedPrior,
        seed: u64,
        stop: &dyn Fn() -> bool,
    ) -> DcntState {
        let k = p.topics;
        let words = token_words(docs);
        let tokens = TokenWords { words: &words, doc_ptr: &docs.token_offsets, num_terms: docs.num_terms };
        let mut z = vec![0u32; docs.num_tokens()];
        let parent = (&self.parent.document_proportions[..], &self.parent.topic_word[..], self.parent.num_terms);
        draw_from_parent(&mut z, tokens, self.parent_documents, parent, seed);
        fold_in(&mut z, tokens, self.parent_documents, (&vec![ALPHA; k], p.priors.beta), seed, stop);
        // Topics fit in u16: K̄ is at most MAX_TOPICS.
        let z: Vec<u16> = z.into_iter().map(|t| t as u16).collect();
        started_state(docs, (p, covariance), prior, z, (seed, Purpose::UpdateStart))
    }
}

/// The chain's starting state given each token's topic `z` (an update's or an edit's
/// start): v_d set so that π(v_d) is the document's smoothed proportions, globals from
/// the prior (stream `(seed, DcntGlobal, 0, 0)`) and u_d drawn from its conditional
/// given v_d (streams `(seed, purpose, 2, d)`).
pub(super) fn started_state(
    docs: &Documents,
    (p, covariance): (&DcntParams, Covariance),
    prior: SeedPrior,
    z: Vec<u16>,
    (seed, purpose): (u64, Purpose),
) -> DcntState {
    let k = p.topics;
    let globals = Globals::initial(k, docs.num_features, covariance, &mut stream(seed, Purpose::DcntGlobal, 0, 0));
    let mut state = DcntState {
        num_topics: k,
        covariance,
        priors: p.priors,
        z,
        doc_topic: vec![0; docs.num_docs() * k],
        word_topic: vec![0; docs.num_terms * k],
        topic_totals: vec![0; k],
        u: Vec::new(),
        v: Vec::new(),
        globals,
        topic_swaps: p.topic_swaps,
        seed_prior: prior,
    };
    state.v = smoothed_activations(docs, &state.z, k);
    state.recount(docs);
    state.draw_u_given_v(docs, (seed, purpose, 2));
    state
}

/// Each token's word, document by document, in the tokens' order.
pub(super) fn token_words(docs: &Documents) -> Vec<u32> {
    docs.rows.iter().flat_map(|(terms, counts)| terms.iter().zip(counts).flat_map(|(&w, &c)| std::iter::repeat_n(w, c as usize))).collect()
}
