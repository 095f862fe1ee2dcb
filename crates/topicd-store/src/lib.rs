//! topicd-store, persistence: corpora, graphs, jobs, traces, samples, checkpoints,
//! models and tokens, in one SQLite file (the embedded default) or one PostgreSQL
//! database that many replicas share.
//!
//! Why it exists: this is the only crate that speaks SQL, and it knows no HTTP: the
//! service (`topicd`) reaches the database only through it, as `topicd::store`. It opens the database,
//! applies the dialect's `migrations/` on start, and offers typed operations. Every
//! state change a crash must not lose (a corpus stored, a job finished together with its
//! model) is one transaction.
//!
//! The seam: both stores go through sqlx's `Any` driver, so every query is written once
//! in the SQL both dialects share (`$N` parameters, `ON CONFLICT`, `RETURNING`), and a
//! [`Dialect`] decides the few things that differ: how the write lock is taken
//! ([`Store::begin_write`]), how the next job is claimed (`FOR UPDATE SKIP LOCKED` on
//! PostgreSQL, see `jobs`), and SQLite's file care: WAL, a busy timeout, a damaged file
//! refused at open (`PRAGMA quick_check`), a full or read-only database told apart from
//! other failures ([`StoreError::unwritable`]) and consistent copies ([`backup`]). A
//! trait with one implementation per database would have duplicated ~60 queries for
//! the sake of those few differences; the price of `Any` is one copy of a blob as it is
//! bound or read (measured in bench/README.md, "Past one machine: PostgreSQL replicas").

pub mod auth;
pub mod backup;
pub mod checkpoints;
pub mod corpora;
pub mod family_name;
pub mod graphs;
pub mod job_rows;
pub mod jobs;
pub mod leases;
pub mod model_events;
pub mod models;
pub mod sweeps;
pub mod tokens;
pub mod topic_names;

pub mod location;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{AnyPool, Connection, Executor};
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

pub use checkpoints::LoadedCheckpoint;
pub use corpora::{CorpusRow, DeleteOutcome};
pub use family_name::{FamilyName, StoredFamily, UnknownFamily};
pub use graphs::GraphRow;
pub use job_rows::{JobKind, JobRow, JobStatus, TracePoint};
pub use jobs::FitInput;
pub use leases::{Claim, LeaseRecord, MemoryRoom, Renewal, Worker};
pub use location::DbLocation;
pub use models::ModelRow;
pub use sweeps::{NewSweep, SweepRow};

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
    /// A write of a running job by a claim that no longer holds it (its lease expired
    /// and another worker took the job, or the job ended): nothing was written.
    #[error("job {0} is no longer held by this worker (its lease expired or it ended); nothing was written")]
    LeaseLost(String),
}

/// Why a write failed that is neither the request's fault nor a bug.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unwritable {
    /// The disk is full, or the database reached `--max-db-mb` (SQLITE_FULL;
    /// PostgreSQL's `disk_full`).
    Full,
    /// The file, its directory or its file system is read-only (SQLITE_READONLY;
    /// PostgreSQL's `read_only_sql_transaction`, a standby).
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
    /// Whether this error is a full or a read-only database.
    pub fn unwritable(&self) -> Option<Unwritable> {
        let e = match self {
            StoreError::Sqlx(e) => e,
            StoreError::Migrate(sqlx::migrate::MigrateError::Execute(e)) => e,
            _ => return None,
        };
        let db = e.as_database_error()?;
        if let Some(code) = sqlite_code(e) {
            // SQLite's primary result codes 13 and 8; sqlx reports the extended code.
            return match code & 0xff {
                13 => Some(Unwritable::Full),
                8 => Some(Unwritable::ReadOnly),
                _ => None,
            };
        }
        match db.code()?.as_ref() {
            "53100" => Some(Unwritable::Full),
            "25006" => Some(Unwritable::ReadOnly),
            _ => None,
        }
    }

    /// Whether the database could not be reached at all (a dropped connection, a pool
    /// that timed out): the operation may succeed when it is tried again.
    pub fn is_unreachable(&self) -> bool {
        matches!(self, StoreError::Sqlx(sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Tls(_)))
            || matches!(self, StoreError::Sqlx(sqlx::Error::Database(d)) if d.code().is_some_and(|c| c.starts_with("08") || c.starts_with("57P")))
    }
}

/// SQLite's (extended) result code of a database error; `None` for other databases.
fn sqlite_code(e: &sqlx::Error) -> Option<i32> {
    let db = e.as_database_error()?;
    db.try_downcast_ref::<sqlx::sqlite::SqliteError>()?;
    db.code()?.parse().ok()
}

pub type StoreResult<T> = Result<T, StoreError>;

/// Which SQL database the store speaks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// One file, one process: the embedded default.
    Sqlite,
    /// A server that many replicas share.
    Postgres,
}

/// A handle on the database; cheap to clone.
#[derive(Clone)]
pub struct Store {
    pool: AnyPool,
    dialect: Dialect,
    /// The PostgreSQL URL, for the model-change listener (`None` on SQLite).
    url: Option<std::sync::Arc<str>>,
}

/// As derived, but with the URL's password hidden ([`location::redact_url`]).
impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let url = self.url.as_deref().map(location::redact_url);
        f.debug_struct("Store").field("pool", &self.pool).field("dialect", &self.dialect).field("url", &url).finish()
    }
}

/// How the database is opened.
#[derive(Debug, Clone, Default)]
pub struct StoreOptions {
    /// A quota (SQLite only): the database may not grow beyond this many bytes
    /// (`max_page_count` on every connection); a write that would is refused as full.
    pub max_bytes: Option<u64>,
}

