//! The attacks of the hardening review, replayed as tests: each asserts what the server
//! now does where the attack used to succeed (a request that expanded into billions of
//! tokens, a `/metrics` grown by made-up methods, a quadratic NDJSON line, a rate limit
//! spent by someone else, a rebound Host, a cross-site form). The memory probes are one
//! test each in [`http_admission`](../http_admission.rs), where nothing runs beside them.

mod common;

use common::{appstream_docs, assert_problem, streamed_body, TestServer};
use serde_json::{json, Value};
use std::net::IpAddr;
use std::time::{Duration, Instant};
use topicd::api::auth::AuthMode;
use topicd::auth::Role;
use topicd::store::Store;

/// A fitted LDA model's id on `s` (60 AppStream documents, 4 topics, 20 sweeps).
async fn small_model(s: &TestServer) -> String {
    let cid = s.upload(json!({"documents": appstream_docs(60)})).await["id"].as_str().unwrap().to_string();
    let job = s.submit(&cid, "lda", json!({"topics": 4, "iterations": 20}), 1).await;
    let done = s.wait(job["id"].as_str().unwrap(), Duration::from_secs(120)).await;
    done["model_id"].as_str().expect("a model").to_string()
}

#[tokio::test]
async fn counted_tokens_are_capped_per_document_and_per_request_before_any_work() {
    let mut s = TestServer::start().await;
    let model = small_model(&s).await;
    s.stop().await;
    s.boot(|c| {
        c.max_document_tokens = 1000;
        c.max_request_tokens = 1500;
        c.max_predict_work = 400_000;
    })
    .await;
    let predict = format!("/v1/models/{model}/predict");
    // The 60-byte request that once took the machine down: four billion counted tokens.
    let (st, e) = s.post(&predict, &json!({"documents": [{"counts": {"git": 4_000_000_000u64}}]})).await;
    assert_problem(st, &e, 422, Some("documents[0].counts"));
    assert_eq!(e["limit"], "max-document-tokens");
    // Text counts too, and so does the request's total.
    let (st, e) = s.post(&predict, &json!({"documents": [{"text": "git ".repeat(1001)}]})).await;
    assert_problem(st, &e, 422, Some("documents[0].text"));
    let (st, e) = s.post(&predict, &json!({"documents": [{"counts": {"git": 800}}, {"counts": {"git": 800}}]})).await;
    assert_problem(st, &e, 422, Some("documents"));
    assert_eq!(e["limit"], "max-request-tokens");
    // Tokens × sweeps × topics: 1000 tokens at 100 sweeps on 4 topics is the cap; at 101
    // sweeps the iterations are over.
    let (st, _) = s.post(&predict, &json!({"documents": [{"counts": {"git": 1000}}]})).await;
    assert_eq!(st, 200);
    let (st, e) = s.post(&predict, &json!({"documents": [{"counts": {"git": 1000}}], "iterations": 101})).await;
    assert_problem(st, &e, 422, Some("iterations"));
    assert_eq!(e["limit"], "max-predict-work");
    // Held-out requests have the same caps.
    let (st, e) = s.post(&format!("/v1/models/{model}/heldout-likelihood"), &json!({"documents": [{"counts": {"git": 4_000_000_000u64}}]})).await;
    assert_problem(st, &e, 422, Some("documents[0].counts"));
    // Uploads: a document over the cap, as JSON and as an NDJSON line, stores nothing.
    let (st, e) = s.post("/v1/corpora", &json!({"documents": [{"text": "a b"}, {"counts": {"git": 4_000_000_000u64}}]})).await;
    assert_problem(st, &e, 422, Some("documents[1].counts"));
    let ndjson = "{\"text\": \"a b\"}\n{\"counts\": {\"git\": 4000000000}}\n";
    let (st, e) = s.post_raw("/v1/corpora", ndjson, "application/x-ndjson").await;
    assert_problem(st, &e, 422, Some("documents[1].counts"));
    assert_eq!(e["line"], 2);
    let (_, list) = s.get("/v1/corpora").await;
    assert_eq!(list["total"], 1, "only the first corpus is stored: {list}");
}

#[tokio::test]
async fn metrics_stay_the_same_size_whatever_methods_and_paths_are_sent() {
    let s = TestServer::start().await;
    let size = || async { s.get_text("/metrics").await.2.len() };
    for i in 0..20 {
        let method = reqwest::Method::from_bytes(format!("M{i}").as_bytes()).unwrap();
        s.client.request(method, format!("{}/v1/corpora", s.base)).send().await.unwrap();
        s.client.get(format!("{}/made/up/{i}", s.base)).send().await.unwrap();
    }
    size().await; // its own series exists from here on
    let before = size().await;
    for i in 20..320 {
        let method = reqwest::Method::from_bytes(format!("METHOD{i}").as_bytes()).unwrap();
        s.client.request(method, format!("{}/v1/corpora", s.base)).send().await.unwrap();
        s.client.get(format!("{}/made/up/{i}", s.base)).send().await.unwrap();
    }
    let text = s.get_text("/metrics").await.2;
    assert!(text.contains("method=\"other\"") && text.contains("route=\"unmatched\""), "{text}");
    assert!(!text.contains("METHOD"), "a made-up method became a label");
    // Counts grow by digits, not by series: a few bytes at most.
    let after = size().await;
    assert!(after <= before + 64, "/metrics grew from {before} to {after} bytes");
}

