//! Turning a fit's progress callbacks into the job's stored progress and trace.

use crate::models::Progress;
use crate::store::TracePoint;
use serde_json::{json, Value};
use std::time::Instant;

/// The numeric diagnostics named as acceptance rates (`mh_acceptance`,
/// `rate_acceptance`, ...; not counts such as `merges_accepted`), if any.
fn acceptance_rates(diagnostics: &serde_json::Map<String, Value>) -> Option<serde_json::Map<String, Value>> {
    let rates: serde_json::Map<String, Value> =
        diagnostics.iter().filter(|(k, v)| k.ends_with("_acceptance") && v.is_number()).map(|(k, v)| (k.clone(), v.clone())).collect();
    (!rates.is_empty()).then_some(rates)
}

/// Accumulates progress between writes to the store.
pub struct ProgressTracker {
    started: Instant,
    threads: usize,
    latest: Option<Progress>,
    last_loglik: Option<f64>,
    pending_trace: Vec<TracePoint>,
    /// The checkpoint's iteration this attempt resumed after.
    resumed_from: Option<u64>,
    /// The last stored checkpoint: (iteration, time).
    checkpoint: Option<(u64, String)>,
    /// Why a stored checkpoint was not used.
    checkpoint_rejected: Option<String>,
}

impl ProgressTracker {
    pub fn new(threads: usize) -> Self {
        ProgressTracker {
            started: Instant::now(),
            threads,
            latest: None,
            last_loglik: None,
            pending_trace: vec![],
            resumed_from: None,
            checkpoint: None,
            checkpoint_rejected: None,
        }
    }

    /// This attempt continues a checkpoint after iteration `it`.
    pub fn resumed_from(&mut self, it: u64) {
        self.resumed_from = Some(it);
    }

    /// A checkpoint after iteration `it` was stored at `at`.
    pub fn checkpointed(&mut self, it: u64, at: String) {
        self.checkpoint = Some((it, at));
    }

    /// A stored checkpoint was not used (the fit started from iteration 0).
    pub fn checkpoint_rejected(&mut self, reason: String) {
        self.checkpoint_rejected = Some(reason);
    }

    /// A progress report: the latest for the job's `progress`, and a trace point when it
    /// carries a log-likelihood, with the acceptance rates reported beside it (so the
    /// trace keeps the cadence `loglik_every` sets, whatever a family reports between).
    pub fn record(&mut self, p: Progress) {
        if let Some(ll) = p.loglik_per_token {
            self.last_loglik = Some(ll);
            let elapsed_s = self.started.elapsed().as_secs_f64();
            let rates = acceptance_rates(&p.diagnostics);
            self.pending_trace.push(TracePoint { iteration: p.iteration as i64, elapsed_s, loglik_per_token: Some(ll), rates });
        }
        self.latest = Some(p);
    }

    /// Trace points not yet written.
    pub fn take_trace(&mut self) -> Vec<TracePoint> {
        std::mem::take(&mut self.pending_trace)
    }

    /// Points taken but not written (the database did not answer): written with the
    /// next ones.
    pub fn untake_trace(&mut self, mut points: Vec<TracePoint>) {
        points.append(&mut self.pending_trace);
        self.pending_trace = points;
    }

    /// The job's `progress` object: iteration, total, elapsed, ETA, latest
    /// log-likelihood per token and the model's own diagnostics.
    pub fn snapshot(&self) -> Value {
        let elapsed = self.started.elapsed().as_secs_f64();
        let (iteration, total, mut extra) = match &self.latest {
            Some(p) => (p.iteration, p.total, p.diagnostics.clone()),
            None => (0, 0, serde_json::Map::new()),
        };
        // Iterations done by this attempt (a resumed one started after its checkpoint).
        let done = iteration.saturating_sub(self.resumed_from.unwrap_or(0));
        let eta = (done > 0 && total >= iteration).then(|| elapsed / done as f64 * (total - iteration) as f64);
        let mut out = json!({
            "iteration": iteration,
            "total": total,
            "elapsed_s": elapsed,
            "eta_s": eta,
            "loglik_per_token": self.last_loglik,
            "threads": self.threads,
        });
        if let Value::Object(o) = &mut out {
            if let Some(it) = self.resumed_from {
                o.insert("resumed_from".into(), json!(it));
            }
            if let Some((it, at)) = &self.checkpoint {
                o.insert("checkpoint".into(), json!({"iteration": it, "at": at}));
            }
            if let Some(reason) = &self.checkpoint_rejected {
                o.insert("checkpoint_rejected".into(), json!(reason));
            }
            o.append(&mut extra);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_reports_eta_and_keeps_the_last_loglik() {
        let mut t = ProgressTracker::new(2);
        t.record(Progress { iteration: 1, total: 4, loglik_per_token: Some(-7.5), ..Default::default() });
        t.record(Progress { iteration: 2, total: 4, loglik_per_token: None, ..Default::default() });
        let s = t.snapshot();
        assert_eq!(s["iteration"], 2);
        assert_eq!(s["loglik_per_token"], -7.5);
        assert!(s["eta_s"].as_f64().unwrap() >= 0.0);
        assert_eq!(t.take_trace().len(), 1);
        assert!(t.take_trace().is_empty());
        assert!(s.get("resumed_from").is_none() && s.get("checkpoint").is_none());
    }

    /// Acceptance rates reach the trace with the log-likelihood reported beside them;
    /// counts that merely mention acceptance do not, and an iteration without a
    /// log-likelihood adds no point.
    #[test]
    fn acceptance_rates_are_kept_with_the_trace() {
        let mut t = ProgressTracker::new(1);
        let with = |pairs: &[(&str, Value)]| pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        t.record(Progress { iteration: 1, total: 3, loglik_per_token: Some(-7.0), diagnostics: with(&[("mh_acceptance", json!(0.4))]), ..Default::default() });
        t.record(Progress { iteration: 2, total: 3, diagnostics: with(&[("mh_acceptance", json!(0.1))]), ..Default::default() });
        let diagnostics = with(&[("swap_acceptance", json!(0.2)), ("merges_accepted", json!(3))]);
        t.record(Progress { iteration: 3, total: 3, loglik_per_token: Some(-6.5), diagnostics, ..Default::default() });
        let trace = t.take_trace();
        assert_eq!(trace.iter().map(|p| p.iteration).collect::<Vec<_>>(), vec![1, 3], "iteration 2 reported no log-likelihood");
        assert_eq!(trace[0].rates, Some(with(&[("mh_acceptance", json!(0.4))])));
        assert_eq!(trace[1].rates, Some(with(&[("swap_acceptance", json!(0.2))])));
        assert_eq!(t.snapshot()["loglik_per_token"], -6.5, "the last log-likelihood stays");
    }

    #[test]
    fn a_resumed_attempt_shows_where_it_resumed_and_its_last_checkpoint() {
        let mut t = ProgressTracker::new(1);
        t.resumed_from(50);
        t.record(Progress { iteration: 60, total: 100, loglik_per_token: None, ..Default::default() });
        t.checkpointed(60, "2026-01-01T00:00:00.000Z".into());
        let s = t.snapshot();
        assert_eq!(s["resumed_from"], 50);
        assert_eq!(s["checkpoint"]["iteration"], 60);
        assert_eq!(s["checkpoint"]["at"], "2026-01-01T00:00:00.000Z");
    }
}
