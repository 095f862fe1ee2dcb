//! Edits through HTTP (issue 59): merge, split and delete answer 202 with a refit job
//! whose model names its parent, keeps untouched topics' ids and names, retires the
//! merged-away and deleted topics in place and appends the split's new part; bad edits
//! are 422s naming the operation and queue nothing; HPC's topics are its labels (409);
//! a model cannot be deleted while an edit reads it. PCM's edits keep ids and names the
//! same way, and a seeded PCM model's seeded topics are refused by operation; HDP's
//! and DCNT's too, their retired topics weighing nothing in a prediction.

mod common;

use common::{appstream_docs, assert_problem, TestServer};
use serde_json::{json, Value};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(300);

async fn appstream(s: &TestServer) -> String {
    let corpus = s.upload(json!({"name": "appstream", "documents": appstream_docs(300)})).await;
    corpus["id"].as_str().unwrap().to_string()
}

/// Wait for a job and return its model's id and JSON.
async fn model_of(s: &TestServer, job: &Value) -> (String, Value) {
    s.model_of(job, LIMIT).await
}

/// An LDA parent of 6 topics: topics 0 and 1 seeded ("games", "audio"), topic 3
/// renamed "three".
async fn parent(s: &TestServer, corpus_id: &str) -> String {
    let seeds = json!([{"name": "games", "words": ["game", "play"]}, {"name": "audio", "words": ["audio", "music"]}]);
    let job = s.submit(corpus_id, "lda", json!({"topics": 6, "iterations": 60, "seed_words": seeds}), 2).await;
    let (id, _) = model_of(s, &job).await;
    let (st, renamed) = s.patch(&format!("/v1/models/{id}/topics/3"), &json!({"name": "three"})).await;
    assert_eq!(st, 200, "{renamed}");
    id
}

/// Merge 1 and 2, split 4 in two, delete 5: the child has 7 topics, names its parent
/// and the operations, keeps 0 ("games"), 1 ("audio", the merge's first) and 3 ("three")
/// with their names, marks 2 and 5 retired, and adds topic 6; the comparison with its
/// parent pairs the untouched topics with themselves; a retired topic cannot be edited
/// again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_refits_keeping_ids_and_names() {
    let s = TestServer::start().await;
    let corpus_id = appstream(&s).await;
    let parent_id = parent(&s, &corpus_id).await;
    let ops = json!([{"op": "merge", "topics": [1, 2]}, {"op": "split", "topic": 4, "into": 2}, {"op": "delete", "topic": 5}]);
    let (st, job) = s.post(&format!("/v1/models/{parent_id}/edits"), &json!({"operations": ops, "iterations": 30, "seed": 5})).await;
    assert_eq!(st, 202, "{job}");
    assert_eq!(job["edit"], json!({"parent_model_id": parent_id, "operations": ops}), "{job}");
    assert_eq!(job["params"]["topics"], 7);
    let (child_id, child) = model_of(&s, &job).await;
    assert_eq!(child["parent_model_id"], json!(parent_id));
    assert_eq!(child["edit"]["operations"], ops);
    assert_eq!(child["num_topics"], 7);
    assert_eq!(child["edit"]["topics"][6], json!({"from": "split", "topic": 4, "part": 1}));
    let (st, topics) = s.get(&format!("/v1/models/{child_id}/topics?n=5")).await;
    assert_eq!(st, 200, "{topics}");
    let list = topics["topics"].as_array().unwrap();
    let names: Vec<&Value> = list.iter().map(|t| &t["name"]).collect();
    assert_eq!(names, [&json!("games"), &json!("audio"), &Value::Null, &json!("three"), &Value::Null, &Value::Null, &Value::Null]);
    assert_eq!((&list[2]["retired"], &list[5]["retired"]), (&json!("merged into 1"), &json!("deleted")));
    assert!(list[0].get("retired").is_none() && list[6].get("retired").is_none());
    assert_eq!((list[2]["proportion"].as_f64(), list[5]["proportion"].as_f64()), (Some(0.0), Some(0.0)), "retired topics hold nothing");
    // The comparison with the parent: untouched topics pair with themselves.
    let (st, cmp) = s.get(&format!("/v1/models/{parent_id}/compare/{child_id}")).await;
    assert_eq!(st, 200, "{cmp}");
    for k in [0, 3] {
        let pair = cmp["pairs"].as_array().unwrap().iter().find(|p| p["a"]["id"] == k).unwrap_or_else(|| panic!("{cmp}"));
        assert_eq!((&pair["b"]["id"], &pair["matched"]), (&json!(k), &json!(true)), "{pair}");
    }
    let (st, body) = s.post(&format!("/v1/models/{child_id}/edits"), &json!({"operations": [{"op": "delete", "topic": 2}]})).await;
    assert_problem(st, &body, 422, Some("operations[0].topic"));
    assert!(body["detail"].as_str().unwrap().contains("merged into 1"), "{body}");
}

