//! Job leases: which worker runs a job, until when, and the history of every hold.
//!
//! Why it exists: with many replicas on one database, a job must run in one place at a
//! time and must not be lost with the replica that ran it. The protocol:
//!
//! 1. **Claim.** A worker takes the oldest job that is queued, or running under a lease
//!    that expired, in one transaction (`FOR UPDATE SKIP LOCKED` on PostgreSQL, so
//!    replicas claiming together take different jobs; SQLite's single writer serialises
//!    the claim itself). The claim sets `lease_owner`, `lease_expires_ms` and increments
//!    `attempts`: `(job id, attempts)` names this hold, and every later write of the
//!    holder is fenced by it ([`Claim`]).
//! 2. **Renew.** The holder extends its leases by heartbeat ([`Store::renew_lease`]);
//!    the renewal answers whether cancellation was asked, so a cancel reaches the replica
//!    that runs the job by polling.
//! 3. **Fence.** Progress, trace, samples, checkpoints and the outcome are written only
//!    while `(id, attempts)` still holds the job as `running`; otherwise the write is
//!    refused with [`StoreError::LeaseLost`] and the holder stops. On PostgreSQL the
//!    check locks the job row until the write commits, so a takeover cannot slip in
//!    between.
//! 4. **Take over.** A job whose lease expired (its replica died, or was cut off longer
//!    than the lease) is claimed like a queued one and resumes from its checkpoint; an
//!    expired job that already failed `max_attempts` attempts in a row without a
//!    checkpoint is failed instead. A holder that cannot renew stops its fit before its
//!    lease runs out (the runner's heartbeat), so it never writes after a takeover.
//!
//! `job_leases` keeps one row per hold (claimed, last expiry, when and how it ended), so
//! a test can check afterwards that no two holds of a job overlapped. Times are the
//! workers' clocks in milliseconds since the epoch: replicas' clocks must agree to well
//! within a lease (NTP does).

use super::job_rows::row_to_job;
use super::{Dialect, JobRow, Store, StoreError, StoreResult};
use sqlx::Row;
use std::time::Duration;

/// A worker's identity and lease terms.
#[derive(Debug, Clone)]
pub struct Worker {
    /// This replica's id (unique per process).
    pub owner: String,
    /// How long a lease lasts without renewal.
    pub lease: Duration,
    /// Interrupted attempts in a row without a checkpoint before a job is failed.
    pub max_attempts: i64,
    /// The most MPI ranks a job it claims may ask for (1: it starts no world).
    pub max_ranks: i64,
}

impl Worker {
    /// A worker with a 30 s lease and 3 attempts.
    pub fn new(owner: impl Into<String>) -> Worker {
        Worker { owner: owner.into(), lease: Duration::from_secs(30), max_attempts: 3, max_ranks: 1 }
    }
}

/// One hold of a job: the job and the attempt that claimed it. Writes of a running job
/// name their claim and are refused once it no longer holds the job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub job_id: String,
    pub attempt: i64,
}

impl Claim {
    pub fn of(job: &JobRow) -> Claim {
        Claim { job_id: job.id.clone(), attempt: job.attempts }
    }
}

/// What a renewal found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Renewal {
    /// The lease runs on; `cancel` says whether cancellation was asked.
    Held { cancel: bool },
    /// The job is no longer this claim's (taken over, or ended).
    Lost,
}

/// One row of the lease history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseRecord {
    pub job_id: String,
    pub attempt: i64,
    pub owner: String,
    pub claimed_ms: i64,
    /// The last renewal's expiry.
    pub expires_ms: i64,
    /// When the holder let go; `None` when it never did (it died or is still running).
    pub ended_ms: Option<i64>,
    /// `succeeded`, `failed`, `cancelled`, `requeued`, `taken_over` (it expired and
    /// another claim took the job) or `interrupted` (a single-process restart).
    pub outcome: Option<String>,
}

impl LeaseRecord {
    /// The end of the hold: when it was let go, else its last expiry.
    pub fn held_until_ms(&self) -> i64 {
        self.ended_ms.unwrap_or(self.expires_ms)
    }
}

/// Milliseconds since the Unix epoch on this machine's clock.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

fn ms(d: Duration) -> i64 {
    d.as_millis().min(i64::MAX as u128) as i64
}

/// What a claim may take: the bytes left in the replica's fits' memory budget, and the
/// words a job that needs more is told (given what it needs).
pub struct MemoryRoom<'a> {
    pub free_bytes: u64,
    pub waiting: &'a (dyn Fn(u64) -> String + Sync),
}

impl MemoryRoom<'static> {
    /// No memory bound (tests, and stores used without a runner).
    pub const UNLIMITED: MemoryRoom<'static> = MemoryRoom { free_bytes: u64::MAX, waiting: &|_| String::new() };
}

