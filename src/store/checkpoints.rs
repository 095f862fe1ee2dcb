//! Stored checkpoints of running fits and evaluation jobs: one per job, replaced as the
//! job goes.
//!
//! Why it exists: a fit (or a long held-out evaluation) killed mid-way (kill -9, power
//! loss) must continue where it was, not start again. The runner hands each checkpoint the model layer encoded to
//! [`Store::save_checkpoint`], which replaces the job's previous one in a single
//! statement (atomic: after a crash the row is the old checkpoint or the new one, never
//! a mix). The blob's checksum is CRC-64/XZ from the `crc` crate: a fixed polynomial and
//! bit order, so the same bytes give the same checksum in every process, build and
//! platform (unlike std's `DefaultHasher`, whose algorithm may change); its 16-table
//! form reads 16 bytes a step (about 2.5 GB/s, where the one-table default took 1.4 s
//! over an HPC checkpoint of 559 MB). A checkpoint
//! whose checksum does not match is reported as [`LoadedCheckpoint::Corrupt`], never
//! handed to a fit.

use super::{now, Claim, Store, StoreResult};
use sqlx::Row;

/// CRC-64/XZ, its tables built at compile time.
const CRC: crc::Crc<u64, crc::Table<16>> = crc::Crc::<u64, crc::Table<16>>::new(&crc::CRC_64_XZ);

/// CRC-64/XZ of `data` (see the module docs for why this checksum).
pub fn checksum(data: &[u8]) -> u64 {
    CRC.checksum(data)
}

/// A job's checkpoint as read back.
#[derive(Debug, Clone, PartialEq)]
pub enum LoadedCheckpoint {
    /// Its checksum matches: the fit may resume from it.
    Valid { iteration: i64, created_at: String, data: Vec<u8> },
    /// Its checksum does not match its bytes.
    Corrupt { iteration: i64, reason: String },
}

/// The largest part of a checkpoint stored as one SQLite value: under SQLite's default
/// limit of 10^9 bytes per value, so a state of any size is stored (in parts), and above
/// every state measured so far, so the usual checkpoint is one value bound without a copy.
pub const CHECKPOINT_PART_BYTES: usize = 768 << 20;

impl Store {
    /// Store `data` as the job's checkpoint after `iteration`, written during attempt
    /// `attempt`, replacing the previous one in one transaction. Takes the bytes by
    /// value: the driver's buffer becomes the bound blob (a checkpoint can be hundreds of
    /// megabytes; a borrowed one would be copied).
    pub async fn save_checkpoint(&self, claim: &Claim, iteration: i64, data: Vec<u8>) -> StoreResult<()> {
        self.save_checkpoint_in_parts(claim, iteration, data, CHECKPOINT_PART_BYTES).await
    }

    /// [`Store::save_checkpoint`] with parts of at most `part_bytes` (tests use small ones).
    #[doc(hidden)]
    pub async fn save_checkpoint_in_parts(&self, claim: &Claim, iteration: i64, mut data: Vec<u8>, part_bytes: usize) -> StoreResult<()> {
        let (job_id, attempt) = (claim.job_id.as_str(), claim.attempt);
        let sum = checksum(&data);
        let part_bytes = part_bytes.max(1);
        // The parts after the first, split off the end (the first stays in `data`).
        let mut rest = Vec::new();
        while data.len() > part_bytes {
            let last_start = (data.len() - 1) / part_bytes * part_bytes;
            rest.push(data.split_off(last_start));
        }
        rest.reverse();
        let mut tx = self.begin_fenced().await?;
        self.fence(&mut tx, claim).await?;
        sqlx::query(
            "INSERT INTO checkpoints (job_id, attempt, iteration, checksum, created_at, data, parts) VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (job_id) DO UPDATE SET attempt = excluded.attempt, iteration = excluded.iteration,
                checksum = excluded.checksum, created_at = excluded.created_at, data = excluded.data, parts = excluded.parts",
        )
        .bind(job_id)
        .bind(attempt)
        .bind(iteration)
        .bind(sum as i64)
        .bind(now())
        .bind(data)
        .bind(1 + rest.len() as i64)
        .execute(&mut *tx)
        .await?;
        sqlx::query("DELETE FROM checkpoint_parts WHERE job_id = $1").bind(job_id).execute(&mut *tx).await?;
        for (i, part) in rest.into_iter().enumerate() {
            sqlx::query("INSERT INTO checkpoint_parts (job_id, part, data) VALUES ($1, $2, $3)")
                .bind(job_id)
                .bind(1 + i as i64)
                .bind(part)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// The job's checkpoint, its parts joined and its checksum verified.
    pub async fn load_checkpoint(&self, job_id: &str) -> StoreResult<Option<LoadedCheckpoint>> {
        let mut tx = self.pool.begin().await?;
        let row =
            sqlx::query("SELECT iteration, checksum, created_at, data, parts FROM checkpoints WHERE job_id = $1").bind(job_id).fetch_optional(&mut *tx).await?;
        let Some(r) = row else { return Ok(None) };
        let (iteration, stored, created_at, mut data, parts): (i64, i64, String, Vec<u8>, i64) =
            (r.try_get(0)?, r.try_get(1)?, r.try_get(2)?, r.try_get(3)?, r.try_get(4)?);
        let rest = sqlx::query("SELECT part, data FROM checkpoint_parts WHERE job_id = $1 ORDER BY part").bind(job_id).fetch_all(&mut *tx).await?;
        tx.commit().await?;
        let numbers = rest.iter().map(|r| r.try_get::<i64, _>(0)).collect::<Result<Vec<_>, _>>()?;
        if numbers != (1..parts).collect::<Vec<_>>() {
            return Ok(Some(LoadedCheckpoint::Corrupt { iteration, reason: format!("it has parts {numbers:?} besides the first, not 1 to {}", parts - 1) }));
        }
        data.reserve(rest.iter().map(|r| r.try_get::<&[u8], _>(1).map_or(0, |d| d.len())).sum());
        for r in &rest {
            data.extend_from_slice(r.try_get::<&[u8], _>(1)?);
        }
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
        for sql in ["DELETE FROM checkpoints WHERE job_id = $1", "DELETE FROM job_trace WHERE job_id = $1", "DELETE FROM job_samples WHERE job_id = $1"] {
            sqlx::query(sql).bind(job_id).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Iteration of the job's stored checkpoint, if any (no blob read).
    pub async fn checkpoint_iteration(&self, job_id: &str) -> StoreResult<Option<i64>> {
        let row = sqlx::query("SELECT iteration FROM checkpoints WHERE job_id = $1").bind(job_id).fetch_optional(&self.pool).await?;
        Ok(row.map(|r| r.try_get(0)).transpose()?)
    }
}

/// Delete the job's checkpoint inside a caller's transaction (the job ended).
pub(crate) async fn delete_in(conn: &mut sqlx::AnyConnection, job_id: &str) -> StoreResult<()> {
    sqlx::query("DELETE FROM checkpoints WHERE job_id = $1").bind(job_id).execute(&mut *conn).await?;
    Ok(())
}
