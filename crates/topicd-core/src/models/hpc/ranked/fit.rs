//! The fit over ranks itself: rank 0 prepares and scatters the data, every rank runs
//! its shard of each stage, and rank 0 assembles the model as the one-process fit does.

use super::chain::RankedHpcChain;
use super::shard::{fresh_state, scatter_data, scatter_state, Common, WholeState};
use crate::corpus::Corpus;
use crate::models::causes::InvalidInput;
use crate::models::chain::{self as driver, Checkpoint, Position, Resume};
use crate::models::chains::chain_seed;
use crate::models::hpc::chain::{EndedChain, HpcChain};
use crate::models::hpc::data::HpcData;
use crate::models::hpc::fit::{assemble, calibrate_prediction, calibrated, evaluated, first_stage, prediction_settings, refit_stage, shape, Role, Shaped};
use crate::models::hpc::model::HpcModel;
use crate::models::hpc::params::HpcParams;
use crate::models::hpc::pooled::{self, ChainResult};
use crate::models::hpc::refit::{refit_seed, Calibration, RefitChain};
use crate::models::hpc::variant::Supervision;
use crate::models::{Checkpointing, FitContext, FitError, ParamError, ALWAYS_READY};
use crate::ranks::Ranks;

/// Why `p` cannot be fitted over ranks, if it cannot.
pub fn unsupported(p: &HpcParams) -> Option<&'static str> {
    if p.chains > 1 {
        return Some("HPC over several ranks runs one chain: use chains 1");
    }
    if !p.design.covariates.is_empty() {
        return Some("HPC over several ranks does not keep the θ draws covariates need yet: fit without covariates or in one process");
    }
    if !p.seeds.is_empty() {
        return Some("PCM's seeded topics are fitted in one process: fit without seed_words or in one process");
    }
    None
}

/// The corpus shaped as [`crate::models::hpc::fit`] shapes it, on rank 0.
struct Prepared {
    roles: Vec<Role>,
    train: Shaped,
    validation: Option<Shaped>,
    test: Option<Shaped>,
    both: Option<Shaped>,
}

fn prepare(corpus: &Corpus, p: &HpcParams, supervision: Supervision, seed: u64) -> Result<Prepared, FitError> {
    if supervision.is_labelled() && corpus.labels.is_empty() {
        return Err(FitError::InvalidInput(InvalidInput::NoLabels { model: "HPC".into(), instead: "pcm".into() }));
    }
    let roles = crate::models::hpc::fit::assign_roles(corpus, p, supervision, seed);
    let train = shape(corpus, p, supervision, &roles, &[Role::Train]);
    if train.data.num_docs() < 2 {
        return Err(FitError::InvalidInput(InvalidInput::TooFewDocuments { model: "HPC".into(), documents: train.data.num_docs() }));
    }
    let Supervision::Labelled = supervision else {
        return Ok(Prepared { roles, train, validation: None, test: None, both: None });
    };
    let validation = shape(corpus, p, supervision, &roles, &[Role::Validation]);
    let test = shape(corpus, p, supervision, &roles, &[Role::Test]);
    let refit = p.refit_with_validation && validation.data.num_docs() > 0;
    let both = refit.then(|| shape(corpus, p, supervision, &roles, &[Role::Train, Role::Validation]));
    Ok(Prepared { roles, train, validation: Some(validation), test: Some(test), both })
}

/// Rank 0 shapes the corpus (`Some` on rank 0 only, dropped once shaped) and tells
/// every rank whether that failed: rank 0 returns its error, the others the error
/// named as rank 0's; on success rank 0 returns the shaped corpus, the others `None`.
fn prepare_on_root(corpus: Option<Corpus>, p: &HpcParams, supervision: Supervision, seed: u64, ranks: &dyn Ranks) -> Result<Option<Prepared>, FitError> {
    let prepared = corpus.as_ref().map(|corpus| prepare(corpus, p, supervision, seed));
    drop(corpus);
    let mut verdict = match &prepared {
        Some(Err(e)) => e.to_string().into_bytes(),
        _ => Vec::new(),
    };
    ranks.broadcast(0, &mut verdict);
    match prepared {
        Some(Err(e)) => Err(e),
        Some(Ok(prepared)) => Ok(Some(prepared)),
        None if !verdict.is_empty() => Err(FitError::Params(ParamError::new("ranks", format!("rank 0: {}", String::from_utf8_lossy(&verdict))))),
        None => Ok(None),
    }
}

