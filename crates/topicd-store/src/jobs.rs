//! Stored jobs, their progress, traces and thinned samples.

use super::leases::{end_hold, now_ms, Claim};
use super::{now, seed_to_sql, FamilyName, Store, StoreError, StoreResult};
use sqlx::Row;

use super::job_rows::{json_col, row_to_job};
pub use super::job_rows::{JobKind, JobRow, JobStatus, TracePoint};
use topicd_core::models::FailureKind;

/// What a fit job fits.
#[derive(Debug, Clone, Copy)]
pub enum FitInput<'a> {
    Corpus(&'a str),
    Graph(&'a str),
}

impl<'a> FitInput<'a> {
    /// What a fit job row reads (a graph when it names one, else its corpus).
    pub fn of_job(job: &'a JobRow) -> FitInput<'a> {
        match (&job.graph_id, &job.corpus_id) {
            (Some(graph), _) => FitInput::Graph(graph),
            (None, corpus) => FitInput::Corpus(corpus.as_deref().unwrap_or("")),
        }
    }

    /// The `(corpus_id, graph_id)` columns: exactly one is set.
    pub(crate) fn columns(self) -> (Option<&'a str>, Option<&'a str>) {
        match self {
            FitInput::Corpus(id) => (Some(id), None),
            FitInput::Graph(id) => (None, Some(id)),
        }
    }
}

/// A job to queue.
pub struct NewJob<'a> {
    pub id: &'a str,
    pub input: FitInput<'a>,
    pub model: FamilyName,
    pub params: &'a serde_json::Value,
    pub seed: u64,
    pub queue: QueueGate<'a>,
    /// The fit's estimated peak memory in bytes (see `models::registry::Family::fit_memory`).
    pub memory_bytes: Option<u64>,
    /// The runner's options (`models::options::JobOptions` as JSON), never part of the params.
    pub options: Option<&'a serde_json::Value>,
    /// The MPI ranks the fit runs over (its options' `ranks`; 1 for one process): only
    /// a worker that starts worlds that large claims it.
    pub ranks: usize,
    /// Where the fit starts when not from scratch: a stored model it reads.
    pub start: Option<JobStart<'a>>,
}

/// A fit that starts from a stored model (an edit's refit): the model, which cannot be
/// deleted while the job may read it, and how the fit starts from it (the job's
/// `start`, read back by the runner).
#[derive(Debug, Clone, Copy)]
pub struct JobStart<'a> {
    pub parent_model_id: &'a str,
    pub spec: &'a serde_json::Value,
}

/// Who submits a job and how many queued jobs may wait: checked in the transaction that
/// queues it, so concurrent submissions cannot overshoot.
#[derive(Debug, Clone, Copy)]
pub struct QueueGate<'a> {
    /// The submitting token's key (`None` when the server runs without tokens).
    pub token_key: Option<&'a str>,
    /// Most queued jobs in all.
    pub max_queued: u64,
    /// Most queued jobs of one token.
    pub max_queued_per_token: u64,
}

impl QueueGate<'_> {
    /// No bound and no submitter (tests, tools).
    pub const UNBOUNDED: QueueGate<'static> = QueueGate { token_key: None, max_queued: u64::MAX, max_queued_per_token: u64::MAX };
}

/// Why a job was not queued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotQueued {
    /// The corpus, graph or model it reads was deleted.
    InputGone,
    /// The server's queue holds `max_queued` jobs already.
    QueueFull { queued: u64 },
    /// The token's own queued jobs reach `max_queued_per_token`.
    TokenQueueFull { queued: u64 },
}

/// `Some(reason)` when `gate` allows no further `adding` queued jobs.
pub(crate) async fn queue_refusal(tx: &mut sqlx::Transaction<'static, sqlx::Any>, gate: &QueueGate<'_>, adding: u64) -> StoreResult<Option<NotQueued>> {
    let total: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM jobs WHERE status = 'queued'").fetch_one(&mut **tx).await?;
    if (total as u64).saturating_add(adding) > gate.max_queued {
        return Ok(Some(NotQueued::QueueFull { queued: total as u64 }));
    }
    if let Some(key) = gate.token_key {
        let mine: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM jobs WHERE status = 'queued' AND token_key = $1").bind(key).fetch_one(&mut **tx).await?;
        if (mine as u64).saturating_add(adding) > gate.max_queued_per_token {
            return Ok(Some(NotQueued::TokenQueueFull { queued: mine as u64 }));
        }
    }
    Ok(None)
}

