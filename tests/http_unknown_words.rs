//! Unknown words over real HTTP (issue 16, item 4): a predict or held-out document whose
//! words are all outside the model's vocabulary is not scored as a perfect 0.0. Each
//! document reports its known `tokens` and its `unknown_tokens`; one with no known token
//! gets `log_likelihood: null` and a warning, the totals count only scored documents,
//! and a request in which no document has a known token is a 422 naming them. Every
//! family with documents (LDA, HPC, DCNT, HDP) on one tiny labelled corpus.

mod common;

use common::{assert_problem, TestServer};
use serde_json::{json, Value};
use std::time::Duration;

/// 60 short documents of three themes, each labelled with its theme.
fn themed_docs() -> Vec<Value> {
    let themes = [
        ("sports", ["football", "goal", "match", "team", "player", "league"]),
        ("music", ["guitar", "melody", "concert", "piano", "chord", "song"]),
        ("cooking", ["recipe", "oven", "flour", "butter", "sauce", "garlic"]),
    ];
    (0..60)
        .map(|i| {
            let (label, words) = themes[i % 3];
            let text: Vec<&str> = (0..12).map(|j| words[(i * 7 + j * 5) % words.len()]).collect();
            json!({"id": format!("d{i}"), "text": text.join(" "), "labels": [label]})
        })
        .collect()
}

async fn fit(s: &TestServer, cid: &str, model: &str, params: Value) -> String {
    let job = s.submit(cid, model, params, 3).await;
    let done = s.wait(job["id"].as_str().unwrap(), Duration::from_secs(180)).await;
    assert_eq!(done["status"], "succeeded", "{model}: {done}");
    done["model_id"].as_str().unwrap().to_string()
}

