//! Crash and resume over real HTTP: a server killed with SIGKILL mid-fit (after a
//! checkpoint) and started again on the same database finishes the job from its
//! checkpoint, and the stored model is byte for byte the model of an uninterrupted fit
//! with the same corpus, params and seed. Killed twice under `--max-attempts 1`: attempts
//! that wrote a checkpoint made progress and do not use up the job's attempts. The same
//! for a DCNT fit killed inside its chain and then while it scores its held-out
//! documents, for a held-out evaluation job killed mid-way, whose result equals an
//! uninterrupted job's, and for a graph fit on the pass driver (HDP-aMMSB).

mod common;

use common::process::ServerProcess;
use serde_json::{json, Value};
use std::time::Duration;
use topicd::corpus::Corpus;
use topicd::models::{self, FitContext};
use topicd::store::Store;

const MINUTE: Duration = Duration::from_secs(60);

fn checkpoint_iteration(j: &Value) -> Option<u64> {
    j["progress"]["checkpoint"]["iteration"].as_u64()
}

fn finished(j: &Value) -> bool {
    !matches!(j["status"].as_str(), Some("queued" | "running"))
}

/// The model bytes the job stored, and those of the same fit (`family`, `params`, `seed`)
/// run uninterrupted in this process on the stored corpus.
async fn stored_and_uninterrupted(store: &Store, model_id: &str, corpus_id: &str, family: &'static str, params: Value, seed: u64) -> (Vec<u8>, Vec<u8>) {
    let (_, _, stored) = store.model_blobs(model_id).await.unwrap().unwrap();
    let blob = store.corpus_data(corpus_id).await.unwrap().unwrap();
    let uninterrupted = tokio::task::spawn_blocking(move || {
        let corpus = Corpus::decode_without_order(&blob).unwrap();
        FitContext::silent(|ctx| {
            let family = models::registry::lookup(family).and_then(models::registry::Family::topics).unwrap();
            family.fit(&corpus, &family.parse_params(&models::options::without_options(params)).unwrap(), seed, ctx).unwrap().encode()
        })
    })
    .await
    .unwrap();
    (stored, uninterrupted)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fit_killed_with_sigkill_resumes_to_the_uninterrupted_model() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("topicd.db");
    let params = json!({"topics": 10, "iterations": 150, "burn_in": 50, "thin": 5, "checkpoint_every_s": 0.25});
    let seed = 11;

    let a = ServerProcess::start(&db, &["--threads", "1"]);
    let (st, corpus) = a.post("/v1/corpora", &json!({"name": "bars", "synthetic": {"kind": "bars", "documents": 2000, "tokens": 200, "seed": 3}})).await;
    assert_eq!(st, 201, "{corpus}");
    let corpus_id = corpus["id"].as_str().unwrap().to_string();
    let (st, job) = a.post("/v1/jobs", &json!({"corpus_id": corpus_id, "model": "lda", "params": params, "seed": seed})).await;
    assert_eq!(st, 202, "{job}");
    let id = job["id"].as_str().unwrap().to_string();

    // First crash: after the first checkpoint.
    let j = a.wait_for(&id, MINUTE, "checkpointed", |j| checkpoint_iteration(j).is_some() || finished(j)).await;
    assert_eq!(j["status"], "running", "the fit must outlast its first checkpoint: {j}");
    let first = checkpoint_iteration(&j).unwrap();
    a.kill();

    // Second crash: after the resumed attempt wrote a checkpoint of its own. Under the old
    // rule `--max-attempts 1` would have failed the job at this start.
    let b = ServerProcess::start(&db, &["--threads", "1", "--max-attempts", "1"]);
    let j = b
        .wait_for(&id, MINUTE, "resumed and checkpointed", |j| {
            finished(j) || matches!((j["progress"]["resumed_from"].as_u64(), checkpoint_iteration(j)), (Some(r), Some(c)) if c > r)
        })
        .await;
    assert_eq!(j["status"], "running", "{j}");
    assert!(j["progress"]["resumed_from"].as_u64().unwrap() >= first, "{j}");
    b.kill();

    let c = ServerProcess::start(&db, &["--threads", "2", "--max-attempts", "1"]);
    let j = c.wait_for(&id, 2 * MINUTE, "finished", finished).await;
    assert_eq!(j["status"], "succeeded", "{j}\n{:?}", c.log.lock().unwrap());
    assert_eq!(j["attempts"], 3, "{j}");
    assert!(j["progress"]["resumed_from"].as_u64().unwrap() > first, "{j}");
    // The trace has every log-likelihood sweep once: kept up to each checkpoint, then
    // continued.
    let (_, trace) = c.get(&format!("/v1/jobs/{id}/trace")).await;
    let its: Vec<u64> = trace["points"].as_array().unwrap().iter().map(|p| p["iteration"].as_u64().unwrap()).collect();
    let expected: Vec<u64> = (1..=150).filter(|&it| it == 1 || it % 10 == 0).collect();
    assert_eq!(its, expected);
    let model_id = j["model_id"].as_str().unwrap().to_string();
    let (st, topics) = c.get(&format!("/v1/models/{model_id}/topics?n=5")).await;
    assert_eq!(st, 200, "{topics}");

    // The uninterrupted fit, in this process, on the stored corpus: the same bytes.
    let store = Store::open(&db).await.unwrap();
    assert_eq!(store.checkpoint_iteration(&id).await.unwrap(), None, "success drops the checkpoint");
    let (stored, uninterrupted) = stored_and_uninterrupted(&store, &model_id, &corpus_id, "lda", params, seed).await;
    assert!(stored == uninterrupted, "the resumed model differs from the uninterrupted fit");
}

