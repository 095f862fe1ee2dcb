//! Steering a model through HTTP (issue 59): seeded topics are served under their
//! names and keep their seed words; bad seeds are refused by the item that is wrong
//! and queue nothing; two models' topics are compared pair by pair.

mod common;

use common::{appstream_docs, assert_problem, TestServer};
use serde_json::{json, Value};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(300);

async fn appstream(s: &TestServer) -> String {
    let corpus = s.upload(json!({"name": "appstream", "documents": appstream_docs(300)})).await;
    corpus["id"].as_str().unwrap().to_string()
}

async fn fit(s: &TestServer, corpus_id: &str, params: Value, seed: u64) -> (String, Value) {
    let job = s.submit(corpus_id, "lda", params, seed).await;
    s.model_of(&job, LIMIT).await
}

fn seeds() -> Value {
    json!([{"name": "games", "words": ["game", "play", "player"]}, {"name": "audio", "words": ["Audio", "music"]}])
}

/// A seeded fit's topics 0 and 1 carry the seeds' names on the topic list, and each
/// keeps its seed words among its 10 most frequent words (the fit's own φ, so the words
/// are there because tokens of them were assigned to the topic).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seeded_topics_are_served_under_their_names_with_their_seed_words() {
    let s = TestServer::start().await;
    let corpus_id = appstream(&s).await;
    let params = json!({"topics": 8, "iterations": 80, "seed_words": seeds()});
    let (id, model) = fit(&s, &corpus_id, params, 4).await;
    assert_eq!(model["params"]["seed_words"], seeds(), "the request's seeds are stored as given");
    assert_eq!(model["diagnostics"]["seeds"]["topics"][1], json!({"topic": 1, "name": "audio", "words": ["Audio", "music"]}));
    let (st, topics) = s.get(&format!("/v1/models/{id}/topics?n=10&rank=frequency")).await;
    assert_eq!(st, 200, "{topics}");
    let list = topics["topics"].as_array().unwrap();
    assert_eq!(list[0]["name"], "games");
    assert_eq!(list[1]["name"], "audio");
    assert!(list[2]["name"].is_null(), "unseeded topics have no name");
    let top = |k: usize| list[k]["words"].as_array().unwrap().iter().map(|w| w["word"].as_str().unwrap().to_string()).collect::<Vec<_>>();
    for (k, words) in [(0, vec!["game", "play"]), (1, vec!["audio", "music"])] {
        let top = top(k);
        assert!(words.iter().all(|w| top.iter().any(|t| t == w)), "topic {k}'s top words {top:?} lack a seed of {words:?}");
    }
    // A seeded topic can be renamed like any other.
    let (st, renamed) = s.patch(&format!("/v1/models/{id}/topics/0"), &json!({"name": "Games"})).await;
    assert_eq!((st, &renamed["topic"]["name"]), (200, &json!("Games")), "{renamed}");
}

/// Bad seeds are 422s naming the item, and nothing is queued; with
/// `missing_seed_words: ignore` the fit runs and reports the word it left out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_seeds_are_refused_by_item_and_missing_words_can_be_ignored() {
    let s = TestServer::start().await;
    let corpus_id = appstream(&s).await;
    let cases = [
        (json!({"topics": 4, "seed_words": [{"name": "games", "words": ["game", "zzyzx"]}]}), "params.seed_words[0].words[1]"),
        (json!({"topics": 1, "seed_words": seeds()}), "params.seed_words"),
        (json!({"topics": 4, "seed_words": [{"name": "a", "words": ["game"]}, {"name": "a", "words": ["music"]}]}), "params.seed_words[1].name"),
        (json!({"topics": 4, "seed_words": [{"name": "a", "words": []}]}), "params.seed_words[0].words"),
        (json!({"topics": 4, "seed_words": seeds(), "optimize_interval": 5, "optimize_beta": true}), "params.optimize_beta"),
        (json!({"topics": 4, "seed_words": seeds(), "seed_strength": -1}), "params.seed_strength"),
    ];
    for (params, field) in cases {
        let (st, body) = s.post("/v1/jobs", &json!({"corpus_id": corpus_id, "model": "lda", "params": params, "seed": 1})).await;
        assert_problem(st, &body, 422, Some(field));
    }
    let (_, jobs) = s.get("/v1/jobs").await;
    assert_eq!(jobs["total"], 0, "a refused fit queues nothing: {jobs}");
    let params = json!({"topics": 4, "iterations": 10, "missing_seed_words": "ignore", "seed_words": [{"name": "games", "words": ["game", "zzyzx"]}]});
    let (_, model) = fit(&s, &corpus_id, params, 2).await;
    assert_eq!(model["diagnostics"]["seeds"]["missing_words"], json!([{"topic": 0, "word": "zzyzx"}]));
}

