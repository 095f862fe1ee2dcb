//! Turning a fit's progress callbacks into the job's stored progress and trace.

use crate::models::Progress;
use crate::store::TracePoint;
use serde_json::{json, Value};
use std::time::Instant;

/// Accumulates progress between writes to the store.
pub struct ProgressTracker {
    started: Instant,
    threads: usize,
    latest: Option<Progress>,
    last_loglik: Option<f64>,
    pending_trace: Vec<TracePoint>,
}

impl ProgressTracker {
    pub fn new(threads: usize) -> Self {
        ProgressTracker { started: Instant::now(), threads, latest: None, last_loglik: None, pending_trace: vec![] }
    }

    pub fn record(&mut self, p: Progress) {
        if let Some(ll) = p.loglik_per_token {
            self.last_loglik = Some(ll);
            self.pending_trace.push(TracePoint {
                iteration: p.iteration as i64,
                elapsed_s: self.started.elapsed().as_secs_f64(),
                loglik_per_token: Some(ll),
            });
        }
        self.latest = Some(p);
    }

    /// Trace points not yet written.
    pub fn take_trace(&mut self) -> Vec<TracePoint> {
        std::mem::take(&mut self.pending_trace)
    }

    /// The job's `progress` object: iteration, total, elapsed, ETA, latest
    /// log-likelihood per token and the model's own diagnostics.
    pub fn snapshot(&self) -> Value {
        let elapsed = self.started.elapsed().as_secs_f64();
        let (iteration, total, mut extra) = match &self.latest {
            Some(p) => (p.iteration, p.total, p.diagnostics.clone()),
            None => (0, 0, serde_json::Map::new()),
        };
        let eta = (iteration > 0 && total >= iteration).then(|| elapsed / iteration as f64 * (total - iteration) as f64);
        let mut out = json!({
            "iteration": iteration,
            "total": total,
            "elapsed_s": elapsed,
            "eta_s": eta,
            "loglik_per_token": self.last_loglik,
            "threads": self.threads,
        });
        if let Value::Object(o) = &mut out {
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
        t.record(Progress { iteration: 1, total: 4, loglik_per_token: Some(-7.5), diagnostics: Default::default() });
        t.record(Progress { iteration: 2, total: 4, loglik_per_token: None, diagnostics: Default::default() });
        let s = t.snapshot();
        assert_eq!(s["iteration"], 2);
        assert_eq!(s["loglik_per_token"], -7.5);
        assert!(s["eta_s"].as_f64().unwrap() >= 0.0);
        assert_eq!(t.take_trace().len(), 1);
        assert!(t.take_trace().is_empty());
    }
}
