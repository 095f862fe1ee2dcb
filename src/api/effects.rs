//! `GET /v1/models/{id}/effects`: how a model's topics move with a covariate.
//!
//! Why it exists: the question users of R's stm ask first after a fit
//! (`estimateEffect`). The handler reads the query, checks that the model's family
//! offers effects, and runs the model's estimator ([`crate::models::effects`]) on the
//! prediction pool; the numerics live in the model. Along a continuous covariate it
//! adds `support`, where the training corpus' documents with the held-at levels lie
//! ([`crate::corpus::covariate_support`]), so a reader sees where a curve extrapolates.

use super::coherence::training_corpus;
use super::error::{ApiError, ApiResult};
use super::extract::{from_str, parse_query};
use super::model_cache::LoadedModel;
use super::AppState;
use crate::corpus::covariate_support::ValueSupport;
use crate::models::effects::{ChainPooling, EffectQuery, MAX_GRID};
use crate::models::stability::TopicStability;
use crate::models::ModelError;
use axum::extract::{Path, RawQuery, State};
use axum::Json;
use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EffectsParams {
    covariate: Option<String>,
    #[serde(default, deserialize_with = "from_str::opt")]
    grid: Option<usize>,
    contrast: Option<String>,
    #[serde(default, deserialize_with = "from_str::opt")]
    level: Option<f64>,
    topics: Option<String>,
    #[serde(default, deserialize_with = "from_str::opt")]
    seed: Option<u64>,
    chains: Option<String>,
}

/// `GET /v1/models/{id}/effects?covariate=&grid=&contrast=A,B&level=&topics=0,3&seed=&chains=all|matched`.
pub async fn effects(State(state): State<AppState>, Path(id): Path<String>, RawQuery(q): RawQuery) -> ApiResult<Json<Value>> {
    let params: EffectsParams = parse_query(q.as_deref())?;
    let query = effect_query(params)?;
    let m = state.models.get(&state.store, &id).await?;
    super::families::require_capability(m.row.family_name(), |c| c.effects, "covariate effects")?;
    let _turn = state.pool_turn().await?;
    let (m2, pool) = (m.clone(), state.predict_pool.clone());
    let answer = tokio::task::spawn_blocking(move || pool.install(|| m2.model.effects(&query))).await.map_err(ApiError::internal)?;
    let effects = match answer {
        Ok(Some(e)) => e,
        Ok(None) => return Err(ApiError::internal(format!("{} declares effects but its model has none", m.row.family_name()))),
        Err(ModelError::Invalid(message)) => return Err(query_error(&message)),
        Err(ModelError::NotOffered(message)) => return Err(ApiError::not_offered(message)),
        Err(e) => return Err(ApiError::internal(e)),
    };
    let support = if effects.kind == "categorical" { None } else { support(&state, &m, &effects.covariate, &effects.held_at).await };
    let mut body = serde_json::to_value(effects).map_err(ApiError::internal)?;
    body["model_id"] = Value::String(id);
    mark_stability(&mut body, m.model.topic_stability().as_deref());
    if let Some(s) = support {
        body["support"] = serde_json::to_value(s).map_err(ApiError::internal)?;
    }
    Ok(Json(body))
}

/// Each topic's `stability` across the fit's chains (null for one chain), and, when
/// some topic is not matched in every chain, `unstable_topics` listing them: their
/// curves pool chains that found different topics.
fn mark_stability(body: &mut Value, stability: Option<&[TopicStability]>) {
    let mut unstable = Vec::new();
    for topic in body["topics"].as_array_mut().into_iter().flatten() {
        let s = topic["id"].as_u64().and_then(|k| stability.and_then(|s| s.get(k as usize)));
        if s.is_some_and(|s| !s.in_every_chain()) {
            unstable.push(topic["id"].clone());
        }
        topic["stability"] = serde_json::to_value(s).unwrap_or(Value::Null);
    }
    if !unstable.is_empty() {
        body["unstable_topics"] = Value::Array(unstable);
    }
}

/// Where `covariate`'s values lie among the training corpus' documents that have the
/// levels the effect holds the categorical covariates at; `None` when the corpus is gone
/// or has no such document (the effects are still answered).
async fn support(state: &AppState, m: &LoadedModel, covariate: &str, held_at: &serde_json::Map<String, Value>) -> Option<ValueSupport> {
    let (_, corpus) = training_corpus(state, m, "the documents' range is read from it").await.ok()?;
    let held: Vec<(&str, &str)> = held_at.iter().filter_map(|(name, v)| Some((name.as_str(), v.as_str()?))).collect();
    corpus.covariates.as_ref()?.support(covariate, &held)
}

/// The query, checked for what needs no model (the model checks the rest).
fn effect_query(p: EffectsParams) -> ApiResult<EffectQuery> {
    let covariate = p.covariate.filter(|c| !c.is_empty()).ok_or_else(|| ApiError::invalid("query.covariate", "name the covariate whose effect to show"))?;
    let grid = p.grid.unwrap_or(25);
    if !(2..=MAX_GRID).contains(&grid) {
        return Err(ApiError::invalid("query.grid", format!("must be between 2 and {MAX_GRID}")));
    }
    let level = p.level.unwrap_or(0.95);
    if !(level > 0.0 && level < 1.0) {
        return Err(ApiError::invalid("query.level", "must be strictly between 0 and 1"));
    }
    let contrast = match p.contrast {
        None => None,
        Some(c) => match c.split_once(',') {
            Some((a, b)) if !a.is_empty() && !b.is_empty() && !b.contains(',') => Some((a.to_string(), b.to_string())),
            _ => return Err(ApiError::invalid("query.contrast", "give two levels or two values separated by a comma (contrast=A,B)")),
        },
    };
    let topics = match p.topics {
        None => None,
        Some(t) => Some(
            t.split(',')
                .map(|x| x.trim().parse::<usize>())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|_| ApiError::invalid("query.topics", "give topic ids separated by commas (topics=0,3)"))?,
        ),
    };
    let chains = match p.chains.as_deref() {
        Some("all") => ChainPooling::All,
        None | Some("matched") => ChainPooling::Matched,
        Some(other) => return Err(ApiError::invalid("query.chains", format!("must be `all` or `matched`, got `{other}`"))),
    };
    Ok(EffectQuery { covariate, grid, contrast, level, topics, seed: p.seed.unwrap_or(0), chains })
}

/// A model's refusal as a 422 naming the query parameter its message starts with
/// (`contrast: ...`), else the query as a whole.
fn query_error(message: &str) -> ApiError {
    let field = match message.split_once(':') {
        Some((name, _)) if ["covariate", "grid", "contrast", "level", "topics"].contains(&name) => format!("query.{name}"),
        _ => "query".to_string(),
    };
    ApiError::invalid(field, message)
}
