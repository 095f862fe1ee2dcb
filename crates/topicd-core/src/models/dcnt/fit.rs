//! Fitting DCNT or SCNT: the held-out split, the chain on the shared driver, posterior
//! means, and the held-out documents' scores after the chain.
//!
//! Why it exists: it turns a [`Corpus`] into a [`DcntModel`]. The sampler knows
//! nothing of corpora, splits or progress, the chain ([`super::chain`]) nothing of the
//! model it ends in; this module does, and nothing else.
//!
//! Split: documents tagged `split = "test"` are held out; without tags, each document
//! is held out with probability `test_fraction` by its own stream `(seed, Split, 0, d)`.
//! Metadata: φ_d is the corpus' feature row, or the constant 1 (F = 1) without features.
//!
//! Progress per scan (through the chain driver): `loglik_per_token` = [log p(w | z) (Ω
//! collapsed) + log p(z | v)] / N on scans 1, every `loglik_every`-th and the last;
//! diagnostics `active_topics` (topics holding more than 1 % of the tokens now),
//! `mh_acceptance` (share of accepted v entries this scan), `swap_acceptance` (share of
//! accepted within-document topic swaps this scan), `lambda_v`, `lambda_a`,
//! `kept_scans` (and the driver's `kept_sweeps`, the same count).
//!
//! Chains: `chains` > 1 runs that many chains one after another from seeds derived from
//! the job's ([`crate::models::chains`]), on the same split; the last chain's model is
//! the pooled one ([`super::pooled`]), and only it scores the held-out documents.
//!
//! Checkpoints: the driver checkpoints the chain every `checkpoint_every_s`. Held-out
//! documents are scored after the chain by the Chib-style estimator, which can take as
//! long as the chain; with checkpoints on, the finished chain is checkpointed at once
//! (at the chain's end, with the model without its held-out report: [`after_chain`]),
//! and again as documents finish, with their estimates. A fit resumed from such a
//! checkpoint goes straight to the documents not yet scored. Either way the model is
//! the uninterrupted fit's, byte for byte.

use super::chain::{self, DcntChain, PosteriorSums};
use super::edit::EditedStart;
use super::heldout::ChibSettings;
use super::model::{DcntModel, ENCODING_VERSION};
use super::params::DcntParams;
use super::pooled::{self, ChainResult};
use super::sample::{active_topics, Loadings};
use super::scoring::DcntChib;
use super::state::Documents;
use super::update::UpdatedStart;
use super::variant::Covariance;
use crate::corpus::Corpus;
use crate::models::after_chain::{self, EndOfChain};
use crate::models::chain::{Position, Schedule};
use crate::models::chain_fit::{fit_chains, ChainFit};
use crate::models::design::{DesignRequest, DesignSpec};
use crate::models::heldout::{corpus_documents, HeldoutReport, ScoredSoFar};
use crate::models::seeds::{MissingWord, SeedPrior};
use crate::models::slots::Slots;
use crate::models::splits;
use crate::models::{EditStart, FitContext, FitError, ParamError, RestoreError, TopicModel, UpdateStart};

/// Corpus indices of the training and held-out documents.
/// (The service's one split rule, [`crate::models::splits`].)
pub fn split_documents(corpus: &Corpus, test_fraction: f64, seed: u64) -> (Vec<usize>, Vec<usize>) {
    let held_out = splits::test_mask(corpus, test_fraction, seed);
    (0..corpus.num_documents()).partition(|&d| !held_out[d])
}

/// φ of every corpus document (D × F) and the feature names; F = 1 with φ_d = 1 when
/// the corpus has no features.
pub fn corpus_features(corpus: &Corpus) -> (Vec<String>, usize, Vec<f64>) {
    match &corpus.features {
        Some(fm) if !fm.names.is_empty() => (fm.names.clone(), fm.names.len(), fm.values.clone()),
        _ => (Vec::new(), 1, vec![1.0; corpus.num_documents()]),
    }
}

