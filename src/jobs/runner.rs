//! The job runner: claims queued jobs and runs their fits and evaluations off the async
//! runtime.
//!
//! Each claim is a lease (`store::leases`): a heartbeat renews the leases of the jobs
//! running here, learns of cancellations asked on any replica, and stops a fit whose
//! lease was lost or could not be renewed before it ran out, so a job never runs in two
//! places at once. Every write of a running job names its claim.

use super::admission::waiting_for_memory;
use super::fit_task::{CheckpointPlan, FitTask};
use super::fitted::{decode_corpus, FittedBlobs};
use super::model_start;
use crate::graph::Graph;
use crate::models::causes::{Evaluation, Internal, InvalidInput, Settings, StoreFault, Stored};
use crate::models::heldout::{score_documents, EstimatorSettings, HeldoutDoc};
use crate::models::options::{without_options, JobOptions};
use crate::models::registry::FitSource;
use crate::models::{CancelToken, FailureKind, FitError};
use crate::store::family_name::stored_name;
use crate::store::models::NewModel;
use crate::store::{Claim, FitInput, JobKind, JobRow, JobStatus, LoadedCheckpoint, MemoryRoom, Renewal, Store, StoreError, Worker};
use crate::world;
use serde_json::json;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

/// Runner settings (from the server configuration).
#[derive(Debug, Clone)]
pub struct RunnerConfig {
    /// Default threads per fit.
    pub threads: usize,
    /// Jobs at once.
    pub max_jobs: usize,
    /// How long shutdown waits for fits to stop.
    pub shutdown_grace: Duration,
    /// Seconds between a fit's checkpoints unless its params say otherwise (0 = off).
    pub checkpoint_every_s: f64,
    /// This replica's identity and lease terms.
    pub worker: Worker,
    /// Whether this replica claims jobs at all (`--role api` does not).
    pub claims_jobs: bool,
    /// Bytes the fits running here may need together, by their estimates
    /// (`--fit-memory-mb`).
    pub fit_memory_bytes: u64,
    /// The command that starts a job's MPI world (`--mpi-launch`; `{ranks}` filled in),
    /// or `None`: this replica runs no job over ranks.
    pub mpi_launch: Option<String>,
}

impl RunnerConfig {
    /// How often the leases of running jobs are renewed: a fifth of the lease, at most
    /// 2 s (the most a cancellation asked on another replica waits).
    pub fn heartbeat(&self) -> Duration {
        (self.worker.lease / 5).clamp(Duration::from_millis(50), Duration::from_secs(2))
    }
}

/// A job running here.
struct RunningJob {
    claim: Claim,
    token: CancelToken,
    /// Set when the lease was lost: the job is someone else's, nothing more is written.
    lease_lost: Arc<AtomicBool>,
    /// When the lease was last renewed (or claimed).
    renewed: Instant,
    /// The job's estimated peak memory (0 when it has none).
    memory_bytes: u64,
}

/// Claims and runs jobs; one per server.
pub struct Runner {
    store: Store,
    config: RunnerConfig,
    wake: Notify,
    running: Mutex<HashMap<String, RunningJob>>,
    shutting_down: AtomicBool,
    tasks: TaskTracker,
    fit_iterations: AtomicU64,
}

/// A fit job's input as stored, before decoding.
enum JobInput {
    Corpus(Vec<u8>),
    Graph(Vec<u8>),
}

/// What a finished job hands back: a model to store, or an evaluation's result.
enum Outcome {
    Model(FittedBlobs),
    Result(serde_json::Value),
}

/// A job's runner options: its `options` (checked at submit), or for an evaluation job
/// and a job queued before options left the params, the same keys in its params.
fn job_options(job: &JobRow) -> JobOptions {
    match &job.options {
        Some(options) => JobOptions::from_json(options).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "the job's stored options do not parse; running with the server's defaults");
            JobOptions::default()
        }),
        None => JobOptions::in_stored_params(&job.params),
    }
}

