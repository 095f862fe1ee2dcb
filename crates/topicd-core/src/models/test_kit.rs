//! What the families' tests share.
//!
//! Why it exists: every family checks that a fit interrupted at a checkpoint and resumed
//! (on another thread count) ends with the bytes of the uninterrupted fit, and each
//! wrote the same harness for it. One harness here: a run on a pool of a given size,
//! asked for a checkpoint after every iteration, handed a checkpoint to resume from,
//! with everything it handed back.

use super::chain::Resume;
use super::{CancelToken, Checkpointing, FitContext, SavedCheckpoints, TopicModel, ALWAYS_READY};

/// The seed every family's resume tests fit with (their pinned bytes are this seed's).
pub(crate) const SEED: u64 = 7;

/// What one run did: the model, its checkpoints (iteration, bytes), and what became of
/// the checkpoint it was handed.
pub(crate) struct Run<M> {
    pub model: M,
    pub checkpoints: SavedCheckpoints,
    pub resumed: Vec<Resume>,
}

/// `fit` on a pool of `threads` threads, checkpointing after every iteration, resuming
/// from `resume` if given ([`recording`]).
pub(crate) fn recorded_run<M: Send>(threads: usize, resume: Option<&[u8]>, fit: impl FnOnce(&FitContext) -> M + Send) -> Run<M> {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("a thread pool");
    let (model, checkpoints, resumed) = recording(resume, |ctx| pool.install(|| fit(ctx)));
    Run { model, checkpoints, resumed }
}

/// A context like [`FitContext::silent`] that asks for a checkpoint after every
/// iteration and hands `resume` (if any) to the fit; returns `f`'s result, the
/// checkpoints handed over as (iteration, bytes), and what became of `resume`.
/// (The fuzz targets collect their valid checkpoints the same way: `fuzzing`.)
pub(crate) fn recording<R>(resume: Option<&[u8]>, f: impl FnOnce(&FitContext) -> R) -> (R, SavedCheckpoints, Vec<Resume>) {
    let saved = std::sync::Mutex::new(Vec::new());
    let resumed = std::sync::Mutex::new(Vec::new());
    let cancel = CancelToken::new();
    let ctx = FitContext {
        progress: &|_| {},
        cancel: &cancel,
        sample: &|_, _| {},
        checkpoint: Checkpointing {
            every: Some(std::time::Duration::ZERO),
            save: &|it, bytes| saved.lock().unwrap().push((it, bytes)),
            resume_from: resume,
            resumed: &|r| resumed.lock().unwrap().push(r),
            ready: ALWAYS_READY,
        },
    };
    let out = f(&ctx);
    (out, saved.into_inner().unwrap(), resumed.into_inner().unwrap())
}

/// Resume a two-chain fit from four of its `checkpoints` (one inside chain 0, the
/// boundary after it, one inside chain 1, the last but one) through `resume`: each run
/// says it resumed at its checkpoint's iteration and ends in the uninterrupted fit's
/// `bytes`.
pub(crate) fn check_two_chain_resumes<M: TopicModel>(checkpoints: &SavedCheckpoints, iterations: usize, bytes: &[u8], resume: impl Fn(&[u8]) -> Run<M>) {
    let boundary = checkpoints.iter().position(|c| c.0 == iterations as u64).expect("a checkpoint at the boundary between the chains");
    for i in [2, boundary, boundary + 3, checkpoints.len() - 2] {
        let (it, checkpoint) = &checkpoints[i];
        let resumed = resume(checkpoint);
        assert_eq!(resumed.resumed, vec![Resume::From(*it)], "checkpoint {i}");
        assert_eq!(resumed.model.encode(), bytes, "resumed from checkpoint {i} (iteration {it})");
    }
}
