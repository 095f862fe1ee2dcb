//! Several independent chains in one job, one after another, and the matching of their
//! exchangeable topics before their posterior means are pooled.
//!
//! Why it exists: convergence is judged by comparing chains started apart (split-R̂,
//! [`super::convergence`]), and a posterior mean over several chains is steadier than
//! over one. A job asks for `chains` (1 to [`MAX_CHAINS`]); chain c runs from its own
//! seed ([`chain_seed`]: chain 0's is the job's seed, so a one-chain job is the fit it
//! always was) as one stage of the job: its iterations, progress, kept samples and
//! checkpoints are shifted by c × iterations, so the job counts through the chains as one
//! sequence.
//!
//! Checkpoints: with several chains, a checkpoint is the current chain's own (as the
//! family writes it) followed by a trailer holding the results of the chains already
//! finished; at the end of every chain but the last one, a checkpoint with no current
//! state is handed over, so a job stopped there resumes with the next chain. A resumed
//! job therefore repeats no finished chain, and ends with the bytes of an uninterrupted
//! one. A one-chain job's checkpoints are the family's own, as before.
//!
//! Pooling is the family's: the closure run for the last chain receives the finished
//! chains' results. For exchangeable topics [`align_topics`] gives the permutation that
//! maps a chain's topics onto a reference's.

use super::convergence::{ConvergenceReport, KeptTrace};
use super::fit_context::{Resume, Stage};
use super::state_bytes::{append_tail, split_tail};
use super::{Checkpointing, FitContext, FitError, ModelError, RestoreError};
use crate::inference::assignment::min_cost_assignment;
use rayon::prelude::*;
use serde::{de::DeserializeOwned, Deserialize, Serialize};

pub use super::params::MAX_CHAINS;

/// Marks a multi-chain checkpoint's trailer ("chains" in ASCII).
const MAGIC: u64 = 0x0000_6368_6169_6e73;

/// The seed of chain `chain` of a job seeded with `seed`: the job's own for chain 0.
pub fn chain_seed(seed: u64, chain: usize) -> u64 {
    if chain == 0 {
        seed
    } else {
        crate::rng::mix64(seed ^ crate::rng::mix64(MAGIC.wrapping_add(chain as u64)))
    }
}

/// What follows the current chain's bytes in a multi-chain checkpoint.
#[derive(Serialize, Deserialize)]
struct Trailer<F> {
    magic: u64,
    chains: u32,
    /// Whether the bytes before this trailer are the current chain's checkpoint (false:
    /// the next chain has not started).
    has_current: bool,
    /// The finished chains' results (a slice when written, a `Vec` when read: postcard
    /// encodes both alike).
    finished: F,
}

/// Run `chains` chains of `iterations` each: `one(ctx, c, finished)` runs chain c (from
/// the context's checkpoint, if it is given one) given the results of chains 0..c, and
/// returns chain c's result; the last chain's result (which the family pools with the
/// finished ones) is returned.
pub fn run<T>(ctx: &FitContext, chains: usize, iterations: u64, mut one: impl FnMut(&FitContext, usize, &[T]) -> Result<T, FitError>) -> Result<T, FitError>
where
    T: Serialize + DeserializeOwned + Sync,
{
    if chains <= 1 {
        return one(ctx, 0, &[]);
    }
    let (mut finished, mut current) = match ctx.checkpoint.resume_from.map(|bytes| decode::<T>(bytes, chains)) {
        None => (Vec::new(), None),
        Some(Ok((finished, current))) => {
            if current.is_none() {
                (ctx.checkpoint.resumed)(Resume::From(finished.len() as u64 * iterations));
            }
            (finished, current)
        }
        Some(Err(reason)) => {
            (ctx.checkpoint.resumed)(Resume::rejected(&reason));
            (Vec::new(), None)
        }
    };
    let total = chains as u64 * iterations;
    loop {
        let c = finished.len();
        let name = (chains > 1).then(|| format!("chain {} of {chains}", c + 1));
        let stage = Stage { name: name.as_deref(), offset: c as u64 * iterations, length: iterations, total };
        let result = ctx.stage(stage, current.take(), |staged| {
            let save = |it: u64, bytes: Vec<u8>| (staged.checkpoint.save)(it, wrap(bytes, true, chains, &finished));
            let wrapped = FitContext { checkpoint: Checkpointing { save: &save, ..staged.checkpoint }, ..*staged };
            one(&wrapped, c, &finished)
        })?;
        if c + 1 == chains {
            return Ok(result);
        }
        finished.push(result);
        if ctx.checkpoint.every.is_some() {
            (ctx.checkpoint.save)(finished.len() as u64 * iterations, wrap(Vec::new(), false, chains, &finished));
        }
    }
}

