//! Stored corpora.

use super::{now, Store, StoreResult};
use sqlx::Row;

/// A corpus' listing row (no blob).
#[derive(Debug, Clone)]
pub struct CorpusRow {
    pub id: String,
    pub name: String,
    pub created_at: String,
    pub num_documents: i64,
    pub num_terms: i64,
    pub num_tokens: i64,
    pub num_labels: i64,
    pub tree_depth: i64,
    pub num_dropped_empty: i64,
    /// JSON summary (stats, preprocessing options).
    pub summary: serde_json::Value,
}

/// What happened to a delete request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeleteOutcome {
    Deleted,
    NotFound,
    /// Jobs (queued or running) still use it.
    InUse(Vec<String>),
}

const COLUMNS: &str = "id, name, created_at, num_documents, num_terms, num_tokens, num_labels, tree_depth, num_dropped_empty, summary";

fn row_to_corpus(r: &sqlx::any::AnyRow) -> StoreResult<CorpusRow> {
    let summary: String = r.try_get("summary")?;
    Ok(CorpusRow {
        id: r.try_get("id")?,
        name: r.try_get("name")?,
        created_at: r.try_get("created_at")?,
        num_documents: r.try_get("num_documents")?,
        num_terms: r.try_get("num_terms")?,
        num_tokens: r.try_get("num_tokens")?,
        num_labels: r.try_get("num_labels")?,
        tree_depth: r.try_get("tree_depth")?,
        num_dropped_empty: r.try_get("num_dropped_empty")?,
        summary: serde_json::from_str(&summary).map_err(|e| super::StoreError::Corrupt(e.to_string()))?,
    })
}

/// A new corpus to store.
pub struct NewCorpus<'a> {
    pub id: &'a str,
    pub name: &'a str,
    pub stats: &'a topicd_core::corpus::CorpusStats,
    pub summary: serde_json::Value,
    pub data: Vec<u8>,
}

impl Store {
    pub async fn insert_corpus(&self, c: NewCorpus<'_>) -> StoreResult<CorpusRow> {
        let created = now();
        sqlx::query(
            "INSERT INTO corpora (id, name, created_at, num_documents, num_terms, num_tokens, num_labels, tree_depth, num_dropped_empty, summary, data)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
        )
        .bind(c.id)
        .bind(c.name)
        .bind(&created)
        .bind(c.stats.num_documents as i64)
        .bind(c.stats.num_terms as i64)
        .bind(c.stats.num_tokens as i64)
        .bind(c.stats.num_labels as i64)
        .bind(c.stats.tree_depth as i64)
        .bind(c.stats.num_dropped_empty as i64)
        .bind(c.summary.to_string())
        .bind(c.data)
        .execute(&self.pool)
        .await?;
        Ok(self.get_corpus(c.id).await?.expect("row just inserted"))
    }

    pub async fn get_corpus(&self, id: &str) -> StoreResult<Option<CorpusRow>> {
        let sql = format!("SELECT {COLUMNS} FROM corpora WHERE id = $1");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(id).fetch_optional(&self.pool).await?;
        row.as_ref().map(row_to_corpus).transpose()
    }

    /// Corpora newest first; returns the page and the total count.
    pub async fn list_corpora(&self, offset: i64, limit: i64) -> StoreResult<(Vec<CorpusRow>, i64)> {
        let sql = format!("SELECT {COLUMNS} FROM corpora ORDER BY created_at DESC, id LIMIT $1 OFFSET $2");
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(limit).bind(offset).fetch_all(&self.pool).await?;
        let total: i64 = sqlx::query("SELECT COUNT(*) FROM corpora").fetch_one(&self.pool).await?.try_get(0)?;
        Ok((rows.iter().map(row_to_corpus).collect::<StoreResult<_>>()?, total))
    }

    /// The processed corpus blob.
    pub async fn corpus_data(&self, id: &str) -> StoreResult<Option<Vec<u8>>> {
        let row = sqlx::query("SELECT data FROM corpora WHERE id = $1").bind(id).fetch_optional(&self.pool).await?;
        Ok(row.map(|r| r.try_get("data")).transpose()?)
    }

    /// Delete unless a queued or running job uses the corpus (checked in the same
    /// transaction as the delete).
    pub async fn delete_corpus(&self, id: &str) -> StoreResult<DeleteOutcome> {
        let mut tx = self.begin_write().await?;
        let users = super::active_jobs(&mut tx, "SELECT id FROM jobs WHERE corpus_id = $1 AND status IN ('queued', 'running') ORDER BY created_at", id).await?;
        if !users.is_empty() {
            return Ok(DeleteOutcome::InUse(users));
        }
        let n = sqlx::query("DELETE FROM corpora WHERE id = $1").bind(id).execute(&mut *tx).await?.rows_affected();
        tx.commit().await?;
        Ok(if n == 0 { DeleteOutcome::NotFound } else { DeleteOutcome::Deleted })
    }
}
