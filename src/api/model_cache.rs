//! Decoded models kept in memory between requests.
//!
//! Why it exists: a stored model is a blob of posterior means (megabytes for K = 100 on
//! a real vocabulary, gigabytes for a large labelled corpus); decoding it for every
//! topics or predict request would dominate their cost, and decoding it once per
//! request when a crowd opens a fresh model multiplies the server's memory by the
//! crowd. So:
//! - **One decode per model** (single flight): requests for a model that is not loaded
//!   wait on one load; a failed load is answered to every waiter and not kept. At most
//!   one decoded copy of a model is alive in the process: a model pushed out of the
//!   cache while requests still use it is found again by the next request (a weak
//!   reference) instead of being decoded a second time.
//! - **A budget in bytes** (`--model-cache-mb`): models and the pages answered from
//!   them are kept by their measured heap size ([`crate::heap_size`]; re-measured as
//!   pages are added), least recently used out first. A model larger than the whole
//!   budget is served to the requests that asked for it without being kept.
//!
//! Decoding runs on a blocking thread, never on the async workers and never inside the
//! prediction pool (see [`LoadedModel::ranked_table`] for why that matters).
//!
//! On a shared store (PostgreSQL, many replicas) another replica may delete a model or
//! rename its topics. Those changes are announced (`store::model_events`) and
//! [`ModelCache::follow`] applies them: a deleted model is forgotten, a renamed one
//! drops its names and pages. While the listener is down (and once per cached model
//! after it listens again, since it may have missed some) a hit asks the store instead:
//! the model's names generation, one indexed read, forgetting a model that is gone
//! (404) and dropping names older than the last rename. On SQLite this process makes
//! every change itself, so a hit asks nothing.

use crate::corpus::tokenize::TextPipeline;
use crate::corpus::Lexicon;
use crate::models::community::CommunityModel;
use crate::models::registry::Fitted;
use crate::models::{Comparison, TableOptions, TopicModel};
use crate::store::model_events::{Heard, ModelEvent};
use crate::store::{ModelRow, Store};
use crate::summaries::topic_map::TopicMap;
use crate::summaries::RankedTable;
use std::collections::HashMap;
use std::fmt::Write;
use std::future::Future;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use super::ranked_documents::RankedDocuments;
use super::topic_pages::TopicPages;
use crate::store::StoreError;

/// A topic model ready to answer questions.
pub struct LoadedModel {
    pub row: ModelRow,
    pub model: Box<dyn TopicModel>,
    pub lexicon: Lexicon,
    pub pipeline: TextPipeline,
    /// The intertopic map, computed at its first request and kept while the model is.
    pub topic_map: OnceLock<Arc<TopicMap>>,
    /// Every document's topic proportions (the fit's, or folded in) with its id and
    /// first words, computed at the first request for representative documents and kept
    /// while the model is.
    pub document_topics: OnceLock<Arc<RankedDocuments>>,
    /// The topic table with its ECDFs, per comparison (natural, all), computed at the
    /// first topic read and kept while the model is: a topic read then only ranks.
    ranked_tables: [OnceLock<Arc<RankedTable>>; 2],
    /// Topic names and the topic pages answered with them (dropped by a rename).
    pub topic_pages: TopicPages,
    /// The store's names generation the topic pages were last checked against (shared
    /// stores only; read when the model is loaded).
    names_generation: AtomicI64,
}

impl LoadedModel {
    /// The model's topic table and ECDFs for `comparison`, computed on first use in
    /// `pool`. Call it on a blocking thread, never inside the pool: a rayon worker
    /// waiting for the table while it is being computed could steal a job that waits
    /// for it too, and every worker would then wait for itself (a deadlock seen under
    /// load).
    pub fn ranked_table(&self, comparison: Comparison, pool: &rayon::ThreadPool) -> Arc<RankedTable> {
        let slot = match comparison {
            Comparison::Natural => &self.ranked_tables[0],
            Comparison::All => &self.ranked_tables[1],
        };
        slot.get_or_init(|| pool.install(|| Arc::new(RankedTable::new(self.model.topic_table(&TableOptions { comparison }))))).clone()
    }

    /// Heap bytes of the model, its vocabulary and everything computed from it so far.
    pub fn memory_bytes(&self) -> usize {
        let tables: usize = self.ranked_tables.iter().filter_map(|t| t.get()).map(|t| t.memory_bytes()).sum();
        self.model.memory_bytes()
            + self.lexicon.memory_bytes()
            + tables
            + self.topic_map.get().map_or(0, |m| m.memory_bytes())
            + self.document_topics.get().map_or(0, |d| d.memory_bytes())
            + self.topic_pages.memory_bytes()
    }
}

