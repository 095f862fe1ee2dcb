//! HDP and HDP-aMMSB end to end over HTTP: a topic model fitted by memoized VI read
//! through the shared topic and predict endpoints, and a planted-partition graph
//! uploaded, fitted and read back as communities.

mod common;

use common::{appstream_docs, assert_problem, TestServer};
use serde_json::{json, Value};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hdp_fits_and_serves_topics_and_predictions() {
    let mut s = TestServer::start().await;
    let corpus = s.upload(json!({"documents": appstream_docs(150)})).await;
    let cid = corpus["id"].as_str().unwrap();
    let (st, e) = s.post("/v1/jobs", &json!({"corpus_id": cid, "model": "hdp", "params": {"passes": 0}})).await;
    assert_problem(st, &e, 422, Some("params.passes"));
    let job = s.submit(cid, "hdp", json!({"topics": 12, "passes": 8, "batches": 2}), 3).await;
    let done = s.wait(job["id"].as_str().unwrap(), Duration::from_secs(120)).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    // Progress reports the objective, and the stored trace of it never decreases
    // (memoized passes are exact; 1e-9 relative allows for rounding).
    assert!(done["progress"]["diagnostics"]["objective"].is_number() || done["progress"]["objective"].is_number(), "{done}");
    let model_id = done["model_id"].as_str().unwrap();
    let (_, m) = s.get(&format!("/v1/models/{model_id}")).await;
    let trace: Vec<f64> = m["diagnostics"]["objective_trace"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    assert!(!trace.is_empty());
    for w in trace.windows(2) {
        assert!(w[1] >= w[0] - 1e-9 * w[0].abs(), "objective fell: {trace:?}");
    }
    let (st, topics) = s.get(&format!("/v1/models/{model_id}/topics?n=5&rank=frex")).await;
    assert_eq!(st, 200, "{topics}");
    let topics = topics["topics"].as_array().unwrap().clone();
    assert!(!topics.is_empty() && topics.len() <= 12, "{} topics", topics.len());
    for t in &topics {
        assert_eq!(t["words"].as_array().unwrap().len(), 5);
    }
    let doc = &appstream_docs(1)[0];
    let (st, p) = s.post(&format!("/v1/models/{model_id}/predict"), &json!({"documents": [{"id": "x", "text": doc["text"]}]})).await;
    assert_eq!(st, 200, "{p}");
    let theta: Vec<f64> = p["predictions"][0]["topic_proportions"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    assert_eq!(theta.len(), topics.len());
    assert!((theta.iter().sum::<f64>() - 1.0).abs() < 1e-6, "{theta:?}");
    // Representative documents: HDP keeps no per-document proportions, so every corpus
    // document is folded in through the model's prediction; the top document's
    // proportions are what predicting its own text gives.
    let (st, reps) = s.get(&format!("/v1/models/{model_id}/topics/0/documents?n=3")).await;
    assert_eq!(st, 200, "{reps}");
    assert_eq!((reps["source"].as_str(), reps["documents_ranked"].as_u64()), (Some("fold_in"), Some(150)), "{reps}");
    let top = &reps["documents"][0];
    let text = appstream_docs(150).into_iter().find(|d| d["id"] == top["id"]).expect("a corpus document")["text"].clone();
    let (_, p) = s.post(&format!("/v1/models/{model_id}/predict"), &json!({"documents": [{"id": "top", "text": text}]})).await;
    let predicted: Vec<f64> = p["predictions"][0]["topic_proportions"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    let folded: Vec<f64> = top["topic_proportions"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    assert_eq!(predicted.len(), folded.len());
    assert!(predicted.iter().zip(&folded).all(|(a, b)| (a - b).abs() < 1e-9), "{predicted:?} vs {folded:?}");
    let (st, e) = s.get(&format!("/v1/models/{model_id}/communities")).await;
    assert_problem(st, &e, 409, Some("model"));
    s.stop().await;
}

/// Three planted blocks of 14 nodes, dense inside (p = 0.6), sparse across (p = 0.02),
/// drawn with a fixed LCG so the test needs no RNG crate.
fn planted_graph() -> (Vec<String>, Vec<[String; 2]>, Vec<usize>) {
    let (blocks, size) = (3, 14);
    let n = blocks * size;
    let names: Vec<String> = (0..n).map(|i| format!("n{i}")).collect();
    let truth: Vec<usize> = (0..n).map(|i| i / size).collect();
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut uniform = || {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut edges = Vec::new();
    for i in 0..n {
        for j in i + 1..n {
            let p = if truth[i] == truth[j] { 0.6 } else { 0.02 };
            if uniform() < p {
                edges.push([names[i].clone(), names[j].clone()]);
            }
        }
    }
    (names, edges, truth)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hdp_ammsb_recovers_planted_communities_over_http() {
    let mut s = TestServer::start().await;
    let (nodes, edges, truth) = planted_graph();
    let (st, g) = s.post("/v1/graphs", &json!({"name": "planted", "nodes": nodes, "edges": edges})).await;
    assert_eq!(st, 201, "{g}");
    let gid = g["id"].as_str().unwrap().to_string();
    let (st, e) = s.post("/v1/jobs", &json!({"graph_id": gid, "model": "hdp_ammsb", "params": {"epsilon": 2.0}})).await;
    assert_problem(st, &e, 422, Some("params.epsilon"));

    let (st, job) = s.post("/v1/jobs", &json!({"graph_id": gid, "model": "hdp_ammsb", "params": {"communities": 8, "passes": 60}, "seed": 2})).await;
    assert_eq!(st, 202, "{job}");
    assert_eq!(job["graph_id"], gid.as_str());
    let done = s.wait(job["id"].as_str().unwrap(), Duration::from_secs(120)).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let model_id = done["model_id"].as_str().unwrap();
    let (st, m) = s.get(&format!("/v1/models/{model_id}")).await;
    assert_eq!(st, 200);
    assert_eq!((m["graph_id"].as_str(), m["corpus_id"].is_null()), (Some(gid.as_str()), true), "{m}");

    let (st, c) = s.get(&format!("/v1/models/{model_id}/communities")).await;
    assert_eq!(st, 200, "{c}");
    let members = c["nodes"].as_array().unwrap();
    assert_eq!(members.len(), truth.len());
    let argmax = |v: &Value| -> usize {
        let w: Vec<f64> = v["membership"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        (0..w.len()).max_by(|&a, &b| w[a].total_cmp(&w[b])).unwrap()
    };
    // Every planted block maps to one community, and different blocks to different
    // ones (with p_in = 0.6 and p_out = 0.02 the blocks are far apart: a recovery
    // that misplaces a node here is a bug, not noise).
    let assigned: Vec<usize> = members.iter().map(argmax).collect();
    for b in 0..3 {
        let block: Vec<usize> = (0..truth.len()).filter(|&i| truth[i] == b).map(|i| assigned[i]).collect();
        assert!(block.iter().all(|&k| k == block[0]), "block {b} split: {block:?}");
    }
    assert!(assigned[0] != assigned[14] && assigned[14] != assigned[28] && assigned[0] != assigned[28], "{assigned:?}");
    for k in c["communities"].as_array().unwrap() {
        let p = k["link_probability"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&p), "{k}");
    }
    // Topic endpoints refuse a graph model, naming the model.
    let (st, e) = s.get(&format!("/v1/models/{model_id}/topics")).await;
    assert_problem(st, &e, 409, Some("model"));
    // While a job is queued or running on the graph, the graph cannot be deleted.
    let (st, long) = s.post("/v1/jobs", &json!({"graph_id": gid, "model": "hdp_ammsb", "params": {"passes": 100000, "tolerance": 0}})).await;
    assert_eq!(st, 202, "{long}");
    let long_id = long["id"].as_str().unwrap();
    let (st, e) = s.delete_with_body(&format!("/v1/graphs/{gid}")).await;
    assert_problem(st, &e, 409, None);
    let (st, _) = s.post(&format!("/v1/jobs/{long_id}/cancel"), &json!({})).await;
    assert_eq!(st, 202);
    assert_eq!(s.wait(long_id, Duration::from_secs(30)).await["status"], "cancelled");
    assert_eq!(s.delete(&format!("/v1/graphs/{gid}")).await, 204);
    // The model outlives its graph, like topic models outlive their corpus.
    let (st, _) = s.get(&format!("/v1/models/{model_id}/communities")).await;
    assert_eq!(st, 200);
    s.stop().await;
}
