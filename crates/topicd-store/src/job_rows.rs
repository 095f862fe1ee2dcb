//! A stored job as the store reads it back: its status, its row, its trace points.
//!
//! Why it exists: the job operations (`jobs`) and the lease protocol (`leases`) both
//! read job rows; with the row's type and decoding here, `jobs` uses `leases` and
//! `leases` uses neither.

use super::family_name::{stored_name, FamilyName, StoredFamily};
use super::{seed_from_sql, StoreError, StoreResult};
use sqlx::Row;
use topicd_core::models::FailureKind;

/// What a job does: a fit produces a model; the others evaluate one and produce a
/// result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobKind {
    /// Fit a model on a corpus or a graph.
    Fit,
    /// Held-out likelihood of submitted documents under a model.
    HeldoutLikelihood,
    /// Score a supervised model's predictions on its corpus' test split.
    Evaluation,
}

impl JobKind {
    pub const ALL: [JobKind; 3] = [JobKind::Fit, JobKind::HeldoutLikelihood, JobKind::Evaluation];

    /// The stored and wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            JobKind::Fit => "fit",
            JobKind::HeldoutLikelihood => "heldout_likelihood",
            JobKind::Evaluation => "evaluation",
        }
    }

    pub fn parse(s: &str) -> Option<JobKind> {
        JobKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// A job's lifecycle state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobStatus {
    Queued,
    Running,
    Succeeded,
    Failed,
    Cancelled,
}

impl JobStatus {
    pub const ALL: [JobStatus; 5] = [JobStatus::Queued, JobStatus::Running, JobStatus::Succeeded, JobStatus::Failed, JobStatus::Cancelled];

    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Queued => "queued",
            JobStatus::Running => "running",
            JobStatus::Succeeded => "succeeded",
            JobStatus::Failed => "failed",
            JobStatus::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<JobStatus> {
        JobStatus::ALL.into_iter().find(|j| j.as_str() == s)
    }

    pub fn is_terminal(self) -> bool {
        matches!(self, JobStatus::Succeeded | JobStatus::Failed | JobStatus::Cancelled)
    }
}

/// A job row.
#[derive(Debug, Clone)]
pub struct JobRow {
    pub id: String,
    pub kind: JobKind,
    pub corpus_id: Option<String>,
    /// The family fitted (or, for an evaluation job, the evaluated model's family); an
    /// `Err` names a family this build does not register.
    pub model: StoredFamily,
    pub params: serde_json::Value,
    pub seed: u64,
    pub status: JobStatus,
    pub created_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub attempts: i64,
    pub cancel_requested: bool,
    pub progress: Option<serde_json::Value>,
    pub model_id: Option<String>,
    pub error: Option<String>,
    pub result: Option<serde_json::Value>,
    /// For evaluation jobs: the model evaluated.
    pub source_model_id: Option<String>,
    /// For fits of relational models: the graph fitted (and no corpus).
    pub graph_id: Option<String>,
    /// A fit's estimated peak memory in bytes (`None`: evaluation jobs, older jobs).
    pub memory_bytes: Option<u64>,
    /// Why a queued job was passed over at the last claim.
    pub waiting: Option<String>,
    /// The class of a failed job's failure (`invalid-input`, `store-fault`,
    /// `interrupted`, `numerical`, `internal`); `None` unless it failed.
    pub failure: Option<FailureKind>,
    /// A fit job's runner options (`threads`, `checkpoint_every_s`) as submitted;
    /// `None` for evaluation jobs and jobs queued before options left the params.
    pub options: Option<serde_json::Value>,
    /// The sweep this fit belongs to, if any.
    pub sweep_id: Option<String>,
    /// How a fit starts from the stored model `source_model_id` (an edit's plan), if
    /// it does.
    pub start: Option<serde_json::Value>,
}

impl JobRow {
    /// The stored family name, registered or not (the wire's `model`).
    pub fn model_name(&self) -> &str {
        stored_name(&self.model)
    }
}

