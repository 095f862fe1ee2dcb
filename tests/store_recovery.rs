//! Crash recovery at the store level: a job left `running` by a dead process is
//! re-queued at the next start, or failed with a reason once it has used its attempts.
//! Nothing is left `running` forever.

use serde_json::json;
use topicd::corpus::CorpusStats;
use topicd::store::corpora::NewCorpus;
use topicd::store::jobs::NewJob;
use topicd::store::{FitInput, JobStatus, Store};

#[tokio::test]
async fn interrupted_jobs_are_requeued_then_failed_after_max_attempts() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("t.db")).await.unwrap();
    let stats = CorpusStats { num_documents: 1, num_terms: 1, num_tokens: 1, ..Default::default() };
    store.insert_corpus(NewCorpus { id: "c", name: "c", stats: &stats, summary: json!({}), data: vec![1, 2, 3] }).await.unwrap();
    store.insert_job(NewJob { id: "j", input: FitInput::Corpus("c"), model: "lda", params: &json!({}), seed: 1 }).await.unwrap().unwrap();
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
    let made = store.insert_job(NewJob { id: "j", input: FitInput::Corpus("gone"), model: "lda", params: &json!({}), seed: 1 }).await.unwrap();
    assert!(made.is_none());
    assert_eq!(store.list_jobs(None, 0, 10).await.unwrap().1, 0);
}
