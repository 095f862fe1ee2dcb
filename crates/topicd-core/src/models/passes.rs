//! The pass driver: the one loop a memoized variational fit runs through.
//!
//! Why it exists: the variational families (the HDP topic model, HDP-aMMSB) repeat the
//! same bookkeeping around their passes: the pass loop, cancellation, the stopping rule
//! on the objective, its finiteness check, progress, and now checkpoints and resume.
//! Written once here, a family supplies through [`Passes`] only what is its own (one
//! pass over its batches with its moves, the objective and diagnostics it reports, the
//! convergence rule it uses, and the encoding of its complete state), the shape of
//! bnpy's `MemoVBMovesAlg` (a small generic loop over what each model provides). It is
//! the sibling of [`super::chain`], the MCMC families' driver, and shares its
//! [`Resume`] reports and the runner's checkpoint plumbing.
//!
//! Checkpoints are taken at pass boundaries only: every `FitContext::checkpoint.every`
//! (checked after each pass) the driver encodes a [`PassCheckpoint`] (the passes
//! completed and the last objective; the family, seed and parameters it belongs to; the
//! family's state) and hands the bytes to the runner. A kill therefore costs at most
//! max(interval, one pass) of work. Cancellation is polled before every pass by the
//! driver and between batches by the pass itself ([`Passes::pass`]'s `stop`):
//! - seen between passes, the driver hands over a checkpoint of the pass just completed
//!   (unless it already did), so a graceful stop resumes there;
//! - seen inside a pass, the pass stops at the next batch and its state is part-way
//!   through the pass: valid variational parameters, but not a pass boundary a resume
//!   could continue bit for bit. Nothing is handed over from it (keeping the previous
//!   boundary's state to hand over instead would double the memo's memory); the fit
//!   resumes from its last periodic checkpoint.
//!
//! Resuming decodes the checkpoint, lets the family rebuild its state, and continues
//! with the next pass. A memoized pass is deterministic given its state (no randomness
//! after initialisation, and the families reduce in a fixed order whatever the thread
//! count), so the resumed fit makes exactly the computations the uninterrupted one made
//! after that pass, stops at the same pass, and ends with the same model. A checkpoint
//! that does not decode, belongs to another family, seed or parameters, or whose state
//! the family refuses, is rejected (reported through `FitContext::checkpoint.resumed`)
//! and the fit starts over from its fresh state; nothing here panics on bad bytes.

use super::chain::Resume;
use super::{FitContext, FitError, Progress, RestoreError};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::time::Instant;

/// When a fit's objective has stopped rising.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Convergence {
    /// Settled once a pass raises the objective by at most `tolerance` × |objective|;
    /// a tolerance of 0 runs every pass (the HDP topic model).
    RelativeGain { tolerance: f64 },
    /// Settled once a pass raises the objective by less than `tolerance` per `unit`
    /// (HDP-aMMSB: per observed pair); with any tolerance, a pass that lowers the
    /// objective (rounding) ends the fit too.
    GainPerUnit { tolerance: f64, units: f64 },
}

impl Convergence {
    /// Whether going from `previous` to `current` settles the fit.
    pub fn settled(&self, previous: f64, current: f64) -> bool {
        match *self {
            Convergence::RelativeGain { tolerance } => tolerance > 0.0 && current - previous <= tolerance * current.abs(),
            Convergence::GainPerUnit { tolerance, units } => (current - previous) / units < tolerance,
        }
    }
}

/// What a completed pass reports to the driver.
#[derive(Debug, Clone, Default)]
pub struct PassReport {
    /// The objective after the pass and its moves.
    pub objective: f64,
    /// Whether the fit must go on whatever the objective did: a move was accepted in
    /// this pass, or one is scheduled for the next.
    pub moves_pending: bool,
    /// What the progress report shows as the log-likelihood per token, if anything.
    pub loglik_per_token: Option<f64>,
    /// The pass' progress diagnostics.
    pub diagnostics: Map<String, Value>,
}