impl Runner {
    pub fn new(store: Store, config: RunnerConfig) -> Arc<Runner> {
        Arc::new(Runner {
            store,
            config,
            wake: Notify::new(),
            running: Mutex::new(HashMap::new()),
            shutting_down: AtomicBool::new(false),
            tasks: TaskTracker::new(),
            fit_iterations: AtomicU64::new(0),
        })
    }

    /// Sweeps completed by all fits since start (for `/metrics`).
    pub fn fit_iterations(&self) -> u64 {
        self.fit_iterations.load(Ordering::Relaxed)
    }

    /// Jobs currently running in this process.
    pub fn running_jobs(&self) -> usize {
        self.running.lock().expect("runner lock").len()
    }

    /// Threads a job runs on unless its params say otherwise.
    pub fn default_threads(&self) -> usize {
        self.config.threads
    }

    /// The threads a job with `options` runs on: what it asked for (else `--threads`),
    /// but no more than the machine's cores (or `--threads`, where that is more). A fit
    /// gives the same result on any number of threads, so the cap changes no answer; it
    /// keeps one job that asks for 1 024 threads from starting 1 024 spinning workers
    /// on a two-core replica and slowing every other request down.
    fn job_threads(&self, options: &JobOptions) -> usize {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        options.threads_or(self.config.threads).min(cores.max(self.config.threads))
    }

    /// The fits' memory budget, in bytes.
    /// Whether this replica runs jobs over MPI ranks (`--mpi-launch`).
    pub fn starts_worlds(&self) -> bool {
        self.config.mpi_launch.is_some() && self.config.claims_jobs
    }

    pub fn fit_memory_budget(&self) -> u64 {
        self.config.fit_memory_bytes
    }

    /// Tell the loop a job was queued.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// Signal a running job to stop; returns whether it was running here.
    pub fn cancel(&self, job_id: &str) -> bool {
        match self.running.lock().expect("runner lock").get(job_id) {
            Some(r) => {
                r.token.cancel();
                true
            }
            None => false,
        }
    }

    /// The fits running here and their estimated memory together.
    fn running_memory(&self) -> (usize, u64) {
        let running = self.running.lock().expect("runner lock");
        (running.len(), running.values().map(|r| r.memory_bytes).sum())
    }

    /// The claim loop (with the lease heartbeat beside it); returns when shutdown starts.
    /// Other replicas' jobs are found by polling every second.
    pub async fn run(self: Arc<Self>) {
        if !self.config.claims_jobs {
            return;
        }
        let heartbeat = tokio::spawn(self.clone().heartbeat_loop());
        // Chunks of checkpoints that a crash left unpublished, or whose job ended.
        match self.store.purge_checkpoint_chunks(None).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(chunks = n, "purged checkpoint chunks no job needs"),
            Err(e) => tracing::warn!(error = %e, "could not purge unused checkpoint chunks"),
        }
        loop {
            if self.shutting_down.load(Ordering::SeqCst) {
                heartbeat.abort();
                return;
            }
            while self.running_jobs() < self.config.max_jobs && !self.shutting_down.load(Ordering::SeqCst) {
                let (budget, (running, in_use)) = (self.config.fit_memory_bytes, self.running_memory());
                let waiting = move |needs: u64| waiting_for_memory(needs, budget, in_use, running);
                let room = MemoryRoom { free_bytes: budget.saturating_sub(in_use), waiting: &waiting };
                match self.store.claim_next_job_within(&self.config.worker, &room).await {
                    Ok(Some(job)) => {
                        let token = CancelToken::new();
                        let lease_lost = Arc::new(AtomicBool::new(false));
                        let memory_bytes = job.memory_bytes.unwrap_or(0);
                        let running =
                            RunningJob { claim: Claim::of(&job), token: token.clone(), lease_lost: lease_lost.clone(), renewed: Instant::now(), memory_bytes };
                        self.running.lock().expect("runner lock").insert(job.id.clone(), running);
                        let me = self.clone();
                        let span = tracing::info_span!("job", id = %job.id, model = %job.model_name(), attempt = job.attempts);
                        self.tasks.spawn(async move { me.run_job(job, token, lease_lost).await }.instrument(span));
                    }
                    Ok(None) => break,
                    Err(e) => {
                        tracing::error!(error = %e, "could not claim a job");
                        break;
                    }
                }
            }
            tokio::select! {
                _ = self.wake.notified() => {}
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
        }
    }