fn wrap<T: Serialize>(current: Vec<u8>, has_current: bool, chains: usize, finished: &[T]) -> Vec<u8> {
    append_tail(current, &Trailer { magic: MAGIC, chains: chains as u32, has_current, finished })
}

/// The finished chains' results and the current chain's checkpoint, if any.
#[allow(clippy::type_complexity)]
fn decode<T: DeserializeOwned>(bytes: &[u8], chains: usize) -> Result<(Vec<T>, Option<&[u8]>), RestoreError> {
    const WHAT: &str = "the multi-chain checkpoint";
    let (current, tail) = split_tail(bytes).map_err(RestoreError::layout(WHAT))?;
    let t: Trailer<Vec<T>> = postcard::from_bytes(tail).map_err(|e| RestoreError::undecodable(WHAT, e))?;
    if t.magic != MAGIC || t.chains as usize != chains {
        return Err(RestoreError::other_fit(WHAT, format!("{} chains, not {chains}", t.chains)));
    }
    if t.finished.len() >= chains || (!t.has_current && t.finished.is_empty()) {
        return Err(RestoreError::inconsistent(WHAT, format!("{} finished chains of {chains}", t.finished.len())));
    }
    Ok((t.finished, t.has_current.then_some(current)))
}

/// One chain's model (posterior means over its kept iterations, no convergence report
/// yet) and its convergence trace: what a family's chains hand to its pooling.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChainResult<M> {
    pub model: M,
    pub trace: KeptTrace,
}

/// The model a family's chains end in: one chain's own, or `merge` of every chain's
/// model (chain order, chain 0 first); either way with the convergence report of every
/// chain's trace in the field `report` names.
pub fn pool<M>(finished: &[ChainResult<M>], last: ChainResult<M>, report: fn(&mut M) -> &mut Option<ConvergenceReport>, merge: impl FnOnce(&[&M]) -> M) -> M {
    if finished.is_empty() {
        let ChainResult { mut model, trace } = last;
        *report(&mut model) = ConvergenceReport::from_traces(&[trace]);
        return model;
    }
    let (models, traces): (Vec<&M>, Vec<KeptTrace>) = finished.iter().chain(std::iter::once(&last)).map(|c| (&c.model, c.trace.clone())).unzip();
    let mut pooled = merge(&models);
    *report(&mut pooled) = ConvergenceReport::from_traces(&traces);
    pooled
}

/// Rows of one value per topic of a later chain (`rows.len()` a multiple of
/// `to.len()`), each moved to the reference's topics: `to[a]` is where topic a goes.
pub fn relabel_columns<T: Copy + Default>(rows: &[T], to: &[usize]) -> Vec<T> {
    let k = to.len();
    let mut out = vec![T::default(); rows.len()];
    for (o, r) in out.chunks_mut(k.max(1)).zip(rows.chunks(k.max(1))) {
        for (a, &b) in to.iter().enumerate() {
            o[b] = r[a];
        }
    }
    out
}

/// How a chain's topics were matched to the reference chain's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Alignment {
    /// `permutation[k]`: the reference topic this chain's topic k is pooled into.
    pub permutation: Vec<usize>,
    /// The L1 distance (0 to 2) between each reference topic's word distribution and
    /// the one matched to it, indexed by reference topic.
    pub distances: Vec<f64>,
}

/// How a kept sample stored at job iteration `iteration` (1-based, counted through the
/// chains) is relabelled onto a pooled model's topics: `None` for chain 0's, the
/// permutation of its chain's alignment otherwise; an error for a sample past the
/// model's chains.
pub fn sample_relabel(alignments: &[Alignment], iteration: u64, iterations: usize, chains: usize) -> Result<Option<&[usize]>, ModelError> {
    sample_relabel_to(alignments, 0, iteration, iterations, chains)
}

