//! Sweeps over the number of topics through HTTP: a sweep on a corpus with a planted K
//! suggests that K and scores every row; a child cancelled on its own and a restart in
//! the middle of a sweep leave the other rows to finish; cancelling a sweep stops all of
//! it; bad requests are refused by field and queue nothing. Topic stability is served
//! on the topics of a two-chain fit and null on a one-chain fit.

mod common;

use common::{assert_problem, TestServer};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(300);

/// Poll a sweep until it is neither queued nor running.
async fn wait_sweep(s: &TestServer, id: &str) -> Value {
    let t0 = Instant::now();
    loop {
        let (st, v) = s.get(&format!("/v1/sweeps/{id}")).await;
        assert_eq!(st, 200, "{v}");
        if !matches!(v["status"].as_str(), Some("queued" | "running")) {
            return v;
        }
        assert!(t0.elapsed() < LIMIT, "sweep {id} still {} after {LIMIT:?}: {v}", v["status"]);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn bars(s: &TestServer, documents: usize) -> String {
    let corpus = s.upload(json!({"name": "bars", "synthetic": {"kind": "bars", "documents": documents, "tokens": 100, "seed": 5}})).await;
    corpus["id"].as_str().unwrap().to_string()
}

fn row_for(sweep: &Value, k: u64) -> &Value {
    sweep["rows"].as_array().unwrap().iter().find(|r| r["topics"] == json!(k) && r["model"] != "hdp").unwrap_or_else(|| panic!("no row for K = {k}: {sweep}"))
}

/// The bars corpus is drawn from LDA with 10 topics (five horizontal and five vertical
/// bars). With two chains the sweep suggests the most stable K: fewer topics merge
/// bars and the chains merge different ones, more split them and the chains split
/// differently, and at K = 10 both chains find the ten bars. So the suggestion over
/// K = 5, 8, 10, 13 must be 10, and the residual dispersion must be larger at K = 5
/// (bars merged: variance the topics leave unexplained) than at K = 10.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_on_a_planted_corpus_suggests_its_k_and_scores_every_row() {
    let s = TestServer::start().await;
    let corpus_id = bars(&s, 1500).await;
    let request = json!({
        "corpus_id": corpus_id, "model": "lda", "topics": [13, 5, 8, 10], "chains": 2,
        "params": {"iterations": 200, "burn_in": 100, "thin": 5}, "seed": 3, "heldout_fraction": 0.2, "include_hdp": true,
    });
    let (st, created) = s.post("/v1/sweeps", &request).await;
    assert_eq!(st, 202, "{created}");
    // The runner may have claimed the first fit before the answer was written.
    assert!(matches!(created["status"].as_str(), Some("queued" | "running")), "{created}");
    assert_eq!(created["rows"].as_array().unwrap().len(), 5, "four K and the HDP row");
    let id = created["id"].as_str().unwrap();
    let sweep = wait_sweep(&s, id).await;
    assert_eq!(sweep["status"], "succeeded", "{sweep}");
    assert_eq!(sweep["suggested_topics"], 10, "{sweep}");
    assert!(sweep["suggestion"]["rule"].as_str().unwrap().contains("stability"), "two chains: the stability rule");
    assert_eq!(sweep["suggestion"]["cautions"], json!([]), "inside the grid, and the chains agree at K = 10");
    // LDA's α is estimated at every K from tomotopy's start, and no fit ends with a
    // Chib-style estimate the rows do not read, unless the params say otherwise
    // (decisions 0072, 0074).
    let p = &sweep["params"];
    assert_eq!((&p["optimize_interval"], &p["alpha"], &p["heldout_chain_length"]), (&json!(10), &json!(0.1), &json!(0)), "{p}");
    let ks: Vec<Value> = sweep["rows"].as_array().unwrap().iter().map(|r| r["topics"].clone()).collect();
    assert_eq!(&ks[..4], &[json!(5), json!(8), json!(10), json!(13)], "rows by K, the HDP row last");
    for k in [5, 8, 10, 13] {
        let r = row_for(&sweep, k);
        assert_eq!(r["status"], "succeeded", "{r}");
        for field in ["heldout_loglik_per_token", "coherence_npmi", "exclusivity", "residual_dispersion", "rhat_max", "fit_s"] {
            assert!(r[field].is_number(), "K = {k}: {field} is {}", r[field]);
        }
        // Standard errors: positive (documents and topics differ) and well below the
        // spread of the scores themselves.
        for field in ["heldout_se", "coherence_npmi_se", "exclusivity_se", "stability_se"] {
            let se = r[field].as_f64().unwrap_or_else(|| panic!("K = {k}: {field} is {}", r[field]));
            assert!(se > 0.0 && se < 1.0, "K = {k}: {field} = {se}");
        }
        let stability = r["stability"].as_f64().expect("two chains have a stability");
        assert!((0.0..=1.0).contains(&stability), "{stability}");
        assert!(r["exclusivity"].as_f64().unwrap() <= 1.0);
    }
    let dispersion = |k| row_for(&sweep, k)["residual_dispersion"].as_f64().unwrap();
    assert!(dispersion(5) > dispersion(10), "K = 5 {} against K = 10 {}", dispersion(5), dispersion(10));
    let hdp = &sweep["rows"][4];
    assert_eq!((hdp["model"].as_str(), hdp["inferred_topics"].as_bool()), (Some("hdp"), Some(true)));
    assert!(hdp["topics"].as_u64().unwrap() >= 1 && hdp["heldout_loglik_per_token"].is_number(), "{hdp}");
    assert!(hdp["stability"].is_null(), "one chain: stability unknown");

    // Every child is an ordinary job carrying the sweep's id.
    let job = row_for(&sweep, 10)["job_id"].as_str().unwrap();
    let (_, j) = s.get(&format!("/v1/jobs/{job}")).await;
    assert_eq!(j["sweep_id"], id);

    // Topic stability: per topic on the two-chain fit, null on the one-chain HDP.
    let model = row_for(&sweep, 10)["model_id"].as_str().unwrap();
    let (_, fitted) = s.get(&format!("/v1/models/{model}")).await;
    assert_eq!(fitted["diagnostics"]["optimizations"], 20, "α re-estimated at every 10th of the 200 sweeps: {fitted}");
    assert!(fitted["diagnostics"]["heldout"].is_null() && fitted["diagnostics"]["test_documents"].as_u64() > Some(0), "held out, not scored: {fitted}");
    let (st, topics) = s.get(&format!("/v1/models/{model}/topics?n=3")).await;
    assert_eq!(st, 200, "{topics}");
    for t in topics["topics"].as_array().unwrap() {
        let st = &t["stability"];
        assert_eq!(st["chains"], 2, "{t}");
        assert!(st["matched"].as_u64().unwrap() <= 1 && (0.0..=1.0).contains(&st["similarity"].as_f64().unwrap()), "{t}");
    }
    let (_, hdp_topics) = s.get(&format!("/v1/models/{}/topics?n=3", hdp["model_id"].as_str().unwrap())).await;
    assert!(hdp_topics["topics"].as_array().unwrap().iter().all(|t| t["stability"].is_null()), "{hdp_topics}");

    // The CSV form: a header and one line per row, in the JSON's order.
    let (st, ct, csv) = s.get_text(&format!("/v1/sweeps/{id}?format=csv")).await;
    assert_eq!(st, 200);
    assert!(ct.starts_with("text/csv"), "{ct}");
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].starts_with("topics,model,status,job_id,model_id,heldout_loglik_per_token,coherence_npmi,exclusivity,stability"), "{}", lines[0]);
    assert!(lines[0].ends_with(",error,heldout_se,coherence_npmi_se,exclusivity_se,stability_se"), "{}", lines[0]);
    assert_eq!(lines.len(), 6);
    assert!(lines[1].starts_with("5,lda,succeeded,"), "{}", lines[1]);
    let (_, listed) = s.get(&format!("/v1/sweeps?corpus_id={corpus_id}")).await;
    assert_eq!(listed["sweeps"][0]["id"], id);
}