    /// Renew the leases of the jobs running here until shutdown; pass on cancellations
    /// asked elsewhere; stop a job whose lease is lost, or whose lease would run out
    /// before the database answers again (this replica is cut off from it).
    async fn heartbeat_loop(self: Arc<Self>) {
        let every = self.config.heartbeat();
        let lease = self.config.worker.lease;
        loop {
            tokio::time::sleep(every).await;
            let claims: Vec<Claim> = self.running.lock().expect("runner lock").values().map(|r| r.claim.clone()).collect();
            for claim in claims {
                let renewal = match self.store.renew_lease(&claim, lease).await {
                    // A job whose outcome was stored while the renewal was on its way is
                    // not lost: it ended here.
                    Ok(Renewal::Lost) if self.ended_here(&claim).await => continue,
                    other => other,
                };
                let mut running = self.running.lock().expect("runner lock");
                let Some(job) = running.get_mut(&claim.job_id).filter(|j| j.claim == claim) else { continue };
                match renewal {
                    Ok(Renewal::Held { cancel }) => {
                        job.renewed = Instant::now();
                        if cancel {
                            job.token.cancel();
                        }
                    }
                    Ok(Renewal::Lost) => {
                        tracing::warn!(job = %claim.job_id, "lease lost: the job was taken over or ended elsewhere; stopping it here");
                        job.lease_lost.store(true, Ordering::SeqCst);
                        job.token.cancel();
                    }
                    // Stop while the lease still runs: one more heartbeat could be too late.
                    Err(e) if job.renewed.elapsed() + every * 2 >= lease => {
                        tracing::error!(job = %claim.job_id, error = %e, "could not renew the lease before it runs out; stopping the job, which another worker resumes");
                        job.lease_lost.store(true, Ordering::SeqCst);
                        job.token.cancel();
                    }
                    Err(e) => tracing::warn!(job = %claim.job_id, error = %e, "could not renew the lease; trying again"),
                }
            }
        }
    }

    /// Whether the claim's job has ended by this replica's own hand (its outcome stored
    /// just now), rather than been taken over.
    async fn ended_here(&self, claim: &Claim) -> bool {
        match self.store.lease_history(&claim.job_id).await {
            Ok(history) => history.iter().any(|h| h.attempt == claim.attempt && h.ended_ms.is_some()),
            Err(_) => false,
        }
    }

    /// Stop claiming, cancel running fits (they are re-queued) and wait for them.
    pub async fn shutdown(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
        self.wake.notify_waiters();
        for r in self.running.lock().expect("runner lock").values() {
            r.token.cancel();
        }
        self.tasks.close();
        if tokio::time::timeout(self.config.shutdown_grace, self.tasks.wait()).await.is_err() {
            tracing::warn!("fits did not stop within the grace period; they will be re-queued at next start");
        }
    }

