//! Fitting LDA in one process: what LDA supplies to the shared chain fit
//! ([`crate::models::chain_fit`]): its split, its chain, the model a chain ends in, the
//! check of a checkpointed model and the held-out scoring.

use super::chain::{LdaChain, PosteriorSums};
use super::edit::EditedStart;
use super::heldout::ChibSettings;
use super::model::{LdaChib, LdaModel, ENCODING_VERSION};
use super::pooled;
use super::tokens::Tokens;
use super::update::UpdatedStart;
use super::LdaParams;
use crate::corpus::{Corpus, DocTermMatrix};
use crate::models::after_chain::{self, EndOfChain};
use crate::models::causes::{Internal, Stored};
use crate::models::chain::{Position, Schedule};
use crate::models::chain_fit::{fit_chains, ChainFit};
use crate::models::chains::ChainResult;
use crate::models::design::DesignSpec;
use crate::models::heldout::{corpus_documents, HeldoutDoc, HeldoutReport, ScoredSoFar};
use crate::models::seeds::{MissingWord, SeedPrior, SeedRamp};
use crate::models::splits;
use crate::models::{EditStart, FitContext, FitError, ParamError, RestoreError, TopicModel, UpdateStart};

/// Fit LDA: the shared chain fit ([`fit_chains`]) runs [`LdaChain`]'s sweeps chain
/// after chain (resuming from `ctx`'s checkpoint when it has a usable one), then
/// posterior means are taken over the kept sweeps, the chains pooled and the held-out
/// documents, if any, scored.
pub fn fit_lda(corpus: &Corpus, p: &LdaParams, seed: u64, ctx: &FitContext) -> Result<LdaModel, FitError> {
    let v = corpus.num_terms();
    let (held_out, test_documents, training) = training_set(corpus, p, seed)?;
    let mut tokens = Tokens::from_counts(&training, v);
    tokens.set_blocks(p.sync_tokens);
    let design = training_design(corpus, p, &held_out)?;
    let (prior, missing_seed_words) = seed_prior(corpus, p, &tokens)?;
    let fit = LdaFit { corpus, p, tokens: &tokens, v, held_out: &held_out, test_documents, design, prior, missing_seed_words, start: Start::Fresh };
    fit_chains(&fit, seed, ctx)
}

/// Refit LDA from an edited parent ([`crate::models::edits`]): the parent's training
/// split (drawn with its seed), chains started from the parent's state with the edit
/// done ([`EditedStart`]), then as [`fit_lda`].
pub fn fit_lda_edited(corpus: &Corpus, p: &LdaParams, start: &EditStart<'_>, seed: u64, ctx: &FitContext) -> Result<LdaModel, FitError> {
    let parent = LdaModel::decode(start.parent).map_err(|e| FitError::Internal(Internal::Corrupt { what: Stored::Model, detail: e.to_string() }))?;
    let v = corpus.num_terms();
    let (held_out, test_documents, training) = training_set(corpus, p, start.split_seed)?;
    let mut tokens = Tokens::from_counts(&training, v);
    tokens.set_blocks(p.sync_tokens);
    let edited = EditedStart::new(&parent, start.plan, &corpus.lexicon, &tokens)?;
    let design = training_design(corpus, p, &held_out)?;
    let (prior, missing_seed_words) = seed_prior(corpus, p, &tokens)?;
    let fit = LdaFit { corpus, p, tokens: &tokens, v, held_out: &held_out, test_documents, design, prior, missing_seed_words, start: Start::Edited(edited) };
    fit_chains(&fit, seed, ctx)
}

/// Fit LDA on the parent's documents and new ones ([`crate::models::updates`]): the
/// parent's split (drawn with its seed; the new documents drawn by the same rule),
/// chains started from the parent's state with the new documents folded in
/// ([`UpdatedStart`]), then as [`fit_lda`].
pub fn fit_lda_updated(corpus: &Corpus, p: &LdaParams, start: &UpdateStart<'_>, seed: u64, ctx: &FitContext) -> Result<LdaModel, FitError> {
    let parent = LdaModel::decode(start.parent).map_err(|e| FitError::Internal(Internal::Corrupt { what: Stored::Model, detail: e.to_string() }))?;
    let v = corpus.num_terms();
    let (held_out, test_documents, training) = training_set(corpus, p, start.split_seed)?;
    let mut tokens = Tokens::from_counts(&training, v);
    tokens.set_blocks(p.sync_tokens);
    let parent_training = held_out.iter().take(start.parent_documents).filter(|&&h| !h).count();
    let updated = UpdatedStart::new(&parent, start, &tokens, parent_training)?;
    let design = training_design(corpus, p, &held_out)?;
    let (prior, missing_seed_words) = seed_prior(corpus, p, &tokens)?;
    let fit = LdaFit { corpus, p, tokens: &tokens, v, held_out: &held_out, test_documents, design, prior, missing_seed_words, start: Start::Updated(updated) };
    fit_chains(&fit, seed, ctx)
}