impl Store {
    /// `FOR UPDATE` where row locks exist (PostgreSQL); SQLite's write transaction
    /// already excludes every other writer.
    fn row_lock(&self) -> &'static str {
        match self.dialect {
            Dialect::Postgres => " FOR UPDATE",
            Dialect::Sqlite => "",
        }
    }

    /// A transaction that reads job rows and then writes them (a fenced write, a claim):
    /// on SQLite it takes the write lock at once (a deferred transaction could not
    /// upgrade its read after another connection's write); on PostgreSQL row locks
    /// suffice.
    pub(crate) async fn begin_fenced(&self) -> StoreResult<sqlx::Transaction<'static, sqlx::Any>> {
        match self.dialect {
            Dialect::Sqlite => self.begin_write().await,
            Dialect::Postgres => Ok(self.pool.begin().await?),
        }
    }

    /// Claim the oldest job that is queued or whose lease expired, for `worker`.
    pub async fn claim_next_job(&self, worker: &Worker) -> StoreResult<Option<JobRow>> {
        self.claim_next_job_within(worker, &MemoryRoom::UNLIMITED).await
    }

    /// [`Self::claim_next_job`] for a replica with `room.free_bytes` left in its fits'
    /// memory budget: the oldest claimable job is claimed only if its estimate fits;
    /// else nothing is claimed (the queue is first in, first out, so a large fit is not
    /// overtaken for ever by small ones) and a queued job is told why it waits.
    pub async fn claim_next_job_within(&self, worker: &Worker, room: &MemoryRoom<'_>) -> StoreResult<Option<JobRow>> {
        let now = now_ms();
        let mut tx = self.begin_fenced().await?;
        fail_exhausted(&mut tx, now, worker.max_attempts).await?;
        let pick = format!(
            "SELECT id, status, attempts, memory_bytes FROM jobs
             WHERE (status = 'queued' OR (status = 'running' AND lease_expires_ms < $1)) AND ranks <= $2
             ORDER BY created_at, id LIMIT 1{}",
            match self.dialect {
                Dialect::Postgres => " FOR UPDATE SKIP LOCKED",
                Dialect::Sqlite => "",
            }
        );
        let Some(picked) = sqlx::query(sqlx::AssertSqlSafe(pick)).bind(now).bind(worker.max_ranks).fetch_optional(&mut *tx).await? else {
            tx.commit().await?;
            return Ok(None);
        };
        let (id, status, previous_attempt): (String, String, i64) = (picked.try_get(0)?, picked.try_get(1)?, picked.try_get(2)?);
        let needs = picked.try_get::<Option<i64>, _>(3)?.map_or(0, |b| b.max(0) as u64);
        if needs > room.free_bytes {
            if status == "queued" {
                sqlx::query("UPDATE jobs SET waiting = $1 WHERE id = $2 AND status = 'queued'").bind((room.waiting)(needs)).bind(&id).execute(&mut *tx).await?;
            }
            tx.commit().await?;
            return Ok(None);
        }
        if status == "running" {
            end_hold(&mut tx, &id, previous_attempt, "taken_over", None).await?;
        }
        let expires = now + ms(worker.lease);
        let row = sqlx::query(
            "UPDATE jobs SET status = 'running', started_at = $1, attempts = attempts + 1, progress = NULL, error = NULL, waiting = NULL,
                lease_owner = $2, lease_expires_ms = $3
             WHERE id = $4 RETURNING *",
        )
        .bind(super::now())
        .bind(&worker.owner)
        .bind(expires)
        .bind(&id)
        .fetch_one(&mut *tx)
        .await?;
        let job = row_to_job(&row)?;
        sqlx::query("INSERT INTO job_leases (job_id, attempt, owner, claimed_ms, expires_ms) VALUES ($1, $2, $3, $4, $5)")
            .bind(&job.id)
            .bind(job.attempts)
            .bind(&worker.owner)
            .bind(now)
            .bind(expires)
            .execute(&mut *tx)
            .await?;
        // A retried job keeps its trace and samples up to its checkpoint (all of them
        // go when it has none): it resumes from there, or starts afresh.
        for sql in [
            "DELETE FROM job_trace WHERE job_id = $1 AND iteration > COALESCE((SELECT iteration FROM checkpoints WHERE job_id = $2), 0)",
            "DELETE FROM job_samples WHERE job_id = $1 AND iteration > COALESCE((SELECT iteration FROM checkpoints WHERE job_id = $2), 0)",
        ] {
            sqlx::query(sql).bind(&job.id).bind(&job.id).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(Some(job))
    }

    /// Extend `claim`'s lease to `lease` from now. Tells whether cancellation was asked,
    /// or that the claim no longer holds the job.
    pub async fn renew_lease(&self, claim: &Claim, lease: Duration) -> StoreResult<Renewal> {
        let expires = now_ms() + ms(lease);
        let mut tx = self.pool.begin().await?;
        let row = sqlx::query("UPDATE jobs SET lease_expires_ms = $1 WHERE id = $2 AND attempts = $3 AND status = 'running' RETURNING cancel_requested")
            .bind(expires)
            .bind(&claim.job_id)
            .bind(claim.attempt)
            .fetch_optional(&mut *tx)
            .await?;
        let Some(row) = row else {
            tx.commit().await?;
            return Ok(Renewal::Lost);
        };
        sqlx::query("UPDATE job_leases SET expires_ms = $1 WHERE job_id = $2 AND attempt = $3")
            .bind(expires)
            .bind(&claim.job_id)
            .bind(claim.attempt)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(Renewal::Held { cancel: row.try_get::<i64, _>(0)? != 0 })
    }

    /// Inside a write transaction: whether `claim` still holds its job (locking the job
    /// row on PostgreSQL until the transaction ends); [`StoreError::LeaseLost`] if not.
    pub(crate) async fn fence(&self, conn: &mut sqlx::AnyConnection, claim: &Claim) -> StoreResult<()> {
        let sql = format!("SELECT 1 FROM jobs WHERE id = $1 AND attempts = $2 AND status = 'running'{}", self.row_lock());
        let held = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(&claim.job_id).bind(claim.attempt).fetch_optional(&mut *conn).await?.is_some();
        if held {
            Ok(())
        } else {
            Err(StoreError::LeaseLost(claim.job_id.clone()))
        }
    }

    /// Every hold of a job, oldest first.
    pub async fn lease_history(&self, job_id: &str) -> StoreResult<Vec<LeaseRecord>> {
        let rows = sqlx::query("SELECT job_id, attempt, owner, claimed_ms, expires_ms, ended_ms, outcome FROM job_leases WHERE job_id = $1 ORDER BY attempt")
            .bind(job_id)
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(|r| {
                Ok(LeaseRecord {
                    job_id: r.try_get(0)?,
                    attempt: r.try_get(1)?,
                    owner: r.try_get(2)?,
                    claimed_ms: r.try_get(3)?,
                    expires_ms: r.try_get(4)?,
                    ended_ms: r.try_get(5)?,
                    outcome: r.try_get(6)?,
                })
            })
            .collect()
    }
}

