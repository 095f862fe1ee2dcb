//! Every numeric parameter is bounded at submit: `POST /v1/jobs` with a value outside
//! the range its family's params schema (`GET /v1/families`) states is a 422 naming
//! `params.<key>` and queues nothing, and a job with the priors at the ends of their
//! ranges is accepted and succeeds (before the bounds, `beta: 1e308` was accepted and
//! the fit failed on a NaN log-likelihood).

mod common;

use common::{appstream_docs, assert_problem, TestServer};
use serde_json::{json, Value};
use std::time::Duration;

/// A value past the schema's upper bound (`over`) or below its lower bound, for a
/// property of type `integer` or `number`; `None` when it has no such bound.
fn outside(property: &Value, over: bool) -> Option<Value> {
    let integer = property["type"] == "integer";
    let (inclusive, exclusive) = if over { ("maximum", "exclusiveMaximum") } else { ("minimum", "exclusiveMinimum") };
    if let Some(b) = property[exclusive].as_f64() {
        return Some(json!(b));
    }
    let b = property[inclusive].as_f64()?;
    Some(match (integer, over) {
        (true, true) => json!(b as u64 + 1),
        (true, false) => json!(b as i64 - 1),
        (false, true) => json!(b * 10.0 + 1.0),
        (false, false) if b > 0.0 => json!(b / 10.0),
        (false, false) => json!(-1.0),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_range_params_are_refused_and_extreme_priors_fit() {
    let mut s = TestServer::start().await;
    let cid = s.upload(json!({"documents": appstream_docs(30)})).await["id"].as_str().unwrap().to_string();
    // Two cliques of four nodes.
    let nodes: Vec<String> = (0..8).map(|i| format!("n{i}")).collect();
    let mut edges = Vec::new();
    for i in 0..8 {
        for j in (i + 1)..8 {
            if i / 4 == j / 4 {
                edges.push(json!([nodes[i], nodes[j]]));
            }
        }
    }
    let (st, g) = s.post("/v1/graphs", &json!({"nodes": nodes, "edges": edges})).await;
    assert_eq!(st, 201, "{g}");
    let gid = g["id"].as_str().unwrap().to_string();

    // The report: β = 1e308 was accepted and the fit failed on a NaN.
    let (st, e) = s.post("/v1/jobs", &json!({"corpus_id": cid, "model": "lda", "params": {"beta": 1e308, "topics": 3, "iterations": 5}})).await;
    assert_problem(st, &e, 422, Some("params.beta"));
    assert!(e["detail"].as_str().unwrap().contains("between 1e-6 and 10000"), "{e}");

    // Every numeric property of every family's schema, just outside either end.
    let (st, families) = s.get("/v1/families").await;
    assert_eq!(st, 200);
    let mut refused = 0;
    for family in families["families"].as_array().unwrap() {
        let name = family["name"].as_str().unwrap();
        let input = if family["capabilities"]["input"] == "graph" { json!({"graph_id": gid}) } else { json!({"corpus_id": cid}) };
        for (key, property) in family["params_schema"]["properties"].as_object().unwrap() {
            if !matches!(property["type"].as_str(), Some("integer" | "number")) {
                continue;
            }
            for over in [true, false] {
                let value = outside(property, over).unwrap_or_else(|| panic!("{name}: params.{key} has no {} bound", if over { "upper" } else { "lower" }));
                let mut body = input.clone();
                body["model"] = json!(name);
                body["params"] = json!({ key.as_str(): value });
                let (st, e) = s.post("/v1/jobs", &body).await;
                // A key of the other family sharing the schema is refused as unknown,
                // naming it too.
                assert_problem(st, &e, 422, Some(&format!("params.{key}")));
                refused += 1;
            }
        }
    }
    assert!(refused > 100, "{refused}");
    assert_eq!(s.get("/v1/jobs").await.1["total"], 0, "a refused job was queued");

    // At the ends of their ranges the priors fit, and the fit's numbers are finite.
    let jobs = [
        json!({"corpus_id": cid, "model": "lda", "params": {"topics": 3, "iterations": 6, "alpha": 1e-6, "beta": 1e4}, "seed": 1}),
        json!({"corpus_id": cid, "model": "lda", "params": {"topics": 3, "iterations": 6, "alpha": 1e4, "beta": 1e-6}, "seed": 1}),
        json!({"corpus_id": cid, "model": "hdp", "params": {"topics": 4, "passes": 3, "alpha": 1e4, "gamma": 1e-6, "lambda": 1e-6}, "seed": 1}),
        json!({"graph_id": gid, "model": "hdp_ammsb", "params": {"communities": 2, "passes": 3, "alpha": 1e-6, "gamma": 1e-6, "tau1": 0.01, "tau0": 0.01, "epsilon": 1e-10}, "seed": 1}),
    ];
    for body in jobs {
        let (st, job) = s.post("/v1/jobs", &body).await;
        assert_eq!(st, 202, "{body}: {job}");
        let done = s.wait(job["id"].as_str().unwrap(), Duration::from_secs(120)).await;
        assert_eq!(done["status"], "succeeded", "{body}: {done}");
    }
    s.stop().await;
}
