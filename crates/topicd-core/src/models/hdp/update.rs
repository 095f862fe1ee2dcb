//! The state an update's memoized passes start from: the parent's topics, the new
//! documents as more batches.
//!
//! Why it exists: an update keeps the parent's topics (ids, names, words) and costs a
//! fraction of a refit (issue 60; LDA's and DCNT's `update` do the same for the
//! samplers). A stored HDP model keeps its global posterior (q(φ) and the sticks), which
//! is all memoized VI needs to start (Hughes & Sudderth 2013 designed it to take new
//! batches):
//! - the topics start as the parent's word counts N_kw (q(φ_k) = Dir(λ + N_kw), new
//!   words at λ), then the `new_topics` added topics from the words the parent does not
//!   predict: each new document's count of word w weighted by the share of w's count in
//!   the new documents beyond what the parent's word frequencies predict, and the birth's
//!   restricted fit ([`super::birth::restricted_fit`]) splitting those weighted counts
//!   into `new_topics` topics. Empty added topics would be identical, take identical
//!   shares in the first local step and be merged into one (seen on the Debian
//!   changelogs, decision 0064);
//! - the sticks start at the parent's expected weights, each added topic at the parent's
//!   mean topic weight (a document's prior weight on a topic is α·E[β_k]: a share of the
//!   parent's small remainder would leave it unused), renormalised;
//! - every training document (the parent's first, then the new ones, in batches of
//!   consecutive documents as any fit's) is inferred in the first pass against those
//!   topics, and the passes then run as a fit's.
//!
//! An edited parent's retired slots stay retired: the passes run on its live topics
//! ([`super::retired`]) and the added topics take ids after its last slot.
//!
//! The parent's topics and the added ones are *protected* ([`super::memo::Memo::protected`]):
//! merges and deletes take only topics births added, a birth that splits a protected
//! topic leaves its largest part under its id, and the size reordering sorts only the
//! born topics. So topic k of the parent is topic k of the child, the `new_topics` the
//! user asked for stay (as in LDA's update; on the changelogs the objective merged an
//! added topic about the new entries back into an old one, decision 0064), and born
//! topics take the ids after them. Births target the topics that grew most over the
//! parent's expected tokens (an added topic from nothing) rather than the largest: that
//! is where the new documents went.

use super::birth::{birth_stream, restricted_fit, CompactVocabulary, TargetDocument};
use super::documents::HdpDocuments;
use super::fit::{finish, prepare, Prepared};
use super::memo::Memo;
use super::passes::HdpPasses;
use super::retired;
use super::summary::Summary;
use super::{HdpModel, HdpParams};
use crate::corpus::{Corpus, DocTermMatrix};
use crate::inference::stick_posterior::StickPosterior;
use crate::models::causes::{Internal, Stored};
use crate::models::slots::Slots;
use crate::models::{passes, splits, FitContext, FitError, ParamError, UpdateStart};
use crate::ranks::Solo;

/// The new documents with the most excess words whose words start the added topics
/// ([`UpdatedStart::added_topics`]): enough for the restricted fit to find what they
/// share, few enough that it costs a fraction of a pass on a large update.
const ADDED_TOPIC_DOCUMENTS: usize = 2000;

/// The parent an update starts from, checked against the corpus.
pub(super) struct UpdatedStart {
    /// The parent's live topics (an edited parent's retired slots left out).
    parent: HdpModel,
    new_topics: usize,
    /// The parent's topics, retired ones included: the passes run on the live ones and
    /// the added topics take ids after the parent's last ([`super::retired`]).
    slots: Slots,
}

impl UpdatedStart {
    /// The start of an update from the stored `start.parent` on `corpus` under the
    /// update's params `p`: an error naming `corpus_id` when the parent's training
    /// documents are not the corpus' first ones (the same tokens, on the same side of
    /// the held-out split drawn by `start.split_seed`).
    pub(super) fn new(start: &UpdateStart<'_>, corpus: &Corpus, p: &HdpParams) -> Result<Self, FitError> {
        let stored = HdpModel::decode(start.parent).map_err(|e| FitError::Internal(Internal::Corrupt { what: Stored::Model, detail: e.to_string() }))?;
        let slots = Slots::retiring(&stored.retired_slots(), stored.num_topics);
        let total = stored.num_topics;
        let parent = retired::live_topics(stored, &slots);
        let held_out = splits::test_mask(corpus, p.test_fraction, start.split_seed);
        let first = start.parent_documents.min(corpus.num_documents());
        let training: Vec<usize> = (0..first).filter(|&d| !held_out[d]).collect();
        let tokens: u64 = training.iter().map(|&d| corpus.counts.row(d).1.iter().map(|&c| c as u64).sum::<u64>()).sum();
        let fits = start.parent_documents <= corpus.num_documents()
            && parent.documents == training.len()
            && parent.tokens == tokens
            && parent.num_terms <= corpus.num_terms()
            && total + start.new_topics <= p.topics;
        if !fits {
            return Err(FitError::Params(ParamError::new(
                "corpus_id",
                "the parent model was not fitted on this corpus' first documents (or the new documents' split tags move the parent's across its held-out split)",
            )));
        }
        Ok(UpdatedStart { parent, new_topics: start.new_topics, slots })
    }

