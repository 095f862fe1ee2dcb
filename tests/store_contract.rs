//! The store's contract, on both databases: every test here runs once on a SQLite file
//! and once on a fresh PostgreSQL database (`common::postgres`), through the same
//! `Store` API, so the two dialects cannot drift apart.
//!
//! What it holds: jobs are queued only for inputs that exist and within the queue's
//! bounds; a claim is a lease, and a job whose lease expired is taken over and resumes
//! with its trace and samples up to its checkpoint; a claim that lost its job can write
//! nothing more; concurrent claims never take one job twice; checkpoints replace each
//! other (written in chunks, published at once), fail their checksum when a byte flips,
//! and go when the job ends; attempts that
//! checkpoint do not count against `--max-attempts`. SQLite's restart recovery (a job
//! left `running` by the one dead process is re-queued at the next start) is tested on
//! SQLite alone.

mod common;

use common::postgres::PgDatabase;
use serde_json::json;
use std::collections::HashMap;
use std::time::Duration;
use topicd::corpus::CorpusStats;
use topicd::models::FailureKind;
use topicd::store::corpora::NewCorpus;
use topicd::store::jobs::{NewJob, NotQueued, QueueGate};
use topicd::store::models::NewModel;
use topicd::store::{Claim, DbLocation, FamilyName, FitInput, JobStatus, LoadedCheckpoint, MemoryRoom, Renewal, Store, StoreError, TracePoint, Worker};

/// Where a test's store lives; dropping it removes the database.
enum TestDb {
    Sqlite(tempfile::TempDir),
    Postgres(PgDatabase),
}

impl TestDb {
    async fn sqlite() -> TestDb {
        TestDb::Sqlite(tempfile::tempdir().unwrap())
    }
    async fn postgres() -> TestDb {
        TestDb::Postgres(PgDatabase::create().await)
    }
    fn location(&self) -> DbLocation {
        match self {
            TestDb::Sqlite(dir) => DbLocation::Sqlite(dir.path().join("t.db")),
            TestDb::Postgres(db) => DbLocation::Postgres(db.url.clone()),
        }
    }
    async fn open(&self) -> Store {
        Store::connect(&self.location(), &Default::default()).await.unwrap()
    }
}

/// Runs each listed test on both databases: `<name>::sqlite` and `<name>::postgres`.
macro_rules! on_both {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name(super::TestDb::sqlite().await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::$name(super::TestDb::postgres().await).await
            }
        }
    )*};
}

on_both!(
    a_job_cannot_be_queued_for_a_missing_corpus,
    queued_jobs_are_bounded_in_all_and_per_token_in_the_inserting_transaction,
    an_expired_lease_is_taken_over_and_keeps_the_trace_up_to_the_checkpoint,
    a_claim_that_lost_its_job_writes_nothing,
    concurrent_claims_take_each_job_once,
    attempts_that_checkpoint_are_not_counted_against_max_attempts,
    a_checkpoint_with_a_flipped_byte_is_rejected,
    a_checkpoint_in_chunks_reads_back_whole,
    an_unpublished_write_leaves_the_published_checkpoint,
    a_model_round_trips_and_a_cancel_reaches_the_holder,
    blobs_round_trip_byte_for_byte,
    a_job_waits_for_the_memory_its_estimate_needs,
    a_failed_job_keeps_its_failure_class_and_is_counted_by_it,
    a_job_over_ranks_is_claimed_only_by_a_worker_that_starts_worlds,
);

fn stats() -> CorpusStats {
    CorpusStats { num_documents: 1, num_terms: 1, num_tokens: 1, ..Default::default() }
}

/// A store with a corpus "c" and the queued LDA jobs `ids`.
async fn store_with_jobs(db: &TestDb, ids: &[&str]) -> Store {
    let store = db.open().await;
    store.insert_corpus(NewCorpus { id: "c", name: "c", stats: &stats(), summary: json!({}), data: vec![1, 2, 3] }).await.unwrap();
    let params = json!({});
    for id in ids {
        store.insert_job(lda_job(id, &params, None, 1)).await.unwrap().unwrap();
    }
    store
}

/// The `lda` family's stored name.
fn lda() -> FamilyName {
    FamilyName::parse("lda").unwrap()
}

/// An unbounded LDA job on corpus "c" with `options` over `ranks` ranks.
fn lda_job<'a>(id: &'a str, params: &'a serde_json::Value, options: Option<&'a serde_json::Value>, ranks: usize) -> NewJob<'a> {
    NewJob { id, input: FitInput::Corpus("c"), model: lda(), params, seed: 1, queue: QueueGate::UNBOUNDED, memory_bytes: None, options, ranks, start: None }
}

