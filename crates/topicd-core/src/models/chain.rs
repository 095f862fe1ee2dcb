//! The chain driver: the one loop an MCMC family's fit runs through.
//!
//! Why it exists: every Gibbs-style fit repeats the same bookkeeping around its kernel:
//! the iteration loop, cancellation, the log-likelihood cadence and its finiteness
//! check, burn-in and thinning, kept samples, progress, and now checkpoints and resume.
//! Written once here, a family supplies only its kernels through [`Chain`] (one
//! transition given (seed, iteration), its log joint, what a kept iteration adds to the
//! posterior means, and the encoding of its resumable state), in the spirit of nuts-rs'
//! and bnpy's small generic cores. LDA, HPC/PCM and DCNT/SCNT run on it; the VI
//! families run on the pass driver ([`super::passes`]).
//!
//! Checkpoints: every `FitContext::checkpoint.every` the driver encodes a [`Checkpoint`]
//! (its own position: iteration, kept count, last log-likelihood; the schedule and seed
//! it belongs to; the family's state) and hands the bytes to the runner, which stores
//! them; a cancelled chain (a graceful shutdown cancels every fit) hands over one more,
//! of the last iteration it completed. Resuming decodes it, lets the family rebuild its
//! state, and continues at iteration + 1. Every random stream is keyed by (seed,
//! iteration, index) and the driver draws nothing itself, so a resumed chain makes
//! exactly the calls, in exactly the order, the uninterrupted one made after that
//! iteration: the model is identical.
//! A family with work after its chain (DCNT's held-out scoring) checkpoints that work
//! at the chain's end through [`hand_over`]; resuming there leaves no iteration to run.
//! A checkpoint that does not decode, or belongs to another schedule or seed, is
//! rejected (reported through `FitContext::checkpoint.resumed`) and the chain starts
//! from iteration 0; nothing here panics on bad bytes.

pub use super::fit_context::Resume;
use super::{FitContext, FitError, Progress, RestoreError, StepKind};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::time::Instant;

/// Iterations, burn-in, thinning and the log-likelihood cadence of a chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schedule {
    pub iterations: usize,
    /// Iterations discarded before posterior means are accumulated.
    pub burn_in: usize,
    /// Keep every `thin`-th iteration after burn-in (at least 1).
    pub thin: usize,
    /// Compute the log joint every this many iterations (and on the first and last).
    pub loglik_every: usize,
}

impl Schedule {
    /// Whether iteration `it` (1-based) contributes to the posterior means.
    pub fn is_kept(&self, it: usize) -> bool {
        it > self.burn_in && (it - self.burn_in).is_multiple_of(self.thin.max(1))
    }

    /// Whether the log joint is computed after iteration `it`: the first, every
    /// `loglik_every`-th and the last.
    pub fn computes_loglik(&self, it: usize) -> bool {
        it.is_multiple_of(self.loglik_every.max(1)) || it == self.iterations || it == 1
    }
}

/// What a family supplies to the driver: its kernels over a state it owns.
pub trait Chain {
    /// One transition at `iteration` (1-based; every random stream is keyed by
    /// (`seed`, `iteration`, index)), including whatever the family does after it (LDA's
    /// hyperparameter re-estimation). Returns this iteration's progress diagnostics, or
    /// the error that ends the fit (e.g. DCNT's non-finite global parameters).
    fn step(&mut self, seed: u64, iteration: usize) -> Result<Map<String, Value>, FitError>;
    /// The log joint per token of the current state.
    fn log_joint_per_token(&self) -> f64;
    /// The kind of step `iteration` is, for a family whose schedule mixes kinds.
    fn step_kind(&self, _iteration: usize) -> Option<StepKind> {
        None
    }
    /// Add the current state to the posterior means (a kept iteration), given its log
    /// joint per token (the driver computes it on every kept iteration, for the
    /// convergence trace); returns the encoded thinned sample to store, if the family
    /// keeps one.
    fn keep(&mut self, loglik_per_token: f64) -> Option<Vec<u8>>;
    /// Everything the family needs to continue after the current iteration (state,
    /// accumulators, fitted hyperparameters), encoded; read back by its own restore.
    fn save(&self) -> Vec<u8>;
    /// A decision every process of a distributed chain must take together (stop here,
    /// checkpoint here), given this process' own view: such a chain takes rank 0's; one
    /// process decides alone.
    fn agree(&self, decision: bool) -> bool {
        decision
    }
}

