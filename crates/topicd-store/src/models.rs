//! Stored fitted models.

use super::family_name::stored_name;
use super::{now, seed_from_sql, seed_to_sql, FamilyName, Store, StoreError, StoreResult, StoredFamily};
use sqlx::Row;

/// A model's listing row (no blobs).
#[derive(Debug, Clone)]
pub struct ModelRow {
    pub id: String,
    pub job_id: String,
    /// The corpus a topic model was fitted on.
    pub corpus_id: Option<String>,
    /// The graph a relational model was fitted on.
    pub graph_id: Option<String>,
    /// The family fitted; an `Err` names a family this build does not register.
    pub family: StoredFamily,
    pub params: serde_json::Value,
    pub seed: u64,
    pub created_at: String,
    pub num_topics: i64,
    pub diagnostics: serde_json::Value,
    /// The model this one was made from (an edit), if any.
    pub parent_model_id: Option<String>,
    /// How it was made from its parent (the edit's operations and each topic's origin).
    pub derivation: Option<serde_json::Value>,
    /// The corpora its documents came from, in order (an updated model's parent's
    /// corpora, then the new one's); empty for a relational model.
    pub corpus_ids: Vec<String>,
    /// How many documents it holds (`None` for a relational model).
    pub num_documents: Option<i64>,
}

impl ModelRow {
    /// The stored family name, registered or not (the wire's `model`).
    pub fn family_name(&self) -> &str {
        stored_name(&self.family)
    }
}

/// A fitted model to store.
pub struct NewModel<'a> {
    pub id: &'a str,
    /// The fit job's claim: the model is stored only while it holds the job.
    pub claim: &'a super::Claim,
    pub input: super::jobs::FitInput<'a>,
    pub family: FamilyName,
    pub params: &'a serde_json::Value,
    pub seed: u64,
    pub num_topics: usize,
    pub diagnostics: &'a serde_json::Value,
    /// Topic models' vocabulary and preprocessing; `None` for relational models.
    pub lexicon: Option<&'a [u8]>,
    pub data: &'a [u8],
    /// Names the model's topics start with (seeded topics' names), stored with it.
    pub topic_names: &'a [(usize, String)],
    /// The model it was made from, and how (an edit's record).
    pub parent: Option<(&'a str, &'a serde_json::Value)>,
    /// The corpora its documents came from, in order (empty for a relational model).
    pub corpus_ids: &'a [String],
    /// How many documents it holds (`None` for a relational model).
    pub num_documents: Option<usize>,
}

const COLUMNS: &str =
    "id, job_id, corpus_id, graph_id, family, params, seed, created_at, num_topics, diagnostics, parent_model_id, derivation, corpus_ids, num_documents";

fn row_to_model(r: &sqlx::any::AnyRow) -> StoreResult<ModelRow> {
    let parse = |col: &str| -> StoreResult<serde_json::Value> {
        let s: String = r.try_get(col)?;
        serde_json::from_str(&s).map_err(|e| StoreError::Corrupt(format!("{col}: {e}")))
    };
    Ok(ModelRow {
        id: r.try_get("id")?,
        job_id: r.try_get("job_id")?,
        corpus_id: r.try_get("corpus_id")?,
        graph_id: r.try_get("graph_id")?,
        family: FamilyName::parse(&r.try_get::<String, _>("family")?),
        params: parse("params")?,
        seed: seed_from_sql(r.try_get("seed")?),
        created_at: r.try_get("created_at")?,
        num_topics: r.try_get("num_topics")?,
        diagnostics: parse("diagnostics")?,
        parent_model_id: r.try_get("parent_model_id")?,
        derivation: super::job_rows::json_col(r, "derivation")?,
        corpus_ids: match super::job_rows::json_col(r, "corpus_ids")? {
            Some(ids) => serde_json::from_value(ids).map_err(|e| StoreError::Corrupt(format!("corpus_ids: {e}")))?,
            None => Vec::new(),
        },
        num_documents: r.try_get("num_documents")?,
    })
}