    async fn run_job(self: Arc<Self>, job: JobRow, token: CancelToken, lease_lost: Arc<AtomicBool>) {
        tracing::info!(attempt = job.attempts, "job started");
        let claim = Claim::of(&job);
        // A cancel that arrived between the claim and the token's registration is only
        // in the database: read the flag again now that the token is registered.
        let cancel_requested = job.cancel_requested || matches!(self.store.get_job(&job.id).await, Ok(Some(j)) if j.cancel_requested);
        let outcome = if cancel_requested {
            Err(FitError::Cancelled)
        } else if job.kind == JobKind::Fit {
            self.execute_fit(&job, &token, &lease_lost).await.map(Outcome::Model)
        } else {
            self.execute_evaluation(&job, &token, &lease_lost).await.map(Outcome::Result)
        };
        let what = match &outcome {
            Ok(Outcome::Result(_)) => "the result",
            Ok(Outcome::Model(_)) => "the model",
            Err(_) => "the job's outcome",
        };
        let model_id = uuid::Uuid::new_v4().to_string();
        // A database that cannot be reached for a moment is waited for, as long as the
        // heartbeat keeps the lease; once it is lost, the job is another worker's.
        let result = loop {
            if lease_lost.load(Ordering::SeqCst) {
                break Err(StoreError::LeaseLost(job.id.clone()));
            }
            let stored = self.store_outcome(&job, &claim, &outcome, &model_id).await;
            match stored {
                Err(e) if e.is_unreachable() => {
                    tracing::warn!(error = %e, "could not reach the database to store {what}; trying again");
                    tokio::time::sleep(self.config.heartbeat()).await;
                }
                other => break other,
            }
        };
        match result {
            Ok(()) => {}
            Err(StoreError::LeaseLost(_)) => {
                tracing::warn!("the job's lease was lost; nothing more is stored here and the worker that holds it now goes on from its checkpoint");
            }
            Err(e) => {
                // A job whose outcome cannot be stored (a full disk) must not stay
                // `running`: fail it with the reason, which an UPDATE in place can usually
                // still store.
                tracing::error!(error = %e, "could not record the job's outcome");
                let reason = match e.unwritable() {
                    Some(u) => format!("could not store {what}: {}", u.explain()),
                    None => format!("could not store {what}: {e}"),
                };
                if let Err(e) = self.store.fail_job(&claim, FailureKind::StoreFault, &reason).await {
                    tracing::error!(error = %e, "could not mark the job failed either; its lease runs out and it is claimed again");
                }
            }
        }
        // The ended job's checkpoint chunks (outside the ending transaction: deleting
        // gigabytes would hold the write lock for seconds).
        if let Err(e) = self.store.purge_checkpoint_chunks(Some(&job.id)).await {
            tracing::warn!(error = %e, "could not purge the job's checkpoint chunks");
        }
        self.running.lock().expect("runner lock").remove(&job.id);
        self.wake.notify_one();
    }

    /// Write what became of a job, fenced by its claim.
    async fn store_outcome(&self, job: &JobRow, claim: &Claim, outcome: &Result<Outcome, FitError>, model_id: &str) -> Result<(), StoreError> {
        match outcome {
            Ok(Outcome::Result(value)) => {
                self.store.complete_job_with_result(claim, value).await?;
                tracing::info!("evaluation job succeeded");
            }
            Ok(Outcome::Model(blobs)) => {
                let (corpus_ids, num_documents) = self.documents_held(job, blobs).await?;
                self.store
                    .complete_job_with_model(NewModel {
                        id: model_id,
                        claim,
                        input: FitInput::of_job(job),
                        family: blobs.family,
                        params: &job.params,
                        seed: job.seed,
                        num_topics: blobs.num_topics,
                        diagnostics: &blobs.diagnostics,
                        lexicon: blobs.lexicon.as_deref(),
                        data: &blobs.data,
                        topic_names: &blobs.topic_names,
                        parent: blobs.parent.as_ref().map(|(id, record)| (id.as_str(), record)),
                        corpus_ids: &corpus_ids,
                        num_documents,
                    })
                    .await?;
                tracing::info!(model_id = %model_id, "job succeeded");
            }
            Err(FitError::Cancelled) if self.shutting_down.load(Ordering::SeqCst) => {
                self.store.requeue_job(claim, "requeued: the server shut down while it was running").await?;
                tracing::info!("job interrupted by shutdown; re-queued");
            }
            Err(FitError::Cancelled) => {
                self.store.finish_job(claim, JobStatus::Cancelled, Some("cancelled by request")).await?;
                tracing::info!("job cancelled");
            }
            // A world that ended before its fit (a rank killed, a host lost, a launcher
            // that could not start): the next attempt resumes from the last checkpoint,
            // until the attempts run out.
            Err(e @ FitError::Interrupted(_)) if job.attempts < self.config.worker.max_attempts => {
                self.store.requeue_job(claim, &format!("requeued after attempt {}: {e}", job.attempts)).await?;
                tracing::warn!(error = %e, attempt = job.attempts, "the job's world ended; re-queued");
            }
            Err(e) => {
                self.store.fail_job(claim, e.kind(), &e.to_string()).await?;
                tracing::warn!(error = %e, failure = e.kind().as_str(), "job failed");
            }
        }
        Ok(())
    }