/// Where a chain is: the driver's part of a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Position {
    /// Iterations completed.
    pub iteration: usize,
    /// Kept iterations so far.
    pub kept: usize,
    /// The last log joint per token computed (NaN before the first).
    pub last_loglik: f64,
}

impl Position {
    /// A chain that has not started.
    pub const START: Position = Position { iteration: 0, kept: 0, last_loglik: f64::NAN };
}

/// Format version of [`Checkpoint`]'s encoding.
const CHECKPOINT_VERSION: u32 = 2;

/// A resumable chain: the driver's position, the schedule and seed it belongs to, and
/// the family's state (opaque here).
///
/// Encoded as the state's bytes as they are, then the rest (postcard), then the rest's
/// length (`u32`, little-endian): the family's state, hundreds of megabytes for HPC on a
/// large corpus, is neither serialised byte by byte nor copied into a second buffer
/// ([`Checkpoint::wrap`] appends to the family's own).
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    pub version: u32,
    /// The family's name, so a checkpoint is never read by another family.
    pub family: String,
    pub seed: u64,
    pub schedule: Schedule,
    pub position: Position,
    pub state: Vec<u8>,
}

/// Everything of a [`Checkpoint`] but its state: the trailer after the state's bytes.
#[derive(Serialize, Deserialize)]
struct Trailer {
    version: u32,
    family: String,
    seed: u64,
    schedule: Schedule,
    position: Position,
}

impl Checkpoint {
    pub fn encode(&self) -> Vec<u8> {
        let Checkpoint { version, family, seed, schedule, position, state } = self.clone();
        super::state_bytes::append_tail(state, &Trailer { version, family, seed, schedule, position })
    }

    /// The encoding of a current-version checkpoint of `family`'s `state`, appended to
    /// the state's own buffer.
    pub fn wrap(state: Vec<u8>, family: &str, seed: u64, schedule: &Schedule, position: Position) -> Vec<u8> {
        super::state_bytes::append_tail(state, &Trailer { version: CHECKPOINT_VERSION, family: family.to_string(), seed, schedule: *schedule, position })
    }

    /// Decode and check that the checkpoint belongs to this chain (family, seed,
    /// schedule) and stops inside it or at its end (a family's work after the chain).
    pub fn decode_for(bytes: &[u8], family: &str, seed: u64, schedule: &Schedule) -> Result<Checkpoint, RestoreError> {
        const WHAT: &str = "the checkpoint";
        let (state, trailer) = super::state_bytes::split_tail(bytes).map_err(RestoreError::layout(WHAT))?;
        let t: Trailer = postcard::from_bytes(trailer).map_err(|e| RestoreError::undecodable(WHAT, e))?;
        if t.version != CHECKPOINT_VERSION {
            return Err(RestoreError::Version { what: WHAT, found: t.version, expected: CHECKPOINT_VERSION });
        }
        if t.family != family || t.seed != seed || t.schedule != *schedule {
            return Err(RestoreError::other_fit(WHAT, format!("{} seed {} {:?}", t.family, t.seed, t.schedule)));
        }
        let p = t.position;
        if p.iteration == 0 || p.iteration > schedule.iterations || p.kept > p.iteration {
            return Err(RestoreError::inconsistent(WHAT, format!("position {p:?} is outside the chain's {} iterations", schedule.iterations)));
        }
        Ok(Checkpoint { version: t.version, family: t.family, seed: t.seed, schedule: t.schedule, position: p, state: state.to_vec() })
    }
}

/// Start a chain: from `ctx`'s checkpoint when there is one that decodes and that
/// `restore` accepts (its state bytes and the driver's position), else `fresh()` from
/// the start. The outcome is reported through `ctx.checkpoint.resumed`.
pub fn start<C>(
    ctx: &FitContext,
    family: &str,
    seed: u64,
    schedule: &Schedule,
    restore: impl FnOnce(&[u8], &Position) -> Result<C, RestoreError>,
    fresh: impl FnOnce() -> C,
) -> (C, Position) {
    let Some(bytes) = ctx.checkpoint.resume_from else {
        return (fresh(), Position::START);
    };
    let restored = Checkpoint::decode_for(bytes, family, seed, schedule).and_then(|c| Ok((restore(&c.state, &c.position)?, c.position)));
    match restored {
        Ok((chain, position)) => {
            (ctx.checkpoint.resumed)(Resume::From(position.iteration as u64));
            (chain, position)
        }
        Err(reason) => {
            (ctx.checkpoint.resumed)(Resume::rejected(&reason));
            (fresh(), Position::START)
        }
    }
}

