//! Topic names given by people: read with every topic listing, set or cleared by a
//! rename.
//!
//! Why it exists: a topic model's own numbering is what the API and the console use
//! (stable, never reordered), but people read names. Names live in their own table,
//! beside the immutable model blob, so renaming is a one-row write and deleting the
//! model deletes its names (foreign key, `ON DELETE CASCADE`).

use super::{now, Store, StoreResult};
use sqlx::Row;
use std::collections::HashMap;

impl Store {
    /// Every named topic of `model_id`: topic id → name.
    pub async fn topic_names(&self, model_id: &str) -> StoreResult<HashMap<usize, String>> {
        let rows = sqlx::query("SELECT topic, name FROM topic_names WHERE model_id = $1").bind(model_id).fetch_all(&self.pool).await?;
        rows.iter().map(|r| Ok((r.try_get::<i64, _>(0)? as usize, r.try_get(1)?))).collect()
    }

    /// Name topic `topic` of `model_id`, or clear its name (`None`). Returns false when
    /// the model does not exist (nothing is written).
    pub async fn set_topic_name(&self, model_id: &str, topic: usize, name: Option<&str>) -> StoreResult<bool> {
        let mut tx = self.begin_write().await?;
        let exists = sqlx::query("SELECT 1 FROM models WHERE id = $1").bind(model_id).fetch_optional(&mut *tx).await?.is_some();
        if !exists {
            return Ok(false);
        }
        match name {
            Some(name) => {
                sqlx::query(
                    "INSERT INTO topic_names (model_id, topic, name, updated_at) VALUES ($1, $2, $3, $4) \
                     ON CONFLICT (model_id, topic) DO UPDATE SET name = excluded.name, updated_at = excluded.updated_at",
                )
                .bind(model_id)
                .bind(topic as i64)
                .bind(name)
                .bind(now())
                .execute(&mut *tx)
                .await?;
            }
            None => {
                sqlx::query("DELETE FROM topic_names WHERE model_id = $1 AND topic = $2").bind(model_id).bind(topic as i64).execute(&mut *tx).await?;
            }
        }
        // Replicas that cache the model's names see they are stale.
        sqlx::query("UPDATE models SET names_generation = names_generation + 1 WHERE id = $1").bind(model_id).execute(&mut *tx).await?;
        self.announce(&mut tx, super::model_events::ModelEvent::Renamed(model_id.to_string())).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// How many times the model's topics were renamed, or `None` when the model no
    /// longer exists: what a replica's cache checks on a shared store.
    pub async fn model_names_generation(&self, model_id: &str) -> StoreResult<Option<i64>> {
        let row = sqlx::query("SELECT names_generation FROM models WHERE id = $1").bind(model_id).fetch_optional(&self.pool).await?;
        Ok(row.map(|r| r.try_get(0)).transpose()?)
    }
}
