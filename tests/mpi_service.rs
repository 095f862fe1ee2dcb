//! Jobs over MPI ranks through the service (feature `mpi`): a replica started with
//! `--mpi-launch` runs a job with `"options": {"ranks": R}` as one world of `topicd
//! rank-fit` processes and stores the model one process stores (LDA and HPC byte for byte, HDP
//! but for its passes' wall-clock seconds), on SQLite and on PostgreSQL; a rank killed
//! with SIGKILL ends the world, and the job's next attempt resumes from its last
//! checkpoint to the same model.
//!
//! Run with `cargo test --features mpi --test mpi_service` where Open MPI is installed
//! (`.ci/run` does). Open MPI's allow-run-as-root variables are set in the launch
//! command only.
#![cfg(feature = "mpi")]

mod common;

use common::postgres::PgDatabase;
use common::process::ServerProcess;
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;
use topicd::store::{DbLocation, Store};

const LAUNCH: &str = "env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe -n {ranks}";
const MINUTES: Duration = Duration::from_secs(300);

/// 2 000 documents of 300 tokens over 600 words as `counts` (a 4 × 4 grid for LDA; two
/// batches of 16 chunks for HDP), from a fixed generator.
fn documents() -> Vec<Value> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..2_000)
        .map(|d| {
            let mut counts = std::collections::BTreeMap::new();
            for _ in 0..300 {
                let r = next();
                let w = if r % 10 < 8 { (d % 6) * 100 + (r >> 8) as usize % 100 } else { (r >> 8) as usize % 600 };
                *counts.entry(format!("w{w}")).or_insert(0u32) += 1;
            }
            json!({"id": format!("d{d}"), "counts": counts})
        })
        .collect()
}

async fn submit(server: &ServerProcess, corpus: &str, model: &str, params: Value, options: Value) -> String {
    let (st, job) = server.post("/v1/jobs", &json!({"corpus_id": corpus, "model": model, "params": params, "options": options, "seed": 9})).await;
    assert_eq!(st, 202, "{job}");
    job["id"].as_str().unwrap().to_string()
}

async fn finished(server: &ServerProcess, job: &str) -> Value {
    let j = server.wait_for(job, MINUTES, "finished", |j| !matches!(j["status"].as_str(), Some("queued" | "running"))).await;
    assert_eq!(j["status"], "succeeded", "{j}");
    j
}

/// The stored model's bytes.
async fn model_bytes(store: &Store, job: &Value) -> Vec<u8> {
    store.model_blobs(job["model_id"].as_str().unwrap()).await.unwrap().unwrap().2
}

