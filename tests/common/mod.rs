//! A real topicd server on an ephemeral port with a temporary database, and a small
//! client for it. Shared by the black-box HTTP tests.
#![allow(dead_code)]

pub mod postgres;
pub mod process;

use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use topicd::api::{start, Server};
use topicd::config::ServeConfig;

pub struct TestServer {
    pub server: Option<Server>,
    pub base: String,
    pub client: reqwest::Client,
    pub dir: tempfile::TempDir,
}

impl TestServer {
    pub async fn start() -> TestServer {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut s = TestServer { server: None, base: String::new(), client: reqwest::Client::new(), dir };
        s.boot(|_| {}).await;
        s
    }

    pub fn db(&self) -> PathBuf {
        self.dir.path().join("topicd.db")
    }

    /// Start (or restart) on the same database, after adjusting the configuration.
    pub async fn boot(&mut self, adjust: impl FnOnce(&mut ServeConfig)) {
        let mut config = ServeConfig::for_tests(self.db());
        adjust(&mut config);
        let server = start(&config).await.expect("server starts");
        self.base = format!("http://{}", server.addr);
        self.server = Some(server);
    }

    /// Graceful stop.
    pub async fn stop(&mut self) {
        if let Some(s) = self.server.take() {
            s.stop().await;
        }
    }

    pub async fn restart(&mut self) {
        self.stop().await;
        self.boot(|_| {}).await;
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        let r = self.client.get(format!("{}{path}", self.base)).send().await.expect("request");
        decode(r).await
    }

    pub async fn get_text(&self, path: &str) -> (u16, String, String) {
        let r = self.client.get(format!("{}{path}", self.base)).send().await.expect("request");
        let ct = r.headers().get("content-type").map(|v| v.to_str().unwrap().to_string()).unwrap_or_default();
        (r.status().as_u16(), ct, r.text().await.unwrap())
    }

    pub async fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        let r = self.client.post(format!("{}{path}", self.base)).json(body).send().await.expect("request");
        decode(r).await
    }

    pub async fn post_raw(&self, path: &str, body: impl Into<reqwest::Body>, content_type: &str) -> (u16, Value) {
        let r = self.client.post(format!("{}{path}", self.base)).header("content-type", content_type).body(body).send().await.expect("request");
        decode(r).await
    }

    pub async fn patch(&self, path: &str, body: &Value) -> (u16, Value) {
        let r = self.client.patch(format!("{}{path}", self.base)).json(body).send().await.expect("request");
        decode(r).await
    }

    pub async fn delete(&self, path: &str) -> u16 {
        self.client.delete(format!("{}{path}", self.base)).send().await.expect("request").status().as_u16()
    }

    pub async fn delete_with_body(&self, path: &str) -> (u16, Value) {
        let r = self.client.delete(format!("{}{path}", self.base)).send().await.expect("request");
        decode(r).await
    }

    /// Upload and expect 201.
    pub async fn upload(&self, body: Value) -> Value {
        let (st, v) = self.post("/v1/corpora", &body).await;
        assert_eq!(st, 201, "upload answered {st}: {v}");
        v
    }

    /// Submit a fit and expect 202.
    pub async fn submit(&self, corpus_id: &str, model: &str, params: Value, seed: u64) -> Value {
        let (st, v) = self.post("/v1/jobs", &json!({"corpus_id": corpus_id, "model": model, "params": params, "seed": seed})).await;
        assert_eq!(st, 202, "job submit answered {st}: {v}");
        v
    }

    /// Poll until the job leaves queued/running.
    pub async fn wait(&self, job_id: &str, timeout: Duration) -> Value {
        let t0 = Instant::now();
        loop {
            let (st, j) = self.get(&format!("/v1/jobs/{job_id}")).await;
            assert_eq!(st, 200);
            match j["status"].as_str().unwrap() {
                "queued" | "running" => {}
                _ => return j,
            }
            assert!(t0.elapsed() < timeout, "job {job_id} still {} after {timeout:?}", j["status"]);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Wait for a fit job to succeed and return its model's id and JSON.
    pub async fn model_of(&self, job: &Value, timeout: Duration) -> (String, Value) {
        let done = self.wait(job["id"].as_str().unwrap(), timeout).await;
        assert_eq!(done["status"], "succeeded", "{done}");
        let id = done["model_id"].as_str().unwrap().to_string();
        let (st, model) = self.get(&format!("/v1/models/{id}")).await;
        assert_eq!(st, 200, "{model}");
        (id, model)
    }
}

async fn decode(r: reqwest::Response) -> (u16, Value) {
    let st = r.status().as_u16();
    let text = r.text().await.unwrap_or_default();
    (st, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

/// The shipped AppStream slice as upload documents (`id`, `text`, `labels`).
pub fn appstream_docs(limit: usize) -> Vec<Value> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/appstream_300.jsonl");
    std::fs::read_to_string(path)
        .expect("fixture present")
        .lines()
        .take(limit)
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            json!({"id": v["id"], "text": v["text"], "labels": v["labels"]})
        })
        .collect()
}

/// [`appstream_docs`] with each document's AppStream `package` and `type` in its `meta`.
pub fn appstream_docs_with_meta(limit: usize) -> Vec<Value> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/appstream_300.jsonl");
    std::fs::read_to_string(path)
        .expect("fixture present")
        .lines()
        .take(limit)
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            json!({"id": v["id"], "text": v["text"], "labels": v["labels"], "meta": {"package": v["package"], "type": v["type"]}})
        })
        .collect()
}

/// A JSONL fixture as an NDJSON upload body, each document's keys that topicd does not
/// know (AppStream's `package`, `type`, `n_desc_langs`) moved into its `meta` object.
pub fn strict_ndjson(path: &str) -> Vec<u8> {
    const DOCUMENT_KEYS: [&str; 9] = ["id", "text", "counts", "bow", "labels", "paths", "features", "split", "meta"];
    let mut out = Vec::new();
    for line in std::fs::read_to_string(path).expect("fixture present").lines().filter(|l| !l.trim().is_empty()) {
        let Value::Object(fields) = serde_json::from_str::<Value>(line).unwrap() else { panic!("not an object: {line}") };
        let (mut doc, extra): (serde_json::Map<String, Value>, serde_json::Map<String, Value>) =
            fields.into_iter().partition(|(k, _)| DOCUMENT_KEYS.contains(&k.as_str()));
        if !extra.is_empty() {
            let meta = doc.entry("meta").or_insert_with(|| json!({}));
            meta.as_object_mut().expect("meta is an object").extend(extra);
        }
        out.extend(serde_json::to_vec(&doc).unwrap());
        out.push(b'\n');
    }
    out
}

/// Assert a problem+json 4xx that names `field`.
pub fn assert_problem(status: u16, body: &Value, expected_status: u16, field: Option<&str>) {
    assert_eq!(status, expected_status, "body: {body}");
    assert_eq!(body["status"], expected_status, "body: {body}");
    assert!(body["title"].is_string() && body["detail"].is_string() && body["type"].is_string(), "not a problem: {body}");
    if let Some(f) = field {
        assert_eq!(body["field"], f, "body: {body}");
    }
}

/// A request body sent as `stream` yields its chunks (the client holds one at a time).
pub fn streamed_body<S>(stream: S) -> reqwest::Body
where
    S: futures_util::Stream<Item = Result<Vec<u8>, std::io::Error>> + Send + Sync + 'static,
{
    use futures_util::StreamExt;
    reqwest::Body::wrap(http_body_util::StreamBody::new(stream.map(|chunk| chunk.map(|v| hyper::body::Frame::data(bytes::Bytes::from(v))))))
}