/// φ of every corpus document from the covariates the fit names: the design's columns
/// (an intercept, then each covariate's; [`DesignSpec`]), its column names and the
/// spec the model keeps. Errors are the caller's: a corpus without those covariates, or
/// a document missing one (both refused at submit, checked again here).
fn covariate_features(corpus: &Corpus, request: &DesignRequest) -> Result<(Vec<String>, usize, Vec<f64>, DesignSpec), FitError> {
    let table = corpus.covariates.as_ref().ok_or_else(|| FitError::Params(ParamError::new("covariates", "the corpus has no covariates")))?;
    let spec = DesignSpec::build(request, table).map_err(FitError::Params)?;
    let rows = spec.rows(table).map_err(|e| FitError::Params(ParamError::new("covariates", e)))?;
    let names = spec.column_names();
    Ok((names.clone(), names.len(), rows, spec))
}

/// The seeds' prior over the training documents' tokens ([`crate::models::seeds`]), and
/// the seed words the vocabulary lacks (left out under `missing_seed_words: ignore`).
fn seed_prior(corpus: &Corpus, p: &DcntParams, docs: &Documents) -> Result<(SeedPrior, Vec<MissingWord>), FitError> {
    if p.seeds.is_empty() {
        return Ok((SeedPrior::default(), Vec::new()));
    }
    let resolved = p.seeds.resolve(&corpus.lexicon).map_err(FitError::Params)?;
    let mut word_counts = vec![0u64; docs.num_terms];
    for (terms, counts) in &docs.rows {
        for (&w, &c) in terms.iter().zip(counts) {
            word_counts[w as usize] += c as u64;
        }
    }
    Ok((SeedPrior::new(&resolved, p.seeds.strength, &word_counts, p.topics), resolved.missing))
}

/// What a fit fixes before its chain runs: the split, every document's metadata and the
/// training documents in the sampler's layout.
struct TrainingSet {
    train: Vec<usize>,
    heldout: Vec<usize>,
    feature_names: Vec<String>,
    num_features: usize,
    /// φ_d of every corpus document, D × F.
    features: Vec<f64>,
    mean_features: Vec<f64>,
    /// The design φ was built from, when the fit reads covariates.
    design: Option<DesignSpec>,
    docs: Documents,
    /// The seeds' pseudo-counts over the training tokens, and the seed words left out.
    prior: SeedPrior,
    missing_seed_words: Vec<MissingWord>,
}

impl TrainingSet {
    /// The training set of a fit whose held-out split is drawn with `split_seed` (the
    /// job's seed, or for an update its first ancestor's).
    fn new(corpus: &Corpus, p: &DcntParams, split_seed: u64) -> Result<Self, FitError> {
        let (train, heldout) = split_documents(corpus, p.test_fraction, split_seed);
        let (feature_names, f, features, design) = if p.design.covariates.is_empty() {
            let (names, f, features) = corpus_features(corpus);
            (names, f, features, None)
        } else {
            let (names, f, features, spec) = covariate_features(corpus, &p.design)?;
            (names, f, features, Some(spec))
        };
        let rows = train
            .iter()
            .map(|&d| {
                let (terms, counts) = corpus.counts.row(d);
                (terms.to_vec(), counts.to_vec())
            })
            .collect();
        let train_features: Vec<f64> = train.iter().flat_map(|&d| features[d * f..(d + 1) * f].iter().copied()).collect();
        let docs = Documents::new(rows, train_features, f, corpus.num_terms());
        if docs.num_tokens() == 0 {
            return Err(FitError::InvalidInput(crate::models::causes::InvalidInput::NoTrainingTokens));
        }
        let mut mean_features = vec![0.0; f];
        for d in 0..docs.num_docs() {
            mean_features.iter_mut().zip(docs.phi(d)).for_each(|(m, x)| *m += x / docs.num_docs() as f64);
        }
        let (prior, missing_seed_words) = seed_prior(corpus, p, &docs)?;
        Ok(TrainingSet { train, heldout, feature_names, num_features: f, features, mean_features, design, docs, prior, missing_seed_words })
    }