/// [`sample_relabel`] for a model whose topics are chain `reference`'s
/// ([`match_to_consensus_pinned`]): `alignments` holds every other chain's, in chain
/// order.
pub fn sample_relabel_to(alignments: &[Alignment], reference: usize, iteration: u64, iterations: usize, chains: usize) -> Result<Option<&[usize]>, ModelError> {
    let c = sample_chain(iteration, iterations);
    if c == reference {
        return Ok(None);
    }
    alignment_of(alignments, reference, c)
        .map(|a| Some(a.permutation.as_slice()))
        .ok_or_else(|| ModelError::Invalid(format!("a sample of chain {c} of a {chains}-chain fit")))
}

/// The chain that kept the sample stored at job iteration `iteration` (1-based, counted
/// through chains of `iterations` sweeps each).
pub fn sample_chain(iteration: u64, iterations: usize) -> usize {
    (iteration.max(1) - 1) as usize / iterations.max(1)
}

/// Chain `c`'s alignment among `alignments` (every chain's but the reference's, in
/// chain order); `None` for the reference chain itself or past the last chain.
pub fn alignment_of(alignments: &[Alignment], reference: usize, c: usize) -> Option<&Alignment> {
    match c.cmp(&reference) {
        std::cmp::Ordering::Equal => None,
        std::cmp::Ordering::Less => alignments.get(c),
        std::cmp::Ordering::Greater => alignments.get(c - 1),
    }
}

/// The alignments as a model's diagnostics serve them.
pub fn alignments_json(alignments: &[Alignment]) -> serde_json::Value {
    alignments
        .iter()
        .map(|a| {
            serde_json::json!({
                "permutation": a.permutation,
                "max_distance": a.distances.iter().copied().fold(0.0, f64::max),
                "distances": a.distances,
            })
        })
        .collect()
}

/// Every later chain's topics matched to chain 0's (`word_rates[c]`: chain c's
/// topic-major `k × v` word distributions): the alignments of chains 1.., and where
/// each chain's topic a goes (`targets[c][a]`; chain 0's stay where they are).
pub fn match_to_first(word_rates: &[&[f64]], k: usize, v: usize) -> (Vec<Alignment>, Vec<Vec<usize>>) {
    match_to_first_pinned(word_rates, k, v, 0)
}

/// [`match_to_first`] with topics `0..pinned` kept where they are in every chain (a
/// seeded fit's seeded topics: topic i is seed i's in every chain); the others matched.
pub fn match_to_first_pinned(word_rates: &[&[f64]], k: usize, v: usize, pinned: usize) -> (Vec<Alignment>, Vec<Vec<usize>>) {
    let alignments: Vec<Alignment> = word_rates[1..].iter().map(|other| align_topics_pinned(word_rates[0], other, k, v, pinned)).collect();
    let targets = std::iter::once((0..k).collect()).chain(alignments.iter().map(|a| a.permutation.clone())).collect();
    (alignments, targets)
}

/// Match the `k` topics of `other` to those of `reference` (both topic-major `k × v`
/// word distributions) by the permutation minimising the summed L1 distance.
pub fn align_topics(reference: &[f64], other: &[f64], k: usize, v: usize) -> Alignment {
    align_topics_pinned(reference, other, k, v, 0)
}

/// The cost that keeps a pinned topic from any partner but itself: far above any L1
/// distance between distributions (at most 2), and finite for the assignment solver.
const APART: f64 = 1e6;