/// A DCNT fit killed with SIGKILL inside its chain, then again while it scores its
/// held-out documents (after a checkpoint with some of them scored), finishes from its
/// checkpoints on 2 threads with exactly the model of an uninterrupted fit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dcnt_fit_killed_in_its_chain_and_in_its_scoring_resumes_to_the_uninterrupted_model() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("topicd.db");
    // About 2 s of scans and 2 s of Chib scoring (69 held-out documents) on one thread.
    let params = json!({
        "topics": 10, "iterations": 200, "burn_in": 100, "thin": 10, "test_fraction": 0.1,
        "heldout_burn_in": 100, "heldout_chain_length": 2000, "heldout_acceptance_samples": 200, "checkpoint_every_s": 0.2
    });
    let (seed, iterations) = (5, 200);

    let a = ServerProcess::start(&db, &["--threads", "1"]);
    let spec = json!({"kind": "bars", "variant": "correlated", "documents": 600, "tokens": 60, "seed": 3});
    let (st, corpus) = a.post("/v1/corpora", &json!({"name": "bars", "synthetic": spec})).await;
    assert_eq!(st, 201, "{corpus}");
    let corpus_id = corpus["id"].as_str().unwrap().to_string();
    let (st, job) = a.post("/v1/jobs", &json!({"corpus_id": corpus_id, "model": "dcnt", "params": params, "seed": seed})).await;
    assert_eq!(st, 202, "{job}");
    let id = job["id"].as_str().unwrap().to_string();

    // First crash: inside the chain, after a checkpoint.
    let j = a.wait_for(&id, MINUTE, "checkpointed", |j| checkpoint_iteration(j).is_some() || finished(j)).await;
    assert_eq!(j["status"], "running", "{j}");
    let first = checkpoint_iteration(&j).unwrap();
    assert!(first < iterations, "the first checkpoint is inside the chain: {j}");
    a.kill();

    // Second crash: while the held-out documents are scored, after a checkpoint later
    // than the one at the chain's end (so some documents were scored).
    let b = ServerProcess::start(&db, &["--threads", "1"]);
    let at_end = std::sync::Mutex::new(None::<String>);
    let j = b
        .wait_for(&id, MINUTE, "scoring and checkpointed", |j| {
            if finished(j) || checkpoint_iteration(j) != Some(iterations) {
                return finished(j);
            }
            let at = j["progress"]["checkpoint"]["at"].as_str().unwrap().to_string();
            let mut first_at_end = at_end.lock().unwrap();
            *first_at_end.get_or_insert_with(|| at.clone()) != at
        })
        .await;
    assert_eq!(j["status"], "running", "the scoring must outlast two checkpoints: {j}");
    assert!(j["progress"]["resumed_from"].as_u64().unwrap() >= first, "{j}");
    b.kill();

    let c = ServerProcess::start(&db, &["--threads", "2"]);
    let j = c.wait_for(&id, MINUTE, "finished", finished).await;
    assert_eq!(j["status"], "succeeded", "{j}\n{:?}", c.log.lock().unwrap());
    assert_eq!(j["attempts"], 3, "{j}");
    assert_eq!(j["progress"]["resumed_from"], iterations, "the last attempt only scored: {j}");
    let (_, trace) = c.get(&format!("/v1/jobs/{id}/trace")).await;
    let its: Vec<u64> = trace["points"].as_array().unwrap().iter().map(|p| p["iteration"].as_u64().unwrap()).collect();
    assert_eq!(its, (1..=iterations).filter(|&it| it == 1 || it % 10 == 0).collect::<Vec<_>>());
    let model_id = j["model_id"].as_str().unwrap().to_string();

    let store = Store::open(&db).await.unwrap();
    assert_eq!(store.checkpoint_iteration(&id).await.unwrap(), None, "success drops the checkpoint");
    assert_eq!(store.sample_iterations(&id).await.unwrap(), (110..=200).step_by(10).collect::<Vec<i64>>(), "every kept scan's sample once");
    let (stored, uninterrupted) = stored_and_uninterrupted(&store, &model_id, &corpus_id, "dcnt", params, seed).await;
    assert!(stored == uninterrupted, "the resumed model differs from the uninterrupted fit");
}