    /// Fit a model: read the job's input (a corpus or a graph, as its family declares),
    /// run the family's fit, encode the result.
    async fn execute_fit(&self, job: &JobRow, token: &CancelToken, lease_lost: &Arc<AtomicBool>) -> Result<FittedBlobs, FitError> {
        let name = job.model.clone().map_err(|unknown| FitError::Internal(Internal::UnknownModel { name: unknown.name }))?;
        let family = name.family();
        let input = match (&job.corpus_id, &job.graph_id) {
            (Some(corpus_id), None) => JobInput::Corpus(self.corpus_blob(corpus_id).await?),
            (None, Some(graph_id)) => JobInput::Graph(self.graph_blob(graph_id).await?),
            _ => return Err(FitError::Internal(Internal::bug("a fit job needs exactly one of a corpus and a graph"))),
        };
        // The params the job stored at submit, read back into the family's type (a job
        // queued before options left the params has them among its params: dropped).
        let params = family
            .parse_params(&without_options(job.params.clone()))
            .map_err(|e| FitError::InvalidInput(InvalidInput::Unparsable { what: Settings::Params, detail: e.to_string() }))?;
        let seed = job.seed;
        let plan = self.checkpoint_plan(job).await;
        let options = job_options(job);
        if let Some(start) = &job.start {
            let JobInput::Corpus(blob) = input else { return Err(FitError::Internal(Internal::bug("only topic models start from a stored model"))) };
            let parent = model_start::Parent::load(&self.store, job, start).await?;
            let naming = parent.naming();
            let fitted = self.fit_task(job, token, lease_lost, plan).run(move |ctx| parent.fit(name, &blob, &params, seed, ctx)).await?;
            return model_start::with_parent_names(&self.store, &naming, fitted).await;
        }
        if options.ranks() > 1 {
            let JobInput::Corpus(blob) = input else { return Err(FitError::InvalidInput(InvalidInput::NotRanked { family: name.to_string() })) };
            let launch = self
                .config
                .mpi_launch
                .clone()
                .ok_or_else(|| FitError::Internal(Internal::bug("a job over ranks was claimed by a replica without --mpi-launch")))?;
            let program = std::env::current_exe().map_err(|e| FitError::Internal(Internal::ProgramPath { detail: e.to_string() }))?;
            let threads = self.job_threads(&options);
            let request = world::protocol::Request {
                family: name.as_str().to_string(),
                params: params.json().clone(),
                seed,
                threads,
                checkpoint_every_s: plan.every.map(|d| d.as_secs_f64()),
            };
            let ranks = options.ranks();
            return self
                .fit_task(job, token, lease_lost, plan)
                .run(move |ctx| {
                    let cmd = world::launch::world_command(&launch, ranks, &program);
                    let fit = world::launch::run_world(cmd, ranks, &request, &blob, ctx)?;
                    let model = family.decode(&fit.model).map_err(|e| FitError::Internal(Internal::Rank0Model { detail: e.to_string() }))?;
                    // The model records the world it was fitted over (its bytes do not).
                    let mut diagnostics = model.diagnostics();
                    if let Some(d) = diagnostics.as_object_mut() {
                        d.insert("ranks".into(), json!(ranks));
                    }
                    Ok(FittedBlobs::encoded(name, model.num_components(), diagnostics, Some(fit.lexicon), fit.model))
                })
                .await;
        }
        self.fit_task(job, token, lease_lost, plan)
            .run(move |ctx| match input {
                JobInput::Corpus(blob) => {
                    let corpus = decode_corpus(&blob)?;
                    drop(blob);
                    let model = family.fit(FitSource::Corpus(&corpus), &params, seed, ctx)?;
                    let blobs = FittedBlobs::of(name, &model, Some(postcard::to_allocvec(&corpus.lexicon).expect("plain data encodes")));
                    Ok(FittedBlobs { topic_names: params.seeds().names(), ..blobs })
                }
                JobInput::Graph(blob) => {
                    let graph = Graph::decode(&blob).map_err(|e| FitError::Internal(Internal::Corrupt { what: Stored::Graph, detail: e.to_string() }))?;
                    drop(blob);
                    let model = family.fit(FitSource::Graph(&graph), &params, seed, ctx)?;
                    Ok(FittedBlobs::of(name, &model, None))
                }
            })
            .await
    }

