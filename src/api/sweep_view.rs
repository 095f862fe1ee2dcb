//! A sweep as `GET /v1/sweeps/{id}` answers it: its status, one row per fit with the
//! fit's scores, and the suggested number of topics; and the scoring of fits that have
//! finished since the sweep was last read.
//!
//! Why it exists: the handlers in [`super::sweeps`] queue and cancel; reading a sweep
//! joins three stored things (the sweep, its jobs, their scores) into rows, decides the
//! sweep's status from its jobs', and applies [`crate::selection::suggest_topics`]. The
//! scores are computed by [`crate::selection::score_fit`] in a background task started
//! by a read (one task per process, one fit at a time, on a thread of its own, not the predict pool) and kept, so
//! each fit is scored once and no read waits for it.

use super::csv_cells::csv_text_cell;
use super::error::{ApiError, ApiResult};
use super::AppState;
use crate::corpus::Corpus;
use crate::selection::intervals::heldout_standard_error;
use crate::selection::{score_fit, suggest, ScoredRow, SweepScores, DEFAULT_HELDOUT_FRACTION};
use crate::store::{JobRow, JobStatus, SweepRow};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// One scoring task at a time in this process: a read while one runs starts none (the
/// fits it would score are being scored, or will be by a later read).
static SCORING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// What a job's kept scores say.
enum Scored {
    Scores(Box<SweepScores>),
    /// Scoring failed (the message is served as the row's `error`).
    Failed(String),
}

/// A sweep joined with its jobs and their scores.
pub struct SweepView<'a> {
    sweep: &'a SweepRow,
    jobs: &'a [JobRow],
    scores: HashMap<&'a str, Scored>,
}

impl<'a> SweepView<'a> {
    pub fn new(sweep: &'a SweepRow, jobs: &'a [JobRow], scores: &'a [(String, Value)]) -> Self {
        let scores = scores
            .iter()
            .map(|(job, v)| {
                let scored = match v.get("error").and_then(Value::as_str) {
                    Some(message) => Scored::Failed(message.to_string()),
                    None => serde_json::from_value::<SweepScores>(v.clone())
                        .map_or_else(|e| Scored::Failed(format!("stored scores do not read back: {e}")), |s| Scored::Scores(Box::new(s))),
                };
                (job.as_str(), scored)
            })
            .collect();
        SweepView { sweep, jobs, scores }
    }

    fn scores_of(&self, job: &JobRow) -> Option<&SweepScores> {
        match self.scores.get(job.id.as_str()) {
            Some(Scored::Scores(s)) => Some(s),
            _ => None,
        }
    }

