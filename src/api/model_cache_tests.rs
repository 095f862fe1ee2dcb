//! The model cache's single flight, byte budget and metrics, on stand-in models of
//! given sizes (no store: `get_or_load` takes the loader).

use super::*;
use crate::models::community::Communities;
use std::sync::atomic::AtomicUsize;

/// A graph model of a given size, standing in for any decoded model.
struct OfSize(usize);

impl CommunityModel for OfSize {
    fn family(&self) -> &'static str {
        "sized"
    }
    fn num_communities(&self) -> usize {
        1
    }
    fn communities(&self) -> Communities {
        Communities { nodes: Vec::new(), communities: Vec::new() }
    }
    fn diagnostics(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
    fn encode(&self) -> Vec<u8> {
        Vec::new()
    }
    fn memory_bytes(&self) -> usize {
        self.0
    }
}

fn entry(id: &str, bytes: usize) -> Entry {
    let row = ModelRow {
        id: id.into(),
        job_id: String::new(),
        corpus_id: None,
        graph_id: None,
        family: Err(crate::store::UnknownFamily { name: "sized".into() }),
        params: serde_json::Value::Null,
        seed: 0,
        created_at: String::new(),
        num_topics: 1,
        diagnostics: serde_json::Value::Null,
        parent_model_id: None,
        derivation: None,
        corpus_ids: Vec::new(),
        num_documents: None,
    };
    Entry::Communities(Arc::new(LoadedCommunities { row, model: Box::new(OfSize(bytes)) }))
}

/// A loader that counts its calls and takes a while, so that requests overlap.
async fn slow_load(calls: &AtomicUsize, id: &str, bytes: usize) -> CacheResult<Entry> {
    calls.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(50)).await;
    Ok(entry(id, bytes))
}

fn same(a: &Entry, b: &Entry) -> bool {
    match (a, b) {
        (Entry::Communities(a), Entry::Communities(b)) => Arc::ptr_eq(a, b),
        _ => false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_requests_share_one_load() {
    let cache = Arc::new(ModelCache::new(1 << 20));
    let calls = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..64)
        .map(|_| {
            let (cache, calls) = (cache.clone(), calls.clone());
            tokio::spawn(async move { cache.get_or_load("m", 0, || slow_load(&calls, "m", 1000)).await.map(|(e, _)| e).ok().unwrap() })
        })
        .collect();
    let mut entries = Vec::new();
    for t in tasks {
        entries.push(t.await.unwrap());
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1, "one load for 64 concurrent requests");
    assert!(entries.iter().all(|e| same(e, &entries[0])), "every request got the same decoded model");
    assert_eq!(cache.counters.loads.load(Ordering::SeqCst), 1);
    assert_eq!(cache.counters.loads_in_flight.load(Ordering::SeqCst), 0);
    assert_eq!(cache.counters.hits.load(Ordering::SeqCst) + cache.counters.misses.load(Ordering::SeqCst), 64);
    // A later request is a hit.
    cache.get_or_load("m", 0, || slow_load(&calls, "m", 1000)).await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failed_load_reaches_every_waiter_and_is_not_kept() {
    let cache = Arc::new(ModelCache::new(1 << 20));
    let calls = Arc::new(AtomicUsize::new(0));
    let failing = |calls: Arc<AtomicUsize>| async move {
        calls.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(50)).await;
        Err::<Entry, _>(ModelCacheError::Unreadable { id: "m".into(), why: "the blob is damaged".into() })
    };
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let (cache, calls) = (cache.clone(), calls.clone());
            tokio::spawn(async move { cache.get_or_load("m", 0, || failing(calls)).await.err().map(|e| e.to_string()) })
        })
        .collect();
    for t in tasks {
        assert!(t.await.unwrap().is_some_and(|d| d.contains("damaged")));
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1, "one load, its failure shared");
    assert_eq!(cache.counters.failed_loads.load(Ordering::SeqCst), 1);
    // Not cached: the next request loads again, and succeeds.
    let ok_calls = AtomicUsize::new(0);
    cache.get_or_load("m", 0, || slow_load(&ok_calls, "m", 10)).await.unwrap();
    assert_eq!(ok_calls.load(Ordering::SeqCst), 1);
    assert!(cache.kept.lock().unwrap().loading.is_empty());
}

