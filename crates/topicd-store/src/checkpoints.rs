//! Stored checkpoints of running fits and evaluation jobs: one per job, replaced as the
//! job goes.
//!
//! Why it exists: a fit (or a long held-out evaluation) killed mid-way (kill -9, power
//! loss) must continue where it was, not start again. The runner hands each checkpoint
//! the model layer encoded to [`Store::save_checkpoint`].
//!
//! How a checkpoint is written: in chunks of at most [`CHECKPOINT_CHUNK_BYTES`], each
//! chunk its own short fenced transaction, then *published* by one small update of the
//! job's `checkpoints` row that names the chunks' generation. A checkpoint can be
//! gigabytes (HPC on a 100 000-word vocabulary with 464 labels: 2 GB); written as one
//! transaction it held SQLite's write lock, and PostgreSQL's lock on the job's row, for
//! up to a minute, during which the job's own lease could not be renewed and ran out
//! (docs/decisions/0031-chunked-checkpoints.md). Chunked, no lock is held
//! longer than one chunk takes, and on SQLite the writer pauses between chunks so that a
//! renewal waiting in SQLite's busy handler gets in ([`pause_for_other_writers`]).
//!
//! Invariants:
//! * Atomic: a crash at any point leaves the published checkpoint (the old one, or the
//!   new one once the row names it) readable whole; unpublished chunks are ignored.
//! * Fenced: every chunk and the publication check that the writer still holds the job
//!   ([`Store::fence`]), so a worker that lost its lease stops writing.
//! * Generations grow (attempt · 2^32 + the attempt's count), so a garbage chunk is one
//!   of a generation below the published one, or of a job that has ended; purging
//!   ([`Store::purge_checkpoint_chunks`]) never touches a write in progress.
//! * Checked: the checksum is CRC-64/XZ from the `crc` crate, a fixed polynomial and bit
//!   order, so the same bytes give the same checksum in every process, build and
//!   platform (unlike std's `DefaultHasher`); its 16-table form reads about 2.5 GB/s. A
//!   checkpoint whose chunks or checksum do not match is reported as
//!   [`LoadedCheckpoint::Corrupt`], never handed to a fit.

use super::{now, Claim, Dialect, Store, StoreResult};
use sqlx::Row;
use std::time::Duration;

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

/// The largest chunk written in one transaction: a fraction of a second of disk writing,
/// well inside SQLite's 10 s busy timeout, few enough chunks (64 for 2 GB) that the
/// pauses between them cost little, and small enough that the copies the database
/// driver makes of the chunk being written (SQLite copies a bound blob, then builds its
/// record from it) add at most 64 MiB to a checkpoint's own bytes.
pub const CHECKPOINT_CHUNK_BYTES: usize = 32 << 20;

/// Between two chunk transactions on SQLite, longer than the longest sleep of SQLite's
/// default busy handler (100 ms): a writer waiting for the lock (a lease renewal) retries
/// at least that often, so it finds the lock free in the gap instead of losing every
/// retry to the next chunk. SQLite's locks are not fair; PostgreSQL queues lock waiters,
/// so it needs no pause.
const SQLITE_WRITER_GAP: Duration = Duration::from_millis(120);

/// The generation of the `count`-th checkpoint (from 1) written in `attempt`.
fn generation(attempt: i64, count: i64) -> i64 {
    (attempt << 32) + count
}

impl Store {
    /// Let another writer in between two of a long write's transactions (see
    /// [`SQLITE_WRITER_GAP`]).
    async fn pause_for_other_writers(&self) {
        if self.dialect == Dialect::Sqlite {
            tokio::time::sleep(SQLITE_WRITER_GAP).await;
        }
    }

    /// Store `data` as the job's checkpoint after `iteration`, written during the claim's
    /// attempt, replacing the previous one (see the module docs for how).
    pub async fn save_checkpoint(&self, claim: &Claim, iteration: i64, data: Vec<u8>) -> StoreResult<()> {
        self.save_checkpoint_in_chunks(claim, iteration, data, CHECKPOINT_CHUNK_BYTES).await
    }

