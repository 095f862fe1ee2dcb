//! What the families' tests share.
//!
//! Why it exists: every family checks that a fit interrupted at a checkpoint and resumed
//! (on another thread count) ends with the bytes of the uninterrupted fit, and each
//! wrote the same harness for it. One harness here: a run on a pool of a given size,
//! asked for a checkpoint after every iteration, handed a checkpoint to resume from,
//! with everything it handed back.

use super::chain::Resume;
use super::{FitContext, SavedCheckpoints};

/// What one run did: the model, its checkpoints (iteration, bytes), and what became of
/// the checkpoint it was handed.
pub(crate) struct Run<M> {
    pub model: M,
    pub checkpoints: SavedCheckpoints,
    pub resumed: Vec<Resume>,
}

/// `fit` on a pool of `threads` threads, checkpointing after every iteration, resuming
/// from `resume` if given ([`FitContext::recording`]).
pub(crate) fn recorded_run<M: Send>(threads: usize, resume: Option<&[u8]>, fit: impl FnOnce(&FitContext) -> M + Send) -> Run<M> {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("a thread pool");
    let (model, checkpoints, resumed) = FitContext::recording(resume, |ctx| pool.install(|| fit(ctx)));
    Run { model, checkpoints, resumed }
}
