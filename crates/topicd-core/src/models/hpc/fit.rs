//! Fitting HPC or PCM: splits, the chain (on the shared driver, [`crate::models::chain`],
//! with HPC's kernels from [`super::chain`]), posterior means of the estimands,
//! threshold calibration and the test-split evaluation.
//!
//! Why it exists: it turns a [`Corpus`] into an [`HpcModel`]. The sampler knows nothing
//! of corpora, splits or progress; this module does, and nothing else.
//!
//! Splits: the rule every family shares ([`splits::assign`]): documents tagged `test`
//! form the test split and `validation` (or `valid`, `dev`) the validation split, or
//! without tags each document is assigned by its own random stream from the seed
//! (`validation_fraction`, `test_fraction`). Documents without labels cannot train a
//! supervised model and are left out (and counted).
//!
//! Stages of an HPC job with validation documents: the chain on the training documents,
//! the calibration on the validation documents, then (`refit_with_validation`, the
//! default) a second chain on the training and validation documents together whose
//! rates the model keeps, with the first chain's calibration ([`super::refit`]). The
//! job counts its iterations through both chains as one sequence (2 × `iterations`).
//!
//! Several chains (`chains` = C > 1): each stage runs C chains one after another
//! ([`crate::models::chains`], chain c from `chain_seed(seed, c)`, the refit's from
//! `refit_seed` of that) and pools them ([`super::pooled`]); the calibration is chosen
//! on the pooled first stage, and the job counts 2 × C × `iterations` with a refit.

use super::calibration::{best_f1_threshold, calibrate, score, Thresholds};
use super::chain::{EndedChain, HpcChain};
use super::data::{strip_redundant_ancestors, HpcData};
use super::edit::EditedStart;
use super::label_posterior::{
    ancestors_are_uploaded, candidate_sets, document_rates, label_probabilities, Closure, Evidence, LabelPrediction, Predictor, TEMPERATURES,
};
use super::model::{Evaluation, FitSummary, HpcModel, ENCODING_VERSION};
use super::params::HpcParams;
use super::pooled::{self, ChainResult};
use super::predict::predict_affinities;
use super::refit::{refit_seed, unwrap_refit_stage, wrap_refit_stage, Calibration, RefitChain};
use super::retired;
use super::start::{ChainStart, UpdatedStart};
use super::variant::Supervision;
use crate::corpus::Corpus;
use crate::models::causes::InvalidInput;
use crate::models::chain::{self, Chain, Checkpoint, Position, Resume};
use crate::models::chains::{self as several, chain_seed};
use crate::models::convergence::KeptTrace;
use crate::models::design::DesignSpec;
use crate::models::seeds::MissingWord;
use crate::models::splits::{self, Split};
use crate::models::{EditStart, FitContext, FitError, ParamError, Stage, UpdateStart};
use rayon::prelude::*;

/// Which part of the corpus a document belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Train,
    Validation,
    Test,
    /// Supervised fits only: a document with no label.
    Unlabelled,
}

/// Assign every document of the corpus a role: the corpus' split ([`splits::assign`],
/// the rule every family shares) unless the fit is HPC's (labelled) and the document
/// has no label.
pub fn assign_roles(corpus: &Corpus, p: &HpcParams, supervision: Supervision, seed: u64) -> Vec<Role> {
    let split = splits::assign(corpus, p.test_fraction, p.validation_fraction, seed);
    split
        .into_iter()
        .enumerate()
        .map(|(d, split)| match split {
            _ if supervision.is_labelled() && corpus.doc_labels[d].is_empty() => Role::Unlabelled,
            Split::Train => Role::Train,
            Split::Validation => Role::Validation,
            Split::Test => Role::Test,
        })
        .collect()
}

/// The corpus shaped for the sampler: node tree, active nodes and counts of the
/// documents with `wanted` roles.
pub(super) struct Shaped {
    pub(super) data: HpcData,
    /// Label name of each topic.
    pub(super) names: Vec<String>,
    /// Each document's labels as uploaded (before `strip_ancestors`), as topic indices;
    /// empty sets for PCM.
    pub(super) uploaded: Vec<Vec<usize>>,
    /// PCM's seed words the vocabulary lacks, left out (`missing_seed_words: ignore`).
    pub(super) missing_seed_words: Vec<MissingWord>,
}

