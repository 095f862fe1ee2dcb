//! Crash recovery at the store level: a job left `running` by a dead process is
//! re-queued at the next start, or failed with a reason once it has used its attempts
//! (attempts that wrote a checkpoint do not count). Nothing is left `running` forever.
//! Checkpoints replace each other, fail their checksum when a byte flips, and go when
//! the job ends.

use serde_json::json;
use topicd::corpus::CorpusStats;
use topicd::store::corpora::NewCorpus;
use topicd::store::jobs::{NewJob, NotQueued, QueueGate};
use topicd::store::{FitInput, JobStatus, LoadedCheckpoint, Store, TracePoint};

#[tokio::test]
async fn interrupted_jobs_are_requeued_then_failed_after_max_attempts() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("t.db")).await.unwrap();
    let stats = CorpusStats { num_documents: 1, num_terms: 1, num_tokens: 1, ..Default::default() };
    store.insert_corpus(NewCorpus { id: "c", name: "c", stats: &stats, summary: json!({}), data: vec![1, 2, 3] }).await.unwrap();
    store
        .insert_job(NewJob { id: "j", input: FitInput::Corpus("c"), model: "lda", params: &json!({}), seed: 1, queue: QueueGate::UNBOUNDED })
        .await
        .unwrap()
        .unwrap();
    // Three "crashes": each start finds the job running and puts it back.
    for attempt in 1..=3 {
        let claimed = store.claim_next_job().await.unwrap().expect("queued job is claimed");
        assert_eq!(claimed.attempts, attempt);
        assert_eq!(store.get_job("j").await.unwrap().unwrap().status, JobStatus::Running);
        let (requeued, failed) = store.recover_interrupted_jobs(3).await.unwrap();
        if attempt < 3 {
            assert_eq!((requeued, failed), (1, 0));
            assert_eq!(store.get_job("j").await.unwrap().unwrap().status, JobStatus::Queued);
        } else {
            assert_eq!((requeued, failed), (0, 1));
            let j = store.get_job("j").await.unwrap().unwrap();
            assert_eq!(j.status, JobStatus::Failed);
            assert!(j.error.unwrap().contains("3 times"));
        }
    }
    assert!(store.claim_next_job().await.unwrap().is_none());
    // The database survives reopening (the file is the only state).
    drop(store);
    let store = Store::open(&dir.path().join("t.db")).await.unwrap();
    assert_eq!(store.get_corpus("c").await.unwrap().unwrap().num_documents, 1);
    assert_eq!(store.corpus_data("c").await.unwrap().unwrap(), vec![1, 2, 3]);
}

#[tokio::test]
async fn a_job_cannot_be_queued_for_a_missing_corpus() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("t.db")).await.unwrap();
    let made = store
        .insert_job(NewJob { id: "j", input: FitInput::Corpus("gone"), model: "lda", params: &json!({}), seed: 1, queue: QueueGate::UNBOUNDED })
        .await
        .unwrap();
    assert_eq!(made.unwrap_err(), NotQueued::InputGone);
    assert_eq!(store.list_jobs(None, 0, 10).await.unwrap().1, 0);
}

/// A store with a corpus "c" and a queued LDA job "j".
async fn store_with_job(dir: &tempfile::TempDir) -> Store {
    let store = Store::open(&dir.path().join("t.db")).await.unwrap();
    let stats = CorpusStats { num_documents: 1, num_terms: 1, num_tokens: 1, ..Default::default() };
    store.insert_corpus(NewCorpus { id: "c", name: "c", stats: &stats, summary: json!({}), data: vec![1, 2, 3] }).await.unwrap();
    store
        .insert_job(NewJob { id: "j", input: FitInput::Corpus("c"), model: "lda", params: &json!({}), seed: 1, queue: QueueGate::UNBOUNDED })
        .await
        .unwrap()
        .unwrap();
    store
}