/// A job over 3 ranks waits for a worker that starts worlds that large, while a
/// single-process job queued after it is taken by the others.
async fn a_job_over_ranks_is_claimed_only_by_a_worker_that_starts_worlds(db: TestDb) {
    let store = store_with_jobs(&db, &[]).await;
    let params = json!({});
    for (id, ranks) in [("world", 3), ("solo", 1)] {
        let options = json!({"ranks": ranks});
        store.insert_job(lda_job(id, &params, Some(&options), ranks)).await.unwrap().unwrap();
    }
    let plain = worker("plain", 60_000, 3);
    assert_eq!(store.claim_next_job(&plain).await.unwrap().map(|j| j.id), Some("solo".into()), "the older job over ranks is passed over");
    assert!(store.claim_next_job(&plain).await.unwrap().is_none());
    let small = Worker { max_ranks: 2, ..worker("small", 60_000, 3) };
    assert!(store.claim_next_job(&small).await.unwrap().is_none(), "a world of 2 is too small");
    let launcher = Worker { max_ranks: 1024, ..worker("launcher", 60_000, 3) };
    assert_eq!(store.claim_next_job(&launcher).await.unwrap().map(|j| j.id), Some("world".into()));
}

/// A worker whose leases last `ms` milliseconds.
fn worker(name: &str, ms: u64, max_attempts: i64) -> Worker {
    Worker { owner: name.into(), lease: Duration::from_millis(ms), max_attempts, max_ranks: 1 }
}

/// Long enough for a lease of a few milliseconds to expire.
async fn let_expire() {
    tokio::time::sleep(Duration::from_millis(30)).await;
}

async fn a_job_cannot_be_queued_for_a_missing_corpus(db: TestDb) {
    let store = db.open().await;
    let made = store
        .insert_job(NewJob {
            id: "j",
            input: FitInput::Corpus("gone"),
            model: lda(),
            params: &json!({}),
            seed: 1,
            queue: QueueGate::UNBOUNDED,
            memory_bytes: None,
            options: None,
            ranks: 1,
            start: None,
        })
        .await
        .unwrap();
    assert_eq!(made.unwrap_err(), NotQueued::InputGone);
    assert_eq!(store.list_jobs(None, 0, 10).await.unwrap().1, 0);
}

async fn queued_jobs_are_bounded_in_all_and_per_token_in_the_inserting_transaction(db: TestDb) {
    let store = store_with_jobs(&db, &[]).await;
    let params = json!({});
    let job = |id: &'static str, token: Option<&'static str>| NewJob {
        id,
        input: FitInput::Corpus("c"),
        model: lda(),
        params: &params,
        seed: 1,
        queue: QueueGate { token_key: token, max_queued: 3, max_queued_per_token: 2 },
        memory_bytes: None,
        options: None,
        ranks: 1,
        start: None,
    };
    store.insert_job(job("a1", Some("a"))).await.unwrap().unwrap();
    store.insert_job(job("a2", Some("a"))).await.unwrap().unwrap();
    assert_eq!(store.insert_job(job("a3", Some("a"))).await.unwrap().unwrap_err(), NotQueued::TokenQueueFull { queued: 2 });
    store.insert_job(job("b1", Some("b"))).await.unwrap().unwrap();
    assert_eq!(store.insert_job(job("b2", Some("b"))).await.unwrap().unwrap_err(), NotQueued::QueueFull { queued: 3 });
    assert_eq!(store.list_jobs(None, 0, 10).await.unwrap().1, 3, "a refused job left a row");
    // A job that starts leaves the queue and makes room for its token's next one.
    let started = store.claim_next_job(&Worker::new("w")).await.unwrap().expect("a job is claimed");
    assert_eq!(started.id, "a1");
    store.insert_job(job("a3", Some("a"))).await.unwrap().unwrap();
}

