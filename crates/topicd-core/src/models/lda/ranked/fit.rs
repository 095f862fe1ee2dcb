//! The fit over ranks itself: rank 0 scatters the corpus, every rank runs its shard's
//! sweeps chain after chain, and rank 0 gathers the posterior sums into the model.

use super::chain::RankedChain;
use super::shard::{scatter, LdaShard, RootPart};
use crate::corpus::Corpus;
use crate::models::chain::{Checkpoint, Position, Resume};
use crate::models::chains::{self, chain_seed, ChainResult};
use crate::models::lda::chain::SavedLda;
use crate::models::lda::fit::{model_of_ended, restore_after_chain, score_heldout, scores_heldout};
use crate::models::lda::{pooled, LdaModel, LdaParams};
use crate::models::{Checkpointing, FitContext, FitError, RestoreError, ALWAYS_READY};
use crate::ranks::Ranks;

/// Fit LDA over `ranks`: rank 0 holds the corpus (`Some`) and sends every rank its
/// shard; then the same split, chains, pooling and held-out scoring as
/// [`crate::models::lda::fit_lda`], the sweeps spread over the ranks. Rank 0 returns the model, the
/// others `None`.
///
/// Checkpoints: rank 0's `ctx` says how often and takes them, in the single-process
/// format (the state gathered in document order, with several chains the finished
/// chains' results after it), so a fit checkpointed over R ranks resumes over R' ranks
/// or in one process, and the reverse; the stop and checkpoint decisions are rank 0's.
/// With several chains rank 0 runs them through [`chains::run`], as one process does
/// (their trailers, the checkpoints between chains, the resumes), and before each chain
/// tells the other ranks which one and the state it starts from. The other ranks' `ctx`
/// should report nothing (their checkpoint settings are not read).
pub fn fit_lda_ranked(corpus: Option<Corpus>, p: &LdaParams, seed: u64, ctx: &FitContext, ranks: &dyn Ranks) -> Result<Option<LdaModel>, FitError> {
    p.refuse_seeds_in_ranked_fit().map_err(FitError::Params)?;
    let mut settings = vec![ctx.checkpoint.every.is_some() as u8];
    ranks.broadcast(0, &mut settings);
    let (shard, root) = scatter(corpus, p, seed, ranks)?;
    let fit = Fit { p, shard: &shard, root: root.as_ref(), ranks, seed };
    if !ranks.is_root() {
        // Rank 0's context's checkpoint settings; nothing handed over, rank 0's
        // decisions followed (`RankedChain::agree`).
        let (no_save, no_resume) = (|_: u64, _: Vec<u8>| {}, |_: Resume| {});
        let every = (settings[0] == 1).then_some(std::time::Duration::ZERO);
        let checkpoint = Checkpointing { every, save: &no_save, resume_from: None, resumed: &no_resume, ready: ALWAYS_READY };
        let local = FitContext { checkpoint, ..*ctx };
        let mut failed = None;
        while let Some((c, resume)) = next_chain(ranks, None) {
            if failed.is_none() {
                failed = fit.chain(c, &resume, &local, &[]).err();
            }
        }
        return failed.map_or(Ok(None), Err);
    }
    let result = chains::run(ctx, p.chains, p.iterations as u64, |staged, c, finished| {
        let resume = staged.checkpoint.resume_from.unwrap_or_default().to_vec();
        next_chain(ranks, Some((c, &resume)));
        let staged = FitContext { checkpoint: Checkpointing { resume_from: None, ..staged.checkpoint }, ..*staged };
        Ok(fit.chain(c, &resume, &staged, finished)?.expect("rank 0 ends every chain with its result"))
    });
    next_chain(ranks, None);
    Ok(Some(result?.model))
}

/// Rank 0 (`announce`): tell every rank the chain to run next and the state it starts
/// from (empty: fresh), or with `None` that none is left; the others: receive it.
fn next_chain(ranks: &dyn Ranks, announce: Option<(usize, &[u8])>) -> Option<(usize, Vec<u8>)> {
    let mut message = announce.map(|(c, resume)| [&(c as u64).to_le_bytes()[..], resume].concat()).unwrap_or_default();
    ranks.broadcast(0, &mut message);
    let (c, resume) = (message.len() >= 8).then(|| message.split_at(8))?;
    Some((u64::from_le_bytes(c.try_into().expect("eight bytes")) as usize, resume.to_vec()))
}

/// What every chain of a ranked fit reads.
struct Fit<'a> {
    p: &'a LdaParams,
    shard: &'a LdaShard,
    root: Option<&'a RootPart>,
    ranks: &'a dyn Ranks,
    seed: u64,
}