    /// `queued` (no fit started), `running`, `cancelled` (a cancelled sweep once every
    /// fit has stopped), `succeeded` (every fit finished, at least one succeeded and
    /// every successful fit is scored) or `failed` (every fit finished, none succeeded).
    pub fn status(&self) -> &'static str {
        let statuses: Vec<JobStatus> = self.jobs.iter().map(|j| j.status).collect();
        if statuses.iter().all(|&s| s == JobStatus::Queued) {
            return if self.sweep.cancel_requested { "cancelled" } else { "queued" };
        }
        if statuses.iter().any(|s| !s.is_terminal()) {
            return "running";
        }
        if self.sweep.cancel_requested {
            return "cancelled";
        }
        let succeeded: Vec<&JobRow> = self.jobs.iter().filter(|j| j.status == JobStatus::Succeeded).collect();
        match succeeded.is_empty() {
            true => "failed",
            false if succeeded.iter().all(|j| self.scores.contains_key(j.id.as_str())) => "succeeded",
            false => "running",
        }
    }

    /// The K a row was asked for (`None` for the HDP row, whose K it infers).
    fn asked_topics(job: &JobRow) -> Option<usize> {
        (job.model_name() != "hdp").then(|| job.params["topics"].as_u64().map(|k| k as usize)).flatten()
    }

    fn suggestion(&self) -> Option<crate::selection::Suggestion> {
        let rows: Vec<ScoredRow> = self
            .jobs
            .iter()
            .filter_map(|j| Some((Self::asked_topics(j)?, self.scores_of(j)?)))
            .map(|(topics, s)| ScoredRow { topics, heldout: &s.heldout_documents, stability: s.stability })
            .collect();
        suggest(&rows)
    }

    fn row_json(&self, job: &JobRow) -> Value {
        let scores = self.scores_of(job);
        let inferred = job.model_name() == "hdp";
        let topics = Self::asked_topics(job).or_else(|| scores.map(|s| s.topics));
        let error = match self.scores.get(job.id.as_str()) {
            Some(Scored::Failed(message)) => Some(format!("scoring failed: {message}")),
            _ => job.error.clone(),
        };
        json!({
            "topics": topics,
            "model": job.model_name(),
            "inferred_topics": inferred,
            "status": job.status.as_str(),
            "job_id": job.id,
            "model_id": job.model_id,
            "heldout_loglik_per_token": scores.and_then(|s| s.heldout_loglik_per_token),
            "heldout_se": scores.and_then(|s| heldout_standard_error(&s.heldout_documents)),
            "heldout_documents": scores.map(|s| s.heldout_documents.len()),
            "coherence_npmi": scores.and_then(|s| s.coherence_npmi),
            "coherence_npmi_se": scores.and_then(|s| s.coherence_npmi_se),
            "exclusivity": scores.map(|s| s.exclusivity),
            "exclusivity_se": scores.and_then(|s| s.exclusivity_se),
            "stability": scores.and_then(|s| s.stability),
            "stability_se": scores.and_then(|s| s.stability_se),
            "unstable_topics": scores.and_then(|s| s.stability.map(|_| s.unstable_topics)),
            "residual_dispersion": scores.and_then(|s| s.residual_dispersion),
            "rhat_max": scores.and_then(|s| s.rhat_max),
            "fit_s": fit_seconds(job),
            "progress": job.progress.as_ref().map(|p| json!({"iteration": p["iteration"], "total": p["total"]})),
            "error": error,
        })
    }

    /// The rows: the swept family's by K, then the HDP row.
    fn ordered_jobs(&self) -> Vec<&'a JobRow> {
        let mut jobs: Vec<&JobRow> = self.jobs.iter().collect();
        jobs.sort_by_key(|j| (Self::asked_topics(j).is_none(), Self::asked_topics(j)));
        jobs
    }

    /// The full answer.
    pub fn to_json(&self) -> Value {
        let mut body = self.summary_json();
        body["rows"] = self.ordered_jobs().into_iter().map(|j| self.row_json(j)).collect();
        let suggestion = self.suggestion();
        body["suggested_topics"] = json!(suggestion.as_ref().map(|s| s.topics));
        body["suggestion"] = match &suggestion {
            Some(s) => {
                json!({"rule": s.rule, "best_topics": s.best_topics, "gap_per_token": s.gap, "standard_error": s.standard_error, "cautions": s.cautions})
            }
            None => json!({"rule": null, "best_topics": null, "gap_per_token": null, "standard_error": null, "cautions": []}),
        };
        body["coherence"] = json!({"measure": "c_npmi", "top_n": crate::selection::scores::TOP_WORDS});
        body
    }

    /// The sweep without its rows (for lists).
    pub fn summary_json(&self) -> Value {
        let r = &self.sweep.request;
        json!({
            "id": self.sweep.id,
            "corpus_id": self.sweep.corpus_id,
            "model": crate::store::family_name::stored_name(&self.sweep.model),
            "topics": r["topics"],
            "chains": r["chains"],
            "params": r["params"],
            "options": r["options"],
            "seed": r["seed"],
            "heldout_fraction": r["heldout_fraction"],
            "include_hdp": r["include_hdp"],
            "created_at": self.sweep.created_at,
            "status": self.status(),
            "jobs": self.jobs.len(),
        })
    }

    /// One line per row; numbers as written, empty where null.
    pub fn to_csv(&self) -> String {
        const COLUMNS: [&str; 18] = [
            "topics",
            "model",
            "status",
            "job_id",
            "model_id",
            "heldout_loglik_per_token",
            "coherence_npmi",
            "exclusivity",
            "stability",
            "unstable_topics",
            "residual_dispersion",
            "rhat_max",
            "fit_s",
            "error",
            "heldout_se",
            "coherence_npmi_se",
            "exclusivity_se",
            "stability_se",
        ];
        let mut out = COLUMNS.join(",");
        out.push('\n');
        for job in self.ordered_jobs() {
            let row = self.row_json(job);
            let cells: Vec<String> = COLUMNS
                .iter()
                .map(|c| match &row[*c] {
                    Value::Null => String::new(),
                    Value::String(s) => csv_text_cell(s).into_owned(),
                    v => v.to_string(),
                })
                .collect();
            out.push_str(&cells.join(","));
            out.push('\n');
        }
        out
    }
}