#[tokio::test]
async fn a_cancelled_load_is_taken_over_by_the_next_request() {
    let cache = ModelCache::new(1 << 20);
    let calls = AtomicUsize::new(0);
    let first = tokio::time::timeout(Duration::from_millis(10), cache.get_or_load("m", 0, || slow_load(&calls, "m", 10))).await;
    assert!(first.is_err(), "the first request gave up while loading");
    assert_eq!(cache.counters.loads_in_flight.load(Ordering::SeqCst), 0);
    cache.get_or_load("m", 0, || slow_load(&calls, "m", 10)).await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn the_least_recently_used_go_first_when_bytes_exceed_the_budget() {
    let cache = ModelCache::new(2500);
    let calls = AtomicUsize::new(0);
    for id in ["a", "b"] {
        cache.get_or_load(id, 0, || slow_load(&calls, id, 1000)).await.unwrap();
    }
    // Use a, so b is the least recently used when c arrives.
    cache.get_or_load("a", 0, || slow_load(&calls, "a", 1000)).await.unwrap();
    let c = cache.get_or_load("c", 0, || slow_load(&calls, "c", 1000)).await.unwrap();
    {
        let kept = cache.kept.lock().unwrap();
        let mut ids: Vec<_> = kept.slots.keys().cloned().collect();
        ids.sort();
        assert_eq!(ids, ["a", "c"]);
        assert_eq!(kept.held, 2000);
    }
    assert_eq!(cache.counters.evictions.load(Ordering::SeqCst), 1);
    assert!(cache.held_bytes() <= cache.budget());
    drop(c);
    // b was dropped by everyone: asking for it loads it again.
    cache.get_or_load("b", 0, || slow_load(&calls, "b", 1000)).await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn a_model_larger_than_the_budget_is_served_not_kept_and_never_decoded_twice_while_used() {
    let cache = ModelCache::new(500);
    let calls = AtomicUsize::new(0);
    let (big, _) = cache.get_or_load("big", 0, || slow_load(&calls, "big", 1000)).await.unwrap();
    assert_eq!(cache.held_bytes(), 0);
    assert_eq!(cache.counters.not_kept.load(Ordering::SeqCst), 1);
    // While a request still holds it, the next one gets the same copy.
    let (again, _) = cache.get_or_load("big", 0, || slow_load(&calls, "big", 1000)).await.unwrap();
    assert!(same(&big, &again));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    drop((big, again));
    cache.get_or_load("big", 0, || slow_load(&calls, "big", 1000)).await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2, "once nothing used it, it was gone");
}

#[tokio::test]
async fn an_evicted_model_still_in_use_is_not_decoded_again() {
    let cache = ModelCache::new(1500);
    let calls = AtomicUsize::new(0);
    let (a, _) = cache.get_or_load("a", 0, || slow_load(&calls, "a", 1000)).await.unwrap();
    cache.get_or_load("b", 0, || slow_load(&calls, "b", 1000)).await.unwrap();
    assert_eq!(cache.counters.evictions.load(Ordering::SeqCst), 1, "a made room for b");
    let (a2, _) = cache.get_or_load("a", 0, || slow_load(&calls, "a", 1000)).await.unwrap();
    assert!(same(&a, &a2), "the copy in use is served");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[test]
fn metrics_name_every_series() {
    let cache = ModelCache::new(1 << 20);
    let mut out = String::new();
    cache.render(&mut out);
    for name in ["hits_total", "misses_total", "loads_total", "loads_in_flight", "bytes", "evictions_total", "budget_bytes"] {
        assert!(out.contains(&format!("\ntopicd_model_cache_{name} ")) || out.starts_with(&format!("topicd_model_cache_{name} ")), "{name} missing from {out}");
    }
}
