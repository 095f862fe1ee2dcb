//! Where the store lives: what `--db` names.
//!
//! Why it exists: one flag takes either a SQLite file (the embedded default, one
//! process) or a PostgreSQL URL (a server many replicas share), and everything that
//! prints or opens the location goes through this one type.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// A SQLite file or a PostgreSQL database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DbLocation {
    Sqlite(PathBuf),
    /// A `postgres://` (or `postgresql://`) URL.
    Postgres(String),
}

impl FromStr for DbLocation {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if s.starts_with("postgres://") || s.starts_with("postgresql://") {
            return Ok(DbLocation::Postgres(s.to_string()));
        }
        if let Some(path) = s.strip_prefix("sqlite://") {
            return Ok(DbLocation::Sqlite(PathBuf::from(path)));
        }
        if s.is_empty() {
            return Err("must name a SQLite file or a postgres:// URL".into());
        }
        if s.contains("://") {
            return Err(format!("{s:?} is neither a SQLite file nor a postgres:// URL"));
        }
        Ok(DbLocation::Sqlite(PathBuf::from(s)))
    }
}

impl From<PathBuf> for DbLocation {
    fn from(p: PathBuf) -> Self {
        DbLocation::Sqlite(p)
    }
}

/// The file's path, or the URL without its password.
impl fmt::Display for DbLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DbLocation::Sqlite(p) => write!(f, "{}", p.display()),
            DbLocation::Postgres(url) => {
                let shown = match (url.find("://"), url.rfind('@')) {
                    (Some(scheme), Some(at)) if at > scheme => match url[scheme + 3..at].find(':') {
                        Some(colon) => format!("{}:***{}", &url[..scheme + 3 + colon], &url[at..]),
                        None => url.clone(),
                    },
                    _ => url.clone(),
                };
                f.write_str(&shown)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_sqlite_and_a_url_is_postgres_shown_without_its_password() {
        assert_eq!("topicd.db".parse::<DbLocation>().unwrap(), DbLocation::Sqlite("topicd.db".into()));
        assert_eq!("sqlite://a/b.db".parse::<DbLocation>().unwrap(), DbLocation::Sqlite("a/b.db".into()));
        let pg: DbLocation = "postgres://u:secret@h:5432/db".parse().unwrap();
        assert_eq!(pg, DbLocation::Postgres("postgres://u:secret@h:5432/db".into()));
        assert_eq!(pg.to_string(), "postgres://u:***@h:5432/db");
        assert!("mysql://x".parse::<DbLocation>().is_err());
        assert!("".parse::<DbLocation>().is_err());
    }
}
