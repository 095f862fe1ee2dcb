//! `/v1/graphs` (uploads of nodes and edges for relational models) and
//! `/v1/models/{id}/communities` (what a relational model learned).

use super::error::{ApiError, ApiResult};
use super::extract::{check_name, parse_json, parse_query, read_body, require_json, Page};
use super::AppState;
use crate::graph::build_graph;
use crate::store::{DeleteOutcome, GraphRow};
use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct GraphUpload {
    #[serde(default)]
    pub(crate) name: Option<String>,
    pub(crate) nodes: Vec<String>,
    #[serde(default)]
    pub(crate) edges: Vec<(String, String)>,
    #[serde(default)]
    pub(crate) directed: bool,
}

/// The wire form of a stored graph.
pub fn graph_json(r: &GraphRow) -> Value {
    json!({
        "id": r.id,
        "name": r.name,
        "created_at": r.created_at,
        "num_nodes": r.stats.num_nodes,
        "num_edges": r.stats.num_edges,
        "directed": r.stats.directed,
        "self_loops_dropped": r.stats.self_loops_dropped,
        "duplicate_edges_dropped": r.stats.duplicate_edges_dropped,
    })
}

/// `POST /v1/graphs` → 201 with `Location`.
pub async fn create(State(state): State<AppState>, headers: HeaderMap, body: Body) -> ApiResult<Response> {
    require_json(&headers)?;
    let bytes = read_body(body, state.max_body_bytes).await?;
    let upload: GraphUpload = parse_json(&bytes)?;
    if let Some(name) = &upload.name {
        check_name("name", name)?;
    }
    let directed = upload.directed;
    let (graph, stats) = tokio::task::spawn_blocking(move || build_graph(upload.nodes, &upload.edges, directed))
        .await
        .map_err(ApiError::internal)?
        .map_err(|e| ApiError::invalid(e.field, e.message))?;
    let id = uuid::Uuid::new_v4().to_string();
    let name = upload.name.filter(|n| !n.trim().is_empty()).unwrap_or_else(|| format!("graph-{}", &id[..8]));
    let row = state.store.insert_graph(&id, &name, &stats, graph.encode()).await?;
    tracing::info!(graph_id = %row.id, nodes = stats.num_nodes, edges = stats.num_edges, "graph stored");
    let location = format!("/v1/graphs/{id}");
    Ok((StatusCode::CREATED, [(header::LOCATION, location)], Json(graph_json(&row))).into_response())
}

/// `GET /v1/graphs?offset=&limit=`.
pub async fn list(State(state): State<AppState>, RawQuery(q): RawQuery) -> ApiResult<Json<Value>> {
    let page: Page = parse_query(q.as_deref())?;
    if page.status.is_some() {
        return Err(ApiError::invalid("query.status", "graphs have no status"));
    }
    let (offset, limit) = page.bounds()?;
    let (rows, total) = state.store.list_graphs(offset, limit).await?;
    Ok(Json(json!({"graphs": rows.iter().map(graph_json).collect::<Vec<_>>(), "total": total, "offset": offset, "limit": limit})))
}

/// `GET /v1/graphs/{id}`.
pub async fn get_one(State(state): State<AppState>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let row = state.store.get_graph(&id).await?.ok_or_else(|| ApiError::not_found("graph", &id))?;
    Ok(Json(graph_json(&row)))
}

/// `DELETE /v1/graphs/{id}`: 409 while a queued or running job uses it.
pub async fn delete(State(state): State<AppState>, Path(id): Path<String>) -> ApiResult<StatusCode> {
    match state.store.delete_graph(&id).await? {
        DeleteOutcome::Deleted => Ok(StatusCode::NO_CONTENT),
        DeleteOutcome::NotFound => Err(ApiError::not_found("graph", &id)),
        DeleteOutcome::InUse(jobs) => Err(ApiError::conflict(format!("graph {id} is used by job(s) {}; cancel them or wait", jobs.join(", ")))),
    }
}

/// `GET /v1/models/{id}/communities`: each node's membership and each community's
/// link probability and expected size.
pub async fn communities(State(state): State<AppState>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let loaded = state.models.get_communities(&state.store, &id).await?;
    let model = loaded.clone();
    let c = tokio::task::spawn_blocking(move || model.model.communities()).await.map_err(ApiError::internal)?;
    let row = &loaded.row;
    Ok(Json(json!({
        "model_id": id,
        "graph_id": row.graph_id,
        "nodes": c.nodes.iter().map(|n| json!({"node": n.node, "membership": n.membership})).collect::<Vec<_>>(),
        "communities": c.communities.iter().map(|k| json!({"id": k.id, "link_probability": k.link_probability, "size": k.size})).collect::<Vec<_>>(),
    })))
}