pub(super) fn shape(corpus: &Corpus, p: &HpcParams, supervision: Supervision, roles: &[Role], wanted: &[Role]) -> Shaped {
    let docs: Vec<usize> = (0..roles.len()).filter(|&d| wanted.contains(&roles[d])).collect();
    let counts: Vec<Vec<(u32, u32)>> = docs
        .iter()
        .map(|&d| {
            let (terms, counts) = corpus.counts.row(d);
            terms.iter().copied().zip(counts.iter().copied()).collect()
        })
        .collect();
    let (parent, names, active, uploaded) = match supervision {
        Supervision::Labelled => {
            let tree = &corpus.labels;
            let parent: Vec<Option<usize>> = std::iter::once(None).chain(tree.parent.iter().map(|p| Some(p.map_or(0, |x| x as usize + 1)))).collect();
            let active = docs
                .iter()
                .map(|&d| {
                    let labels = if p.strip_ancestors { strip_redundant_ancestors(&corpus.doc_labels[d], &tree.parent) } else { corpus.doc_labels[d].clone() };
                    labels.into_iter().map(|l| l + 1).collect()
                })
                .collect();
            let uploaded = docs.iter().map(|&d| corpus.doc_labels[d].iter().map(|&l| l as usize).collect()).collect();
            (parent, tree.names.clone(), active, uploaded)
        }
        Supervision::Unsupervised => {
            let parent = std::iter::once(None).chain((0..p.topics).map(|_| Some(0))).collect();
            let names = (0..p.topics).map(|k| format!("topic {k}")).collect();
            let active = docs.iter().map(|_| (1..=p.topics as u32).collect()).collect();
            (parent, names, active, vec![Vec::new(); docs.len()])
        }
    };
    Shaped { data: HpcData::new(parent, supervision, active, counts, corpus.num_terms()), names, uploaded, missing_seed_words: Vec::new() }
}

/// `shaped` with PCM's seeds resolved against the corpus' vocabulary and their
/// pseudo-counts taken from its documents ([`HpcData::with_seeds`]); an error naming a
/// seed word the vocabulary lacks unless `missing_seed_words` is `ignore`.
fn seeded(mut shaped: Shaped, corpus: &Corpus, p: &HpcParams) -> Result<Shaped, FitError> {
    if p.seeds.is_empty() {
        return Ok(shaped);
    }
    let resolved = p.seeds.resolve(&corpus.lexicon).map_err(FitError::Params)?;
    shaped.data = shaped.data.with_seeds(&resolved, p.seeds.strength);
    shaped.missing_seed_words = resolved.missing;
    Ok(shaped)
}

/// Fit HPC ([`Supervision::Labelled`]) or PCM on `corpus`; with covariates, the model
/// keeps their design and its rows for the documents its rates were fitted on (the
/// training documents, with the validation documents after a refit), for `/effects`.
pub fn fit_hpc(corpus: &Corpus, p: &HpcParams, supervision: Supervision, seed: u64, ctx: &FitContext) -> Result<HpcModel, FitError> {
    let roles = assign_roles(corpus, p, supervision, seed);
    fit_from(corpus, p, supervision, seed, (&roles, ChainStart::Initial), ctx)
}

/// Update the parent in `start` with the corpus' new documents (the corpus holds the
/// parent's documents first, which keep their roles under `start.split_seed`), every
/// chain started from the parent ([`super::start`]), under params from
/// [`HpcParams::updated`].
pub fn fit_hpc_updated(
    corpus: &Corpus,
    p: &HpcParams,
    supervision: Supervision,
    start: &UpdateStart<'_>,
    seed: u64,
    ctx: &FitContext,
) -> Result<HpcModel, FitError> {
    let roles = assign_roles(corpus, p, supervision, start.split_seed);
    let first = &roles[..start.parent_documents.min(roles.len())];
    let count = |role: Role| first.iter().filter(|&&r| r == role).count();
    let from = UpdatedStart::new(start, corpus, p, supervision, [count(Role::Train), count(Role::Validation), count(Role::Test), count(Role::Unlabelled)])?;
    let model = fit_from(corpus, &retired::live_params(from.slots(), p), supervision, seed, (&roles, ChainStart::Updated(&from)), ctx)?;
    Ok(retired::expand(from.slots(), model, p))
}

