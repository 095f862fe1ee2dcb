//! Decoded models kept in memory between requests.
//!
//! Why it exists: a stored model is a blob of posterior means (megabytes for K = 100 on
//! a real vocabulary); decoding it for every topics or predict request would dominate
//! their cost. A small cache keeps the most recently used models decoded.

use crate::corpus::tokenize::TextPipeline;
use crate::corpus::Lexicon;
use crate::models::{self, TopicModel};
use crate::store::{ModelRow, Store};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::error::{ApiError, ApiResult};

/// A model ready to answer questions.
pub struct LoadedModel {
    pub row: ModelRow,
    pub model: Box<dyn TopicModel>,
    pub lexicon: Lexicon,
    pub pipeline: TextPipeline,
}

/// The use counter, and by id each cached model with the count at its last use.
type Entries = (u64, HashMap<String, (u64, Arc<LoadedModel>)>);

/// Least-recently-used cache of decoded models.
pub struct ModelCache {
    capacity: usize,
    entries: Mutex<Entries>,
}

impl ModelCache {
    pub fn new(capacity: usize) -> Self {
        ModelCache { capacity: capacity.max(1), entries: Mutex::new((0, HashMap::new())) }
    }

    /// The decoded model, from the cache or the store.
    pub async fn get(&self, store: &Store, id: &str) -> ApiResult<Arc<LoadedModel>> {
        {
            let mut guard = self.entries.lock().expect("cache lock");
            guard.0 += 1;
            let tick = guard.0;
            if let Some(entry) = guard.1.get_mut(id) {
                entry.0 = tick;
                return Ok(entry.1.clone());
            }
        }
        let row = store.get_model(id).await?.ok_or_else(|| ApiError::not_found("model", id))?;
        if models::community::community_family(&row.family).is_some() {
            return Err(ApiError::invalid(
                "model",
                format!("{} models describe communities of a graph (see /v1/models/{id}/communities); they have no topics", row.family),
            ));
        }
        let (family, lexicon, data) = store.model_blobs(id).await?.ok_or_else(|| ApiError::not_found("model", id))?;
        let loaded = tokio::task::spawn_blocking(move || -> ApiResult<LoadedModel> {
            let fam = models::family(&family).ok_or_else(|| ApiError::internal(format!("stored model has unknown family {family}")))?;
            let model = fam.decode(&data).map_err(ApiError::internal)?;
            let lexicon = lexicon.ok_or_else(|| ApiError::internal("stored topic model has no lexicon"))?;
            let lexicon: Lexicon = postcard::from_bytes(&lexicon).map_err(ApiError::internal)?;
            let pipeline = lexicon.pipeline();
            Ok(LoadedModel { row, model, lexicon, pipeline })
        })
        .await
        .map_err(ApiError::internal)??;
        let loaded = Arc::new(loaded);
        let mut guard = self.entries.lock().expect("cache lock");
        guard.0 += 1;
        let tick = guard.0;
        if guard.1.len() >= self.capacity {
            if let Some(oldest) = guard.1.iter().min_by_key(|(_, (t, _))| *t).map(|(k, _)| k.clone()) {
                guard.1.remove(&oldest);
            }
        }
        guard.1.insert(id.to_string(), (tick, loaded.clone()));
        Ok(loaded)
    }

    pub fn forget(&self, id: &str) {
        self.entries.lock().expect("cache lock").1.remove(id);
    }
}