/// Hand `ctx` a checkpoint of the chain at `position` with the family's `state`: what
/// [`run`] does every `every`, and what a family's work after its chain (e.g. scoring
/// held-out documents; `position` at the schedule's end) checkpoints itself with.
pub fn hand_over(ctx: &FitContext, family: &str, seed: u64, schedule: &Schedule, position: Position, state: Vec<u8>) {
    (ctx.checkpoint.save)(position.iteration as u64, Checkpoint::wrap(state, family, seed, schedule, position));
}

/// Run `chain` from `position` to the end of `schedule`: the loop every MCMC fit
/// shares. Returns the final position (the last log-likelihood and the kept count).
pub fn run<C: Chain>(chain: &mut C, family: &str, seed: u64, schedule: &Schedule, mut position: Position, ctx: &FitContext) -> Result<Position, FitError> {
    let save = |chain: &C, position: Position| {
        let started = Instant::now();
        let state = chain.save();
        tracing::info!(family, iteration = position.iteration, bytes = state.len(), encode_s = started.elapsed().as_secs_f64(), "checkpoint encoded");
        hand_over(ctx, family, seed, schedule, position, state)
    };
    let mut last_checkpoint = Instant::now();
    // The iteration of the last checkpoint handed over (or resumed from).
    let mut saved = position.iteration;
    for it in position.iteration + 1..=schedule.iterations {
        if chain.agree(ctx.cancel.is_cancelled()) {
            // Hand over where the chain is, so a fit stopped by a graceful shutdown
            // resumes here rather than at its last periodic checkpoint.
            if ctx.checkpoint.every.is_some() && position.iteration > saved {
                save(chain, position);
            }
            return Err(FitError::Cancelled);
        }
        let mut diagnostics = chain.step(seed, it)?;
        // The log joint is reported on the schedule's cadence, and computed on every kept
        // iteration too for the convergence trace (not reported there: the job's trace
        // keeps its cadence).
        let (kept, reported) = (schedule.is_kept(it), schedule.computes_loglik(it));
        let ll = (kept || reported).then(|| chain.log_joint_per_token());
        if let Some(x) = ll {
            if !x.is_finite() {
                return Err(FitError::Numerical(super::causes::NonFinite::log_likelihood(x, it as u64)));
            }
            if reported {
                position.last_loglik = x;
            }
        }
        if let (true, Some(ll)) = (kept, ll) {
            position.kept += 1;
            if let Some(sample) = chain.keep(ll) {
                (ctx.sample)(it as u64, sample);
            }
        }
        position.iteration = it;
        diagnostics.insert("kept_sweeps".into(), json!(position.kept));
        let loglik_per_token = ll.filter(|_| reported);
        (ctx.progress)(Progress { iteration: it as u64, total: schedule.iterations as u64, loglik_per_token, diagnostics, kind: chain.step_kind(it) });
        if it < schedule.iterations && chain.agree(ctx.checkpoint.due(last_checkpoint)) {
            save(chain, position);
            saved = it;
            last_checkpoint = Instant::now();
        }
    }
    Ok(position)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::{CancelToken, Checkpointing, SavedCheckpoints};
    use std::sync::Mutex;
    use std::time::Duration;

    /// A toy chain: its state is a running sum of (seed, iteration) hashes.
    struct Toy {
        x: u64,
        kept: Vec<u64>,
    }

    impl Chain for Toy {
        fn step(&mut self, seed: u64, iteration: usize) -> Result<Map<String, Value>, FitError> {
            self.x = crate::rng::mix64(self.x ^ seed ^ iteration as u64);
            Ok(Map::new())
        }
        fn log_joint_per_token(&self) -> f64 {
            -((self.x % 1000) as f64)
        }
        fn keep(&mut self, _: f64) -> Option<Vec<u8>> {
            self.kept.push(self.x);
            None
        }
        fn save(&self) -> Vec<u8> {
            postcard::to_allocvec(&(self.x, &self.kept)).unwrap()
        }
    }

    fn restore(bytes: &[u8], _: &Position) -> Result<Toy, RestoreError> {
        let (x, kept): (u64, Vec<u64>) = postcard::from_bytes(bytes).map_err(|e| RestoreError::undecodable("the toy's state", e))?;
        Ok(Toy { x, kept })
    }

    const SCHEDULE: Schedule = Schedule { iterations: 12, burn_in: 3, thin: 2, loglik_every: 5 };

    /// Run with a checkpoint after every iteration (or from `resume`); returns the
    /// chain, its final position, the checkpoints and what became of `resume`.
    fn run_toy(resume: Option<&[u8]>) -> (Toy, Position, SavedCheckpoints, Vec<Resume>) {
        let ((toy, end), saved, resumed) = crate::models::test_kit::recording(resume, |ctx| {
            let (mut toy, position) = start(ctx, "toy", 5, &SCHEDULE, restore, || Toy { x: 1, kept: vec![] });
            let end = run(&mut toy, "toy", 5, &SCHEDULE, position, ctx).unwrap();
            (toy, end)
        });
        (toy, end, saved, resumed)
    }

    #[test]
    fn a_resumed_chain_ends_where_the_uninterrupted_one_does() {
        let (full, end, saved, _) = run_toy(None);
        assert_eq!(saved.len(), SCHEDULE.iterations - 1, "a checkpoint after every iteration but the last");
        assert_eq!(end.kept, (1..=12).filter(|&it| SCHEDULE.is_kept(it)).count());
        for (it, bytes) in &saved {
            let (toy, resumed_end, _, outcome) = run_toy(Some(bytes));
            assert_eq!(outcome, vec![Resume::From(*it)]);
            assert_eq!((toy.x, &toy.kept), (full.x, &full.kept), "resumed after {it}");
            assert_eq!(resumed_end.kept, end.kept);
            assert_eq!(resumed_end.last_loglik.to_bits(), end.last_loglik.to_bits());
        }
    }

    /// A cancelled chain (a graceful shutdown) hands over a checkpoint of the last
    /// iteration it completed, and resuming from it ends as the uninterrupted chain.
    #[test]
    fn a_cancelled_chain_hands_over_where_it_stopped() {
        let (full, _, _, _) = run_toy(None);
        let saved = Mutex::new(Vec::new());
        let cancel = CancelToken::new();
        let ctx = FitContext {
            progress: &|p| {
                if p.iteration == 5 {
                    cancel.cancel();
                }
            },
            cancel: &cancel,
            sample: &|_, _| {},
            checkpoint: Checkpointing {
                every: Some(Duration::from_secs(3600)),
                save: &|it, b| saved.lock().unwrap().push((it, b)),
                resume_from: None,
                resumed: &|_| {},
                ready: crate::models::ALWAYS_READY,
            },
        };
        let mut toy = Toy { x: 1, kept: vec![] };
        assert!(matches!(run(&mut toy, "toy", 5, &SCHEDULE, Position::START, &ctx), Err(FitError::Cancelled)));
        let saved = saved.into_inner().unwrap();
        assert_eq!(saved.iter().map(|s| s.0).collect::<Vec<_>>(), vec![5]);
        let (resumed, _, _, outcome) = run_toy(Some(&saved[0].1));
        assert_eq!(outcome, vec![Resume::From(5)]);
        assert_eq!((resumed.x, resumed.kept), (full.x, full.kept));
    }

    /// A taker that is not ready (still storing the last checkpoint) gets none until it
    /// is; the interval alone does not hand one over, and the chain runs on meanwhile.
    #[test]
    fn no_checkpoint_is_handed_over_until_the_taker_is_ready() {
        let saved = Mutex::new(Vec::new());
        let ready_from = 7;
        let iteration = std::sync::atomic::AtomicUsize::new(0);
        let cancel = CancelToken::new();
        let ready = || iteration.load(std::sync::atomic::Ordering::SeqCst) >= ready_from;
        let ctx = FitContext {
            progress: &|p| iteration.store(p.iteration as usize, std::sync::atomic::Ordering::SeqCst),
            cancel: &cancel,
            sample: &|_, _| {},
            checkpoint: Checkpointing {
                every: Some(Duration::ZERO),
                save: &|it, b| saved.lock().unwrap().push((it, b)),
                resume_from: None,
                resumed: &|_| {},
                ready: &ready,
            },
        };
        let mut toy = Toy { x: 1, kept: vec![] };
        run(&mut toy, "toy", 5, &SCHEDULE, Position::START, &ctx).unwrap();
        let its: Vec<u64> = saved.into_inner().unwrap().iter().map(|s| s.0).collect();
        assert_eq!(its, (ready_from as u64..SCHEDULE.iterations as u64).collect::<Vec<_>>());
    }

    /// A checkpoint at the chain's end (a family's work after its chain) is accepted,
    /// and the driver has no iteration left to run.
    #[test]
    fn a_checkpoint_at_the_end_leaves_nothing_to_run() {
        let (full, end, _, _) = run_toy(None);
        let ((), saved, _) = crate::models::test_kit::recording(None, |ctx| hand_over(ctx, "toy", 5, &SCHEDULE, end, full.save()));
        assert_eq!(saved.iter().map(|s| s.0).collect::<Vec<_>>(), vec![12]);
        let (toy, resumed_end, more, outcome) = run_toy(Some(&saved[0].1));
        assert_eq!(outcome, vec![Resume::From(12)]);
        assert_eq!((toy.x, toy.kept), (full.x, full.kept));
        assert_eq!((resumed_end.iteration, resumed_end.kept, resumed_end.last_loglik.to_bits()), (12, end.kept, end.last_loglik.to_bits()));
        assert!(more.is_empty(), "no iteration ran, so no checkpoint");
    }

    #[test]
    fn bad_checkpoints_are_rejected_and_the_chain_starts_over() {
        let (full, _, saved, _) = run_toy(None);
        let good = Checkpoint::decode_for(&saved[4].1, "toy", 5, &SCHEDULE).unwrap();
        let mut other_seed = good.clone();
        other_seed.seed = 6;
        let mut past_the_end = good.clone();
        past_the_end.position.iteration = 13;
        let mut bad_state = good.clone();
        bad_state.state.truncate(1);
        for bytes in [vec![], vec![0xff; 7], saved[4].1[..saved[4].1.len() / 2].to_vec(), other_seed.encode(), past_the_end.encode(), bad_state.encode()] {
            let (toy, _, _, outcome) = run_toy(Some(&bytes));
            assert!(matches!(&outcome[..], [Resume::Rejected(_)]), "{outcome:?}");
            assert_eq!(toy.x, full.x, "started over and ended where a fresh chain does");
        }
    }

    /// Progress carries the log joint on the schedule's cadence only; every kept
    /// iteration hands its own log joint to `keep` (for the convergence trace).
    #[test]
    fn kept_iterations_get_their_log_joint_and_progress_keeps_its_cadence() {
        struct Keeper(Toy, Vec<f64>);
        impl Chain for Keeper {
            fn step(&mut self, seed: u64, iteration: usize) -> Result<Map<String, Value>, FitError> {
                self.0.step(seed, iteration)
            }
            fn log_joint_per_token(&self) -> f64 {
                self.0.log_joint_per_token()
            }
            fn keep(&mut self, loglik_per_token: f64) -> Option<Vec<u8>> {
                assert_eq!(loglik_per_token, self.0.log_joint_per_token());
                self.1.push(loglik_per_token);
                None
            }
            fn save(&self) -> Vec<u8> {
                self.0.save()
            }
        }
        let reported = Mutex::new(Vec::new());
        let cancel = CancelToken::new();
        let ctx = FitContext {
            progress: &|p| {
                if p.loglik_per_token.is_some() {
                    reported.lock().unwrap().push(p.iteration);
                }
            },
            cancel: &cancel,
            sample: &|_, _| {},
            checkpoint: Checkpointing::OFF,
        };
        let mut chain = Keeper(Toy { x: 1, kept: vec![] }, vec![]);
        run(&mut chain, "toy", 5, &SCHEDULE, Position::START, &ctx).unwrap();
        assert_eq!(chain.1.len(), (1..=12).filter(|&it| SCHEDULE.is_kept(it)).count());
        assert_eq!(reported.into_inner().unwrap(), vec![1, 5, 10, 12]);
    }

    #[test]
    fn schedule_keeps_and_computes_as_before() {
        let s = Schedule { iterations: 200, burn_in: 100, thin: 10, loglik_every: 10 };
        assert!(s.is_kept(110) && !s.is_kept(100) && !s.is_kept(105));
        let ll: Vec<usize> = (1..=25).filter(|&it| Schedule { iterations: 25, ..s }.computes_loglik(it)).collect();
        assert_eq!(ll, vec![1, 10, 20, 25]);
    }
}