/// What a variational family supplies to the driver: its passes over a state it owns.
pub trait Passes {
    /// The family's wire name (a checkpoint is never read by another family).
    fn family(&self) -> &'static str;
    /// The encoded parameters that decide the fit's numbers (those a checkpoint must have
    /// been taken under; not the thread count).
    fn params_key(&self) -> Vec<u8>;
    /// The most passes the fit runs.
    fn max_passes(&self) -> usize;
    /// The stopping rule.
    fn convergence(&self) -> Convergence;
    /// Pass `pass` (1-based): every batch visit and the pass' moves. `stop` is polled
    /// before every batch; once it says so the pass returns `None` at once, leaving its
    /// state part-way through the pass (never checkpointed; see the module doc).
    fn pass(&mut self, pass: usize, stop: &dyn Fn() -> bool) -> Option<PassReport>;
    /// Everything needed to continue after the last completed pass, encoded.
    fn save(&self) -> Vec<u8>;
    /// Replace the state by [`Passes::save`]'s bytes taken at `position`. On an error the
    /// state must be left as it was (every length and index is checked first).
    fn restore(&mut self, state: &[u8], position: &Position) -> Result<(), RestoreError>;
    /// A decision every process of a distributed fit must take together (stop before
    /// this pass, checkpoint after it), given this process' own view: such a fit takes
    /// rank 0's; one process decides alone.
    fn agree(&self, decision: bool) -> bool {
        decision
    }
}

/// Where a fit is: the driver's part of a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Position {
    /// Passes completed.
    pub pass: usize,
    /// The objective after the last of them (`None` before the first).
    pub objective: Option<f64>,
}

impl Position {
    /// A fit that has not started.
    pub const START: Position = Position { pass: 0, objective: None };
}

/// How a fit ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Finish {
    /// Passes completed.
    pub passes: usize,
    /// Whether the stopping rule ended it before its last pass.
    pub converged: bool,
}

/// Format version of [`PassCheckpoint`]'s encoding.
const CHECKPOINT_VERSION: u32 = 1;

/// A resumable variational fit: the driver's position, the family, seed and parameters
/// it belongs to, and the family's state (opaque here).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PassCheckpoint {
    pub version: u32,
    pub family: String,
    pub seed: u64,
    /// [`Passes::params_key`] of the fit that wrote it.
    pub params: Vec<u8>,
    pub position: Position,
    pub state: Vec<u8>,
}

impl PassCheckpoint {
    pub fn encode(&self) -> Vec<u8> {
        postcard::to_allocvec(self).expect("plain data encodes")
    }

    /// Decode and check that the checkpoint belongs to `fit` (family, seed, parameters)
    /// and stops inside its passes.
    pub fn decode_for(bytes: &[u8], fit: &impl Passes, seed: u64) -> Result<PassCheckpoint, RestoreError> {
        const WHAT: &str = "the checkpoint";
        let c: PassCheckpoint = postcard::from_bytes(bytes).map_err(|e| RestoreError::undecodable(WHAT, e))?;
        if c.version != CHECKPOINT_VERSION {
            return Err(RestoreError::Version { what: WHAT, found: c.version, expected: CHECKPOINT_VERSION });
        }
        if c.family != fit.family() || c.seed != seed || c.params != fit.params_key() {
            return Err(RestoreError::other_fit(WHAT, format!("{} seed {}, or other parameters", c.family, c.seed)));
        }
        let p = c.position;
        if p.pass == 0 || p.pass >= fit.max_passes() || !p.objective.is_some_and(f64::is_finite) {
            return Err(RestoreError::inconsistent(WHAT, format!("position {p:?} is outside the fit's {} passes", fit.max_passes())));
        }
        Ok(c)
    }
}

/// Continue `fit` from `ctx`'s checkpoint when there is one that decodes, belongs to it
/// and that its restore accepts; else leave it at its fresh state. The outcome is
/// reported through `ctx.checkpoint.resumed`.
fn resume<P: Passes>(fit: &mut P, seed: u64, ctx: &FitContext) -> Position {
    let Some(bytes) = ctx.checkpoint.resume_from else {
        return Position::START;
    };
    let restored = PassCheckpoint::decode_for(bytes, fit, seed).and_then(|c| fit.restore(&c.state, &c.position).map(|()| c.position));
    match restored {
        Ok(position) => {
            (ctx.checkpoint.resumed)(Resume::From(position.pass as u64));
            position
        }
        Err(reason) => {
            (ctx.checkpoint.resumed)(Resume::rejected(&reason));
            Position::START
        }
    }
}

