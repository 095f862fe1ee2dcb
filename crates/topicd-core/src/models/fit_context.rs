//! What a running fit talks to: progress, cancellation, thinned samples and
//! checkpoints ([`FitContext`]).
//!
//! Why it exists: a fit is plain synchronous numerics; the runner, the CLI and the tests
//! each hand it a context, so the model layer never sees a job, a store or a clock other
//! than the checkpoint interval.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A progress report from a running fit.
#[derive(Debug, Clone, Default)]
pub struct Progress {
    /// Sweeps completed.
    pub iteration: u64,
    pub total: u64,
    /// Log-likelihood per token, on the sweeps where it was computed.
    pub loglik_per_token: Option<f64>,
    /// Model-specific numbers (acceptance rates, active topics, ...).
    pub diagnostics: serde_json::Map<String, serde_json::Value>,
    /// The kind of step this was, for a family whose schedule mixes kinds of different
    /// cost (`None` for the others): what a client times steps by.
    pub kind: Option<StepKind>,
}

/// Kinds of step in a schedule that mixes them ([`super::chain::Chain::step_kind`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepKind {
    /// A step that reuses what the last costly one computed.
    Steady,
    /// A step that recomputes it (HPC's scans that refit the conditional modes and
    /// their Hessians).
    Refit,
}

/// Cooperative cancellation, shared between the runner and a fit.
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// What a fit may call back into: progress, cancellation, thinned samples, checkpoints.
pub struct FitContext<'a> {
    pub progress: &'a (dyn Fn(Progress) + Sync),
    pub cancel: &'a CancelToken,
    /// Receives each thinned posterior sample (iteration, model-specific encoding).
    pub sample: &'a (dyn Fn(u64, Vec<u8>) + Sync),
    /// Where checkpoints go and the one to resume from (fits on [`super::chain`] and [`super::passes`] only).
    pub checkpoint: Checkpointing<'a>,
}

/// A fit's checkpoints: how often it hands one over, who takes it, and the checkpoint
/// (as handed over earlier) it should resume from. The model layer only produces and
/// consumes the bytes; the runner stores them.
pub struct Checkpointing<'a> {
    /// Hand over a checkpoint when this long has passed since the last one (or the
    /// start); `None`: never.
    pub every: Option<std::time::Duration>,
    /// Receives (iteration completed, encoded checkpoint).
    pub save: &'a (dyn Fn(u64, Vec<u8>) + Sync),
    /// A checkpoint to continue from, if any.
    pub resume_from: Option<&'a [u8]>,
    /// Told whether `resume_from` was used or rejected.
    pub resumed: &'a (dyn Fn(Resume) + Sync),
    /// Whether the taker is ready for another checkpoint. The runner says no while it is
    /// still storing the last one, and for `every` after that: a checkpoint that takes
    /// longer to store than the interval (gigabytes) must not queue the next whole state
    /// behind it, nor keep the disk busy all the time.
    pub ready: &'a (dyn Fn() -> bool + Sync),
}

/// A taker that is always ready for the next checkpoint ([`Checkpointing::ready`]).
pub const ALWAYS_READY: &(dyn Fn() -> bool + Sync) = &|| true;

impl Checkpointing<'static> {
    /// No checkpoints and nothing to resume.
    pub const OFF: Checkpointing<'static> = Checkpointing { every: None, save: &|_, _| {}, resume_from: None, resumed: &|_| {}, ready: ALWAYS_READY };
}

impl Checkpointing<'_> {
    /// Whether to hand over a checkpoint now, the last having been handed over (or the
    /// work started) at `last`: `every` has passed and the taker is ready.
    pub fn due(&self, last: std::time::Instant) -> bool {
        self.every.is_some_and(|every| last.elapsed() >= every) && (self.ready)()
    }
}

/// Where a stage sits in a fit's one count of iterations, and what the job's progress
/// calls it ([`FitContext::stage`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stage<'a> {
    /// "refit stage", "chain 2 of 3"; `None` for a stage a reader need not be told of.
    pub name: Option<&'a str>,
    /// Iterations of the fit before this stage.
    pub offset: u64,
    /// This stage's iterations.
    pub length: u64,
    /// The fit's iterations, every stage counted.
    pub total: u64,
}

/// The progress diagnostic that names the stage a fit is in.
pub const STAGE_KEY: &str = "stage";

/// Checkpoints a recorded fit handed over: (iteration completed, bytes).
pub type SavedCheckpoints = Vec<(u64, Vec<u8>)>;

