//! One fit or evaluation on its own rayon pool, off the async runtime, and the pump that
//! streams what it reports (progress, thinned samples, checkpoints) to the store while it
//! runs.
//!
//! Why it exists: the runner decides which job runs and what becomes of it; this is how
//! a claimed job's work runs. A full or read-only store stops the fit with the reason,
//! a lost lease cancels it, a panic becomes an internal failure; every write names the
//! job's claim.

use super::cadence::Cadence;
use super::progress::ProgressTracker;
use crate::models::chain::Resume;
use crate::models::{CancelToken, Checkpointing, FitContext, FitError, Progress};
use crate::store::{Claim, JobRow, Store, StoreError};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// Messages from a fit (on a rayon thread) to its job task.
enum FitEvent {
    Progress(Progress),
    Sample(u64, Vec<u8>),
    /// A checkpoint after this iteration, to store.
    Checkpoint(u64, Vec<u8>),
    /// What became of the checkpoint the fit was handed.
    Resumed(Resume),
}

/// A fit's checkpoints as the runner prepared them: how often, and what to resume from.
#[derive(Default)]
pub(super) struct CheckpointPlan {
    pub(super) every: Option<Duration>,
    /// The stored checkpoint, its checksum verified.
    pub(super) resume: Option<Vec<u8>>,
    /// Why a stored checkpoint could not be used (it was discarded).
    pub(super) rejected: Option<String>,
}

/// How often progress is written to the store at most.
const PROGRESS_WRITE_INTERVAL: Duration = Duration::from_millis(300);

/// A claimed job's work, ready to run: where it streams to, on how many threads.
pub(super) struct FitTask<'a> {
    pub(super) store: &'a Store,
    /// The runner's count of sweeps completed (for `/metrics`).
    pub(super) fit_iterations: &'a AtomicU64,
    pub(super) threads: usize,
    pub(super) job: &'a JobRow,
    pub(super) token: &'a CancelToken,
    /// Set when the job's lease is lost: the fit is cancelled and writes nothing more.
    pub(super) lease_lost: &'a Arc<AtomicBool>,
    pub(super) plan: CheckpointPlan,
}