/// Run `fit` (fresh, as its family built it from `seed`) to its end: resume from `ctx`'s
/// checkpoint if it has a usable one, then pass after pass until the stopping rule or
/// the last pass, with progress after every pass and checkpoints at pass boundaries.
pub fn run<P: Passes>(fit: &mut P, seed: u64, ctx: &FitContext) -> Result<Finish, FitError> {
    let mut position = resume(fit, seed, ctx);
    let save = |fit: &P, position: Position| {
        let checkpoint =
            PassCheckpoint { version: CHECKPOINT_VERSION, family: fit.family().to_string(), seed, params: fit.params_key(), position, state: fit.save() };
        (ctx.checkpoint.save)(position.pass as u64, checkpoint.encode());
    };
    let (max_passes, rule) = (fit.max_passes(), fit.convergence());
    let stop = || ctx.cancel.is_cancelled();
    let mut last_checkpoint = Instant::now();
    // The pass of the last checkpoint handed over (or resumed from).
    let mut saved = position.pass;
    for pass in position.pass + 1..=max_passes {
        if fit.agree(stop()) {
            if ctx.checkpoint.every.is_some() && position.pass > saved {
                save(fit, position);
            }
            return Err(FitError::Cancelled);
        }
        let report = fit.pass(pass, &stop).ok_or(FitError::Cancelled)?;
        if !report.objective.is_finite() {
            return Err(FitError::Numerical(super::causes::NonFinite::objective(report.objective, pass as u64)));
        }
        let settled = !report.moves_pending && position.objective.is_some_and(|previous| rule.settled(previous, report.objective));
        position = Position { pass, objective: Some(report.objective) };
        (ctx.progress)(Progress {
            iteration: pass as u64,
            total: max_passes as u64,
            loglik_per_token: report.loglik_per_token,
            diagnostics: report.diagnostics,
            kind: None,
        });
        if settled {
            return Ok(Finish { passes: pass, converged: true });
        }
        if pass < max_passes && fit.agree(ctx.checkpoint.due(last_checkpoint)) {
            save(fit, position);
            saved = pass;
            last_checkpoint = Instant::now();
        }
    }
    Ok(Finish { passes: position.pass, converged: false })
}