impl FitContext<'_> {
    /// A context that ignores progress and samples and is never cancelled.
    pub fn silent<R>(f: impl FnOnce(&FitContext) -> R) -> R {
        let cancel = CancelToken::new();
        let ctx = FitContext { progress: &|_| {}, cancel: &cancel, sample: &|_, _| {}, checkpoint: Checkpointing::OFF };
        f(&ctx)
    }

    /// Run `f` as one stage of a job made of several chains run one after another (HPC's
    /// refit on training and validation documents after its first chain): every
    /// iteration `f` reports (progress, samples, checkpoints, a resume) is shifted by
    /// the stage's offset and the progress' total is its total, so the job's trace, the
    /// store's checkpoint iteration and its progress count through the stages as one
    /// sequence; `resume_from` replaces this context's checkpoint to resume from.
    /// Cancellation and the checkpoint interval are this context's. A named stage says
    /// where the fit is in the progress' `stage` (`{"name": "refit stage, chain 2 of 2",
    /// "iteration": 5, "of": 30}`), a stage inside it naming itself after it.
    pub fn stage<R>(&self, stage: Stage<'_>, resume_from: Option<&[u8]>, f: impl FnOnce(&FitContext) -> R) -> R {
        let Stage { name, offset, length, total } = stage;
        let progress = |mut p: Progress| {
            if let Some(name) = name {
                let inner = p.diagnostics.remove(STAGE_KEY);
                let inner = inner.as_ref().and_then(|s| Some((s["name"].as_str()?, s["iteration"].as_u64()?, s["of"].as_u64()?)));
                let (label, iteration, of) = match inner {
                    Some((inner, it, of)) => (format!("{name}, {inner}"), it, of),
                    None => (name.to_string(), p.iteration, length),
                };
                p.diagnostics.insert(STAGE_KEY.into(), serde_json::json!({"name": label, "iteration": iteration, "of": of}));
            }
            p.iteration += offset;
            p.total = total;
            (self.progress)(p)
        };
        let sample = |it: u64, bytes: Vec<u8>| (self.sample)(it + offset, bytes);
        let save = |it: u64, bytes: Vec<u8>| (self.checkpoint.save)(it + offset, bytes);
        let resumed = |r: Resume| {
            (self.checkpoint.resumed)(match r {
                Resume::From(it) => Resume::From(it + offset),
                rejected => rejected,
            })
        };
        let ctx = FitContext {
            progress: &progress,
            cancel: self.cancel,
            sample: &sample,
            checkpoint: Checkpointing { every: self.checkpoint.every, save: &save, resume_from, resumed: &resumed, ready: self.checkpoint.ready },
        };
        f(&ctx)
    }
}

/// What became of a checkpoint handed to a fit.
#[derive(Debug, Clone, PartialEq)]
pub enum Resume {
    /// The chain continues after this iteration.
    From(u64),
    /// The checkpoint was not usable; the chain starts from iteration 0.
    Rejected(String),
}

impl Resume {
    /// A checkpoint that did not restore: the fit starts over, and says why.
    pub fn rejected(reason: &super::RestoreError) -> Resume {
        Resume::Rejected(format!("checkpoint rejected, starting from iteration 0: {reason}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn progress_at(iteration: u64) -> Progress {
        Progress { iteration, total: 0, loglik_per_token: None, diagnostics: serde_json::Map::new(), kind: None }
    }

    /// A stage inside a named stage: the iteration counts through both offsets, the
    /// total is the outer's, and the stage's name is the outer's then the inner's, with
    /// the iteration within the inner stage.
    #[test]
    fn nested_stages_name_where_the_fit_is() {
        let seen = Mutex::new(Vec::new());
        let record = |p: Progress| seen.lock().unwrap().push(p);
        let cancel = CancelToken::new();
        let ctx = FitContext { progress: &record, cancel: &cancel, sample: &|_, _| {}, checkpoint: Checkpointing::OFF };
        let refit = Stage { name: Some("refit stage"), offset: 10, length: 10, total: 20 };
        let second_chain = Stage { name: Some("chain 2 of 2"), offset: 5, length: 5, total: 10 };
        ctx.stage(refit, None, |outer| outer.stage(second_chain, None, |inner| (inner.progress)(progress_at(3))));
        ctx.stage(refit, None, |outer| (outer.progress)(progress_at(4)));
        let unnamed = Stage { name: None, offset: 0, length: 10, total: 20 };
        ctx.stage(unnamed, None, |outer| (outer.progress)(progress_at(2)));
        let seen = seen.into_inner().unwrap();
        assert_eq!((seen[0].iteration, seen[0].total), (18, 20));
        assert_eq!(seen[0].diagnostics[STAGE_KEY], serde_json::json!({"name": "refit stage, chain 2 of 2", "iteration": 3, "of": 5}));
        assert_eq!(seen[1].diagnostics[STAGE_KEY], serde_json::json!({"name": "refit stage", "iteration": 4, "of": 10}));
        assert_eq!(seen[2].iteration, 2);
        assert!(!seen[2].diagnostics.contains_key(STAGE_KEY), "an unnamed stage names nothing");
    }
}