/// Bad edits are 422s naming the operation (or 404 for no model), and queue nothing; a
/// model an edit job reads cannot be deleted (409) until the job ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_edits_are_refused_by_operation() {
    let s = TestServer::start().await;
    let corpus_id = appstream(&s).await;
    let job = s.submit(&corpus_id, "lda", json!({"topics": 4, "iterations": 10}), 1).await;
    let (id, _) = model_of(&s, &job).await;
    let path = format!("/v1/models/{id}/edits");
    let cases = [
        (json!({"operations": [{"op": "delete", "topic": 4}]}), "operations[0].topic"),
        (json!({"operations": [{"op": "merge", "topics": [2, 2]}]}), "operations[0].topics[1]"),
        (json!({"operations": [{"op": "split", "topic": 1, "into": 1}]}), "operations[0].into"),
        (json!({"operations": [{"op": "grow", "topic": 1}]}), "operations[0].op"),
        (json!({"operations": [{"op": "delete", "topic": 0}, {"op": "merge", "topics": [0, 1]}]}), "operations[1].topics[0]"),
        (
            json!({"operations": [{"op": "split", "topic": 1, "into": 2, "seed_words": [{"name": "a", "words": ["game"]}, {"name": "b", "words": ["zzyzx"]}]}]}),
            "operations[0].seed_words[1].words[0]",
        ),
        (json!({"operations": []}), "operations"),
        (json!({"operations": [{"op": "delete", "topic": 1}], "iterations": 0}), "iterations"),
    ];
    for (body, field) in cases {
        let (st, problem) = s.post(&path, &body).await;
        assert_problem(st, &problem, 422, Some(field));
    }
    let (st, problem) = s.post("/v1/models/nope/edits", &json!({"operations": [{"op": "delete", "topic": 0}]})).await;
    assert_problem(st, &problem, 404, None);
    let (_, jobs) = s.get("/v1/jobs").await;
    assert_eq!(jobs["total"], 1, "a refused edit queues nothing: {jobs}");
    // An edit job reads its parent: the parent cannot be deleted while it may.
    let (st, job) = s.post(&path, &json!({"operations": [{"op": "delete", "topic": 0}], "iterations": 3000})).await;
    assert_eq!(st, 202, "{job}");
    let (st, refused) = s.delete_with_body(&format!("/v1/models/{id}")).await;
    assert_eq!(st, 409, "{refused}");
    let done = s.wait(job["id"].as_str().unwrap(), LIMIT).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(s.delete(&format!("/v1/models/{id}")).await, 204, "deletable once the edit ended");
}

/// HPC's topics are its labels: editing them is a 409 naming `model`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hpc_models_cannot_be_edited() {
    let s = TestServer::start().await;
    let corpus_id = appstream(&s).await;
    let job = s.submit(&corpus_id, "hpc", json!({"iterations": 4, "burn_in": 2, "thin": 1, "test_fraction": 0.0, "validation_fraction": 0.0}), 3).await;
    let (id, _) = model_of(&s, &job).await;
    let (st, body) = s.post(&format!("/v1/models/{id}/edits"), &json!({"operations": [{"op": "delete", "topic": 0}]})).await;
    assert_problem(st, &body, 409, Some("model"));
    assert!(body["detail"].as_str().unwrap().contains("labels"), "{body}");
}

