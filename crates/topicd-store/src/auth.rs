//! API tokens and roles: what a token looks like, how it is checked, what each role may do.
//!
//! Why it exists: a server reachable beyond loopback must know who may read, who may
//! write and who may delete. This module is the pure part of that (no HTTP, no SQL):
//! making a token, splitting one a client sends, hashing its secret and comparing hashes
//! in constant time, and the role order. `store::tokens` keeps the rows, `api::auth`
//! checks requests, `cli::token` is the operator's command.
//!
//! A token is `tpd_<key>_<secret>`: `key` (12 hex digits) names the row and is stored in
//! the clear, `secret` (32 random bytes, 64 hex digits) is stored only as its SHA-256.
//! The server finds the row by `key` and compares the secret's hash with the stored one
//! in constant time, so neither a lookup nor a comparison leaks how much of a guess was
//! right. The secret carries 256 bits from the operating system's generator, so a fast
//! hash is enough (a slow password hash protects low-entropy secrets, not these).

use rand::Rng;
use sha2::{Digest, Sha256};
use std::fmt;
use std::str::FromStr;
use subtle::ConstantTimeEq;

/// What a token may do; each role includes the ones before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// Every `GET`: corpora, jobs, models, topics, traces.
    Read,
    /// Also upload, fit, predict, start evaluations, cancel and rename.
    Write,
    /// Also delete corpora, graphs and models.
    Admin,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Read, Role::Write, Role::Admin];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Read => "read",
            Role::Write => "write",
            Role::Admin => "admin",
        }
    }

    /// Whether a token of this role may do what `needed` allows.
    pub fn allows(self, needed: Role) -> bool {
        self >= needed
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Role {
    type Err = String;
    fn from_str(s: &str) -> Result<Role, String> {
        Role::ALL.into_iter().find(|r| r.as_str() == s).ok_or_else(|| format!("unknown role {s:?}: expected read, write or admin"))
    }
}

const PREFIX: &str = "tpd_";
const KEY_BYTES: usize = 6;
const SECRET_BYTES: usize = 32;

/// A token as issued: shown to the operator once, never stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuedToken {
    /// The row's public key (12 hex digits).
    pub key: String,
    /// SHA-256 of the secret, the only form of it that is stored.
    pub secret_hash: [u8; 32],
    /// The whole token, `tpd_<key>_<secret>`, for the `Authorization: Bearer` header.
    pub token: String,
}

/// Make a new token from the operating system's random generator (via `rand::rng`, a
/// CSPRNG seeded from it).
pub fn issue() -> IssuedToken {
    let mut rng = rand::rng();
    let mut key = [0u8; KEY_BYTES];
    let mut secret = [0u8; SECRET_BYTES];
    rng.fill_bytes(&mut key);
    rng.fill_bytes(&mut secret);
    let key = hex(&key);
    let secret = hex(&secret);
    IssuedToken { secret_hash: hash_secret(&secret), token: format!("{PREFIX}{key}_{secret}"), key }
}

/// A token a client sent, split into its parts (not yet checked against any row).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PresentedToken<'a> {
    pub key: &'a str,
    pub secret: &'a str,
}

/// Split `tpd_<key>_<secret>`; `None` when the shape is wrong (then no row can match).
pub fn parse(token: &str) -> Option<PresentedToken<'_>> {
    let rest = token.strip_prefix(PREFIX)?;
    let (key, secret) = rest.split_once('_')?;
    let is_hex = |s: &str, n: usize| s.len() == 2 * n && s.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase());
    (is_hex(key, KEY_BYTES) && is_hex(secret, SECRET_BYTES)).then_some(PresentedToken { key, secret })
}

/// SHA-256 of a token's secret part.
pub fn hash_secret(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

/// Whether `secret` hashes to `stored`, compared in constant time.
pub fn secret_matches(secret: &str, stored: &[u8]) -> bool {
    let h = hash_secret(secret);
    stored.len() == h.len() && bool::from(h.as_slice().ct_eq(stored))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_issued_token_parses_back_and_matches_only_its_own_hash() {
        let a = issue();
        let b = issue();
        assert_ne!(a.token, b.token, "two tokens from the generator collided");
        let p = parse(&a.token).expect("issued token parses");
        assert_eq!(p.key, a.key);
        assert!(secret_matches(p.secret, &a.secret_hash));
        assert!(!secret_matches(p.secret, &b.secret_hash));
        // A one-character change of the secret no longer matches.
        let mut changed = p.secret.to_string();
        let last = if changed.ends_with('0') { '1' } else { '0' };
        changed.pop();
        changed.push(last);
        assert!(!secret_matches(&changed, &a.secret_hash));
        // A stored hash of the wrong length never matches.
        assert!(!secret_matches(p.secret, &a.secret_hash[..31]));
    }

    #[test]
    fn malformed_tokens_do_not_parse() {
        let t = issue().token;
        for bad in [
            "",
            "tpd_",
            &t[4..],                  // no prefix
            &t[..t.len() - 1],        // secret one digit short
            &format!("{t}0"),         // one digit long
            &t.to_uppercase(),        // upper-case hex and prefix
            &t.replacen('_', "-", 2), // wrong separators
            &format!("Bearer {t}"),   // header value, not the token
        ] {
            assert!(parse(bad).is_none(), "{bad:?} parsed");
        }
    }

    #[test]
    fn roles_are_ordered_and_round_trip() {
        assert!(Role::Admin.allows(Role::Write) && Role::Write.allows(Role::Read) && Role::Read.allows(Role::Read));
        assert!(!Role::Read.allows(Role::Write) && !Role::Write.allows(Role::Admin));
        for r in Role::ALL {
            assert_eq!(r.as_str().parse::<Role>().unwrap(), r);
        }
        assert!("root".parse::<Role>().unwrap_err().contains("read, write or admin"));
    }
}