/// An evaluation job to queue against a stored model.
pub struct NewEvaluationJob<'a> {
    pub id: &'a str,
    /// An evaluation kind ([`JobKind::HeldoutLikelihood`] or [`JobKind::Evaluation`]).
    pub kind: JobKind,
    pub source_model_id: &'a str,
    /// The corpus the job reads (test-split evaluation), if any.
    pub corpus_id: Option<&'a str>,
    /// The model's family.
    pub model: FamilyName,
    pub params: &'a serde_json::Value,
    pub seed: u64,
    /// Submitted documents, encoded by the caller; stored beside the job.
    pub input: Option<Vec<u8>>,
    pub queue: QueueGate<'a>,
    /// The job's estimated peak memory in bytes, where the caller can tell.
    pub memory_bytes: Option<u64>,
}

impl Store {
    /// Queue an evaluation job, atomically with the check that its model (and corpus,
    /// when it reads one) still exist and the queue has room.
    pub async fn insert_evaluation_job(&self, j: NewEvaluationJob<'_>) -> StoreResult<Result<JobRow, NotQueued>> {
        let mut tx = self.begin_write().await?;
        if let Some(refused) = queue_refusal(&mut tx, &j.queue, 1).await? {
            return Ok(Err(refused));
        }
        let n = sqlx::query(
            "INSERT INTO jobs (id, kind, corpus_id, model, params, seed, status, created_at, source_model_id, token_key, memory_bytes)
             SELECT $1, $2, $3, $4, $5, $6, 'queued', $7, $8, $9, $13 WHERE EXISTS (SELECT 1 FROM models WHERE id = $10)
               AND ($11 IS NULL OR EXISTS (SELECT 1 FROM corpora WHERE id = $12))",
        )
        .bind(j.id)
        .bind(j.kind.as_str())
        .bind(j.corpus_id)
        .bind(j.model.as_str())
        .bind(j.params.to_string())
        .bind(seed_to_sql(j.seed))
        .bind(now())
        .bind(j.source_model_id)
        .bind(j.queue.token_key)
        .bind(j.source_model_id)
        .bind(j.corpus_id)
        .bind(j.corpus_id)
        .bind(j.memory_bytes.map(|b| b.min(i64::MAX as u64) as i64))
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if n == 0 {
            return Ok(Err(NotQueued::InputGone));
        }
        if let Some(data) = j.input {
            sqlx::query("INSERT INTO job_inputs (job_id, data) VALUES ($1, $2)").bind(j.id).bind(data).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        self.queued_job(j.id).await
    }

    /// The row of a job just queued (it exists: its insert committed).
    async fn queued_job(&self, id: &str) -> StoreResult<Result<JobRow, NotQueued>> {
        self.get_job(id).await?.map(Ok).ok_or_else(|| StoreError::Corrupt(format!("job {id} vanished after it was queued")))
    }

    /// The documents submitted with an evaluation job.
    pub async fn job_input(&self, id: &str) -> StoreResult<Option<Vec<u8>>> {
        let row = sqlx::query("SELECT data FROM job_inputs WHERE job_id = $1").bind(id).fetch_optional(&self.pool).await?;
        row.map(|r| Ok(r.try_get(0)?)).transpose()
    }

    /// Mark an evaluation job succeeded with its result, and drop its stored input and
    /// checkpoint, in one transaction, while `claim` holds it.
    pub async fn complete_job_with_result(&self, claim: &Claim, result: &serde_json::Value) -> StoreResult<()> {
        let id = &claim.job_id;
        let mut tx = self.begin_fenced().await?;
        self.fence(&mut tx, claim).await?;
        end_hold(&mut tx, id, claim.attempt, "succeeded", Some(now_ms())).await?;
        sqlx::query("UPDATE jobs SET status = 'succeeded', finished_at = $1, result = $2, error = NULL, lease_owner = NULL WHERE id = $3")
            .bind(now())
            .bind(result.to_string())
            .bind(id)
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM job_inputs WHERE job_id = $1").bind(id).execute(&mut *tx).await?;
        super::checkpoints::delete_in(&mut tx, id).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Queue a fit job, atomically with the check that its corpus (or graph) still
    /// exists and the queue has room.
    pub async fn insert_job(&self, j: NewJob<'_>) -> StoreResult<Result<JobRow, NotQueued>> {
        let mut tx = self.begin_write().await?;
        if let Some(refused) = queue_refusal(&mut tx, &j.queue, 1).await? {
            return Ok(Err(refused));
        }
        if insert_fit_job(&mut tx, &j, None).await? == 0 {
            return Ok(Err(NotQueued::InputGone));
        }
        tx.commit().await?;
        self.queued_job(j.id).await
    }

    pub async fn get_job(&self, id: &str) -> StoreResult<Option<JobRow>> {
        let row = sqlx::query("SELECT * FROM jobs WHERE id = $1").bind(id).fetch_optional(&self.pool).await?;
        row.as_ref().map(row_to_job).transpose()
    }

    /// Jobs newest first, optionally of one status; returns the page and the total.
    pub async fn list_jobs(&self, status: Option<JobStatus>, offset: i64, limit: i64) -> StoreResult<(Vec<JobRow>, i64)> {
        let filter = status.map(|s| s.as_str()).unwrap_or("");
        let rows = sqlx::query("SELECT * FROM jobs WHERE ($1 = '' OR status = $2) ORDER BY created_at DESC, id LIMIT $3 OFFSET $4")
            .bind(filter)
            .bind(filter)
            .bind(limit)
            .bind(offset)
            .fetch_all(&self.pool)
            .await?;
        let total: i64 =
            sqlx::query("SELECT COUNT(*) FROM jobs WHERE ($1 = '' OR status = $2)").bind(filter).bind(filter).fetch_one(&self.pool).await?.try_get(0)?;
        Ok((rows.iter().map(row_to_job).collect::<StoreResult<_>>()?, total))
    }

    /// Number of failed jobs of each failure class (jobs failed before classes were
    /// recorded are left out).
    pub async fn count_failed_jobs_by_class(&self) -> StoreResult<Vec<(String, i64)>> {
        let rows = sqlx::query("SELECT failure, COUNT(*) AS n FROM jobs WHERE status = 'failed' AND failure IS NOT NULL GROUP BY failure ORDER BY failure")
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(|r| Ok((r.try_get("failure")?, r.try_get("n")?))).collect()
    }

    /// Number of jobs in each status.
    pub async fn count_jobs_by_status(&self) -> StoreResult<Vec<(JobStatus, i64)>> {
        let rows = sqlx::query("SELECT status, COUNT(*) AS n FROM jobs GROUP BY status").fetch_all(&self.pool).await?;
        let mut out: Vec<(JobStatus, i64)> = JobStatus::ALL.iter().map(|&s| (s, 0)).collect();
        for r in rows {
            let s: String = r.try_get("status")?;
            let n: i64 = r.try_get("n")?;
            if let Some(slot) = out.iter_mut().find(|(st, _)| st.as_str() == s) {
                slot.1 = n;
            }
        }
        Ok(out)
    }

    /// Store a running job's latest progress (only while `claim` holds it).
    pub async fn update_job_progress(&self, claim: &Claim, progress: &serde_json::Value) -> StoreResult<()> {
        let n = sqlx::query("UPDATE jobs SET progress = $1 WHERE id = $2 AND attempts = $3 AND status = 'running'")
            .bind(progress.to_string())
            .bind(&claim.job_id)
            .bind(claim.attempt)
            .execute(&self.pool)
            .await?
            .rows_affected();
        if n == 0 {
            return Err(StoreError::LeaseLost(claim.job_id.clone()));
        }
        Ok(())
    }

    /// Add points to a running job's trace (only while `claim` holds it).
    pub async fn append_trace(&self, claim: &Claim, points: &[TracePoint]) -> StoreResult<()> {
        let id = &claim.job_id;
        let mut tx = self.begin_fenced().await?;
        self.fence(&mut tx, claim).await?;
        for p in points {
            sqlx::query(
                "INSERT INTO job_trace (job_id, iteration, elapsed_s, loglik_per_token, rates) VALUES ($1, $2, $3, $4, $5) \
                 ON CONFLICT (job_id, iteration) DO UPDATE SET elapsed_s = excluded.elapsed_s, loglik_per_token = excluded.loglik_per_token, rates = excluded.rates",
            )
            .bind(id)
            .bind(p.iteration)
            .bind(p.elapsed_s)
            .bind(p.loglik_per_token)
            .bind(p.rates.as_ref().map(|r| serde_json::Value::Object(r.clone()).to_string()))
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    pub async fn job_trace(&self, id: &str) -> StoreResult<Vec<TracePoint>> {
        let rows = sqlx::query("SELECT iteration, elapsed_s, loglik_per_token, rates FROM job_trace WHERE job_id = $1 ORDER BY iteration")
            .bind(id)
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(|r| {
                let rates = match json_col(r, "rates")? {
                    None => None,
                    Some(serde_json::Value::Object(m)) => Some(m),
                    Some(other) => return Err(StoreError::Corrupt(format!("rates: an object, not {other}"))),
                };
                Ok(TracePoint { iteration: r.try_get(0)?, elapsed_s: r.try_get(1)?, loglik_per_token: r.try_get(2)?, rates })
            })
            .collect()
    }

    /// Keep a thinned sample of a running job (only while `claim` holds it).
    pub async fn insert_sample(&self, claim: &Claim, iteration: i64, data: &[u8]) -> StoreResult<()> {
        let job_id = &claim.job_id;
        let mut tx = self.begin_fenced().await?;
        self.fence(&mut tx, claim).await?;
        sqlx::query("INSERT INTO job_samples (job_id, iteration, data) VALUES ($1, $2, $3) ON CONFLICT (job_id, iteration) DO UPDATE SET data = excluded.data")
            .bind(job_id)
            .bind(iteration)
            .bind(data)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Iterations of the thinned samples stored for a job.
    pub async fn sample_iterations(&self, job_id: &str) -> StoreResult<Vec<i64>> {
        let rows = sqlx::query("SELECT iteration FROM job_samples WHERE job_id = $1 ORDER BY iteration").bind(job_id).fetch_all(&self.pool).await?;
        rows.iter().map(|r| Ok(r.try_get(0)?)).collect()
    }

    /// The thinned samples stored for a job, (iteration, bytes) in iteration order.
    pub async fn samples(&self, job_id: &str) -> StoreResult<Vec<(i64, Vec<u8>)>> {
        let rows = sqlx::query("SELECT iteration, data FROM job_samples WHERE job_id = $1 ORDER BY iteration").bind(job_id).fetch_all(&self.pool).await?;
        rows.iter().map(|r| Ok((r.try_get(0)?, r.try_get(1)?))).collect()
    }

    /// End a running job as failed (or cancelled) with a reason, while `claim` holds
    /// it. An evaluation job's stored documents and its checkpoint go with it.
    pub async fn finish_job(&self, claim: &Claim, status: JobStatus, error: Option<&str>) -> StoreResult<()> {
        debug_assert!(status != JobStatus::Failed, "a failed job has a failure class: use fail_job");
        self.end_job(claim, status, error, None).await
    }

    /// End a running job as failed, with the class of its failure (see
    /// [`JobRow::failure`]) and its reason, while `claim` holds it.
    pub async fn fail_job(&self, claim: &Claim, failure: FailureKind, reason: &str) -> StoreResult<()> {
        self.end_job(claim, JobStatus::Failed, Some(reason), Some(failure.as_str())).await
    }

    async fn end_job(&self, claim: &Claim, status: JobStatus, error: Option<&str>, failure: Option<&str>) -> StoreResult<()> {
        debug_assert!(status.is_terminal());
        let mut tx = self.begin_fenced().await?;
        self.fence(&mut tx, claim).await?;
        let id = &claim.job_id;
        sqlx::query("UPDATE jobs SET status = $1, finished_at = $2, error = $3, failure = $4, lease_owner = NULL WHERE id = $5")
            .bind(status.as_str())
            .bind(now())
            .bind(error)
            .bind(failure)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM job_inputs WHERE job_id = $1").bind(id).execute(&mut *tx).await?;
        super::checkpoints::delete_in(&mut tx, id).await?;
        end_hold(&mut tx, id, claim.attempt, status.as_str(), Some(now_ms())).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Put a running job back in the queue (graceful shutdown), while `claim` holds it;
    /// it resumes from its checkpoint wherever it is claimed next.
    pub async fn requeue_job(&self, claim: &Claim, reason: &str) -> StoreResult<()> {
        let mut tx = self.begin_fenced().await?;
        self.fence(&mut tx, claim).await?;
        sqlx::query("UPDATE jobs SET status = 'queued', error = $1, started_at = NULL, lease_owner = NULL, lease_expires_ms = NULL WHERE id = $2")
            .bind(reason)
            .bind(&claim.job_id)
            .execute(&mut *tx)
            .await?;
        end_hold(&mut tx, &claim.job_id, claim.attempt, "requeued", Some(now_ms())).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Ask for cancellation. A queued job is cancelled at once; returns the new row.
    pub async fn request_cancel(&self, id: &str) -> StoreResult<Option<JobRow>> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("UPDATE jobs SET cancel_requested = 1 WHERE id = $1 AND status IN ('queued', 'running')").bind(id).execute(&mut *tx).await?;
        sqlx::query("UPDATE jobs SET status = 'cancelled', finished_at = $1, error = 'cancelled before it started' WHERE id = $2 AND status = 'queued'")
            .bind(now())
            .bind(id)
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM job_inputs WHERE job_id = $1 AND EXISTS (SELECT 1 FROM jobs WHERE id = $2 AND status = 'cancelled')")
            .bind(id)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        self.get_job(id).await
    }

    /// At start-up: jobs left `running` by a dead process go back to the queue (to
    /// resume from their checkpoint, if they have one), or fail once `max_attempts`
    /// attempts in a row were interrupted without writing a checkpoint. An attempt that
    /// wrote one made progress and does not count: a long fit survives any number of
    /// restarts as long as each gets as far as a checkpoint. Returns (requeued, failed).
    ///
    /// Only for a database this process owns alone (SQLite): on a shared one (PostgreSQL)
    /// a `running` job may be another replica's, and expired leases are taken over by
    /// [`Store::claim_next_job`] instead; this does nothing there.
    pub async fn recover_interrupted_jobs(&self, max_attempts: i64) -> StoreResult<(u64, u64)> {
        if self.is_shared() {
            return Ok((0, 0));
        }
        let mut tx = self.pool.begin().await?;
        sqlx::query(
            "UPDATE job_leases SET outcome = 'interrupted', ended_ms = $1 WHERE outcome IS NULL AND job_id IN (SELECT id FROM jobs WHERE status = 'running')",
        )
        .bind(now_ms())
        .execute(&mut *tx)
        .await?;
        // The one process that held them is gone: every running job's hold has ended.
        let failed = super::leases::fail_exhausted(&mut tx, i64::MAX, max_attempts).await?;
        let requeued = sqlx::query(
            "UPDATE jobs SET status = 'queued', started_at = NULL, lease_owner = NULL, lease_expires_ms = NULL, error = 'requeued: the server stopped while it was running' WHERE status = 'running'",
        )
        .execute(&mut *tx)
        .await?
        .rows_affected();
        tx.commit().await?;
        Ok((requeued, failed))
    }
}

/// Insert a fit job's row in `tx` (of sweep `sweep_id`, if any) when its corpus or
/// graph, and the model it starts from, still exist; the rows inserted (0: one is gone).
pub(crate) async fn insert_fit_job(tx: &mut sqlx::Transaction<'static, sqlx::Any>, j: &NewJob<'_>, sweep_id: Option<&str>) -> StoreResult<u64> {
    let (corpus_id, graph_id) = j.input.columns();
    Ok(sqlx::query(
        "INSERT INTO jobs (id, kind, corpus_id, graph_id, model, params, seed, status, created_at, token_key, memory_bytes, options, ranks, sweep_id, source_model_id, start)
         SELECT $1, 'fit', $2, $3, $4, $5, $6, 'queued', $7, $8, $13, $14, $15, $16, $17, $19
          WHERE ($9 IS NULL OR EXISTS (SELECT 1 FROM corpora WHERE id = $10))
            AND ($11 IS NULL OR EXISTS (SELECT 1 FROM graphs WHERE id = $12))
            AND ($17 IS NULL OR EXISTS (SELECT 1 FROM models WHERE id = $18))",
    )
    .bind(j.id)
    .bind(corpus_id)
    .bind(graph_id)
    .bind(j.model.as_str())
    .bind(j.params.to_string())
    .bind(seed_to_sql(j.seed))
    .bind(now())
    .bind(j.queue.token_key)
    .bind(corpus_id)
    .bind(corpus_id)
    .bind(graph_id)
    .bind(graph_id)
    .bind(j.memory_bytes.map(|b| b.min(i64::MAX as u64) as i64))
    .bind(j.options.map(|o| o.to_string()))
    .bind(j.ranks.max(1) as i64)
    .bind(sweep_id)
    .bind(j.start.map(|s| s.parent_model_id))
    .bind(j.start.map(|s| s.parent_model_id))
    .bind(j.start.map(|s| s.spec.to_string()))
    .execute(&mut **tx)
    .await?
    .rows_affected())
}
