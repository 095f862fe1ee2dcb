//! Where the store lives: what `--db` names.
//!
//! Why it exists: one flag takes either a SQLite file (the embedded default, one
//! process) or a PostgreSQL URL (a server many replicas share), and everything that
//! prints or opens the location goes through this one type. A URL's password (in its
//! user information or a `password=` parameter) is never printed: `Display`, `Debug`
//! and the parse error show it as `***` ([`redact_url`]).

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// A SQLite file or a PostgreSQL database.
#[derive(Clone, PartialEq, Eq)]
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
            return Err(format!("{:?} is neither a SQLite file nor a postgres:// URL", redact_url(s)));
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
            DbLocation::Postgres(url) => f.write_str(&redact_url(url)),
        }
    }
}

/// As derived, but without the URL's password (`ServeConfig` and the CLI's arguments
/// are `Debug`).
impl fmt::Debug for DbLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DbLocation::Sqlite(p) => f.debug_tuple("Sqlite").field(p).finish(),
            DbLocation::Postgres(url) => f.debug_tuple("Postgres").field(&redact_url(url)).finish(),
        }
    }
}

/// `url` with its password shown as `***`: the user information's
/// (`postgres://u:***@h/db`) and the value of any query parameter whose name ends in
/// `password` (`?password=***`, `sslpassword=***`). When the URL is malformed (a raw
/// `/`, `?` or `#` in the password), everything from the user's `:` to the last `@` is
/// hidden: too much is hidden rather than a password shown.
pub fn redact_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else { return url.to_string() };
    let rest = &url[scheme_end..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    // Where the user information ends (its `@`), as a URL parser reads it, or else the
    // last `@` of a malformed URL whose password holds a `/`, `?` or `#`.
    let at = authority.rfind('@').or_else(|| if authority.contains(':') { rest.rfind('@') } else { None });
    let mut out = url[..scheme_end].to_string();
    let after_userinfo = match at {
        Some(at) => {
            let userinfo = &rest[..at];
            match userinfo.find(':') {
                Some(colon) => out.push_str(&format!("{}:***", &userinfo[..colon])),
                None => out.push_str(userinfo),
            }
            &rest[at..]
        }
        None => rest,
    };
    match after_userinfo.split_once('?') {
        None => out.push_str(after_userinfo),
        Some((path, query)) => {
            out.push_str(path);
            out.push('?');
            let (query, fragment) = match query.split_once('#') {
                Some((q, f)) => (q, Some(f)),
                None => (query, None),
            };
            let pairs: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((key, _)) if percent_decoded(key).to_ascii_lowercase().ends_with("password") => format!("{key}=***"),
                    _ => pair.to_string(),
                })
                .collect();
            out.push_str(&pairs.join("&"));
            if let Some(f) = fragment {
                out.push('#');
                out.push_str(f);
            }
        }
    }
    out
}

/// A query key as a URL parser reads it (`%70assword` is `password`).
fn percent_decoded(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = match bytes[i] {
            b'%' if i + 2 < bytes.len() => std::str::from_utf8(&bytes[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok()),
            _ => None,
        };
        match hex {
            Some(b) => {
                out.push(b);
                i += 3;
            }
            None => {
                out.push(if bytes[i] == b'+' { b' ' } else { bytes[i] });
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
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

    #[test]
    fn a_password_is_never_shown() {
        let shown = |url: &str| {
            let db: DbLocation = url.parse().unwrap();
            let (display, debug) = (db.to_string(), format!("{db:?}"));
            assert!(!display.contains("secret") && !debug.contains("secret"), "{url}: {display} / {debug}");
            assert_eq!(debug, format!("Postgres({display:?})"));
            display
        };
        assert_eq!(shown("postgres://u:secret@h/db"), "postgres://u:***@h/db");
        assert_eq!(shown("postgresql://u:secret@h:5432/db?sslmode=require"), "postgresql://u:***@h:5432/db?sslmode=require");
        // `@` and `:` in the password, encoded or not.
        assert_eq!(shown("postgres://u:se%40cr:et@h/db"), "postgres://u:***@h/db");
        assert_eq!(shown("postgres://u:p@secret@h/db"), "postgres://u:***@h/db");
        // A malformed password (a raw `/`, `?` or `#`) is hidden all the same.
        assert_eq!(shown("postgres://u:se/cret@h/db"), "postgres://u:***@h/db");
        assert_eq!(shown("postgres://u:se?cret@h/db"), "postgres://u:***@h/db");
        assert_eq!(shown("postgres://u:se#cret@h/db"), "postgres://u:***@h/db");
        // A password given as a parameter.
        assert_eq!(shown("postgres://u@h/db?password=secret"), "postgres://u@h/db?password=***");
        assert_eq!(shown("postgres://h/db?user=u&PASSWORD=secret&sslmode=require"), "postgres://h/db?user=u&PASSWORD=***&sslmode=require");
        assert_eq!(shown("postgres://h/db?%70assword=secret#x"), "postgres://h/db?%70assword=***#x");
        assert_eq!(shown("postgres://h/db?sslpassword=secret"), "postgres://h/db?sslpassword=***");
        // Nothing to hide.
        assert_eq!(shown("postgres://u@h:5432/db"), "postgres://u@h:5432/db");
        assert_eq!(shown("postgres://h/db?application_name=a@b"), "postgres://h/db?application_name=a@b");
        assert_eq!(format!("{:?}", DbLocation::Sqlite("a.db".into())), r#"Sqlite("a.db")"#);
        // The parse error of a URL that is not PostgreSQL's does not repeat its password.
        let e = "mysql://u:secret@h/db".parse::<DbLocation>().unwrap_err();
        assert!(e.contains("mysql://u:***@h/db") && !e.contains("secret"), "{e}");
    }
}