impl Fit<'_> {
    /// Chain `c` over the ranks from `resume` (empty: fresh; the same bytes on every
    /// rank): rank 0 returns its result (the last chain's pooled with `finished` and
    /// scored on the held-out documents), the others `None`.
    fn chain(
        &self,
        c: usize,
        resume: &[u8],
        ctx: &FitContext,
        finished: &[crate::models::lda::pooled::ChainResult],
    ) -> Result<Option<crate::models::lda::pooled::ChainResult>, FitError> {
        let Fit { p, shard, root, ranks, seed } = *self;
        let v = shard.tokens.num_terms;
        let test_documents = root.map_or(0, |r| r.test_documents);
        let schedule = p.schedule();
        let seed_c = chain_seed(seed, c);
        let is_last = c + 1 == p.chains;
        let (mut ranked, position) = match start(resume, p, shard, ranks, root, seed_c, ctx)? {
            RankedStart::Chain(chain, position) => (chain, position),
            RankedStart::Scoring(model, scored, end) => {
                let root = root.expect("only rank 0 resumes in the scoring");
                let at = crate::models::after_chain::EndOfChain { family: "lda", seed: seed_c, schedule: &schedule, position: end };
                let mut model = *model;
                (ctx.progress)(crate::models::Progress { iteration: end.iteration as u64, total: end.iteration as u64, ..Default::default() });
                model.heldout = Some(score_heldout(&model, &root.heldout, p, Some(scored), &at, ctx)?);
                return Ok(Some(ChainResult { model, trace: Default::default() }));
            }
            RankedStart::Done => return Ok(None),
        };
        let end = crate::models::chain::run(ranked.as_mut(), "lda", seed_c, &schedule, position, ctx)?;
        let trace = std::mem::take(&mut ranked.sums.trace);
        let Some(ended) = (*ranked).into_ended() else { return Ok(None) };
        let root = root.expect("rank 0 has the corpus' part");
        let mut model = model_of_ended(p, ended, v, test_documents, &end);
        if let Some((spec, rows)) = &root.design {
            (model.design, model.design_rows) = (Some(spec.clone()), rows.clone());
        }
        if !is_last {
            return Ok(Some(ChainResult { model, trace }));
        }
        let mut model = pooled::pool(finished, ChainResult { model, trace });
        if scores_heldout(p, test_documents) {
            let at = crate::models::after_chain::EndOfChain { family: "lda", seed: seed_c, schedule: &schedule, position: end };
            model.heldout = Some(score_heldout(&model, &root.heldout, p, None, &at, ctx)?);
        }
        Ok(Some(ChainResult { model, trace: Default::default() }))
    }
}

/// Where a rank's chain starts: a chain (fresh or restored), rank 0's held-out scoring
/// resumed after the chain, or, on the other ranks, nothing left to do.
enum RankedStart<'a> {
    Chain(Box<RankedChain<'a>>, Position),
    Scoring(Box<LdaModel>, crate::models::heldout::ScoredSoFar, Position),
    Done,
}

/// What a checkpoint at the chain's end is called in a [`RestoreError`].
const AT_THE_END: &str = "the state after the chain";

/// The start every rank agrees on: from `resume` (the same bytes on every rank) when
/// it decodes and fits, else fresh; rank 0 reports which.
fn start<'a>(
    resume: &[u8],
    p: &'a LdaParams,
    shard: &'a LdaShard,
    ranks: &'a dyn Ranks,
    root: Option<&RootPart>,
    seed: u64,
    ctx: &FitContext,
) -> Result<RankedStart<'a>, FitError> {
    let fresh = || RankedStart::Chain(Box::new(RankedChain::new(p, shard, ranks, seed)), Position::START);
    if resume.is_empty() {
        return Ok(fresh());
    }
    let schedule = p.schedule();
    let sizes = (shard.num_tokens, shard.num_docs, shard.tokens.num_terms);
    let outcome: Result<RankedStart<'a>, RestoreError> = Checkpoint::decode_for(resume, "lda", seed, &schedule).and_then(|c| {
        if c.position.iteration < schedule.iterations {
            // Every rank reads the same bytes with the same checks: they agree.
            let saved = SavedLda::decode_for(&c.state, p, sizes, &c.position)?;
            return Ok(RankedStart::Chain(Box::new(RankedChain::restore(p, shard, ranks, saved)), c.position));
        }
        // At the chain's end: rank 0 scores the held-out documents; the others are done
        // once rank 0 has accepted the state.
        let accepted = root.map(|root| {
            crate::models::after_chain::Start::<RankedChain, LdaModel>::restore(
                &c.state,
                &c.position,
                schedule.iterations,
                |_| Err(RestoreError::inconsistent(AT_THE_END, "a chain state at the chain's end")),
                |m, scored| restore_after_chain(p, shard.num_tokens, sizes.2, root.test_documents, seed, m, scored, &c.position),
            )
        });
        let mut verdict = vec![accepted.as_ref().is_none_or(|a| a.is_ok()) as u8];
        ranks.broadcast(0, &mut verdict);
        match accepted {
            Some(Ok(crate::models::after_chain::Start::Scoring(model, scored))) => Ok(RankedStart::Scoring(model, scored, c.position)),
            Some(Err(reason)) => Err(reason),
            Some(Ok(_)) => Err(RestoreError::inconsistent(AT_THE_END, "a chain state at the chain's end")),
            None if verdict[0] == 1 => Ok(RankedStart::Done),
            None => Err(RestoreError::inconsistent(AT_THE_END, "rank 0 rejected it")),
        }
    });
    match outcome {
        Ok(start) => {
            if let RankedStart::Chain(_, position) | RankedStart::Scoring(_, _, position) = &start {
                (ctx.checkpoint.resumed)(Resume::From(position.iteration as u64));
            }
            Ok(start)
        }
        Err(reason) => {
            (ctx.checkpoint.resumed)(Resume::rejected(&reason));
            Ok(fresh())
        }
    }
}

#[cfg(test)]
#[path = "fit_tests.rs"]
mod fit_tests;