/// A graph model ready to report its communities.
pub struct LoadedCommunities {
    pub row: ModelRow,
    pub model: Box<dyn CommunityModel>,
}

impl LoadedCommunities {
    /// Heap bytes of the model and its node names.
    pub fn memory_bytes(&self) -> usize {
        self.model.memory_bytes()
    }
}

/// A cached model of either kind.
#[derive(Clone)]
enum Entry {
    Topics(Arc<LoadedModel>),
    Communities(Arc<LoadedCommunities>),
}

impl Entry {
    fn memory_bytes(&self) -> usize {
        match self {
            Entry::Topics(m) => m.memory_bytes(),
            Entry::Communities(m) => m.memory_bytes(),
        }
    }

    fn downgrade(&self) -> WeakEntry {
        match self {
            Entry::Topics(m) => WeakEntry::Topics(Arc::downgrade(m)),
            Entry::Communities(m) => WeakEntry::Communities(Arc::downgrade(m)),
        }
    }
}

/// A decoded model that is not kept but may still be in use by requests.
enum WeakEntry {
    Topics(Weak<LoadedModel>),
    Communities(Weak<LoadedCommunities>),
}

impl WeakEntry {
    fn upgrade(&self) -> Option<Entry> {
        match self {
            WeakEntry::Topics(m) => m.upgrade().map(Entry::Topics),
            WeakEntry::Communities(m) => m.upgrade().map(Entry::Communities),
        }
    }
}

/// A kept model: the use count at its last use, the listening epoch it was last checked
/// against the store in (0: never), and its size when last measured.
struct Slot {
    tick: u64,
    entry: Entry,
    checked: u64,
    bytes: usize,
    measured: Instant,
}

/// Why the cache gives no model; mapped to an HTTP answer once, in `api::error`.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ModelCacheError {
    /// No stored model has this id (or it was deleted).
    #[error("no model with id {0:?}")]
    NotFound(String),
    /// A topic model was asked for and the id names a graph model.
    #[error("{family} models describe communities of a graph (see /v1/models/{id}/communities); they have no topics")]
    NotTopics { family: String, id: String },
    /// A graph model was asked for and the id names a topic model.
    #[error("{family} models describe topics of a corpus, not communities of a graph")]
    NotCommunities { family: String },
    /// The store could not be read.
    #[error("{0}")]
    Store(Arc<StoreError>),
    /// The stored model cannot be served: an unknown family, bytes that do not decode,
    /// a topic model without its lexicon, or a decoding thread that died.
    #[error("stored model {id} cannot be read: {why}")]
    Unreadable { id: String, why: String },
}

impl From<StoreError> for ModelCacheError {
    fn from(e: StoreError) -> Self {
        ModelCacheError::Store(Arc::new(e))
    }
}

/// What the cache answers.
pub type CacheResult<T> = Result<T, ModelCacheError>;

/// One load that every request for the model waits on.
type Load = tokio::sync::OnceCell<CacheResult<Entry>>;

/// Everything under the cache's one lock (never held across an await).
#[derive(Default)]
struct Kept {
    /// The use counter.
    tick: u64,
    slots: HashMap<String, Slot>,
    /// Sum of the slots' bytes.
    held: usize,
    /// Loads under way, by model id.
    loading: HashMap<String, Arc<Load>>,
    /// Models decoded but not kept (pushed out, or too large), while anything uses them.
    alive: HashMap<String, WeakEntry>,
}

/// How often a kept model's size is measured again while it is used (its pages grow).
const REMEASURE_EVERY: Duration = Duration::from_millis(100);

/// What `/metrics` reports of the cache.
#[derive(Default)]
struct Counters {
    hits: AtomicU64,
    misses: AtomicU64,
    loads: AtomicU64,
    failed_loads: AtomicU64,
    loads_in_flight: AtomicI64,
    evictions: AtomicU64,
    not_kept: AtomicU64,
}

/// Decrements the loads-in-flight gauge however the load ends (even when cancelled).
struct InFlight<'a>(&'a AtomicI64);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Least-recently-used cache of decoded models, topic and graph alike, bounded in bytes.
pub struct ModelCache {
    budget: usize,
    kept: Mutex<Kept>,
    counters: Counters,
    /// The current listening epoch: nonzero while model events arrive (a new value each
    /// time the listener starts), 0 while they do not.
    epoch: AtomicU64,
    next_epoch: AtomicU64,
    /// Events applied so far: a load that saw one arrive is checked at its next hit.
    events: AtomicU64,
}