/// A job whose holder stopped renewing is claimed again after its lease expires, not
/// before; the new hold keeps the trace and samples up to the checkpoint; the history
/// shows the two holds one after the other.
async fn an_expired_lease_is_taken_over_and_keeps_the_trace_up_to_the_checkpoint(db: TestDb) {
    let store = store_with_jobs(&db, &["j"]).await;
    let first = store.claim_next_job(&worker("a", 5, 3)).await.unwrap().unwrap();
    let claim = Claim::of(&first);
    // Iteration 10 also carries an acceptance rate, kept with its point.
    let rates = |it: i64| (it == 10).then(|| json!({"accept_rate": 0.25}).as_object().unwrap().clone());
    let points: Vec<TracePoint> =
        [1, 10, 20, 30].iter().map(|&it| TracePoint { iteration: it, elapsed_s: 0.1, loglik_per_token: Some(-3.0), rates: rates(it) }).collect();
    store.append_trace(&claim, &points).await.unwrap();
    for it in [10, 20, 30] {
        store.insert_sample(&claim, it, &[1]).await.unwrap();
    }
    store.save_checkpoint(&claim, 20, b"state".to_vec()).await.unwrap();
    // Renewed with a long lease: nobody may take it.
    assert_eq!(store.renew_lease(&claim, Duration::from_secs(60)).await.unwrap(), Renewal::Held { cancel: false });
    assert!(store.claim_next_job(&worker("b", 60_000, 3)).await.unwrap().is_none(), "a held job was claimed");
    // Renewed with a short one and left to expire: "b" takes it over.
    store.renew_lease(&claim, Duration::from_millis(5)).await.unwrap();
    let_expire().await;
    let second = store.claim_next_job(&worker("b", 60_000, 3)).await.unwrap().expect("the expired job is taken over");
    assert_eq!((second.id.as_str(), second.attempts, second.status), ("j", 2, JobStatus::Running));
    let trace = store.job_trace("j").await.unwrap();
    let its: Vec<i64> = trace.iter().map(|p| p.iteration).collect();
    assert_eq!(its, vec![1, 10, 20]);
    assert_eq!(trace.iter().map(|p| p.rates.clone()).collect::<Vec<_>>(), vec![None, rates(10), None], "rates are read back with their point");
    assert_eq!(store.sample_iterations("j").await.unwrap(), vec![10, 20]);
    assert_eq!(store.samples("j").await.unwrap(), vec![(10, vec![1]), (20, vec![1])]);
    match store.load_checkpoint("j").await.unwrap().unwrap() {
        LoadedCheckpoint::Valid { iteration, data, .. } => assert_eq!((iteration, data.as_slice()), (20, &b"state"[..])),
        other => panic!("{other:?}"),
    }
    store.finish_job(&Claim::of(&second), JobStatus::Cancelled, Some("cancelled by request")).await.unwrap();
    assert_eq!(store.checkpoint_iteration("j").await.unwrap(), None, "an ended job's checkpoint goes");
    let history = store.lease_history("j").await.unwrap();
    let summary: Vec<(&str, i64, Option<&str>)> = history.iter().map(|h| (h.owner.as_str(), h.attempt, h.outcome.as_deref())).collect();
    assert_eq!(summary, vec![("a", 1, Some("taken_over")), ("b", 2, Some("cancelled"))]);
    assert!(history[0].held_until_ms() < history[1].claimed_ms, "the holds overlap: {history:?}");
}

/// After a takeover, every write of the old claim is refused and changes nothing.
async fn a_claim_that_lost_its_job_writes_nothing(db: TestDb) {
    let store = store_with_jobs(&db, &["j"]).await;
    let old = Claim::of(&store.claim_next_job(&worker("a", 5, 3)).await.unwrap().unwrap());
    let_expire().await;
    let new = Claim::of(&store.claim_next_job(&worker("b", 60_000, 3)).await.unwrap().unwrap());
    store.save_checkpoint(&new, 4, b"new".to_vec()).await.unwrap();
    let lost = |r: Result<(), StoreError>| matches!(r, Err(StoreError::LeaseLost(ref id)) if id == "j");
    assert!(lost(store.update_job_progress(&old, &json!({"iteration": 99})).await));
    assert!(lost(store.append_trace(&old, &[TracePoint { iteration: 99, elapsed_s: 1.0, loglik_per_token: None, rates: None }]).await));
    assert!(lost(store.insert_sample(&old, 99, &[9]).await));
    assert!(lost(store.save_checkpoint(&old, 99, b"old".to_vec()).await));
    assert!(lost(store.fail_job(&old, FailureKind::Internal, "old").await));
    assert!(lost(store.requeue_job(&old, "old").await));
    assert!(lost(store.complete_job_with_result(&old, &json!({})).await));
    let model = NewModel {
        id: "m-old",
        claim: &old,
        input: FitInput::Corpus("c"),
        family: lda(),
        params: &json!({}),
        seed: 1,
        num_topics: 1,
        diagnostics: &json!({}),
        lexicon: Some(&[1]),
        data: &[2],
        topic_names: &[],
        parent: None,
        corpus_ids: &[],
        num_documents: None,
    };
    assert!(lost(store.complete_job_with_model(model).await));
    assert_eq!(store.renew_lease(&old, Duration::from_secs(60)).await.unwrap(), Renewal::Lost);
    // Nothing of the old claim is in the store.
    let job = store.get_job("j").await.unwrap().unwrap();
    assert_eq!((job.status, job.attempts, job.progress, job.error), (JobStatus::Running, 2, None, None));
    assert!(store.job_trace("j").await.unwrap().is_empty());
    assert!(store.sample_iterations("j").await.unwrap().is_empty());
    assert_eq!(store.checkpoint_iteration("j").await.unwrap(), Some(4));
    assert!(store.get_model("m-old").await.unwrap().is_none());
}