/// A PCM parent of 5 topics (topic 0 seeded "games", topic 2 renamed "two"): merge 2
/// and 3, split 4 in two. The child has 6 topics, keeps "games" and "two", retires 3
/// (proportion 0, and no weight in a prediction), and adds topic 5; an edit naming the
/// seeded topic is a 422 naming the operation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pcm_edit_refits_keeping_ids_and_names() {
    let s = TestServer::start().await;
    let corpus_id = appstream(&s).await;
    let seeds = json!([{"name": "games", "words": ["game", "play"]}]);
    let job = s.submit(&corpus_id, "pcm", json!({"topics": 5, "iterations": 30, "seed_words": seeds}), 2).await;
    let (parent_id, _) = model_of(&s, &job).await;
    let (st, renamed) = s.patch(&format!("/v1/models/{parent_id}/topics/2"), &json!({"name": "two"})).await;
    assert_eq!(st, 200, "{renamed}");
    let ops = json!([{"op": "merge", "topics": [2, 3]}, {"op": "split", "topic": 4, "into": 2}]);
    let (st, job) = s.post(&format!("/v1/models/{parent_id}/edits"), &json!({"operations": ops, "iterations": 12, "seed": 5})).await;
    assert_eq!(st, 202, "{job}");
    assert_eq!(job["params"]["topics"], 6);
    let (child_id, child) = model_of(&s, &job).await;
    assert_eq!((&child["parent_model_id"], &child["model"], &child["num_topics"]), (&json!(parent_id), &json!("pcm"), &json!(6)), "{child}");
    let (st, topics) = s.get(&format!("/v1/models/{child_id}/topics?n=5")).await;
    assert_eq!(st, 200, "{topics}");
    let list = topics["topics"].as_array().unwrap();
    let names: Vec<&Value> = list.iter().map(|t| &t["name"]).collect();
    assert_eq!(names, [&json!("games"), &Value::Null, &json!("two"), &Value::Null, &Value::Null, &Value::Null]);
    assert_eq!((&list[3]["retired"], list[3]["proportion"].as_f64()), (&json!("merged into 2"), Some(0.0)), "{}", list[3]);
    assert!(list[5]["proportion"].as_f64().unwrap() > 0.0, "the split's new part holds tokens: {}", list[5]);
    let text = appstream_docs(1)[0]["text"].clone();
    let (st, predicted) = s.post(&format!("/v1/models/{child_id}/predict"), &json!({"documents": [{"id": "x", "text": text}]})).await;
    assert_eq!(st, 200, "{predicted}");
    let theta = predicted["predictions"][0]["topic_proportions"].as_array().unwrap_or_else(|| panic!("{predicted}"));
    assert!(theta[3].as_f64().unwrap() < 1e-12, "the retired topic takes no weight: {predicted}");
    let (st, body) = s.post(&format!("/v1/models/{child_id}/edits"), &json!({"operations": [{"op": "delete", "topic": 0}]})).await;
    assert_problem(st, &body, 422, Some("operations[0]"));
    assert!(body["detail"].as_str().unwrap().contains("games"), "{body}");
}

/// An HDP parent (topic 1 renamed "one"): merge 1 and 2, split 3 in two, delete 0. The
/// child has one topic more than its parent, keeps "one", retires 0 and 2 (proportion
/// 0, and no weight in a prediction), and its new part holds tokens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_hdp_edit_refits_keeping_ids_and_names() {
    let s = TestServer::start().await;
    let corpus_id = appstream(&s).await;
    let job = s.submit(&corpus_id, "hdp", json!({"topics": 6, "passes": 12, "merge_every": 0, "delete_every": 0, "birth_every": 0}), 2).await;
    let (parent_id, parent) = model_of(&s, &job).await;
    let k = parent["num_topics"].as_u64().unwrap() as usize;
    let (st, renamed) = s.patch(&format!("/v1/models/{parent_id}/topics/1"), &json!({"name": "one"})).await;
    assert_eq!(st, 200, "{renamed}");
    let ops = json!([{"op": "merge", "topics": [1, 2]}, {"op": "split", "topic": 3, "into": 2}, {"op": "delete", "topic": 0}]);
    let (st, job) = s.post(&format!("/v1/models/{parent_id}/edits"), &json!({"operations": ops, "iterations": 8, "seed": 5})).await;
    assert_eq!(st, 202, "{job}");
    let (child_id, child) = model_of(&s, &job).await;
    assert_eq!((&child["parent_model_id"], &child["model"], &child["num_topics"]), (&json!(parent_id), &json!("hdp"), &json!(k + 1)), "{child}");
    let (st, topics) = s.get(&format!("/v1/models/{child_id}/topics?n=5")).await;
    assert_eq!(st, 200, "{topics}");
    let list = topics["topics"].as_array().unwrap();
    assert_eq!(list[1]["name"], json!("one"), "{}", list[1]);
    assert_eq!((&list[0]["retired"], list[0]["proportion"].as_f64()), (&json!("deleted"), Some(0.0)), "{}", list[0]);
    assert_eq!((&list[2]["retired"], list[2]["proportion"].as_f64()), (&json!("merged into 1"), Some(0.0)), "{}", list[2]);
    assert!(list[k]["proportion"].as_f64().unwrap() > 0.0, "the split's new part holds tokens: {}", list[k]);
    let text = appstream_docs(1)[0]["text"].clone();
    let (st, predicted) = s.post(&format!("/v1/models/{child_id}/predict"), &json!({"documents": [{"id": "x", "text": text}]})).await;
    assert_eq!(st, 200, "{predicted}");
    let theta = predicted["predictions"][0]["topic_proportions"].as_array().unwrap_or_else(|| panic!("{predicted}"));
    assert!(theta[0].as_f64().unwrap() < 1e-12 && theta[2].as_f64().unwrap() < 1e-12, "the retired topics take no weight: {predicted}");
}

