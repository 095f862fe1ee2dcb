//! Held-out likelihood over real HTTP: an LDA fit with a test split scores it at the
//! end of the fit; `POST /v1/models/{id}/heldout-likelihood` queues an evaluation job
//! whose result is reproducible, survives a restart, and rejects bad input before
//! anything is queued.

mod common;

use common::{appstream_docs, assert_problem, TestServer};
use serde_json::{json, Value};
use std::time::Duration;

async fn job_total(s: &TestServer) -> u64 {
    s.get("/v1/jobs").await.1["total"].as_u64().unwrap()
}

/// Queue a held-out likelihood job, wait for it, return (job id, result).
async fn run_heldout(s: &TestServer, mid: &str, body: &Value) -> (String, Value) {
    let (st, job) = s.post(&format!("/v1/models/{mid}/heldout-likelihood"), body).await;
    assert_eq!(st, 202, "{job}");
    assert_eq!(job["kind"], "heldout_likelihood");
    let done = s.wait(job["id"].as_str().unwrap(), Duration::from_secs(60)).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    (job["id"].as_str().unwrap().to_string(), done["result"].clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lda_scores_its_test_split_and_submitted_documents() {
    let mut s = TestServer::start().await;
    let corpus = s.upload(json!({"name": "apps", "documents": appstream_docs(200), "preprocess": {"min_df": 2}})).await;
    let cid = corpus["id"].as_str().unwrap().to_string();
    let params = json!({"topics": 8, "iterations": 60, "test_fraction": 0.2, "heldout_chain_length": 200, "threads": 2});
    let job = s.submit(&cid, "lda", params, 3).await;
    // The job keeps its parameters with every default filled in (α = 50/K, burn-in half
    // the sweeps), the given ones unchanged.
    let p = &job["params"];
    assert_eq!((p["topics"].as_u64(), p["alpha"].as_f64(), p["beta"].as_f64(), p["burn_in"].as_u64()), (Some(8), Some(6.25), Some(0.01), Some(30)), "{p}");
    assert_eq!((p["heldout_chain_length"].as_u64(), p["optimize_interval"].as_u64()), (Some(200), Some(0)), "{p}");
    // `threads` is the runner's option, not a model parameter: moved out of the params.
    assert!(p.get("threads").is_none(), "{p}");
    assert_eq!(job["options"], json!({"threads": 2}), "{job}");
    let done = s.wait(job["id"].as_str().unwrap(), Duration::from_secs(120)).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(&done["params"], p);
    assert_eq!(done["progress"]["threads"], 2, "the fit ran on the threads its options asked for: {done}");
    let mid = done["model_id"].as_str().unwrap().to_string();

    // The fit held out about a fifth of the documents and scored each of them.
    let (_, model) = s.get(&format!("/v1/models/{mid}")).await;
    let d = &model["diagnostics"];
    let held = d["test_documents"].as_u64().unwrap();
    assert!((15..=70).contains(&held), "held out {held} of 200");
    let report = &d["heldout"];
    assert_eq!(report["documents"].as_array().unwrap().len() as u64, held, "{report}");
    assert_eq!(report["params"]["chain_length"], 200);
    let per_token = report["log_likelihood_per_token"].as_f64().unwrap();
    // A sanity band, not a quality bar (the estimator's accuracy is checked exactly in
    // the unit tests): 160 training documents leave many held-out words nearly unseen,
    // so the per-token value sits near log(1/V); twice that would mean a broken scale.
    let uniform = -(corpus["num_terms"].as_f64().unwrap()).ln();
    assert!(per_token < 0.0 && per_token > 2.0 * uniform, "per token {per_token}, uniform {uniform}");
    let perplexity = report["perplexity"].as_f64().unwrap();
    assert!((perplexity - (-per_token).exp()).abs() < 1e-6 * perplexity);

    // Submitted documents: a job of its own kind, deterministic for a seed.
    let body = json!({
        "documents": [
            {"id": "game", "text": "play the arcade game and shoot the enemies"},
            {"id": "empty", "text": "zzzz qqqq"}
        ],
        "params": {"chain_length": 300},
        "seed": 5
    });
    let (first_id, first) = run_heldout(&s, &mid, &body).await;
    let (_, second) = run_heldout(&s, &mid, &body).await;
    assert_eq!(first, second, "same documents, params and seed give the same estimates");
    let docs = first["documents"].as_array().unwrap();
    assert_eq!(docs[0]["id"], "game");
    assert!(docs[0]["log_likelihood"].as_f64().unwrap() < 0.0);
    assert_eq!((docs[1]["tokens"].as_u64(), docs[1]["unknown_tokens"].as_u64()), (Some(0), Some(2)), "{first}");
    assert!(docs[1]["log_likelihood"].is_null(), "a document with no known word is not scored: {first}");
    assert_eq!(first["warnings"][0]["field"], "documents[1]", "{first}");
    assert_eq!(first["params"]["chain_length"], 300);
    assert_eq!(first["model_id"], mid.as_str());

    // The result outlives a restart.
    s.restart().await;
    let (_, again) = s.get(&format!("/v1/jobs/{first_id}")).await;
    assert_eq!(again["result"], first);

    // Bad input is a 422 naming the field, and queues nothing.
    let before = job_total(&s).await;
    let path = format!("/v1/models/{mid}/heldout-likelihood");
    let cases: Vec<(Value, &str)> = vec![
        (json!({"documents": []}), "documents"),
        (json!({"documents": [{"text": "game"}], "params": {"chain_lengthz": 3}}), "params.chain_lengthz"),
        (json!({"documents": [{"text": "game"}], "params": {"chain_length": 0}}), "params.chain_length"),
        (json!({"documents": [{"text": "game", "counts": {"game": 1}}]}), "documents[0]"),
        (json!({"documents": [{"text": "game", "features": {"year": 1.0}}]}), "documents[0].features.year"),
        // Over the server's --max-document-tokens: the counts are named.
        (json!({"documents": [{"text": "game"}, {"counts": {"game": 4_000_000_000u64}}]}), "documents[1].counts"),
        // Within it, but over what the estimator scores in one document (100 000 tokens).
        (json!({"documents": [{"text": "game"}, {"counts": {"game": 200_000}}]}), "documents[1]"),
    ];
    for (body, field) in cases {
        let (st, problem) = s.post(&path, &body).await;
        assert_problem(st, &problem, 422, Some(field));
    }
    let (st, problem) = s.post("/v1/models/nope/heldout-likelihood", &json!({"documents": [{"text": "game"}]})).await;
    assert_problem(st, &problem, 404, None);
    // LDA has no topic correlations and no test-split evaluation job; the problem names
    // the families that have them, read from the registry.
    let (st, problem) = s.get(&format!("/v1/models/{mid}/correlations")).await;
    assert_problem(st, &problem, 409, Some("model"));
    assert!(problem["detail"].as_str().unwrap().contains("(offered by dcnt and scnt)"), "{problem}");
    let (st, problem) = s.post(&format!("/v1/models/{mid}/evaluation"), &json!({})).await;
    assert_problem(st, &problem, 409, Some("model"));
    assert!(problem["detail"].as_str().unwrap().contains("(offered by hpc)"), "{problem}");
    assert_eq!(job_total(&s).await, before);

    // The model shows its family's capabilities, and /v1/families lists every family.
    let (_, model) = s.get(&format!("/v1/models/{mid}")).await;
    let caps = &model["capabilities"];
    assert_eq!(
        (caps["input"].as_str(), caps["heldout_likelihood"].as_bool(), caps["correlations"].as_bool()),
        (Some("corpus"), Some(true), Some(false)),
        "{model}"
    );
    let (st, families) = s.get("/v1/families").await;
    assert_eq!(st, 200);
    let listed: Vec<(&str, &str)> =
        families["families"].as_array().unwrap().iter().map(|f| (f["name"].as_str().unwrap(), f["capabilities"]["input"].as_str().unwrap())).collect();
    assert_eq!(
        listed,
        [("lda", "corpus"), ("hpc", "corpus"), ("pcm", "corpus"), ("dcnt", "corpus"), ("scnt", "corpus"), ("hdp", "corpus"), ("hdp_ammsb", "graph")]
    );
    // Each family carries its parameters' schema, as a form generator reads it: LDA's
    // `topics` with its bounds and default; a family's schema accepts what it fills in.
    let lda = &families["families"][0]["params_schema"];
    assert_eq!((lda["type"].as_str(), lda["additionalProperties"].as_bool()), (Some("object"), Some(false)), "{lda}");
    let topics = &lda["properties"]["topics"];
    assert_eq!((topics["minimum"].as_u64(), topics["default"].as_u64(), topics["type"].as_str()), (Some(1), Some(20), Some("integer")), "{topics}");
    let job_params = job["params"].as_object().unwrap();
    let documented = lda["properties"].as_object().unwrap();
    assert!(job_params.keys().all(|k| documented.contains_key(k)), "every effective param of the job is in the schema: {job_params:?}");
}
