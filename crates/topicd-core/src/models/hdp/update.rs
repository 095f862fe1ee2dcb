//! The state an update's memoized passes start from: the parent's topics, the new
//! documents as more batches.
//!
//! Why it exists: an update keeps the parent's topics (ids, names, words) and costs a
//! fraction of a refit (issue 60; LDA's and DCNT's `update` do the same for the
//! samplers). A stored HDP model keeps its global posterior (q(φ) and the sticks), which
//! is all memoized VI needs to start (Hughes & Sudderth 2013 designed it to take new
//! batches):
//! - the topics start as the parent's word counts N_kw (q(φ_k) = Dir(λ + N_kw), new
//!   words at λ), then `new_topics` empty topics (λ alone): a new word weighs
//!   ψ(λ) − ψ(Vλ + N_k) in an old topic and ψ(λ) − ψ(Vλ) in an empty one, so new
//!   vocabulary fills the empty topics rather than diluting old ones;
//! - the sticks start at the parent's expected weights, the new topics sharing its
//!   remaining mass with the remainder;
//! - every training document (the parent's first, then the new ones, in batches of
//!   consecutive documents as any fit's) is inferred in the first pass against those
//!   topics, and the passes then run as a fit's.
//!
//! The parent's topics are *protected* ([`super::memo::Memo::protected`]): merges and
//! deletes take only topics the update added, a birth that splits a parent topic leaves
//! its largest part under the parent's id, and the size reordering sorts only the added
//! topics. So topic k of the parent is topic k of the child, and added topics (empty
//! ones, then births) take the ids after the parent's. Births target the topics that
//! grew most over the parent's expected tokens (an added topic from nothing) rather than the
//! largest: that is where the new documents went.

use super::documents::HdpDocuments;
use super::fit::{finish, prepare, Prepared};
use super::memo::Memo;
use super::passes::HdpPasses;
use super::summary::Summary;
use super::{HdpModel, HdpParams};
use crate::corpus::Corpus;
use crate::inference::stick_posterior::StickPosterior;
use crate::models::causes::{Internal, Stored};
use crate::models::{passes, splits, FitContext, FitError, ParamError, UpdateStart};
use crate::ranks::Solo;

/// The parent an update starts from, checked against the corpus.
pub(super) struct UpdatedStart {
    parent: HdpModel,
    new_topics: usize,
}

impl UpdatedStart {
    /// The start of an update from the stored `start.parent` on `corpus` under the
    /// update's params `p`: an error naming `corpus_id` when the parent's training
    /// documents are not the corpus' first ones (the same tokens, on the same side of
    /// the held-out split drawn by `start.split_seed`).
    pub(super) fn new(start: &UpdateStart<'_>, corpus: &Corpus, p: &HdpParams) -> Result<Self, FitError> {
        let parent = HdpModel::decode(start.parent).map_err(|e| FitError::Internal(Internal::Corrupt { what: Stored::Model, detail: e.to_string() }))?;
        let held_out = splits::test_mask(corpus, p.test_fraction, start.split_seed);
        let first = start.parent_documents.min(corpus.num_documents());
        let training: Vec<usize> = (0..first).filter(|&d| !held_out[d]).collect();
        let tokens: u64 = training.iter().map(|&d| corpus.counts.row(d).1.iter().map(|&c| c as u64).sum::<u64>()).sum();
        let fits = start.parent_documents <= corpus.num_documents()
            && parent.documents == training.len()
            && parent.tokens == tokens
            && parent.num_terms <= corpus.num_terms()
            && parent.num_topics + start.new_topics <= p.topics;
        if !fits {
            return Err(FitError::Params(ParamError::new(
                "corpus_id",
                "the parent model was not fitted on this corpus' first documents (or the new documents' split tags move the parent's across its held-out split)",
            )));
        }
        Ok(UpdatedStart { parent, new_topics: start.new_topics })
    }

    /// The parent's expected tokens per topic.
    pub(super) fn parent_tokens(&self) -> Vec<f64> {
        self.parent.topic_tokens.clone()
    }

    /// The parent's topics, which keep their ids.
    pub(super) fn protected(&self) -> usize {
        self.parent.num_topics
    }

    /// The starting topic-word counts over `num_terms` words (`V × K`): the parent's
    /// N_kw, then the empty topics.
    pub(super) fn initial_counts(&self, num_terms: usize) -> Summary {
        let (parent, k_old) = (&self.parent, self.parent.num_topics);
        let k = k_old + self.new_topics;
        let lambda = parent.params.lambda;
        let mut init = Summary::dense(num_terms, k);
        for t in 0..k_old {
            let row = &parent.topic_word[t * parent.num_terms..(t + 1) * parent.num_terms];
            for (w, &x) in row.iter().enumerate() {
                init.word_topic[w * k + t] = (x - lambda).max(0.0);
            }
        }
        init
    }

    /// The starting sticks: the parent's expected weights, its remaining mass shared
    /// equally by the new topics and the remainder.
    pub(super) fn initial_stick(&self) -> StickPosterior {
        let mut beta = self.parent.stick.expected_beta();
        let rest = beta.pop().expect("K + 1 weights");
        let share = rest / (self.new_topics + 1) as f64;
        beta.extend(std::iter::repeat_n(share, self.new_topics + 1));
        let mut omega = self.parent.stick.omega.clone();
        let mean = if omega.is_empty() { 1.0 } else { omega.iter().sum::<f64>() / omega.len() as f64 };
        omega.extend(std::iter::repeat_n(mean, self.new_topics));
        StickPosterior::from_expected_beta(&beta, omega)
    }
}

/// Update the parent in `start` with the corpus' new documents (the corpus holds the
/// parent's documents first), under params from [`HdpParams::updated`].
pub fn fit_hdp_updated(corpus: &Corpus, p: &HdpParams, start: &UpdateStart<'_>, seed: u64, ctx: &FitContext) -> Result<HdpModel, FitError> {
    let from = UpdatedStart::new(start, corpus, p)?;
    let Prepared { training, design, test_documents } = prepare(corpus, p, start.split_seed)?;
    let v = corpus.num_terms();
    let mut memo = Memo::over(HdpDocuments::whole(&training, v, p.batches), from.initial_counts(v), p, &Solo);
    memo.protected = from.protected();
    memo.birth_baseline = Some(from.parent_tokens());
    memo.stick = from.initial_stick();
    let mut fit = HdpPasses::over(memo, seed);
    passes::run(&mut fit, seed, ctx)?;
    let model = HdpModel::from_fit(fit.outcome(), p.clone(), v, training.total_tokens());
    finish(model, design, |m| m.document_dirichlets(&training), &test_documents)
}