/// A DCNT parent of 5 topics (topic 2 renamed "two"): merge 2 and 3, split 4 in two,
/// delete 1. The child has 6 topics, keeps "two", retires 1 and 3 (proportion 0, no
/// weight in a prediction, and zero rows in the correlations), adds topic 5, and
/// compares with its parent; its topics' documents and map answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dcnt_edit_refits_keeping_ids_and_names() {
    let s = TestServer::start().await;
    let corpus_id = appstream(&s).await;
    let job = s.submit(&corpus_id, "dcnt", json!({"topics": 5, "iterations": 20, "burn_in": 10, "heldout_chain_length": 20}), 2).await;
    let (parent_id, _) = model_of(&s, &job).await;
    let (st, renamed) = s.patch(&format!("/v1/models/{parent_id}/topics/2"), &json!({"name": "two"})).await;
    assert_eq!(st, 200, "{renamed}");
    let ops = json!([{"op": "merge", "topics": [2, 3]}, {"op": "split", "topic": 4, "into": 2}, {"op": "delete", "topic": 1}]);
    let (st, job) = s.post(&format!("/v1/models/{parent_id}/edits"), &json!({"operations": ops, "iterations": 10, "seed": 5})).await;
    assert_eq!(st, 202, "{job}");
    assert_eq!(job["params"]["topics"], 6);
    let (child_id, child) = model_of(&s, &job).await;
    assert_eq!((&child["parent_model_id"], &child["model"], &child["num_topics"]), (&json!(parent_id), &json!("dcnt"), &json!(6)), "{child}");
    let (st, topics) = s.get(&format!("/v1/models/{child_id}/topics?n=5")).await;
    assert_eq!(st, 200, "{topics}");
    let list = topics["topics"].as_array().unwrap();
    assert_eq!(list.len(), 6, "{topics}");
    assert_eq!(list[2]["name"], json!("two"), "{}", list[2]);
    assert_eq!((&list[1]["retired"], list[1]["proportion"].as_f64()), (&json!("deleted"), Some(0.0)), "{}", list[1]);
    assert_eq!((&list[3]["retired"], list[3]["proportion"].as_f64()), (&json!("merged into 2"), Some(0.0)), "{}", list[3]);
    assert!(list[5]["proportion"].as_f64().unwrap() > 0.0, "the split's new part holds tokens: {}", list[5]);
    let text = appstream_docs(1)[0]["text"].clone();
    let (st, predicted) = s.post(&format!("/v1/models/{child_id}/predict"), &json!({"documents": [{"id": "x", "text": text}]})).await;
    assert_eq!(st, 200, "{predicted}");
    let theta = predicted["predictions"][0]["topic_proportions"].as_array().unwrap_or_else(|| panic!("{predicted}"));
    assert_eq!((theta.len(), theta[1].as_f64(), theta[3].as_f64()), (6, Some(0.0), Some(0.0)), "the retired topics take no weight: {predicted}");
    let (st, corr) = s.get(&format!("/v1/models/{child_id}/correlations?draws=5")).await;
    assert_eq!(st, 200, "{corr}");
    let cov = corr["covariance"].as_array().unwrap_or_else(|| panic!("{corr}"));
    assert_eq!((cov.len(), &cov[1][1], &corr["mean"][3]), (6, &json!(0.0), &json!(0.0)), "{corr}");
    let (st, compared) = s.get(&format!("/v1/models/{child_id}/compare/{parent_id}")).await;
    assert_eq!(st, 200, "{compared}");
    for path in ["topics/5/documents", "topic-map", "coherence"] {
        let (st, body) = s.get(&format!("/v1/models/{child_id}/{path}")).await;
        assert_eq!(st, 200, "{path}: {body}");
    }
}
