//! `topicd backup`: a consistent copy of the server's database while it runs.
//!
//! Why it exists: operators need a file they can restore from without stopping the
//! service. The copy is made by `store::backup` (`VACUUM INTO`, checked, renamed into
//! place); this prints its one JSON line.

use crate::store::backup::backup;
use clap::Args;
use std::path::PathBuf;

/// `topicd backup` options.
#[derive(Debug, Args)]
pub struct BackupArgs {
    /// The server's SQLite database file (the same as `topicd serve --db`).
    #[arg(long, env = "TOPICD_DB", default_value = "topicd.db")]
    pub db: PathBuf,
    /// Where to write the copy. It is written beside FILE under a temporary name, checked
    /// with `PRAGMA quick_check` and renamed, so FILE is only ever a complete backup.
    #[arg(long, value_name = "FILE")]
    pub to: PathBuf,
    /// Replace FILE if it exists.
    #[arg(long)]
    pub force: bool,
}

/// Make the copy and print `{"path", "bytes", "seconds", "integrity", "tables"}`.
pub fn run(args: BackupArgs) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let named = args.db.to_string_lossy();
    if named.starts_with("postgres://") || named.starts_with("postgresql://") {
        return Err("`topicd backup` copies SQLite files; back up a PostgreSQL store with pg_dump".into());
    }
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let report = runtime.block_on(backup(&args.db, &args.to, args.force))?;
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}