/// Checkpoints a pass-driven fit must reject, made from one of its own (`good`, and
/// decoded) and one of the same fit under other parameters (`other`, and decoded): cut
/// short, garbage, the other fit's, the other fit's state under this fit's envelope (only
/// the state's own checks can refuse it), another seed, a state byte changed, another
/// pass count. The families' resume checks feed each to a fit.
#[cfg(test)]
pub(crate) fn unusable_checkpoints(good: &[u8], good_decoded: &PassCheckpoint, other: &[u8], other_decoded: &PassCheckpoint) -> Vec<Vec<u8>> {
    let edit = |f: &dyn Fn(&mut PassCheckpoint)| {
        let mut c = good_decoded.clone();
        f(&mut c);
        c.encode()
    };
    let relabelled = PassCheckpoint { params: good_decoded.params.clone(), ..other_decoded.clone() };
    vec![
        good[..good.len() - 9].to_vec(),
        vec![1, 2, 3],
        other.to_vec(),
        relabelled.encode(),
        edit(&|c| c.seed += 1),
        edit(&|c| c.state[0] = 9),
        edit(&|c| c.position.pass = 3),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::{CancelToken, Checkpointing, SavedCheckpoints};
    use std::sync::Mutex;
    use std::time::Duration;

    const BATCHES: usize = 3;

    /// A toy fit: its state is a running hash of (pass, batch), its objective rises by
    /// halving steps, and pass 9 "accepts a move".
    struct Toy<'c> {
        x: u64,
        objectives: Vec<f64>,
        max_passes: usize,
        tolerance: f64,
        /// Cancel this token when visiting (pass, batch).
        cancel_at: Option<(usize, usize, &'c CancelToken)>,
    }

    impl<'c> Toy<'c> {
        fn new(max_passes: usize, tolerance: f64) -> Self {
            Toy { x: 1, objectives: vec![], max_passes, tolerance, cancel_at: None }
        }
    }

    impl Passes for Toy<'_> {
        fn family(&self) -> &'static str {
            "toy"
        }
        fn params_key(&self) -> Vec<u8> {
            postcard::to_allocvec(&(self.max_passes, self.tolerance)).unwrap()
        }
        fn max_passes(&self) -> usize {
            self.max_passes
        }
        fn convergence(&self) -> Convergence {
            Convergence::RelativeGain { tolerance: self.tolerance }
        }
        fn pass(&mut self, pass: usize, stop: &dyn Fn() -> bool) -> Option<PassReport> {
            for b in 0..BATCHES {
                if let Some((p, at, token)) = self.cancel_at {
                    if (p, at) == (pass, b) {
                        token.cancel();
                    }
                }
                if stop() {
                    return None;
                }
                self.x = crate::rng::mix64(self.x ^ (pass * BATCHES + b) as u64);
            }
            let objective = -5.0 - 1000.0 / 2f64.powi(pass as i32);
            self.objectives.push(objective);
            Some(PassReport { objective, moves_pending: pass == 9, ..Default::default() })
        }
        fn save(&self) -> Vec<u8> {
            postcard::to_allocvec(&(self.x, &self.objectives)).unwrap()
        }
        fn restore(&mut self, state: &[u8], position: &Position) -> Result<(), RestoreError> {
            let (x, objectives): (u64, Vec<f64>) = postcard::from_bytes(state).map_err(|e| RestoreError::undecodable("the toy's state", e))?;
            if objectives.len() != position.pass {
                return Err(RestoreError::inconsistent("the toy's state", "objectives"));
            }
            (self.x, self.objectives) = (x, objectives);
            Ok(())
        }
    }

    /// Run a toy with a checkpoint after every pass (or from `resume`); returns the toy,
    /// how it finished, the checkpoints and what became of `resume`.
    fn run_toy(max_passes: usize, tolerance: f64, resume: Option<&[u8]>) -> (Toy<'static>, Finish, SavedCheckpoints, Vec<Resume>) {
        let ((toy, finish), saved, resumed) = crate::models::test_kit::recording(resume, |ctx| {
            let mut toy = Toy::new(max_passes, tolerance);
            let finish = run(&mut toy, 5, ctx).unwrap();
            (toy, finish)
        });
        (toy, finish, saved, resumed)
    }

    #[test]
    fn a_resumed_fit_ends_where_the_uninterrupted_one_does() {
        let (full, finish, saved, _) = run_toy(12, 0.0, None);
        assert_eq!(finish, Finish { passes: 12, converged: false });
        assert_eq!(saved.iter().map(|s| s.0).collect::<Vec<_>>(), (1..12).collect::<Vec<u64>>(), "one after every pass but the last");
        for (pass, bytes) in &saved {
            let (toy, resumed_finish, more, outcome) = run_toy(12, 0.0, Some(bytes));
            assert_eq!(outcome, vec![Resume::From(*pass)]);
            assert_eq!((toy.x, &toy.objectives), (full.x, &full.objectives), "resumed after {pass}");
            assert_eq!(resumed_finish, finish);
            assert_eq!(more.first().map(|s| s.0), Some(pass + 1).filter(|&p| p < 12));
        }
    }

    /// Convergence is decided on the objective of the pass before, also when that pass
    /// was the checkpoint's; a pass with a move pending never settles the fit.
    #[test]
    fn a_fit_that_converges_after_a_resume_converges_at_the_same_pass() {
        let (full, finish, saved, _) = run_toy(30, 0.01, None);
        // Gains 1000/2^p against |objective| ≈ 5: settled once 2^p ≥ 20 000, at pass 15.
        assert_eq!(finish, Finish { passes: 15, converged: true });
        assert_eq!(saved.len(), 14, "no checkpoint of the pass that converged");
        let (_, with_move, _, _) = run_toy(30, 0.3, None);
        // Without the move pending at pass 9 the fit would settle there (2^9 ≥ 1000/0.3/5).
        assert_eq!(with_move, Finish { passes: 10, converged: true });
        for (pass, bytes) in saved.iter().filter(|s| s.0 >= 10) {
            let (toy, resumed, _, _) = run_toy(30, 0.01, Some(bytes));
            assert_eq!(resumed, finish, "resumed after {pass}");
            assert_eq!(toy.objectives, full.objectives);
        }
    }

    /// A cancellation seen between passes hands over the pass just completed; one seen
    /// inside a pass hands over nothing (its state is not a pass boundary).
    #[test]
    fn a_cancelled_fit_hands_over_its_last_completed_pass_only_at_a_boundary() {
        let (full, _, _, _) = run_toy(12, 0.0, None);
        let cancelled = |cancel_in_progress: Option<u64>, cancel_in_pass: Option<(usize, usize)>| {
            let saved = Mutex::new(Vec::new());
            let cancel = CancelToken::new();
            let ctx = FitContext {
                progress: &|p| {
                    if Some(p.iteration) == cancel_in_progress {
                        cancel.cancel();
                    }
                },
                cancel: &cancel,
                sample: &|_, _| {},
                checkpoint: Checkpointing {
                    every: Some(Duration::from_secs(3600)),
                    save: &|pass, b| saved.lock().unwrap().push((pass, b)),
                    resume_from: None,
                    resumed: &|_| {},
                    ready: crate::models::ALWAYS_READY,
                },
            };
            let mut toy = Toy::new(12, 0.0);
            toy.cancel_at = cancel_in_pass.map(|(p, b)| (p, b, &cancel));
            assert!(matches!(run(&mut toy, 5, &ctx), Err(FitError::Cancelled)));
            saved.into_inner().unwrap()
        };
        let at_boundary = cancelled(Some(5), None);
        assert_eq!(at_boundary.iter().map(|s| s.0).collect::<Vec<_>>(), vec![5]);
        let (resumed, _, _, outcome) = run_toy(12, 0.0, Some(&at_boundary[0].1));
        assert_eq!(outcome, vec![Resume::From(5)]);
        assert_eq!((resumed.x, resumed.objectives), (full.x, full.objectives));
        assert!(cancelled(None, Some((6, 1))).is_empty(), "a pass stopped part-way is not handed over");
    }

    #[test]
    fn bad_checkpoints_are_rejected_and_the_fit_starts_over() {
        let (full, _, saved, _) = run_toy(12, 0.0, None);
        let good = PassCheckpoint::decode_for(&saved[4].1, &Toy::new(12, 0.0), 5).unwrap();
        let edit = |f: fn(&mut PassCheckpoint)| {
            let mut c = good.clone();
            f(&mut c);
            c.encode()
        };
        let other_params = run_toy(13, 0.0, None).2[4].1.clone();
        let bad = [
            vec![],
            vec![0xff; 9],
            saved[4].1[..saved[4].1.len() / 2].to_vec(),
            other_params,
            edit(|c| c.seed = 6),
            edit(|c| c.family = "other".into()),
            edit(|c| c.version = 2),
            edit(|c| c.position.pass = 12),
            edit(|c| c.position.objective = Some(f64::NAN)),
            edit(|c| c.state.truncate(3)),
            edit(|c| c.position.pass = 4),
        ];
        for bytes in bad {
            let (toy, finish, _, outcome) = run_toy(12, 0.0, Some(&bytes));
            assert!(matches!(&outcome[..], [Resume::Rejected(r)] if r.contains("starting from iteration 0")), "{outcome:?}");
            assert_eq!((toy.x, finish.passes), (full.x, 12), "started over and ended where a fresh fit does");
        }
    }

    #[test]
    fn a_non_finite_objective_fails_the_fit() {
        struct Nan;
        impl Passes for Nan {
            fn family(&self) -> &'static str {
                "nan"
            }
            fn params_key(&self) -> Vec<u8> {
                vec![]
            }
            fn max_passes(&self) -> usize {
                3
            }
            fn convergence(&self) -> Convergence {
                Convergence::GainPerUnit { tolerance: 0.0, units: 1.0 }
            }
            fn pass(&mut self, pass: usize, _: &dyn Fn() -> bool) -> Option<PassReport> {
                Some(PassReport { objective: if pass == 2 { f64::NAN } else { -1.0 }, ..Default::default() })
            }
            fn save(&self) -> Vec<u8> {
                vec![]
            }
            fn restore(&mut self, _: &[u8], _: &Position) -> Result<(), RestoreError> {
                Ok(())
            }
        }
        let err = FitContext::silent(|ctx| run(&mut Nan, 1, ctx)).unwrap_err();
        let at_pass_2 = crate::models::causes::Step::Pass(2);
        assert!(matches!(&err, FitError::Numerical(c) if c.at == at_pass_2 && c.value.is_some_and(f64::is_nan)), "{err:?}");
        assert_eq!(err.to_string(), "the objective is NaN after pass 2");
        assert_eq!(err.kind().as_str(), "numerical");
    }

    #[test]
    fn convergence_rules() {
        let relative = Convergence::RelativeGain { tolerance: 1e-3 };
        assert!(relative.settled(-1000.0, -999.5) && !relative.settled(-1000.0, -998.0));
        assert!(!Convergence::RelativeGain { tolerance: 0.0 }.settled(-1.0, -1.0), "0 runs every pass");
        let per_pair = Convergence::GainPerUnit { tolerance: 1e-3, units: 100.0 };
        assert!(per_pair.settled(-50.0, -49.95) && !per_pair.settled(-50.0, -49.8));
        assert!(Convergence::GainPerUnit { tolerance: 0.0, units: 100.0 }.settled(-50.0, -50.000001), "a decrease ends the fit");
    }
}
