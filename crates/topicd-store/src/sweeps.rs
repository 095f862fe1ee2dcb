//! Stored sweeps: one request fitting a family at several K, its fits ordinary jobs
//! that carry its id, and each finished fit's scores.
//!
//! Why it exists: a sweep must be queued whole or not at all (its jobs and its row in
//! one transaction, with the queue's room checked for all of them), cancelled whole,
//! and read back with its jobs and their scores; the jobs themselves are claimed,
//! leased, resumed and finished like any other.

use super::family_name::StoredFamily;
use super::job_rows::{json_col, row_to_job};
use super::jobs::{insert_fit_job, queue_refusal, NewJob, NotQueued, QueueGate};
use super::{now, FamilyName, JobRow, Store, StoreError, StoreResult};
use sqlx::Row;

/// A sweep to queue.
pub struct NewSweep<'a> {
    pub id: &'a str,
    pub corpus_id: &'a str,
    pub model: FamilyName,
    /// The request as accepted (K values, chains, params, seed, held-out fraction).
    pub request: &'a serde_json::Value,
    pub queue: QueueGate<'a>,
}

/// A stored sweep.
#[derive(Debug, Clone)]
pub struct SweepRow {
    pub id: String,
    pub corpus_id: String,
    pub model: StoredFamily,
    pub request: serde_json::Value,
    pub created_at: String,
    pub cancel_requested: bool,
}

fn row_to_sweep(r: &sqlx::any::AnyRow) -> StoreResult<SweepRow> {
    Ok(SweepRow {
        id: r.try_get("id")?,
        corpus_id: r.try_get("corpus_id")?,
        model: FamilyName::parse(&r.try_get::<String, _>("model")?),
        request: json_col(r, "request")?.unwrap_or(serde_json::Value::Null),
        created_at: r.try_get("created_at")?,
        cancel_requested: r.try_get::<i64, _>("cancel_requested")? != 0,
    })
}

impl Store {
    /// Queue a sweep and its fit jobs (each `jobs[i]` gets the sweep's id), atomically
    /// with the checks that the corpus exists and the queue has room for every job.
    pub async fn insert_sweep(&self, sweep: NewSweep<'_>, jobs: &[NewJob<'_>]) -> StoreResult<Result<SweepRow, NotQueued>> {
        let mut tx = self.begin_write().await?;
        if let Some(refused) = queue_refusal(&mut tx, &sweep.queue, jobs.len() as u64).await? {
            return Ok(Err(refused));
        }
        let n = sqlx::query(
            "INSERT INTO sweeps (id, corpus_id, model, request, created_at)
             SELECT $1, $2, $3, $4, $5 WHERE EXISTS (SELECT 1 FROM corpora WHERE id = $6)",
        )
        .bind(sweep.id)
        .bind(sweep.corpus_id)
        .bind(sweep.model.as_str())
        .bind(sweep.request.to_string())
        .bind(now())
        .bind(sweep.corpus_id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if n == 0 {
            return Ok(Err(NotQueued::InputGone));
        }
        for job in jobs {
            if insert_fit_job(&mut tx, job, Some(sweep.id)).await? == 0 {
                return Ok(Err(NotQueued::InputGone));
            }
        }
        tx.commit().await?;
        self.get_sweep(sweep.id).await?.map(Ok).ok_or_else(|| StoreError::Corrupt(format!("sweep {} vanished after it was queued", sweep.id)))
    }

    pub async fn get_sweep(&self, id: &str) -> StoreResult<Option<SweepRow>> {
        let row = sqlx::query("SELECT * FROM sweeps WHERE id = $1").bind(id).fetch_optional(&self.pool).await?;
        row.as_ref().map(row_to_sweep).transpose()
    }

    /// Sweeps newest first, optionally of one corpus.
    pub async fn list_sweeps(&self, corpus_id: Option<&str>, limit: i64) -> StoreResult<Vec<SweepRow>> {
        let filter = corpus_id.unwrap_or("");
        let rows = sqlx::query("SELECT * FROM sweeps WHERE ($1 = '' OR corpus_id = $2) ORDER BY created_at DESC, id LIMIT $3")
            .bind(filter)
            .bind(filter)
            .bind(limit)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(row_to_sweep).collect()
    }

    /// A sweep's jobs, in the order they were queued.
    pub async fn sweep_jobs(&self, id: &str) -> StoreResult<Vec<JobRow>> {
        let rows = sqlx::query("SELECT * FROM jobs WHERE sweep_id = $1 ORDER BY created_at, id").bind(id).fetch_all(&self.pool).await?;
        rows.iter().map(row_to_job).collect()
    }

    /// The scores kept for a sweep's jobs, by job id.
    pub async fn sweep_scores(&self, id: &str) -> StoreResult<Vec<(String, serde_json::Value)>> {
        let rows = sqlx::query("SELECT job_id, scores FROM sweep_scores WHERE sweep_id = $1").bind(id).fetch_all(&self.pool).await?;
        rows.iter().map(|r| Ok((r.try_get("job_id")?, json_col(r, "scores")?.unwrap_or(serde_json::Value::Null)))).collect()
    }

    /// Keep a finished job's scores (a second write of the same job's, from a replica
    /// that scored it at the same time, changes nothing).
    pub async fn put_sweep_scores(&self, sweep_id: &str, job_id: &str, scores: &serde_json::Value) -> StoreResult<()> {
        let mut tx = self.begin_write().await?;
        let exists: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM sweep_scores WHERE job_id = $1").bind(job_id).fetch_one(&mut *tx).await?;
        if exists == 0 {
            sqlx::query("INSERT INTO sweep_scores (job_id, sweep_id, scores) VALUES ($1, $2, $3)")
                .bind(job_id)
                .bind(sweep_id)
                .bind(scores.to_string())
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Mark a sweep cancelled and ask every job of it that has not finished to stop
    /// (queued ones are cancelled at once); returns the sweep, `None` if unknown.
    pub async fn cancel_sweep(&self, id: &str) -> StoreResult<Option<SweepRow>> {
        let n = sqlx::query("UPDATE sweeps SET cancel_requested = 1 WHERE id = $1").bind(id).execute(&self.pool).await?.rows_affected();
        if n == 0 {
            return Ok(None);
        }
        for job in self.sweep_jobs(id).await? {
            if !job.status.is_terminal() {
                self.request_cancel(&job.id).await?;
            }
        }
        self.get_sweep(id).await
    }
}
