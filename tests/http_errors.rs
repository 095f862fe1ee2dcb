//! Bad input gets a clear 4xx (problem+json naming the field, line or label) and changes
//! nothing; lifecycle conflicts get 409; cancellation stops a fit.

mod common;

use common::{appstream_docs, assert_problem, TestServer};
use serde_json::json;
use std::time::Duration;

async fn corpus_count(s: &TestServer) -> u64 {
    s.get("/v1/corpora").await.1["total"].as_u64().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_corpus_uploads_are_rejected_and_store_nothing() {
    let mut s = TestServer::start().await;
    let (st, e) = s.post_raw("/v1/corpora", "{not json", "application/json").await;
    assert_problem(st, &e, 400, None);
    let cases = [
        (json!({"documents": []}), "documents"),
        (json!({"documents": [{"text": "the and of"}]}), "documents"),
        (json!({"documents": [{"text": "good words here", "counts": {"a": 1}}]}), "documents[0]"),
        (json!({"documents": [{"counts": {"word": -1}}]}), "documents[0].counts.word"),
        (json!({"documents": [{"counts": {"word": 1.5}}]}), "documents[0].counts.word"),
        (json!({"documents": [{"id": "x", "text": "alpha"}, {"id": "x", "text": "beta"}]}), "documents[1].id"),
        (json!({"documents": [{"text": "alpha"}], "preprocess": {"max_df": 0}}), "preprocess.max_df"),
        (json!({"documents": [{"text": "alpha"}], "preprocess": {"bogus": 1}}), "preprocess"),
        (json!({"documents": [{"text": "alpha"}], "bogus": 1}), "."),
    ];
    for (body, field) in cases {
        let (st, e) = s.post("/v1/corpora", &body).await;
        assert!(st == 422 || st == 400, "{body} answered {st}: {e}");
        let got = e["field"].as_str().unwrap_or("");
        assert!(got.starts_with(field.trim_end_matches('.')) || field == ".", "{body}: field {got:?}, expected {field:?}: {e}");
        assert_eq!(e["status"], st);
    }
    let (st, e) = s.post_raw("/v1/corpora", "name,text\n", "text/csv").await;
    assert_problem(st, &e, 415, None);
    assert_eq!(corpus_count(&s).await, 0, "a rejected upload stored something");
    s.stop().await;
}

/// The problem's detail, asserting a 422 naming `field`.
fn unknown_key_detail(st: u16, e: &serde_json::Value, field: &str) -> String {
    assert_problem(st, e, 422, Some(field));
    assert_eq!(e["type"], "urn:topicd:problem:validation", "{e}");
    e["detail"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_keys_are_refused_with_the_nearest_known_key_and_store_nothing() {
    let mut s = TestServer::start().await;
    let good = json!({"text": "words about things", "labels": ["a"]});
    // A JSON body: the document's index, the key and what was meant.
    let (st, e) = s.post("/v1/corpora", &json!({"documents": [good, {"text": "more words", "lables": ["a"]}]})).await;
    let detail = unknown_key_detail(st, &e, "documents[1].lables");
    assert_eq!(detail, r#"unknown key "lables" in document 1; did you mean "labels"?"#);
    // Nothing close: the known keys, and where the rest goes.
    let (st, e) = s.post("/v1/corpora", &json!({"documents": [{"text": "words", "package": "git"}]})).await;
    let detail = unknown_key_detail(st, &e, "documents[0].package");
    assert!(detail.contains("known keys: id, text, bow, counts") && detail.contains(r#"under "meta""#), "{detail}");
    // A label-tree entry.
    let (st, e) = s.post("/v1/corpora", &json!({"documents": [good], "tree": [{"label": "a", "parnet": null}]})).await;
    assert_eq!(unknown_key_detail(st, &e, "tree[0].parnet"), r#"unknown key "parnet" in tree entry 0; did you mean "parent"?"#);
    // Nested options and the top of the body.
    let (st, e) = s.post("/v1/corpora", &json!({"documents": [good], "preprocess": {"min_dff": 2}})).await;
    assert_eq!(unknown_key_detail(st, &e, "preprocess.min_dff"), r#"unknown key "min_dff" in preprocess; did you mean "min_df"?"#);
    let (st, e) = s.post("/v1/corpora", &json!({"documents": [good], "preproces": {}})).await;
    assert_eq!(unknown_key_detail(st, &e, "preproces"), r#"unknown key "preproces"; did you mean "preprocess"?"#);

    // NDJSON: the document, its line (a tree line and a blank line come first) and the key.
    let lines = "{\"tree\": [{\"label\": \"a\"}]}\n{\"text\": \"alpha beta\", \"labels\": [\"a\"]}\n\n{\"text\": \"gamma\", \"lables\": [\"a\"]}\n{\"text\": \"delta\"}\n";
    let (st, e) = s.post_raw("/v1/corpora?name=typo", lines, "application/x-ndjson").await;
    assert_eq!(unknown_key_detail(st, &e, "documents[1].lables"), r#"unknown key "lables" in document 1 (line 4); did you mean "labels"?"#);
    assert_eq!(e["line"], 4, "{e}");
    // A typo in a tree line, inside its entries or beside them.
    let (st, e) = s.post_raw("/v1/corpora", "{\"tree\": [{\"label\": \"a\", \"parnet\": null}]}\n{\"text\": \"alpha\"}\n", "application/x-ndjson").await;
    assert_eq!(unknown_key_detail(st, &e, "tree[0].parnet"), r#"unknown key "parnet" in tree entry 0 (line 1); did you mean "parent"?"#);
    let (st, e) = s.post_raw("/v1/corpora", "{\"tree\": [], \"tre\": []}\n{\"text\": \"alpha\"}\n", "application/x-ndjson").await;
    assert_eq!(unknown_key_detail(st, &e, "tre"), r#"unknown key "tre" in the tree line (line 1); did you mean "tree"?"#);
    assert_eq!(corpus_count(&s).await, 0, "a refused upload stored something");

    // Fit params: the nearest of the family's own params.
    let cid = s.upload(json!({"documents": appstream_docs(20)})).await["id"].as_str().unwrap().to_string();
    let (st, e) = s.post("/v1/jobs", &json!({"corpus_id": cid, "model": "lda", "params": {"topcs": 3}})).await;
    let detail = unknown_key_detail(st, &e, "params.topcs");
    assert!(detail.ends_with(r#"unknown key "topcs"; did you mean "topics"?"#), "{detail}");
    let (st, e) = s.post("/v1/jobs", &json!({"corpus_id": cid, "model": "lda", "params": {"zzzz": 3}})).await;
    let detail = unknown_key_detail(st, &e, "params.zzzz");
    assert!(detail.contains("known keys: topics, alpha, beta, iterations"), "{detail}");
    let (st, e) = s.post("/v1/jobs", &json!({"corpus_id": cid, "modle": "lda"})).await;
    assert_eq!(unknown_key_detail(st, &e, "modle"), r#"unknown key "modle"; did you mean "model"?"#);
    assert_eq!(s.get("/v1/jobs").await.1["total"], 0, "a refused job was queued");

    // A graph body (its nodes and edges are plain strings and pairs: the keys are all at
    // the top).
    let (st, e) = s.post("/v1/graphs", &json!({"nodes": ["a", "b"], "edegs": [["a", "b"]]})).await;
    assert_eq!(unknown_key_detail(st, &e, "edegs"), r#"unknown key "edegs"; did you mean "edges"?"#);
    assert_eq!(s.get("/v1/graphs").await.1["total"], 0, "a refused graph was stored");
    assert_eq!(corpus_count(&s).await, 1);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn label_tree_errors_name_the_label() {
    let mut s = TestServer::start().await;
    let doc = |labels: serde_json::Value| json!({"text": "words about things", "labels": labels});
    // A cycle, an unknown parent, a label given two parents, a document label missing
    // from an explicit tree, and two paths that disagree.
    let cases = [
        json!({"documents": [doc(json!(["a"]))], "tree": [{"label": "a", "parent": "b"}, {"label": "b", "parent": "a"}]}),
        json!({"documents": [doc(json!(["a"]))], "tree": [{"label": "a", "parent": "nowhere"}]}),
        json!({"documents": [doc(json!(["a"]))], "tree": [{"label": "a", "parent": null}, {"label": "b", "parent": null}, {"label": "a", "parent": "b"}]}),
        json!({"documents": [doc(json!(["c"]))], "tree": [{"label": "a", "parent": null}]}),
        json!({"documents": [doc(json!(["x/y"])), doc(json!(["z/y"]))]}),
    ];
    for body in cases {
        let (st, e) = s.post("/v1/corpora", &body).await;
        assert_problem(st, &e, 422, None);
        assert!(e["label"].is_string() || e["detail"].as_str().unwrap().contains('"'), "names no label: {e}");
    }
    // Null parents hang under the implicit root: a forest is fine; paths build depth.
    let ok = s
        .upload(json!({"documents": [doc(json!(["x/y/z"])), doc(json!(["q"]))], "tree": [{"label": "x", "parent": null}, {"label": "y", "parent": "x"}, {"label": "z", "parent": "y"}, {"label": "q", "parent": null}]}))
        .await;
    assert_eq!(ok["num_labels"], 4);
    assert_eq!(ok["tree_depth"], 3);
    assert_eq!(corpus_count(&s).await, 1);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_jobs_are_rejected_and_queue_nothing() {
    let mut s = TestServer::start().await;
    let cid = s.upload(json!({"documents": appstream_docs(40)})).await["id"].as_str().unwrap().to_string();
    let cases = [
        (json!({"corpus_id": cid, "model": "lda", "params": {"topics": 0}}), "params.topics"),
        (json!({"corpus_id": cid, "model": "lda", "params": {"alpha": -1.0}}), "params.alpha"),
        (json!({"corpus_id": cid, "model": "lda", "params": {"beta": 0}}), "params.beta"),
        (json!({"corpus_id": cid, "model": "lda", "params": {"topicz": 3}}), "params.topicz"),
        (json!({"corpus_id": cid, "model": "lda", "params": {"iterations": 10, "burn_in": 10}}), "params.burn_in"),
        (json!({"corpus_id": cid, "model": "lda", "params": {"optimize_interval": -10}}), "params.optimize_interval"),
        (json!({"corpus_id": cid, "model": "lda", "params": {"optimize_beta": true}}), "params.optimize_beta"),
        (json!({"corpus_id": cid, "model": "lda", "params": [1]}), "params"),
        (json!({"corpus_id": cid, "model": "nope"}), "model"),
        (json!({"corpus_id": "no-such-corpus", "model": "lda"}), "corpus_id"),
        (json!({"corpus_id": cid, "model": "lda", "seed": -4}), "seed"),
        (json!({"model": "lda"}), "corpus_id"),
        // The runner's options, in `options` or (as clients always sent them) in params.
        (json!({"corpus_id": cid, "model": "lda", "params": {"threads": 5000}}), "params.threads"),
        (json!({"corpus_id": cid, "model": "lda", "options": {"threads": -1}}), "options.threads"),
        (json!({"corpus_id": cid, "model": "lda", "options": {"checkpoint_every_s": "often"}}), "options.checkpoint_every_s"),
        (json!({"corpus_id": cid, "model": "lda", "options": {"thread": 2}}), "options.thread"),
        (json!({"corpus_id": cid, "model": "lda", "options": 2}), "options"),
        (json!({"corpus_id": cid, "model": "lda", "options": {"threads": 1}, "params": {"threads": 2}}), "params.threads"),
    ];
    for (body, field) in cases {
        let (st, e) = s.post("/v1/jobs", &body).await;
        assert_problem(st, &e, 422, Some(field));
    }
    // NaN cannot be written in JSON; a literal NaN is malformed JSON.
    let (st, e) = s.post_raw("/v1/jobs", format!("{{\"corpus_id\": \"{cid}\", \"model\": \"lda\", \"params\": {{\"alpha\": NaN}}}}"), "application/json").await;
    assert_problem(st, &e, 400, None);
    let (_, jobs) = s.get("/v1/jobs").await;
    assert_eq!(jobs["total"], 0, "a rejected job was queued");
    let (st, e) = s.get("/v1/jobs/does-not-exist").await;
    assert_problem(st, &e, 404, None);
    let (st, e) = s.get("/v1/models/does-not-exist/topics").await;
    assert_problem(st, &e, 404, None);
    let (st, e) = s.get("/v1/jobs?limit=0").await;
    assert_problem(st, &e, 422, Some("query.limit"));
    let (st, e) = s.get("/v1/jobs?status=bogus").await;
    assert_problem(st, &e, 422, Some("query.status"));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_corpus_cannot_be_deleted_and_cancel_stops_a_fit() {
    let mut s = TestServer::start().await;
    let cid = s.upload(json!({"documents": appstream_docs(200)})).await["id"].as_str().unwrap().to_string();
    // Long enough that it is still running when we cancel.
    let job = s.submit(&cid, "lda", json!({"topics": 50, "iterations": 1_000_000, "loglik_every": 1000}), 1).await;
    let jid = job["id"].as_str().unwrap().to_string();
    for _ in 0..100 {
        if s.get(&format!("/v1/jobs/{jid}")).await.1["status"] == "running" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let st = s.delete(&format!("/v1/corpora/{cid}")).await;
    assert_eq!(st, 409, "deleting a corpus in use");
    let t0 = std::time::Instant::now();
    let (st, _) = s.post(&format!("/v1/jobs/{jid}/cancel"), &json!({})).await;
    assert_eq!(st, 202);
    let done = s.wait(&jid, Duration::from_secs(5)).await;
    assert_eq!(done["status"], "cancelled");
    assert!(t0.elapsed() < Duration::from_secs(3), "cancel took {:?}", t0.elapsed());
    let (st, e) = s.post(&format!("/v1/jobs/{jid}/cancel"), &json!({})).await;
    assert_problem(st, &e, 409, None);
    // A queued job (behind a running one) is cancelled at once.
    let a = s.submit(&cid, "lda", json!({"topics": 50, "iterations": 1_000_000}), 1).await;
    // Submitted in the same millisecond, `b` could be claimed before `a` (claims take the
    // oldest, ties in any order): start `b` only once `a` holds the one job slot.
    for _ in 0..100 {
        if s.get(&format!("/v1/jobs/{}", a["id"].as_str().unwrap())).await.1["status"] == "running" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let b = s.submit(&cid, "lda", json!({"topics": 5, "iterations": 5}), 1).await;
    let (st, cb) = s.post(&format!("/v1/jobs/{}/cancel", b["id"].as_str().unwrap()), &json!({})).await;
    assert_eq!(st, 202);
    assert_eq!(cb["status"], "cancelled");
    s.post(&format!("/v1/jobs/{}/cancel", a["id"].as_str().unwrap()), &json!({})).await;
    s.wait(a["id"].as_str().unwrap(), Duration::from_secs(5)).await;
    assert_eq!(s.delete(&format!("/v1/corpora/{cid}")).await, 204);
    assert_eq!(s.delete(&format!("/v1/corpora/{cid}")).await, 404);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn running_jobs_are_requeued_after_a_restart_and_finish() {
    let mut s = TestServer::start().await;
    let cid = s.upload(json!({"documents": appstream_docs(150)})).await["id"].as_str().unwrap().to_string();
    let job = s.submit(&cid, "lda", json!({"topics": 20, "iterations": 400}), 3).await;
    let jid = job["id"].as_str().unwrap().to_string();
    for _ in 0..100 {
        if s.get(&format!("/v1/jobs/{jid}")).await.1["status"] == "running" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Graceful stop re-queues the running fit; the next start runs it to completion.
    s.restart().await;
    let done = s.wait(&jid, Duration::from_secs(120)).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(done["attempts"], 2);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn body_limit_gives_413_and_operations_endpoints_answer() {
    let mut s = TestServer::start().await;
    s.stop().await;
    s.boot(|c| {
        c.max_body_mb = 1;
        c.cors_origins = vec!["http://example.test".into()];
    })
    .await;
    let big = "word ".repeat(300_000);
    let (st, e) = s.post("/v1/corpora", &json!({"documents": [{"text": big}]})).await;
    assert_problem(st, &e, 413, None);
    let (st, h) = s.get("/healthz").await;
    assert_eq!((st, h["status"].as_str()), (200, Some("ok")));
    let (st, _) = s.get("/readyz").await;
    assert_eq!(st, 200);
    let (st, ct, text) = s.get_text("/metrics").await;
    assert_eq!(st, 200);
    assert!(ct.starts_with("text/plain"));
    assert!(text.contains("topicd_jobs{status=\"queued\"} 0"), "{text}");
    assert!(text.contains("topicd_http_requests_total{method=\"POST\",route=\"/v1/corpora\",status=\"413\"} 1"), "{text}");
    assert!(text.contains("topicd_http_request_duration_seconds_bucket"));
    // CORS: a preflight from the allowed origin is answered with the origin.
    let r = s
        .client
        .request(reqwest::Method::OPTIONS, format!("{}/v1/corpora", s.base))
        .header("origin", "http://example.test")
        .header("access-control-request-method", "POST")
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers().get("access-control-allow-origin").unwrap(), "http://example.test");
    // Renaming a topic (PATCH) from that origin is allowed too.
    let r = s
        .client
        .request(reqwest::Method::OPTIONS, format!("{}/v1/models/m/topics/0", s.base))
        .header("origin", "http://example.test")
        .header("access-control-request-method", "PATCH")
        .send()
        .await
        .unwrap();
    let methods = r.headers().get("access-control-allow-methods").unwrap().to_str().unwrap().to_string();
    assert!(methods.contains("PATCH"), "{methods}");
    // Every response carries a request id.
    let r = s.client.get(format!("{}/healthz", s.base)).send().await.unwrap();
    assert!(r.headers().get("x-request-id").is_some());
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_bodies_get_problem_json_on_every_post() {
    let mut s = TestServer::start().await;
    s.stop().await;
    s.boot(|c| c.max_body_mb = 1).await;
    let big = json!({"corpus_id": "x", "model": "lda", "params": {"pad": "x".repeat(1_200_000)}});
    for path in ["/v1/jobs", "/v1/models/x/predict"] {
        let (st, e) = s.post(path, &big).await;
        assert_problem(st, &e, 413, None);
    }
    let (st, e) = s.get("/v1/models?status=running").await;
    assert_problem(st, &e, 422, Some("query.status"));
    s.stop().await;
}

/// HPC needs labels: a job on an unlabelled corpus is a 422 and queues nothing; a model
/// without a test split has no evaluation (404 problem).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hpc_needs_labels_and_evaluation_needs_a_test_split() {
    let s = TestServer::start().await;
    let corpus = s.upload(json!({"documents": [{"id": "a", "text": "apples and pears"}, {"id": "b", "text": "pears and plums"}]})).await;
    let cid = corpus["id"].as_str().unwrap().to_string();
    let (st, body) = s.post("/v1/jobs", &json!({"corpus_id": cid, "model": "hpc"})).await;
    assert_problem(st, &body, 422, Some("params"));
    assert!(body["detail"].as_str().unwrap().contains("no labels"), "{body}");
    let (_, jobs) = s.get("/v1/jobs").await;
    assert_eq!(jobs["total"], 0, "nothing was queued: {jobs}");
    let (st, body) = s.post("/v1/jobs", &json!({"corpus_id": cid, "model": "pcm", "params": {"rate_curvature": "dense"}})).await;
    assert_problem(st, &body, 422, Some("params.rate_curvature"));
    let job = s.submit(&cid, "lda", json!({"topics": 2, "iterations": 5}), 1).await;
    let done = s.wait(job["id"].as_str().unwrap(), std::time::Duration::from_secs(60)).await;
    let (st, body) = s.get(&format!("/v1/models/{}/evaluation", done["model_id"].as_str().unwrap())).await;
    assert_eq!(st, 404, "{body}");
    assert_eq!(body["title"], "No evaluation");
}