/// A held-out likelihood job killed with SIGKILL after a checkpoint of its scored
/// documents resumes from them on restart (skipping them) and its result equals that of
/// the same job run uninterrupted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_evaluation_job_killed_with_sigkill_resumes_to_the_uninterrupted_result() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("topicd.db");
    let flags = ["--threads", "1", "--checkpoint-every-s", "0.2"];
    let a = ServerProcess::start(&db, &flags);
    let spec = json!({"kind": "bars", "variant": "correlated", "documents": 300, "tokens": 60, "seed": 3});
    let (st, corpus) = a.post("/v1/corpora", &json!({"name": "bars", "synthetic": spec})).await;
    assert_eq!(st, 201, "{corpus}");
    let fit = json!({"corpus_id": corpus["id"], "model": "scnt", "params": {"topics": 10, "iterations": 30}, "seed": 2});
    let (st, job) = a.post("/v1/jobs", &fit).await;
    assert_eq!(st, 202, "{job}");
    let done = a.wait_for(job["id"].as_str().unwrap(), MINUTE, "fitted", finished).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let model_id = done["model_id"].as_str().unwrap().to_string();

    // 60 documents, each a row and a column of pixels: about 2 s on one thread.
    let documents: Vec<Value> = (0..60)
        .map(|i| {
            let (row, col) = (i % 5, (i / 5) % 5);
            let mut counts = std::collections::BTreeMap::<String, u64>::new();
            for k in 0..5 {
                *counts.entry(format!("p{row}{k}")).or_default() += 3;
                *counts.entry(format!("p{k}{col}")).or_default() += 3;
            }
            json!({"id": format!("d{i}"), "counts": counts})
        })
        .collect();
    let body = json!({"documents": documents, "params": {"burn_in": 200, "chain_length": 4000, "acceptance_samples": 200}, "seed": 4});
    let path = format!("/v1/models/{model_id}/heldout-likelihood");
    let (st, job) = a.post(&path, &body).await;
    assert_eq!(st, 202, "{job}");
    let id = job["id"].as_str().unwrap().to_string();
    let j = a.wait_for(&id, MINUTE, "checkpointed", |j| checkpoint_iteration(j).is_some() || finished(j)).await;
    assert_eq!(j["status"], "running", "the job must outlast its first checkpoint: {j}");
    let scored = checkpoint_iteration(&j).unwrap();
    assert!((1..60).contains(&scored), "{j}");
    a.kill();

    let b = ServerProcess::start(&db, &["--threads", "2", "--checkpoint-every-s", "0.2"]);
    let j = b.wait_for(&id, MINUTE, "finished", finished).await;
    assert_eq!(j["status"], "succeeded", "{j}\n{:?}", b.log.lock().unwrap());
    assert_eq!(j["attempts"], 2, "{j}");
    assert!(j["progress"]["resumed_from"].as_u64().unwrap() >= scored, "{j}");
    assert_eq!((j["progress"]["iteration"].as_u64(), j["progress"]["total"].as_u64()), (Some(60), Some(60)), "{j}");
    let store = Store::open(&db).await.unwrap();
    assert_eq!(store.checkpoint_iteration(&id).await.unwrap(), None, "success drops the checkpoint");

    // The same job, uninterrupted.
    let (st, again) = b.post(&path, &body).await;
    assert_eq!(st, 202, "{again}");
    let uninterrupted = b.wait_for(again["id"].as_str().unwrap(), MINUTE, "finished", finished).await;
    assert_eq!(uninterrupted["status"], "succeeded", "{uninterrupted}");
    assert!(uninterrupted["progress"].get("resumed_from").is_none(), "{uninterrupted}");
    assert_eq!(j["result"], uninterrupted["result"], "the resumed job's result differs from the uninterrupted one's");
    assert_eq!(j["result"]["documents"].as_array().unwrap().len(), 60);
}