/// A second chain restored from a checkpoint: the chain, where it stopped, and the
/// calibration it carries.
type SecondChain<'a> = (HpcChain<'a>, Position, Calibration);

/// Rank 0: is the checkpoint one of the second chain's (it carries the calibration)?
/// Returns that chain, its position and calibration if so, and the checkpoint left for
/// the first chain: none once the second chain's restore rejected it (reported to
/// `ctx`).
fn restored_second_chain<'a, 'c>(
    prepared: Option<&'a Prepared>,
    p: &'a HpcParams,
    seed: u64,
    family: &str,
    ctx: &FitContext<'c>,
) -> (Option<SecondChain<'a>>, Option<&'c [u8]>) {
    let mut resume_from = ctx.checkpoint.resume_from;
    let mut second = None;
    if let (Some(Prepared { both: Some(both), .. }), Some(bytes)) = (prepared, resume_from) {
        if let Ok(checkpoint) = Checkpoint::decode_for(bytes, family, refit_seed(seed), &p.schedule()) {
            match RefitChain::restore(&both.data, p, &checkpoint.state, &checkpoint.position) {
                Ok(refit) => second = Some((refit.chain, checkpoint.position, refit.calibration)),
                Err(reason) => {
                    (ctx.checkpoint.resumed)(Resume::rejected(&reason));
                    resume_from = None;
                }
            }
        }
    }
    (second, resume_from)
}

/// Fit HPC ([`Supervision::Labelled`]) or PCM over `ranks`: rank 0 holds the corpus
/// (`Some`); rank 0 returns the model [`crate::models::hpc::fit::fit_hpc`] makes, byte
/// for byte, the others `None`; every rank gets rank 0's error.
///
/// Checkpoints: rank 0's `ctx` says how often and takes them; the stop and checkpoint
/// decisions are rank 0's; only rank 0 reads `resume_from`. The other ranks' `ctx`
/// should report nothing.
pub fn fit_hpc_ranked(
    corpus: Option<Corpus>,
    p: &HpcParams,
    supervision: Supervision,
    seed: u64,
    ctx: &FitContext,
    ranks: &dyn Ranks,
) -> Result<Option<HpcModel>, FitError> {
    if let Some(reason) = unsupported(p) {
        return Err(FitError::Params(ParamError::new("ranks", reason)));
    }
    let prepared = prepare_on_root(corpus, p, supervision, seed, ranks)?;
    let mut settings = vec![ctx.checkpoint.every.is_some() as u8, prepared.as_ref().is_some_and(|r| r.both.is_some()) as u8];
    ranks.broadcast(0, &mut settings);
    let refit = settings[1] == 1;
    // Rank 0 keeps its context; the others hand nothing over and follow rank 0.
    let (no_save, no_resume) = (|_: u64, _: Vec<u8>| {}, |_: Resume| {});
    let local = if ranks.is_root() {
        FitContext { checkpoint: Checkpointing { ..ctx.checkpoint }, ..*ctx }
    } else {
        let every = (settings[0] == 1).then_some(std::time::Duration::ZERO);
        FitContext { checkpoint: Checkpointing { every, save: &no_save, resume_from: None, resumed: &no_resume, ready: ALWAYS_READY }, ..*ctx }
    };
    let family = supervision.family_name();
    let n = p.iterations as u64;
    let total = if refit { 2 * n } else { n };
    let (second, resume_from) = restored_second_chain(prepared.as_ref(), p, seed, family, &local);
    let mut in_second = vec![second.is_some() as u8];
    ranks.broadcast(0, &mut in_second);
    if in_second[0] == 1 {
        let (start, position, calibration) = match second {
            Some((chain, position, calibration)) => (Some(Start::Restored(Box::new(chain), position)), Some(position), Some(calibration)),
            None => (None, None, None),
        };
        let resumed = |ctx: &FitContext| {
            if let Some(position) = position {
                (ctx.checkpoint.resumed)(Resume::From(position.iteration as u64));
            }
        };
        return second_stage(prepared.as_ref(), start, calibration, p, seed, family, (n, total), &local, ranks, resumed);
    }
    // The first chain, then (rank 0) its model, calibration and evaluation.
    let data = prepared.as_ref().map(|r| &r.train.data);
    let ended = local.stage(first_stage(n, total), resume_from, |ctx| {
        let start = data.map(|data| root_start(ctx, family, chain_seed(seed, 0), data, p, ctx.checkpoint.resume_from));
        run_stage(data, start, p, chain_seed(seed, 0), family, ctx, ranks, StageEnd::HandsOver(refit))
    })?;
    let Some(prepared) = prepared else {
        return if refit { second_stage(None, None, None, p, seed, family, (n, total), &local, ranks, |_| {}) } else { Ok(None) };
    };
    let mut model = pooled::pool(&[], assemble(ended.expect("rank 0 ends with the model's parts"), &prepared.train, p, &prepared.roles));
    let (Some(validation), Some(test)) = (&prepared.validation, &prepared.test) else { return Ok(Some(model)) };
    model.prediction = prediction_settings(&model, p, &prepared.train, validation);
    if validation.data.num_docs() > 0 {
        calibrate_prediction(&mut model, validation);
    }
    if !refit {
        return Ok(Some(evaluated(model, &prepared.train, test)));
    }
    let calibration = Calibration { temperature: model.prediction.temperature, thresholds: model.thresholds.clone() };
    drop(model);
    let start = prepared.both.as_ref().map(|_| Start::Fresh);
    second_stage(Some(&prepared), start, Some(calibration), p, seed, family, (n, total), &local, ranks, |_| {})
}

