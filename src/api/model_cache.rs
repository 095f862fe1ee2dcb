//! Decoded models kept in memory between requests.
//!
//! Why it exists: a stored model is a blob of posterior means (megabytes for K = 100 on
//! a real vocabulary); decoding it for every topics or predict request would dominate
//! their cost. A small cache keeps the most recently used models decoded.
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
use crate::models::registry::{self, Fitted};
use crate::models::{Comparison, TableOptions, TopicModel};
use crate::store::model_events::{Heard, ModelEvent};
use crate::store::{ModelRow, Store};
use crate::summaries::topic_map::TopicMap;
use crate::summaries::RankedTable;
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use super::error::{ApiError, ApiResult};
use super::topic_documents::RankedDocuments;
use super::topic_pages::TopicPages;

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
}

/// A graph model ready to report its communities.
pub struct LoadedCommunities {
    pub row: ModelRow,
    pub model: Box<dyn CommunityModel>,
}

/// A cached model of either kind.
#[derive(Clone)]
enum Entry {
    Topics(Arc<LoadedModel>),
    Communities(Arc<LoadedCommunities>),
}

/// A cached model, the use count at its last use, and the listening epoch it was last
/// checked against the store in (0: never).
struct Slot {
    tick: u64,
    entry: Entry,
    checked: u64,
}

/// The use counter, and the cached models by id.
type Entries = (u64, HashMap<String, Slot>);

/// Least-recently-used cache of decoded models, topic and graph alike.
pub struct ModelCache {
    capacity: usize,
    entries: Mutex<Entries>,
    /// The current listening epoch: nonzero while model events arrive (a new value each
    /// time the listener starts), 0 while they do not.
    epoch: AtomicU64,
    next_epoch: AtomicU64,
    /// Events applied so far: a load that saw one arrive is checked at its next hit.
    events: AtomicU64,
}

impl ModelCache {
    pub fn new(capacity: usize) -> Self {
        ModelCache {
            capacity: capacity.max(1),
            entries: Mutex::new((0, HashMap::new())),
            epoch: AtomicU64::new(0),
            next_epoch: AtomicU64::new(1),
            events: AtomicU64::new(0),
        }
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
                if let Some(Slot { entry: Entry::Topics(m), .. }) = self.entries.lock().expect("cache lock").1.get(&id) {
                    m.topic_pages.names_changed();
                }
            }
        }
    }

    /// The decoded topic model, from the cache or the store; a 409 naming `model` for a
    /// graph model.
    pub async fn get(&self, store: &Store, id: &str) -> ApiResult<Arc<LoadedModel>> {
        match self.entry(store, id).await? {
            Entry::Topics(m) => Ok(m),
            Entry::Communities(m) => Err(ApiError::not_offered(format!(
                "{} models describe communities of a graph (see /v1/models/{id}/communities); they have no topics",
                m.row.family
            ))),
        }
    }

    /// The decoded graph model, from the cache or the store; a 409 naming `model` for a
    /// topic model.
    pub async fn get_communities(&self, store: &Store, id: &str) -> ApiResult<Arc<LoadedCommunities>> {
        match self.entry(store, id).await? {
            Entry::Communities(m) => Ok(m),
            Entry::Topics(m) => Err(ApiError::not_offered(format!("{} models describe topics of a corpus, not communities of a graph", m.row.family))),
        }
    }

    async fn entry(&self, store: &Store, id: &str) -> ApiResult<Entry> {
        let epoch = self.epoch.load(Ordering::SeqCst);
        let hit = {
            let mut guard = self.entries.lock().expect("cache lock");
            guard.0 += 1;
            let tick = guard.0;
            guard.1.get_mut(id).map(|slot| {
                slot.tick = tick;
                (slot.entry.clone(), slot.checked)
            })
        };
        if let Some((entry, checked)) = hit {
            if !store.is_shared() || (epoch != 0 && checked == epoch) {
                return Ok(entry);
            }
            let Some(generation) = store.model_names_generation(id).await? else {
                self.forget(id);
                return Err(ApiError::not_found("model", id));
            };
            if let Entry::Topics(m) = &entry {
                if m.names_generation.swap(generation, Ordering::SeqCst) != generation {
                    m.topic_pages.names_changed();
                }
            }
            if let Some(slot) = self.entries.lock().expect("cache lock").1.get_mut(id) {
                slot.checked = epoch;
            }
            return Ok(entry);
        }
        let events_before = self.events.load(Ordering::SeqCst);
        // Read before the names are, so a rename in between shows as a newer generation.
        let generation = if store.is_shared() { store.model_names_generation(id).await?.unwrap_or(-1) } else { -1 };
        let row = store.get_model(id).await?.ok_or_else(|| ApiError::not_found("model", id))?;
        let (family, lexicon, data) = store.model_blobs(id).await?.ok_or_else(|| ApiError::not_found("model", id))?;
        let entry = tokio::task::spawn_blocking(move || -> ApiResult<Entry> {
            let fam = registry::lookup(&family).ok_or_else(|| ApiError::internal(format!("stored model has unknown family {family}")))?;
            Ok(match fam.decode(&data).map_err(ApiError::internal)? {
                Fitted::Topics(model) => {
                    let lexicon = lexicon.ok_or_else(|| ApiError::internal("stored topic model has no lexicon"))?;
                    let lexicon: Lexicon = postcard::from_bytes(&lexicon).map_err(ApiError::internal)?;
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
        .map_err(ApiError::internal)??;
        let mut guard = self.entries.lock().expect("cache lock");
        guard.0 += 1;
        let tick = guard.0;
        if guard.1.len() >= self.capacity {
            if let Some(oldest) = guard.1.iter().min_by_key(|(_, slot)| slot.tick).map(|(k, _)| k.clone()) {
                guard.1.remove(&oldest);
            }
        }
        // Checked now, unless an event arrived while it loaded (it may be about this one).
        let checked = if self.events.load(Ordering::SeqCst) == events_before { epoch } else { 0 };
        guard.1.insert(id.to_string(), Slot { tick, entry: entry.clone(), checked });
        Ok(entry)
    }

    pub fn forget(&self, id: &str) {
        self.entries.lock().expect("cache lock").1.remove(id);
    }
}