/// Fail the `running` jobs whose lease expired before `expired_before` (ms) and that
/// used up `max_attempts` attempts in a row without a checkpoint, instead of running
/// them again; their holds end as taken over and their checkpoints go. Returns how many.
pub(crate) async fn fail_exhausted(conn: &mut sqlx::AnyConnection, expired_before: i64, max_attempts: i64) -> StoreResult<u64> {
    let exhausted = sqlx::query(
        "UPDATE jobs SET status = 'failed', finished_at = $1, lease_owner = NULL, failure = 'interrupted',
            error = 'its worker stopped while it was running, ' || (attempts - COALESCE((SELECT attempt FROM checkpoints WHERE job_id = jobs.id), 0)) || ' times without a checkpoint in between; not retried again'
         WHERE status = 'running' AND COALESCE(lease_expires_ms, 0) < $2
           AND attempts - COALESCE((SELECT attempt FROM checkpoints WHERE job_id = jobs.id), 0) >= $3
         RETURNING id, attempts",
    )
    .bind(super::now())
    .bind(expired_before)
    .bind(max_attempts)
    .fetch_all(&mut *conn)
    .await?;
    for r in &exhausted {
        let (id, attempt): (String, i64) = (r.try_get(0)?, r.try_get(1)?);
        end_hold(conn, &id, attempt, "taken_over", None).await?;
        sqlx::query("DELETE FROM checkpoints WHERE job_id = $1").bind(&id).execute(&mut *conn).await?;
    }
    Ok(exhausted.len() as u64)
}

/// Close the history row of a hold that ends: `ended` is when the holder let go (`None`:
/// it did not; it lost the job).
pub(crate) async fn end_hold(conn: &mut sqlx::AnyConnection, job_id: &str, attempt: i64, outcome: &str, ended: Option<i64>) -> StoreResult<()> {
    sqlx::query("UPDATE job_leases SET ended_ms = $1, outcome = $2 WHERE job_id = $3 AND attempt = $4 AND outcome IS NULL")
        .bind(ended)
        .bind(outcome)
        .bind(job_id)
        .bind(attempt)
        .execute(&mut *conn)
        .await?;
    Ok(())
}
