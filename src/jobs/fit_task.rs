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
use crate::models::causes::{Internal, StoreFault, Written};
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
        let CheckpointPlan { every, resume, rejected } = plan;
        let cadence = Arc::new(Cadence::new(every.unwrap_or_default()));
        let handle = spawn_fit(threads, every, resume, token.clone(), cadence.clone(), tx, work);
        let mut tracker = ProgressTracker::new(threads);
        if let Some(reason) = rejected {
            tracker.checkpoint_rejected(reason);
        }
        let last_write = Instant::now() - PROGRESS_WRITE_INTERVAL;
        let mut pump = Pump { store, fit_iterations, job, token, lease_lost, cadence, claim: Claim::of(job), tracker, last_write, refused: None };
        while let Some(event) = rx.recv().await {
            pump.handle(event).await;
        }
        pump.flush_progress().await;
        let finished = handle.await;
        if let Some(reason) = pump.refused {
            return Err(FitError::Store(reason));
        }
        match finished {
            Ok(r) => r,
            Err(e) if e.is_panic() => Err(FitError::Internal(Internal::Panicked { message: panic_message(e.into_panic()) })),
            Err(e) => Err(FitError::Internal(Internal::Aborted { detail: e.to_string() })),
        }
    }
}

/// Start `work` on a blocking thread inside a rayon pool of `threads` threads, with a
/// context that sends its reports to `events` and paces its checkpoints by `cadence`.
fn spawn_fit<T: Send + 'static>(
    threads: usize,
    every: Option<Duration>,
    resume: Option<Vec<u8>>,
    cancel: CancelToken,
    cadence: Arc<Cadence>,
    events: mpsc::UnboundedSender<FitEvent>,
    work: impl FnOnce(&FitContext) -> Result<T, FitError> + Send + 'static,
) -> tokio::task::JoinHandle<Result<T, FitError>> {
    tokio::task::spawn_blocking(move || -> Result<T, FitError> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("fit-{i}"))
            .build()
            .map_err(|e| FitError::Internal(Internal::ThreadPool { threads, detail: e.to_string() }))?;
        let progress_tx = events.clone();
        let on_progress = move |p: Progress| {
            let _ = progress_tx.send(FitEvent::Progress(p));
        };
        let sample_tx = events.clone();
        let on_sample = move |it: u64, bytes: Vec<u8>| {
            let _ = sample_tx.send(FitEvent::Sample(it, bytes));
        };
        let checkpoint_tx = events.clone();
        let handing = cadence.clone();
        let on_checkpoint = move |it: u64, bytes: Vec<u8>| {
            handing.handed_over();
            let _ = checkpoint_tx.send(FitEvent::Checkpoint(it, bytes));
        };
        let ready = move || cadence.ready();
        let on_resumed = move |r: Resume| {
            let _ = events.send(FitEvent::Resumed(r));
        };
        let checkpoint = Checkpointing { every, save: &on_checkpoint, resume_from: resume.as_deref(), resumed: &on_resumed, ready: &ready };
        let ctx = FitContext { progress: &on_progress, cancel: &cancel, sample: &on_sample, checkpoint };
        pool.install(|| work(&ctx))
    })
}

/// The store side of a running fit: what it reports, written under the job's claim;
/// the fit stopped when the store refuses a write or the lease is lost.
struct Pump<'a> {
    store: &'a Store,
    fit_iterations: &'a AtomicU64,
    job: &'a JobRow,
    token: &'a CancelToken,
    lease_lost: &'a Arc<AtomicBool>,
    cadence: Arc<Cadence>,
    claim: Claim,
    tracker: ProgressTracker,
    last_write: Instant,
    /// Set when the store refuses a write (full or read-only): the fit is stopped and
    /// the job fails with this reason instead of running on to a model it cannot keep.
    refused: Option<StoreFault>,
}