    /// The params the passes run under: the update's `p` with the truncation less the
    /// parent's retired slots (`p` itself when none is).
    pub(super) fn live_params(&self, p: &HdpParams) -> HdpParams {
        let retired = self.slots.total() - self.slots.live().len();
        HdpParams { topics: p.topics - retired, ..p.clone() }
    }

    /// The parent's expected tokens per topic.
    pub(super) fn parent_tokens(&self) -> Vec<f64> {
        self.parent.topic_tokens.clone()
    }

    /// The parent's topics and the added ones, which keep their ids.
    pub(super) fn protected(&self) -> usize {
        self.parent.num_topics + self.new_topics
    }

    /// The starting topic-word counts over `num_terms` words (`V × K`): the parent's
    /// N_kw, then the added topics' counts from [`Self::added_topics`].
    pub(super) fn initial_counts(&self, training: &DocTermMatrix, num_terms: usize, p: &HdpParams, seed: u64) -> Summary {
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
        for (i, counts) in self.added_topics(training, num_terms, p, seed).iter().enumerate() {
            for &(w, x) in counts {
                init.word_topic[w * k + k_old + i] = x;
            }
        }
        init
    }

    /// The added topics' starting counts, `(word, count)` each: the new training
    /// documents' counts (rows from the parent's `documents` on) weighted by each word's
    /// excess share, 1 − e_w / n_w, where n_w is the word's count in them and e_w what the
    /// parent's word frequencies predict for as many tokens (0 where they predict more);
    /// the [`ADDED_TOPIC_DOCUMENTS`] documents with the most excess split into the added
    /// topics by the birth's restricted fit (seed `seed`). Topics it cannot fill (fewer
    /// such documents than added topics) stay empty.
    fn added_topics(&self, training: &DocTermMatrix, num_terms: usize, p: &HdpParams, seed: u64) -> Vec<Vec<(usize, f64)>> {
        let parent = &self.parent;
        if self.new_topics == 0 {
            return Vec::new();
        }
        let lambda = parent.params.lambda;
        let mut predicted = vec![lambda; num_terms];
        for t in 0..parent.num_topics {
            for (w, &x) in parent.topic_word[t * parent.num_terms..(t + 1) * parent.num_terms].iter().enumerate() {
                predicted[w] += (x - lambda).max(0.0);
            }
        }
        let rows = parent.documents..training.num_rows();
        let mut observed = vec![0.0; num_terms];
        for d in rows.clone() {
            let (terms, counts) = training.row(d);
            for (&w, &c) in terms.iter().zip(counts) {
                observed[w as usize] += c as f64;
            }
        }
        let scale = observed.iter().sum::<f64>() / predicted.iter().sum::<f64>();
        let excess: Vec<f64> = observed.iter().zip(&predicted).map(|(&n, &e)| if n > 0.0 { (1.0 - scale * e / n).max(0.0) } else { 0.0 }).collect();
        let mut vocabulary = CompactVocabulary::default();
        let mut targets: Vec<TargetDocument> = rows
            .filter_map(|d| {
                let (terms, counts) = training.row(d);
                let mut doc = TargetDocument { words: Vec::new(), weights: Vec::new(), at: (0, d) };
                for (&w, &c) in terms.iter().zip(counts) {
                    let x = c as f64 * excess[w as usize];
                    if x > 0.0 {
                        vocabulary.push(&mut doc, w as usize, x);
                    }
                }
                (!doc.words.is_empty()).then_some(doc)
            })
            .collect();
        let mass = |doc: &TargetDocument| doc.weights.iter().sum::<f64>();
        targets.sort_by(|a, b| mass(b).total_cmp(&mass(a)).then(a.at.cmp(&b.at)));
        targets.truncate(ADDED_TOPIC_DOCUMENTS);
        let (counts, _) = restricted_fit(&targets, vocabulary.words.len(), (p, num_terms), self.new_topics, &mut birth_stream(seed, 0), &[]);
        counts.iter().map(|c| c.iter().enumerate().filter(|&(_, &x)| x > 0.0).map(|(i, &x)| (vocabulary.words[i], x)).collect()).collect()
    }

    /// The starting sticks: the parent's expected weights, then each new topic at the
    /// parent's mean topic weight, then the parent's remainder, renormalised. A new topic
    /// needs a parent-sized share: a document's prior weight on it is α·E[β_k], and with a
    /// share of the parent's small remainder the first local step barely uses it, so the
    /// new words spread over old topics and the empty topic is deleted (decision 0063).
    pub(super) fn initial_stick(&self) -> StickPosterior {
        let mut beta = self.parent.stick.expected_beta();
        let rest = beta.pop().expect("K + 1 weights");
        let mean = if beta.is_empty() { rest } else { beta.iter().sum::<f64>() / beta.len() as f64 };
        beta.extend(std::iter::repeat_n(mean, self.new_topics));
        beta.push(rest);
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
    let live = from.live_params(p);
    let mut memo = Memo::over(HdpDocuments::whole(&training, v, live.batches), from.initial_counts(&training, v, &live, seed), &live, &Solo);
    memo.protected = from.protected();
    memo.birth_baseline = Some(from.parent_tokens());
    memo.stick = from.initial_stick();
    let mut fit = HdpPasses::over(memo, seed);
    passes::run(&mut fit, seed, ctx)?;
    let outcome = retired::expand(&from.slots, fit.outcome(), p.lambda);
    let model = HdpModel::from_fit(outcome, p.clone(), v, training.total_tokens());
    finish(model, design, |m| m.document_dirichlets(&training), &test_documents)
}