/// A job found `running` at start with an unusable checkpoint (a flipped byte that fails
/// its checksum, or bytes that pass it but do not decode) is not resumed: the runner
/// says why in `progress.checkpoint_rejected`, the fit starts from iteration 0, and the
/// model is that of a fit that never had a checkpoint.
#[tokio::test]
async fn a_job_with_an_unusable_checkpoint_starts_over() {
    let mut s = common::TestServer::start().await;
    let corpus = s.upload(json!({"name": "bars", "synthetic": {"kind": "bars", "documents": 200, "tokens": 50, "seed": 1}})).await;
    let corpus_id = corpus["id"].as_str().unwrap().to_string();
    let params = json!({"topics": 5, "iterations": 30, "thin": 5});
    let reference = s.submit(&corpus_id, "lda", params.clone(), 5).await;
    let reference = s.wait(reference["id"].as_str().unwrap(), MINUTE).await;
    assert_eq!(reference["status"], "succeeded", "{reference}");
    s.stop().await;

    // Two jobs left `running` by a "dead process", each with a bad checkpoint.
    let store = Store::open(&s.db()).await.unwrap();
    for (id, bytes) in [("flipped", b"a checkpoint whose byte flips".to_vec()), ("garbage", b"passes its checksum, decodes to nothing".to_vec())] {
        let job = topicd::store::jobs::NewJob {
            id,
            input: topicd::store::FitInput::Corpus(&corpus_id),
            model: topicd::store::FamilyName::parse("lda").unwrap(),
            params: &params,
            seed: 5,
            queue: topicd::store::jobs::QueueGate::UNBOUNDED,
            memory_bytes: None,
            options: None,
            ranks: 1,
            start: None,
        };
        store.insert_job(job).await.unwrap().unwrap();
        let claimed = store.claim_next_job(&topicd::store::Worker::new("test")).await.unwrap().unwrap();
        store.save_checkpoint(&topicd::store::Claim::of(&claimed), 12, bytes).await.unwrap();
    }
    sqlx::query("UPDATE checkpoint_chunks SET data = CAST('a checkpoint whose byte flipS' AS BLOB) WHERE job_id = 'flipped'")
        .execute(store.pool())
        .await
        .unwrap();

    s.boot(|_| {}).await;
    let expected = store.model_blobs(reference["model_id"].as_str().unwrap()).await.unwrap().unwrap().2;
    for (id, why) in [("flipped", "checksum"), ("garbage", "does not decode")] {
        let j = s.wait(id, MINUTE).await;
        assert_eq!(j["status"], "succeeded", "{j}");
        let rejected = j["progress"]["checkpoint_rejected"].as_str().unwrap_or_else(|| panic!("{j}"));
        assert!(rejected.contains(why) && rejected.contains("starting from iteration 0"), "{rejected}");
        assert!(j["progress"].get("resumed_from").is_none(), "{j}");
        assert_eq!(store.checkpoint_iteration(id).await.unwrap(), None);
        let model = store.model_blobs(j["model_id"].as_str().unwrap()).await.unwrap().unwrap().2;
        assert!(model == expected, "{id}: the model differs from a fit without a checkpoint");
    }
}