/// [`align_topics`] with topics `0..pinned` matched to themselves.
pub fn align_topics_pinned(reference: &[f64], other: &[f64], k: usize, v: usize, pinned: usize) -> Alignment {
    let cost: Vec<f64> = (0..k * k)
        .into_par_iter()
        .map(|c| {
            let (a, b) = (c / k, c % k);
            if a != b && (a < pinned || b < pinned) {
                return APART;
            }
            other[a * v..(a + 1) * v].iter().zip(&reference[b * v..(b + 1) * v]).map(|(x, y)| (x - y).abs()).sum()
        })
        .collect();
    let permutation = min_cost_assignment(&cost, k);
    let mut distances = vec![0.0; k];
    for (a, &b) in permutation.iter().enumerate() {
        distances[b] = cost[a * k + b];
    }
    Alignment { permutation, distances }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::SavedCheckpoints;
    use std::sync::Mutex;

    /// A toy family: chain c's "result" is the list of iterations it ran, plus its seed.
    fn toy(ctx: &FitContext, c: usize, finished: &[(u64, Vec<u64>)], seed: u64, n: u64) -> Result<(u64, Vec<u64>), FitError> {
        assert_eq!(finished.len(), c);
        let start = match ctx.checkpoint.resume_from {
            Some(b) => {
                let it = u64::from_le_bytes(b.try_into().unwrap());
                (ctx.checkpoint.resumed)(Resume::From(it));
                it
            }
            None => 0,
        };
        for it in start + 1..=n {
            if it < n {
                (ctx.checkpoint.save)(it, it.to_le_bytes().to_vec());
            }
        }
        Ok((chain_seed(seed, c), (start + 1..=n).collect()))
    }

    fn run_recording(resume: Option<&[u8]>) -> ((u64, Vec<u64>), SavedCheckpoints, Vec<Resume>, usize) {
        let calls = Mutex::new(0);
        let ((last, _), saved, resumed) = crate::models::test_kit::recording(resume, |ctx| {
            let r = run(ctx, 3, 4, |ctx, c, f| {
                *calls.lock().unwrap() += 1;
                toy(ctx, c, f, 9, 4)
            });
            (r.unwrap(), ())
        });
        (last, saved, resumed, calls.into_inner().unwrap())
    }

    #[test]
    fn chains_run_in_sequence_and_resume_where_they_stopped() {
        let (last, saved, _, calls) = run_recording(None);
        assert_eq!(calls, 3);
        assert_eq!(last.0, chain_seed(9, 2));
        // Three in each chain, plus the boundaries after chains 0 and 1.
        let its: Vec<u64> = saved.iter().map(|s| s.0).collect();
        assert_eq!(its, vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
        // Resuming inside chain 1 (job iteration 6) runs chains 1 (from 2) and 2 only.
        let (resumed_last, _, outcome, calls) = run_recording(Some(&saved[5].1));
        assert_eq!((outcome, calls), (vec![Resume::From(6)], 2));
        assert_eq!(resumed_last, last);
        // Resuming at the boundary after chain 1 runs only chain 2, from its start.
        let (_, _, outcome, calls) = run_recording(Some(&saved[7].1));
        assert_eq!((outcome, calls), (vec![Resume::From(8)], 1));
    }

    #[test]
    fn foreign_checkpoints_are_rejected_and_every_chain_runs() {
        let (_, saved, _, _) = run_recording(None);
        for bytes in [vec![1u8, 2, 3], 5u64.to_le_bytes().to_vec(), saved[0].1[..saved[0].1.len() - 1].to_vec()] {
            let (_, _, outcome, calls) = run_recording(Some(&bytes));
            assert!(matches!(&outcome[..], [Resume::Rejected(_)]), "{outcome:?}");
            assert_eq!(calls, 3);
        }
    }

    #[test]
    fn one_chain_is_the_family_alone() {
        let (r, saved, _) = crate::models::test_kit::recording(None, |ctx| run(ctx, 1, 4, |ctx, c, f| toy(ctx, c, f, 9, 4)).unwrap());
        assert_eq!(r.0, 9, "chain 0 runs from the job's seed");
        assert!(saved.iter().all(|(it, b)| *b == it.to_le_bytes()), "checkpoints are the family's own bytes");
        assert_ne!(chain_seed(9, 1), chain_seed(9, 2));
        assert_ne!(chain_seed(9, 1), 9);
    }

    #[test]
    fn topics_are_matched_by_their_word_distributions() {
        let (k, v) = (4, 3);
        let reference = [0.8, 0.1, 0.1, 0.1, 0.8, 0.1, 0.1, 0.1, 0.8, 0.4, 0.3, 0.3];
        // Topic a of `other` is reference topic perm[a], slightly perturbed.
        let perm = [2, 0, 3, 1];
        let mut other = vec![0.0; k * v];
        for a in 0..k {
            for w in 0..v {
                other[a * v + w] = reference[perm[a] * v + w] + if w == 0 { 0.02 } else { -0.01 };
            }
        }
        let al = align_topics(&reference, &other, k, v);
        assert_eq!(al.permutation, perm);
        assert!(al.distances.iter().all(|d| (d - 0.04).abs() < 1e-12), "{:?}", al.distances);
    }
}