    /// The model a finished chain ends in (posterior means over its kept scans), without
    /// its held-out report or convergence report, and the chain's trace.
    fn model(&self, p: &DcntParams, covariance: Covariance, chain: DcntChain, end: &Position) -> ChainResult {
        let DcntChain { state, mut sums, last, .. } = chain;
        if sums.kept == 0 {
            // No scan fell on the thinning grid: use the final state.
            sums.add(&state, &self.docs, f64::NAN);
        }
        let scale = 1.0 / sums.kept as f64;
        let topic_shares: Vec<f64> = sums.shares.iter().map(|x| x * scale).collect();
        let PosteriorSums { omega, proportions, a, eta, lambda_v, acceptance, kept, draws, trace, .. } = sums;
        let model = DcntModel {
            version: ENCODING_VERSION,
            covariance,
            params: p.clone(),
            num_terms: self.docs.num_terms,
            topic_word: omega.iter().map(|x| x * scale).collect(),
            active_topics: active_topics(topic_shares.iter().copied()),
            topic_shares,
            document_proportions: proportions.iter().map(|x| x * scale).collect(),
            train_documents: self.train.clone(),
            heldout_documents: self.heldout.clone(),
            feature_names: self.feature_names.clone(),
            num_features: self.num_features,
            features: self.features.clone(),
            mean_features: self.mean_features.clone(),
            mean: Loadings { a: a.iter().map(|x| x * scale).collect(), eta: eta.iter().map(|x| x * scale).collect(), lambda_v: lambda_v * scale },
            last,
            kept_scans: kept,
            tokens: self.docs.num_tokens() as u64,
            final_loglik_per_token: end.last_loglik,
            mh_acceptance: acceptance * scale,
            heldout: None,
            design: self.design.clone(),
            draws,
            convergence: None,
            alignments: Vec::new(),
            draws_per_chain: Vec::new(),
            missing_seed_words: self.missing_seed_words.clone(),
            slots: None,
            reference_chain: 0,
        };
        ChainResult { model, trace }
    }

    /// Whether `m` is the model this fit's chain ended in at `end` as far as the fit
    /// fixes it (parameters, split, metadata, sizes): `None`, or what differs.
    fn mismatch(&self, p: &DcntParams, covariance: Covariance, m: &DcntModel, end: &Position) -> Option<&'static str> {
        let (k, v, f) = (p.topics, self.docs.num_terms, self.num_features);
        let checks = [
            (m.covariance == covariance && m.params == *p && m.num_terms == v, "parameters"),
            (m.train_documents == self.train && m.heldout_documents == self.heldout, "split"),
            (
                m.feature_names == self.feature_names
                    && m.num_features == f
                    && m.features == self.features
                    && m.mean_features == self.mean_features
                    && m.design == self.design,
                "features",
            ),
            (m.tokens == self.docs.num_tokens() as u64 && m.heldout.is_none(), "tokens"),
            // A pooled model's figures are the chains' (their kept scans add up, its final
            // log joint is their mean); one chain's are this chain's.
            (m.kept_scans == end.kept.max(1) * p.chains && (p.chains > 1 || m.final_loglik_per_token.to_bits() == end.last_loglik.to_bits()), "position"),
            (m.topic_word.len() == k * v && m.topic_shares.len() == k && m.document_proportions.len() == self.train.len() * k, "posterior means"),
            (m.mean.a.len() == k * k && m.last.a.len() == k * k && m.mean.eta.len() == f * k && m.last.eta.len() == f * k, "loadings"),
        ];
        checks.iter().find(|(ok, _)| !ok).map(|(_, what)| *what)
    }
}