/// The second chain (on the training and validation documents, from `start` on rank 0)
/// and, on rank 0, the refitted model with the calibration and the test evaluation.
#[allow(clippy::too_many_arguments)]
fn second_stage(
    prepared: Option<&Prepared>,
    start: Option<Start>,
    calibration: Option<Calibration>,
    p: &HpcParams,
    seed: u64,
    family: &str,
    (n, total): (u64, u64),
    ctx: &FitContext,
    ranks: &dyn Ranks,
    resumed: impl FnOnce(&FitContext),
) -> Result<Option<HpcModel>, FitError> {
    let both = prepared.and_then(|r| r.both.as_ref());
    let ended = ctx.stage(refit_stage(n, total), None, |ctx| {
        resumed(ctx);
        run_stage(both.map(|b| &b.data), start, p, refit_seed(seed), family, ctx, ranks, StageEnd::Carries(calibration.as_ref()))
    })?;
    let (Some(prepared), Some(both), Some(calibration)) = (prepared, both, calibration) else { return Ok(None) };
    let ChainResult { model, trace } = assemble(ended.expect("rank 0 ends with the model's parts"), both, p, &prepared.roles);
    let mut model = pooled::pool(&[], ChainResult { model, trace });
    model.refitted_with_validation = true;
    let validation = prepared.validation.as_ref().expect("a supervised fit has a validation split");
    let test = prepared.test.as_ref().expect("a supervised fit has a test split");
    Ok(Some(evaluated(calibrated(model, calibration, p, &prepared.train, validation), both, test)))
}

/// Where a chain starts, on rank 0.
enum Start<'a> {
    /// HPC's starting point, which every rank computes for its rows
    /// ([`shard::fresh_state`]).
    Fresh,
    Restored(Box<HpcChain<'a>>, Position),
}

