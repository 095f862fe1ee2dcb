//! Many replicas on one PostgreSQL database, as processes: the lease protocol end to
//! end (`store::leases`).
//!
//! Three `topicd serve` replicas share a fresh database; 30 fits of three families are
//! queued; one replica is killed with SIGKILL while it runs jobs and another is stopped
//! with SIGTERM. Every job must end `succeeded` exactly once (one model row), with a
//! model byte-identical to a single-process fit of the same seed on SQLite, and the
//! lease history must show no two holds of a job overlapping. A second test cuts one
//! replica off from the database for a few seconds (a TCP proxy that drops every
//! connection): `/readyz` says not ready meanwhile, and the replica's job goes on and
//! succeeds in the same attempt once the database is back.

mod common;

use common::postgres::{admin_url, PgDatabase};
use common::process::ServerProcess;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use topicd::store::{DbLocation, Store};

/// The fits: about a second each on one thread (LDA and PCM; HDP stops when it
/// converges), so 30 finish in well under a minute on two cores, yet a kill lands in
/// the middle of some, and each checkpoints several times.
fn job_spec(i: usize, corpus_id: &str) -> Value {
    let (model, params) = match i % 3 {
        0 => ("lda", json!({"topics": 8, "iterations": 800, "burn_in": 100, "thin": 50, "checkpoint_every_s": 0.1, "threads": 1})),
        1 => ("pcm", json!({"topics": 6, "iterations": 300, "checkpoint_every_s": 0.1, "threads": 1})),
        _ => ("hdp", json!({"topics": 8, "passes": 200, "batches": 4, "checkpoint_every_s": 0.1, "threads": 1})),
    };
    json!({"corpus_id": corpus_id, "model": model, "params": params, "seed": 100 + i as u64})
}

const CORPUS: fn() -> Value = || json!({"name": "bars", "synthetic": {"kind": "bars", "documents": 600, "tokens": 100, "seed": 7}});