/// The held-out estimator a fit scores its test documents with.
fn chib(model: &DcntModel) -> DcntChib {
    let p = &model.params;
    DcntChib::new(model, ChibSettings { burn_in: p.heldout_burn_in, chain_length: p.heldout_chain_length, acceptance_samples: p.heldout_acceptance_samples })
}

/// The fitted model and scored documents a checkpoint at the chain's end carries
/// ([`after_chain`]), checked against this fit.
fn restore_after_chain(
    training: &TrainingSet,
    p: &DcntParams,
    covariance: Covariance,
    seed: u64,
    bytes: &[u8],
    scored: ScoredSoFar,
    position: &Position,
) -> Result<(DcntModel, ScoredSoFar), RestoreError> {
    const WHAT: &str = "the fitted model in the checkpoint";
    let model = DcntModel::decode(bytes).map_err(|e| RestoreError::undecodable(WHAT, e))?;
    if let Some(part) = training.mismatch(p, covariance, &model, position) {
        return Err(RestoreError::Mismatch { what: WHAT, part });
    }
    let scored = scored.check_for(&chib(&model), model.heldout_documents.len(), seed)?;
    Ok((model, scored))
}

/// Run the sampler on the training documents through the chain driver (resuming from
/// `ctx`'s checkpoint when it has a usable one), take posterior means, and score the
/// held-out documents.
pub fn fit_dcnt(corpus: &Corpus, p: &DcntParams, covariance: Covariance, seed: u64, ctx: &FitContext) -> Result<DcntModel, FitError> {
    let training = TrainingSet::new(corpus, p, seed)?;
    fit_chains(&DcntFit { corpus, p, covariance, training: &training, start: Start::Fresh }, seed, ctx)
}

/// Fit DCNT or SCNT on the parent's documents and new ones ([`crate::models::updates`]):
/// the parent's split (drawn with its seed; the new documents drawn by the same rule),
/// chains started from the parent's state with the new documents folded in
/// ([`UpdatedStart`]), then as [`fit_dcnt`]. An edited parent's retired slots stay
/// retired: the chains run on its live topics and the new ones, and the model keeps
/// the slots.
pub fn fit_dcnt_updated(
    corpus: &Corpus,
    p: &DcntParams,
    covariance: Covariance,
    start: &UpdateStart<'_>,
    seed: u64,
    ctx: &FitContext,
) -> Result<DcntModel, FitError> {
    let parent = DcntModel::decode_parent(start.parent)?;
    let slots = parent.slots_or_all().with_added(start.new_topics);
    if slots.total() != p.topics {
        return Err(FitError::Params(ParamError::new("model", "the parent model's topics and the new ones are not the update's")));
    }
    let live = p.on_live_topics(&slots);
    let training = TrainingSet::new(corpus, &live, start.split_seed)?;
    let update = UpdatedStart::new((parent, start), (&live, covariance), (&training.train, &training.heldout), &training.docs, &training.feature_names)?;
    let model = fit_chains(&DcntFit { corpus, p: &live, covariance, training: &training, start: Start::Updated(Box::new(update)) }, seed, ctx)?;
    Ok(in_slots(model, slots))
}

/// Refit DCNT or SCNT from an edited parent ([`crate::models::edits`]): the parent's
/// split (drawn with its seed), chains on the child's live topics started from the
/// parent's state with the edit done ([`EditedStart`]), then as [`fit_dcnt`]; the model
/// keeps the child's slots.
pub fn fit_dcnt_edited(
    corpus: &Corpus,
    p: &DcntParams,
    covariance: Covariance,
    start: &EditStart<'_>,
    seed: u64,
    ctx: &FitContext,
) -> Result<DcntModel, FitError> {
    if p.topics != start.plan.child_topics() {
        return Err(FitError::Params(ParamError::new("model", "the params' topics are not the edit's")));
    }
    let slots = start.plan.child_slots();
    let live = p.on_live_topics(&slots);
    let training = TrainingSet::new(corpus, &live, start.split_seed)?;
    let edited = EditedStart::new(start, (covariance, slots.clone()), (&training.train, &training.docs), &corpus.lexicon)?;
    let model = fit_chains(&DcntFit { corpus, p: &live, covariance, training: &training, start: Start::Edited(edited) }, seed, ctx)?;
    Ok(in_slots(model, slots))
}