impl Store {
    /// Store the model, mark its job succeeded and drop its checkpoint, in one
    /// transaction, while the fit's claim holds the job: after a crash either all
    /// happened or none did (and the job resumes), and a worker that lost its lease
    /// stores nothing ([`super::StoreError::LeaseLost`]).
    pub async fn complete_job_with_model(&self, m: NewModel<'_>) -> StoreResult<()> {
        let mut tx = self.begin_fenced().await?;
        self.fence(&mut tx, m.claim).await?;
        let job_id = m.claim.job_id.as_str();
        let created = now();
        let (corpus_id, graph_id) = m.input.columns();
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "INSERT INTO models ({COLUMNS}, lexicon, data) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)"
        )))
        .bind(m.id)
        .bind(job_id)
        .bind(corpus_id)
        .bind(graph_id)
        .bind(m.family.as_str())
        .bind(m.params.to_string())
        .bind(seed_to_sql(m.seed))
        .bind(&created)
        .bind(m.num_topics as i64)
        .bind(m.diagnostics.to_string())
        .bind(m.parent.map(|(id, _)| id))
        .bind(m.parent.map(|(_, derivation)| derivation.to_string()))
        .bind((!m.corpus_ids.is_empty()).then(|| serde_json::to_string(m.corpus_ids).expect("strings serialise")))
        .bind(m.num_documents.map(|n| n as i64))
        .bind(m.lexicon)
        .bind(m.data)
        .execute(&mut *tx)
        .await?;
        for (topic, name) in m.topic_names {
            sqlx::query("INSERT INTO topic_names (model_id, topic, name, updated_at) VALUES ($1, $2, $3, $4)")
                .bind(m.id)
                .bind(*topic as i64)
                .bind(name)
                .bind(&created)
                .execute(&mut *tx)
                .await?;
        }
        sqlx::query("UPDATE jobs SET status = 'succeeded', finished_at = $1, model_id = $2, error = NULL, lease_owner = NULL WHERE id = $3")
            .bind(&created)
            .bind(m.id)
            .bind(job_id)
            .execute(&mut *tx)
            .await?;
        super::checkpoints::delete_in(&mut tx, job_id).await?;
        super::leases::end_hold(&mut tx, job_id, m.claim.attempt, "succeeded", Some(super::leases::now_ms())).await?;
        tx.commit().await?;
        Ok(())
    }

    pub async fn get_model(&self, id: &str) -> StoreResult<Option<ModelRow>> {
        let sql = format!("SELECT {COLUMNS} FROM models WHERE id = $1");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(id).fetch_optional(&self.pool).await?;
        row.as_ref().map(row_to_model).transpose()
    }

    pub async fn list_models(&self, offset: i64, limit: i64) -> StoreResult<(Vec<ModelRow>, i64)> {
        let sql = format!("SELECT {COLUMNS} FROM models ORDER BY created_at DESC, id LIMIT $1 OFFSET $2");
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(limit).bind(offset).fetch_all(&self.pool).await?;
        let total: i64 = sqlx::query("SELECT COUNT(*) FROM models").fetch_one(&self.pool).await?.try_get(0)?;
        Ok((rows.iter().map(row_to_model).collect::<StoreResult<_>>()?, total))
    }

    /// The models made from `id` (edits and updates), oldest first.
    pub async fn model_children(&self, id: &str) -> StoreResult<Vec<ModelRow>> {
        let sql = format!("SELECT {COLUMNS} FROM models WHERE parent_model_id = $1 ORDER BY created_at, id");
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(id).fetch_all(&self.pool).await?;
        rows.iter().map(row_to_model).collect()
    }

    /// The size in bytes of the model's stored data (`None` when there is no such
    /// model): what a fit from it keeps in memory beside its own state.
    pub async fn model_data_bytes(&self, id: &str) -> StoreResult<Option<u64>> {
        let row = sqlx::query("SELECT CAST(length(data) AS BIGINT) FROM models WHERE id = $1").bind(id).fetch_optional(&self.pool).await?;
        row.map(|r| Ok(r.try_get::<i64, _>(0)?.max(0) as u64)).transpose()
    }

    /// The model's blobs: (family, lexicon (topic models only), data).
    pub async fn model_blobs(&self, id: &str) -> StoreResult<Option<(StoredFamily, Option<Vec<u8>>, Vec<u8>)>> {
        let row = sqlx::query("SELECT family, lexicon, data FROM models WHERE id = $1").bind(id).fetch_optional(&self.pool).await?;
        row.map(|r| Ok((FamilyName::parse(&r.try_get::<String, _>(0)?), r.try_get(1)?, r.try_get(2)?))).transpose()
    }

    /// Delete a model unless a queued or running evaluation job reads it.
    pub async fn delete_model(&self, id: &str) -> StoreResult<super::DeleteOutcome> {
        let mut tx = self.begin_write().await?;
        let users =
            super::active_jobs(&mut tx, "SELECT id FROM jobs WHERE source_model_id = $1 AND status IN ('queued', 'running') ORDER BY created_at", id).await?;
        if !users.is_empty() {
            return Ok(super::DeleteOutcome::InUse(users));
        }
        // A checkpoint of the job that made it (normally gone with the job's success).
        sqlx::query("DELETE FROM checkpoints WHERE job_id IN (SELECT job_id FROM models WHERE id = $1)").bind(id).execute(&mut *tx).await?;
        let n = sqlx::query("DELETE FROM models WHERE id = $1").bind(id).execute(&mut *tx).await?.rows_affected();
        self.announce(&mut tx, super::model_events::ModelEvent::Deleted(id.to_string())).await?;
        tx.commit().await?;
        Ok(if n == 0 { super::DeleteOutcome::NotFound } else { super::DeleteOutcome::Deleted })
    }
}
