//! Data kept: `topicd backup` copies a database the server is writing to, and a second
//! server reads the same corpus and model from the copy; start-up refuses a damaged file
//! with what to do; a full database (`--max-db-mb`, SQLite's `max_page_count`) refuses
//! writes with 507, fails the fits that cannot store their checkpoint or model, and the
//! server keeps answering reads; a read-only database is a 503.

mod common;

use common::{appstream_docs, TestServer};
use serde_json::{json, Value};
use sqlx::Row;
use std::path::Path;
use std::time::Duration;
use topicd::api::error::ApiError;
use topicd::config::ServeConfig;
use topicd::corpus::CorpusStats;
use topicd::store::corpora::NewCorpus;
use topicd::store::{Store, StoreError, Unwritable};

/// Run the real binary; (exit code, stdout, stderr).
fn topicd(args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_topicd")).args(args).env_remove("TOPICD_DB").output().expect("topicd runs");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// A second server on another database file.
async fn serve(db: &Path) -> TestServer {
    let server = topicd::api::start(&ServeConfig::for_tests(db.to_path_buf())).await.expect("server starts on the backup");
    TestServer { base: format!("http://{}", server.addr), server: Some(server), client: reqwest::Client::new(), dir: tempfile::tempdir().unwrap() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_taken_while_the_server_writes_serves_the_same_corpus_and_model() {
    let s = TestServer::start().await;
    let docs = appstream_docs(120);
    let corpus = s.upload(json!({"name": "kept", "documents": docs, "preprocess": {"min_df": 2}})).await;
    let cid = corpus["id"].as_str().unwrap().to_string();
    let job = s.submit(&cid, "lda", json!({"topics": 5, "iterations": 30}), 3).await;
    let done = s.wait(job["id"].as_str().unwrap(), Duration::from_secs(120)).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let mid = done["model_id"].as_str().unwrap().to_string();
    let (_, topics) = s.get(&format!("/v1/models/{mid}/topics?n=8")).await;

    // While the backup runs: a long fit writes its trace and checkpoints, and uploads go on.
    let busy = s.submit(&cid, "lda", json!({"topics": 5, "iterations": 400, "checkpoint_every_s": 0.05}), 4).await;
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().join("backup.db");
    let (db, to2) = (s.db().display().to_string(), to.display().to_string());
    let backup = tokio::task::spawn_blocking(move || topicd(&["backup", "--db", &db, "--to", &to2]));
    let mut uploads = 0;
    while !backup.is_finished() || uploads == 0 {
        s.upload(json!({"name": format!("during-{uploads}"), "documents": appstream_docs(30)})).await;
        uploads += 1;
    }
    let (code, stdout, stderr) = backup.await.unwrap();
    assert_eq!(code, 0, "backup failed: {stderr}");
    let report: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("not one JSON line ({e}): {stdout}"));
    assert_eq!(report["path"], to.display().to_string(), "{report}");
    assert_eq!(report["integrity"], "ok", "{report}");
    assert_eq!(report["bytes"].as_u64().unwrap(), std::fs::metadata(&to).unwrap().len());
    assert!(report["seconds"].as_f64().unwrap() >= 0.0);
    let corpora = report["tables"]["corpora"].as_i64().unwrap();
    assert!((1..=1 + uploads).contains(&corpora), "{report}");
    assert!(report["tables"]["models"].as_i64().unwrap() >= 1, "{report}");
    assert!(report["tables"]["jobs"].as_i64().unwrap() >= 2, "{report}");
    // Only the backup is left beside it: no half-written file under another name.
    let names: Vec<String> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(names, vec!["backup.db".to_string()]);

    // An existing file is kept unless --force.
    let (db, to2) = (s.db().display().to_string(), to.display().to_string());
    let (code, _, stderr) = topicd(&["backup", "--db", &db, "--to", &to2]);
    assert_eq!(code, 2);
    assert!(stderr.contains("already exists; pass --force"), "{stderr}");
    let (code, _, stderr) = topicd(&["backup", "--db", &db, "--to", &to2, "--force"]);
    assert_eq!(code, 0, "{stderr}");
    let (code, _, stderr) =
        topicd(&["backup", "--db", &dir.path().join("missing.db").display().to_string(), "--to", &dir.path().join("x.db").display().to_string()]);
    assert_eq!(code, 2);
    assert!(stderr.contains("no database at"), "{stderr}");
    let (st, _) = s.post(&format!("/v1/jobs/{}/cancel", busy["id"].as_str().unwrap()), &json!({})).await;
    assert!(st == 200 || st == 202 || st == 409, "cancel answered {st}");

    // A second server on the copy reads the same corpus and the same topics.
    let copy = serve(&to).await;
    let (st, c) = copy.get(&format!("/v1/corpora/{cid}")).await;
    assert_eq!(st, 200, "{c}");
    assert_eq!(c["num_documents"], corpus["num_documents"]);
    assert_eq!(c["num_terms"], corpus["num_terms"]);
    let (st, t) = copy.get(&format!("/v1/models/{mid}/topics?n=8")).await;
    assert_eq!(st, 200, "{t}");
    assert_eq!(t["topics"], topics["topics"]);
}

#[tokio::test]
async fn start_up_refuses_a_damaged_database_and_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("topicd.db");
    let store = Store::open(&db).await.unwrap();
    let stats = CorpusStats { num_documents: 1, num_terms: 1, num_tokens: 1, ..Default::default() };
    for i in 0..20 {
        let id = format!("c{i}");
        store.insert_corpus(NewCorpus { id: &id, name: "c", stats: &stats, summary: json!({}), data: vec![i as u8; 20_000] }).await.unwrap();
    }
    let root: i64 = sqlx::query("SELECT rootpage FROM sqlite_schema WHERE name = 'corpora'").fetch_one(store.pool()).await.unwrap().get(0);
    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)").execute(store.pool()).await.unwrap();
    store.pool().close().await;
    drop(store);

    // A sound file opens (and the server starts on it).
    let server = topicd::api::start(&ServeConfig::for_tests(db.clone())).await.expect("a sound database starts");
    server.stop().await;

    // Overwrite the corpora table's root page, not the header.
    assert!(root > 1);
    let mut bytes = std::fs::read(&db).unwrap();
    let at = (root as usize - 1) * 4096;
    bytes[at..at + 4096].fill(0xA5);
    std::fs::write(&db, bytes).unwrap();
    let err = match topicd::api::start(&ServeConfig::for_tests(db.clone())).await {
        Ok(_) => panic!("a damaged database started"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains(&format!("the database {} is damaged", db.display())), "{err}");
    assert!(err.contains("integrity check found:"), "{err}");
    assert!(err.contains(&format!("Tree {root} page {root}")) || err.contains("malformed"), "names the problem: {err}");
    assert!(err.contains("topicd backup"), "says what to do: {err}");
    assert!(matches!(Store::open(&db).await, Err(StoreError::Damaged { .. })));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_database_refuses_writes_with_507_fails_fits_and_keeps_serving_reads() {
    let mut s = TestServer::start().await;
    let corpus = s.upload(json!({"name": "small", "documents": appstream_docs(150), "preprocess": {"min_df": 2}})).await;
    let cid = corpus["id"].as_str().unwrap().to_string();
    s.stop().await;
    let store = Store::open(&s.db()).await.unwrap();
    let pages: i64 = sqlx::query("PRAGMA page_count").fetch_one(store.pool()).await.unwrap().get(0);
    let free: i64 = sqlx::query("PRAGMA freelist_count").fetch_one(store.pool()).await.unwrap().get(0);
    store.pool().close().await;
    drop(store);
    // Room for a few small rows (a job, its trace), not for a corpus, checkpoint or model.
    let limit_pages = pages + 12;
    s.boot(|c| c.max_db_mb = Some(limit_pages as f64 / 256.0)).await;

    let (st, body) = s.post("/v1/corpora", &json!({"name": "big", "documents": appstream_docs(300)})).await;
    assert_eq!(st, 507, "pages {pages}, free {free}: {body}");
    assert_eq!(body["type"], "urn:topicd:problem:storage-full");
    assert_eq!(body["status"], 507);
    assert!(body["detail"].as_str().unwrap().contains("nothing was stored: the database is full"), "{body}");

    // A fit whose model cannot be stored fails with the reason.
    let job = s.submit(&cid, "lda", json!({"topics": 60, "iterations": 3, "checkpoint_every_s": 0}), 1).await;
    let done = s.wait(job["id"].as_str().unwrap(), Duration::from_secs(120)).await;
    assert_eq!(done["status"], "failed", "{done}");
    let error = done["error"].as_str().unwrap();
    assert!(error.contains("could not store the model: the database is full"), "{error}");
    assert_eq!(done["failure"], "store-fault", "a full store is a store fault, not the user's input: {done}");

    // A fit that cannot store its checkpoint stops at once and fails with the reason.
    let job = s.submit(&cid, "lda", json!({"topics": 60, "iterations": 100000, "checkpoint_every_s": 0.001}), 1).await;
    let done = s.wait(job["id"].as_str().unwrap(), Duration::from_secs(120)).await;
    assert_eq!(done["status"], "failed", "{done}");
    let error = done["error"].as_str().unwrap();
    assert!(error.contains("could not store") && error.contains("the database is full"), "{error}");
    assert!((done["progress"]["iteration"].as_u64().unwrap_or(0)) < 100000, "{done}");
    assert_eq!(done["failure"], "store-fault", "{done}");
    let metrics = s.get_text("/metrics").await.2;
    assert!(metrics.lines().any(|l| l == "topicd_jobs_failed{kind=\"store-fault\"} 2"), "{metrics}");
    assert!(metrics.lines().any(|l| l == "topicd_jobs_failed{kind=\"numerical\"} 0"), "{metrics}");

    // Reads still work.
    for path in ["/healthz", "/readyz", "/v1/corpora", &format!("/v1/corpora/{cid}"), "/v1/jobs"] {
        let (st, body) = s.get(path).await;
        assert_eq!(st, 200, "{path}: {body}");
    }

    // With room again, the same upload is stored.
    s.stop().await;
    s.boot(|_| {}).await;
    s.upload(json!({"name": "big", "documents": appstream_docs(300)})).await;
}

#[tokio::test]
async fn a_read_only_database_is_a_503_that_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("topicd.db");
    Store::open(&db).await.unwrap().pool().close().await;
    let options = sqlx::sqlite::SqliteConnectOptions::new().filename(&db).read_only(true);
    let pool = sqlx::SqlitePool::connect_with(options).await.unwrap();
    let err = sqlx::query("INSERT INTO corpora (id, name) VALUES ('x', 'x')").execute(&pool).await.unwrap_err();
    let err = StoreError::Sqlx(err);
    assert_eq!(err.unwritable(), Some(Unwritable::ReadOnly), "{err}");
    let api = ApiError::from(err);
    assert_eq!(api.status.as_u16(), 503);
    let body = api.body();
    assert_eq!(body["type"], "urn:topicd:problem:read-only");
    assert!(body["detail"].as_str().unwrap().contains("the database is read-only"), "{body}");
}

/// A write transaction that fills the database can be rolled back by SQLite itself;
/// the connection it ran on must not come back from the pool believing it is still in
/// that transaction (its next `BEGIN` would fail: a 500 instead of a 507 or a success).
/// Every pooled connection is used after such failures and must still begin, write
/// (where there is room) and commit, or fail as full.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_the_full_database_rolled_back_leaves_every_connection_usable() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("topicd.db");
    {
        let store = Store::open(&db).await.unwrap();
        sqlx::query("CREATE TABLE filler (b BLOB NOT NULL)").execute(store.pool()).await.unwrap();
        store.pool().close().await;
    }
    let opts = topicd::store::StoreOptions { max_bytes: Some(std::fs::metadata(&db).unwrap().len() + 64 * 4096) };
    let store = Store::open_with(&db, &opts).await.unwrap();
    let mut full_failures = 0;
    for round in 0..24 {
        // Fill in one transaction until SQLite refuses; drop the transaction.
        {
            let mut tx = store.pool().begin_with("BEGIN IMMEDIATE").await.unwrap_or_else(|e| panic!("round {round}: BEGIN failed: {e}"));
            for i in 0..200 {
                let blob = vec![round as u8; 3000 + 997 * i];
                match sqlx::query("INSERT INTO filler (b) VALUES (?)").bind(blob).execute(&mut *tx).await {
                    Ok(_) => {}
                    Err(e) => {
                        assert_eq!(StoreError::Sqlx(e).unwritable(), Some(Unwritable::Full), "round {round}");
                        full_failures += 1;
                        break;
                    }
                }
            }
        }
        // A small write on whichever connection the pool hands out.
        let mut tx = store.pool().begin_with("BEGIN IMMEDIATE").await.unwrap_or_else(|e| panic!("round {round}: BEGIN after a full write failed: {e}"));
        match sqlx::query("INSERT INTO filler (b) VALUES (x'00')").execute(&mut *tx).await {
            Ok(_) => tx.commit().await.unwrap_or_else(|e| panic!("round {round}: COMMIT failed: {e}")),
            Err(e) => assert_eq!(StoreError::Sqlx(e).unwritable(), Some(Unwritable::Full), "round {round}"),
        }
    }
    assert_eq!(full_failures, 24, "every round filled the database");
}