/// SQLite's default page size, which the store never changes.
pub const PAGE_SIZE: u64 = 4096;

/// The key of the PostgreSQL advisory lock that [`Store::begin_write`] takes: the
/// check-then-write transactions (queue limits, deletes of what jobs use) run one at a
/// time, as they do under SQLite's single writer.
const WRITE_LOCK_KEY: i64 = 0x7069_6364; // "picd"

impl Store {
    /// Open (creating if needed) a SQLite database file, check its integrity and apply
    /// migrations.
    pub async fn open(path: &Path) -> StoreResult<Store> {
        Self::open_with(path, &StoreOptions::default()).await
    }

    /// Open the database `--db` names: a SQLite file or a PostgreSQL URL.
    pub async fn connect(location: &DbLocation, opts: &StoreOptions) -> StoreResult<Store> {
        match location {
            DbLocation::Sqlite(path) => Self::open_with(path, opts).await,
            DbLocation::Postgres(url) => Self::open_postgres(url).await,
        }
    }

    /// [`Store::open`] with options. A file that fails `PRAGMA quick_check` is refused
    /// with [`StoreError::Damaged`] before anything is written to it.
    pub async fn open_with(path: &Path, opts: &StoreOptions) -> StoreResult<Store> {
        sqlx::any::install_default_drivers();
        let url = format!("sqlite://{}?mode=rwc", path.display());
        let options = AnyConnectOptions::from_str(&url)?;
        let mut pragmas = vec![
            "PRAGMA journal_mode = WAL".to_string(),
            "PRAGMA synchronous = NORMAL".to_string(),
            "PRAGMA busy_timeout = 10000".to_string(),
            "PRAGMA foreign_keys = ON".to_string(),
        ];
        if let Some(bytes) = opts.max_bytes {
            // SQLite never lowers the limit below the current size: such a database
            // opens, and any write that needs a new page is refused.
            pragmas.push(format!("PRAGMA max_page_count = {}", (bytes / PAGE_SIZE).max(1)));
        }
        let pool = AnyPoolOptions::new()
            .max_connections(8)
            .after_connect(move |conn, _| {
                let pragmas = pragmas.clone();
                Box::pin(async move {
                    for p in pragmas {
                        conn.execute(sqlx::AssertSqlSafe(p)).await?;
                    }
                    Ok(())
                })
            })
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
        sqlx::migrate!("../../migrations/sqlite").run(&pool).await?;
        Ok(Store { pool, dialect: Dialect::Sqlite, url: None })
    }

    /// Connect to a PostgreSQL database (which must exist) and apply its migrations;
    /// replicas starting together are safe (sqlx takes an advisory lock to migrate).
    pub async fn open_postgres(url: &str) -> StoreResult<Store> {
        sqlx::any::install_default_drivers();
        let pool = AnyPoolOptions::new()
            .max_connections(16)
            // A replica cut off from the database answers 503 in seconds, not minutes.
            .acquire_timeout(Duration::from_secs(5))
            .before_acquire(|conn, _| Box::pin(async move { Ok(!conn.is_in_transaction()) }))
            .connect(url)
            .await?;
        sqlx::migrate!("../../migrations/postgres").run(&pool).await?;
        Ok(Store { pool, dialect: Dialect::Postgres, url: Some(url.into()) })
    }

    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// Whether other processes may change the database beside this one (PostgreSQL):
    /// then what a process caches must be checked against the store.
    pub fn is_shared(&self) -> bool {
        self.dialect == Dialect::Postgres
    }

    /// A transaction that takes the write lock at once. On SQLite (`BEGIN IMMEDIATE`) a
    /// check then write (is the corpus in use? then delete it) must not start as a
    /// reader: a write committed by another connection in between would make its own
    /// write fail with SQLITE_BUSY_SNAPSHOT, which the busy timeout does not retry. On
    /// PostgreSQL a transaction-scoped advisory lock serialises the same transactions,
    /// across replicas.
    pub(crate) async fn begin_write(&self) -> StoreResult<sqlx::Transaction<'static, sqlx::Any>> {
        match self.dialect {
            Dialect::Sqlite => Ok(self.pool.begin_with("BEGIN IMMEDIATE").await?),
            Dialect::Postgres => {
                let mut tx = self.pool.begin().await?;
                sqlx::query("SELECT 1 FROM pg_advisory_xact_lock($1)").bind(WRITE_LOCK_KEY).execute(&mut *tx).await?;
                Ok(tx)
            }
        }
    }

    /// A trivial query, for readiness checks: an error when the database does not
    /// answer within 2 s (a replica cut off from PostgreSQL is not ready).
    pub async fn ping(&self) -> StoreResult<()> {
        match tokio::time::timeout(Duration::from_secs(2), sqlx::query("SELECT 1").execute(&self.pool)).await {
            Ok(answered) => answered.map(|_| ()).map_err(StoreError::from),
            Err(_) => Err(StoreError::Sqlx(sqlx::Error::PoolTimedOut)),
        }
    }

    /// Close every connection (tests that stop a store and open it again).
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// `PRAGMA quick_check(limit)`: the problems found (at most `limit`), none when the
/// file is sound. It reads every page (O(size), without index cross-checks).
pub(crate) async fn quick_check<'e>(conn: impl Executor<'e, Database = sqlx::Any>, limit: u32) -> Result<Vec<String>, sqlx::Error> {
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

/// Ids of the queued or running jobs that `query` (one `$1`: the id of what is to be
/// deleted) finds, oldest first: what makes a delete a conflict.
pub(crate) async fn active_jobs(conn: &mut sqlx::AnyConnection, query: &'static str, id: &str) -> StoreResult<Vec<String>> {
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
