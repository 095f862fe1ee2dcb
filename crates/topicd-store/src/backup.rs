//! A consistent copy of a live database: `topicd backup`.
//!
//! Why it exists: the database is the only state, and a plain file copy of a WAL
//! database taken while the server writes can be torn (the main file and its `-wal`
//! at different moments). `VACUUM INTO` reads one snapshot in one read transaction,
//! which in WAL mode neither blocks the server's writers nor is blocked by them, and
//! writes a compact copy. The copy is written beside its destination under a temporary
//! name, synced, checked with `PRAGMA quick_check` and only then renamed, so a file
//! with the final name is always a complete, checked backup.

use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{ConnectOptions, Connection, Row};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What a finished backup reports.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BackupReport {
    pub path: PathBuf,
    pub bytes: u64,
    pub seconds: f64,
    /// `PRAGMA quick_check` of the copy: always "ok" in a report (a failing copy is an error).
    pub integrity: String,
    /// Rows per table in the copy.
    pub tables: BTreeMap<String, i64>,
}

#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error("no database at {0} (give the server's file with --db or TOPICD_DB)")]
    NoDatabase(PathBuf),
    #[error("{0} already exists; pass --force to replace it")]
    Exists(PathBuf),
    #[error("{0} is the database itself; back up to another file")]
    SameFile(PathBuf),
    #[error("{what}: {err}")]
    Io { what: String, err: std::io::Error },
    #[error("{what}: {err}")]
    Sqlite { what: String, err: sqlx::Error },
    #[error(
        "the copy failed its integrity check ({0}); nothing was written to the destination. Check the source with `sqlite3 FILE 'PRAGMA integrity_check'`"
    )]
    CopyDamaged(String),
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> BackupError {
    let what = what.into();
    move |err| BackupError::Io { what, err }
}

fn sql(what: impl Into<String>) -> impl FnOnce(sqlx::Error) -> BackupError {
    let what = what.into();
    move |err| BackupError::Sqlite { what, err }
}

/// Copy the database at `db` to `to`; an existing `to` is replaced only with `force`.
pub async fn backup(db: &Path, to: &Path, force: bool) -> Result<BackupReport, BackupError> {
    let started = Instant::now();
    if !db.is_file() {
        return Err(BackupError::NoDatabase(db.to_path_buf()));
    }
    if to.exists() {
        if std::fs::canonicalize(to).ok() == std::fs::canonicalize(db).ok() {
            return Err(BackupError::SameFile(to.to_path_buf()));
        }
        if !force {
            return Err(BackupError::Exists(to.to_path_buf()));
        }
    }
    let name = to
        .file_name()
        .ok_or_else(|| BackupError::Io { what: format!("{} names no file", to.display()), err: std::io::Error::from(std::io::ErrorKind::InvalidInput) })?;
    let partial = to.with_file_name(format!(".{}.partial-{}", name.to_string_lossy(), std::process::id()));
    let _ = std::fs::remove_file(&partial);
    let result = copy_and_check(db, &partial).await;
    let tables = match result {
        Ok(tables) => tables,
        Err(e) => {
            remove_partial(&partial);
            return Err(e);
        }
    };
    if let Err(e) = std::fs::rename(&partial, to) {
        remove_partial(&partial);
        return Err(io(format!("could not rename the copy to {}", to.display()))(e));
    }
    // The rename is durable once the directory is.
    if let Some(dir) = to.parent().filter(|d| !d.as_os_str().is_empty()) {
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
    let bytes = std::fs::metadata(to).map_err(io(format!("could not read {}", to.display())))?.len();
    Ok(BackupReport { path: to.to_path_buf(), bytes, seconds: started.elapsed().as_secs_f64(), integrity: "ok".into(), tables })
}

fn remove_partial(partial: &Path) {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut p = partial.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(p));
    }
}

/// `VACUUM INTO` the partial file, sync it, then check it and count its rows.
async fn copy_and_check(db: &Path, partial: &Path) -> Result<BTreeMap<String, i64>, BackupError> {
    // No journal mode or other pragma that writes: this connection only reads.
    let source = SqliteConnectOptions::new().filename(db).create_if_missing(false).busy_timeout(Duration::from_secs(30));
    let mut conn = source.connect().await.map_err(sql(format!("could not open {}", db.display())))?;
    let target = partial.to_str().ok_or_else(|| BackupError::Io {
        what: format!("{} is not valid UTF-8", partial.display()),
        err: std::io::Error::from(std::io::ErrorKind::InvalidInput),
    })?;
    sqlx::query("VACUUM INTO $1").bind(target).execute(&mut conn).await.map_err(sql(format!("could not copy {}", db.display())))?;
    conn.close().await.map_err(sql("could not close the source"))?;
    std::fs::File::open(partial).and_then(|f| f.sync_all()).map_err(io(format!("could not sync {}", partial.display())))?;

    // Checked through the store's own driver (`Any`), as the server opens it.
    sqlx::any::install_default_drivers();
    let mut copy = sqlx::AnyConnection::connect(&format!("sqlite://{}?mode=ro", partial.display()))
        .await
        .map_err(sql(format!("could not open the copy {}", partial.display())))?;
    let problems = super::quick_check(&mut copy, 10).await.map_err(|e| BackupError::CopyDamaged(e.to_string()))?;
    if !problems.is_empty() {
        return Err(BackupError::CopyDamaged(problems.join("; ")));
    }
    let names: Vec<String> = sqlx::query("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
        .fetch_all(&mut copy)
        .await
        .map_err(sql("could not list the copy's tables"))?
        .iter()
        .map(|r| r.try_get::<String, _>(0))
        .collect::<Result<_, _>>()
        .map_err(sql("could not list the copy's tables"))?;
    let mut tables = BTreeMap::new();
    for name in names {
        let quoted = name.replace('"', "\"\"");
        let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT COUNT(*) FROM \"{quoted}\"")))
            .fetch_one(&mut copy)
            .await
            .map_err(sql(format!("could not count the rows of {name}")))?;
        tables.insert(name, n);
    }
    copy.close().await.map_err(sql("could not close the copy"))?;
    Ok(tables)
}
