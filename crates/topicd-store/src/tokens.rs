//! Stored API tokens: create, list, revoke, and the lookup behind every authenticated
//! request.
//!
//! Why it exists: tokens live in the same database as everything else, so the operator
//! manages them with `topicd token …` against the file while the server runs, and a
//! revocation takes effect on the next request (each request reads its row; the read is
//! one primary-key lookup).

use super::{now, Store, StoreError, StoreResult};
use crate::auth::{self, IssuedToken, Role};
use sqlx::Row;

/// A token's row, without its secret hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRow {
    pub key: String,
    pub name: String,
    pub role: Role,
    pub created_at: String,
    pub revoked_at: Option<String>,
}

/// Who made an authenticated request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub key: String,
    pub name: String,
    pub role: Role,
}

fn parse_role(s: &str) -> StoreResult<Role> {
    s.parse().map_err(StoreError::Corrupt)
}

impl Store {
    /// Issue a token named `name` with `role`. `Ok(None)` when a live token already has
    /// that name (nothing is written).
    pub async fn create_token(&self, name: &str, role: Role) -> StoreResult<Option<(TokenRow, IssuedToken)>> {
        let issued = auth::issue();
        let created_at = now();
        let mut tx = self.begin_write().await?;
        let taken = sqlx::query("SELECT 1 FROM api_tokens WHERE name = $1 AND revoked_at IS NULL").bind(name).fetch_optional(&mut *tx).await?.is_some();
        if taken {
            return Ok(None);
        }
        sqlx::query("INSERT INTO api_tokens (key, name, role, secret_hash, created_at) VALUES ($1, $2, $3, $4, $5)")
            .bind(&issued.key)
            .bind(name)
            .bind(role.as_str())
            .bind(issued.secret_hash.to_vec())
            .bind(&created_at)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        let row = TokenRow { key: issued.key.clone(), name: name.to_string(), role, created_at, revoked_at: None };
        Ok(Some((row, issued)))
    }

    /// Every token, live and revoked, oldest first.
    pub async fn list_tokens(&self) -> StoreResult<Vec<TokenRow>> {
        let rows = sqlx::query("SELECT key, name, role, created_at, revoked_at FROM api_tokens ORDER BY created_at, key").fetch_all(&self.pool).await?;
        rows.iter()
            .map(|r| {
                Ok(TokenRow { key: r.try_get(0)?, name: r.try_get(1)?, role: parse_role(r.try_get(2)?)?, created_at: r.try_get(3)?, revoked_at: r.try_get(4)? })
            })
            .collect()
    }

    /// How many tokens are not revoked.
    pub async fn live_token_count(&self) -> StoreResult<i64> {
        Ok(sqlx::query_scalar("SELECT COUNT(*) FROM api_tokens WHERE revoked_at IS NULL").fetch_one(&self.pool).await?)
    }

    /// Revoke the live token named `name_or_key` (its name, or its key). Returns the
    /// revoked row, or `None` when no live token has that name or key.
    pub async fn revoke_token(&self, name_or_key: &str) -> StoreResult<Option<TokenRow>> {
        let mut tx = self.begin_write().await?;
        let row = sqlx::query("SELECT key, name, role, created_at FROM api_tokens WHERE (name = $1 OR key = $2) AND revoked_at IS NULL")
            .bind(name_or_key)
            .bind(name_or_key)
            .fetch_optional(&mut *tx)
            .await?;
        let Some(row) = row else { return Ok(None) };
        let revoked_at = now();
        let key: String = row.try_get(0)?;
        sqlx::query("UPDATE api_tokens SET revoked_at = $1 WHERE key = $2").bind(&revoked_at).bind(&key).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(Some(TokenRow { key, name: row.try_get(1)?, role: parse_role(row.try_get(2)?)?, created_at: row.try_get(3)?, revoked_at: Some(revoked_at) }))
    }

    /// The caller a presented token stands for: `None` for a malformed, unknown or
    /// revoked token, or a wrong secret. The secret's hash is compared in constant time.
    pub async fn authenticate(&self, token: &str) -> StoreResult<Option<Caller>> {
        let Some(presented) = auth::parse(token) else { return Ok(None) };
        let row = sqlx::query("SELECT name, role, secret_hash FROM api_tokens WHERE key = $1 AND revoked_at IS NULL")
            .bind(presented.key)
            .fetch_optional(&self.pool)
            .await?;
        let Some(row) = row else { return Ok(None) };
        let stored: Vec<u8> = row.try_get(2)?;
        if !auth::secret_matches(presented.secret, &stored) {
            return Ok(None);
        }
        Ok(Some(Caller { key: presented.key.to_string(), name: row.try_get(0)?, role: parse_role(row.try_get(1)?)? }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.db")).await.unwrap();
        (dir, store)
    }

    #[tokio::test]
    async fn a_token_authenticates_until_revoked_and_only_with_its_own_secret() {
        let (_dir, store) = store().await;
        let (row, issued) = store.create_token("ci", Role::Write).await.unwrap().unwrap();
        assert_eq!((row.name.as_str(), row.role), ("ci", Role::Write));
        let caller = store.authenticate(&issued.token).await.unwrap().expect("fresh token authenticates");
        assert_eq!(caller, Caller { key: issued.key.clone(), name: "ci".into(), role: Role::Write });

        // The same key with another token's secret is refused.
        let (_, other) = store.create_token("other", Role::Admin).await.unwrap().unwrap();
        let forged = format!("tpd_{}_{}", issued.key, auth::parse(&other.token).unwrap().secret);
        assert_eq!(store.authenticate(&forged).await.unwrap(), None);
        assert_eq!(store.authenticate("tpd_nonsense").await.unwrap(), None);

        // A live name cannot be issued twice; revoking frees it.
        assert!(store.create_token("ci", Role::Read).await.unwrap().is_none());
        assert_eq!(store.live_token_count().await.unwrap(), 2);
        let revoked = store.revoke_token("ci").await.unwrap().expect("revoked");
        assert!(revoked.revoked_at.is_some());
        assert_eq!(store.authenticate(&issued.token).await.unwrap(), None, "a revoked token still authenticates");
        assert!(store.revoke_token("ci").await.unwrap().is_none(), "revoking twice");
        assert!(store.create_token("ci", Role::Read).await.unwrap().is_some());
        // Revoke by key too; the list keeps revoked rows.
        assert!(store.revoke_token(&other.key).await.unwrap().is_some());
        let list = store.list_tokens().await.unwrap();
        assert_eq!(list.len(), 3);
        assert_eq!(list.iter().filter(|t| t.revoked_at.is_none()).count(), 1);
        assert_eq!(store.live_token_count().await.unwrap(), 1);
    }
}
