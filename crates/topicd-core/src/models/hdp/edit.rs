//! An HDP refit from an edit: the parent's global posterior with the edit done on it,
//! the live topics' memoized passes, then the child's slots.
//!
//! Why it exists: a user who merges, splits or deletes HDP topics keeps every other
//! topic's id, name and words (issue 59). A stored HDP model keeps q(φ) (its topics'
//! expected word counts N_kw) and the sticks, which is all memoized VI needs to start
//! (as an update does, [`super::update`]); the edit is done with the moves' own
//! arithmetic:
//! - a kept topic starts at the parent's N_kw and E[β_k];
//! - a merge at the sum of its topics' counts and weights (the merge move's);
//! - a deleted or merged-away topic is left out (the delete move's): its tokens go
//!   wherever the other topics explain them in the first local step;
//! - a split's parts from the birth's restricted fit ([`super::birth::restricted_fit`])
//!   on the words the topic holds in its documents under the parent (each word's count
//!   times its responsibility), scaled to the topic's tokens, with its weight shared by
//!   their sizes; a part's seed words (`seed_words`) start it and no other part may take
//!   them in that fit.
//!
//! The passes then run as a fit's on the live topics only ([`super::retired`]), every one
//! of them protected and no move proposed: the child has the topics the user asked for.
//! A birth could split a merged topic again and re-create a deleted one, and a merge or
//! delete could undo a split.

use super::birth::{restricted_fit, CompactVocabulary, TargetDocument};
use super::documents::HdpDocuments;
use super::fit::{finish, prepare, Prepared};
use super::local::{infer_document, LocalGlobals};
use super::memo::Memo;
use super::passes::HdpPasses;
use super::retired;
use super::summary::Summary;
use super::{HdpModel, HdpParams};
use crate::corpus::{Corpus, DocTermMatrix};
use crate::inference::stick_posterior::StickPosterior;
use crate::models::causes::{Internal, Stored};
use crate::models::edits::{not_the_parent, EditPlan, Fate, Origin, SplitSeedTerms};
use crate::models::slots::Slots;
use crate::models::{passes, EditStart, FitContext, FitError};
use crate::ranks::Solo;
use crate::rng::{stream, Purpose};
use rayon::prelude::*;

/// The documents holding most of a split topic's tokens that its restricted fit reads.
const SPLIT_DOCUMENTS: usize = 2000;
/// A document joins a split's restricted fit when it holds at least this many of the
/// topic's expected tokens.
const MIN_SPLIT_TOKENS: f64 = 1.0;
/// The smallest share of its topic's weight a split part starts with (a part with weight
/// 0 could never be reached).
const MIN_PART_SHARE: f64 = 1e-3;

/// One part of a split topic: its starting counts (corpus word ids) and its share of the
/// topic's weight.
struct Part {
    counts: Vec<(usize, f64)>,
    share: f64,
}

/// What one training document holds of a split topic under the parent: its expected
/// tokens N_dk and each word's part of them, (word, c_dw r_dwk).
struct Held {
    tokens: f64,
    words: Vec<(usize, f64)>,
}

/// The parent and the plan an edited HDP fit starts from.
pub(super) struct EditedStart {
    parent: HdpModel,
    plan: EditPlan,
    slots: Slots,
    split_words: Vec<SplitSeedTerms>,
}

impl EditedStart {
    /// The start of a refit of the stored `start.parent` edited by `start.plan` on
    /// `corpus`, whose training documents are `training`: an error naming `model` when
    /// the parent was not fitted on them with the plan's topics.
    pub(super) fn new(start: &EditStart<'_>, corpus: &Corpus, training: &DocTermMatrix) -> Result<Self, FitError> {
        let parent = HdpModel::decode(start.parent).map_err(|e| FitError::Internal(Internal::Corrupt { what: Stored::Model, detail: e.to_string() }))?;
        if parent.num_topics != start.plan.parent_topics() {
            return Err(not_the_parent("its topics are not the edit's"));
        }
        if parent.num_terms != corpus.num_terms() || parent.documents != training.num_rows() || parent.tokens != training.total_tokens() {
            return Err(not_the_parent("its vocabulary or training documents differ"));
        }
        let split_words = start.plan.split_seed_terms(&corpus.lexicon).map_err(FitError::Params)?;
        let slots = start.plan.child_slots();
        Ok(EditedStart { parent, plan: start.plan.clone(), slots, split_words })
    }

