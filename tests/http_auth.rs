//! Tokens, roles and limits over HTTP: what each role may do, what a missing, wrong or
//! revoked token gets, which paths stay open, and the 429s and 503 of the limits, each
//! naming its flag.

mod common;

use common::{appstream_docs, TestServer};
use reqwest::Method;
use serde_json::{json, Value};
use std::time::Duration;
use topicd::api::auth::AuthMode;
use topicd::auth::Role;
use topicd::store::Store;

struct Answer {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: Value,
}

async fn call(s: &TestServer, method: Method, path: &str, token: Option<&str>, body: Option<&Value>) -> Answer {
    let mut r = s.client.request(method, format!("{}{path}", s.base));
    if let Some(t) = token {
        r = r.bearer_auth(t);
    }
    if let Some(b) = body {
        r = r.json(b);
    }
    let r = r.send().await.expect("request");
    let (status, headers) = (r.status().as_u16(), r.headers().clone());
    let text = r.text().await.unwrap();
    Answer { status, headers, body: serde_json::from_str(&text).unwrap_or(Value::String(text)) }
}

fn assert_problem(a: &Answer, status: u16) {
    assert_eq!(a.status, status, "{}", a.body);
    assert_eq!(a.headers["content-type"], "application/problem+json");
    assert_eq!(a.body["status"], status);
}

/// Issue a token straight into the server's database (what `topicd token create` does).
async fn issue(s: &TestServer, name: &str, role: Role) -> String {
    let store = Store::open(&s.db()).await.unwrap();
    store.create_token(name, role).await.unwrap().expect("fresh name").1.token
}

async fn server_requiring_tokens(adjust: impl FnOnce(&mut topicd::config::ServeConfig)) -> TestServer {
    let mut s = TestServer::start().await;
    s.stop().await;
    s.boot(|c| {
        c.auth = Some(AuthMode::Required);
        c.cors_origins = vec!["http://console.example".into()];
        adjust(c)
    })
    .await;
    s
}

#[tokio::test]
async fn each_role_does_what_it_may_and_no_more() {
    let s = server_requiring_tokens(|_| {}).await;
    let (read, write, admin) = (issue(&s, "r", Role::Read).await, issue(&s, "w", Role::Write).await, issue(&s, "a", Role::Admin).await);
    let corpus = json!({"documents": appstream_docs(30)});

    // Open paths need no token; /metrics does unless --public-metrics.
    for open in ["/healthz", "/readyz", "/openapi.json", "/", "/console/js/main.js"] {
        assert_eq!(call(&s, Method::GET, open, None, None).await.status, 200, "{open}");
    }
    assert_eq!(call(&s, Method::GET, "/metrics", None, None).await.status, 401);
    assert_eq!(call(&s, Method::GET, "/metrics", Some(&read), None).await.status, 200);

    // No token, a malformed one, an unknown one: 401 with a Bearer challenge.
    let none = call(&s, Method::GET, "/v1/corpora", None, None).await;
    assert_problem(&none, 401);
    assert_eq!(none.headers["www-authenticate"], r#"Bearer realm="topicd""#);
    assert!(none.body["detail"].as_str().unwrap().contains("topicd token create"));
    // The token with its last character changed (to '0', or to '1' if it already ends
    // in '0': a fixed '0' forged nothing for one token in sixteen and the test flaked).
    let swapped = if read.ends_with('0') { '1' } else { '0' };
    let forged = format!("{}{swapped}", &read[..read.len() - 1]);
    for bad in ["nonsense", forged.as_str()] {
        let a = call(&s, Method::GET, "/v1/corpora", Some(bad), None).await;
        assert_problem(&a, 401);
        assert!(a.headers["www-authenticate"].to_str().unwrap().contains("invalid_token"));
    }
    // A refused upload stores nothing.
    assert_problem(&call(&s, Method::POST, "/v1/corpora", None, Some(&corpus)).await, 401);

    // read: GET only.
    assert_eq!(call(&s, Method::GET, "/v1/corpora", Some(&read), None).await.status, 200);
    let denied = call(&s, Method::POST, "/v1/corpora", Some(&read), Some(&corpus)).await;
    assert_problem(&denied, 403);
    assert!(denied.body["detail"].as_str().unwrap().contains("needs role write"), "{}", denied.body);
    assert_eq!(call(&s, Method::GET, "/v1/corpora", Some(&read), None).await.body["total"], 0, "a forbidden upload stored a corpus");

    // write: uploads, not deletes.
    let up = call(&s, Method::POST, "/v1/corpora", Some(&write), Some(&corpus)).await;
    assert_eq!(up.status, 201, "{}", up.body);
    let id = up.body["id"].as_str().unwrap().to_string();
    let del = call(&s, Method::DELETE, &format!("/v1/corpora/{id}"), Some(&write), None).await;
    assert_problem(&del, 403);
    assert!(del.body["detail"].as_str().unwrap().contains("needs role admin"));

    // admin: deletes.
    assert_eq!(call(&s, Method::DELETE, &format!("/v1/corpora/{id}"), Some(&admin), None).await.status, 204);

    // A revoked token stops working on the next request, while the server runs.
    let store = Store::open(&s.db()).await.unwrap();
    store.revoke_token("w").await.unwrap().expect("w was live");
    assert_problem(&call(&s, Method::GET, "/v1/corpora", Some(&write), None).await, 401);

    // A CORS preflight for a request with the header passes without a token.
    let pre = s
        .client
        .request(Method::OPTIONS, format!("{}/v1/corpora", s.base))
        .header("origin", "http://console.example")
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "authorization,content-type")
        .send()
        .await
        .unwrap();
    assert_eq!(pre.status().as_u16(), 200);
    assert!(pre.headers()["access-control-allow-headers"].to_str().unwrap().to_lowercase().contains("authorization"));
}