/// A graceful stop (SIGTERM) cancels the running fit, which hands over a checkpoint of
/// the sweep it stopped after; at the next start the job continues from there, although
/// its periodic interval (an hour) never came.
#[tokio::test]
async fn a_graceful_stop_resumes_where_the_fit_stopped() {
    let mut s = common::TestServer::start().await;
    let corpus = s.upload(json!({"name": "bars", "synthetic": {"kind": "bars", "documents": 1000, "tokens": 200, "seed": 2}})).await;
    let params = json!({"topics": 10, "iterations": 120, "checkpoint_every_s": 3600, "threads": 1});
    let job = s.submit(corpus["id"].as_str().unwrap(), "lda", params, 3).await;
    let id = job["id"].as_str().unwrap().to_string();
    let t0 = std::time::Instant::now();
    let seen = loop {
        let (_, j) = s.get(&format!("/v1/jobs/{id}")).await;
        assert!(matches!(j["status"].as_str(), Some("queued" | "running")), "the fit must still run: {j}");
        if let Some(it) = j["progress"]["iteration"].as_u64().filter(|&it| it >= 5) {
            break it;
        }
        assert!(t0.elapsed() < MINUTE, "{j}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    s.restart().await;
    let j = s.wait(&id, MINUTE).await;
    assert_eq!(j["status"], "succeeded", "{j}");
    assert!(j["progress"]["resumed_from"].as_u64().unwrap() >= seen, "{j}");
}

/// A planted-partition graph as the upload body: `blocks` blocks of `size` nodes, a link
/// inside a block with probability `p_in` and across with `p_out` (a fixed xorshift
/// stream, so every run uploads the same graph).
fn planted_graph(blocks: usize, size: usize, p_in: f64, p_out: f64) -> Value {
    let n = blocks * size;
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut uniform = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let nodes: Vec<String> = (0..n).map(|i| format!("n{i}")).collect();
    let mut edges = Vec::new();
    for i in 0..n {
        for j in i + 1..n {
            if uniform() < if i / size == j / size { p_in } else { p_out } {
                edges.push(json!([nodes[i], nodes[j]]));
            }
        }
    }
    json!({"name": "planted", "nodes": nodes, "edges": edges})
}

/// The pass driver's checkpoints over real HTTP: an HDP-aMMSB fit (a graph job, which
/// had no checkpoints before) killed with SIGKILL after a checkpoint resumes on the next
/// start, on another thread count, to the bytes of an uninterrupted fit, with every
/// pass in its trace once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graph_fit_killed_with_sigkill_resumes_to_the_uninterrupted_model() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("topicd.db");
    let passes = 400;
    let params = json!({"communities": 12, "passes": passes, "tolerance": 0, "checkpoint_every_s": 0.2});
    let seed = 5;

    let a = ServerProcess::start(&db, &["--threads", "1"]);
    let (st, graph) = a.post("/v1/graphs", &planted_graph(4, 60, 0.15, 0.01)).await;
    assert_eq!(st, 201, "{graph}");
    let graph_id = graph["id"].as_str().unwrap().to_string();
    let (st, job) = a.post("/v1/jobs", &json!({"graph_id": graph_id, "model": "hdp_ammsb", "params": params, "seed": seed})).await;
    assert_eq!(st, 202, "{job}");
    let id = job["id"].as_str().unwrap().to_string();
    let j = a.wait_for(&id, MINUTE, "checkpointed", |j| checkpoint_iteration(j).is_some() || finished(j)).await;
    assert_eq!(j["status"], "running", "the fit must outlast its first checkpoint: {j}");
    let first = checkpoint_iteration(&j).unwrap();
    a.kill();

    let b = ServerProcess::start(&db, &["--threads", "2"]);
    let j = b.wait_for(&id, 2 * MINUTE, "finished", finished).await;
    assert_eq!(j["status"], "succeeded", "{j}\n{:?}", b.log.lock().unwrap());
    assert_eq!(j["attempts"], 2, "{j}");
    assert!(j["progress"]["resumed_from"].as_u64().unwrap() >= first, "{j}");
    let (_, trace) = b.get(&format!("/v1/jobs/{id}/trace")).await;
    let its: Vec<u64> = trace["points"].as_array().unwrap().iter().map(|p| p["iteration"].as_u64().unwrap()).collect();
    assert_eq!(its, (1..=passes).collect::<Vec<u64>>(), "every pass in the trace once");
    let model_id = j["model_id"].as_str().unwrap().to_string();
    let (st, communities) = b.get(&format!("/v1/models/{model_id}/communities")).await;
    assert_eq!(st, 200, "{communities}");

    let store = Store::open(&db).await.unwrap();
    assert_eq!(store.checkpoint_iteration(&id).await.unwrap(), None, "success drops the checkpoint");
    let (_, _, stored) = store.model_blobs(&model_id).await.unwrap().unwrap();
    let blob = store.graph_data(&graph_id).await.unwrap().unwrap();
    let uninterrupted = tokio::task::spawn_blocking(move || {
        let graph = topicd::graph::Graph::decode(&blob).unwrap();
        let family = models::registry::lookup("hdp_ammsb").and_then(models::registry::Family::communities).unwrap();
        let params = family.parse_params(&models::options::without_options(params)).unwrap();
        FitContext::silent(|ctx| family.fit(&graph, &params, seed, ctx).unwrap().encode())
    })
    .await
    .unwrap();
    assert!(stored == uninterrupted, "the resumed model differs from the uninterrupted fit");
}

/// An edit's refit killed with SIGKILL after a checkpoint resumes on restart to exactly
/// the model of an uninterrupted refit of the same parent and plan, and the child keeps
/// its parent, its record and the parent's names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_killed_with_sigkill_resumes_to_the_uninterrupted_model() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("topicd.db");
    let a = ServerProcess::start(&db, &["--threads", "1"]);
    let (st, corpus) = a.post("/v1/corpora", &json!({"name": "bars", "synthetic": {"kind": "bars", "documents": 2000, "tokens": 200, "seed": 3}})).await;
    assert_eq!(st, 201, "{corpus}");
    let corpus_id = corpus["id"].as_str().unwrap().to_string();
    let (_, parent_job) = a.post("/v1/jobs", &json!({"corpus_id": corpus_id, "model": "lda", "params": {"topics": 10, "iterations": 20}, "seed": 2})).await;
    let parent_job = a.wait_for(parent_job["id"].as_str().unwrap(), MINUTE, "the parent", finished).await;
    let parent = parent_job["model_id"].as_str().unwrap().to_string();
    let (st, _) = a.patch(&format!("/v1/models/{parent}/topics/3"), &json!({"name": "three"})).await;
    assert_eq!(st, 200);
    let ops = json!([{"op": "merge", "topics": [0, 1]}, {"op": "delete", "topic": 2}]);
    let body = json!({"operations": ops, "iterations": 150, "seed": 4, "options": {"checkpoint_every_s": 0.25}});
    let (st, job) = a.post(&format!("/v1/models/{parent}/edits"), &body).await;
    assert_eq!(st, 202, "{job}");
    let id = job["id"].as_str().unwrap().to_string();
    let j = a.wait_for(&id, MINUTE, "checkpointed", |j| checkpoint_iteration(j).is_some() || finished(j)).await;
    assert_eq!(j["status"], "running", "the refit must outlast its first checkpoint: {j}");
    a.kill();

    let b = ServerProcess::start(&db, &["--threads", "2"]);
    let j = b.wait_for(&id, 2 * MINUTE, "finished", finished).await;
    assert_eq!(j["status"], "succeeded", "{j}");
    assert_eq!(j["attempts"], 2, "{j}");
    assert!(j["progress"]["resumed_from"].as_u64().is_some(), "{j}");
    let child = j["model_id"].as_str().unwrap().to_string();
    let (_, model) = b.get(&format!("/v1/models/{child}")).await;
    assert_eq!((&model["parent_model_id"], &model["edit"]["operations"]), (&json!(parent), &ops), "{model}");
    let (_, topics) = b.get(&format!("/v1/models/{child}/topics?n=3")).await;
    assert_eq!(topics["topics"][3]["name"], "three", "{topics}");

    // The uninterrupted refit, in this process, from the stored parent and plan.
    let store = Store::open(&db).await.unwrap();
    let row = store.get_job(&id).await.unwrap().unwrap();
    let spec: models::job_start::StartSpec = serde_json::from_value(row.start.clone().unwrap()).unwrap();
    let models::job_start::StartSpec::Edit { plan, split_seed } = spec else { panic!("an edit's start: {spec:?}") };
    assert_eq!(split_seed, 2, "the parent's seed draws the split");
    let (_, _, parent_bytes) = store.model_blobs(&parent).await.unwrap().unwrap();
    let (_, _, stored) = store.model_blobs(&child).await.unwrap().unwrap();
    let blob = store.corpus_data(&corpus_id).await.unwrap().unwrap();
    let params = row.params.clone();
    let uninterrupted = tokio::task::spawn_blocking(move || {
        let corpus = Corpus::decode_without_order(&blob).unwrap();
        let family = models::registry::lookup("lda").unwrap();
        let params = family.parse_params(&params).unwrap();
        let start = models::EditStart { parent: &parent_bytes, plan: &plan, split_seed };
        FitContext::silent(|ctx| family.fit_edited(&corpus, &params, &start, 4, ctx).unwrap().encode())
    })
    .await
    .unwrap();
    assert!(stored == uninterrupted, "the resumed refit differs from the uninterrupted one");
}