impl ModelCache {
    /// A cache holding at most `budget` bytes of decoded models and their pages.
    pub fn new(budget: usize) -> Self {
        ModelCache {
            budget,
            kept: Mutex::new(Kept::default()),
            counters: Counters::default(),
            epoch: AtomicU64::new(0),
            next_epoch: AtomicU64::new(1),
            events: AtomicU64::new(0),
        }
    }

    /// The byte budget.
    pub fn budget(&self) -> usize {
        self.budget
    }

    /// Apply model events announced on a shared store, until the process ends; nothing
    /// on SQLite. A lost listener is started again after a second.
    pub async fn follow(self: Arc<Self>, store: Store) {
        loop {
            match store.model_events().await {
                Ok(None) => return,
                Ok(Some(mut events)) => {
                    self.epoch.store(self.next_epoch.fetch_add(1, Ordering::SeqCst), Ordering::SeqCst);
                    loop {
                        match events.next().await {
                            Ok(Heard::Event(event)) => self.apply(event),
                            Ok(Heard::Unknown) => {}
                            Ok(Heard::Lost) | Err(_) => break,
                        }
                    }
                    self.epoch.store(0, Ordering::SeqCst);
                    tracing::warn!("lost the model-change listener; checking cached models against the store until it is back");
                }
                Err(e) => {
                    self.epoch.store(0, Ordering::SeqCst);
                    tracing::warn!(error = %e, "could not listen for model changes; trying again in 1 s");
                }
            }
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        }
    }

    fn apply(&self, event: ModelEvent) {
        self.events.fetch_add(1, Ordering::SeqCst);
        match event {
            ModelEvent::Deleted(id) => self.forget(&id),
            ModelEvent::Renamed(id) => {
                let kept = self.kept.lock().expect("cache lock");
                let entry = kept.slots.get(&id).map(|s| s.entry.clone()).or_else(|| kept.alive.get(&id).and_then(WeakEntry::upgrade));
                if let Some(Entry::Topics(m)) = entry {
                    m.topic_pages.names_changed();
                }
            }
        }
    }

    /// The decoded topic model, from the cache or the store; a 409 naming `model` for a
    /// graph model.
    pub async fn get(&self, store: &Store, id: &str) -> CacheResult<Arc<LoadedModel>> {
        match self.entry(store, id).await? {
            Entry::Topics(m) => Ok(m),
            Entry::Communities(m) => Err(ModelCacheError::NotTopics { family: m.row.family_name().to_string(), id: id.to_string() }),
        }
    }

    /// The decoded graph model, from the cache or the store; a 409 naming `model` for a
    /// topic model.
    pub async fn get_communities(&self, store: &Store, id: &str) -> CacheResult<Arc<LoadedCommunities>> {
        match self.entry(store, id).await? {
            Entry::Communities(m) => Ok(m),
            Entry::Topics(m) => Err(ModelCacheError::NotCommunities { family: m.row.family_name().to_string() }),
        }
    }

    async fn entry(&self, store: &Store, id: &str) -> CacheResult<Entry> {
        let epoch = self.epoch.load(Ordering::SeqCst);
        let (entry, checked) = self.get_or_load(id, epoch, || load(store, id)).await?;
        if !store.is_shared() || (epoch != 0 && checked == epoch) {
            return Ok(entry);
        }
        let Some(generation) = store.model_names_generation(id).await? else {
            self.forget(id);
            return Err(ModelCacheError::NotFound(id.to_string()));
        };
        if let Entry::Topics(m) = &entry {
            if m.names_generation.swap(generation, Ordering::SeqCst) != generation {
                m.topic_pages.names_changed();
            }
        }
        if let Some(slot) = self.kept.lock().expect("cache lock").slots.get_mut(id) {
            slot.checked = epoch;
        }
        Ok(entry)
    }