/// Where a chain starts when it does not resume from a checkpoint.
enum Start<'a> {
    /// From the prior (or the seeds' start).
    Fresh,
    /// From an edited parent.
    Edited(EditedStart<'a>),
    /// From a parent with new documents.
    Updated(UpdatedStart<'a>),
}

/// The seeds' prior over the training tokens, and the seed words left out.
fn seed_prior(corpus: &Corpus, p: &LdaParams, tokens: &Tokens) -> Result<(SeedPrior, Vec<MissingWord>), FitError> {
    if p.seed_words.is_empty() {
        return Ok((SeedPrior::default(), Vec::new()));
    }
    let resolved = p.seeds().resolve(&corpus.lexicon).map_err(FitError::Params)?;
    let word_counts: Vec<u64> = (0..tokens.num_terms).map(|w| tokens.positions_of(w).len() as u64).collect();
    Ok((SeedPrior::new(&resolved, p.seed_strength, &word_counts, p.topics), resolved.missing))
}

/// What LDA supplies to [`fit_chains`]: the training tokens and split, and the design
/// its models carry.
struct LdaFit<'a> {
    corpus: &'a Corpus,
    p: &'a LdaParams,
    tokens: &'a Tokens,
    v: usize,
    held_out: &'a [bool],
    test_documents: usize,
    design: Option<(DesignSpec, Vec<f64>)>,
    prior: SeedPrior,
    missing_seed_words: Vec<MissingWord>,
    start: Start<'a>,
}

impl LdaFit<'_> {
    /// The seeds' prior through a chain's sweeps: a fresh chain ramps it up, one started
    /// from a fitted state (an edit's, an update's) has it whole.
    fn ramp(&self) -> SeedRamp {
        match self.start {
            Start::Fresh => SeedRamp::fresh(self.prior.clone(), self.p.burn_in),
            Start::Edited(_) | Start::Updated(_) => SeedRamp::none(self.prior.clone()),
        }
    }
}

impl<'a> ChainFit for LdaFit<'a> {
    type Model = LdaModel;
    type Chain = LdaChain<'a>;

    fn family(&self) -> &'static str {
        "lda"
    }

    fn chains(&self) -> usize {
        self.p.chains
    }

    fn schedule(&self) -> Schedule {
        self.p.schedule()
    }

    fn fresh(&self, seed: u64, ctx: &FitContext) -> LdaChain<'a> {
        match &self.start {
            Start::Edited(edited) => {
                LdaChain::from_start(self.p, self.tokens, self.prior.clone(), edited.assignments(self.tokens, seed), edited.alpha(), edited.beta())
            }
            Start::Updated(updated) => LdaChain::from_start(
                self.p,
                self.tokens,
                self.prior.clone(),
                updated.assignments(self.tokens, seed, &|| ctx.cancel.is_cancelled()),
                updated.alpha(),
                updated.beta(),
            ),
            Start::Fresh => LdaChain::seeded(self.p, self.tokens, seed, self.ramp()),
        }
    }

    fn restore(&self, state: &[u8], position: &Position) -> Result<LdaChain<'a>, RestoreError> {
        LdaChain::restore(self.p, self.tokens, self.ramp(), state, position)
    }

    fn restore_ended(&self, model: &[u8], scored: ScoredSoFar, seed: u64, position: &Position) -> Result<(LdaModel, ScoredSoFar), RestoreError> {
        restore_after_chain(self.p, self.tokens.num_tokens(), self.v, self.test_documents, seed, model, scored, position)
    }

    fn ended(&self, mut lda: LdaChain<'a>, end: &Position) -> ChainResult<LdaModel> {
        let trace = std::mem::take(&mut lda.sums.trace);
        let mut model = model_of(self.p, lda, self.tokens, self.v, self.test_documents, end);
        if let Some((spec, rows)) = &self.design {
            (model.design, model.design_rows) = (Some(spec.clone()), rows.clone());
        }
        model.missing_seed_words = self.missing_seed_words.clone();
        ChainResult { model, trace }
    }

    fn pool(&self, finished: &[ChainResult<LdaModel>], last: ChainResult<LdaModel>) -> LdaModel {
        pooled::pool(finished, last)
    }

    fn score_heldout(&self, model: &mut LdaModel, scored: Option<ScoredSoFar>, at: &EndOfChain, ctx: &FitContext) -> Result<(), FitError> {
        if scores_heldout(self.p, self.test_documents) {
            model.heldout = Some(score_heldout(model, &heldout_docs(self.corpus, self.held_out), self.p, scored, at, ctx)?);
        }
        Ok(())
    }
}

