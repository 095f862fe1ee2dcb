//! Label identity over real HTTP (issue 16, item 8): a directory-like taxonomy whose
//! leaf names repeat under different parents (`a/b/arm`, `c/arm`, as in the Linux
//! kernel's documentation tree) is a 422 when labels are identified by name (the
//! default) and two labels, named by their paths, with `label_identity: path`; the
//! option round-trips through `GET /v1/corpora/{id}`, and HPC fits and predicts on it.

mod common;

use common::{assert_problem, TestServer};
use serde_json::{json, Value};
use std::time::Duration;

/// 48 documents in four directories; two leaves are both called `arm`.
fn taxonomy_docs() -> Vec<Value> {
    let dirs = [
        ("a/b/arm", ["register", "cpu", "vector", "exception"]),
        ("c/arm", ["limb", "elbow", "wrist", "shoulder"]),
        ("a/b/x86", ["segment", "paging", "cpuid", "microcode"]),
        ("c/leg", ["knee", "ankle", "thigh", "shin"]),
    ];
    (0..48)
        .map(|i| {
            let (label, words) = dirs[i % 4];
            let text: Vec<&str> = (0..10).map(|j| words[(i + j * 3) % 4]).collect();
            json!({"id": format!("doc{i}"), "text": text.join(" "), "labels": [label]})
        })
        .collect()
}

fn label_names(corpus: &Value) -> Vec<(String, Option<String>)> {
    corpus["labels"].as_array().unwrap().iter().map(|l| (l["label"].as_str().unwrap().to_string(), l["parent"].as_str().map(str::to_string))).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_like_taxonomy_uploads_with_path_identity() {
    let s = TestServer::start().await;

    // By name (the default), `arm` has two parents: a 422 naming the label.
    let (st, problem) = s.post("/v1/corpora", &json!({"documents": taxonomy_docs()})).await;
    assert_problem(st, &problem, 422, Some("documents[1].labels"));
    assert_eq!(problem["label"], "arm", "{problem}");
    assert!(problem["detail"].as_str().unwrap().contains("label_identity"), "the problem says how to upload it: {problem}");
    let (st, problem) = s.post("/v1/corpora", &json!({"documents": taxonomy_docs(), "preprocess": {"label_identity": "name"}})).await;
    assert_problem(st, &problem, 422, Some("documents[1].labels"));

    // An unknown value, and path without a separator, are 422s naming the option.
    let (st, problem) = s.post("/v1/corpora", &json!({"documents": taxonomy_docs(), "preprocess": {"label_identity": "full"}})).await;
    assert_problem(st, &problem, 422, Some("preprocess.label_identity"));
    let (st, problem) = s.post("/v1/corpora", &json!({"documents": taxonomy_docs(), "preprocess": {"label_identity": "path", "label_separator": null}})).await;
    assert_problem(st, &problem, 422, Some("preprocess.label_identity"));
    let (st, problem) = s.post_raw("/v1/corpora?label_identity=full", "{\"text\": \"x y\"}\n", "application/x-ndjson").await;
    assert_problem(st, &problem, 422, Some("query.label_identity"));

    // By path: two `arm` labels, named by their paths, and the option round-trips.
    let corpus = s.upload(json!({"name": "kernel-like", "documents": taxonomy_docs(), "preprocess": {"label_identity": "path"}})).await;
    assert_eq!(corpus["preprocess"]["label_identity"], "path", "{corpus}");
    assert_eq!(corpus["num_labels"], 7, "a, a/b, a/b/arm, c, c/arm, a/b/x86, c/leg: {corpus}");
    let labels = label_names(&corpus);
    let has = |name: &str, parent: Option<&str>| labels.contains(&(name.to_string(), parent.map(str::to_string)));
    assert!(has("a/b/arm", Some("a/b")) && has("c/arm", Some("c")) && has("a/b", Some("a")) && has("a", None), "{labels:?}");
    assert_eq!(labels.iter().filter(|(l, _)| l.ends_with("arm")).count(), 2, "{labels:?}");
    let cid = corpus["id"].as_str().unwrap().to_string();
    let (st, got) = s.get(&format!("/v1/corpora/{cid}")).await;
    assert_eq!(st, 200);
    assert_eq!(got["preprocess"]["label_identity"], "path");
    assert_eq!(label_names(&got), labels);
    // The default is shown too.
    let plain = s.upload(json!({"documents": [{"text": "register cpu", "labels": ["arm"]}]})).await;
    assert_eq!(plain["preprocess"]["label_identity"], "name", "{plain}");
    // NDJSON takes it as a query parameter.
    let lines: String = taxonomy_docs().iter().map(|d| format!("{d}\n")).collect();
    let (st, streamed) = s.post_raw("/v1/corpora?label_identity=path", lines, "application/x-ndjson").await;
    assert_eq!(st, 201, "{streamed}");
    assert_eq!((streamed["num_labels"].as_u64(), streamed["preprocess"]["label_identity"].as_str()), (Some(7), Some("path")));

    // HPC fits on it and predicts labels by their paths.
    let job = s.submit(&cid, "hpc", json!({"iterations": 10, "threads": 1}), 3).await;
    let done = s.wait(job["id"].as_str().unwrap(), Duration::from_secs(180)).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let mid = done["model_id"].as_str().unwrap();
    let (st, pred) = s.post(&format!("/v1/models/{mid}/predict"), &json!({"documents": [{"text": "limb elbow wrist shoulder elbow"}]})).await;
    assert_eq!(st, 200, "{pred}");
    let named: Vec<&str> = pred["predictions"][0]["labels"].as_array().unwrap().iter().map(|l| l["label"].as_str().unwrap()).collect();
    assert!(named.contains(&"c/arm") && named.contains(&"a/b/arm"), "labels are named by their paths: {named:?}");
    let prob = |name: &str| pred["predictions"][0]["labels"].as_array().unwrap().iter().find(|l| l["label"] == name).unwrap()["probability"].as_f64().unwrap();
    assert!(prob("c/arm") > prob("a/b/arm"), "a limb document is the body's arm, not the CPU's: {pred}");
}