    /// The child's topics and which of them the passes run on.
    pub(super) fn slots(&self) -> &Slots {
        &self.slots
    }

    /// The params the passes run under: the child's `p` with the live topics as the
    /// truncation and no moves (see the module's doc).
    pub(super) fn live_params(&self, p: &HdpParams) -> HdpParams {
        HdpParams { topics: self.slots.live().len(), merge_every: 0, delete_every: 0, birth_every: 0, ..p.clone() }
    }

    /// The starting topic-word counts over the live topics (`V × K`, word-major) and the
    /// sticks, on the `training` documents under params `p`; a split's restricted fit
    /// draws from streams of `seed`.
    pub(super) fn state(&self, training: &DocTermMatrix, p: &HdpParams, seed: u64) -> (Summary, StickPosterior) {
        let parent = &self.parent;
        let (v, lambda) = (parent.num_terms, parent.params.lambda);
        let parts = self.split_parts(training, p, seed);
        let part = |topic: usize, part: usize| &parts.iter().find(|(t, _)| *t == topic).expect("every split is divided").1[part];
        let live = self.slots.live();
        let k = live.len();
        let mut init = Summary::dense(v, k);
        let parent_beta = parent.stick.expected_beta();
        let (mut beta, mut omega) = (Vec::with_capacity(k + 1), Vec::with_capacity(k));
        for (i, &child) in live.iter().enumerate() {
            let mut add_row = |t: usize| {
                for (w, &x) in parent.topic_word[t * v..(t + 1) * v].iter().enumerate() {
                    init.word_topic[w * k + i] += (x - lambda).max(0.0);
                }
            };
            let (b, o) = match &self.plan.origins[child] {
                Origin::Kept => {
                    add_row(child);
                    (parent_beta[child], parent.stick.omega[child])
                }
                Origin::Merged { topics } => {
                    topics.iter().for_each(|&t| add_row(t));
                    (topics.iter().map(|&t| parent_beta[t]).sum(), parent.stick.omega[topics[0]])
                }
                Origin::Split { topic, part: j } => {
                    let Part { counts, share } = part(*topic, *j);
                    for &(w, x) in counts {
                        init.word_topic[w * k + i] = x;
                    }
                    (parent_beta[*topic] * share, parent.stick.omega[*topic])
                }
                Origin::Retired { .. } => unreachable!("live topics only"),
            };
            beta.push(b);
            omega.push(o);
        }
        beta.push(*parent_beta.last().expect("K + 1 weights"));
        (init, StickPosterior::from_expected_beta(&beta, omega))
    }

    /// Each split topic's parts, by parent topic (one stream of `seed` per split).
    fn split_parts(&self, training: &DocTermMatrix, p: &HdpParams, seed: u64) -> Vec<(usize, Vec<Part>)> {
        let splits: Vec<usize> = self.split_words.iter().map(|(t, _)| *t).collect();
        if splits.is_empty() {
            return Vec::new();
        }
        let mut held = self.topic_words(training, &splits);
        self.split_words
            .iter()
            .enumerate()
            .map(|(s, (topic, words))| {
                let Fate::Split { parts, .. } = &self.plan.fates[*topic] else { unreachable!("a split's topic is split") };
                let documents: Vec<(usize, Held)> = held.iter_mut().enumerate().filter_map(|(d, per)| per[s].take().map(|h| (d, h))).collect();
                (*topic, self.divide(*topic, documents, parts.len(), words, p, seed))
            })
            .collect()
    }