/// `n` documents of 150 tokens over 60 words, three blocks of 20 words each mixed per
/// document by a fixed rule (no randomness needed: the check is of bytes, not fit).
fn block_documents(prefix: &str, n: usize, offset: usize) -> Vec<Value> {
    (0..n)
        .map(|d| {
            let i = d + offset;
            let counts: serde_json::Map<String, Value> =
                (0..30).map(|j| (format!("w{:02}", ((i % 3) * 20 + (j * 7 + i) % 20 + if j % 5 == 0 { 20 } else { 0 }) % 60), json!(5))).collect();
            json!({"id": format!("{prefix}{d}"), "counts": counts})
        })
        .collect()
}

/// An update killed with SIGKILL after a checkpoint resumes on restart to exactly the
/// model of an uninterrupted update of the same parent and documents, and the child
/// keeps its parent, its corpora and the parent's names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_killed_with_sigkill_resumes_to_the_uninterrupted_model() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("topicd.db");
    let a = ServerProcess::start(&db, &["--threads", "1"]);
    let preprocess = json!({"stopwords": "none", "min_df": 1});
    let (st, old) = a.post("/v1/corpora", &json!({"name": "old", "documents": block_documents("o", 1500, 0), "preprocess": preprocess})).await;
    assert_eq!(st, 201, "{old}");
    let old_id = old["id"].as_str().unwrap().to_string();
    let (st, new) = a.post(&format!("/v1/corpora?like={old_id}"), &json!({"name": "new", "documents": block_documents("n", 1000, 1500)})).await;
    assert_eq!(st, 201, "{new}");
    let new_id = new["id"].as_str().unwrap().to_string();
    let (_, parent_job) =
        a.post("/v1/jobs", &json!({"corpus_id": old_id, "model": "lda", "params": {"topics": 10, "iterations": 20, "test_fraction": 0.1}, "seed": 2})).await;
    let parent_job = a.wait_for(parent_job["id"].as_str().unwrap(), MINUTE, "the parent", finished).await;
    let parent = parent_job["model_id"].as_str().unwrap().to_string();
    let (st, _) = a.patch(&format!("/v1/models/{parent}/topics/3"), &json!({"name": "three"})).await;
    assert_eq!(st, 200);
    let body = json!({"corpus_id": new_id, "iterations": 150, "seed": 4, "new_topics": 1, "options": {"checkpoint_every_s": 0.25}});
    let (st, job) = a.post(&format!("/v1/models/{parent}/update"), &body).await;
    assert_eq!(st, 202, "{job}");
    let id = job["id"].as_str().unwrap().to_string();
    let j = a.wait_for(&id, MINUTE, "checkpointed", |j| checkpoint_iteration(j).is_some() || finished(j)).await;
    assert_eq!(j["status"], "running", "the update must outlast its first checkpoint: {j}");
    a.kill();

    let b = ServerProcess::start(&db, &["--threads", "2"]);
    let j = b.wait_for(&id, 2 * MINUTE, "finished", finished).await;
    assert_eq!(j["status"], "succeeded", "{j}");
    assert_eq!(j["attempts"], 2, "{j}");
    assert!(j["progress"]["resumed_from"].as_u64().is_some(), "{j}");
    let child = j["model_id"].as_str().unwrap().to_string();
    let (_, model) = b.get(&format!("/v1/models/{child}")).await;
    assert_eq!((&model["parent_model_id"], &model["corpus_ids"]), (&json!(parent), &json!([old_id, new_id])), "{model}");
    let (_, topics) = b.get(&format!("/v1/models/{child}/topics?n=3")).await;
    assert_eq!(topics["topics"][3]["name"], "three", "{topics}");
    let (_, lineage) = b.get(&format!("/v1/models/{child}/lineage")).await;
    assert_eq!(lineage["versions"].as_array().map(Vec::len), Some(2), "{lineage}");

    // The uninterrupted update, in this process, from the stored parent and start.
    let store = Store::open(&db).await.unwrap();
    let row = store.get_job(&id).await.unwrap().unwrap();
    let spec: models::job_start::StartSpec = serde_json::from_value(row.start.clone().unwrap()).unwrap();
    let models::job_start::StartSpec::Update { record, .. } = spec else { panic!("an update's start: {spec:?}") };
    assert_eq!((record.split_seed, record.parent_documents), (2, 1500), "the parent's seed draws the split");
    let (_, _, parent_bytes) = store.model_blobs(&parent).await.unwrap().unwrap();
    let (_, _, stored) = store.model_blobs(&child).await.unwrap().unwrap();
    let blob = store.corpus_data(row.corpus_id.as_deref().unwrap()).await.unwrap().unwrap();
    let params = row.params.clone();
    let uninterrupted = tokio::task::spawn_blocking(move || {
        let corpus = Corpus::decode_without_order(&blob).unwrap();
        let family = models::registry::lookup("lda").unwrap();
        let params = family.parse_params(&params).unwrap();
        let start = models::UpdateStart {
            parent: &parent_bytes,
            parent_documents: record.parent_documents,
            new_topics: record.new_topics.len(),
            split_seed: record.split_seed,
        };
        FitContext::silent(|ctx| family.fit_updated(&corpus, &params, &start, 4, ctx).unwrap().encode())
    })
    .await
    .unwrap();
    assert!(stored == uninterrupted, "the resumed update differs from the uninterrupted one");
}