/// Eight workers claiming at once from twenty queued jobs take each exactly once.
async fn concurrent_claims_take_each_job_once(db: TestDb) {
    let ids: Vec<String> = (0..20).map(|i| format!("j{i:02}")).collect();
    let id_refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let store = store_with_jobs(&db, &id_refs).await;
    let mut tasks = Vec::new();
    for w in 0..8 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let me = worker(&format!("w{w}"), 60_000, 3);
            let mut mine = Vec::new();
            while let Some(job) = store.claim_next_job(&me).await.unwrap() {
                mine.push(job.id);
            }
            mine
        }));
    }
    let mut claimed: HashMap<String, usize> = HashMap::new();
    for t in tasks {
        for id in t.await.unwrap() {
            *claimed.entry(id).or_default() += 1;
        }
    }
    assert_eq!(claimed.len(), 20, "every job is claimed: {claimed:?}");
    assert!(claimed.values().all(|&n| n == 1), "a job was claimed twice: {claimed:?}");
}

/// The rule for `--max-attempts`: an interrupted attempt that wrote a checkpoint made
/// progress and does not count; expired attempts in a row without one do.
async fn attempts_that_checkpoint_are_not_counted_against_max_attempts(db: TestDb) {
    let store = store_with_jobs(&db, &["j"]).await;
    for attempt in 1..=5 {
        let claimed = store.claim_next_job(&worker("w", 5, 1)).await.unwrap().expect("the job is claimed again");
        assert_eq!(claimed.attempts, attempt);
        store.save_checkpoint(&Claim::of(&claimed), 10 * attempt, vec![attempt as u8; 4]).await.unwrap();
        let_expire().await;
    }
    // Two attempts without a checkpoint under --max-attempts 2: the second fails it.
    store.claim_next_job(&worker("w", 5, 2)).await.unwrap().unwrap();
    let_expire().await;
    store.claim_next_job(&worker("w", 5, 2)).await.unwrap().unwrap();
    let_expire().await;
    assert!(store.claim_next_job(&worker("w", 5, 2)).await.unwrap().is_none());
    let j = store.get_job("j").await.unwrap().unwrap();
    assert_eq!(j.status, JobStatus::Failed);
    assert!(j.error.unwrap().contains("2 times without a checkpoint"));
    assert_eq!(j.failure, Some(FailureKind::Interrupted), "a job whose worker kept stopping failed as interrupted");
    assert_eq!(store.checkpoint_iteration("j").await.unwrap(), None, "a failed job's checkpoint goes");
}

/// The chunks of the job's published checkpoint, and of all its generations.
async fn chunks(store: &Store) -> (i64, i64) {
    let published: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM checkpoint_chunks c JOIN checkpoints k ON k.job_id = c.job_id AND k.generation = c.generation WHERE c.job_id = 'j'",
    )
    .fetch_one(store.pool())
    .await
    .unwrap();
    let all: i64 = sqlx::query_scalar("SELECT count(*) FROM checkpoint_chunks WHERE job_id = 'j'").fetch_one(store.pool()).await.unwrap();
    (published, all)
}

/// Overwrite chunk `part` of the job's published checkpoint.
async fn overwrite_chunk(store: &Store, part: i64, data: Vec<u8>) {
    sqlx::query(
        "UPDATE checkpoint_chunks SET data = $1 WHERE job_id = 'j' AND part = $2 AND generation = (SELECT generation FROM checkpoints WHERE job_id = 'j')",
    )
    .bind(data)
    .bind(part)
    .execute(store.pool())
    .await
    .unwrap();
}

/// A checkpoint replaces the previous one; one with a flipped byte fails its checksum.
async fn a_checkpoint_with_a_flipped_byte_is_rejected(db: TestDb) {
    let store = store_with_jobs(&db, &["j"]).await;
    let claim = Claim::of(&store.claim_next_job(&Worker::new("w")).await.unwrap().unwrap());
    store.save_checkpoint(&claim, 3, b"first state".to_vec()).await.unwrap();
    let data: Vec<u8> = (0..=255).collect();
    store.save_checkpoint(&claim, 7, data.clone()).await.unwrap();
    match store.load_checkpoint("j").await.unwrap().unwrap() {
        LoadedCheckpoint::Valid { iteration, data: back, .. } => assert_eq!((iteration, back), (7, data.clone())),
        other => panic!("{other:?}"),
    }
    let mut flipped = data.clone();
    flipped[100] ^= 0x10;
    overwrite_chunk(&store, 0, flipped).await;
    assert!(matches!(store.load_checkpoint("j").await.unwrap(), Some(LoadedCheckpoint::Corrupt { iteration: 7, .. })));
    store.discard_checkpoint("j").await.unwrap();
    assert_eq!(store.load_checkpoint("j").await.unwrap(), None);
}