impl Pump<'_> {
    /// One report from the fit, recorded and stored.
    async fn handle(&mut self, event: FitEvent) {
        match event {
            FitEvent::Progress(p) => self.progress(p).await,
            FitEvent::Sample(it, bytes) => self.sample(it, bytes).await,
            FitEvent::Checkpoint(it, bytes) => self.checkpoint(it, bytes).await,
            FitEvent::Resumed(Resume::From(it)) => {
                tracing::info!(iteration = it, "resumed from the checkpoint");
                self.tracker.resumed_from(it);
            }
            FitEvent::Resumed(Resume::Rejected(reason)) => self.resume_rejected(reason).await,
        }
    }

    /// A sweep's progress, counted and recorded; written at the last sweep and at most
    /// every [`PROGRESS_WRITE_INTERVAL`] before it.
    async fn progress(&mut self, p: Progress) {
        self.fit_iterations.fetch_add(1, Ordering::Relaxed);
        let last = p.iteration >= p.total;
        self.tracker.record(p);
        if last || self.last_write.elapsed() >= PROGRESS_WRITE_INTERVAL {
            self.flush_progress().await;
            self.last_write = Instant::now();
        }
    }

    /// A thinned sample, stored.
    async fn sample(&mut self, it: u64, bytes: Vec<u8>) {
        if let Err(e) = self.store.insert_sample(&self.claim, it as i64, &bytes).await {
            tracing::warn!(error = %e, "could not store a thinned sample");
            self.stop(Written::Sample { iteration: it }, &e);
        }
    }

    /// A checkpoint after iteration `it`: the trace up to it, then the checkpoint, then
    /// the progress naming it; the cadence is told once it is settled either way.
    async fn checkpoint(&mut self, it: u64, bytes: Vec<u8>) {
        // The trace up to this iteration first, so a resume finds all of it.
        self.flush_progress().await;
        let (len, started) = (bytes.len(), Instant::now());
        match self.store.save_checkpoint(&self.claim, it as i64, bytes).await {
            Ok(()) => {
                tracing::info!(iteration = it, bytes = len, store_s = started.elapsed().as_secs_f64(), "checkpoint stored");
                self.tracker.checkpointed(it, crate::store::now());
                self.flush_progress().await;
                self.last_write = Instant::now();
            }
            Err(e) => {
                tracing::warn!(error = %e, "could not store a checkpoint");
                self.stop(Written::Checkpoint { iteration: it }, &e);
            }
        }
        self.cadence.stored();
    }

    /// The fit could not use the stored checkpoint: it is discarded and the reason kept.
    async fn resume_rejected(&mut self, reason: String) {
        tracing::warn!(%reason, "not resuming");
        if let Err(e) = self.store.discard_checkpoint(&self.job.id).await {
            tracing::warn!(error = %e, "could not discard the checkpoint");
        }
        self.tracker.checkpoint_rejected(reason);
    }

    /// The trace and progress so far, written ([`write_progress`]); a failure may stop
    /// the fit ([`Self::stop`]).
    async fn flush_progress(&mut self) {
        if let Err(e) = write_progress(self.store, &self.claim, &mut self.tracker).await {
            self.stop(Written::Progress, &e);
        }
    }

    /// What a failed write of `what` does: a lost lease cancels the fit; the first
    /// refused write (a full or read-only store) cancels it and keeps the reason.
    fn stop(&mut self, what: Written, e: &StoreError) {
        if let StoreError::LeaseLost(_) = e {
            self.lease_lost.store(true, Ordering::SeqCst);
            self.token.cancel();
        }
        if let Some(u) = e.unwritable() {
            if self.refused.is_none() {
                tracing::error!(error = %e, "the store refused a write; stopping the fit");
                self.refused = Some(StoreFault::Refused { what, detail: u.explain().to_string() });
                self.token.cancel();
            }
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

/// A panic's message, when it carried one.
fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned()).unwrap_or_else(|| "unknown panic".into())
}
