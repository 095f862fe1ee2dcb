//! Jobs over MPI ranks as the default build checks them: `options.ranks` is checked at
//! submit (its range, the family, a server alone on SQLite without a launcher), and a
//! world that cannot start fails its attempts with the launcher's own words and the
//! class `interrupted`. The worlds themselves run in `tests/mpi_service.rs` (feature
//! `mpi`).

mod common;

use common::{appstream_docs, assert_problem, TestServer};
use serde_json::json;
use std::time::Duration;

#[tokio::test]
async fn ranks_are_checked_at_submit() {
    let s = TestServer::start().await;
    let corpus = s.upload(json!({"documents": appstream_docs(60)})).await;
    let id = corpus["id"].as_str().unwrap();
    let s = &s;
    let submit = |model: &'static str, params: serde_json::Value, options: serde_json::Value| {
        let body = json!({"corpus_id": id, "model": model, "params": params, "options": options, "seed": 1});
        async move { s.post("/v1/jobs", &body).await }
    };
    for (model, params, options, says) in [
        ("lda", json!({"topics": 3}), json!({"ranks": 0}), "ranks"),
        ("lda", json!({"topics": 3}), json!({"ranks": 5000}), "ranks"),
        ("dcnt", json!({"topics": 3}), json!({"ranks": 2}), "does not fit over several ranks"),
        ("hpc", json!({"iterations": 4, "chains": 2}), json!({"ranks": 2}), "one chain"),
        ("hpc", json!({"iterations": 4}), json!({"ranks": 3}), "--mpi-launch"),
        ("lda", json!({"topics": 3, "chains": 2}), json!({"ranks": 2}), "--mpi-launch"),
        ("lda", json!({"topics": 3}), json!({"ranks": 2}), "--mpi-launch"),
        ("hdp", json!({"topics": 3}), json!({"ranks": 4}), "--mpi-launch"),
    ] {
        let (st, body) = submit(model, params, options.clone()).await;
        assert_problem(st, &body, 422, Some("options.ranks"));
        assert!(body["detail"].as_str().unwrap_or_default().contains(says), "{model} {options}: {body}");
    }
    // One rank is one process, on any server.
    let (st, body) = submit("lda", json!({"topics": 3, "iterations": 2}), json!({"ranks": 1})).await;
    assert_eq!(st, 202, "{body}");
    assert_eq!(body["options"]["ranks"], 1, "{body}");
    let (_, jobs) = s.get("/v1/jobs").await;
    assert_eq!(jobs["total"], 1, "nothing refused was queued: {jobs}");
}

#[tokio::test]
async fn a_world_that_cannot_start_fails_with_the_launchers_words() {
    let mut s = TestServer::start().await;
    s.stop().await;
    s.boot(|c| {
        c.mpi_launch = Some("no-such-mpi-launcher -n {ranks}".into());
        c.max_attempts = 2;
    })
    .await;
    let corpus = s.upload(json!({"documents": appstream_docs(60)})).await;
    let body = json!({"corpus_id": corpus["id"], "model": "lda", "params": {"topics": 3, "iterations": 5}, "options": {"ranks": 2}, "seed": 1});
    let (st, job) = s.post("/v1/jobs", &body).await;
    assert_eq!(st, 202, "{job}");
    let done = s.wait(job["id"].as_str().unwrap(), Duration::from_secs(60)).await;
    assert_eq!(done["status"], "failed", "{done}");
    assert_eq!(done["failure"], "interrupted", "{done}");
    let error = done["error"].as_str().unwrap_or_default();
    assert!(error.contains("could not start") && error.contains("no-such-mpi-launcher"), "the launcher's own words: {error}");
    assert_eq!(done["attempts"], 2, "retried until the attempts ran out: {done}");
}