#[tokio::test]
async fn without_tokens_beyond_loopback_the_server_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = topicd::config::ServeConfig::for_tests(dir.path().join("t.db"));
    config.addr = "0.0.0.0:0".parse().unwrap();
    config.auth = Some(AuthMode::Off);
    let err = topicd::api::start(&config).await.err().expect("refused").to_string();
    assert!(err.contains("--insecure-no-auth"), "{err}");
    // The default there is to require tokens, and the insecure flag allows `off`.
    config.auth = None;
    let server = topicd::api::start(&config).await.expect("starts requiring tokens");
    let url = format!("http://127.0.0.1:{}/v1/corpora", server.addr.port());
    assert_eq!(reqwest::get(&url).await.unwrap().status().as_u16(), 401);
    server.stop().await;
    config.auth = Some(AuthMode::Off);
    config.insecure_no_auth = true;
    let server = topicd::api::start(&config).await.expect("starts with --insecure-no-auth");
    let url = format!("http://127.0.0.1:{}/v1/corpora", server.addr.port());
    assert_eq!(reqwest::get(&url).await.unwrap().status().as_u16(), 200);
    server.stop().await;
}

#[tokio::test]
async fn full_queues_answer_429_naming_the_limit_and_store_nothing() {
    let s = server_requiring_tokens(|c| c.max_queued_jobs_per_token = 0).await;
    let write = issue(&s, "w", Role::Write).await;
    let up = call(&s, Method::POST, "/v1/corpora", Some(&write), Some(&json!({"documents": appstream_docs(30)}))).await;
    let corpus_id = up.body["id"].as_str().unwrap().to_string();
    let job = json!({"corpus_id": corpus_id, "model": "lda", "params": {"topics": 2, "iterations": 5}});
    let a = call(&s, Method::POST, "/v1/jobs", Some(&write), Some(&job)).await;
    assert_problem(&a, 429);
    assert_eq!(a.body["limit"], "max-queued-jobs-per-token");
    assert!(a.headers["retry-after"].to_str().unwrap().parse::<u64>().unwrap() >= 1);
    assert_eq!(call(&s, Method::GET, "/v1/jobs", Some(&write), None).await.body["total"], 0);

    let mut s = s;
    s.stop().await;
    s.boot(|c| {
        c.auth = Some(AuthMode::Required);
        c.max_queued_jobs = 0;
    })
    .await;
    let a = call(&s, Method::POST, "/v1/jobs", Some(&write), Some(&job)).await;
    assert_problem(&a, 429);
    assert_eq!(a.body["limit"], "max-queued-jobs");
}