/// LDA (two chains), HDP and HPC over 4 ranks against the same jobs in one process,
/// on `db`.
async fn worlds_store_the_one_process_models(db: &Path, location: DbLocation) {
    let server = ServerProcess::start(db, &["--mpi-launch", LAUNCH, "--threads", "1", "--max-jobs", "2"]);
    let (st, corpus) = server.post("/v1/corpora", &json!({"documents": documents(), "preprocess": {"stopwords": "none"}})).await;
    assert_eq!(st, 201, "{corpus}");
    let corpus = corpus["id"].as_str().unwrap();
    let lda = json!({"topics": 8, "iterations": 12, "burn_in": 4, "optimize_interval": 4, "chains": 2});
    let hdp = json!({"topics": 10, "passes": 5, "batches": 2, "merge_every": 2, "delete_every": 2, "test_fraction": 0.05});
    // The same documents labelled on a two-level tree, for HPC.
    let labelled: Vec<Value> = documents()
        .into_iter()
        .enumerate()
        .map(|(d, mut doc)| {
            doc["labels"] = json!([format!("g{}/s{}", (d % 6) / 2, d % 6)]);
            doc
        })
        .collect();
    let (st, tree) = server.post("/v1/corpora", &json!({"documents": labelled, "preprocess": {"stopwords": "none"}})).await;
    assert_eq!(st, 201, "{tree}");
    let tree = tree["id"].as_str().unwrap();
    let hpc = json!({"iterations": 6, "burn_in": 2, "hessian_every": 2, "test_fraction": 0.1});
    let jobs = [
        (submit(&server, corpus, "lda", lda.clone(), json!({})).await, submit(&server, corpus, "lda", lda, json!({"ranks": 4})).await, 4),
        (submit(&server, corpus, "hdp", hdp.clone(), json!({})).await, submit(&server, corpus, "hdp", hdp, json!({"ranks": 4})).await, 4),
        (submit(&server, tree, "hpc", hpc.clone(), json!({})).await, submit(&server, tree, "hpc", hpc, json!({"ranks": 4})).await, 4),
    ];
    let store = Store::connect(&location, &Default::default()).await.unwrap();
    for (single, world, ranks) in jobs {
        let (single, world) = (finished(&server, &single).await, finished(&server, &world).await);
        assert_eq!(world["options"]["ranks"], ranks, "{world}");
        let (_, model) = server.get(&format!("/v1/models/{}", world["model_id"].as_str().unwrap())).await;
        assert_eq!(model["diagnostics"]["ranks"], world["options"]["ranks"], "the model records its world: {model}");
        assert!(model_bytes(&store, &world).await == model_bytes(&store, &single).await, "{}: the world stored another model", world["model"]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worlds_store_the_one_process_models_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("topicd.db");
    worlds_store_the_one_process_models(&db, DbLocation::Sqlite(db.clone())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worlds_store_the_one_process_models_on_postgres() {
    let pg = PgDatabase::create().await;
    worlds_store_the_one_process_models(Path::new(&pg.url), DbLocation::Postgres(pg.url.clone())).await;
}

/// The `topicd rank-fit` processes below `server` (its world's ranks; other tests'
/// worlds run beside it).
fn rank_processes(server: u32) -> Vec<u32> {
    // (pid, parent, whether it is a rank) of every process.
    let mut table = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // pid (comm) state ppid ...: the command may hold spaces, so read after ')'.
        let Some(ppid) = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)).and_then(|p| p.parse::<u32>().ok()) else { continue };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
        table.push((pid, ppid, args.len() >= 2 && args[0].ends_with(b"topicd") && args[1] == b"rank-fit"));
    }
    let below = |mut pid: u32| {
        while pid > 1 {
            if pid == server {
                return true;
            }
            pid = table.iter().find(|(p, _, _)| *p == pid).map_or(0, |(_, parent, _)| *parent);
        }
        false
    };
    table.iter().filter(|(pid, _, rank)| *rank && below(*pid)).map(|(pid, _, _)| *pid).collect()
}

/// A job over 3 ranks loses a rank to SIGKILL after its first checkpoint: the world
/// ends, the job is re-queued, and its next attempt resumes from the checkpoint to the
/// one-process model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_rank_is_resumed_by_the_next_attempt() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("topicd.db");
    let server = ServerProcess::start(&db, &["--mpi-launch", LAUNCH, "--threads", "1"]);
    let (st, corpus) = server.post("/v1/corpora", &json!({"documents": documents(), "preprocess": {"stopwords": "none"}})).await;
    assert_eq!(st, 201, "{corpus}");
    let corpus = corpus["id"].as_str().unwrap();
    let params = json!({"topics": 8, "iterations": 150});
    let world = submit(&server, corpus, "lda", params.clone(), json!({"ranks": 3, "checkpoint_every_s": 0.2})).await;
    server.wait_for(&world, MINUTES, "checkpointed", |j| j["progress"]["checkpoint"]["iteration"].as_u64() > Some(0)).await;
    let ranks = rank_processes(server.pid());
    assert_eq!(ranks.len(), 3, "three ranks run: {ranks:?}");
    let victim = *ranks.iter().max().unwrap();
    assert!(std::process::Command::new("kill").args(["-KILL", &victim.to_string()]).status().unwrap().success());
    let resumed = finished(&server, &world).await;
    assert!(resumed["attempts"].as_u64() >= Some(2), "a second attempt ran: {resumed}");
    assert!(resumed["progress"]["resumed_from"].as_u64() > Some(0), "it resumed from the checkpoint: {resumed}");
    let single = submit(&server, corpus, "lda", params, json!({})).await;
    let single = finished(&server, &single).await;
    let store = Store::open(&db).await.unwrap();
    assert!(model_bytes(&store, &resumed).await == model_bytes(&store, &single).await, "the resumed world stored another model");
}

/// A cancelled job over ranks stops its world: the job ends cancelled and no rank of
/// the world is left running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_world_stops() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(&dir.path().join("topicd.db"), &["--mpi-launch", LAUNCH, "--threads", "1"]);
    let (st, corpus) = server.post("/v1/corpora", &json!({"documents": documents(), "preprocess": {"stopwords": "none"}})).await;
    assert_eq!(st, 201, "{corpus}");
    let job = submit(&server, corpus["id"].as_str().unwrap(), "lda", json!({"topics": 8, "iterations": 5000}), json!({"ranks": 2})).await;
    server.wait_for(&job, MINUTES, "sampling", |j| j["progress"]["iteration"].as_u64() > Some(1)).await;
    let (st, _) = server.post(&format!("/v1/jobs/{job}/cancel"), &json!({})).await;
    assert_eq!(st, 202);
    let ended = server.wait_for(&job, MINUTES, "ended", |j| !matches!(j["status"].as_str(), Some("queued" | "running"))).await;
    assert_eq!(ended["status"], "cancelled", "{ended}");
    let t0 = std::time::Instant::now();
    while !rank_processes(server.pid()).is_empty() {
        assert!(t0.elapsed() < Duration::from_secs(30), "the world's ranks still run: {:?}", rank_processes(server.pid()));
        std::thread::sleep(Duration::from_millis(50));
    }
}
