//! End to end over real HTTP: upload a real corpus slice, fit LDA, poll to success, read
//! topics, predict, restart the server on the same database and read the same topics.

mod common;

use common::{appstream_docs, appstream_docs_with_meta, TestServer};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upload_fit_read_predict_and_survive_a_restart() {
    let mut s = TestServer::start().await;
    // Every other document keeps its AppStream package and type in `meta`.
    let docs: Vec<Value> = appstream_docs_with_meta(300)
        .into_iter()
        .enumerate()
        .map(|(i, mut d)| {
            if i % 2 == 1 {
                d.as_object_mut().unwrap().remove("meta");
            }
            d
        })
        .collect();
    let meta_of: HashMap<String, Option<Value>> = docs.iter().map(|d| (d["id"].as_str().unwrap().to_string(), d.get("meta").cloned())).collect();
    let text_of: HashMap<String, String> = docs.iter().map(|d| (d["id"].as_str().unwrap().to_string(), d["text"].as_str().unwrap().to_string())).collect();
    let corpus = s.upload(json!({"name": "appstream-300", "documents": docs, "preprocess": {"min_df": 2}})).await;
    assert_eq!(corpus["num_documents"], 300);
    assert!(corpus["num_terms"].as_u64().unwrap() > 500, "{corpus}");
    assert!(corpus["num_labels"].as_u64().unwrap() > 20);
    assert_eq!(corpus["tree_depth"], 1, "plain labels hang under the root");
    let cid = corpus["id"].as_str().unwrap().to_string();

    let job = s.submit(&cid, "lda", json!({"topics": 8, "iterations": 60, "loglik_every": 5}), 42).await;
    assert_eq!(job["status"], "queued");
    let done = s.wait(job["id"].as_str().unwrap(), Duration::from_secs(120)).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(done["progress"]["iteration"], 60);
    assert_eq!(done["progress"]["total"], 60);
    let doc_topics = done["progress"]["mean_doc_topics"].as_f64().unwrap();
    assert!(doc_topics > 1.0 && doc_topics <= 8.0, "{doc_topics}");
    let mid = done["model_id"].as_str().unwrap().to_string();

    // The trace: one point per 5 sweeps plus the first, rising from the random start.
    let (st, trace) = s.get(&format!("/v1/jobs/{}/trace", job["id"].as_str().unwrap())).await;
    assert_eq!(st, 200);
    let points = trace["points"].as_array().unwrap();
    assert_eq!(points.len(), 13, "{trace}");
    let first = points[0]["loglik_per_token"].as_f64().unwrap();
    let last = points[12]["loglik_per_token"].as_f64().unwrap();
    assert!(last > first + 0.1, "log-likelihood per token went from {first} to {last}");

    let (st, topics) = s.get(&format!("/v1/models/{mid}/topics?n=10&rank=frex&weight=0.5")).await;
    assert_eq!(st, 200, "{topics}");
    let list = topics["topics"].as_array().unwrap();
    assert_eq!(list.len(), 8);
    for t in list {
        let words = t["words"].as_array().unwrap();
        assert_eq!(words.len(), 10);
        let frex: Vec<f64> = words.iter().map(|w| w["frex"].as_f64().unwrap()).collect();
        assert!(frex.windows(2).all(|p| p[0] >= p[1]), "not ranked by FREX: {frex:?}");
        assert!(words.iter().all(|w| (0.0..=1.0).contains(&w["exclusivity"].as_f64().unwrap())));
    }
    let shares: f64 = list.iter().map(|t| t["proportion"].as_f64().unwrap()).sum();
    assert!((shares - 1.0).abs() < 1e-9);

    // The intertopic map places every topic, in the model's numbering and with the
    // listing's shares, centred at the origin (classical scaling centres it), and is the
    // same on a second call (computed once, then kept with the loaded model).
    let (st, map) = s.get(&format!("/v1/models/{mid}/topic-map")).await;
    assert_eq!(st, 200, "{map}");
    let placed = map["topics"].as_array().unwrap();
    assert_eq!(placed.len(), 8);
    for (k, t) in placed.iter().enumerate() {
        assert_eq!(t["id"], k);
        assert_eq!(t["proportion"], list[k]["proportion"]);
    }
    for axis in ["x", "y"] {
        assert!(placed.iter().map(|t| t[axis].as_f64().unwrap()).sum::<f64>().abs() < 1e-9, "{map}");
    }
    let explained: Vec<f64> = map["explained"].as_array().unwrap().iter().map(|e| e.as_f64().unwrap()).collect();
    assert!(explained[0] >= explained[1] && explained[0] + explained[1] <= 1.0 + 1e-12, "{explained:?}");
    assert_eq!(s.get(&format!("/v1/models/{mid}/topic-map")).await.1, map);

    // One topic's FREX ranking agrees with the full listing.
    let (st, one) = s.get(&format!("/v1/models/{mid}/topics/3/frex?n=10")).await;
    assert_eq!(st, 200);
    assert_eq!(one["words"], list[3]["words"]);

    // Predict: a document written with topic 3's most frequent words is assigned
    // mostly to topic 3; a document of unknown words gets the prior.
    let (_, by_freq) = s.get(&format!("/v1/models/{mid}/topics?n=5&rank=frequency")).await;
    let text: Vec<String> = by_freq["topics"][3]["words"].as_array().unwrap().iter().map(|w| w["word"].as_str().unwrap().to_string()).collect();
    let text = vec![text.join(" "); 4].join(" ");
    let (st, pred) = s
        .post(
            &format!("/v1/models/{mid}/predict"),
            &json!({"documents": [
                {"id": "a", "text": text},
                {"id": "b", "counts": {"zzzz-not-a-word": 3}}
            ]}),
        )
        .await;
    assert_eq!(st, 200, "{pred}");
    let p = &pred["predictions"];
    let theta: Vec<f64> = p[0]["topic_proportions"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
    assert_eq!(theta.len(), 8);
    assert!((theta.iter().sum::<f64>() - 1.0).abs() < 1e-9);
    let argmax = (0..8).max_by(|&a, &b| theta[a].total_cmp(&theta[b])).unwrap();
    assert_eq!(argmax, 3, "{theta:?}");
    assert_eq!(p[1]["topic_proportions"], json!(vec![0.125; 8]));
    assert_eq!(p[1]["tokens"], 0);
    assert_eq!(p[1]["oov_tokens"], 3);
    // Prediction is reproducible.
    let (_, pred2) = s.post(&format!("/v1/models/{mid}/predict"), &json!({"documents": [{"id": "a", "text": text}]})).await;
    assert_eq!(pred2["predictions"][0]["topic_proportions"], p[0]["topic_proportions"]);

    // Thinned samples were persisted: burn-in 30, thin 10 → sweeps 40, 50, 60.
    let (_, model) = s.get(&format!("/v1/models/{mid}")).await;
    assert_eq!(model["thinned_samples"], 3, "{model}");
    assert_eq!(model["model"], "lda");

    // Representative documents: the training documents with the highest share of the
    // topic (LDA keeps its posterior-mean proportions: source "fit"), highest first, each
    // with its proportions (summing to 1, the share among them) and first words.
    let (st, reps) = s.get(&format!("/v1/models/{mid}/topics/2/documents?n=5")).await;
    assert_eq!(st, 200, "{reps}");
    assert_eq!((reps["source"].as_str(), reps["documents_ranked"].as_u64(), reps["topic"]["id"].as_u64()), (Some("fit"), Some(300), Some(2)), "{reps}");
    let ranked = reps["documents"].as_array().unwrap();
    assert_eq!(ranked.len(), 5);
    let shares: Vec<f64> = ranked.iter().map(|d| d["share"].as_f64().unwrap()).collect();
    assert!(shares.windows(2).all(|w| w[0] >= w[1]), "{shares:?}");
    for d in ranked {
        let props: Vec<f64> = d["topic_proportions"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        assert_eq!((props.len(), props[2]), (8, d["share"].as_f64().unwrap()));
        assert!((props.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        assert!(d["first_words"].as_str().is_some_and(|w| !w.is_empty()) && d["id"].is_string(), "{d}");
    }
    // The 100 best of topic 2 start with the same five, and no document further down
    // has a higher share than the fifth.
    let (_, more) = s.get(&format!("/v1/models/{mid}/topics/2/documents?n=100")).await;
    let more = more["documents"].as_array().unwrap();
    assert_eq!(more.len(), 100);
    assert_eq!(more[..5], ranked[..]);
    assert!(more[5..].iter().all(|d| d["share"].as_f64().unwrap() <= shares[4]));
    // Each comes with the `meta` its upload gave it, and without one when it had none,
    // and with the beginning of its text as uploaded (whole when short, else cut at a
    // word and marked "…").
    for d in more {
        let id = d["id"].as_str().unwrap();
        assert_eq!(d.get("meta"), meta_of[id].as_ref(), "{d}");
        let (text, uploaded) = (d["text"].as_str().unwrap(), text_of[id].trim());
        match text.strip_suffix('…') {
            Some(head) => assert!(uploaded.starts_with(head) && head.chars().count() <= 600 && uploaded.chars().count() > 600, "{id}: {text:?}"),
            None => assert_eq!(text, uploaded, "{id}"),
        }
    }
    assert!(more.iter().any(|d| d["meta"]["package"].is_string()) && more.iter().any(|d| d.get("meta").is_none()), "both kinds among 100");
    for (query, field) in [("n=0", "query.n"), ("n=101", "query.n"), ("n=x", "query.n"), ("top=3", "query.top")] {
        let (st, e) = s.get(&format!("/v1/models/{mid}/topics/2/documents?{query}")).await;
        assert_eq!((st, e["field"].as_str()), (422, Some(field)), "{query}: {e}");
    }
    assert_eq!(s.get(&format!("/v1/models/{mid}/topics/8/documents")).await.0, 404);

    // Read each page once before the rename: the server keeps answered topic pages, and
    // a rename must replace them.
    let before = s.get(&format!("/v1/models/{mid}/topics?n=10&rank=frex&weight=0.5")).await.1;
    assert_eq!(before["topics"][3]["name"], Value::Null);
    assert_eq!(s.get(&format!("/v1/models/{mid}/topics/3/frex?n=3")).await.1["topic"]["name"], Value::Null);
    assert!(!s.get_text(&format!("/v1/models/{mid}/topics?n=2&format=csv")).await.2.contains("Topic three"));
    assert_eq!(s.get(&format!("/v1/models/{mid}/topic-map")).await.1["topics"][3]["name"], Value::Null);

    // Rename a topic: every topic endpoint, the CSV and the map return the name; the
    // numbering and the words do not change; bad names and topics change nothing.
    let (st, renamed) = s.patch(&format!("/v1/models/{mid}/topics/3"), &json!({"name": "  Topic three  "})).await;
    assert_eq!(st, 200, "{renamed}");
    assert_eq!((renamed["topic"]["id"].as_u64(), renamed["topic"]["name"].as_str()), (Some(3), Some("Topic three")), "{renamed}");
    for (body, field) in
        [(json!({"name": ""}), "name"), (json!({"name": "a\tb"}), "name"), (json!({"name": "x".repeat(201)}), "name"), (json!({"title": "x"}), "title")]
    {
        let (st, e) = s.patch(&format!("/v1/models/{mid}/topics/3"), &body).await;
        assert_eq!((st, e["field"].as_str()), (422, Some(field)), "{body}: {e}");
    }
    assert_eq!(s.patch(&format!("/v1/models/{mid}/topics/8"), &json!({"name": "x"})).await.0, 404);
    assert_eq!(s.patch("/v1/models/no-such-model/topics/0", &json!({"name": "x"})).await.0, 404);
    let (_, named) = s.get(&format!("/v1/models/{mid}/topics?n=10&rank=frex&weight=0.5")).await;
    let names: Vec<Value> = named["topics"].as_array().unwrap().iter().map(|t| t["name"].clone()).collect();
    assert_eq!(names, (0..8).map(|k| if k == 3 { json!("Topic three") } else { Value::Null }).collect::<Vec<_>>());
    assert_eq!(named["topics"][3]["words"], topics["topics"][3]["words"]);
    assert_eq!(s.get(&format!("/v1/models/{mid}/topics/3/frex?n=3")).await.1["topic"]["name"], "Topic three");
    assert_eq!(s.get(&format!("/v1/models/{mid}/topic-map")).await.1["topics"][3]["name"], "Topic three");
    let (_, _, csv) = s.get_text(&format!("/v1/models/{mid}/topics?n=2&format=csv")).await;
    assert!(csv.starts_with("topic,label,name,rank,word,"), "{csv}");
    assert!(csv.lines().filter(|l| l.starts_with("3,,Topic three,")).count() == 2, "{csv}");

    // Restart on the same database: the same topics, byte for byte, names kept.
    s.restart().await;
    let (st, again) = s.get(&format!("/v1/models/{mid}/topics?n=10&rank=frex&weight=0.5")).await;
    assert_eq!(st, 200);
    assert_eq!(again, named);
    let (st, cleared) = s.patch(&format!("/v1/models/{mid}/topics/3"), &json!({"name": null})).await;
    assert_eq!((st, &cleared["topic"]["name"]), (200, &Value::Null));
    assert_eq!(s.get(&format!("/v1/models/{mid}/topics?n=10&rank=frex&weight=0.5")).await.1, topics);
    let (st, c) = s.get(&format!("/v1/corpora/{cid}")).await;
    assert_eq!(st, 200);
    assert_eq!(c["num_terms"], corpus["num_terms"]);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_seed_same_topics_and_csv_export() {
    let mut s = TestServer::start().await;
    let cid = s.upload(json!({"documents": appstream_docs(120)})).await["id"].as_str().unwrap().to_string();
    let mut tables = vec![];
    for threads in [1, 2] {
        let job = s.submit(&cid, "lda", json!({"topics": 5, "iterations": 20, "threads": threads}), 7).await;
        let done = s.wait(job["id"].as_str().unwrap(), Duration::from_secs(60)).await;
        assert_eq!(done["status"], "succeeded");
        assert_eq!(done["progress"]["threads"], threads);
        let (_, t) = s.get(&format!("/v1/models/{}/topics?n=15", done["model_id"].as_str().unwrap())).await;
        tables.push(t["topics"].clone());
        let (st, ct, csv) = s.get_text(&format!("/v1/models/{}/topics?n=3&format=csv", done["model_id"].as_str().unwrap())).await;
        assert_eq!(st, 200);
        assert!(ct.starts_with("text/csv"));
        assert_eq!(csv.lines().count(), 1 + 5 * 3, "{csv}");
    }
    assert_eq!(tables[0], tables[1], "1 and 2 threads gave different topics");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ndjson_upload_streams_documents_and_a_tree() {
    let mut s = TestServer::start().await;
    let mut body = String::from("{\"tree\": [{\"label\": \"Science\", \"parent\": null}, {\"label\": \"Math\", \"parent\": \"Science\"}]}\n");
    body.push_str("{\"id\": \"1\", \"text\": \"prime numbers and groups\", \"labels\": [\"Math\"]}\n");
    body.push_str("{\"id\": \"2\", \"text\": \"cells and proteins\", \"labels\": [\"Science\"], \"meta\": {\"extra\": 1}}\n");
    body.push_str("{\"id\": \"3\", \"bow\": {\"numbers\": 2, \"theorem\": 1}}");
    let (st, c) = s.post_raw("/v1/corpora?name=tiny&stopwords=none", body, "application/x-ndjson").await;
    assert_eq!(st, 201, "{c}");
    assert_eq!(c["name"], "tiny");
    assert_eq!(c["num_documents"], 3);
    assert_eq!(c["num_labels"], 2);
    assert_eq!(c["tree_depth"], 2);
    assert_eq!(c["num_tokens"], 4 + 3 + 3);
    // A bad line names its line number and changes nothing.
    let (st, e) = s.post_raw("/v1/corpora", "{\"text\": \"ok\"}\n{\"text\": \"a\", \"counts\": {\"b\": 1}}\n", "application/x-ndjson").await;
    common::assert_problem(st, &e, 422, Some("documents[1]"));
    assert_eq!(e["line"], 2);
    let (_, list) = s.get("/v1/corpora").await;
    assert_eq!(list["total"], 1);
    s.stop().await;
}

/// Covariates: each kind read from what the documents give (numbers, dates, category
/// names), missing values counted, the summary kept across a restart, and a document
/// that contradicts an earlier one refused with the covariate named and nothing stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn covariates_are_summarised_and_contradictions_refused() {
    let mut s = TestServer::start().await;
    let docs = json!([
        {"text": "rivers and lakes", "covariates": {"year": 2001, "party": "green", "published": "2001-07-02T12:00:00Z"}},
        {"text": "taxes and budgets", "covariates": {"year": 2003, "party": "blue", "published": "2003-01-01"}, "features": {"length": 3}},
        {"text": "lakes and budgets", "covariates": {"year": null, "party": "green"}},
    ]);
    let c = s.upload(json!({"name": "cov", "documents": docs, "preprocess": {"stopwords": "none"}})).await;
    let id = c["id"].as_str().unwrap().to_string();
    let check = |c: &Value| {
        let cov = c["covariates"].as_array().unwrap_or_else(|| panic!("{c}"));
        let names: Vec<&str> = cov.iter().map(|x| x["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["length", "party", "published", "year"], "{c}");
        assert_eq!((cov[0]["kind"].as_str(), cov[0]["missing"].as_u64()), (Some("continuous"), Some(2)), "a feature is a continuous covariate");
        assert_eq!(cov[1]["kind"], "categorical");
        assert_eq!(cov[1]["levels"], json!([{"level": "green", "documents": 2}, {"level": "blue", "documents": 1}]));
        assert_eq!((cov[2]["kind"].as_str(), cov[2]["missing"].as_u64(), cov[2]["min"].as_f64()), (Some("date"), Some(1), Some(2001.5)));
        assert_eq!((cov[3]["missing"].as_u64(), cov[3]["min"].as_f64(), cov[3]["max"].as_f64()), (Some(1), Some(2001.0), Some(2003.0)));
    };
    check(&c);
    s.restart().await;
    let (st, again) = s.get(&format!("/v1/corpora/{id}")).await;
    assert_eq!(st, 200);
    check(&again);
    // NDJSON: the second line's year is a string where the first's was a number.
    let body = "{\"text\": \"a b\", \"covariates\": {\"year\": 2001}}\n{\"text\": \"c d\", \"covariates\": {\"year\": \"2002\"}}\n";
    let (st, e) = s.post_raw("/v1/corpora", body, "application/x-ndjson").await;
    common::assert_problem(st, &e, 422, Some("documents[1].covariates.year"));
    assert_eq!(e["line"], 2);
    let (st, e) = s.post("/v1/corpora", &json!({"documents": [{"text": "a", "covariates": {"x": [1]}}]})).await;
    common::assert_problem(st, &e, 422, Some("documents[0].covariates.x"));
    let (_, list) = s.get("/v1/corpora").await;
    assert_eq!(list["total"], 1, "refused uploads store nothing");
    s.stop().await;
}

/// Many first reads of a model at once (a dashboard opening on a fresh server): the
/// topic table is computed once, in the predict pool, and every read answers. A rayon
/// worker that waited for the table inside the pool could steal another read that
/// waits for it too, and the pool then hung for good (every topic read and prediction
/// timed out under `bench/load.py`).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_first_reads_of_a_model_all_answer() {
    let mut s = TestServer::start().await;
    let cid = s.upload(json!({"documents": appstream_docs(300), "preprocess": {"min_df": 2}})).await["id"].as_str().unwrap().to_string();
    let job = s.submit(&cid, "lda", json!({"topics": 40, "iterations": 5}), 1).await;
    let done = s.wait(job["id"].as_str().unwrap(), Duration::from_secs(120)).await;
    let mid = done["model_id"].as_str().unwrap().to_string();
    for round in 0..3 {
        // A restart empties the model cache: every round starts cold.
        s.restart().await;
        let paths: Vec<String> = (0..48)
            .map(|i| match i % 4 {
                0 => format!("/v1/models/{mid}/topics?n={}", 5 + i),
                1 => format!("/v1/models/{mid}/topics/{}/frex?n=5", i % 40),
                2 => format!("/v1/models/{mid}/topics?n=3&comparison=all&rank=frex&weight={}", 0.5 + i as f64 / 100.0),
                _ => format!("/v1/models/{mid}/coherence?top_n=5"),
            })
            .collect();
        let reads = futures_util::future::join_all(paths.iter().map(|p| s.get(p)));
        // A hung pool would also hang the server's shutdown (and so this test's unwinding):
        // say so and abort the test binary rather than wait forever.
        let answers = tokio::time::timeout(Duration::from_secs(60), reads).await.unwrap_or_else(|_| {
            eprintln!("round {round}: the reads hung for 60 s");
            std::process::abort()
        });
        for (p, (st, body)) in paths.iter().zip(answers) {
            assert_eq!(st, 200, "round {round}: {p}: {body}");
        }
        // One decode served the 48 reads (single flight), and the model is kept.
        let metrics = s.get_text("/metrics").await.2;
        assert_eq!(metric(&metrics, "topicd_model_cache_loads_total"), 1.0, "round {round}: {metrics}");
        assert!(metric(&metrics, "topicd_model_cache_misses_total") + metric(&metrics, "topicd_model_cache_hits_total") >= 48.0, "round {round}: {metrics}");
        assert!(metric(&metrics, "topicd_model_cache_bytes") > 0.0);
        assert_eq!(metric(&metrics, "topicd_model_cache_loads_in_flight"), 0.0);
    }
}

/// A Prometheus sample's value in `/metrics` text (0 when absent).
fn metric(text: &str, name: &str) -> f64 {
    text.lines().find_map(|l| l.strip_prefix(name).and_then(|rest| rest.strip_prefix(' ')).and_then(|v| v.trim().parse().ok())).unwrap_or(0.0)
}

/// A model larger than the whole model cache is served to every request, never kept
/// (the cache holds nothing), and decoded once for requests that overlap; the same
/// answers as a server that keeps it. Predictions share the one decode too.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_model_larger_than_the_cache_is_served_without_being_kept() {
    let mut s = TestServer::start().await;
    let cid = s.upload(json!({"documents": appstream_docs(200), "preprocess": {"min_df": 2}})).await["id"].as_str().unwrap().to_string();
    let job = s.submit(&cid, "lda", json!({"topics": 10, "iterations": 5}), 1).await;
    let done = s.wait(job["id"].as_str().unwrap(), Duration::from_secs(120)).await;
    let mid = done["model_id"].as_str().unwrap().to_string();
    let topics = format!("/v1/models/{mid}/topics?n=5");
    let expected = s.get(&topics).await;
    assert_eq!(expected.0, 200);
    let predict = json!({"documents": [{"text": "a game with a joystick and a keyboard"}]});
    let expected_prediction = s.post(&format!("/v1/models/{mid}/predict"), &predict).await;
    // 1 KB: smaller than any model.
    s.stop().await;
    s.boot(|c| c.model_cache_mb = Some(0.001)).await;
    let reads = futures_util::future::join_all((0..16).map(|_| s.get(&topics)));
    let predict_path = format!("/v1/models/{mid}/predict");
    let predicts = futures_util::future::join_all((0..16).map(|_| s.post(&predict_path, &predict)));
    let (reads, predicts) = tokio::join!(reads, predicts);
    assert!(reads.iter().all(|r| *r == expected), "a read differed from the keeping server's");
    assert!(predicts.iter().all(|r| *r == expected_prediction), "a prediction differed from the keeping server's");
    let metrics = s.get_text("/metrics").await.2;
    assert_eq!(metric(&metrics, "topicd_model_cache_bytes"), 0.0, "{metrics}");
    assert!(metric(&metrics, "topicd_model_cache_not_kept_total") >= 1.0, "{metrics}");
    // Overlapping requests shared decodes: far fewer than one each.
    assert!(metric(&metrics, "topicd_model_cache_loads_total") < 32.0, "{metrics}");
    s.stop().await;
}

/// Fits are admitted by their memory estimate: a job shows its estimate; a fit whose
/// estimate exceeds `--fit-memory-mb` alone is a 422 naming `params` and queues
/// nothing; two fits that fit the budget alone but not together run one after the
/// other, the second saying why it waits, and both succeed.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fits_are_admitted_by_their_memory_estimate() {
    let mut s = TestServer::start().await;
    let cid = s.upload(json!({"documents": appstream_docs(200), "preprocess": {"min_df": 2}})).await["id"].as_str().unwrap().to_string();
    let params = json!({"topics": 10, "iterations": 2000, "threads": 1});
    let probe = s.submit(&cid, "lda", params.clone(), 1).await;
    let estimate = probe["memory_estimate_bytes"].as_u64().expect("a fit job carries its memory estimate");
    assert!(estimate > 0);
    s.wait(probe["id"].as_str().unwrap(), Duration::from_secs(120)).await;

    // A budget below one fit's estimate: refused at submission, nothing queued.
    s.stop().await;
    s.boot(|c| c.fit_memory_mb = Some(estimate as f64 / 2.0 / 1048576.0)).await;
    let before = s.get("/v1/jobs").await.1["total"].clone();
    let (status, body) = s.post("/v1/jobs", &json!({"corpus_id": cid, "model": "lda", "params": params, "seed": 2})).await;
    common::assert_problem(status, &body, 422, Some("params"));
    assert_eq!(body["limit"], "fit-memory-mb", "{body}");
    assert!(body["detail"].as_str().unwrap().contains("MB"), "{body}");
    assert_eq!(s.get("/v1/jobs").await.1["total"], before, "a refused fit was queued");

    // Room for one and a half fits, two may run at once: the second waits its turn.
    s.stop().await;
    s.boot(|c| {
        c.fit_memory_mb = Some(1.5 * estimate as f64 / 1048576.0);
        c.max_jobs = 2;
    })
    .await;
    let first = s.submit(&cid, "lda", params.clone(), 3).await;
    let second = s.submit(&cid, "lda", params.clone(), 4).await;
    let (first_id, second_id) = (first["id"].as_str().unwrap().to_string(), second["id"].as_str().unwrap().to_string());
    let mut saw_waiting = None;
    let t0 = std::time::Instant::now();
    loop {
        let (a, b) = (s.get(&format!("/v1/jobs/{first_id}")).await.1, s.get(&format!("/v1/jobs/{second_id}")).await.1);
        assert!(!(a["status"] == "running" && b["status"] == "running"), "two fits ran together beyond the budget");
        if a["status"] == "running" && b["status"] == "queued" && b["waiting"].is_string() {
            saw_waiting = b["waiting"].as_str().map(str::to_string);
        }
        if a["status"] == "succeeded" && b["status"] == "succeeded" {
            assert!(b["waiting"].is_null(), "the note stays after the job started: {b}");
            break;
        }
        assert!(a["status"] != "failed" && b["status"] != "failed", "{a} {b}");
        assert!(t0.elapsed() < Duration::from_secs(120), "the fits did not end: {a} {b}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let waiting = saw_waiting.expect("the second fit was never seen waiting for memory while the first ran");
    assert!(waiting.contains("fit budget"), "{waiting}");
    s.stop().await;
}

/// Several chains through the service: the job counts through both chains, its answer
/// carries the model's convergence report (two chains, R̂ over them), the model keeps
/// the chains' alignment; families that run no chains refuse them, and more than 8 are
/// refused, naming the field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_chains_report_convergence_on_the_job_and_the_model() {
    let s = TestServer::start().await;
    let corpus = s.upload(json!({"name": "appstream-200", "documents": appstream_docs(200), "preprocess": {"min_df": 2}})).await;
    let cid = corpus["id"].as_str().unwrap().to_string();
    let job = s.submit(&cid, "lda", json!({"topics": 5, "iterations": 40, "burn_in": 20, "thin": 2, "chains": 2}), 3).await;
    assert_eq!(job["params"]["chains"], 2);
    let done = s.wait(job["id"].as_str().unwrap(), Duration::from_secs(120)).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!((done["progress"]["iteration"].as_u64(), done["progress"]["total"].as_u64()), (Some(80), Some(80)));
    let report = &done["convergence"];
    assert_eq!((report["chains"].as_u64(), report["draws_per_chain"].as_u64()), (Some(2), Some(10)), "{report}");
    let loglik = report["quantities"].as_array().unwrap().iter().find(|q| q["name"] == "loglik_per_token").expect("the log joint is traced");
    assert!(loglik["rhat"].as_f64().unwrap() > 0.9, "{loglik}");
    assert_eq!(loglik["per_chain"].as_array().unwrap().len(), 2);
    assert_eq!(report["sorted_topic_shares"]["count"], 5);
    assert_eq!(report["traces"][0]["chains"].as_array().unwrap().len(), 2);
    assert_eq!(report["converged"].as_bool(), Some(report["max_rhat"].as_f64().unwrap() <= 1.01));
    assert_eq!(report["warning"].is_null(), report["converged"] == true);
    let (_, model) = s.get(&format!("/v1/models/{}", done["model_id"].as_str().unwrap())).await;
    assert_eq!(model["diagnostics"]["convergence"], *report);
    let permutation = model["diagnostics"]["chain_alignment"][0]["permutation"].as_array().unwrap();
    let mut sorted: Vec<u64> = permutation.iter().map(|x| x.as_u64().unwrap()).collect();
    sorted.sort();
    assert_eq!(sorted, vec![0, 1, 2, 3, 4]);
    // Intervals from the kept sweeps of the chains pooled into each topic (both where
    // the other chain's match is at least 0.8 similar, the reference's alone where it is
    // not), the other chain's relabelled onto the reference's topics: the fixed β makes
    // the mean of the draws' φ the pooled posterior mean exactly (up to rounding), and
    // the mean of their shares, renormalised as the served ones are, the proportion.
    let model_id = done["model_id"].as_str().unwrap();
    let (status, t) = s.get(&format!("/v1/models/{model_id}/topics?n=5&with=intervals&level=0.9")).await;
    assert_eq!(status, 200, "{t}");
    assert_eq!((t["intervals"]["draws"].as_u64(), t["intervals"]["level"].as_f64()), (Some(20), Some(0.9)), "{}", t["intervals"]);
    for topic in t["topics"].as_array().unwrap() {
        let pooled = topic["stability"]["similarity"].as_f64().unwrap() >= 0.8;
        assert_eq!(topic["interval_draws"].as_u64(), Some(if pooled { 20 } else { 10 }), "{topic}");
        let share = &topic["proportion_interval"];
        assert!((share["mean"].as_f64().unwrap() - topic["proportion"].as_f64().unwrap()).abs() < 1e-9, "{topic}");
        for (j, w) in topic["words"].as_array().unwrap().iter().enumerate() {
            let i = &w["intervals"];
            let f = &i["frequency"];
            assert!((f["mean"].as_f64().unwrap() - w["frequency"].as_f64().unwrap()).abs() < 1e-9, "{w}");
            for score in ["frequency", "exclusivity", "frex"] {
                let (lo, mean, hi) = (i[score]["lower"].as_f64().unwrap(), i[score]["mean"].as_f64().unwrap(), i[score]["upper"].as_f64().unwrap());
                assert!(lo <= mean + 1e-12 && mean <= hi + 1e-12, "{score}: {w}");
            }
            let p = i["in_top_n"].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&p), "{w}");
            if j == 0 {
                assert!(p > 0.0, "the mean table's first word is in some draw's top 5: {w}");
            }
        }
    }
    let (status, one) = s.get(&format!("/v1/models/{model_id}/topics/2/frex?n=4&with=intervals")).await;
    assert_eq!(status, 200, "{one}");
    assert_eq!(one["intervals"]["level"].as_f64(), Some(0.95));
    assert!(one["words"][3]["intervals"]["frex"]["mean"].is_number() && one["topic"]["proportion_interval"]["upper"].is_number(), "{one}");
    for (query, field) in
        [("with=intervals&level=1", "query.level"), ("level=0.9", "query.level"), ("with=intervals&format=csv", "query.format"), ("with=nothing", "query.with")]
    {
        let (status, body) = s.get(&format!("/v1/models/{model_id}/topics?{query}")).await;
        common::assert_problem(status, &body, 422, Some(field));
    }
    // Predictions with intervals: Dirichlet draws at each kept fold-in sweep. Their mean
    // estimates what the point estimate does (the Rao–Blackwellised mean over the same
    // sweeps): with 50 kept sweeps their difference's standard error is about 0.02 for a
    // ten-word document, and the bound is five of them.
    let docs = json!([{"id": "a", "text": "free software for editing images and photos with layers"}]);
    let (status, p) = s.post(&format!("/v1/models/{model_id}/predict"), &json!({"documents": docs, "intervals": true, "level": 0.9})).await;
    assert_eq!(status, 200, "{p}");
    let pred = &p["predictions"][0];
    let intervals = pred["topic_proportion_intervals"].as_array().expect("intervals");
    assert_eq!(intervals.len(), 5);
    for (i, point) in intervals.iter().zip(pred["topic_proportions"].as_array().unwrap()) {
        let (lo, mean, hi) = (i["lower"].as_f64().unwrap(), i["mean"].as_f64().unwrap(), i["upper"].as_f64().unwrap());
        assert!(lo <= mean && mean <= hi && (mean - point.as_f64().unwrap()).abs() < 0.1, "{i} vs {point}");
    }
    let (_, plain) = s.post(&format!("/v1/models/{model_id}/predict"), &json!({"documents": docs})).await;
    assert!(plain["predictions"][0].get("topic_proportion_intervals").is_none());
    assert_eq!(plain["predictions"][0]["topic_proportions"], pred["topic_proportions"], "the same chains");
    let (status, body) = s.post(&format!("/v1/models/{model_id}/predict"), &json!({"documents": docs, "level": 0.9})).await;
    common::assert_problem(status, &body, 422, Some("level"));
    let pcm = s.submit(&cid, "pcm", json!({"topics": 3, "iterations": 4, "burn_in": 2, "chains": 2}), 1).await;
    let pcm = s.wait(pcm["id"].as_str().unwrap(), Duration::from_secs(120)).await;
    assert_eq!(pcm["status"], "succeeded", "{pcm}");
    assert_eq!((pcm["progress"]["total"].as_u64(), pcm["convergence"]["chains"].as_u64()), (Some(8), Some(2)), "two PCM chains: {pcm}");
    assert!(pcm["convergence"]["quantities"].as_array().unwrap().iter().any(|q| q["name"] == "lambda2"), "PCM traces its hyperparameters");
    let (status, body) = s.get(&format!("/v1/models/{}/topics?with=intervals", pcm["model_id"].as_str().unwrap())).await;
    common::assert_problem(status, &body, 409, Some("model"));
    // PCM predicts by the mode ξ*; its intervals are Laplace draws around it, whose
    // central 90 % hold the point answer θ(ξ*) for every topic.
    let (status, p) =
        s.post(&format!("/v1/models/{}/predict", pcm["model_id"].as_str().unwrap()), &json!({"documents": docs, "intervals": true, "level": 0.9})).await;
    assert_eq!(status, 200, "{p}");
    let pred = &p["predictions"][0];
    let intervals = pred["topic_proportion_intervals"].as_array().expect("PCM intervals");
    assert_eq!(intervals.len(), 3);
    for (i, point) in intervals.iter().zip(pred["topic_proportions"].as_array().unwrap()) {
        let (lo, hi, point) = (i["lower"].as_f64().unwrap(), i["upper"].as_f64().unwrap(), point.as_f64().unwrap());
        assert!(lo < hi && lo <= point && point <= hi, "{i} vs {point}");
    }
    for (family, params) in [("pcm", json!({"topics": 3, "chains": 9})), ("hdp", json!({"chains": 2})), ("lda", json!({"chains": 9}))] {
        let (status, body) = s.post("/v1/jobs", &json!({"corpus_id": cid, "model": family, "params": params})).await;
        common::assert_problem(status, &body, 422, Some("params.chains"));
    }
}

/// Each topic's contrast in an effects answer as (mean, lower, upper), largest mean
/// first.
fn differences_largest_first(e: &Value) -> Vec<(f64, f64, f64)> {
    let mut diffs: Vec<(f64, f64, f64)> = e["topics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["difference"]["mean"].as_f64().unwrap(), t["difference"]["lower"].as_f64().unwrap(), t["difference"]["upper"].as_f64().unwrap()))
        .collect();
    diffs.sort_by(|a, b| b.0.total_cmp(&a.0));
    diffs
}

/// Covariate effects for LDA by the method of composition: two groups of documents
/// written from two disjoint vocabularies, a two-topic LDA fitted with the group as a
/// covariate. Each topic's share differs between the groups by almost all of it, so
/// the contrast's interval lies far from 0, with opposite signs for the two topics.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lda_effects_by_composition_find_a_planted_group_difference() {
    let s = TestServer::start().await;
    let vocab = [["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"], ["kilo", "lima", "mike", "november", "oscar", "papa"]];
    let docs: Vec<Value> = (0..120)
        .map(|i| {
            let g = i % 2;
            let text: Vec<&str> = (0..30).map(|j| vocab[g][(i * 7 + j * 5 + j * j) % 6]).collect();
            let group = ["a", "b"][g];
            json!({"id": format!("d{i}"), "text": text.join(" "), "covariates": {"group": group, "x": i as f64}})
        })
        .collect();
    let corpus = s.upload(json!({"documents": docs})).await;
    let cid = corpus["id"].as_str().unwrap().to_string();
    let job = s.submit(&cid, "lda", json!({"topics": 2, "alpha": 0.1, "iterations": 60, "thin": 1, "covariates": ["group", "x"]}), 4).await;
    assert_eq!((job["params"]["keep_draws"].as_u64(), job["params"]["covariates"].clone()), (Some(20), json!(["group", "x"])), "{job}");
    let done = s.wait(job["id"].as_str().unwrap(), Duration::from_secs(120)).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let model_id = done["model_id"].as_str().unwrap();
    let (status, e) = s.get(&format!("/v1/models/{model_id}/effects?covariate=group&contrast=a,b")).await;
    assert_eq!(status, 200, "{e}");
    assert_eq!((e["method"].as_str(), e["draws"].as_u64(), e["simulations"].as_u64()), (Some("composition"), Some(20), Some(25)), "{e}");
    assert!(e["monte_carlo"].is_null());
    assert_eq!(e["held_at"]["x"].as_f64(), Some(59.5), "x held at its mean");
    let diffs: Vec<(f64, f64, f64)> = e["topics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let d = &t["difference"];
            (d["mean"].as_f64().unwrap(), d["lower"].as_f64().unwrap(), d["upper"].as_f64().unwrap())
        })
        .collect();
    assert_eq!(diffs.len(), 2);
    let (up, down) = if diffs[0].0 > 0.0 { (diffs[0], diffs[1]) } else { (diffs[1], diffs[0]) };
    assert!(up.0 > 0.8 && up.1 > 0.5 && down.0 < -0.8 && down.2 < -0.5, "{diffs:?}");
    // Along the continuous covariate nothing was planted: with the group held at its
    // reference level the curve is flat (the documents of a group are alike here).
    let (status, e) = s.get(&format!("/v1/models/{model_id}/effects?covariate=x&grid=5")).await;
    assert_eq!(status, 200, "{e}");
    let points = e["topics"][0]["points"].as_array().unwrap();
    for p in points {
        let (lo, mean, hi) = (p["lower"].as_f64().unwrap(), p["mean"].as_f64().unwrap(), p["upper"].as_f64().unwrap());
        assert!(lo <= mean && mean <= hi && (mean - points[0]["mean"].as_f64().unwrap()).abs() < 0.05, "{p}");
    }
    // PCM by the same method, over the θ = softmax(ξ) draws of two chains (chain 1's
    // topics matched to chain 0's): the planted difference is found with the interval
    // away from 0 for both topics, in opposite directions. (A document's θ is shrunk
    // towards the prior by ξ's normal prior, so the bound is half the planted 1, not
    // LDA's 0.8.)
    let job = s.submit(&cid, "pcm", json!({"topics": 2, "iterations": 60, "burn_in": 30, "thin": 1, "chains": 2, "covariates": ["group"]}), 4).await;
    assert_eq!(job["params"]["keep_draws"].as_u64(), Some(20), "{job}");
    let done = s.wait(job["id"].as_str().unwrap(), Duration::from_secs(120)).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let (status, e) = s.get(&format!("/v1/models/{}/effects?covariate=group&contrast=a,b", done["model_id"].as_str().unwrap())).await;
    assert_eq!(status, 200, "{e}");
    assert_eq!((e["method"].as_str(), e["draws"].as_u64()), (Some("composition"), Some(20)), "10 draws from each chain: {e}");
    let diffs = differences_largest_first(&e);
    assert!(diffs[0].0 > 0.5 && diffs[0].1 > 0.0 && diffs[1].0 < -0.5 && diffs[1].2 < 0.0, "PCM: {diffs:?}");
    // HDP by the same method, over draws from the training documents' q(π_d): one topic
    // holds group a's vocabulary and rises by more than half, with the same bound as
    // PCM's; group b's vocabulary may be split over the other active topics (HDP chooses
    // how many), so each of them falls and together they fall by more than half.
    let job = s.submit(&cid, "hdp", json!({"topics": 4, "passes": 10, "covariates": ["group"]}), 4).await;
    let done = s.wait(job["id"].as_str().unwrap(), Duration::from_secs(120)).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let hdp_id = done["model_id"].as_str().unwrap();
    let (status, e) = s.get(&format!("/v1/models/{hdp_id}/effects?covariate=group&contrast=a,b&seed=3")).await;
    assert_eq!(status, 200, "{e}");
    assert_eq!((e["method"].as_str(), e["draws"].as_u64()), (Some("composition"), Some(20)), "{e}");
    let diffs = differences_largest_first(&e);
    let rest: f64 = diffs[1..].iter().map(|d| d.0).sum();
    assert!(diffs[0].0 > 0.5 && diffs[0].1 > 0.0 && rest < -0.5 && diffs[1..].iter().all(|d| d.2 < 0.0), "HDP: {diffs:?}");
    let (_, again) = s.get(&format!("/v1/models/{hdp_id}/effects?covariate=group&contrast=a,b&seed=3")).await;
    assert_eq!(again, e, "same seed, same draws, same answer");
    // A model fitted without covariates cannot answer, whatever is asked: 409 naming
    // the model, saying what is missing.
    let plain = s.submit(&cid, "lda", json!({"topics": 2, "iterations": 10}), 4).await;
    let plain = s.wait(plain["id"].as_str().unwrap(), Duration::from_secs(120)).await;
    let (status, body) = s.get(&format!("/v1/models/{}/effects?covariate=group", plain["model_id"].as_str().unwrap())).await;
    common::assert_problem(status, &body, 409, Some("model"));
    assert!(body["detail"].as_str().unwrap().contains("without covariates"), "{body}");
    // A covariate the corpus lacks is refused at submit.
    let (status, body) = s.post("/v1/jobs", &json!({"corpus_id": cid, "model": "lda", "params": {"covariates": ["year"]}})).await;
    common::assert_problem(status, &body, 422, Some("params.covariates"));
}
