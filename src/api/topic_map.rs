//! `GET /v1/models/{id}/topic-map`: the intertopic map (LDAvis) of a topic model.
//!
//! Why it exists: the console's intertopic map needs every topic's position, and the
//! numerics (Jensen–Shannon divergences over the vocabulary, classical scaling) belong on
//! the server, computed once per loaded model (kept beside it in the model cache), not in
//! a browser. The handler is thin: [`crate::summaries::topic_map`] does the work.

use super::error::{ApiError, ApiResult};
use super::AppState;
use crate::models::Comparison;
use crate::summaries::topic_map::topic_map;
use axum::extract::{Path, State};
use axum::Json;
use serde_json::{json, Value};

/// `GET /v1/models/{id}/topic-map`.
pub async fn get(State(state): State<AppState>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let m = state.models.get(&state.store, &id).await?;
    let names = m.topic_pages.names(&state.store, &id).await?.names;
    let _turn = state.pool_turn().await?;
    let (m2, pool) = (m.clone(), state.predict_pool.clone());
    let (topics, map) = tokio::task::spawn_blocking(move || {
        // The kept table, not a new one per request (K × V twice: 64 first requests at
        // once each built their own and held 1.8 GB on an AppStream HPC model).
        let ranked = m2.ranked_table(Comparison::Natural, &pool);
        let table = &ranked.table;
        let map = m2.topic_map.get_or_init(|| std::sync::Arc::new(pool.install(|| topic_map(&table.frequency)))).clone();
        let topics = table
            .topics
            .iter()
            .zip(&map.coordinates)
            .enumerate()
            .map(|(k, (t, c))| json!({"id": k, "label": t.label, "name": names.get(&k), "proportion": t.proportion, "x": c[0], "y": c[1]}))
            .collect::<Vec<Value>>();
        (topics, map)
    })
    .await
    .map_err(ApiError::internal)?;
    Ok(Json(json!({
        "model_id": id,
        "divergence": "jensen_shannon",
        "scaling": "classical",
        "explained": map.explained,
        "topics": topics,
    })))
}