/// `model`, fitted on the live topics of `slots`, marked with them (unmarked when every
/// topic is live: its topics are the child's as they are).
fn in_slots(model: DcntModel, slots: Slots) -> DcntModel {
    DcntModel { slots: (!slots.all_live()).then_some(slots), ..model }
}

/// Where a chain starts when it does not resume from a checkpoint.
enum Start {
    /// From the prior (or the collapsed start, or the seeds').
    Fresh,
    /// From a parent with new documents.
    Updated(Box<UpdatedStart>),
    /// From an edited parent.
    Edited(EditedStart),
}

/// What DCNT and SCNT supply to [`fit_chains`]: the training set, the variant and where
/// its chains start.
struct DcntFit<'a> {
    corpus: &'a Corpus,
    p: &'a DcntParams,
    covariance: Covariance,
    training: &'a TrainingSet,
    start: Start,
}

impl<'a> ChainFit for DcntFit<'a> {
    type Model = DcntModel;
    type Chain = DcntChain<'a>;

    fn family(&self) -> &'static str {
        self.covariance.family_name()
    }

    fn chains(&self) -> usize {
        self.p.chains
    }

    fn schedule(&self) -> Schedule {
        chain::schedule(self.p)
    }

    fn fresh(&self, seed: u64, ctx: &FitContext) -> DcntChain<'a> {
        let (docs, variant, prior) = (&self.training.docs, (self.p, self.covariance), self.training.prior.clone());
        let state = match &self.start {
            Start::Fresh => return DcntChain::new(self.p, self.covariance, docs, &self.training.prior, seed, &|| ctx.cancel.is_cancelled()),
            Start::Updated(update) => update.state(docs, variant, prior, seed, &|| ctx.cancel.is_cancelled()),
            Start::Edited(edited) => edited.state(docs, variant, prior, seed),
        };
        DcntChain::from_state(self.p, docs, state)
    }

    fn restore(&self, state: &[u8], position: &Position) -> Result<DcntChain<'a>, RestoreError> {
        DcntChain::restore(self.p, self.covariance, &self.training.docs, &self.training.prior, state, position)
    }

    fn restore_ended(&self, model: &[u8], scored: ScoredSoFar, seed: u64, position: &Position) -> Result<(DcntModel, ScoredSoFar), RestoreError> {
        restore_after_chain(self.training, self.p, self.covariance, seed, model, scored, position)
    }

    fn ended(&self, chain: DcntChain<'a>, end: &Position) -> ChainResult {
        self.training.model(self.p, self.covariance, chain, end)
    }

    fn pool(&self, finished: &[ChainResult], last: ChainResult) -> DcntModel {
        pooled::pool(finished, last)
    }

    fn score_heldout(&self, model: &mut DcntModel, scored: Option<ScoredSoFar>, at: &EndOfChain, ctx: &FitContext) -> Result<(), FitError> {
        if !model.heldout_documents.is_empty() {
            model.heldout = Some(score_heldout(self.corpus, model, scored, at, ctx)?);
        }
        Ok(())
    }
}

/// Score the model's held-out documents by the Chib-style estimator, from the documents
/// `scored` already (a resumed fit), checkpointing as [`after_chain`] does.
fn score_heldout(corpus: &Corpus, model: &DcntModel, scored: Option<ScoredSoFar>, at: &EndOfChain, ctx: &FitContext) -> Result<HeldoutReport, FitError> {
    let scorer = chib(model);
    let docs = corpus_documents(corpus, &model.heldout_documents, |d| model.document_features(d).to_vec());
    after_chain::score_heldout(&scorer, &docs, || model.encode(), scored, at, ctx)
}
