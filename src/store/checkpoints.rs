//! Stored checkpoints of running fits and evaluation jobs: one per job, replaced as the
//! job goes.
//!
//! Why it exists: a fit (or a long held-out evaluation) killed mid-way (kill -9, power
//! loss) must continue where it was, not start again. The runner hands each checkpoint the model layer encoded to
//! [`Store::save_checkpoint`], which replaces the job's previous one in a single
//! statement (atomic: after a crash the row is the old checkpoint or the new one, never
//! a mix). The blob's checksum is CRC-64/XZ from the `crc` crate: a fixed polynomial and
//! bit order, so the same bytes give the same checksum in every process, build and
//! platform (unlike std's `DefaultHasher`, whose algorithm may change). A checkpoint
//! whose checksum does not match is reported as [`LoadedCheckpoint::Corrupt`], never
//! handed to a fit.

use super::{now, Store, StoreResult};
use sqlx::Row;

/// CRC-64/XZ of `data` (see the module docs for why this checksum).
pub fn checksum(data: &[u8]) -> u64 {
    crc::Crc::<u64>::new(&crc::CRC_64_XZ).checksum(data)
}

/// A job's checkpoint as read back.
#[derive(Debug, Clone, PartialEq)]
pub enum LoadedCheckpoint {
    /// Its checksum matches: the fit may resume from it.
    Valid { iteration: i64, created_at: String, data: Vec<u8> },
    /// Its checksum does not match its bytes.
    Corrupt { iteration: i64, reason: String },
}

impl Store {
    /// Store `data` as the job's checkpoint after `iteration`, written during attempt
    /// `attempt`, replacing the previous one in one statement.
    pub async fn save_checkpoint(&self, job_id: &str, attempt: i64, iteration: i64, data: &[u8]) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO checkpoints (job_id, attempt, iteration, checksum, created_at, data) VALUES (?, ?, ?, ?, ?, ?)
             ON CONFLICT (job_id) DO UPDATE SET attempt = excluded.attempt, iteration = excluded.iteration,
                checksum = excluded.checksum, created_at = excluded.created_at, data = excluded.data",
        )
        .bind(job_id)
        .bind(attempt)
        .bind(iteration)
        .bind(checksum(data) as i64)
        .bind(now())
        .bind(data)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The job's checkpoint, its checksum verified.
    pub async fn load_checkpoint(&self, job_id: &str) -> StoreResult<Option<LoadedCheckpoint>> {
        let row = sqlx::query("SELECT iteration, checksum, created_at, data FROM checkpoints WHERE job_id = ?").bind(job_id).fetch_optional(&self.pool).await?;
        let Some(r) = row else { return Ok(None) };
        let (iteration, stored, created_at, data): (i64, i64, String, Vec<u8>) = (r.try_get(0)?, r.try_get(1)?, r.try_get(2)?, r.try_get(3)?);
        let actual = checksum(&data);
        Ok(Some(if actual == stored as u64 {
            LoadedCheckpoint::Valid { iteration, created_at, data }
        } else {
            LoadedCheckpoint::Corrupt {
                iteration,
                reason: format!("checksum {actual:#018x} of {} bytes is not the stored {:#018x}", data.len(), stored as u64),
            }
        }))
    }

    /// Drop a checkpoint that cannot be used, and the trace and samples written after
    /// iteration 0 of the attempt it belonged to: the fit starts over.
    pub async fn discard_checkpoint(&self, job_id: &str) -> StoreResult<()> {
        let mut tx = self.pool.begin().await?;
        for sql in ["DELETE FROM checkpoints WHERE job_id = ?", "DELETE FROM job_trace WHERE job_id = ?", "DELETE FROM job_samples WHERE job_id = ?"] {
            sqlx::query(sql).bind(job_id).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Iteration of the job's stored checkpoint, if any (no blob read).
    pub async fn checkpoint_iteration(&self, job_id: &str) -> StoreResult<Option<i64>> {
        let row = sqlx::query("SELECT iteration FROM checkpoints WHERE job_id = ?").bind(job_id).fetch_optional(&self.pool).await?;
        Ok(row.map(|r| r.try_get(0)).transpose()?)
    }
}

/// Delete the job's checkpoint inside a caller's transaction (the job ended).
pub(crate) async fn delete_in(conn: &mut sqlx::SqliteConnection, job_id: &str) -> StoreResult<()> {
    sqlx::query("DELETE FROM checkpoints WHERE job_id = ?").bind(job_id).execute(&mut *conn).await?;
    Ok(())
}
