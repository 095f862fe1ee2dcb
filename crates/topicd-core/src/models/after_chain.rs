//! Checkpoints of the work a fit does after its chain: scoring its held-out documents.
//!
//! Why it exists: LDA and DCNT/SCNT score the documents they held out by a Chib-style
//! estimator once their chain ends, which can take as long as the chain. So that a kill
//! during it costs no more than one checkpoint interval, the finished chain is handed
//! over at once as a checkpoint at the chain's end carrying the fitted model (without
//! its held-out report) and the documents scored so far ([`AfterChain`]), and again as
//! documents finish. A fit resumed from one goes straight to the documents not yet
//! scored. The family decodes its model from the bytes and checks it belongs to the fit.

use super::chain::{hand_over, Position, Schedule};
use super::heldout::{score_resuming, DocScorer, HeldoutDoc, HeldoutReport, ScoredSoFar, ScoringHooks};
use super::{FitContext, FitError, Progress, RestoreError};
use serde::{Deserialize, Serialize};

/// A fit's chain, finished: where checkpoints of its scoring phase sit.
pub struct EndOfChain<'s> {
    pub family: &'s str,
    pub seed: u64,
    pub schedule: &'s Schedule,
    pub position: Position,
}

/// Format version of [`AfterChain`].
const AFTER_CHAIN_VERSION: u32 = 1;

/// What a checkpoint at the chain's end carries while the held-out documents are
/// scored: the fitted model without its held-out report (the family's own encoding) and
/// the documents scored so far.
#[derive(Serialize, Deserialize)]
struct AfterChain {
    version: u32,
    model: Vec<u8>,
    scored: ScoredSoFar,
}

/// [`AfterChain`] borrowed, for encoding.
#[derive(Serialize)]
struct AfterChainRef<'s> {
    version: u32,
    model: &'s [u8],
    scored: &'s ScoredSoFar,
}

/// Where a fit with scoring after its chain starts: its chain `C` (fresh, or resumed
/// inside it), or the chain's end, with the fitted model `M` and the documents scored.
pub enum Start<C, M> {
    Chain(Box<C>),
    Scoring(Box<M>, ScoredSoFar),
}

impl<C, M> Start<C, M> {
    /// From a checkpoint's family state at `position`: inside the chain (before
    /// `iterations`), `chain` restores the family's chain from the bytes; at its end,
    /// `model` decodes the fitted model's bytes and checks it and the scored documents
    /// against the fit.
    pub fn restore(
        bytes: &[u8],
        position: &Position,
        iterations: usize,
        chain: impl FnOnce(&[u8]) -> Result<C, RestoreError>,
        model: impl FnOnce(&[u8], ScoredSoFar) -> Result<(M, ScoredSoFar), RestoreError>,
    ) -> Result<Self, RestoreError> {
        if position.iteration < iterations {
            return chain(bytes).map(|c| Start::Chain(Box::new(c)));
        }
        let (fitted, scored) = decode(bytes)?;
        model(&fitted, scored).map(|(m, s)| Start::Scoring(Box::new(m), s))
    }

    /// The fitted model, the chain's end and the documents already scored: `run` runs
    /// the chain from `position` and makes its model; a fit that resumed at the chain's
    /// end runs nothing and reports the chain's progress as complete.
    pub fn finish(
        self,
        position: Position,
        ctx: &FitContext,
        run: impl FnOnce(Box<C>, Position) -> Result<(M, Position), FitError>,
    ) -> Result<(M, Position, Option<ScoredSoFar>), FitError> {
        match self {
            Start::Chain(chain) => run(chain, position).map(|(m, end)| (m, end, None)),
            Start::Scoring(model, scored) => {
                let it = position.iteration as u64;
                (ctx.progress)(Progress { iteration: it, total: it, ..Progress::default() });
                Ok((*model, position, Some(scored)))
            }
        }
    }
}

/// The fitted model's bytes and the documents scored so far, from the state of a
/// checkpoint at the chain's end (the caller decodes the model and checks both against
/// its fit).
fn decode(bytes: &[u8]) -> Result<(Vec<u8>, ScoredSoFar), RestoreError> {
    const WHAT: &str = "the state after the chain";
    let s: AfterChain = postcard::from_bytes(bytes).map_err(|e| RestoreError::undecodable(WHAT, e))?;
    if s.version != AFTER_CHAIN_VERSION {
        return Err(RestoreError::Version { what: WHAT, found: s.version, expected: AFTER_CHAIN_VERSION });
    }
    Ok((s.model, s.scored))
}

/// Score `docs` with `scorer`, from the documents `scored` already (a resumed fit). With
/// checkpoints on, the finished chain is handed over first (unless the fit resumed
/// after it), with `model()`'s bytes, then again as documents finish. The fit's
/// progress stands while documents are scored.
pub fn score_heldout(
    scorer: &dyn DocScorer,
    docs: &[HeldoutDoc],
    model: impl FnOnce() -> Vec<u8>,
    scored: Option<ScoredSoFar>,
    at: &EndOfChain,
    ctx: &FitContext,
) -> Result<HeldoutReport, FitError> {
    let resumed = scored.is_some();
    let from = scored.unwrap_or_else(|| ScoredSoFar::none(scorer, docs.len(), at.seed));
    let model_bytes = ctx.checkpoint.every.map(|_| model());
    let save = |scored: &ScoredSoFar| {
        if let Some(model) = &model_bytes {
            let state = postcard::to_allocvec(&AfterChainRef { version: AFTER_CHAIN_VERSION, model, scored }).expect("plain data encodes");
            hand_over(ctx, at.family, at.seed, at.schedule, at.position, state);
        }
    };
    if !resumed {
        save(&from);
    }
    let hooks = ScoringHooks { cancel: ctx.cancel, progress: &|_| {}, checkpoint: &ctx.checkpoint, save: &save };
    score_resuming(scorer, docs, at.seed, from, &hooks)
}