/// Refit PCM from the parent in `start` edited by its plan ([`super::edit`]): the
/// parent's split (drawn with `start.split_seed`), the live topics sampled from the
/// edited parent's rates, the model then put back in the child's slots, retired ones
/// included ([`super::retired`]).
pub fn fit_pcm_edited(corpus: &Corpus, p: &HpcParams, start: &EditStart<'_>, seed: u64, ctx: &FitContext) -> Result<HpcModel, FitError> {
    let supervision = Supervision::Unsupervised;
    let roles = assign_roles(corpus, p, supervision, start.split_seed);
    let from = EditedStart::new(start, corpus, roles.iter().filter(|&&r| r == Role::Train).count())?;
    let model = fit_from(corpus, &retired::live_params(from.slots(), p), supervision, seed, (&roles, ChainStart::Edited(&from)), ctx)?;
    Ok(retired::expand(from.slots(), model, p))
}

/// A fit of the documents' `roles` (drawn once, by [`assign_roles`]) whose chains start
/// from `start`.
fn fit_from(
    corpus: &Corpus,
    p: &HpcParams,
    supervision: Supervision,
    seed: u64,
    (roles, start): (&[Role], ChainStart<'_>),
    ctx: &FitContext,
) -> Result<HpcModel, FitError> {
    let design = corpus_design(corpus, p)?;
    let mut model = fit_stages(corpus, p, supervision, seed, (roles, start), ctx)?;
    if let Some((spec, rows)) = design {
        let learned = if model.refitted_with_validation { &[Role::Train, Role::Validation][..] } else { &[Role::Train] };
        let width = spec.width();
        model.design_rows = (0..roles.len()).filter(|&d| learned.contains(&roles[d])).flat_map(|d| rows[d * width..(d + 1) * width].iter().copied()).collect();
        model.design = Some(spec);
    }
    Ok(model)
}

/// The design of the covariates the fit reads and every corpus document's row (`None`
/// without covariates); a corpus without them, or a document missing one, is an error
/// naming `covariates` (both are refused at submit, checked again here).
pub(super) fn corpus_design(corpus: &Corpus, p: &HpcParams) -> Result<Option<(DesignSpec, Vec<f64>)>, FitError> {
    if p.design.covariates.is_empty() {
        return Ok(None);
    }
    let table = corpus.covariates.as_ref().ok_or_else(|| FitError::Params(ParamError::new("covariates", "the corpus has no covariates")))?;
    let spec = DesignSpec::build(&p.design, table).map_err(FitError::Params)?;
    let rows = spec.rows(table).map_err(|e| FitError::Params(ParamError::new("covariates", e)))?;
    Ok(Some((spec, rows)))
}

/// The training documents of `roles`, shaped; an error when an HPC corpus has no
/// labels or fewer than 2 documents train.
fn training_documents(corpus: &Corpus, p: &HpcParams, supervision: Supervision, roles: &[Role]) -> Result<Shaped, FitError> {
    if supervision.is_labelled() && corpus.labels.is_empty() {
        return Err(FitError::InvalidInput(InvalidInput::NoLabels { model: "HPC".into(), instead: "pcm".into() }));
    }
    let train = seeded(shape(corpus, p, supervision, roles, &[Role::Train]), corpus, p)?;
    if train.data.num_docs() < 2 {
        return Err(FitError::InvalidInput(InvalidInput::TooFewDocuments { model: "HPC".into(), documents: train.data.num_docs() }));
    }
    Ok(train)
}

/// The fit's stages (the chains on the training documents, the calibration, the refit)
/// without the covariates' design.
fn fit_stages(
    corpus: &Corpus,
    p: &HpcParams,
    supervision: Supervision,
    seed: u64,
    (roles, start): (&[Role], ChainStart<'_>),
    ctx: &FitContext,
) -> Result<HpcModel, FitError> {
    let train = training_documents(corpus, p, supervision, roles)?;
    let Supervision::Labelled = supervision else {
        return first_chains(&train, p, (seed, start), roles, ctx, false);
    };
    let validation = shape(corpus, p, supervision, roles, &[Role::Validation]);
    let test = shape(corpus, p, supervision, roles, &[Role::Test]);
    let refit = p.refit_with_validation && validation.data.num_docs() > 0;
    let n = (p.chains * p.iterations) as u64;
    let total = if refit { 2 * n } else { n };
    let both = refit.then(|| shape(corpus, p, supervision, roles, &[Role::Train, Role::Validation]));
    let mut resume_from = ctx.checkpoint.resume_from;
    // Several chains: a checkpoint of the second stage carries the calibration in its
    // trailer; continue that stage.
    if let (Some(both), Some(bytes), true) = (&both, resume_from, p.chains > 1) {
        if let Some((stage, calibration)) = unwrap_refit_stage(bytes) {
            match calibration.check(both.data.num_topics()) {
                Ok(()) => {
                    let refitted = ctx.stage(refit_stage(n, total), Some(stage), |ctx| refit_chains(both, p, (seed, start), roles, &calibration, ctx))?;
                    return Ok(evaluated(calibrated(refitted, calibration, p, &train, &validation), both, &test));
                }
                Err(reason) => {
                    (ctx.checkpoint.resumed)(Resume::rejected(&reason));
                    resume_from = None;
                }
            }
        }
    }
    // One chain: a checkpoint of the second chain carries the calibration: continue it
    // there.
    if let (Some(both), Some(bytes), true) = (&both, resume_from, p.chains == 1) {
        if let Ok(checkpoint) = Checkpoint::decode_for(bytes, Supervision::Labelled.family_name(), refit_seed(seed), &p.schedule()) {
            match RefitChain::restore(&both.data, p, &checkpoint.state, &checkpoint.position) {
                Ok(second) => {
                    let (model, calibration) = ctx.stage(refit_stage(n, total), None, |ctx| {
                        (ctx.checkpoint.resumed)(Resume::From(checkpoint.position.iteration as u64));
                        second_chain(second, checkpoint.position, both, p, seed, roles, ctx)
                    })?;
                    let model = calibrated(model, calibration, p, &train, &validation);
                    return Ok(evaluated(model, both, &test));
                }
                Err(reason) => {
                    (ctx.checkpoint.resumed)(Resume::rejected(&reason));
                    resume_from = None;
                }
            }
        }
    }
    let mut model = ctx.stage(first_stage(n, total), resume_from, |ctx| first_chains(&train, p, (seed, start), roles, ctx, refit))?;
    model.prediction = prediction_settings(&model, p, &train, &validation);
    if validation.data.num_docs() > 0 {
        calibrate_prediction(&mut model, &validation);
    }
    let Some(both) = both else {
        return Ok(evaluated(model, &train, &test));
    };
    let calibration = Calibration { temperature: model.prediction.temperature, thresholds: model.thresholds.clone() };
    // Only the calibration is kept of the first chain's model: free its tables (K × V
    // each) before the second chain allocates its own.
    drop(model);
    if p.chains > 1 {
        let refitted = ctx.stage(refit_stage(n, total), None, |ctx| refit_chains(&both, p, (seed, start), roles, &calibration, ctx))?;
        return Ok(evaluated(calibrated(refitted, calibration, p, &train, &validation), &both, &test));
    }
    let second = RefitChain { chain: start.chain(&both.data, p, refit_seed(seed)), calibration };
    let (refitted, calibration) = ctx.stage(refit_stage(n, total), None, |ctx| second_chain(second, Position::START, &both, p, seed, roles, ctx))?;
    Ok(evaluated(calibrated(refitted, calibration, p, &train, &validation), &both, &test))
}

/// The stage of the first chains, of `n` iterations in `total` (named when a refit follows).
pub(super) fn first_stage(n: u64, total: u64) -> Stage<'static> {
    Stage { name: (total > n).then_some("first stage"), offset: 0, length: n, total }
}

/// The refit's stage: `n` iterations after the first stage's `n`.
pub(super) fn refit_stage(n: u64, total: u64) -> Stage<'static> {
    Stage { name: Some("refit stage"), offset: n, length: n, total }
}

