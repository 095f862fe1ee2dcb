//! Request metrics for `/metrics`: counts and latency histograms per route.
//!
//! Every label comes from a closed set (a known method else `other`, a route template
//! else `unmatched`, a status code), so `/metrics` stays the same size whatever clients
//! send: a made-up method or path cannot become a series of its own.

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Histogram bucket upper bounds, seconds.
const BUCKETS: [f64; 12] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0];

#[derive(Debug, Default, Clone)]
struct Series {
    count: u64,
    sum: f64,
    buckets: [u64; BUCKETS.len()],
}

/// Per (method, route, status) request series.
#[derive(Debug, Default)]
pub struct HttpMetrics {
    series: Mutex<BTreeMap<(String, String, u16), Series>>,
}

impl HttpMetrics {
    pub fn observe(&self, method: &str, route: &str, status: u16, seconds: f64) {
        let mut map = self.series.lock().expect("metrics lock");
        let s = map.entry((method.to_string(), route.to_string(), status)).or_default();
        s.count += 1;
        s.sum += seconds;
        for (i, &b) in BUCKETS.iter().enumerate() {
            if seconds <= b {
                s.buckets[i] += 1;
            }
        }
    }

    /// Prometheus text exposition of the request series.
    pub fn render(&self, out: &mut String) {
        let map = self.series.lock().expect("metrics lock");
        out.push_str("# HELP topicd_http_requests_total HTTP requests by method, route and status.\n# TYPE topicd_http_requests_total counter\n");
        for ((m, r, st), s) in map.iter() {
            let _ = writeln!(out, "topicd_http_requests_total{{method=\"{m}\",route=\"{r}\",status=\"{st}\"}} {}", s.count);
        }
        out.push_str("# HELP topicd_http_request_duration_seconds Request latency.\n# TYPE topicd_http_request_duration_seconds histogram\n");
        let mut by_route: BTreeMap<(String, String), Series> = BTreeMap::new();
        for ((m, r, _), s) in map.iter() {
            let agg = by_route.entry((m.clone(), r.clone())).or_default();
            agg.count += s.count;
            agg.sum += s.sum;
            for i in 0..BUCKETS.len() {
                agg.buckets[i] += s.buckets[i];
            }
        }
        for ((m, r), s) in by_route {
            for (i, b) in BUCKETS.iter().enumerate() {
                let _ = writeln!(out, "topicd_http_request_duration_seconds_bucket{{method=\"{m}\",route=\"{r}\",le=\"{b}\"}} {}", s.buckets[i]);
            }
            let _ = writeln!(out, "topicd_http_request_duration_seconds_bucket{{method=\"{m}\",route=\"{r}\",le=\"+Inf\"}} {}", s.count);
            let _ = writeln!(out, "topicd_http_request_duration_seconds_sum{{method=\"{m}\",route=\"{r}\"}} {}", s.sum);
            let _ = writeln!(out, "topicd_http_request_duration_seconds_count{{method=\"{m}\",route=\"{r}\"}} {}", s.count);
        }
    }
}

/// The methods recorded by name; any other is `other`.
const KNOWN_METHODS: [&str; 7] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/// A request's method as a metrics label: one of [`KNOWN_METHODS`], else `other`.
fn method_label(method: &axum::http::Method) -> &'static str {
    KNOWN_METHODS.iter().find(|m| **m == method.as_str()).copied().unwrap_or("other")
}

/// Middleware: time every request and record it under its route template.
pub async fn record(State(metrics): State<Arc<HttpMetrics>>, req: Request, next: Next) -> Response {
    let start = Instant::now();
    let method = method_label(req.method());
    let route = req.extensions().get::<MatchedPath>().map(|p| p.as_str().to_string()).unwrap_or_else(|| "unmatched".into());
    let resp = next.run(req).await;
    metrics.observe(method, &route, resp.status().as_u16(), start.elapsed().as_secs_f64());
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_is_cumulative() {
        let m = HttpMetrics::default();
        m.observe("GET", "/x", 200, 0.003);
        m.observe("GET", "/x", 500, 0.2);
        let mut s = String::new();
        m.render(&mut s);
        assert!(s.contains("topicd_http_requests_total{method=\"GET\",route=\"/x\",status=\"200\"} 1"));
        assert!(s.contains("le=\"0.005\"} 1"));
        assert!(s.contains("le=\"0.25\"} 2"));
        assert!(s.contains("le=\"+Inf\"} 2"));
    }

    #[test]
    fn made_up_methods_share_one_label() {
        for m in ["GET", "DELETE", "OPTIONS"] {
            assert_eq!(method_label(&m.parse().unwrap()), m);
        }
        assert_eq!(method_label(&"FROBNICATE".parse().unwrap()), "other");
        assert_eq!(method_label(&"get".parse().unwrap()), "other", "methods are case-sensitive");
    }
}