/// One point of a job's trace: the log-likelihood at an iteration that computed one,
/// and the acceptance rates reported with it.
#[derive(Debug, Clone, PartialEq)]
pub struct TracePoint {
    pub iteration: i64,
    pub elapsed_s: f64,
    pub loglik_per_token: Option<f64>,
    /// The sampler's acceptance rates at this iteration (`{"mh_acceptance": 0.31}`), if
    /// it reported any.
    pub rates: Option<serde_json::Map<String, serde_json::Value>>,
}

pub(crate) fn json_col(r: &sqlx::any::AnyRow, col: &str) -> StoreResult<Option<serde_json::Value>> {
    let s: Option<String> = r.try_get(col)?;
    s.map(|s| serde_json::from_str(&s).map_err(|e| StoreError::Corrupt(format!("{col}: {e}")))).transpose()
}

pub(crate) fn row_to_job(r: &sqlx::any::AnyRow) -> StoreResult<JobRow> {
    let status: String = r.try_get("status")?;
    let kind: String = r.try_get("kind")?;
    let failure: Option<String> = r.try_get("failure")?;
    Ok(JobRow {
        id: r.try_get("id")?,
        kind: JobKind::parse(&kind).ok_or_else(|| StoreError::Corrupt(format!("job kind {kind}")))?,
        corpus_id: r.try_get("corpus_id")?,
        model: FamilyName::parse(&r.try_get::<String, _>("model")?),
        params: json_col(r, "params")?.unwrap_or(serde_json::Value::Null),
        seed: seed_from_sql(r.try_get("seed")?),
        status: JobStatus::parse(&status).ok_or_else(|| StoreError::Corrupt(format!("job status {status}")))?,
        created_at: r.try_get("created_at")?,
        started_at: r.try_get("started_at")?,
        finished_at: r.try_get("finished_at")?,
        attempts: r.try_get("attempts")?,
        cancel_requested: r.try_get::<i64, _>("cancel_requested")? != 0,
        progress: json_col(r, "progress")?,
        model_id: r.try_get("model_id")?,
        error: r.try_get("error")?,
        result: json_col(r, "result")?,
        source_model_id: r.try_get("source_model_id")?,
        graph_id: r.try_get("graph_id")?,
        memory_bytes: r.try_get::<Option<i64>, _>("memory_bytes")?.map(|b| b.max(0) as u64),
        waiting: r.try_get("waiting")?,
        failure: failure.map(|f| FailureKind::parse(&f).ok_or_else(|| StoreError::Corrupt(format!("job failure {f}")))).transpose()?,
        options: json_col(r, "options")?,
        sweep_id: r.try_get("sweep_id")?,
        start: json_col(r, "start")?,
    })
}

#[cfg(test)]
mod tests {
    use crate::{FamilyName, JobStatus, Store, UnknownFamily};

    #[tokio::test]
    async fn a_job_of_a_family_no_longer_registered_reads_back_as_unknown_and_still_lists() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.db")).await.unwrap();
        for (id, model) in [("known", "lda"), ("gone", "removed_family")] {
            sqlx::query(
                "INSERT INTO jobs (id, kind, model, params, seed, status, created_at) VALUES ($1, 'fit', $2, '{}', 1, 'queued', '2024-01-01T00:00:00Z')",
            )
            .bind(id)
            .bind(model)
            .execute(&store.pool)
            .await
            .unwrap();
        }
        let known = store.get_job("known").await.unwrap().expect("stored");
        assert_eq!(known.model, Ok(FamilyName::parse("lda").unwrap()));
        let gone = store.get_job("gone").await.unwrap().expect("a job of an unknown family reads back");
        assert_eq!(gone.model, Err(UnknownFamily { name: "removed_family".into() }));
        assert_eq!(gone.model_name(), "removed_family");
        let (rows, total) = store.list_jobs(Some(JobStatus::Queued), 0, 10).await.unwrap();
        assert_eq!((rows.len(), total), (2, 2));
    }
}