/// The rule for `--max-attempts`: an interrupted attempt that wrote a checkpoint made
/// progress and does not count; attempts in a row without one do.
#[tokio::test]
async fn attempts_that_checkpoint_are_not_counted_against_max_attempts() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_job(&dir).await;
    for attempt in 1..=5 {
        let claimed = store.claim_next_job().await.unwrap().expect("queued job is claimed");
        assert_eq!(claimed.attempts, attempt);
        store.save_checkpoint("j", claimed.attempts, 10 * attempt, vec![attempt as u8; 4]).await.unwrap();
        assert_eq!(store.recover_interrupted_jobs(1).await.unwrap(), (1, 0), "attempt {attempt} checkpointed: re-queued");
    }
    // Two attempts without a checkpoint under --max-attempts 2: the second fails it.
    store.claim_next_job().await.unwrap().unwrap();
    assert_eq!(store.recover_interrupted_jobs(2).await.unwrap(), (1, 0));
    store.claim_next_job().await.unwrap().unwrap();
    assert_eq!(store.recover_interrupted_jobs(2).await.unwrap(), (0, 1));
    let j = store.get_job("j").await.unwrap().unwrap();
    assert_eq!(j.status, JobStatus::Failed);
    assert!(j.error.unwrap().contains("2 times without a checkpoint"));
    assert_eq!(store.checkpoint_iteration("j").await.unwrap(), None, "a failed job's checkpoint goes");
}

/// A checkpoint replaces the previous one; one with a flipped byte fails its checksum.
#[tokio::test]
async fn a_checkpoint_with_a_flipped_byte_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_job(&dir).await;
    store.claim_next_job().await.unwrap().unwrap();
    store.save_checkpoint("j", 1, 3, b"first state".to_vec()).await.unwrap();
    let data: Vec<u8> = (0..=255).collect();
    store.save_checkpoint("j", 1, 7, data.clone()).await.unwrap();
    match store.load_checkpoint("j").await.unwrap().unwrap() {
        LoadedCheckpoint::Valid { iteration, data: back, .. } => assert_eq!((iteration, back), (7, data.clone())),
        other => panic!("{other:?}"),
    }
    let mut flipped = data.clone();
    flipped[100] ^= 0x10;
    sqlx::query("UPDATE checkpoints SET data = ? WHERE job_id = 'j'").bind(&flipped).execute(store.pool()).await.unwrap();
    assert!(matches!(store.load_checkpoint("j").await.unwrap(), Some(LoadedCheckpoint::Corrupt { iteration: 7, .. })));
    store.discard_checkpoint("j").await.unwrap();
    assert_eq!(store.load_checkpoint("j").await.unwrap(), None);
}

/// A checkpoint bigger than one stored part is split and joined back byte for byte; a
/// later, smaller one leaves no part of the old behind; a flipped byte or a missing part
/// in the middle is reported as corrupt; discarding it removes every part.
#[tokio::test]
async fn a_checkpoint_in_parts_reads_back_whole() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_job(&dir).await;
    store.claim_next_job().await.unwrap().unwrap();
    let parts = |store: &Store| {
        let pool = store.pool().clone();
        async move { sqlx::query_scalar::<_, i64>("SELECT count(*) FROM checkpoint_parts").fetch_one(&pool).await.unwrap() }
    };
    let data: Vec<u8> = (0..23).collect();
    store.save_checkpoint_in_parts("j", 1, 4, data.clone(), 5).await.unwrap();
    assert_eq!(parts(&store).await, 4, "23 bytes in parts of 5: the first in the checkpoint row, four more");
    match store.load_checkpoint("j").await.unwrap().unwrap() {
        LoadedCheckpoint::Valid { iteration, data: back, .. } => assert_eq!((iteration, back), (4, data.clone())),
        other => panic!("{other:?}"),
    }
    // A part with a flipped byte fails the checksum over the whole.
    sqlx::query("UPDATE checkpoint_parts SET data = X'0f0d0e0f10' WHERE job_id = 'j' AND part = 2").execute(store.pool()).await.unwrap();
    assert!(matches!(store.load_checkpoint("j").await.unwrap(), Some(LoadedCheckpoint::Corrupt { iteration: 4, .. })));
    // A missing part is named.
    store.save_checkpoint_in_parts("j", 1, 5, data.clone(), 5).await.unwrap();
    sqlx::query("DELETE FROM checkpoint_parts WHERE job_id = 'j' AND part = 2").execute(store.pool()).await.unwrap();
    match store.load_checkpoint("j").await.unwrap().unwrap() {
        LoadedCheckpoint::Corrupt { iteration: 5, reason } => assert!(reason.contains("parts [1, 3, 4]"), "{reason}"),
        other => panic!("{other:?}"),
    }
    // A smaller checkpoint replaces every part of the bigger one.
    store.save_checkpoint_in_parts("j", 1, 6, data[..5].to_vec(), 5).await.unwrap();
    assert_eq!(parts(&store).await, 0);
    assert!(matches!(store.load_checkpoint("j").await.unwrap(), Some(LoadedCheckpoint::Valid { iteration: 6, .. })));
    store.save_checkpoint_in_parts("j", 1, 7, data.clone(), 10).await.unwrap();
    assert_eq!(parts(&store).await, 2);
    store.discard_checkpoint("j").await.unwrap();
    assert_eq!((store.load_checkpoint("j").await.unwrap(), parts(&store).await), (None, 0));
}