    /// [`Store::save_checkpoint`] with chunks of at most `chunk_bytes` (tests use small ones).
    #[doc(hidden)]
    pub async fn save_checkpoint_in_chunks(&self, claim: &Claim, iteration: i64, mut data: Vec<u8>, chunk_bytes: usize) -> StoreResult<()> {
        let job_id = claim.job_id.as_str();
        let sum = checksum(&data);
        let published = sqlx::query("SELECT generation FROM checkpoints WHERE job_id = $1").bind(job_id).fetch_optional(&self.pool).await?;
        let published: Option<i64> = published.map(|r| r.try_get(0)).transpose()?;
        // The next of this attempt's generations; a former holder's are all below it.
        let this = match published {
            Some(g) if g >> 32 == claim.attempt => g + 1,
            _ => generation(claim.attempt, 1),
        };
        let chunk_bytes = chunk_bytes.max(1);
        let parts = data.len().div_ceil(chunk_bytes).max(1);
        for part in 0..parts {
            if part > 0 {
                self.pause_for_other_writers().await;
            }
            // One chunk is the state itself, moved to the driver; of several, each is
            // copied out in turn, so no more than one chunk is ever copied at once.
            let chunk = if parts == 1 { std::mem::take(&mut data) } else { data[part * chunk_bytes..((part + 1) * chunk_bytes).min(data.len())].to_vec() };
            let mut tx = self.begin_fenced().await?;
            self.fence(&mut tx, claim).await?;
            // A chunk left by an earlier write of this generation that was never
            // published (it failed after its chunks) is overwritten.
            sqlx::query(
                "INSERT INTO checkpoint_chunks (job_id, generation, part, data) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (job_id, generation, part) DO UPDATE SET data = excluded.data",
            )
            .bind(job_id)
            .bind(this)
            .bind(part as i64)
            .bind(chunk)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
        }
        let mut tx = self.begin_fenced().await?;
        self.fence(&mut tx, claim).await?;
        sqlx::query(
            "INSERT INTO checkpoints (job_id, attempt, iteration, checksum, created_at, parts, generation) VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (job_id) DO UPDATE SET attempt = excluded.attempt, iteration = excluded.iteration, checksum = excluded.checksum,
                created_at = excluded.created_at, parts = excluded.parts, generation = excluded.generation",
        )
        .bind(job_id)
        .bind(claim.attempt)
        .bind(iteration)
        .bind(sum as i64)
        .bind(now())
        .bind(parts as i64)
        .bind(this)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        drop(data);
        // The checkpoint is stored; garbage left now goes with a later purge.
        if let Err(e) = self.purge_checkpoint_chunks(Some(job_id)).await {
            tracing::warn!(error = %e, "could not purge the superseded checkpoint's chunks");
        }
        Ok(())
    }

    /// The job's checkpoint, its chunks joined and its checksum verified.
    pub async fn load_checkpoint(&self, job_id: &str) -> StoreResult<Option<LoadedCheckpoint>> {
        let mut tx = self.pool.begin().await?;
        let row = sqlx::query("SELECT iteration, checksum, created_at, parts, generation FROM checkpoints WHERE job_id = $1")
            .bind(job_id)
            .fetch_optional(&mut *tx)
            .await?;
        let Some(r) = row else { return Ok(None) };
        let (iteration, stored, created_at, parts, generation): (i64, i64, String, i64, i64) =
            (r.try_get(0)?, r.try_get(1)?, r.try_get(2)?, r.try_get(3)?, r.try_get(4)?);
        let chunks = sqlx::query("SELECT part, data FROM checkpoint_chunks WHERE job_id = $1 AND generation = $2 AND part < $3 ORDER BY part")
            .bind(job_id)
            .bind(generation)
            .bind(parts)
            .fetch_all(&mut *tx)
            .await?;
        tx.commit().await?;
        let numbers = chunks.iter().map(|r| r.try_get::<i64, _>(0)).collect::<Result<Vec<_>, _>>()?;
        if numbers != (0..parts).collect::<Vec<_>>() {
            return Ok(Some(LoadedCheckpoint::Corrupt { iteration, reason: format!("it has chunks {numbers:?}, not 0 to {}", parts - 1) }));
        }
        let mut data = Vec::with_capacity(chunks.iter().map(|r| r.try_get::<&[u8], _>(1).map_or(0, |d| d.len())).sum());
        for r in &chunks {
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
    /// iteration 0 of the attempt it belonged to: the fit starts over. (Its chunks go
    /// with the next purge: a running job's unpublished generations are left alone.)
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

    /// Delete garbage chunks (of `job_id`, or of every job), one chunk a transaction so
    /// no lock is held for long: those of a generation below the job's published one,
    /// and every chunk of a job that is neither queued nor running and has no published
    /// checkpoint (it ended, or its checkpoint was discarded). A running job's chunks
    /// above its published generation are a write in progress and stay. Returns the
    /// number deleted.
    pub async fn purge_checkpoint_chunks(&self, job_id: Option<&str>) -> StoreResult<usize> {
        let garbage = "SELECT c.job_id, c.generation, c.part FROM checkpoint_chunks c
             JOIN jobs j ON j.id = c.job_id
             LEFT JOIN checkpoints k ON k.job_id = c.job_id
             WHERE (c.generation < k.generation OR (k.job_id IS NULL AND j.status NOT IN ('queued', 'running')))";
        let rows = match job_id {
            Some(id) => sqlx::query(sqlx::AssertSqlSafe(format!("{garbage} AND c.job_id = $1"))).bind(id).fetch_all(&self.pool).await?,
            None => sqlx::query(garbage).fetch_all(&self.pool).await?,
        };
        for (i, r) in rows.iter().enumerate() {
            if i > 0 {
                self.pause_for_other_writers().await;
            }
            let (id, generation, part): (String, i64, i64) = (r.try_get(0)?, r.try_get(1)?, r.try_get(2)?);
            sqlx::query("DELETE FROM checkpoint_chunks WHERE job_id = $1 AND generation = $2 AND part = $3")
                .bind(id)
                .bind(generation)
                .bind(part)
                .execute(&self.pool)
                .await?;
        }
        Ok(rows.len())
    }
}

/// Delete the job's checkpoint inside a caller's transaction (the job ended). Its chunks
/// are garbage from then on; [`Store::purge_checkpoint_chunks`] removes them outside the
/// transaction, which deleting gigabytes would hold for seconds.
pub(crate) async fn delete_in(conn: &mut sqlx::AnyConnection, job_id: &str) -> StoreResult<()> {
    sqlx::query("DELETE FROM checkpoints WHERE job_id = $1").bind(job_id).execute(&mut *conn).await?;
    Ok(())
}
