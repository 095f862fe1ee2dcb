//! Stored graphs (the inputs of relational models).

use super::{now, DeleteOutcome, Store, StoreResult};
use sqlx::Row;
use topicd_core::graph::GraphStats;

/// A graph's listing row (no blob).
#[derive(Debug, Clone)]
pub struct GraphRow {
    pub id: String,
    pub name: String,
    pub created_at: String,
    pub stats: GraphStats,
}

const COLUMNS: &str = "id, name, created_at, num_nodes, num_edges, directed, self_loops_dropped, duplicate_edges_dropped";

fn row_to_graph(r: &sqlx::any::AnyRow) -> StoreResult<GraphRow> {
    let count = |col: &str| -> StoreResult<usize> { Ok(r.try_get::<i64, _>(col)? as usize) };
    Ok(GraphRow {
        id: r.try_get("id")?,
        name: r.try_get("name")?,
        created_at: r.try_get("created_at")?,
        stats: GraphStats {
            num_nodes: count("num_nodes")?,
            num_edges: count("num_edges")?,
            directed: r.try_get::<i64, _>("directed")? != 0,
            self_loops_dropped: count("self_loops_dropped")?,
            duplicate_edges_dropped: count("duplicate_edges_dropped")?,
        },
    })
}

impl Store {
    pub async fn insert_graph(&self, id: &str, name: &str, stats: &GraphStats, data: Vec<u8>) -> StoreResult<GraphRow> {
        sqlx::query(
            "INSERT INTO graphs (id, name, created_at, num_nodes, num_edges, directed, self_loops_dropped, duplicate_edges_dropped, data)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        )
        .bind(id)
        .bind(name)
        .bind(now())
        .bind(stats.num_nodes as i64)
        .bind(stats.num_edges as i64)
        .bind(stats.directed as i64)
        .bind(stats.self_loops_dropped as i64)
        .bind(stats.duplicate_edges_dropped as i64)
        .bind(data)
        .execute(&self.pool)
        .await?;
        Ok(self.get_graph(id).await?.expect("row just inserted"))
    }

    pub async fn get_graph(&self, id: &str) -> StoreResult<Option<GraphRow>> {
        let sql = format!("SELECT {COLUMNS} FROM graphs WHERE id = $1");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(id).fetch_optional(&self.pool).await?;
        row.as_ref().map(row_to_graph).transpose()
    }

    /// Graphs newest first; returns the page and the total count.
    pub async fn list_graphs(&self, offset: i64, limit: i64) -> StoreResult<(Vec<GraphRow>, i64)> {
        let sql = format!("SELECT {COLUMNS} FROM graphs ORDER BY created_at DESC, id LIMIT $1 OFFSET $2");
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(limit).bind(offset).fetch_all(&self.pool).await?;
        let total: i64 = sqlx::query("SELECT COUNT(*) FROM graphs").fetch_one(&self.pool).await?.try_get(0)?;
        Ok((rows.iter().map(row_to_graph).collect::<StoreResult<_>>()?, total))
    }

    /// The validated graph blob.
    pub async fn graph_data(&self, id: &str) -> StoreResult<Option<Vec<u8>>> {
        let row = sqlx::query("SELECT data FROM graphs WHERE id = $1").bind(id).fetch_optional(&self.pool).await?;
        Ok(row.map(|r| r.try_get("data")).transpose()?)
    }

    /// Delete unless a queued or running job uses the graph (checked in the same
    /// transaction as the delete).
    pub async fn delete_graph(&self, id: &str) -> StoreResult<DeleteOutcome> {
        let mut tx = self.begin_write().await?;
        let users = super::active_jobs(&mut tx, "SELECT id FROM jobs WHERE graph_id = $1 AND status IN ('queued', 'running') ORDER BY created_at", id).await?;
        if !users.is_empty() {
            return Ok(DeleteOutcome::InUse(users));
        }
        let n = sqlx::query("DELETE FROM graphs WHERE id = $1").bind(id).execute(&mut *tx).await?.rows_affected();
        tx.commit().await?;
        Ok(if n == 0 { DeleteOutcome::NotFound } else { DeleteOutcome::Deleted })
    }
}
