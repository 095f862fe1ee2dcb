//! Graphs over HTTP: upload, validation (problem+json naming the field, nothing stored),
//! listing, deletion, the job request's corpus/graph rules, and the communities endpoint
//! refusing topic models.

mod common;

use common::{appstream_docs, assert_problem, TestServer};
use serde_json::json;

async fn graph_count(s: &TestServer) -> u64 {
    s.get("/v1/graphs").await.1["total"].as_u64().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graphs_are_validated_stored_listed_and_deleted() {
    let mut s = TestServer::start().await;
    let body = json!({
        "name": "square",
        "nodes": ["a", "b", "c", "d"],
        "edges": [["a", "b"], ["b", "a"], ["b", "c"], ["c", "d"], ["d", "a"], ["c", "c"]],
    });
    let (st, g) = s.post("/v1/graphs", &body).await;
    assert_eq!(st, 201, "{g}");
    assert_eq!((g["num_nodes"].as_u64(), g["num_edges"].as_u64()), (Some(4), Some(4)), "{g}");
    assert_eq!((g["self_loops_dropped"].as_u64(), g["duplicate_edges_dropped"].as_u64()), (Some(1), Some(1)), "{g}");
    assert_eq!(g["directed"], false);
    let id = g["id"].as_str().unwrap().to_string();
    let (st, one) = s.get(&format!("/v1/graphs/{id}")).await;
    assert_eq!(st, 200);
    assert_eq!(one, g);

    let cases = [
        (json!({"nodes": ["a", "b"], "edges": [["a", "z"]]}), "edges[0][1]"),
        (json!({"nodes": ["a", "a"], "edges": []}), "nodes[1]"),
        (json!({"nodes": ["a"], "edges": []}), "nodes"),
        (json!({"nodes": ["a", ""], "edges": []}), "nodes[1]"),
    ];
    for (bad, field) in cases {
        let (st, e) = s.post("/v1/graphs", &bad).await;
        assert_problem(st, &e, 422, Some(field));
    }
    let (st, e) = s.post("/v1/graphs", &json!({"nodes": ["a", "b"], "edges": [["a"]]})).await;
    assert!(st == 400 || st == 422, "{st} {e}");
    let (st, e) = s.post("/v1/graphs", &json!({"nodes": ["a", "b"], "bogus": 1})).await;
    assert!(st == 400 || st == 422, "{st} {e}");
    assert_eq!(graph_count(&s).await, 1, "a rejected upload stored something");

    // Job requests: graph models need graph_id, topic models corpus_id, never both.
    let corpus = s.upload(json!({"documents": appstream_docs(20)})).await;
    let cid = corpus["id"].as_str().unwrap();
    let (st, e) = s.post("/v1/jobs", &json!({"graph_id": id, "model": "lda"})).await;
    assert_problem(st, &e, 422, Some("model"));
    let (st, e) = s.post("/v1/jobs", &json!({"graph_id": id, "corpus_id": cid, "model": "lda"})).await;
    assert_problem(st, &e, 422, Some("graph_id"));
    let (st, e) = s.post("/v1/jobs", &json!({"model": "lda"})).await;
    assert_problem(st, &e, 422, Some("corpus_id"));
    let (st, e) = s.post("/v1/jobs", &json!({"graph_id": "nope", "model": "hdp_ammsb"})).await;
    assert_eq!(st, 422, "{e}");

    // The communities endpoint refuses a topic model.
    let job = s.submit(cid, "lda", json!({"topics": 3, "iterations": 5}), 1).await;
    let done = s.wait(job["id"].as_str().unwrap(), std::time::Duration::from_secs(60)).await;
    let model_id = done["model_id"].as_str().unwrap();
    let (st, e) = s.get(&format!("/v1/models/{model_id}/communities")).await;
    assert_problem(st, &e, 409, Some("model"));
    let (st, m) = s.get(&format!("/v1/models/{model_id}")).await;
    assert_eq!(st, 200);
    assert_eq!((m["corpus_id"].as_str(), m["graph_id"].is_null()), (Some(cid), true), "{m}");

    assert_eq!(s.delete(&format!("/v1/graphs/{id}")).await, 204);
    assert_eq!(s.delete(&format!("/v1/graphs/{id}")).await, 404);
    assert_eq!(graph_count(&s).await, 0);
    // Graphs survive a restart like corpora.
    let (st, _) = s.post("/v1/graphs", &body).await;
    assert_eq!(st, 201);
    s.restart().await;
    assert_eq!(graph_count(&s).await, 1);
    s.stop().await;
}