    /// The entry for `id` with the epoch it was last checked in: kept, alive, or loaded
    /// by `loader` once for every request that asks while it runs. An entry just loaded
    /// counts as checked in `epoch` unless a model event arrived while it loaded (it may
    /// be about this one).
    async fn get_or_load<F, Fut>(&self, id: &str, epoch: u64, loader: F) -> CacheResult<(Entry, u64)>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = CacheResult<Entry>>,
    {
        let load = {
            let mut kept = self.kept.lock().expect("cache lock");
            if let Some(found) = self.hit(&mut kept, id) {
                self.counters.hits.fetch_add(1, Ordering::Relaxed);
                return Ok(found);
            }
            kept.loading.entry(id.to_string()).or_default().clone()
        };
        self.counters.misses.fetch_add(1, Ordering::Relaxed);
        let this_load = load.clone();
        let result = load
            .get_or_init(move || async move {
                self.counters.loads.fetch_add(1, Ordering::Relaxed);
                self.counters.loads_in_flight.fetch_add(1, Ordering::SeqCst);
                let _in_flight = InFlight(&self.counters.loads_in_flight);
                let events_before = self.events.load(Ordering::SeqCst);
                let loaded = loader().await;
                let mut kept = self.kept.lock().expect("cache lock");
                if kept.loading.get(id).is_some_and(|l| Arc::ptr_eq(l, &this_load)) {
                    kept.loading.remove(id);
                }
                match &loaded {
                    Ok(entry) => {
                        let checked = if self.events.load(Ordering::SeqCst) == events_before { epoch } else { 0 };
                        self.keep(&mut kept, id, entry.clone(), checked);
                    }
                    Err(_) => {
                        self.counters.failed_loads.fetch_add(1, Ordering::Relaxed);
                    }
                }
                loaded
            })
            .await;
        let entry = result.clone()?;
        // Waiters other than the loader see it as checked only if the loader kept it so.
        let checked = self.kept.lock().expect("cache lock").slots.get(id).map_or(0, |s| s.checked);
        Ok((entry, checked))
    }

    /// A kept or still-alive entry for `id`, marked as used now; a kept one is measured
    /// again if its last measure is old, and the budget enforced.
    fn hit(&self, kept: &mut Kept, id: &str) -> Option<(Entry, u64)> {
        kept.tick += 1;
        let tick = kept.tick;
        if let Some(slot) = kept.slots.get_mut(id) {
            slot.tick = tick;
            let found = (slot.entry.clone(), slot.checked);
            if slot.measured.elapsed() >= REMEASURE_EVERY {
                let before = slot.bytes;
                slot.bytes = slot.entry.memory_bytes();
                slot.measured = Instant::now();
                let after = slot.bytes;
                kept.held = kept.held - before + after;
                self.enforce_budget(kept, id);
            }
            return Some(found);
        }
        let alive = kept.alive.get(id).and_then(WeakEntry::upgrade);
        if alive.is_none() {
            kept.alive.remove(id);
        }
        alive.map(|entry| (entry, 0))
    }

    /// Keep a just-loaded entry, or only remember it weakly when it is larger than the
    /// whole budget.
    fn keep(&self, kept: &mut Kept, id: &str, entry: Entry, checked: u64) {
        kept.alive.retain(|_, weak| weak.upgrade().is_some());
        let bytes = entry.memory_bytes();
        if bytes > self.budget {
            // Checked before inserting, so an oversized model pushes out no other one.
            self.not_kept(kept, id, &entry, bytes);
            return;
        }
        kept.tick += 1;
        let tick = kept.tick;
        if let Some(old) = kept.slots.insert(id.to_string(), Slot { tick, entry, checked, bytes, measured: Instant::now() }) {
            kept.held -= old.bytes;
        }
        kept.held += bytes;
        kept.alive.remove(id);
        self.enforce_budget(kept, id);
    }

    /// Push out the least recently used models until the kept bytes fit the budget,
    /// `current` last (it is in use): if it alone exceeds the budget it is not kept.
    fn enforce_budget(&self, kept: &mut Kept, current: &str) {
        while kept.held > self.budget {
            let oldest = kept.slots.iter().filter(|(k, _)| k.as_str() != current).min_by_key(|(_, slot)| slot.tick).map(|(k, _)| k.clone());
            let victim = oldest.unwrap_or_else(|| current.to_string());
            let Some(slot) = kept.slots.remove(&victim) else { return };
            kept.held -= slot.bytes;
            if victim == current {
                self.not_kept(kept, current, &slot.entry, slot.bytes);
            } else {
                self.counters.evictions.fetch_add(1, Ordering::Relaxed);
                kept.alive.insert(victim, slot.entry.downgrade());
            }
        }
    }

    /// A model larger than the whole budget (alone, or with its pages): remembered only
    /// weakly, so the requests using it share it, and said so.
    fn not_kept(&self, kept: &mut Kept, id: &str, entry: &Entry, bytes: usize) {
        self.counters.not_kept.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(
            model = id,
            mb = bytes as f64 / 1048576.0,
            budget_mb = self.budget as f64 / 1048576.0,
            "the model (with its pages) is larger than the model cache (--model-cache-mb): served to the requests that use it without being kept"
        );
        kept.alive.insert(id.to_string(), entry.downgrade());
    }