/// A checkpoint bigger than one chunk is written in chunks and joined back byte for
/// byte; each save leaves only its own chunks (the older generation is purged); a
/// flipped byte or a missing chunk in the middle is reported as corrupt; an ended job's
/// chunks are purged.
async fn a_checkpoint_in_chunks_reads_back_whole(db: TestDb) {
    let store = store_with_jobs(&db, &["j"]).await;
    let claim = Claim::of(&store.claim_next_job(&Worker::new("w")).await.unwrap().unwrap());
    let data: Vec<u8> = (0..23).collect();
    store.save_checkpoint_in_chunks(&claim, 4, data.clone(), 5).await.unwrap();
    assert_eq!(chunks(&store).await, (5, 5), "23 bytes in chunks of 5");
    match store.load_checkpoint("j").await.unwrap().unwrap() {
        LoadedCheckpoint::Valid { iteration, data: back, .. } => assert_eq!((iteration, back), (4, data.clone())),
        other => panic!("{other:?}"),
    }
    // A chunk with a flipped byte fails the checksum over the whole.
    overwrite_chunk(&store, 2, vec![15, 11, 12, 13, 14]).await;
    assert!(matches!(store.load_checkpoint("j").await.unwrap(), Some(LoadedCheckpoint::Corrupt { iteration: 4, .. })));
    // A missing chunk is named.
    store.save_checkpoint_in_chunks(&claim, 5, data.clone(), 5).await.unwrap();
    assert_eq!(chunks(&store).await, (5, 5), "the first checkpoint's chunks are purged");
    sqlx::query("DELETE FROM checkpoint_chunks WHERE job_id = 'j' AND part = 2").execute(store.pool()).await.unwrap();
    match store.load_checkpoint("j").await.unwrap().unwrap() {
        LoadedCheckpoint::Corrupt { iteration: 5, reason } => assert!(reason.contains("chunks [0, 1, 3, 4]"), "{reason}"),
        other => panic!("{other:?}"),
    }
    // A smaller checkpoint replaces every chunk of the bigger one; an empty one is one
    // empty chunk.
    store.save_checkpoint_in_chunks(&claim, 6, data[..5].to_vec(), 5).await.unwrap();
    assert_eq!(chunks(&store).await, (1, 1));
    assert!(matches!(store.load_checkpoint("j").await.unwrap(), Some(LoadedCheckpoint::Valid { iteration: 6, .. })));
    store.save_checkpoint_in_chunks(&claim, 7, Vec::new(), 5).await.unwrap();
    match store.load_checkpoint("j").await.unwrap().unwrap() {
        LoadedCheckpoint::Valid { iteration, data: back, .. } => assert_eq!((iteration, back.len()), (7, 0)),
        other => panic!("{other:?}"),
    }
    store.save_checkpoint_in_chunks(&claim, 8, data.clone(), 10).await.unwrap();
    assert_eq!(chunks(&store).await, (3, 3));
    // A discarded checkpoint's chunks stay while the job runs (a write could be in
    // progress), and go once it has ended.
    store.discard_checkpoint("j").await.unwrap();
    assert_eq!(store.load_checkpoint("j").await.unwrap(), None);
    assert_eq!(store.purge_checkpoint_chunks(Some("j")).await.unwrap(), 0);
    store.fail_job(&claim, FailureKind::Internal, "test").await.unwrap();
    assert_eq!(store.purge_checkpoint_chunks(None).await.unwrap(), 3);
    assert_eq!(chunks(&store).await, (0, 0));
}