    /// For every training document and each topic of `splits`: the topic's expected
    /// tokens N_dk in the document under the parent and each word's part of them,
    /// (word, c_dw r_dwk); `None` where it holds fewer than [`MIN_SPLIT_TOKENS`].
    fn topic_words(&self, training: &DocTermMatrix, splits: &[usize]) -> Vec<Vec<Option<Held>>> {
        let parent = &self.parent;
        let (elog, exp) = parent.word_major_expectations();
        let beta = parent.stick.expected_beta();
        let g = LocalGlobals::new(parent.params.alpha, &beta, &elog, &exp, parent.params.local_tolerance, parent.params.local_iterations);
        let k = parent.num_topics;
        (0..training.num_rows())
            .into_par_iter()
            .map(|d| {
                let (terms, counts) = training.row(d);
                let local = infer_document(&g, terms, counts, None, &[]);
                splits
                    .iter()
                    .map(|&t| {
                        let n = local.doc_topic[t];
                        (n >= MIN_SPLIT_TOKENS).then(|| Held {
                            tokens: n,
                            words: terms.iter().enumerate().map(|(i, &w)| (w as usize, local.word_topic[i * k + t])).filter(|&(_, x)| x > 0.0).collect(),
                        })
                    })
                    .collect()
            })
            .collect()
    }

    /// `into` parts of parent topic `topic` from the `documents` holding it (each with
    /// what it holds), the restricted fit run on the [`SPLIT_DOCUMENTS`] with the
    /// most, each part's seed words `seeds` (term ids; none: unseeded) pinned to it.
    fn divide(&self, topic: usize, mut documents: Vec<(usize, Held)>, into: usize, seeds: &[Vec<u32>], p: &HdpParams, seed: u64) -> Vec<Part> {
        documents.sort_by(|a, b| b.1.tokens.total_cmp(&a.1.tokens).then(a.0.cmp(&b.0)));
        documents.truncate(SPLIT_DOCUMENTS);
        let mut vocabulary = CompactVocabulary::default();
        let targets: Vec<TargetDocument> = documents
            .iter()
            .map(|(d, held)| {
                let mut doc = TargetDocument { words: Vec::new(), weights: Vec::new(), at: (0, *d) };
                for &(w, x) in &held.words {
                    vocabulary.push(&mut doc, w, x);
                }
                doc
            })
            .collect();
        let pinned: Vec<Vec<usize>> = seeds.iter().map(|part| part.iter().filter_map(|&w| vocabulary.compact(w as usize)).collect()).collect();
        let mut rng = stream(seed, Purpose::EditStart, 1, topic as u64);
        let (counts, _) = if targets.is_empty() {
            (Vec::new(), Vec::new())
        } else {
            restricted_fit(&targets, vocabulary.words.len(), (p, self.parent.num_terms), into, &mut rng, &pinned)
        };
        let mass: Vec<f64> = (0..into).map(|j| counts.get(j).map_or(0.0, |c| c.iter().sum())).collect();
        let found: f64 = mass.iter().sum();
        let tokens = self.parent.topic_tokens[topic];
        let scale = if found > 0.0 { tokens.max(found) / found } else { 0.0 };
        let shares: Vec<f64> = mass.iter().map(|m| if found > 0.0 { (m / found).max(MIN_PART_SHARE) } else { 1.0 / into as f64 }).collect();
        let total_share: f64 = shares.iter().sum();
        (0..into)
            .map(|j| Part {
                counts: counts
                    .get(j)
                    .map_or_else(Vec::new, |c| c.iter().enumerate().filter(|&(_, &x)| x > 0.0).map(|(i, &x)| (vocabulary.words[i], scale * x)).collect()),
                share: shares[j] / total_share,
            })
            .collect()
    }
}

/// Refit the parent in `start` with its edit done (see the module's doc), under params
/// from [`HdpParams::edited`], on the parent's training documents.
pub fn fit_hdp_edited(corpus: &Corpus, p: &HdpParams, start: &EditStart<'_>, seed: u64, ctx: &FitContext) -> Result<HdpModel, FitError> {
    let Prepared { training, design, test_documents } = prepare(corpus, p, start.split_seed)?;
    let from = EditedStart::new(start, corpus, &training)?;
    let v = corpus.num_terms();
    let live = from.live_params(p);
    let (init, stick) = from.state(&training, &live, seed);
    let mut memo = Memo::over(HdpDocuments::whole(&training, v, live.batches), init, &live, &Solo);
    memo.protected = live.topics;
    memo.stick = stick;
    let mut fit = HdpPasses::over(memo, seed);
    passes::run(&mut fit, seed, ctx)?;
    let outcome = retired::expand(from.slots(), fit.outcome(), p.lambda);
    let model = HdpModel::from_fit(outcome, p.clone(), v, training.total_tokens());
    finish(model, design, |m| m.document_dirichlets(&training), &test_documents)
}
