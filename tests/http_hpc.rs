//! HPC end to end over real HTTP on the AppStream corpus: upload the whole corpus as
//! NDJSON with its category tree, fit HPC with a validation and a test split, read
//! topics with labels, parents and FREX, predict labels for a new document, and check
//! that the calibrated predictions beat the most-frequent-labels baseline on micro-F1.

mod common;

use common::TestServer;
use serde_json::{json, Value};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hpc_fits_appstream_and_beats_the_baseline() {
    let s = TestServer::start().await;
    let body = common::strict_ndjson(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/appstream.jsonl"));
    // The corpus repeats one application id: keep the first and report the other.
    let (st, corpus) = s.post_raw("/v1/corpora?name=appstream&stem=true&top_fraction=0.2&duplicate_ids=keep_first", body, "application/x-ndjson").await;
    assert_eq!(st, 201, "{corpus}");
    assert_eq!(corpus["num_duplicates_skipped"], 1, "{corpus}");
    assert_eq!(corpus["tree_depth"], 3);
    let cid = corpus["id"].as_str().unwrap().to_string();

    let job = s.submit(&cid, "hpc", json!({"iterations": 40, "test_fraction": 0.15, "threads": 2}), 7).await;
    let done = s.wait(job["id"].as_str().unwrap(), Duration::from_secs(300)).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    for key in ["rate_acceptance", "affinity_acceptance", "mass_matrix_repairs", "mode_hessian_repairs", "log_likelihood_labels", "log_posterior"] {
        assert!(done["progress"][key].is_number(), "progress lacks {key}: {done}");
    }
    let mid = done["model_id"].as_str().unwrap().to_string();

    let (st, model) = s.get(&format!("/v1/models/{mid}")).await;
    assert_eq!(st, 200, "{model}");
    let (st, evaluation) = s.get(&format!("/v1/models/{mid}/evaluation")).await;
    assert_eq!(st, 200, "{evaluation}");
    assert_eq!(evaluation["evaluation"], model["diagnostics"]["evaluation"]);
    let eval = &evaluation["evaluation"];
    let (f1, baseline) = (eval["model"]["micro"]["f1"].as_f64().unwrap(), eval["most_frequent_baseline"]["micro"]["f1"].as_f64().unwrap());
    assert!(f1 > baseline + 0.1, "micro-F1 {f1} vs baseline {baseline}");
    assert!(eval["model"]["documents"].as_u64().unwrap() > 200, "{eval}");

    // The same evaluation as a job of its own re-derives the fit's test split from the
    // corpus and the fit's seed, so it must give exactly the stored scores.
    let (st, ejob) = s.post(&format!("/v1/models/{mid}/evaluation"), &json!({})).await;
    assert_eq!(st, 202, "{ejob}");
    assert_eq!(ejob["kind"], "evaluation");
    assert_eq!(ejob["source_model_id"], mid.as_str());
    let edone = s.wait(ejob["id"].as_str().unwrap(), Duration::from_secs(120)).await;
    assert_eq!(edone["status"], "succeeded", "{edone}");
    assert_eq!(edone["result"]["evaluation"], evaluation["evaluation"]);
    assert!(edone["model_id"].is_null(), "an evaluation job produces no model");
    // HPC has no held-out likelihood estimator: a 409 naming the model, nothing queued.
    let (_, before) = s.get("/v1/jobs").await;
    let (st, problem) = s.post(&format!("/v1/models/{mid}/heldout-likelihood"), &json!({"documents": [{"text": "a game"}]})).await;
    common::assert_problem(st, &problem, 409, Some("model"));
    let (_, after) = s.get("/v1/jobs").await;
    assert_eq!(before["total"], after["total"]);

    // Topics carry their labels and tree links, and FREX ranks within each topic.
    let (st, topics) = s.get(&format!("/v1/models/{mid}/topics?n=8&rank=frex")).await;
    assert_eq!(st, 200);
    let list = topics["topics"].as_array().unwrap();
    assert_eq!(list.len() as u64, corpus["num_labels"].as_u64().unwrap());
    let by_label = |name: &str| list.iter().find(|t| t["label"] == name).unwrap_or_else(|| panic!("no topic {name}"));
    let game = by_label("Game");
    assert!(game["parent"].is_null());
    let children: Vec<u64> = game["children"].as_array().unwrap().iter().map(|c| c.as_u64().unwrap()).collect();
    assert!(!children.is_empty());
    for c in &children {
        assert_eq!(list[*c as usize]["parent"], game["id"], "child {c} of Game");
    }
    let game_words: Vec<&str> = game["words"].as_array().unwrap().iter().map(|w| w["word"].as_str().unwrap()).collect();
    assert!(game_words.iter().any(|w| w.starts_with("game") || w.starts_with("play")), "Game's FREX words: {game_words:?}");
    // Exclusivity against every topic is never above exclusivity against siblings.
    let (_, all) = s.get(&format!("/v1/models/{mid}/topics?n=8&rank=frequency&comparison=all")).await;
    let (_, sib) = s.get(&format!("/v1/models/{mid}/topics?n=8&rank=frequency")).await;
    for (a, b) in all["topics"].as_array().unwrap().iter().zip(sib["topics"].as_array().unwrap()) {
        for (wa, wb) in a["words"].as_array().unwrap().iter().zip(b["words"].as_array().unwrap()) {
            assert_eq!(wa["word"], wb["word"]);
            assert!(wa["exclusivity"].as_f64().unwrap() <= wb["exclusivity"].as_f64().unwrap() + 1e-6);
        }
    }

    // A new document about games gets the Game label.
    let text = "a fast arcade game: play levels, shoot enemies and beat the high score in this action game";
    let (st, pred) = s.post(&format!("/v1/models/{mid}/predict"), &json!({"documents": [{"id": "new", "text": text}]})).await;
    assert_eq!(st, 200, "{pred}");
    let p = &pred["predictions"][0];
    let labels = p["labels"].as_array().unwrap();
    assert_eq!(labels.len(), list.len());
    let prob = |name: &str| labels.iter().find(|l| l["label"] == name).unwrap()["probability"].as_f64().unwrap();
    // Ancestors are stripped from training labels (a document labelled ArcadeGame no
    // longer carries Game), so the game labels are Game's children.
    let mut ranked: Vec<(&str, f64)> = labels.iter().map(|l| (l["label"].as_str().unwrap(), l["probability"].as_f64().unwrap())).collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
    let is_game = |name: &str| name == "Game" || children.iter().any(|c| list[*c as usize]["label"] == name);
    assert!(is_game(ranked[0].0), "most probable labels: {:?}", &ranked[..5]);
    assert!(prob("ArcadeGame") > prob("Office"), "P(ArcadeGame) {} vs P(Office) {}", prob("ArcadeGame"), prob("Office"));
    let predicted: Vec<&str> = p["predicted_labels"].as_array().unwrap().iter().map(|v: &Value| v.as_str().unwrap()).collect();
    assert!(predicted.iter().any(|l| is_game(l)), "{predicted:?}");
}