/// A write that stopped between its chunks and its publication (a crash) leaves the
/// published checkpoint readable and its own chunks unread; they are not purged while
/// the job runs; the next save of the attempt overwrites them; a new holder's chunks
/// are of a later generation than every chunk of the former holder's.
async fn an_unpublished_write_leaves_the_published_checkpoint(db: TestDb) {
    let store = store_with_jobs(&db, &["j"]).await;
    let w = worker("w", 5, 5);
    let claim = Claim::of(&store.claim_next_job(&w).await.unwrap().unwrap());
    store.save_checkpoint_in_chunks(&claim, 4, b"published".to_vec(), 4).await.unwrap();
    let generation = || async { sqlx::query_scalar::<_, i64>("SELECT generation FROM checkpoints WHERE job_id = 'j'").fetch_one(store.pool()).await.unwrap() };
    let published = generation().await;
    // The chunks of the next generation, never published: the same bytes as a
    // different checkpoint would have, and one more chunk than the next save writes.
    for (part, chunk) in [&b"unpu"[..], b"blis", b"hed ", b"and more"].iter().enumerate() {
        sqlx::query("INSERT INTO checkpoint_chunks (job_id, generation, part, data) VALUES ('j', $1, $2, $3)")
            .bind(published + 1)
            .bind(part as i64)
            .bind(chunk.to_vec())
            .execute(store.pool())
            .await
            .unwrap();
    }
    match store.load_checkpoint("j").await.unwrap().unwrap() {
        LoadedCheckpoint::Valid { iteration, data, .. } => assert_eq!((iteration, data), (4, b"published".to_vec())),
        other => panic!("{other:?}"),
    }
    assert_eq!(store.purge_checkpoint_chunks(None).await.unwrap(), 0, "a running job's unpublished chunks may be a write in progress");
    store.save_checkpoint_in_chunks(&claim, 5, b"next state".to_vec(), 4).await.unwrap();
    assert_eq!(generation().await, published + 1);
    match store.load_checkpoint("j").await.unwrap().unwrap() {
        LoadedCheckpoint::Valid { iteration, data, .. } => assert_eq!((iteration, data), (5, b"next state".to_vec())),
        other => panic!("{other:?}"),
    }
    // The lease runs out; the next holder's generation is above the former's.
    let_expire().await;
    let next = Claim::of(&store.claim_next_job(&w).await.unwrap().unwrap());
    store.save_checkpoint_in_chunks(&next, 6, b"taken over".to_vec(), 4).await.unwrap();
    assert!(generation().await > published + 1);
    let kept: Vec<i64> = sqlx::query_scalar("SELECT DISTINCT generation FROM checkpoint_chunks WHERE job_id = 'j'").fetch_all(store.pool()).await.unwrap();
    assert_eq!(kept, vec![generation().await], "the former holder's chunks, and the extra unpublished one, are purged");
}

/// A cancel asked of a running job reaches its holder through the renewal; a model
/// stored by its holder ends the job and the hold; renaming a topic bumps the model's
/// names generation; a model in use by an evaluation cannot be deleted.
async fn a_model_round_trips_and_a_cancel_reaches_the_holder(db: TestDb) {
    let store = store_with_jobs(&db, &["j", "k"]).await;
    let j = Claim::of(&store.claim_next_job(&Worker::new("w")).await.unwrap().unwrap());
    assert_eq!(store.renew_lease(&j, Duration::from_secs(30)).await.unwrap(), Renewal::Held { cancel: false });
    store.request_cancel("j").await.unwrap();
    assert_eq!(store.renew_lease(&j, Duration::from_secs(30)).await.unwrap(), Renewal::Held { cancel: true });
    let k = Claim::of(&store.claim_next_job(&Worker::new("w")).await.unwrap().unwrap());
    let (lexicon, data): (Vec<u8>, Vec<u8>) = ((0..=255).collect(), (0..100_000u32).map(|i| (i * 7919 % 251) as u8).collect());
    store
        .complete_job_with_model(NewModel {
            id: "m",
            claim: &k,
            input: FitInput::Corpus("c"),
            family: lda(),
            params: &json!({"num_topics": 2}),
            seed: u64::MAX,
            num_topics: 2,
            diagnostics: &json!({"x": 1.5}),
            lexicon: Some(&lexicon),
            data: &data,
            topic_names: &[(1, "seeded".to_string())],
            parent: Some(("m-parent", &json!({"operations": [{"op": "delete", "topic": 0}]}))),
            corpus_ids: &["c0".to_string(), "c".to_string()],
            num_documents: Some(12),
        })
        .await
        .unwrap();
    assert_eq!(store.topic_names("m").await.unwrap(), [(1usize, "seeded".to_string())].into_iter().collect(), "names stored with the model");
    let row = store.get_model("m").await.unwrap().unwrap();
    assert_eq!((row.seed, row.num_topics, row.params["num_topics"].as_i64()), (u64::MAX, 2, Some(2)));
    assert_eq!(row.parent_model_id.as_deref(), Some("m-parent"), "the parent is stored with the model");
    assert_eq!(row.derivation.as_ref().map(|d| d["operations"][0]["op"].clone()), Some(json!("delete")));
    assert_eq!((row.corpus_ids.as_slice(), row.num_documents), (&["c0".to_string(), "c".to_string()][..], Some(12)), "the corpora it holds");
    assert_eq!(store.model_children("m-parent").await.unwrap().iter().map(|m| m.id.as_str()).collect::<Vec<_>>(), vec!["m"], "a parent finds its children");
    let (family, lex_back, data_back) = store.model_blobs("m").await.unwrap().unwrap();
    assert_eq!((family.unwrap().as_str(), lex_back.as_deref(), data_back.as_slice()), ("lda", Some(lexicon.as_slice()), data.as_slice()));
    assert_eq!(store.model_data_bytes("m").await.unwrap(), Some(data.len() as u64), "the stored data's size, for a child's memory estimate");
    assert_eq!(store.model_data_bytes("missing").await.unwrap(), None);
    let job = store.get_job("k").await.unwrap().unwrap();
    assert_eq!((job.status, job.model_id.as_deref()), (JobStatus::Succeeded, Some("m")));
    assert_eq!(store.lease_history("k").await.unwrap()[0].outcome.as_deref(), Some("succeeded"));
    assert_eq!(store.renew_lease(&k, Duration::from_secs(30)).await.unwrap(), Renewal::Lost, "a finished job's lease renews");
    // Topic names and their generation.
    let g0 = store.model_names_generation("m").await.unwrap();
    assert!(store.set_topic_name("m", 1, Some("sports")).await.unwrap());
    assert_eq!(store.topic_names("m").await.unwrap().get(&1).map(String::as_str), Some("sports"));
    assert!(store.model_names_generation("m").await.unwrap() > g0);
    assert!(!store.set_topic_name("missing", 1, Some("x")).await.unwrap());
    assert_eq!(store.delete_model("m").await.unwrap(), topicd::store::DeleteOutcome::Deleted);
    assert_eq!(store.model_names_generation("m").await.unwrap(), None);
}