/// The fit's split: which documents are held out, how many, and the training
/// documents' counts.
pub(super) fn training_set<'c>(corpus: &'c Corpus, p: &LdaParams, seed: u64) -> Result<(Vec<bool>, usize, std::borrow::Cow<'c, DocTermMatrix>), FitError> {
    let held_out = splits::test_mask(corpus, p.test_fraction, seed);
    let test_documents = held_out.iter().filter(|&&t| t).count();
    if test_documents == corpus.num_documents() {
        return Err(FitError::Params(ParamError::new("test_fraction", "every document is held out: nothing is left to train on")));
    }
    let training = if test_documents == 0 {
        std::borrow::Cow::Borrowed(&corpus.counts)
    } else {
        std::borrow::Cow::Owned(DocTermMatrix::from_rows((0..corpus.num_documents()).filter(|&d| !held_out[d]).map(|d| {
            let (terms, counts) = corpus.counts.row(d);
            terms.iter().copied().zip(counts.iter().copied()).collect()
        })))
    };
    Ok((held_out, test_documents, training))
}

/// Whether the fit ends with the Chib-style estimate of its held-out documents: when
/// there are some and `heldout_chain_length` is not 0.
pub(super) fn scores_heldout(p: &LdaParams, test_documents: usize) -> bool {
    test_documents > 0 && p.heldout_chain_length > 0
}

/// The held-out documents, in corpus order.
pub(super) fn heldout_docs(corpus: &Corpus, held_out: &[bool]) -> Vec<HeldoutDoc> {
    let held: Vec<usize> = (0..corpus.num_documents()).filter(|&d| held_out[d]).collect();
    corpus_documents(corpus, &held, |_| Vec::new())
}

/// The held-out documents' report for the fitted `model` (checkpointed as it goes).
pub(super) fn score_heldout(
    model: &LdaModel,
    docs: &[HeldoutDoc],
    p: &LdaParams,
    scored: Option<ScoredSoFar>,
    at: &EndOfChain,
    ctx: &FitContext,
) -> Result<HeldoutReport, FitError> {
    let scorer = LdaChib { model, settings: chib_settings(p) };
    after_chain::score_heldout(&scorer, docs, || model.encode(), scored, at, ctx)
}

/// The design of the covariates the fit reads, and its rows for the training documents
/// (corpus order, held-out documents left out); `None` without covariates.
pub(super) fn training_design(corpus: &Corpus, p: &LdaParams, held_out: &[bool]) -> Result<Option<(DesignSpec, Vec<f64>)>, FitError> {
    if p.covariates.is_empty() {
        return Ok(None);
    }
    let table = corpus.covariates.as_ref().ok_or_else(|| FitError::Params(ParamError::new("covariates", "the corpus has no covariates")))?;
    let spec = DesignSpec::build(&p.design_request(), table).map_err(FitError::Params)?;
    let all = spec.rows(table).map_err(|e| FitError::Params(ParamError::new("covariates", e)))?;
    let width = spec.width();
    let rows = (0..corpus.num_documents()).filter(|&d| !held_out[d]).flat_map(|d| all[d * width..(d + 1) * width].iter().copied()).collect();
    Ok(Some((spec, rows)))
}

/// The held-out estimator's settings a fit scores its test documents with.
pub(super) fn chib_settings(p: &LdaParams) -> ChibSettings {
    ChibSettings { burn_in: p.heldout_burn_in, chain_length: p.heldout_chain_length }
}