impl FitTask<'_> {
    /// Run `work` on a blocking thread inside a rayon pool of the job's thread count,
    /// streaming its progress, thinned samples and checkpoints to the store while it
    /// runs.
    pub(super) async fn run<T: Send + 'static>(self, work: impl FnOnce(&FitContext) -> Result<T, FitError> + Send + 'static) -> Result<T, FitError> {
        let FitTask { store, fit_iterations, threads, job, token, lease_lost, plan } = self;
        let (tx, mut rx) = mpsc::unbounded_channel::<FitEvent>();
        let token2 = token.clone();
        let CheckpointPlan { every, resume, rejected } = plan;
        let cadence = Arc::new(Cadence::new(every.unwrap_or_default()));
        let cadence_fit = cadence.clone();
        let handle = tokio::task::spawn_blocking(move || -> Result<T, FitError> {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .thread_name(|i| format!("fit-{i}"))
                .build()
                .map_err(|e| FitError::Internal(format!("could not start {threads} threads: {e}")))?;
            let progress_tx = tx.clone();
            let on_progress = move |p: Progress| {
                let _ = progress_tx.send(FitEvent::Progress(p));
            };
            let sample_tx = tx.clone();
            let on_sample = move |it: u64, bytes: Vec<u8>| {
                let _ = sample_tx.send(FitEvent::Sample(it, bytes));
            };
            let checkpoint_tx = tx.clone();
            let handing = cadence_fit.clone();
            let on_checkpoint = move |it: u64, bytes: Vec<u8>| {
                handing.handed_over();
                let _ = checkpoint_tx.send(FitEvent::Checkpoint(it, bytes));
            };
            let ready = move || cadence_fit.ready();
            let on_resumed = move |r: Resume| {
                let _ = tx.send(FitEvent::Resumed(r));
            };
            let checkpoint = Checkpointing { every, save: &on_checkpoint, resume_from: resume.as_deref(), resumed: &on_resumed, ready: &ready };
            let ctx = FitContext { progress: &on_progress, cancel: &token2, sample: &on_sample, checkpoint };
            pool.install(|| work(&ctx))
        });
        let mut tracker = ProgressTracker::new(threads);
        if let Some(reason) = rejected {
            tracker.checkpoint_rejected(reason);
        }
        let mut last_write = Instant::now() - PROGRESS_WRITE_INTERVAL;
        // Set when the store refuses a write (full or read-only): the fit is stopped and
        // the job fails with this reason instead of running on to a model it cannot keep.
        let mut refused: Option<String> = None;
        let claim = Claim::of(job);
        let stop = |what: &str, e: &StoreError, refused: &mut Option<String>| {
            if let StoreError::LeaseLost(_) = e {
                lease_lost.store(true, Ordering::SeqCst);
                token.cancel();
            }
            if let Some(u) = e.unwritable() {
                if refused.is_none() {
                    tracing::error!(error = %e, "the store refused a write; stopping the fit");
                    *refused = Some(format!("could not store {what}: {}", u.explain()));
                    token.cancel();
                }
            }
        };
        while let Some(event) = rx.recv().await {
            match event {
                FitEvent::Progress(p) => {
                    fit_iterations.fetch_add(1, Ordering::Relaxed);
                    let last = p.iteration >= p.total;
                    tracker.record(p);
                    if last || last_write.elapsed() >= PROGRESS_WRITE_INTERVAL {
                        if let Err(e) = write_progress(store, &claim, &mut tracker).await {
                            stop("the fit's progress", &e, &mut refused);
                        }
                        last_write = Instant::now();
                    }
                }
                FitEvent::Sample(it, bytes) => {
                    if let Err(e) = store.insert_sample(&claim, it as i64, &bytes).await {
                        tracing::warn!(error = %e, "could not store a thinned sample");
                        stop(&format!("the sample of iteration {it}"), &e, &mut refused);
                    }
                }
                FitEvent::Checkpoint(it, bytes) => {
                    // The trace up to this iteration first, so a resume finds all of it.
                    if let Err(e) = write_progress(store, &claim, &mut tracker).await {
                        stop("the fit's progress", &e, &mut refused);
                    }
                    let (len, started) = (bytes.len(), Instant::now());
                    match store.save_checkpoint(&claim, it as i64, bytes).await {
                        Ok(()) => {
                            tracing::info!(iteration = it, bytes = len, store_s = started.elapsed().as_secs_f64(), "checkpoint stored");
                            tracker.checkpointed(it, crate::store::now());
                            if let Err(e) = write_progress(store, &claim, &mut tracker).await {
                                stop("the fit's progress", &e, &mut refused);
                            }
                            last_write = Instant::now();
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "could not store a checkpoint");
                            stop(&format!("the checkpoint after iteration {it}"), &e, &mut refused);
                        }
                    }
                    cadence.stored();
                }
                FitEvent::Resumed(Resume::From(it)) => {
                    tracing::info!(iteration = it, "resumed from the checkpoint");
                    tracker.resumed_from(it);
                }
                FitEvent::Resumed(Resume::Rejected(reason)) => {
                    tracing::warn!(%reason, "not resuming");
                    if let Err(e) = store.discard_checkpoint(&job.id).await {
                        tracing::warn!(error = %e, "could not discard the checkpoint");
                    }
                    tracker.checkpoint_rejected(reason);
                }
            }
        }
        if let Err(e) = write_progress(store, &claim, &mut tracker).await {
            stop("the fit's progress", &e, &mut refused);
        }
        let finished = handle.await;
        if let Some(reason) = refused {
            return Err(FitError::Store(reason));
        }
        match finished {
            Ok(r) => r,
            Err(e) if e.is_panic() => Err(FitError::Internal(format!("internal error: the job panicked: {}", panic_message(e.into_panic())))),
            Err(e) => Err(FitError::Internal(format!("internal error: {e}"))),
        }
    }
}

/// Store the trace so far and the progress; failures are logged, and the first is
/// returned so that a full or read-only store can stop the fit.
async fn write_progress(store: &Store, claim: &Claim, tracker: &mut ProgressTracker) -> Result<(), StoreError> {
    let mut first = None;
    let trace = tracker.take_trace();
    if !trace.is_empty() {
        if let Err(e) = store.append_trace(claim, &trace).await {
            tracing::warn!(error = %e, "could not store the trace");
            if e.is_unreachable() {
                tracker.untake_trace(trace);
            }
            first = Some(e);
        }
    }
    if let Err(e) = store.update_job_progress(claim, &tracker.snapshot()).await {
        tracing::warn!(error = %e, "could not store progress");
        first.get_or_insert(e);
    }
    first.map_or(Ok(()), Err)
}

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned()).unwrap_or_else(|| "unknown panic".into())
}
