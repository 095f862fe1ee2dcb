//! Adding a family is one folder and one line: the test-only `mixture` family
//! (crates/topicd-core/src/models/mixture/, registered by one line in
//! `models/registry.rs` under the cargo feature `test-family`) is listed by
//! `GET /v1/families` with the params schema generated from its parser, fitted through
//! `POST /v1/jobs`, read through `/topics` and `/predict`, and found in the served
//! OpenAPI document (its params schema, the job request's `model` and `params`), with
//! no other file knowing it. Run with `cargo test --features test-family --test
//! adding_a_family` (`docs/adding-a-family.md`).

mod common;

use common::{appstream_docs, assert_problem, TestServer};
use serde_json::{json, Value};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_family_is_served_fitted_read_and_documented() {
    let s = TestServer::start().await;

    // Listed, with its generated params schema: keys, bounds, defaults, descriptions.
    let (st, families) = s.get("/v1/families").await;
    assert_eq!(st, 200);
    let family = families["families"].as_array().unwrap().iter().find(|f| f["name"] == "mixture").expect("mixture is listed").clone();
    assert_eq!(family["capabilities"]["input"], "corpus");
    let schema = &family["params_schema"];
    assert_eq!((schema["type"].as_str(), schema["additionalProperties"].as_bool()), (Some("object"), Some(false)), "{schema}");
    let topics = &schema["properties"]["topics"];
    assert_eq!(
        (topics["type"].as_str(), topics["minimum"].as_u64(), topics["maximum"].as_u64(), topics["default"].as_u64()),
        (Some("integer"), Some(1), Some(100), Some(3)),
        "{topics}"
    );
    assert_eq!(schema["properties"]["beta"]["default"].as_f64(), Some(0.1));
    assert!(schema["properties"]["iterations"]["description"].as_str().unwrap().contains("Hard-EM"));
    assert!(schema["properties"]["threads"].is_object(), "the runner options a job's params may carry");
    assert_eq!(schema["x-property-order"][0], "topics", "the doc's order");

    // Refused as its parser refuses, naming the field.
    let cid = s.upload(json!({"documents": appstream_docs(60)})).await["id"].as_str().unwrap().to_string();
    let (st, e) = s.post("/v1/jobs", &json!({"corpus_id": cid, "model": "mixture", "params": {"topics": 101}})).await;
    assert_problem(st, &e, 422, Some("params.topics"));
    let (st, e) = s.post("/v1/jobs", &json!({"corpus_id": cid, "model": "mixture", "params": {"topcs": 2}})).await;
    assert_problem(st, &e, 422, Some("params.topcs"));

    // Fitted through HTTP, its defaults filled in, and read.
    let job = s.submit(&cid, "mixture", json!({"topics": 4, "threads": 1}), 5).await;
    assert_eq!(job["params"], json!({"topics": 4, "iterations": 10, "beta": 0.1}), "{job}");
    let done = s.wait(job["id"].as_str().unwrap(), Duration::from_secs(120)).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let mid = done["model_id"].as_str().unwrap().to_string();
    let (st, topics) = s.get(&format!("/v1/models/{mid}/topics?n=5")).await;
    assert_eq!(st, 200, "{topics}");
    let listed = topics["topics"].as_array().unwrap();
    assert_eq!(listed.len(), 4, "{topics}");
    assert!(listed.iter().all(|t| t["words"].as_array().is_some_and(|w| w.len() == 5)), "{topics}");
    let (st, predicted) = s.post(&format!("/v1/models/{mid}/predict"), &json!({"documents": [{"id": "x", "text": appstream_docs(1)[0]["text"]}]})).await;
    assert_eq!(st, 200, "{predicted}");
    let shares: f64 = predicted["predictions"][0]["topic_proportions"].as_array().unwrap().iter().map(|p| p.as_f64().unwrap()).sum();
    assert!((shares - 1.0).abs() < 1e-9, "{predicted}");

    // In the served OpenAPI document: its params schema, and the job request's.
    let (st, spec) = s.get("/openapi.json").await;
    assert_eq!(st, 200);
    let component = &spec["components"]["schemas"]["MixtureParams"];
    assert_eq!(component["x-families"], json!(["mixture"]));
    assert_eq!(component["properties"], schema["properties"]);
    let request = &spec["components"]["schemas"]["JobRequest"]["properties"];
    assert!(request["model"]["enum"].as_array().unwrap().contains(&json!("mixture")), "{}", request["model"]);
    let refs: Vec<&Value> = request["params"]["oneOf"].as_array().unwrap().iter().filter_map(|r| r.get("$ref")).collect();
    assert!(refs.contains(&&json!("#/components/schemas/MixtureParams")), "{refs:?}");
}