/// Rank 0: the chain's start from `resume_from` if it is one of this chain's and fits
/// (reported to `ctx`), else fresh.
fn root_start<'a>(ctx: &FitContext, family: &str, seed: u64, data: &'a HpcData, p: &'a HpcParams, resume_from: Option<&[u8]>) -> Start<'a> {
    let fresh = || Start::Fresh;
    let Some(bytes) = resume_from else { return fresh() };
    let restored =
        Checkpoint::decode_for(bytes, family, seed, &p.schedule()).and_then(|c| Ok((HpcChain::restore(data, p, &c.state, &c.position)?, c.position)));
    match restored {
        Ok((chain, position)) => {
            (ctx.checkpoint.resumed)(Resume::From(position.iteration as u64));
            Start::Restored(Box::new(chain), position)
        }
        Err(reason) => {
            (ctx.checkpoint.resumed)(Resume::rejected(&reason));
            fresh()
        }
    }
}

/// What a stage's checkpoints do beyond the chain's state.
#[derive(Clone, Copy)]
enum StageEnd<'a> {
    /// The first chain: with `true` (a second chain follows) its final state is
    /// checkpointed too, so a job stopped before the second chain's first checkpoint
    /// resumes after the first chain.
    HandsOver(bool),
    /// The second chain: every checkpoint carries the calibration after the state (rank
    /// 0's; the others have none), as [`RefitChain`]'s do.
    Carries(Option<&'a Calibration>),
}

/// One chain over the ranks: rank 0 (`data` and `start`) hands out the data and the
/// state, every rank runs the scans. Rank 0 returns the model's parts.
#[allow(clippy::too_many_arguments)]
fn run_stage(
    data: Option<&HpcData>,
    start: Option<Start>,
    p: &HpcParams,
    seed: u64,
    family: &str,
    ctx: &FitContext,
    ranks: &dyn Ranks,
    end: StageEnd,
) -> Result<Option<EndedChain>, FitError> {
    let part = scatter_data(data, ranks);
    let (n, k) = (part.docs.num_nodes(), part.docs.num_topics());
    // Rank 0 says where the chain starts: fresh (every rank computes its rows of HPC's
    // starting point) or from the restored state it hands out.
    let mut position_bytes = match &start {
        Some(Start::Restored(_, position)) => postcard::to_allocvec(position).expect("plain data encodes"),
        _ => Vec::new(),
    };
    ranks.broadcast(0, &mut position_bytes);
    let (piece, common, position) = if position_bytes.is_empty() {
        let (piece, common) = fresh_state(&part, seed, ranks);
        (piece, common, Position::START)
    } else {
        let whole = match &start {
            Some(Start::Restored(chain, _)) => {
                let (rates, docs) = chain.caches.likelihood_hessians();
                let sums = (chain.sums.kept > 0).then_some(&chain.sums);
                let common = Common::of(&chain.state, chain.totals.clone(), chain.last, chain.trace.clone(), chain.sums.kept, chain.sums.shares.clone());
                Some(WholeState { state: &chain.state, hessians: (rates, docs.iter().map(|h| h.as_slice()).collect()), sums, common })
            }
            _ => None,
        };
        let (piece, common) = scatter_state(whole, &part.layout, n, k, ranks);
        (piece, common, postcard::from_bytes(&position_bytes).expect("rank 0's position decodes"))
    };
    drop(start);
    let mut chain =
        RankedHpcChain::new(&part, p, ranks, piece, common).map_err(|e| FitError::InvalidInput(InvalidInput::ScatteredState { detail: e.to_string() }))?;
    if let StageEnd::Carries(Some(calibration)) = end {
        chain.carry(calibration.clone());
    }
    let schedule = p.schedule();
    let last = driver::run(&mut chain, family, seed, &schedule, position, ctx)?;
    if let StageEnd::HandsOver(true) = end {
        if ctx.checkpoint.every.is_some() && last.iteration > position.iteration {
            let state = driver::Chain::save(&chain);
            if ranks.is_root() {
                driver::hand_over(ctx, family, seed, &schedule, last, state);
            }
        }
    }
    Ok(chain.into_ended())
}

#[cfg(test)]
#[path = "fit_tests.rs"]
mod fit_tests;