/// One child cancelled on its own and the server restarted while the others run: the
/// sweep finishes with the cancelled row cancelled (and unscored) and every other row
/// scored. Then a second sweep cancelled as a whole: every row stops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_survives_a_cancelled_child_and_a_restart_and_cancels_as_a_whole() {
    let mut s = TestServer::start().await;
    let corpus_id = bars(&s, 600).await;
    // α fixed, as the params ask: the sweep adds no estimation.
    let request = json!({"corpus_id": corpus_id, "model": "lda", "topics": [6, 10, 14], "params": {"iterations": 400, "checkpoint_every_s": 0.2, "optimize_interval": 0}, "seed": 9});
    let (st, created) = s.post("/v1/sweeps", &request).await;
    assert_eq!(st, 202, "{created}");
    assert_eq!(created["params"]["optimize_interval"], 0, "{created}");
    assert!(created["params"].get("alpha").is_none(), "a fixed α keeps the family's 50/K: {created}");
    let id = created["id"].as_str().unwrap().to_string();
    let child = |sweep: &Value, k: u64| row_for(sweep, k)["job_id"].as_str().unwrap().to_string();
    let (st, cancelled) = s.post(&format!("/v1/jobs/{}/cancel", child(&created, 14)), &json!({})).await;
    assert_eq!(st, 202, "{cancelled}");
    // Restart once the first child is running.
    let t0 = Instant::now();
    loop {
        let (_, v) = s.get(&format!("/v1/sweeps/{id}")).await;
        if v["status"] == "running" {
            break;
        }
        assert!(t0.elapsed() < LIMIT, "{v}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    s.restart().await;
    let sweep = wait_sweep(&s, &id).await;
    assert_eq!(sweep["status"], "succeeded", "{sweep}");
    assert_eq!(row_for(&sweep, 14)["status"], "cancelled");
    assert!(row_for(&sweep, 14)["heldout_loglik_per_token"].is_null());
    for k in [6, 10] {
        assert_eq!(row_for(&sweep, k)["status"], "succeeded", "{sweep}");
        assert!(row_for(&sweep, k)["heldout_loglik_per_token"].is_number());
        assert!(row_for(&sweep, k)["stability"].is_null(), "one chain: stability unknown");
    }
    assert!([6, 10].contains(&sweep["suggested_topics"].as_u64().unwrap()), "{sweep}");
    assert!(sweep["suggestion"]["rule"].as_str().unwrap().contains("one standard error"), "one chain: the held-out rule");

    let (st, second) =
        s.post("/v1/sweeps", &json!({"corpus_id": corpus_id, "model": "lda", "topics": [4, 7], "params": {"iterations": 5000}, "seed": 1})).await;
    assert_eq!(st, 202, "{second}");
    let second_id = second["id"].as_str().unwrap();
    let (st, after) = s.delete_with_body(&format!("/v1/sweeps/{second_id}")).await;
    assert_eq!(st, 202, "{after}");
    let stopped = wait_sweep(&s, second_id).await;
    assert_eq!(stopped["status"], "cancelled", "{stopped}");
    assert!(stopped["rows"].as_array().unwrap().iter().all(|r| r["status"] == "cancelled"), "{stopped}");
    assert_eq!(s.delete(&format!("/v1/sweeps/{}", uuid_like())).await, 404);
}

fn uuid_like() -> &'static str {
    "00000000-0000-0000-0000-000000000000"
}

