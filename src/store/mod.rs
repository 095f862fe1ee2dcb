//! Persistence: corpora, graphs, jobs, traces, samples, checkpoints and models in one
//! SQLite file.
//!
//! Why it exists: this is the only module that speaks SQL. It opens the database (WAL,
//! `synchronous=NORMAL`, a busy timeout), applies `migrations/` on start, and offers
//! typed operations. Every state change a crash must not lose (a corpus stored, a job
//! finished together with its model) is one transaction. It refuses a damaged file
//! at open (`PRAGMA quick_check`), tells a full or read-only database apart from other
//! failures ([`StoreError::unwritable`]), and makes consistent copies ([`backup`]).

pub mod backup;
pub mod checkpoints;
pub mod corpora;
pub mod graphs;
pub mod jobs;
pub mod models;
pub mod tokens;
pub mod topic_names;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Connection, SqlitePool};
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
    /// The database file failed `PRAGMA quick_check` (or SQLite found it corrupt or not
    /// a database at all) when it was opened.
    #[error(
        "the database {path} is damaged, so topicd will not start on it; SQLite's integrity check found: {problems}. \
         Restore the last good copy made with `topicd backup`: stop the server, move the damaged file (and any {path}-wal \
         and {path}-shm beside it) away, put the backup in its place and start again"
    )]
    Damaged { path: String, problems: String },
}

/// Why a write failed that is neither the request's fault nor a bug.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unwritable {
    /// SQLITE_FULL: the disk is full, or the database reached `--max-db-mb`.
    Full,
    /// SQLITE_READONLY: the file, its directory or its file system is read-only.
    ReadOnly,
}

impl Unwritable {
    /// What happened, in words an operator can act on.
    pub fn explain(self) -> &'static str {
        match self {
            Unwritable::Full => "the database is full: its disk has no space left or it reached its size limit (--max-db-mb)",
            Unwritable::ReadOnly => "the database is read-only (file or directory permissions, or a read-only file system)",
        }
    }
}

impl StoreError {
    /// Whether this error is a full or a read-only database (SQLite's primary result
    /// codes 13 and 8; sqlx reports the extended code).
    pub fn unwritable(&self) -> Option<Unwritable> {
        let code = match self {
            StoreError::Sqlx(e) => sqlite_code(e)?,
            StoreError::Migrate(sqlx::migrate::MigrateError::Execute(e)) => sqlite_code(e)?,
            _ => return None,
        };
        match code & 0xff {
            13 => Some(Unwritable::Full),
            8 => Some(Unwritable::ReadOnly),
            _ => None,
        }
    }
}

/// SQLite's (extended) result code of a database error.
fn sqlite_code(e: &sqlx::Error) -> Option<i32> {
    match e {
        sqlx::Error::Database(d) => d.code()?.parse().ok(),
        _ => None,
    }
}

pub type StoreResult<T> = Result<T, StoreError>;

/// A handle on the database; cheap to clone.
#[derive(Clone, Debug)]
pub struct Store {
    pool: SqlitePool,
}

/// How the database is opened.
#[derive(Debug, Clone, Default)]
pub struct StoreOptions {
    /// A quota: the database may not grow beyond this many bytes (SQLite's
    /// `max_page_count` on every connection); a write that would is refused as full.
    pub max_bytes: Option<u64>,
}

/// SQLite's default page size, which the store never changes.
pub const PAGE_SIZE: u64 = 4096;

impl Store {
    /// Open (creating if needed) the database file, check its integrity and apply
    /// migrations.
    pub async fn open(path: &Path) -> StoreResult<Store> {
        Self::open_with(path, &StoreOptions::default()).await
    }

    /// [`Store::open`] with options. A file that fails `PRAGMA quick_check` is refused
    /// with [`StoreError::Damaged`] before anything is written to it.
    pub async fn open_with(path: &Path, opts: &StoreOptions) -> StoreResult<Store> {
        let url = format!("sqlite://{}", path.display());
        let mut options = SqliteConnectOptions::from_str(&url)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(10))
            .foreign_keys(true);
        if let Some(bytes) = opts.max_bytes {
            // SQLite never lowers the limit below the current size: such a database
            // opens, and any write that needs a new page is refused.
            options = options.pragma("max_page_count", (bytes / PAGE_SIZE).max(1).to_string());
        }
        let pool = SqlitePoolOptions::new()
            .max_connections(8)
            // A write that fails with SQLITE_FULL may make SQLite roll the whole
            // transaction back on its own; sqlx's rollback on drop then fails and leaves
            // the connection counting a transaction it is not in, so its next BEGIN
            // fails. Such a connection is closed, not handed out again.
            .before_acquire(|conn, _| Box::pin(async move { Ok(!conn.is_in_transaction()) }))
            .connect_with(options)
            .await
            .map_err(|e| damaged_or(path, e))?;
        let problems = quick_check(&pool, 10).await.map_err(|e| damaged_or(path, e))?;
        if !problems.is_empty() {
            pool.close().await;
            return Err(damaged(path, &problems));
        }
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

/// `PRAGMA quick_check(limit)`: the problems found (at most `limit`), none when the
/// file is sound. It reads every page (O(size), without index cross-checks).
pub(crate) async fn quick_check<'e>(conn: impl sqlx::SqliteExecutor<'e>, limit: u32) -> Result<Vec<String>, sqlx::Error> {
    use sqlx::Row;
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!("PRAGMA quick_check({limit})"))).fetch_all(conn).await?;
    let lines: Vec<String> = rows.iter().map(|r| r.try_get::<String, _>(0)).collect::<Result<_, _>>()?;
    Ok(if lines.len() == 1 && lines[0] == "ok" { Vec::new() } else { lines })
}

fn damaged(path: &Path, problems: &[String]) -> StoreError {
    let shown = problems.iter().take(5).cloned().collect::<Vec<_>>().join("; ");
    let more = if problems.len() > 5 { format!(" (and {} more)", problems.len() - 5) } else { String::new() };
    StoreError::Damaged { path: path.display().to_string(), problems: format!("{shown}{more}") }
}

/// SQLite's "malformed" (SQLITE_CORRUPT, 11) and "not a database" (SQLITE_NOTADB, 26)
/// are a damaged file; any other error is itself.
fn damaged_or(path: &Path, e: sqlx::Error) -> StoreError {
    match sqlite_code(&e).map(|c| c & 0xff) {
        Some(11 | 26) => damaged(path, &[e.to_string()]),
        _ => StoreError::Sqlx(e),
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