/// A mixed request (an unknown-only document first, then a normal one) and an
/// all-unknown request to `/predict`.
async fn check_predict(s: &TestServer, model: &str, mid: &str) {
    let path = format!("/v1/models/{mid}/predict");
    let body = json!({"documents": [
        {"id": "nonsense", "text": "zzyzx qwertyuiop blorft"},
        {"text": "guitar melody concert piano zzyzx"}
    ]});
    let (st, pred) = s.post(&path, &body).await;
    assert_eq!(st, 200, "{model}: {pred}");
    let p = &pred["predictions"];
    assert_eq!((p[0]["tokens"].as_u64(), p[0]["unknown_tokens"].as_u64()), (Some(0), Some(3)), "{model}: {pred}");
    assert_eq!((p[1]["tokens"].as_u64(), p[1]["unknown_tokens"].as_u64()), (Some(4), Some(1)), "{model}: {pred}");
    assert_eq!(p[1]["id"], "1");
    let warnings = pred["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{model}: {pred}");
    assert_eq!((warnings[0]["field"].as_str(), warnings[0]["id"].as_str()), (Some("documents[0]"), Some("nonsense")));
    assert!(warnings[0]["detail"].as_str().unwrap().contains("3 tokens"), "{model}: {pred}");

    // Nothing known anywhere: a 422 naming the documents (index, and id when given).
    let all_unknown = json!({"documents": [{"id": "a", "text": "zzyzx"}, {"counts": {"blorft": 2}}]});
    let (st, problem) = s.post(&path, &all_unknown).await;
    assert_problem(st, &problem, 422, Some("documents"));
    let detail = problem["detail"].as_str().unwrap();
    assert!(detail.contains(r#"documents[0] (id "a")"#) && detail.contains("documents[1]"), "{model}: {problem}");
}

/// The same for `/heldout-likelihood` (a job): the unknown-only document is null and
/// warned, and the totals are the normal document's alone.
async fn check_heldout(s: &TestServer, model: &str, mid: &str, params: Value) {
    let path = format!("/v1/models/{mid}/heldout-likelihood");
    let before = s.get("/v1/jobs").await.1["total"].as_u64().unwrap();
    let all_unknown = json!({"documents": [{"id": "a", "text": "zzyzx"}, {"id": "b", "text": "the of and"}], "params": params});
    let (st, problem) = s.post(&path, &all_unknown).await;
    assert_problem(st, &problem, 422, Some("documents"));
    let detail = problem["detail"].as_str().unwrap();
    assert!(detail.contains(r#"documents[0] (id "a")"#) && detail.contains(r#"documents[1] (id "b")"#), "{model}: {problem}");
    assert_eq!(s.get("/v1/jobs").await.1["total"].as_u64().unwrap(), before, "a rejected request queues nothing");

    let body = json!({"documents": [
        {"id": "nonsense", "text": "zzyzx qwertyuiop blorft"},
        {"id": "music", "text": "guitar melody concert piano chord song zzyzx"}
    ], "params": params, "seed": 2});
    let (st, job) = s.post(&path, &body).await;
    assert_eq!(st, 202, "{model}: {job}");
    let done = s.wait(job["id"].as_str().unwrap(), Duration::from_secs(120)).await;
    assert_eq!(done["status"], "succeeded", "{model}: {done}");
    let r = &done["result"];
    let docs = r["documents"].as_array().unwrap();
    assert!(docs[0]["log_likelihood"].is_null(), "{model}: an unknown-only document is not scored: {r}");
    assert_eq!((docs[0]["tokens"].as_u64(), docs[0]["unknown_tokens"].as_u64()), (Some(0), Some(3)), "{model}: {r}");
    assert_eq!((docs[1]["tokens"].as_u64(), docs[1]["unknown_tokens"].as_u64()), (Some(6), Some(1)), "{model}: {r}");
    let music = docs[1]["log_likelihood"].as_f64().unwrap();
    assert!(music < 0.0, "{model}: {r}");
    // Totals and per-token figures are the scored document's alone.
    assert_eq!(r["total_log_likelihood"].as_f64(), Some(music), "{model}: {r}");
    assert_eq!((r["tokens"].as_u64(), r["unknown_tokens"].as_u64(), r["scored_documents"].as_u64()), (Some(6), Some(4), Some(1)), "{model}: {r}");
    let per_token = r["log_likelihood_per_token"].as_f64().unwrap();
    assert!((per_token - music / 6.0).abs() < 1e-12, "{model}: {r}");
    assert!((r["perplexity"].as_f64().unwrap() - (-music / 6.0).exp()).abs() < 1e-9, "{model}: {r}");
    let warnings = r["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{model}: {r}");
    assert_eq!((warnings[0]["field"].as_str(), warnings[0]["id"].as_str()), (Some("documents[0]"), Some("nonsense")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_words_are_counted_and_never_scored() {
    let s = TestServer::start().await;
    let corpus = s.upload(json!({"name": "themes", "documents": themed_docs()})).await;
    assert_eq!(corpus["num_terms"], 18, "{corpus}");
    let cid = corpus["id"].as_str().unwrap().to_string();

    let lda = fit(&s, &cid, "lda", json!({"topics": 3, "iterations": 20, "threads": 1})).await;
    check_predict(&s, "lda", &lda).await;
    check_heldout(&s, "lda", &lda, json!({"chain_length": 50})).await;

    let dcnt_params = json!({"topics": 3, "iterations": 20, "burn_in": 10, "thin": 5, "threads": 1});
    let dcnt = fit(&s, &cid, "dcnt", dcnt_params).await;
    check_predict(&s, "dcnt", &dcnt).await;
    check_heldout(&s, "dcnt", &dcnt, json!({"burn_in": 10, "chain_length": 20, "acceptance_samples": 20})).await;

    let hpc = fit(&s, &cid, "hpc", json!({"iterations": 10, "threads": 1})).await;
    check_predict(&s, "hpc", &hpc).await;

    let hdp = fit(&s, &cid, "hdp", json!({"topics": 4, "passes": 2, "batches": 1})).await;
    check_predict(&s, "hdp", &hdp).await;
}