#[tokio::test]
async fn a_client_over_its_rate_gets_429_and_others_and_health_checks_do_not() {
    let s = server_requiring_tokens(|c| {
        c.rate_limit_per_s = 1;
        c.rate_limit_burst = 3;
    })
    .await;
    let (a, b) = (issue(&s, "a", Role::Read).await, issue(&s, "b", Role::Read).await);
    // GCRA with 1/s and a burst of 3: three requests at once pass, the fourth within the
    // same second does not (the test's requests take milliseconds, far under 1 s).
    for _ in 0..3 {
        assert_eq!(call(&s, Method::GET, "/v1/corpora", Some(&a), None).await.status, 200);
    }
    let over = call(&s, Method::GET, "/v1/corpora", Some(&a), None).await;
    assert_problem(&over, 429);
    assert_eq!(over.body["limit"], "rate-limit-per-s");
    assert_eq!(over.headers["retry-after"], "1");
    assert_eq!(call(&s, Method::GET, "/v1/corpora", Some(&b), None).await.status, 200, "another token has its own budget");
    for _ in 0..10 {
        assert_eq!(call(&s, Method::GET, "/healthz", None, None).await.status, 200);
    }
}

#[tokio::test]
async fn a_slow_request_is_a_503_and_oversized_ones_are_422s_naming_their_limit() {
    let mut s = TestServer::start().await;
    let cid = s.upload(json!({"documents": appstream_docs(60)})).await["id"].as_str().unwrap().to_string();
    let job = s.submit(&cid, "lda", json!({"topics": 4, "iterations": 20}), 1).await;
    let done = s.wait(job["id"].as_str().unwrap(), Duration::from_secs(120)).await;
    let model = done["model_id"].as_str().unwrap().to_string();
    s.stop().await;
    s.boot(|c| c.request_timeout_s = 0.05).await;
    // 60 documents × 10 000 fold-in sweeps take seconds, two orders above the 50 ms limit.
    let docs: Vec<Value> = appstream_docs(60).into_iter().map(|d| json!({"text": d["text"]})).collect();
    let body = json!({"documents": docs, "iterations": 10000});
    let a = call(&s, Method::POST, &format!("/v1/models/{model}/predict"), None, Some(&body)).await;
    assert_problem(&a, 503);
    assert_eq!(a.body["limit"], "request-timeout-s");
    assert_eq!(call(&s, Method::GET, "/healthz", None, None).await.status, 200, "the server stays up");

    // Request sizes: documents per predict or held-out request, and n.
    s.stop().await;
    s.boot(|c| {
        c.max_request_documents = 2;
        c.max_n = 5;
    })
    .await;
    let three = json!({"documents": [{"text": "apps"}, {"text": "games"}, {"text": "music"}]});
    for path in ["predict", "heldout-likelihood"] {
        let a = call(&s, Method::POST, &format!("/v1/models/{model}/{path}"), None, Some(&three)).await;
        assert_problem(&a, 422);
        assert_eq!((a.body["field"].as_str(), a.body["limit"].as_str()), (Some("documents"), Some("max-request-documents")), "{path}");
    }
    assert_eq!(call(&s, Method::GET, "/v1/jobs", None, None).await.body["total"], 1, "a refused held-out request queued a job");
    assert_eq!(call(&s, Method::GET, &format!("/v1/models/{model}/topics?n=5"), None, None).await.status, 200);
    let a = call(&s, Method::GET, &format!("/v1/models/{model}/topics?n=6"), None, None).await;
    assert_problem(&a, 422);
    assert_eq!(a.body["limit"], "max-n");
}