/// Corpus and sample blobs of every byte value come back unchanged; tokens work.
async fn blobs_round_trip_byte_for_byte(db: TestDb) {
    let store = db.open().await;
    let data: Vec<u8> = (0..1_000_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
    store.insert_corpus(NewCorpus { id: "big", name: "big", stats: &stats(), summary: json!({"a": [1, 2]}), data: data.clone() }).await.unwrap();
    assert_eq!(store.corpus_data("big").await.unwrap().unwrap(), data);
    assert_eq!(store.get_corpus("big").await.unwrap().unwrap().summary, json!({"a": [1, 2]}));
    let (_, issued) = store.create_token("ci", topicd::auth::Role::Write).await.unwrap().unwrap();
    assert_eq!(store.authenticate(&issued.token).await.unwrap().map(|c| c.name), Some("ci".to_string()));
    assert_eq!(store.delete_corpus("big").await.unwrap(), topicd::store::DeleteOutcome::Deleted);
    assert!(store.corpus_data("big").await.unwrap().is_none());
}

/// SQLite only: one process owns the file, so a job found `running` at start was left
/// by the dead process and is re-queued at once, or failed once it used its attempts.
#[tokio::test]
async fn sqlite_restart_requeues_interrupted_jobs_then_fails_them_after_max_attempts() {
    let db = TestDb::sqlite().await;
    let store = store_with_jobs(&db, &["j"]).await;
    for attempt in 1..=3 {
        let claimed = store.claim_next_job(&Worker::new("w")).await.unwrap().expect("queued job is claimed");
        assert_eq!(claimed.attempts, attempt);
        let (requeued, failed) = store.recover_interrupted_jobs(3).await.unwrap();
        if attempt < 3 {
            assert_eq!((requeued, failed), (1, 0));
            assert_eq!(store.get_job("j").await.unwrap().unwrap().status, JobStatus::Queued);
        } else {
            assert_eq!((requeued, failed), (0, 1));
            let j = store.get_job("j").await.unwrap().unwrap();
            assert_eq!(j.status, JobStatus::Failed);
            assert!(j.error.unwrap().contains("3 times"));
            assert_eq!(j.failure, Some(FailureKind::Interrupted));
        }
    }
    assert!(store.claim_next_job(&Worker::new("w")).await.unwrap().is_none());
    let outcomes: Vec<Option<String>> = store.lease_history("j").await.unwrap().into_iter().map(|h| h.outcome).collect();
    assert_eq!(outcomes, vec![Some("interrupted".to_string()); 3]);
    // The database survives reopening (the file is the only state).
    store.close().await;
    let store = db.open().await;
    assert_eq!(store.corpus_data("c").await.unwrap().unwrap(), vec![1, 2, 3]);
}

/// PostgreSQL only: a shared database's `running` jobs may be other replicas'; a
/// starting replica leaves them to their leases.
#[tokio::test]
async fn postgres_start_leaves_running_jobs_to_their_leases() {
    let db = TestDb::postgres().await;
    let store = store_with_jobs(&db, &["j"]).await;
    store.claim_next_job(&Worker::new("other")).await.unwrap().unwrap();
    assert_eq!(store.recover_interrupted_jobs(3).await.unwrap(), (0, 0));
    assert_eq!(store.get_job("j").await.unwrap().unwrap().status, JobStatus::Running);
}

/// A queued job whose estimate exceeds the room a replica has left is not claimed, and
/// says why; the queue stays first in, first out (a smaller job behind it waits too);
/// with room, the job is claimed, its estimate kept and its note cleared. A job without
/// an estimate needs nothing.
async fn a_job_waits_for_the_memory_its_estimate_needs(db: TestDb) {
    let store = db.open().await;
    store.insert_corpus(NewCorpus { id: "c", name: "c", stats: &stats(), summary: json!({}), data: vec![1, 2, 3] }).await.unwrap();
    let params = json!({});
    for (id, bytes) in [("big", Some(3_000_u64)), ("small", Some(10)), ("none", None)] {
        store
            .insert_job(NewJob {
                id,
                input: FitInput::Corpus("c"),
                model: lda(),
                params: &params,
                seed: 1,
                queue: QueueGate::UNBOUNDED,
                memory_bytes: bytes,
                options: None,
                ranks: 1,
                start: None,
            })
            .await
            .unwrap()
            .unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(store.get_job("big").await.unwrap().unwrap().memory_bytes, Some(3_000));
    let note = |needs: u64| format!("needs {needs}, has 2000");
    let tight = MemoryRoom { free_bytes: 2_000, waiting: &note };
    assert!(store.claim_next_job_within(&Worker::new("w"), &tight).await.unwrap().is_none(), "a job larger than the room was claimed");
    let big = store.get_job("big").await.unwrap().unwrap();
    assert_eq!((big.status, big.waiting.as_deref()), (JobStatus::Queued, Some("needs 3000, has 2000")));
    assert_eq!(store.get_job("small").await.unwrap().unwrap().status, JobStatus::Queued, "a later job overtook the head of the queue");
    let room = MemoryRoom { free_bytes: 3_000, waiting: &note };
    let claimed = store.claim_next_job_within(&Worker::new("w"), &room).await.unwrap().unwrap();
    assert_eq!((claimed.id.as_str(), claimed.memory_bytes, claimed.waiting), ("big", Some(3_000), None));
    let none = MemoryRoom { free_bytes: 0, waiting: &note };
    assert!(store.claim_next_job_within(&Worker::new("w"), &none).await.unwrap().is_none());
    store
        .finish_job(&Claim::of(&store.claim_next_job_within(&Worker::new("w"), &MemoryRoom::UNLIMITED).await.unwrap().unwrap()), JobStatus::Succeeded, None)
        .await
        .unwrap();
    let last = store.claim_next_job_within(&Worker::new("w"), &none).await.unwrap().expect("a job without an estimate needs no room");
    assert_eq!((last.id.as_str(), last.memory_bytes), ("none", None));
}

/// A failed job records the class of its failure beside its reason; a cancelled or
/// succeeded job has none; `/metrics` counts failed jobs by class.
async fn a_failed_job_keeps_its_failure_class_and_is_counted_by_it(db: TestDb) {
    let store = store_with_jobs(&db, &["a", "b", "c"]).await;
    let claim = |store: &Store| {
        let store = store.clone();
        async move { Claim::of(&store.claim_next_job(&Worker::new("w")).await.unwrap().unwrap()) }
    };
    let first = claim(&store).await;
    store.fail_job(&first, FailureKind::Numerical, "log-likelihood is NaN at sweep 3").await.unwrap();
    let second = claim(&store).await;
    store.fail_job(&second, FailureKind::InvalidInput, "the corpus has no labels").await.unwrap();
    let third = claim(&store).await;
    store.finish_job(&third, JobStatus::Cancelled, Some("cancelled by request")).await.unwrap();
    let failed = store.get_job(&first.job_id).await.unwrap().unwrap();
    assert_eq!(
        (failed.status, failed.failure, failed.error.as_deref()),
        (JobStatus::Failed, Some(FailureKind::Numerical), Some("log-likelihood is NaN at sweep 3"))
    );
    assert_eq!(store.get_job(&third.job_id).await.unwrap().unwrap().failure, None);
    assert_eq!(store.count_failed_jobs_by_class().await.unwrap(), vec![("invalid-input".to_string(), 1), ("numerical".to_string(), 1)]);
    // A job's runner options are kept beside its params, as given.
    let options = json!({"threads": 2, "checkpoint_every_s": 0.5});
    let queued = store
        .insert_job(NewJob {
            id: "d",
            input: FitInput::Corpus("c"),
            model: lda(),
            params: &json!({}),
            seed: 1,
            queue: QueueGate::UNBOUNDED,
            memory_bytes: None,
            options: Some(&options),
            ranks: 1,
            start: None,
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!((queued.options, queued.params), (Some(options), json!({})));
    assert_eq!(store.get_job("a").await.unwrap().unwrap().options, None);
}