/// Seconds from a job's start to its end (`None` until it has ended).
fn fit_seconds(job: &JobRow) -> Option<f64> {
    let parse = |t: &Option<String>| t.as_deref().and_then(|t| humantime::parse_rfc3339(t).ok());
    let (start, end) = (parse(&job.started_at)?, parse(&job.finished_at)?);
    end.duration_since(start).ok().map(|d| d.as_secs_f64())
}

/// Start scoring the sweep's succeeded fits that have no kept scores yet, in the
/// background, unless this process is scoring already (the next read starts what is
/// left): a read never waits for scoring, it shows the rows scored so far.
/// `scores`: the sweep's kept scores, as the read found them.
pub fn score_finished(state: &AppState, sweep: &SweepRow, jobs: &[JobRow], scores: &[(String, Value)]) {
    let scored: HashSet<&str> = scores.iter().map(|(j, _)| j.as_str()).collect();
    let pending: Vec<JobRow> =
        jobs.iter().filter(|j| j.status == JobStatus::Succeeded && j.model_id.is_some() && !scored.contains(j.id.as_str())).cloned().collect();
    if pending.is_empty() {
        return;
    }
    let Ok(one_at_a_time) = SCORING.try_lock() else { return };
    let (state, sweep) = (state.clone(), sweep.clone());
    tokio::spawn(async move {
        let _one_at_a_time = one_at_a_time;
        if let Err(e) = score_pending(&state, &sweep, pending).await {
            tracing::warn!(sweep = %sweep.id, error = %e.detail, "scoring a sweep's fits failed");
        }
    });
}

/// The one thread background scoring runs on: scoring a fit of a large corpus takes
/// seconds, and on the predict pool it would hold the turn every topic, map and
/// prediction request waits for.
fn scoring_pool() -> &'static rayon::ThreadPool {
    static POOL: std::sync::OnceLock<rayon::ThreadPool> = std::sync::OnceLock::new();
    POOL.get_or_init(|| rayon::ThreadPoolBuilder::new().num_threads(1).thread_name(|_| "sweep-scoring".into()).build().expect("a one-thread pool builds"))
}

/// Score `pending` one at a time on [`scoring_pool`] and keep their scores (or why
/// scoring failed). A fit whose model or corpus was deleted stays unscored.
async fn score_pending(state: &AppState, sweep: &SweepRow, pending: Vec<JobRow>) -> ApiResult<()> {
    let Some(blob) = state.store.corpus_data(&sweep.corpus_id).await? else { return Ok(()) };
    let corpus = Arc::new(tokio::task::spawn_blocking(move || Corpus::decode(&blob)).await.map_err(ApiError::internal)?.map_err(ApiError::internal)?);
    let heldout_fraction = sweep.request["heldout_fraction"].as_f64().unwrap_or(DEFAULT_HELDOUT_FRACTION);
    for job in pending {
        let Some(model_id) = &job.model_id else { continue };
        let Ok(m) = state.models.get(&state.store, model_id).await else { continue };
        let (corpus, seed) = (corpus.clone(), job.seed);
        let scored = tokio::task::spawn_blocking(move || scoring_pool().install(|| score_fit(&*m.model, &corpus, seed, heldout_fraction)))
            .await
            .map_err(ApiError::internal)?;
        let value = match scored {
            Ok(scores) => serde_json::to_value(scores).map_err(ApiError::internal)?,
            Err(e) => json!({"error": e.to_string()}),
        };
        state.store.put_sweep_scores(&sweep.id, &job.id, &value).await?;
    }
    Ok(())
}