/// The first stage: `p.chains` chains on the training documents (resuming from the
/// context's checkpoint if it is one of theirs), pooled; with `hand_over_end` (a second
/// stage follows) the last chain's final state is checkpointed too.
fn first_chains(
    train: &Shaped,
    p: &HpcParams,
    (seed, start): (u64, ChainStart<'_>),
    roles: &[Role],
    ctx: &FitContext,
    hand_over_end: bool,
) -> Result<HpcModel, FitError> {
    let last = several::run(ctx, p.chains, p.iterations as u64, |ctx, c, finished: &[ChainResult]| {
        let is_last = c + 1 == p.chains;
        let chain = first_chain(&train.data, p, (chain_seed(seed, c), start), ctx, hand_over_end && is_last)?;
        let result = assemble(chain.into_ended(), train, p, roles);
        Ok(if is_last { ChainResult { model: pooled::pool(finished, result), trace: KeptTrace::default() } } else { result })
    })?;
    Ok(last.model)
}

/// The second stage with several chains: `p.chains` chains on the training and
/// validation documents (`both`), chain c from `refit_seed(chain_seed(seed, c))`,
/// resuming from the context's checkpoint (the stage's own bytes), pooled; every
/// checkpoint carries `calibration` ([`wrap_refit_stage`]).
fn refit_chains(
    both: &Shaped,
    p: &HpcParams,
    (seed, start): (u64, ChainStart<'_>),
    roles: &[Role],
    calibration: &Calibration,
    ctx: &FitContext,
) -> Result<HpcModel, FitError> {
    let save = |it: u64, bytes: Vec<u8>| (ctx.checkpoint.save)(it, wrap_refit_stage(bytes, calibration));
    let ctx = FitContext { checkpoint: crate::models::Checkpointing { save: &save, ..ctx.checkpoint }, ..*ctx };
    let (family, schedule) = (Supervision::Labelled.family_name(), p.schedule());
    let last = several::run(&ctx, p.chains, p.iterations as u64, |ctx, c, finished: &[ChainResult]| {
        let s = refit_seed(chain_seed(seed, c));
        let (mut hpc, position) =
            chain::start(ctx, family, s, &schedule, |bytes, position| HpcChain::restore(&both.data, p, bytes, position), || start.chain(&both.data, p, s));
        chain::run(&mut hpc, family, s, &schedule, position, ctx)?;
        let mut result = assemble(hpc.into_ended(), both, p, roles);
        result.model.refitted_with_validation = true;
        Ok(if c + 1 == p.chains { ChainResult { model: pooled::pool(finished, result), trace: KeptTrace::default() } } else { result })
    })?;
    Ok(last.model)
}

/// The first chain, on the training documents, from the context's checkpoint if it is
/// one of this chain's. With `hand_over_end` (a second chain follows) its final state is
/// checkpointed too, so a job stopped before the second chain's first checkpoint resumes
/// after the first chain rather than inside it.
fn first_chain<'a>(
    data: &'a HpcData,
    p: &'a HpcParams,
    (seed, start): (u64, ChainStart<'_>),
    ctx: &FitContext,
    hand_over_end: bool,
) -> Result<HpcChain<'a>, FitError> {
    let (family, schedule) = (data.supervision.family_name(), p.schedule());
    let (mut hpc, position) =
        chain::start(ctx, family, seed, &schedule, |bytes, position| HpcChain::restore(data, p, bytes, position), || start.chain(data, p, seed));
    let end = chain::run(&mut hpc, family, seed, &schedule, position, ctx)?;
    if hand_over_end && ctx.checkpoint.every.is_some() && end.iteration > position.iteration {
        chain::hand_over(ctx, family, seed, &schedule, end, hpc.save());
    }
    Ok(hpc)
}

/// The second chain, on the training and validation documents (`both`), from
/// `position` to its end: the model of its rates, and the calibration it carries.
fn second_chain(
    mut second: RefitChain,
    position: Position,
    both: &Shaped,
    p: &HpcParams,
    seed: u64,
    roles: &[Role],
    ctx: &FitContext,
) -> Result<(HpcModel, Calibration), FitError> {
    chain::run(&mut second, Supervision::Labelled.family_name(), refit_seed(seed), &p.schedule(), position, ctx)?;
    let ChainResult { model, trace } = assemble(second.chain.into_ended(), both, p, roles);
    let mut model = pooled::pool(&[], ChainResult { model, trace });
    model.refitted_with_validation = true;
    Ok((model, second.calibration))
}

/// The refitted model with the first chain's calibration: the same prediction settings
/// (they depend on the label sets of the training and validation documents, not on the
/// rates) and the chosen temperature and thresholds.
pub(super) fn calibrated(mut model: HpcModel, calibration: Calibration, p: &HpcParams, train: &Shaped, validation: &Shaped) -> HpcModel {
    model.prediction = prediction_settings(&model, p, train, validation);
    model.prediction.temperature = calibration.temperature;
    model.thresholds = calibration.thresholds;
    model
}

/// The model with its test-split evaluation, if the corpus has a test split; `learned`
/// are the documents whose labels the rates learned from (the baseline's frequencies).
pub(super) fn evaluated(mut model: HpcModel, learned: &Shaped, test: &Shaped) -> HpcModel {
    if test.data.num_docs() > 0 {
        model.evaluation = Some(evaluate(&model, learned, test));
    }
    model
}

/// The model of a finished chain on `shaped`'s documents: posterior means of the rates
/// and estimands, the hyperparameters and the fit's summary (prediction settings at
/// their defaults; no convergence report: [`pooled::pool`] makes it), and the chain's
/// trace.
pub(super) fn assemble(ended: EndedChain, shaped: &Shaped, p: &HpcParams, roles: &[Role]) -> ChainResult {
    let data = &shaped.data;
    let (v, k) = (data.num_terms(), data.num_topics());
    let EndedChain { hyper: state, sums, totals, last, trace, theta_draws, factor_nonzeros } = ended;
    let scale = 1.0 / sums.kept as f64;
    let to_topic_major = |word_major: &[f64]| -> Vec<f32> {
        let mut out = vec![0.0f32; k * v];
        for f in 0..v {
            for t in 0..k {
                out[t * v + f] = (word_major[f * k + t] * scale) as f32;
            }
        }
        out
    };
    let topic_parent: Vec<Option<usize>> = (1..=k).map(|node| data.parent[node].filter(|&p| p > 0).map(|p| p - 1)).collect();
    let mean_length = data.num_tokens / data.num_docs() as f64;
    let model = HpcModel {
        version: ENCODING_VERSION,
        supervision: data.supervision,
        params: p.clone(),
        num_terms: v,
        labels: shaped.names.clone(),
        parent: topic_parent,
        frequency: to_topic_major(&sums.frequency),
        exclusivity: to_topic_major(&sums.exclusivity),
        exclusivity_all: to_topic_major(&sums.exclusivity_all),
        mu: sums.mu.iter().map(|m| (m * scale) as f32).collect(),
        eta: state.eta.clone(),
        lambda2: state.lambda2,
        shares: sums.shares.iter().map(|s| s * scale).collect(),
        mean_length,
        thresholds: Thresholds::default_for(k),
        evaluation: None,
        rate_totals: Default::default(),
        deepest_first: Default::default(),
        prediction: LabelPrediction::mode_only(),
        summary: FitSummary {
            training_documents: data.num_docs(),
            validation_documents: roles.iter().filter(|r| **r == Role::Validation).count(),
            test_documents: roles.iter().filter(|r| **r == Role::Test).count(),
            unlabelled_documents: roles.iter().filter(|r| **r == Role::Unlabelled).count(),
            kept_scans: sums.kept,
            tokens: data.num_tokens,
            final_loglik_per_token: last.0 / data.num_tokens,
            final_label_loglik: last.1,
            rate_acceptance: totals.rate_accepted as f64 / totals.rate_draws.max(1) as f64,
            affinity_acceptance: totals.affinity_accepted as f64 / totals.affinity_draws.max(1) as f64,
            mode_hessian_repairs: totals.mode_repairs,
            mass_matrix_repairs: totals.mass_repairs,
            inactive_fallbacks: totals.inactive_fallbacks,
            factor_nonzeros,
            rate_curvature: p.curvature(k),
            nu: state.nu,
            sigma2: state.sigma2,
            psi: state.psi,
            gamma2: state.gamma2,
        },
        refitted_with_validation: false,
        convergence: None,
        chains: 1,
        alignments: Vec::new(),
        design: None,
        design_rows: Vec::new(),
        theta_draws,
        seeds: p.seeds.clone(),
        missing_seed_words: shaped.missing_seed_words.clone(),
    };
    ChainResult { model, trace }
}

/// The predictor, the ancestor rule (decided from the training documents' uploaded
/// sets under `label_closure = auto`), and the label priors. The priors count the label
/// sets (as trained, after `strip_ancestors`) of every labelled document the fit was
/// given to learn from: the training documents and the validation documents. The
/// validation documents' words train no rate (their probabilities calibrate the
/// thresholds), but their labels are as much the user's evidence about which labels
/// and which combinations occur as the training documents' are: on AppStream, counting
/// them raised macro-F1 on each of five random splits (+0.007 to +0.014;
/// docs/decisions/0017-hpc-validation-label-sets-in-priors.md).
/// Each label's prior is its frequency among those documents' labels, with half a
/// document added so an unseen label keeps a finite prior; the label-set predictor's
/// candidates are those documents' label sets with their frequencies.
pub(super) fn prediction_settings(model: &HpcModel, p: &HpcParams, train: &Shaped, validation: &Shaped) -> LabelPrediction {
    let ancestors = match p.label_closure {
        Closure::Auto => ancestors_are_uploaded(&train.uploaded, &model.parent),
        Closure::Ancestors => true,
        Closure::None => false,
    };
    let labelled = [&train.data, &validation.data];
    let mut counts = vec![0.0; model.labels.len()];
    for data in labelled {
        for &node in &data.active.values {
            counts[node as usize - 1] += 1.0;
        }
    }
    let docs: f64 = labelled.iter().map(|data| data.num_docs() as f64).sum();
    let log_prior = counts.iter().map(|c| ((c + 0.5) / (docs + 1.0)).ln()).collect();
    let sets = match p.predictor {
        Predictor::LabelSets => {
            let as_labels: Vec<Vec<u32>> =
                labelled.iter().flat_map(|data| (0..data.num_docs()).map(|d| data.active.row(d).iter().map(|&node| node - 1).collect())).collect();
            candidate_sets(as_labels.iter().map(Vec::as_slice), model.labels.len(), &model.parent, ancestors, p.max_label_sets)
        }
        Predictor::SingleLabel | Predictor::Mode => Vec::new(),
    };
    LabelPrediction { predictor: p.predictor, ancestors, temperature: 1.0, log_prior, sets }
}

/// Choose the single-label or label-set predictor's temperature (the one whose pooled probabilities
/// reach the best validation F1, the smallest on ties) and then the thresholds, both
/// against the validation documents' labels as uploaded.
pub(super) fn calibrate_prediction(model: &mut HpcModel, validation: &Shaped) {
    let k = model.labels.len();
    let truth = &validation.uploaded;
    let scored = scored_documents(model, &validation.data);
    if model.prediction.predictor != Predictor::Mode {
        let mut best = (f64::NEG_INFINITY, 1.0);
        for t in TEMPERATURES {
            let how = LabelPrediction { temperature: t, ..model.prediction.clone() };
            let probabilities = probabilities_of(model, &how, &scored);
            let pooled = probabilities.iter().enumerate().map(|(i, &pr)| (pr, truth[i / k].contains(&(i % k)))).collect();
            let (_, f1) = best_f1_threshold(pooled);
            if f1 > best.0 {
                best = (f1, t);
            }
        }
        model.prediction.temperature = best.1;
    }
    let probabilities = probabilities_of(model, &model.prediction, &scored);
    model.thresholds = calibrate(&probabilities, truth, k, model.params.min_label_validation);
}

/// Score a fitted supervised model on the test split of `corpus` as the fit with `seed`
/// drew it (the same roles, so the same documents); `None` without a test split.
pub fn evaluate_test_split(model: &HpcModel, corpus: &Corpus, seed: u64) -> Result<Option<Evaluation>, FitError> {
    if corpus.num_terms() != model.num_terms {
        return Err(FitError::InvalidInput(InvalidInput::OtherVocabulary { corpus_terms: corpus.num_terms(), model_terms: model.num_terms }));
    }
    let roles = assign_roles(corpus, &model.params, model.supervision, seed);
    let test = shape(corpus, &model.params, model.supervision, &roles, &[Role::Test]);
    if test.data.num_docs() == 0 {
        return Ok(None);
    }
    let learned = if model.refitted_with_validation { &[Role::Train, Role::Validation][..] } else { &[Role::Train] };
    let learned = shape(corpus, &model.params, model.supervision, &roles, learned);
    Ok(Some(evaluate(model, &learned, &test)))
}

/// What the predictors read of one calibration or test document: its [`Evidence`], and
/// its ξ* when the model's predictor is the mode (the others never read it).
struct Scored {
    evidence: Evidence,
    xi: Option<Vec<f64>>,
}

/// Every document of `data` [`Scored`], in parallel: computed once, then read at each
/// temperature the calibration tries.
fn scored_documents(model: &HpcModel, data: &HpcData) -> Vec<Scored> {
    (0..data.num_docs())
        .into_par_iter()
        .map(|d| {
            let words: Vec<(usize, f64)> = data.doc_words.row(d).iter().map(|&(w, c)| (w as usize, c)).collect();
            let rates = document_rates(model, &words);
            let evidence = Evidence::of(model, &words, &rates);
            let xi = (model.prediction.predictor == Predictor::Mode).then(|| predict_affinities(model, &words, &rates, &evidence));
            Scored { evidence, xi }
        })
        .collect()
}

/// P(label) under `how` for every document of `docs` (from [`scored_documents`];
/// row-major `docs × K`), in parallel.
fn probabilities_of(model: &HpcModel, how: &LabelPrediction, docs: &[Scored]) -> Vec<f64> {
    let k = model.labels.len();
    let order = model.deepest_first();
    let mut out = vec![0.0; docs.len() * k];
    out.par_chunks_mut(k).zip(docs).for_each(|(row, doc)| {
        // `how` is the model's predictor at some temperature, so ξ* is there when read.
        let xi = || doc.xi.clone().expect("ξ* is found for every document when the predictor is the mode");
        row.copy_from_slice(&label_probabilities(model, how, &doc.evidence, order, xi));
    });
    out
}

/// Score the calibrated predictions on the test split against the labels as uploaded,
/// beside the trivial baseline that always predicts the labels most frequent among the
/// documents the rates learned from (`train`).
fn evaluate(model: &HpcModel, train: &Shaped, test: &Shaped) -> Evaluation {
    let k = model.labels.len();
    let probabilities = probabilities_of(model, &model.prediction, &scored_documents(model, &test.data));
    let predicted: Vec<Vec<usize>> = probabilities.chunks(k).map(|row| model.prediction.decide(&model.thresholds, row, &model.parent)).collect();
    let truth = &test.uploaded;
    let mut frequency = vec![0usize; k];
    for set in &train.uploaded {
        for &l in set {
            frequency[l] += 1;
        }
    }
    let mean_labels = train.uploaded.iter().map(Vec::len).sum::<usize>() as f64 / train.uploaded.len().max(1) as f64;
    let m = (mean_labels.round() as usize).max(1);
    let mut by_frequency: Vec<usize> = (0..k).collect();
    by_frequency.sort_by(|&a, &b| frequency[b].cmp(&frequency[a]).then(a.cmp(&b)));
    let baseline_set: Vec<usize> = by_frequency.into_iter().take(m).collect();
    let baseline = score(&vec![baseline_set; truth.len()], truth, k);
    Evaluation { model: score(&predicted, truth, k), most_frequent_baseline: baseline }
}
