//! The fit of a chain family in one process, written once: chains one after another
//! from derived seeds, each started fresh or from a checkpoint, run by the chain
//! driver, ended in a model, pooled with the chains before it, and the last one's
//! held-out documents scored.
//!
//! Why it exists: LDA and DCNT/SCNT fitted their chains with the same forty lines of
//! glue (resume inside a chain or after it, keep a non-last chain's trace, pool at the
//! last, score at the end), each written out by hand. A family now says only what is
//! its own ([`ChainFit`]) and [`fit_chains`] does the rest, so a resume rule or a
//! pooling rule changes in one place for every chain family.

use super::after_chain::{EndOfChain, Start};
use super::chain::{self, Chain, Position, Schedule};
use super::chains::{self, ChainResult};
use super::heldout::ScoredSoFar;
use super::{FitContext, FitError, RestoreError};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// What a chain family supplies to [`fit_chains`]: its chain, how a chain's end
/// becomes a model, how chains pool, and how the held-out documents are scored.
pub trait ChainFit {
    /// The fitted model (one chain's, or the pool of several).
    type Model: Serialize + DeserializeOwned + Sync;
    /// One chain's sampler state, run by [`chain::run`].
    type Chain: Chain;

    /// The family's name as checkpoints record it.
    fn family(&self) -> &'static str;
    /// How many chains the fit runs (at least 1).
    fn chains(&self) -> usize;
    /// The sweeps of every chain: burn-in, thinning, when the log joint is computed.
    fn schedule(&self) -> Schedule;
    /// A chain started from `seed` (`ctx` is the chain's own context).
    fn fresh(&self, seed: u64, ctx: &FitContext) -> Self::Chain;
    /// A chain restored from a checkpoint's state at `position`, checked against the fit.
    fn restore(&self, state: &[u8], position: &Position) -> Result<Self::Chain, RestoreError>;
    /// The model and scored documents a checkpoint taken after the chain's last sweep
    /// carries, checked against the fit.
    fn restore_ended(&self, model: &[u8], scored: ScoredSoFar, seed: u64, position: &Position) -> Result<(Self::Model, ScoredSoFar), RestoreError>;
    /// The model a finished chain ends in (without held-out or convergence reports) and
    /// the trace of its kept sweeps.
    fn ended(&self, chain: Self::Chain, end: &Position) -> ChainResult<Self::Model>;
    /// The last chain's model pooled with the `finished` ones (itself when alone).
    fn pool(&self, finished: &[ChainResult<Self::Model>], last: ChainResult<Self::Model>) -> Self::Model;
    /// Score the held-out documents into `model`'s report (nothing when there are none),
    /// from those `scored` before a resume.
    fn score_heldout(&self, model: &mut Self::Model, scored: Option<ScoredSoFar>, at: &EndOfChain, ctx: &FitContext) -> Result<(), FitError>;
}

/// Fit `family`'s chains from `seed` (resuming from `ctx`'s checkpoint when it has a
/// usable one): the pooled model, its held-out documents scored.
pub fn fit_chains<F: ChainFit>(family: &F, seed: u64, ctx: &FitContext) -> Result<F::Model, FitError> {
    let (name, schedule, count) = (family.family(), family.schedule(), family.chains());
    let last = chains::run(ctx, count, schedule.iterations as u64, |ctx, c, finished: &[ChainResult<F::Model>]| {
        let is_last = c + 1 == count;
        let seed_c = chains::chain_seed(seed, c);
        let (start, position) = chain::start(
            ctx,
            name,
            seed_c,
            &schedule,
            |bytes, position| {
                Start::restore(
                    bytes,
                    position,
                    schedule.iterations,
                    |b| family.restore(b, position),
                    |m, scored| family.restore_ended(m, scored, seed_c, position),
                )
            },
            || Start::Chain(Box::new(family.fresh(seed_c, ctx))),
        );
        // A chain before the last keeps its own trace for the pool's convergence report.
        let mut own_trace = None;
        let (mut model, end, scored) = start.finish(position, ctx, |mut one, position| {
            let end = chain::run(one.as_mut(), name, seed_c, &schedule, position, ctx)?;
            let result = family.ended(*one, &end);
            if !is_last {
                own_trace = Some(result.trace);
                return Ok((result.model, end));
            }
            Ok((family.pool(finished, result), end))
        })?;
        if let Some(trace) = own_trace {
            return Ok(ChainResult { model, trace });
        }
        let at = EndOfChain { family: name, seed: seed_c, schedule: &schedule, position: end };
        family.score_heldout(&mut model, scored, &at, ctx)?;
        Ok(ChainResult { model, trace: Default::default() })
    })?;
    Ok(last.model)
}