/// A model compared with itself pairs every topic with itself at similarity 1; against
/// a fit from another seed every topic is paired once, with names on both sides; bad
/// queries are 422s and an unknown model a 404.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_models_compare_topic_by_topic() {
    let s = TestServer::start().await;
    let corpus_id = appstream(&s).await;
    let (a, _) = fit(&s, &corpus_id, json!({"topics": 6, "iterations": 60, "seed_words": seeds()}), 1).await;
    let (b, _) = fit(&s, &corpus_id, json!({"topics": 7, "iterations": 60}), 2).await;
    let (st, same) = s.get(&format!("/v1/models/{a}/compare/{a}")).await;
    assert_eq!(st, 200, "{same}");
    let pairs = same["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 6);
    for p in pairs {
        assert_eq!(p["a"]["id"], p["b"]["id"], "{p}");
        assert!((p["similarity"].as_f64().unwrap() - 1.0).abs() < 1e-9 && p["matched"] == true, "{p}");
        assert!(p["rose"].as_array().unwrap().is_empty() && p["fell"].as_array().unwrap().is_empty());
    }
    assert_eq!(pairs[0]["a"]["name"], "games");
    let (st, other) = s.get(&format!("/v1/models/{a}/compare/{b}?words=5")).await;
    assert_eq!(st, 200, "{other}");
    assert_eq!(other["pairs"].as_array().unwrap().len(), 6);
    assert_eq!(other["unpaired_b"].as_array().unwrap().len(), 1, "b's seventh topic has no partner: {other}");
    let mut bs: Vec<u64> = other["pairs"].as_array().unwrap().iter().map(|p| p["b"]["id"].as_u64().unwrap()).collect();
    bs.push(other["unpaired_b"][0]["id"].as_u64().unwrap());
    bs.sort();
    assert_eq!(bs, (0..7).collect::<Vec<u64>>(), "every topic of b appears once");
    for p in other["pairs"].as_array().unwrap() {
        assert!(p["rose"].as_array().unwrap().len() <= 5 && p["fell"].as_array().unwrap().len() <= 5);
        let sim = p["similarity"].as_f64().unwrap();
        assert_eq!(p["matched"], json!(sim >= 0.5), "{p}");
    }
    let (st, body) = s.get(&format!("/v1/models/{a}/compare/{b}?words=101")).await;
    assert_problem(st, &body, 422, Some("query.words"));
    let (st, body) = s.get(&format!("/v1/models/{a}/compare/nope")).await;
    assert_problem(st, &body, 404, None);
}

/// DCNT and SCNT take seeds through the same params: a seeded SCNT fit names its seeded
/// topics and keeps their seed words in their top 10, a DCNT seed word the vocabulary
/// lacks is a 422 naming it, and more seeds than topics is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dcnt_and_scnt_take_seeds() {
    let s = TestServer::start().await;
    let corpus_id = appstream(&s).await;
    for (model, params, field) in [
        ("dcnt", json!({"topics": 4, "seed_words": [{"name": "games", "words": ["game", "zzyzx"]}]}), "params.seed_words[0].words[1]"),
        (
            "scnt",
            json!({"topics": 2, "seed_words": [{"name": "a", "words": ["game"]}, {"name": "b", "words": ["music"]}, {"name": "c", "words": ["audio"]}]}),
            "params.seed_words",
        ),
    ] {
        let (st, body) = s.post("/v1/jobs", &json!({"corpus_id": corpus_id, "model": model, "params": params, "seed": 1})).await;
        assert_problem(st, &body, 422, Some(field));
    }
    let job = s.submit(&corpus_id, "scnt", json!({"topics": 6, "iterations": 40, "warm_start": 60, "seed_words": seeds()}), 3).await;
    seeded_model_of(&s, &job).await;
}

/// The model of a finished fit seeded with [`seeds`]: its topics 0 and 1 carry the seeds'
/// names, and the audio topic keeps "audio" and "music" among its 10 most frequent words.
async fn seeded_model_of(s: &TestServer, job: &Value) -> String {
    let done = s.wait(job["id"].as_str().unwrap(), LIMIT).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let id = done["model_id"].as_str().unwrap();
    let (st, topics) = s.get(&format!("/v1/models/{id}/topics?n=10&rank=frequency")).await;
    assert_eq!(st, 200, "{topics}");
    let list = topics["topics"].as_array().unwrap();
    assert_eq!((&list[0]["name"], &list[1]["name"]), (&json!("games"), &json!("audio")));
    let top: Vec<&str> = list[1]["words"].as_array().unwrap().iter().map(|w| w["word"].as_str().unwrap()).collect();
    assert!(["audio", "music"].iter().all(|w| top.contains(w)), "the audio topic's top words {top:?}");
    id.to_string()
}

/// PCM takes seeds through the same params (HPC, whose topics are its labels, refuses
/// them by name): a seeded PCM fit names its seeded topics, keeps their seed words in
/// their top 10 and reports its seeds in its diagnostics; a seed word the vocabulary
/// lacks is a 422 naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pcm_takes_seeds_and_hpc_refuses_them() {
    let s = TestServer::start().await;
    let corpus_id = appstream(&s).await;
    for (model, params, field) in [
        ("pcm", json!({"topics": 4, "seed_words": [{"name": "games", "words": ["game", "zzyzx"]}]}), "params.seed_words[0].words[1]"),
        ("hpc", json!({"seed_words": seeds()}), "params.seed_words"),
    ] {
        let (st, body) = s.post("/v1/jobs", &json!({"corpus_id": corpus_id, "model": model, "params": params, "seed": 1})).await;
        assert_problem(st, &body, 422, Some(field));
    }
    let job = s.submit(&corpus_id, "pcm", json!({"topics": 6, "iterations": 40, "seed_words": seeds()}), 3).await;
    let id = seeded_model_of(&s, &job).await;
    let (_, model) = s.get(&format!("/v1/models/{id}")).await;
    assert_eq!(model["diagnostics"]["seeds"]["topics"][1]["name"], "audio", "{}", model["diagnostics"]);
}