#[tokio::test]
async fn an_ndjson_line_over_its_limit_is_a_413_and_a_stalled_upload_is_cut_off() {
    let mut s = TestServer::start().await;
    s.stop().await;
    s.boot(|c| {
        c.max_line_mb = 0.01;
        c.upload_idle_s = 0.5;
    })
    .await;
    let long = format!("{{\"text\": \"a b\"}}\n{{\"text\": \"{}\"}}\n", "word ".repeat(5000));
    let (st, e) = s.post_raw("/v1/corpora", long, "application/x-ndjson").await;
    assert_problem(st, &e, 413, Some("line 2"));
    assert_eq!((e["line"].as_u64(), e["limit"].as_str()), (Some(2), Some("max-line-mb")));

    // An upload that sends one line and then nothing: 408 after about the idle limit.
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Vec<u8>, std::io::Error>>(1);
    tx.send(Ok(b"{\"text\": \"a b\"}\n".to_vec())).await.unwrap();
    let body = streamed_body(tokio_stream_of(rx));
    let t0 = Instant::now();
    let (st, e) = s.post_raw("/v1/corpora", body, "application/x-ndjson").await;
    let took = t0.elapsed();
    assert_problem(st, &e, 408, None);
    assert_eq!(e["limit"], "upload-idle-s");
    assert!(took >= Duration::from_millis(450) && took < Duration::from_secs(10), "cut off after {took:?}");
    drop(tx);
    let (_, list) = s.get("/v1/corpora").await;
    assert_eq!(list["total"], 0, "nothing stored");
}

/// A stream of the chunks sent on `rx` (until its sender is dropped).
fn tokio_stream_of(mut rx: tokio::sync::mpsc::Receiver<Result<Vec<u8>, std::io::Error>>) -> impl futures_util::Stream<Item = Result<Vec<u8>, std::io::Error>> {
    futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

/// A client whose requests come from `ip` (any 127.x address reaches the server).
fn client_from(ip: &str) -> reqwest::Client {
    reqwest::Client::builder().local_address(ip.parse::<IpAddr>().unwrap()).build().unwrap()
}

#[tokio::test]
async fn rate_limits_belong_to_verified_tokens_and_failures_spend_their_address() {
    let mut s = TestServer::start().await;
    s.stop().await;
    s.boot(|c| {
        c.auth = Some(AuthMode::Required);
        c.rate_limit_per_s = 5;
        c.rate_limit_burst = 10;
    })
    .await;
    let store = Store::open(&s.db()).await.unwrap();
    let victim = store.create_token("victim", Role::Read).await.unwrap().unwrap().1.token;
    let url = format!("{}/v1/corpora", s.base);
    let attacker = client_from("127.0.0.2");
    // Well-formed tokens with made-up keys: once the address is over its rate, 429
    // (before: each made-up key had a fresh budget, so none was ever limited).
    let (key, secret) = victim.strip_prefix("tpd_").unwrap().split_once('_').unwrap();
    let mut limited = 0;
    for i in 0..60 {
        let made_up = format!("tpd_{:0>w$x}_{secret}", i + 1, w = key.len());
        let r = attacker.get(&url).bearer_auth(made_up).send().await.unwrap();
        limited += usize::from(r.status() == 429);
    }
    // Burst 10 at 5/s: the requests take well under a second, so at most 10 plus the
    // few the rate refills pass.
    assert!(limited >= 40, "{limited} of 60 made-up tokens were limited");
    // The victim's public key with a wrong secret: spends the attacker's address only.
    let wrong_secret: String = secret.chars().map(|c| if c == '0' { '1' } else { '0' }).collect();
    for _ in 0..60 {
        attacker.get(&url).bearer_auth(format!("tpd_{key}_{wrong_secret}")).send().await.unwrap();
    }
    let holder = client_from("127.0.0.3");
    for i in 0..10 {
        let r = holder.get(&url).bearer_auth(&victim).send().await.unwrap();
        assert_eq!(r.status(), 200, "the real holder's request {i} was refused");
    }
}

#[tokio::test]
async fn a_rebound_host_and_cross_site_forms_are_refused() {
    let s = TestServer::start().await;
    let get = |host: &str| s.client.get(format!("{}/v1/corpora", s.base)).header("host", host.to_string()).send();
    assert_eq!(get("attacker.example").await.unwrap().status(), 421);
    assert_eq!(get("attacker.example:8080").await.unwrap().status(), 421);
    for ok in ["localhost", "127.0.0.1:8080", "[::1]:1"] {
        assert_eq!(get(ok).await.unwrap().status(), 200, "{ok}");
    }
    assert_eq!(s.client.get(format!("{}/healthz", s.base)).header("host", "pod.internal").send().await.unwrap().status(), 200);

    let cid = s.upload(json!({"documents": appstream_docs(20)})).await["id"].as_str().unwrap().to_string();
    let job = s.submit(&cid, "lda", json!({"topics": 2, "iterations": 5000}), 1).await;
    let cancel = format!("{}/v1/jobs/{}/cancel", s.base, job["id"].as_str().unwrap());
    for form in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"] {
        let r = s.client.post(&cancel).header("content-type", form).body("x=1").send().await.unwrap();
        assert_eq!(r.status(), 415, "{form}");
    }
    let r = s.client.post(&cancel).header("origin", "http://attacker.example").send().await.unwrap();
    assert_eq!(r.status(), 403);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["field"], "Origin");
    let (_, j) = s.get(&format!("/v1/jobs/{}", job["id"].as_str().unwrap())).await;
    assert_ne!(j["status"], "cancelled", "the refused requests changed nothing");
    // The console's own requests (same origin) and curl's (no Origin) pass.
    let same = s.client.post(&cancel).header("origin", s.base.clone()).send().await.unwrap();
    assert_eq!(same.status(), 202);
}