/// Each refusal names its field and queues nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_sweeps_are_refused_by_field_and_queue_nothing() {
    let s = TestServer::start().await;
    let corpus_id = bars(&s, 50).await;
    let base = json!({"corpus_id": corpus_id, "model": "lda", "topics": [3, 5]});
    let with = |key: &str, value: Value| {
        let mut b = base.clone();
        b[key] = value;
        b
    };
    for (body, status, field) in [
        (with("model", json!("hpc")), 422, "model"),
        (with("model", json!("hdp")), 422, "model"),
        (with("topics", json!([])), 422, "topics"),
        (with("topics", json!([4, 4])), 422, "topics"),
        (with("topics", json!([0, 3])), 422, "topics"),
        (json!({"corpus_id": corpus_id, "model": "dcnt", "topics": [1, 3]}), 422, "topics"),
        (with("params", json!({"topics": 4})), 422, "params.topics"),
        (with("params", json!({"test_fraction": 0.2})), 422, "params.test_fraction"),
        (with("params", json!({"iterations": 0})), 422, "params.iterations"),
        (with("heldout_fraction", json!(0.7)), 422, "heldout_fraction"),
        (with("heldout_fraction", json!(0)), 422, "heldout_fraction"),
        (with("corpus_id", json!("no-such-corpus")), 422, "corpus_id"),
        (with("colour", json!("red")), 422, "colour"),
    ] {
        let (st, v) = s.post("/v1/sweeps", &body).await;
        assert_problem(st, &v, status, Some(field));
    }
    let (_, jobs) = s.get("/v1/jobs").await;
    assert_eq!(jobs["total"], 0, "a refused sweep queues nothing");
    let (_, sweeps) = s.get("/v1/sweeps").await;
    assert_eq!(sweeps["sweeps"], json!([]));
    let (st, v) = s.get(&format!("/v1/sweeps/{}", uuid_like())).await;
    assert_problem(st, &v, 404, None);
    let (st, v) = s.get(&format!("/v1/sweeps/{}?format=xml", uuid_like())).await;
    assert_problem(st, &v, 422, Some("query.format"));
}
