//! Persistence: corpora, graphs, jobs, traces, samples, checkpoints and models in one
//! SQLite file.
//!
//! Why it exists: this is the only module that speaks SQL. It opens the database (WAL,
//! `synchronous=NORMAL`, a busy timeout), applies `migrations/` on start, and offers
//! typed operations. Every state change a crash must not lose (a corpus stored, a job
//! finished together with its model) is one transaction.

pub mod checkpoints;
pub mod corpora;
pub mod graphs;
pub mod jobs;
pub mod models;
pub mod topic_names;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::SqlitePool;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

pub use checkpoints::LoadedCheckpoint;
pub use corpora::{CorpusRow, DeleteOutcome};
pub use graphs::GraphRow;
pub use jobs::{FitInput, JobRow, JobStatus, TracePoint};
pub use models::ModelRow;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Sqlx(#[from] sqlx::Error),
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("stored value is corrupt: {0}")]
    Corrupt(String),
}

pub type StoreResult<T> = Result<T, StoreError>;

/// A handle on the database; cheap to clone.
#[derive(Clone, Debug)]
pub struct Store {
    pool: SqlitePool,
}

impl Store {
    /// Open (creating if needed) the database file and apply migrations.
    pub async fn open(path: &Path) -> StoreResult<Store> {
        let url = format!("sqlite://{}", path.display());
        let options = SqliteConnectOptions::from_str(&url)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(10))
            .foreign_keys(true);
        let pool = SqlitePoolOptions::new().max_connections(8).connect_with(options).await?;
        sqlx::migrate!("./migrations").run(&pool).await?;
        Ok(Store { pool })
    }

    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// A transaction that takes the write lock at once (`BEGIN IMMEDIATE`). A check
    /// then write (is the corpus in use? then delete it) must not start as a reader: a
    /// write committed by another connection in between would make its own write fail
    /// with SQLITE_BUSY_SNAPSHOT, which the busy timeout does not retry.
    pub(crate) async fn begin_write(&self) -> StoreResult<sqlx::Transaction<'static, sqlx::Sqlite>> {
        Ok(self.pool.begin_with("BEGIN IMMEDIATE").await?)
    }

    /// A trivial query, for readiness checks.
    pub async fn ping(&self) -> StoreResult<()> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }
}

/// Ids of the queued or running jobs that `query` (one `?`: the id of what is to be
/// deleted) finds, oldest first: what makes a delete a conflict.
pub(crate) async fn active_jobs(conn: &mut sqlx::SqliteConnection, query: &'static str, id: &str) -> StoreResult<Vec<String>> {
    use sqlx::Row;
    let rows = sqlx::query(query).bind(id).fetch_all(&mut *conn).await?;
    Ok(rows.iter().map(|r| r.try_get("id")).collect::<Result<_, _>>()?)
}

/// The current time as RFC 3339 with milliseconds (UTC).
pub fn now() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

/// Seeds are u64; SQLite integers are i64. Store the bit pattern.
pub(crate) fn seed_to_sql(seed: u64) -> i64 {
    seed as i64
}
pub(crate) fn seed_from_sql(v: i64) -> u64 {
    v as u64
}