/// The fitted model and scored documents a checkpoint at the chain's end carries
/// ([`after_chain`]), checked against this fit.
#[allow(clippy::too_many_arguments)]
pub(super) fn restore_after_chain(
    p: &LdaParams,
    num_tokens: usize,
    v: usize,
    test_documents: usize,
    seed: u64,
    bytes: &[u8],
    scored: ScoredSoFar,
    position: &Position,
) -> Result<(LdaModel, ScoredSoFar), RestoreError> {
    const WHAT: &str = "the fitted model in the checkpoint";
    let m = LdaModel::decode(bytes).map_err(|e| RestoreError::undecodable(WHAT, e))?;
    let k = p.topics;
    let checks = [
        (m.version == ENCODING_VERSION && m.params == *p && m.num_terms == v, "parameters"),
        (m.tokens == num_tokens as u64 && m.test_documents == test_documents && m.heldout.is_none(), "split"),
        // A pooled model's figures are the chains' (their kept sweeps add up, its final
        // log joint is their mean); one chain's are this chain's.
        (
            m.kept_sweeps == position.kept.max(1) * p.chains && (p.chains > 1 || m.final_loglik_per_token.to_bits() == position.last_loglik.to_bits()),
            "position",
        ),
        (m.word_rates.len() == k * v && m.topic_shares.len() == k && m.alpha.len() == k, "posterior means"),
    ];
    RestoreError::first_mismatch(WHAT, &checks)?;
    let scored = scored.check_for(&LdaChib { model: &m, settings: chib_settings(p) }, test_documents, seed)?;
    Ok((m, scored))
}

/// The model a finished chain ends in (posterior means over its kept sweeps), without
/// its held-out report.
fn model_of(p: &LdaParams, lda: LdaChain, tokens: &Tokens, v: usize, test_documents: usize, end: &Position) -> LdaModel {
    let LdaChain { state, mut sums, doc_topics_sum, optimizations, .. } = lda;
    if sums.kept == 0 {
        // No sweep fell on the thinning grid: use the final state.
        sums.add(&state, tokens, tokens.num_tokens());
    }
    let ended = EndedChain { alpha: state.alpha, beta: state.beta, sums, doc_topics_sum, optimizations, num_tokens: tokens.num_tokens() };
    model_of_ended(p, ended, v, test_documents, end)
}

/// What a finished chain leaves for its model: the posterior sums over every document
/// (gathered from the shards in a distributed fit) and the final hyperparameters.
pub(super) struct EndedChain {
    pub(super) alpha: Vec<f64>,
    pub(super) beta: f64,
    pub(super) sums: PosteriorSums,
    pub(super) doc_topics_sum: f64,
    pub(super) optimizations: usize,
    pub(super) num_tokens: usize,
}

/// The model of an [`EndedChain`] whose sums hold at least one sweep.
pub(super) fn model_of_ended(p: &LdaParams, ended: EndedChain, v: usize, test_documents: usize, end: &Position) -> LdaModel {
    let k = p.topics;
    let EndedChain { alpha, beta, sums, doc_topics_sum, optimizations, num_tokens } = ended;
    let PosteriorSums { phi: phi_sum, theta: theta_sum, shares: share_sum, kept, theta_draws, .. } = sums;
    let scale = 1.0 / kept as f64;
    // Transpose φ to topic-major for the summaries.
    let mut word_rates = vec![0.0; k * v];
    for w in 0..v {
        for t in 0..k {
            word_rates[t * v + w] = phi_sum[w * k + t] * scale;
        }
    }
    LdaModel {
        version: ENCODING_VERSION,
        params: p.clone(),
        num_terms: v,
        word_rates,
        document_proportions: theta_sum.into_iter().map(|x| x * scale).collect(),
        topic_shares: share_sum.into_iter().map(|x| x * scale).collect(),
        kept_sweeps: kept,
        tokens: num_tokens as u64,
        final_loglik_per_token: end.last_loglik,
        mean_doc_topics: doc_topics_sum / p.iterations as f64,
        test_documents,
        heldout: None,
        convergence: None,
        alignments: Vec::new(),
        design: None,
        design_rows: Vec::new(),
        theta_draws,
        missing_seed_words: Vec::new(),
        reference_chain: 0,
        alpha,
        beta,
        optimizations,
    }
}

#[cfg(test)]
#[path = "resume_tests.rs"]
mod resume_tests;

#[cfg(test)]
#[path = "seeded_tests.rs"]
mod seeded_tests;