    pub fn forget(&self, id: &str) {
        let mut kept = self.kept.lock().expect("cache lock");
        if let Some(slot) = kept.slots.remove(id) {
            kept.held -= slot.bytes;
        }
        kept.alive.remove(id);
    }

    /// Bytes of the models kept now (as last measured).
    pub fn held_bytes(&self) -> usize {
        self.kept.lock().expect("cache lock").held
    }

    /// The cache's series in Prometheus' text format.
    pub fn render(&self, out: &mut String) {
        let c = &self.counters;
        let (held, models) = {
            let kept = self.kept.lock().expect("cache lock");
            (kept.held, kept.slots.len())
        };
        let series: [(&str, &str, &str, i128); 9] = [
            ("topicd_model_cache_hits_total", "counter", "Model reads answered by a model already decoded.", c.hits.load(Ordering::Relaxed).into()),
            (
                "topicd_model_cache_misses_total",
                "counter",
                "Model reads that waited on a load (their own or one under way).",
                c.misses.load(Ordering::Relaxed).into(),
            ),
            ("topicd_model_cache_loads_total", "counter", "Models decoded from the store.", c.loads.load(Ordering::Relaxed).into()),
            (
                "topicd_model_cache_failed_loads_total",
                "counter",
                "Loads that failed (answered to every waiter, not kept).",
                c.failed_loads.load(Ordering::Relaxed).into(),
            ),
            ("topicd_model_cache_loads_in_flight", "gauge", "Loads under way.", c.loads_in_flight.load(Ordering::SeqCst).into()),
            ("topicd_model_cache_evictions_total", "counter", "Models pushed out to stay within the budget.", c.evictions.load(Ordering::Relaxed).into()),
            (
                "topicd_model_cache_not_kept_total",
                "counter",
                "Models served without being kept because they alone exceed the budget.",
                c.not_kept.load(Ordering::Relaxed).into(),
            ),
            ("topicd_model_cache_bytes", "gauge", "Bytes of the decoded models and pages kept, as last measured.", held as i128),
            ("topicd_model_cache_models", "gauge", "Models kept.", models as i128),
        ];
        for (name, kind, help, value) in series {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}");
        }
        let _ = writeln!(out, "# HELP topicd_model_cache_budget_bytes The cache's budget (--model-cache-mb).\n# TYPE topicd_model_cache_budget_bytes gauge\ntopicd_model_cache_budget_bytes {}", self.budget);
    }
}

/// Read a model and decode it on a blocking thread.
async fn load(store: &Store, id: &str) -> CacheResult<Entry> {
    // Read before the names are, so a rename in between shows as a newer generation.
    let generation = if store.is_shared() { store.model_names_generation(id).await?.unwrap_or(-1) } else { -1 };
    let not_found = || ModelCacheError::NotFound(id.to_string());
    let row = store.get_model(id).await?.ok_or_else(not_found)?;
    let (family, lexicon, data) = store.model_blobs(id).await?.ok_or_else(not_found)?;
    let unreadable = |why: String| ModelCacheError::Unreadable { id: id.to_string(), why };
    let decoded = tokio::task::spawn_blocking(move || -> Result<Entry, String> {
        let fam = family.map_err(|unknown| format!("unknown family {}", unknown.name))?.family();
        Ok(match fam.decode(&data).map_err(|e| e.to_string())? {
            Fitted::Topics(model) => {
                let lexicon = lexicon.ok_or("a topic model without its lexicon")?;
                let lexicon: Lexicon = postcard::from_bytes(&lexicon).map_err(|e| format!("its lexicon: {e}"))?;
                let pipeline = lexicon.pipeline();
                Entry::Topics(Arc::new(LoadedModel {
                    row,
                    model,
                    lexicon,
                    pipeline,
                    topic_map: OnceLock::new(),
                    document_topics: OnceLock::new(),
                    ranked_tables: Default::default(),
                    topic_pages: TopicPages::default(),
                    names_generation: AtomicI64::new(generation),
                }))
            }
            Fitted::Communities(model) => Entry::Communities(Arc::new(LoadedCommunities { row, model })),
        })
    })
    .await
    .map_err(|e| unreadable(format!("the decoding thread: {e}")))?;
    decoded.map_err(unreadable)
}

#[cfg(test)]
#[path = "model_cache_tests.rs"]
mod tests;