    /// The corpora a fitted topic model's documents came from and how many it holds:
    /// its job's corpus (or an update's list) and that corpus' size; none for a graph.
    async fn documents_held(&self, job: &JobRow, blobs: &FittedBlobs) -> Result<(Vec<String>, Option<usize>), StoreError> {
        let Some(corpus_id) = &job.corpus_id else { return Ok((Vec::new(), None)) };
        let corpus_ids = if blobs.corpus_ids.is_empty() { vec![corpus_id.clone()] } else { blobs.corpus_ids.clone() };
        let num_documents = self.store.get_corpus(corpus_id).await?.map(|c| c.num_documents as usize);
        Ok((corpus_ids, num_documents))
    }

    async fn graph_blob(&self, graph_id: &str) -> Result<Vec<u8>, FitError> {
        self.store
            .graph_data(graph_id)
            .await
            .map_err(|e| FitError::Store(StoreFault::Read { what: Stored::Graph, detail: e.to_string() }))?
            .ok_or_else(|| FitError::InvalidInput(InvalidInput::Deleted { what: Stored::Graph, id: graph_id.to_string() }))
    }

    /// Evaluate a stored model: held-out likelihood of submitted documents, or the
    /// test-split scores of a supervised model. Returns the job's result.
    async fn execute_evaluation(&self, job: &JobRow, token: &CancelToken, lease_lost: &Arc<AtomicBool>) -> Result<serde_json::Value, FitError> {
        let model_id = job.source_model_id.clone().ok_or_else(|| FitError::Internal(Internal::bug("evaluation job without a model")))?;
        let (family, _lexicon, data) = self
            .store
            .model_blobs(&model_id)
            .await
            .map_err(|e| FitError::Store(StoreFault::Read { what: Stored::Model, detail: e.to_string() }))?
            .ok_or_else(|| FitError::InvalidInput(InvalidInput::Deleted { what: Stored::Model, id: model_id.clone() }))?;
        let family = family
            .as_ref()
            .ok()
            .and_then(|f| f.family().topics())
            .ok_or_else(|| FitError::Internal(Internal::UnknownModel { name: stored_name(&family).to_string() }))?;
        let seed = job.seed;
        match job.kind {
            JobKind::HeldoutLikelihood => {
                let input = self
                    .store
                    .job_input(&job.id)
                    .await
                    .map_err(|e| FitError::Store(StoreFault::Read { what: Stored::Documents, detail: e.to_string() }))?
                    .ok_or_else(|| FitError::Internal(Internal::bug("the job's documents are missing")))?;
                // The settings the job stored at submit, read back into their type.
                let settings = EstimatorSettings::from_json(&job.params)
                    .map_err(|e| FitError::InvalidInput(InvalidInput::Unparsable { what: Settings::Estimator, detail: e.to_string() }))?;
                // Checkpoints: the documents scored so far (iteration = their number).
                let plan = self.checkpoint_plan(job).await;
                self.fit_task(job, token, lease_lost, plan)
                    .run(move |ctx| {
                        let model = family.decode(&data).map_err(|e| FitError::Internal(Internal::Corrupt { what: Stored::Model, detail: e.to_string() }))?;
                        let docs: Vec<HeldoutDoc> = postcard::from_bytes(&input)
                            .map_err(|e| FitError::Internal(Internal::Corrupt { what: Stored::Documents, detail: e.to_string() }))?;
                        let scorer = model.heldout_scorer(&settings)?.ok_or_else(|| {
                            FitError::InvalidInput(InvalidInput::NotOffered { family: family.name().into(), what: Evaluation::HeldoutLikelihood })
                        })?;
                        let report = score_documents(scorer.as_ref(), &docs, seed, ctx)?;
                        let unknown: Vec<u64> = docs.iter().map(|d| d.doc.oov_tokens).collect();
                        let mut out = report.to_json_with(&unknown);
                        out["model_id"] = json!(model_id);
                        Ok(out)
                    })
                    .await
            }
            JobKind::Evaluation => {
                let corpus_id = job.corpus_id.clone().unwrap_or_default();
                let blob = self.corpus_blob(&corpus_id).await?;
                self.fit_task(job, token, lease_lost, CheckpointPlan::default())
                    .run(move |_ctx| {
                        let model = family.decode(&data).map_err(|e| FitError::Internal(Internal::Corrupt { what: Stored::Model, detail: e.to_string() }))?;
                        let corpus = decode_corpus(&blob)?;
                        let evaluation = model
                            .evaluate_test_split(&corpus, seed)
                            .ok_or_else(|| FitError::InvalidInput(InvalidInput::NotOffered { family: family.name().into(), what: Evaluation::TestSplit }))??;
                        Ok(json!({"model_id": model_id, "evaluation": evaluation}))
                    })
                    .await
            }
            JobKind::Fit => Err(FitError::Internal(Internal::bug("a fit job run as an evaluation"))),
        }
    }