async fn wait_until(what: &str, timeout: Duration, mut check: impl AsyncFnMut() -> bool) {
    let t0 = Instant::now();
    while !check().await {
        assert!(t0.elapsed() < timeout, "not {what} after {timeout:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn job_status(store: &Store, id: &str) -> String {
    store.get_job(id).await.unwrap().unwrap().status.as_str().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_lose_no_job_and_never_run_one_twice() {
    let db = PgDatabase::create().await;
    let url = db.url.as_str();
    let flags = |id: &'static str| ["--lease-s", "2", "--max-jobs", "2", "--threads", "1", "--replica-id", id];
    let a = ServerProcess::start(Path::new(url), &flags("a"));
    let b = ServerProcess::start(Path::new(url), &flags("b"));
    let c = ServerProcess::start(Path::new(url), &flags("c"));
    let store = Store::connect(&DbLocation::Postgres(url.to_string()), &Default::default()).await.unwrap();

    let (st, corpus) = a.post("/v1/corpora", &CORPUS()).await;
    assert_eq!(st, 201, "{corpus}");
    let corpus_id = corpus["id"].as_str().unwrap().to_string();
    let mut ids = Vec::new();
    for i in 0..30 {
        let (st, job) = a.post("/v1/jobs", &job_spec(i, &corpus_id)).await;
        assert_eq!(st, 202, "{job}");
        ids.push(job["id"].as_str().unwrap().to_string());
    }
    // Kill B while it holds a job, then stop C the same way once it holds one (a job
    // lasts about a second, so it is still running when the signal lands).
    let holds = async |store: &Store, owner: &str| -> bool {
        sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM jobs WHERE status = 'running' AND lease_owner = $1")
            .bind(owner)
            .fetch_one(store.pool())
            .await
            .unwrap()
            > 0
    };
    wait_until("B holding a job", Duration::from_secs(60), async || holds(&store, "b").await).await;
    b.kill();
    wait_until("C holding a job", Duration::from_secs(60), async || holds(&store, "c").await).await;
    c.terminate();

    // A alone finishes the queue, taking over B's jobs when their leases expire.
    let t0 = Instant::now();
    for id in &ids {
        wait_until("every job finished", Duration::from_secs(300).saturating_sub(t0.elapsed()), async || {
            !matches!(job_status(&store, id).await.as_str(), "queued" | "running")
        })
        .await;
    }
    let mut resumed = Vec::new();
    let mut kinds: HashMap<String, usize> = HashMap::new();
    for id in &ids {
        let job = store.get_job(id).await.unwrap().unwrap();
        assert_eq!(job.status.as_str(), "succeeded", "{id}: {job:?}");
        let models: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM models WHERE job_id = $1").bind(id).fetch_one(store.pool()).await.unwrap();
        assert_eq!(models, 1, "{id} stored {models} models");
        let history = store.lease_history(id).await.unwrap();
        for pair in history.windows(2) {
            assert!(pair[0].held_until_ms() < pair[1].claimed_ms, "two holds of {id} overlap: {history:?}");
            assert!(pair[0].outcome.is_some(), "a hold that was followed by another never ended: {history:?}");
        }
        assert_eq!(history.last().unwrap().outcome.as_deref(), Some("succeeded"));
        for h in &history[..history.len() - 1] {
            *kinds.entry(h.outcome.clone().unwrap()).or_default() += 1;
        }
        if history.len() > 1 {
            resumed.push(id.clone());
        }
    }
    assert!(kinds.get("taken_over").copied().unwrap_or(0) >= 1, "the kill interrupted no job: {kinds:?}");
    assert!(kinds.get("requeued").copied().unwrap_or(0) >= 1, "the SIGTERM interrupted no job: {kinds:?}");

    // Each interrupted job's model, and one of each family that was not, equals a fit of
    // the same seed in a single process on SQLite.
    let dir = tempfile::tempdir().unwrap();
    let single = ServerProcess::start(&dir.path().join("single.db"), &["--threads", "1"]);
    let (st, corpus) = single.post("/v1/corpora", &CORPUS()).await;
    assert_eq!(st, 201, "{corpus}");
    let single_corpus = corpus["id"].as_str().unwrap().to_string();
    let mut compare: Vec<usize> = resumed.iter().map(|id| ids.iter().position(|x| x == id).unwrap()).collect();
    let untouched: Vec<usize> = [27, 28, 29].into_iter().filter(|i| !compare.contains(i)).collect();
    compare.extend(untouched);
    let single_store = Store::open(&dir.path().join("single.db")).await.unwrap();
    let mut differ = Vec::new();
    for i in compare {
        let (st, job) = single.post("/v1/jobs", &job_spec(i, &single_corpus)).await;
        assert_eq!(st, 202, "{job}");
        let done =
            single.wait_for(job["id"].as_str().unwrap(), Duration::from_secs(120), "finished", |j| j["status"] == "succeeded" || j["status"] == "failed").await;
        assert_eq!(done["status"], "succeeded", "{done}");
        let reference = single_store.model_blobs(done["model_id"].as_str().unwrap()).await.unwrap().unwrap().2;
        let shared_model = store.get_job(&ids[i]).await.unwrap().unwrap().model_id.unwrap();
        let shared = store.model_blobs(&shared_model).await.unwrap().unwrap().2;
        if shared != reference && !same_numbers(job_spec(i, "")["model"].as_str().unwrap(), &shared, &reference) {
            differ.push(format!("job {i} ({}, resumed: {})", job_spec(i, "")["model"], resumed.contains(&ids[i])));
        }
    }
    assert!(differ.is_empty(), "models on the replicas differ from the single-process fits: {differ:?}");
    drop(a);
}

/// Whether two encodings of a model hold the same numbers: identical topic tables
/// (frequency and exclusivity, bit for bit) and diagnostics. HDP's encoding also
/// records each pass's wall-clock seconds, so its bytes differ between any two runs of
/// one seed; everything else in it must not.
fn same_numbers(family: &str, a: &[u8], b: &[u8]) -> bool {
    use topicd::models::registry::{lookup, Fitted};
    use topicd::models::{Comparison, TableOptions};
    let decode = |bytes: &[u8]| match lookup(family).unwrap().decode(bytes).unwrap() {
        Fitted::Topics(m) => m,
        Fitted::Communities(_) => panic!("{family} is a topic model"),
    };
    let (a, b) = (decode(a), decode(b));
    let without_time = |m: &dyn topicd::models::TopicModel| {
        let mut d = m.diagnostics();
        if let Some(o) = d.as_object_mut() {
            o.retain(|k, _| !k.contains("seconds"));
        }
        d
    };
    let options = TableOptions { comparison: Comparison::All };
    let (ta, tb) = (a.topic_table(&options), b.topic_table(&options));
    let bits = |x: &ndarray::Array2<f64>| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    bits(&ta.frequency) == bits(&tb.frequency) && bits(&ta.exclusivity) == bits(&tb.exclusivity) && without_time(a.as_ref()) == without_time(b.as_ref())
}

/// A TCP proxy to the PostgreSQL server that can drop every connection and refuse new
/// ones for a while: a replica cut off from the database, without stopping the server
/// other tests share.
struct Proxy {
    port: u16,
    cut: Arc<AtomicBool>,
}

impl Proxy {
    async fn start(target: String) -> Proxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let cut = Arc::new(AtomicBool::new(false));
        let cut2 = cut.clone();
        tokio::spawn(async move {
            loop {
                let Ok((mut inbound, _)) = listener.accept().await else { return };
                if cut2.load(Ordering::SeqCst) {
                    continue; // dropped: the connection is refused
                }
                let (target, cut3) = (target.clone(), cut2.clone());
                tokio::spawn(async move {
                    let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await else { return };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = async { while !cut3.load(Ordering::SeqCst) { tokio::time::sleep(Duration::from_millis(20)).await } } => {}
                    }
                });
            }
        });
        Proxy { port, cut }
    }
}

/// The `host:port` of the server `TOPICD_TEST_PG` names.
fn server_address() -> String {
    let admin = admin_url();
    let after_at = admin.rsplit('@').next().unwrap();
    let hostport = after_at.split('/').next().unwrap();
    if hostport.contains(':') {
        hostport.to_string()
    } else {
        format!("{hostport}:5432")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_cut_off_from_the_database_recovers_without_losing_its_job() {
    let db = PgDatabase::create().await;
    let proxy = Proxy::start(server_address()).await;
    let via_proxy = db.url.replace(&server_address(), &format!("127.0.0.1:{}", proxy.port));
    assert_ne!(via_proxy, db.url, "the URL names the server as host:port");
    let replica = ServerProcess::start(Path::new(&via_proxy), &["--lease-s", "20", "--threads", "1"]);
    let store = Store::connect(&DbLocation::Postgres(db.url.clone()), &Default::default()).await.unwrap();
    let bigger = json!({"name": "bars", "synthetic": {"kind": "bars", "documents": 1000, "tokens": 100, "seed": 7}});
    let (st, corpus) = replica.post("/v1/corpora", &bigger).await;
    assert_eq!(st, 201, "{corpus}");
    // About 10 s of sweeps on one thread.
    let params = json!({"topics": 8, "iterations": 3000, "burn_in": 100, "thin": 100, "checkpoint_every_s": 0.5});
    let (st, job) = replica.post("/v1/jobs", &json!({"corpus_id": corpus["id"], "model": "lda", "params": params, "seed": 9})).await;
    assert_eq!(st, 202, "{job}");
    let id = job["id"].as_str().unwrap().to_string();
    wait_until("the job running", Duration::from_secs(30), async || job_status(&store, &id).await == "running").await;

    proxy.cut.store(true, Ordering::SeqCst);
    let t0 = Instant::now();
    wait_until("/readyz not ready", Duration::from_secs(15), async || replica.get("/readyz").await.0 == 503).await;
    tokio::time::sleep(Duration::from_secs(4).saturating_sub(t0.elapsed())).await;
    assert_eq!(job_status(&store, &id).await, "running", "the job changed while its replica was cut off");
    proxy.cut.store(false, Ordering::SeqCst);
    wait_until("/readyz ready again", Duration::from_secs(15), async || replica.get("/readyz").await.0 == 200).await;

    let done = replica.wait_for(&id, Duration::from_secs(120), "finished", |j| j["status"] == "succeeded" || j["status"] == "failed").await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let job = store.get_job(&id).await.unwrap().unwrap();
    assert_eq!(job.attempts, 1, "the job was interrupted, not carried through the outage");
    assert_eq!(store.lease_history(&id).await.unwrap().len(), 1);
}

/// Roles, caches and cancellation across replicas: an `api` replica runs no job and a
/// `worker` replica answers no API request; a rename on one replica shows on another
/// that had the model cached, and a delete makes it 404 there (within moments: the
/// change is announced by LISTEN/NOTIFY); a cancel asked of one replica stops the job
/// another runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roles_caches_and_cancellation_hold_across_replicas() {
    let db = PgDatabase::create().await;
    let url = Path::new(&db.url);
    let api = ServerProcess::start(url, &["--role", "api", "--replica-id", "api"]);
    let worker = ServerProcess::start(url, &["--role", "worker", "--replica-id", "worker", "--threads", "1"]);
    let both = ServerProcess::start(url, &["--role", "both", "--replica-id", "both", "--threads", "1"]);
    let store = Store::connect(&DbLocation::Postgres(db.url.clone()), &Default::default()).await.unwrap();
    assert_eq!(worker.get("/v1/models").await.0, 404, "a worker replica answers the API");
    assert_eq!(worker.get("/readyz").await.0, 200);

    let (st, corpus) = api.post("/v1/corpora", &CORPUS()).await;
    assert_eq!(st, 201, "{corpus}");
    let (st, job) = api.post("/v1/jobs", &json!({"corpus_id": corpus["id"], "model": "lda", "params": {"topics": 4, "iterations": 40}, "seed": 1})).await;
    assert_eq!(st, 202, "{job}");
    let id = job["id"].as_str().unwrap().to_string();
    let done = api.wait_for(&id, Duration::from_secs(60), "finished", |j| j["status"] == "succeeded" || j["status"] == "failed").await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let owner = store.lease_history(&id).await.unwrap()[0].owner.clone();
    assert_ne!(owner, "api", "an api replica ran a job");

    // Both API replicas cache the model; a rename on one shows on the other.
    let model = done["model_id"].as_str().unwrap().to_string();
    let topics = format!("/v1/models/{model}/topics?n=3");
    assert_eq!(api.get(&topics).await.1["topics"][1]["name"], Value::Null);
    assert_eq!(both.get(&topics).await.1["topics"][1]["name"], Value::Null);
    let r = api.client.patch(format!("{}/v1/models/{model}/topics/1", api.base)).json(&json!({"name": "bars one"})).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    // The change is announced when it commits; allow it a moment to arrive.
    wait_until("the rename shown on the other replica", Duration::from_secs(5), async || both.get(&topics).await.1["topics"][1]["name"] == "bars one").await;
    // A delete on one replica makes the model 404 on the other, which had it cached.
    let r = both.client.delete(format!("{}/v1/models/{model}", both.base)).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 204);
    wait_until("the deleted model gone from the other replica", Duration::from_secs(5), async || api.get(&topics).await.0 == 404).await;

    // A cancel asked of the api replica stops the job the worker runs.
    let (st, job) = api.post("/v1/jobs", &json!({"corpus_id": corpus["id"], "model": "lda", "params": {"topics": 4, "iterations": 1000000}, "seed": 2})).await;
    assert_eq!(st, 202, "{job}");
    let long = job["id"].as_str().unwrap().to_string();
    api.wait_for(&long, Duration::from_secs(30), "running", |j| j["status"] == "running").await;
    let (st, _) = api.post(&format!("/v1/jobs/{long}/cancel"), &json!({})).await;
    assert!(st == 200 || st == 202, "cancel answered {st}");
    let t0 = Instant::now();
    let ended = api.wait_for(&long, Duration::from_secs(30), "cancelled", |j| j["status"] == "cancelled" || j["status"] == "failed").await;
    assert_eq!(ended["status"], "cancelled", "{ended}");
    // The heartbeat passes it on within 2 s; allow for a loaded machine.
    assert!(t0.elapsed() < Duration::from_secs(15), "the cancel took {:?}", t0.elapsed());
}
