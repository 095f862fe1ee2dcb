//! DCNT and SCNT over real HTTP on a generated bars corpus: the synthetic upload keeps
//! its true topics, fits hold out a test split and score it, and the model answers
//! topics, predictions, topic correlations and held-out likelihood jobs.

mod common;

use common::{assert_problem, TestServer};
use serde_json::{json, Value};
use std::time::Duration;

fn matrix(v: &Value) -> Vec<Vec<f64>> {
    v.as_array().unwrap().iter().map(|r| r.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dcnt_and_scnt_on_bars() {
    let s = TestServer::start().await;
    let spec = json!({"kind": "bars", "variant": "correlated", "documents": 200, "tokens": 60, "seed": 4});
    let corpus = s.upload(json!({"name": "bars", "synthetic": spec})).await;
    assert_eq!(corpus["num_documents"], 200);
    assert_eq!(corpus["num_terms"], 25);
    assert_eq!(corpus["num_tokens"], 200 * 60);
    let truth = &corpus["synthetic"];
    assert_eq!(truth["variant"], "correlated");
    let bars = truth["true_topics"].as_array().unwrap();
    assert_eq!(bars.len(), 10);
    assert_eq!(bars.iter().filter(|b| b["orientation"] == "horizontal").count(), 5);
    for b in bars {
        assert_eq!(b["words"].as_array().unwrap().len(), 5, "a bar covers five pixels: {b}");
    }
    let cid = corpus["id"].as_str().unwrap().to_string();
    // The same spec gives the same corpus.
    let again = s.upload(json!({"synthetic": spec})).await;
    assert_eq!(again["synthetic"], corpus["synthetic"]);

    let params = json!({
        "topics": 10, "iterations": 60, "burn_in": 30, "thin": 5, "test_fraction": 0.1,
        "heldout_burn_in": 30, "heldout_chain_length": 60, "heldout_acceptance_samples": 100, "threads": 2
    });
    for model in ["dcnt", "scnt"] {
        let job = s.submit(&cid, model, params.clone(), 9).await;
        let done = s.wait(job["id"].as_str().unwrap(), Duration::from_secs(120)).await;
        assert_eq!(done["status"], "succeeded", "{model}: {done}");
        for key in ["active_topics", "mh_acceptance"] {
            assert!(done["progress"][key].is_number(), "{model} progress lacks {key}: {done}");
        }
        let mid = done["model_id"].as_str().unwrap().to_string();
        let (_, m) = s.get(&format!("/v1/models/{mid}")).await;
        assert_eq!(m["model"], model);
        let report = &m["diagnostics"]["heldout"];
        let held = m["diagnostics"]["heldout_documents"].as_u64().unwrap();
        assert!(held > 0 && held < 60, "{m}");
        assert_eq!(report["documents"].as_array().unwrap().len() as u64, held);
        // 25 pixels: a per-token log-likelihood must lie in (2·log(1/25), 0).
        let per_token = report["log_likelihood_per_token"].as_f64().unwrap();
        assert!(per_token < 0.0 && per_token > 2.0 * (1.0f64 / 25.0).ln(), "{model}: {per_token}");

        let (st, topics) = s.get(&format!("/v1/models/{mid}/topics?n=5&rank=frex")).await;
        assert_eq!(st, 200, "{topics}");
        assert_eq!(topics["topics"].as_array().unwrap().len(), 10);

        let (st, c) = s.get(&format!("/v1/models/{mid}/correlations?draws=400&seed=1")).await;
        assert_eq!(st, 200, "{c}");
        let (cov, cor) = (matrix(&c["covariance"]), matrix(&c["correlation"]));
        assert_eq!((cov.len(), c["topics"].as_array().unwrap().len()), (10, 10));
        for i in 0..10 {
            assert!(cov[i][i] >= 0.0);
            for j in 0..10 {
                assert!((cov[i][j] - cov[j][i]).abs() < 1e-12 && cor[i][j].abs() <= 1.0 + 1e-9);
            }
        }
        let (acov, acor) = (matrix(&c["activation_covariance"]), matrix(&c["activation_correlation"]));
        assert_eq!((acov.len(), acor.len()), (10, 10));
        for i in 0..10 {
            assert!(acov[i][i] > 0.0 && (acor[i][i] - 1.0).abs() < 1e-12, "activation variance {}", acov[i][i]);
            for j in 0..10 {
                assert!((acov[i][j] - acov[j][i]).abs() < 1e-9 && acor[i][j].abs() <= 1.0 + 1e-9);
            }
        }
        let mean_sum: f64 = c["mean"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).sum();
        assert!((mean_sum - 1.0).abs() < 1e-9, "topic weights sum to one: {mean_sum}");
        let (_, c2) = s.get(&format!("/v1/models/{mid}/correlations?draws=400&seed=1")).await;
        assert_eq!(c, c2, "same seed, same estimate");

        let doc = json!({"id": "row0", "counts": {"p00": 5, "p01": 4, "p02": 6, "p03": 5, "p04": 5}});
        let (st, pred) = s.post(&format!("/v1/models/{mid}/predict"), &json!({"documents": [doc]})).await;
        assert_eq!(st, 200, "{pred}");
        let theta: f64 = pred["predictions"][0]["topic_proportions"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).sum();
        assert!((theta - 1.0).abs() < 1e-9);

        let body = json!({"documents": [doc], "params": {"burn_in": 30, "chain_length": 60, "acceptance_samples": 100}, "seed": 2});
        let (st, job) = s.post(&format!("/v1/models/{mid}/heldout-likelihood"), &body).await;
        assert_eq!(st, 202, "{job}");
        let done = s.wait(job["id"].as_str().unwrap(), Duration::from_secs(60)).await;
        assert_eq!(done["status"], "succeeded", "{done}");
        let ll = done["result"]["documents"][0]["log_likelihood"].as_f64().unwrap();
        // 25 tokens on 25 pixels: between "one row of five pixels" (25·log(1/5)) minus
        // a generous margin and 0.
        assert!(ll < 0.0 && ll > 25.0 * (1.0f64 / 25.0).ln(), "{ll}");
        assert!(done["result"]["estimator"].as_str().unwrap().starts_with("chib"), "{done}");
        let (st, problem) = s.post(&format!("/v1/models/{mid}/heldout-likelihood"), &json!({"documents": [doc], "params": {"acceptance_samples": 0}})).await;
        assert_problem(st, &problem, 422, Some("params.acceptance_samples"));
    }

    // Bad synthetic specs name their field and store nothing.
    let before = s.get("/v1/corpora").await.1["total"].clone();
    for (spec, field) in [
        (json!({"kind": "blobs"}), "synthetic.kind"),
        (json!({"kind": "bars", "variant": "diagonal"}), "synthetic.variant"),
        (json!({"kind": "bars", "documents": 0}), "synthetic.documents"),
        (json!({"kind": "bars", "max_bars": 6}), "synthetic.max_bars"),
    ] {
        let (st, problem) = s.post("/v1/corpora", &json!({"synthetic": spec})).await;
        assert_problem(st, &problem, 422, Some(field));
    }
    let (st, problem) = s.post("/v1/corpora", &json!({"synthetic": {"kind": "bars"}, "documents": [{"text": "a"}]})).await;
    assert_problem(st, &problem, 422, Some("synthetic"));
    let (st, problem) = s.post("/v1/corpora", &json!({"synthetic": {"kind": "bars"}, "preprocess": {"stem": true}})).await;
    assert_problem(st, &problem, 422, Some("synthetic"));
    assert_eq!(s.get("/v1/corpora").await.1["total"], before);
}

/// DCNT with φ_d from covariates: a categorical covariate of three levels (a chosen
/// reference), a date in a spline basis; the model's features are the design's columns.
/// A covariate missing on some documents, one the corpus lacks, a reference level or a
/// spline it cannot have are 422s naming the param, and queue nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dcnt_reads_its_metadata_from_covariates() {
    let s = TestServer::start().await;
    let docs: Vec<Value> = common::appstream_docs(120)
        .into_iter()
        .enumerate()
        .map(|(i, mut d)| {
            let score = if i % 17 == 0 { Value::Null } else { json!(i) };
            let party = ["a", "b", "c"][i % 3];
            d["covariates"] = json!({"party": party, "published": format!("20{}-0{}-15", 10 + i % 10, 1 + i % 9), "score": score});
            d
        })
        .collect();
    let corpus = s.upload(json!({"name": "cov", "documents": docs})).await;
    let cid = corpus["id"].as_str().unwrap().to_string();
    let kinds: Vec<(&str, &str)> =
        corpus["covariates"].as_array().unwrap().iter().map(|c| (c["name"].as_str().unwrap(), c["kind"].as_str().unwrap())).collect();
    assert_eq!(kinds, [("party", "categorical"), ("published", "date"), ("score", "continuous")]);

    let params = json!({"topics": 4, "iterations": 16, "burn_in": 8, "thin": 4, "covariates": ["party", "published"],
        "reference": {"party": "c"}, "splines": {"published": 4}});
    let job = s.submit(&cid, "dcnt", params, 3).await;
    let done = s.wait(job["id"].as_str().unwrap(), Duration::from_secs(120)).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(done["params"]["covariates"], json!(["party", "published"]), "the job keeps its design");
    let (_, m) = s.get(&format!("/v1/models/{}", done["model_id"].as_str().unwrap())).await;
    let columns = ["(intercept)", "party=a", "party=b", "s(published)1", "s(published)2", "s(published)3", "s(published)4"];
    assert_eq!(m["diagnostics"]["feature_names"], json!(columns), "{m}");
    assert_eq!(m["diagnostics"]["num_features"], 7);
    let mid = done["model_id"].as_str().unwrap();
    let (st, pred) = s.post(&format!("/v1/models/{mid}/predict"), &json!({"documents": [{"text": "a music player for audio files"}]})).await;
    assert_eq!(st, 200, "{pred}");
    let theta: f64 = pred["predictions"][0]["topic_proportions"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).sum();
    assert!((theta - 1.0).abs() < 1e-9, "new documents take the training documents' mean design row");
    // Intervals over the same fold-in chain's kept sweeps: their means are the point
    // answer.
    let body = json!({"documents": [{"text": "a music player for audio files"}], "intervals": true, "level": 0.8});
    let (st, with) = s.post(&format!("/v1/models/{mid}/predict"), &body).await;
    assert_eq!(st, 200, "{with}");
    let p = &with["predictions"][0];
    assert_eq!(p["topic_proportions"], pred["predictions"][0]["topic_proportions"], "the same chain");
    for (i, point) in p["topic_proportion_intervals"].as_array().expect("intervals").iter().zip(p["topic_proportions"].as_array().unwrap()) {
        assert!((i["mean"].as_f64().unwrap() - point.as_f64().unwrap()).abs() < 1e-9 && i["lower"].as_f64() <= i["upper"].as_f64(), "{i} vs {point}");
    }
    let (st, c) = s.get(&format!("/v1/models/{mid}/correlations?draws=100&seed=1")).await;
    assert_eq!(st, 200, "the topic covariance integrates over every document's design row: {c}");

    // Effects: every level of the categorical covariate, the date held at its mean.
    // Every chain's draws (`chains=all`): each draw's shares sum to one, so the means do.
    let (st, e) = s.get(&format!("/v1/models/{mid}/effects?covariate=party&contrast=a,c&seed=2&chains=all")).await;
    assert_eq!(st, 200, "{e}");
    // A draw of the loadings from every one of the 8 scans after burn-in (not only the 2
    // thinned ones the posterior means keep), in each of the 4 chains a fit with
    // covariates runs by default.
    assert_eq!(done["convergence"]["chains"], 4, "four chains by default with covariates");
    assert_eq!((e["kind"].as_str(), e["method"].as_str(), e["draws"].as_u64()), (Some("categorical"), Some("model"), Some(32)), "{e}");
    assert!(e["held_at"]["published"].is_number(), "{e}");
    let topics = e["topics"].as_array().unwrap();
    assert_eq!(topics.len(), 4);
    for p in 0..3 {
        let total: f64 = topics.iter().map(|t| t["points"][p]["mean"].as_f64().unwrap()).sum();
        assert!((total - 1.0).abs() < 1e-9, "expected shares sum to one at every point: {total}");
        for t in topics {
            let pt = &t["points"][p];
            assert!(pt["lower"].as_f64() <= pt["mean"].as_f64() && pt["mean"].as_f64() <= pt["upper"].as_f64(), "{pt}");
        }
    }
    assert_eq!(topics[0]["points"].as_array().unwrap().iter().map(|p| p["x"].clone()).collect::<Vec<_>>(), [json!("a"), json!("b"), json!("c")]);
    assert_eq!((topics[0]["difference"]["a"].as_str(), topics[0]["difference"]["b"].as_str()), (Some("a"), Some("c")));
    let (_, again) = s.get(&format!("/v1/models/{mid}/effects?covariate=party&contrast=a,c&seed=2&chains=all")).await;
    assert_eq!(again, e, "same seed, same answer");
    // By default each topic pools the chains that hold it: where every topic rests on
    // every chain that is the answer above, else the means need not sum to one.
    let (st, matched) = s.get(&format!("/v1/models/{mid}/effects?covariate=party&contrast=a,c&seed=2")).await;
    assert_eq!((st, &matched["chains"], &e["chains"]), (200, &json!("matched"), &json!("all")), "{matched}");
    let pooled: Vec<u64> = matched["topics"].as_array().unwrap().iter().map(|t| t["pooled_chains"].as_u64().unwrap()).collect();
    assert!(pooled.iter().all(|&c| (1..=4).contains(&c)), "{pooled:?}");
    if pooled.iter().all(|&c| c == 4) {
        assert_eq!(matched["topics"], e["topics"], "every chain holds every topic: the same draws");
    }
    // Along the date, 5 points from its earliest to its latest value, two topics.
    let (st, e) = s.get(&format!("/v1/models/{mid}/effects?covariate=published&grid=5&topics=1,3&level=0.8")).await;
    assert_eq!(st, 200, "{e}");
    let points = e["topics"][0]["points"].as_array().unwrap();
    assert_eq!((points.len(), e["topics"].as_array().unwrap().len(), e["topics"][1]["id"].as_u64()), (5, 2, Some(3)));
    assert!(points[0]["x"].as_f64().unwrap() < 2011.0 && points[4]["x"].as_f64().unwrap() > 2019.0, "{points:?}");
    // A date covariate's contrast may name dates: the same answer as their fractional
    // years (2019-07-02T12:00Z is 2019.5; 2012-01-01 is 2012.0).
    let (st, by_date) = s.get(&format!("/v1/models/{mid}/effects?covariate=published&contrast=2019-07-02T12:00:00Z,2012-01-01&seed=3")).await;
    assert_eq!(st, 200, "{by_date}");
    let (_, by_year) = s.get(&format!("/v1/models/{mid}/effects?covariate=published&contrast=2019.5,2012&seed=3")).await;
    assert_eq!(by_date["topics"], by_year["topics"]);
    assert_eq!(by_date["topics"][0]["difference"]["a"].as_f64(), Some(2019.5), "{by_date}");
    // Two SCNT chains: the job counts through both, the model pools them (the other
    // chain's topics matched to the reference chain's), and the effects take, per
    // topic, the draws of the chains that hold it (by default) or of both.
    let two = json!({"topics": 4, "iterations": 16, "burn_in": 8, "thin": 4, "covariates": ["party"], "chains": 2});
    let job = s.submit(&cid, "scnt", two, 3).await;
    let done = s.wait(job["id"].as_str().unwrap(), Duration::from_secs(120)).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!((done["progress"]["iteration"].as_u64(), done["progress"]["total"].as_u64()), (Some(32), Some(32)));
    assert_eq!(done["convergence"]["chains"], 2, "{}", done["convergence"]);
    let two_id = done["model_id"].as_str().unwrap();
    let (_, m) = s.get(&format!("/v1/models/{two_id}")).await;
    assert_eq!((m["diagnostics"]["chains"].as_u64(), m["diagnostics"]["chain_alignment"].as_array().map(Vec::len)), (Some(2), Some(1)), "{m}");
    assert!(m["diagnostics"]["reference_chain"].as_u64().is_some_and(|r| r < 2), "{m}");
    let (st, e) = s.get(&format!("/v1/models/{two_id}/effects?covariate=party&chains=all")).await;
    assert_eq!((st, e["draws"].as_u64(), &e["chains"]), (200, Some(16), &json!("all")), "8 draws from each chain: {e}");
    assert!(e["topics"].as_array().unwrap().iter().all(|t| t["pooled_chains"] == 2), "every chain's draws: {e}");
    let (st, m) = s.get(&format!("/v1/models/{two_id}/effects?covariate=party")).await;
    let stability = |t: &Value| t["stability"]["matched"].as_u64().unwrap() + 1;
    assert!(
        st == 200 && m["chains"] == "matched" && m["topics"].as_array().unwrap().iter().all(|t| t["pooled_chains"].as_u64() == Some(stability(t))),
        "by default, the chains that hold each topic: {m}"
    );
    let (st, t) = s.get(&format!("/v1/models/{two_id}/topics?n=3&with=intervals")).await;
    assert_eq!((st, t["intervals"]["draws"].as_u64()), (200, Some(4)), "both chains' kept scans: {t}");
    for (query, field) in [
        ("covariate=published&contrast=2019-13-01,2012", "query.contrast"),
        ("covariate=score", "query.covariate"),
        ("covariate=party&contrast=a,z", "query.contrast"),
        ("covariate=party&contrast=a", "query.contrast"),
        ("covariate=published&grid=1", "query.grid"),
        ("covariate=party&topics=9", "query.topics"),
        ("covariate=party&level=1", "query.level"),
        ("grid=5", "query.covariate"),
        ("covariate=party&chains=some", "query.chains"),
    ] {
        let (st, err) = s.get(&format!("/v1/models/{mid}/effects?{query}")).await;
        assert_problem(st, &err, 422, Some(field));
    }

    for (params, field) in [
        (json!({"covariates": ["score"]}), "params.covariates"),
        (json!({"covariates": ["colour"]}), "params.covariates"),
        (json!({"covariates": ["party"], "reference": {"party": "z"}}), "params.reference.party"),
        (json!({"covariates": ["party"], "splines": {"party": 4}}), "params.splines.party"),
        (json!({"covariates": ["published"], "splines": {"published": 40}}), "params.splines.published"),
        (json!({"covariates": "party"}), "params.covariates"),
    ] {
        let (st, e) = s.post("/v1/jobs", &json!({"corpus_id": cid, "model": "dcnt", "params": params})).await;
        assert_problem(st, &e, 422, Some(field));
    }
    let (_, jobs) = s.get("/v1/jobs").await;
    assert_eq!(jobs["total"], 2, "refused jobs are not queued (the two are the fits above)");
    // A model that cannot answer (LDA fitted without covariates): 409 naming `model`.
    let lda = s.submit(&cid, "lda", json!({"topics": 2, "iterations": 4}), 1).await;
    let done = s.wait(lda["id"].as_str().unwrap(), Duration::from_secs(60)).await;
    let (st, err) = s.get(&format!("/v1/models/{}/effects?covariate=party", done["model_id"].as_str().unwrap())).await;
    assert_problem(st, &err, 409, Some("model"));
}