    async fn corpus_blob(&self, corpus_id: &str) -> Result<Vec<u8>, FitError> {
        self.store
            .corpus_data(corpus_id)
            .await
            .map_err(|e| FitError::Store(StoreFault::Read { what: Stored::Corpus, detail: e.to_string() }))?
            .ok_or_else(|| FitError::InvalidInput(InvalidInput::Deleted { what: Stored::Corpus, id: corpus_id.to_string() }))
    }

    /// A fit or evaluation of `job` to run on this runner's store and thread default.
    fn fit_task<'a>(&'a self, job: &'a JobRow, token: &'a CancelToken, lease_lost: &'a Arc<AtomicBool>, plan: CheckpointPlan) -> FitTask<'a> {
        let threads = self.job_threads(&job_options(job));
        FitTask { store: &self.store, fit_iterations: &self.fit_iterations, threads, job, token, lease_lost, plan }
    }

    /// The job's checkpoint interval (its options, else the server's) and its stored
    /// checkpoint, if that passes its checksum; one that does not is discarded and
    /// the fit starts from iteration 0 (as it does, keeping the row, when the row cannot
    /// be read: the fit's next checkpoint replaces it).
    async fn checkpoint_plan(&self, job: &JobRow) -> CheckpointPlan {
        let seconds = job_options(job).checkpoint_every_s.unwrap_or(self.config.checkpoint_every_s);
        let every = (seconds > 0.0).then(|| Duration::try_from_secs_f64(seconds).ok()).flatten();
        let mut plan = CheckpointPlan { every, ..CheckpointPlan::default() };
        match self.store.load_checkpoint(&job.id).await {
            Ok(None) => {}
            Ok(Some(LoadedCheckpoint::Valid { iteration, created_at, data })) => {
                tracing::info!(iteration, written = %created_at, bytes = data.len(), "resuming from a checkpoint");
                plan.resume = Some(data);
            }
            Ok(Some(LoadedCheckpoint::Corrupt { iteration, reason })) => {
                let reason = format!("checkpoint after iteration {iteration} rejected, starting from iteration 0: {reason}");
                tracing::warn!(%reason, "not resuming");
                if let Err(e) = self.store.discard_checkpoint(&job.id).await {
                    tracing::warn!(error = %e, "could not discard the checkpoint");
                }
                plan.rejected = Some(reason);
            }
            Err(e) => {
                let reason = format!("checkpoint could not be read, starting from iteration 0: {e}");
                tracing::warn!(%reason, "not resuming");
                plan.rejected = Some(reason);
            }
        }
        plan
    }
}