/// A re-claimed job keeps its trace and samples up to its checkpoint; finishing the job
/// drops the checkpoint.
#[tokio::test]
async fn a_resumed_job_keeps_its_trace_up_to_the_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_job(&dir).await;
    store.claim_next_job().await.unwrap().unwrap();
    let points: Vec<TracePoint> = [1, 10, 20, 30].iter().map(|&it| TracePoint { iteration: it, elapsed_s: 0.1, loglik_per_token: Some(-3.0) }).collect();
    store.append_trace("j", &points).await.unwrap();
    for it in [10, 20, 30] {
        store.insert_sample("j", it, &[1]).await.unwrap();
    }
    store.save_checkpoint("j", 1, 20, b"state".to_vec()).await.unwrap();
    store.recover_interrupted_jobs(3).await.unwrap();
    store.claim_next_job().await.unwrap().unwrap();
    let its: Vec<i64> = store.job_trace("j").await.unwrap().iter().map(|p| p.iteration).collect();
    assert_eq!(its, vec![1, 10, 20]);
    assert_eq!(store.sample_iterations("j").await.unwrap(), vec![10, 20]);
    store.finish_job("j", JobStatus::Cancelled, Some("cancelled by request")).await.unwrap();
    assert_eq!(store.checkpoint_iteration("j").await.unwrap(), None);
}

#[tokio::test]
async fn queued_jobs_are_bounded_in_all_and_per_token_in_the_inserting_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("t.db")).await.unwrap();
    let stats = CorpusStats { num_documents: 1, num_terms: 1, num_tokens: 1, ..Default::default() };
    store.insert_corpus(NewCorpus { id: "c", name: "c", stats: &stats, summary: json!({}), data: vec![1] }).await.unwrap();
    let params = json!({});
    let job = |id: &'static str, token: Option<&'static str>| NewJob {
        id,
        input: FitInput::Corpus("c"),
        model: "lda",
        params: &params,
        seed: 1,
        queue: QueueGate { token_key: token, max_queued: 3, max_queued_per_token: 2 },
    };
    store.insert_job(job("a1", Some("a"))).await.unwrap().unwrap();
    store.insert_job(job("a2", Some("a"))).await.unwrap().unwrap();
    assert_eq!(store.insert_job(job("a3", Some("a"))).await.unwrap().unwrap_err(), NotQueued::TokenQueueFull { queued: 2 });
    store.insert_job(job("b1", Some("b"))).await.unwrap().unwrap();
    assert_eq!(store.insert_job(job("b2", Some("b"))).await.unwrap().unwrap_err(), NotQueued::QueueFull { queued: 3 });
    assert_eq!(store.list_jobs(None, 0, 10).await.unwrap().1, 3, "a refused job left a row");
    // A job that starts leaves the queue and makes room for its token's next one.
    let started = store.claim_next_job().await.unwrap().expect("a job is claimed");
    assert_eq!(started.id, "a1");
    store.insert_job(job("a3", Some("a"))).await.unwrap().unwrap();
}
