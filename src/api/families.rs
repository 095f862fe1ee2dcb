//! `GET /v1/families`: the model families this server fits, each with its input
//! (corpus or graph), the capabilities of its fitted models and the JSON Schema of its
//! parameters, read from the registry and the compiled-in OpenAPI document so that a
//! client (or the console's fit form) never hard-codes which family offers or takes what.
//!
//! A params schema in `openapi/openapi.yaml` says which families it describes with an
//! `x-families` list; a test checks that every registered family has exactly one.
//! [`require_capability`] is the same declaration read by the handlers of the optional
//! endpoints: a 409 naming `model` and the families that offer it.

use super::error::{ApiError, ApiResult};
use super::ops::openapi_value;
use crate::models::capabilities::Capabilities;
use crate::models::registry;
use axum::Json;
use serde_json::{json, Value};

/// The params schema whose `x-families` names `family` (without the extension key).
pub fn params_schema(family: &str) -> Option<Value> {
    let schemas = openapi_value()["components"]["schemas"].as_object()?;
    let schema = schemas.values().find(|s| s["x-families"].as_array().is_some_and(|f| f.iter().any(|n| n == family)))?;
    let mut schema = schema.clone();
    schema.as_object_mut()?.remove("x-families");
    Some(schema)
}

/// `GET /v1/families`.
pub async fn list() -> Json<Value> {
    let families: Vec<Value> = registry::capabilities()
        .into_iter()
        .map(|(name, c)| json!({"name": name, "capabilities": c, "params_schema": params_schema(name).unwrap_or_else(|| json!({"type": "object"}))}))
        .collect();
    Json(json!({ "families": families }))
}

/// A 409 naming `model` unless the model's family declares `capability` (`what` names
/// it in the message, with the families that have it).
pub(super) fn require_capability(family: &str, capability: fn(&Capabilities) -> bool, what: &str) -> ApiResult<()> {
    let declared = registry::lookup(family).map(|f| f.capabilities()).ok_or_else(|| ApiError::internal(format!("stored model has unknown family {family}")))?;
    if capability(&declared) {
        Ok(())
    } else {
        Err(ApiError::not_offered(format!("{family} models have no {what} (offered by {})", registry::families_with(capability))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::registry;

    #[test]
    fn every_family_has_exactly_one_params_schema() {
        let schemas = openapi_value()["components"]["schemas"].as_object().unwrap();
        for name in registry::names() {
            let claiming: Vec<&String> =
                schemas.iter().filter(|(_, s)| s["x-families"].as_array().is_some_and(|f| f.iter().any(|n| n == name))).map(|(k, _)| k).collect();
            assert_eq!(claiming.len(), 1, "{name}: params schemas claiming it: {claiming:?}");
            let schema = params_schema(name).unwrap();
            assert_eq!(schema["type"], "object");
            assert!(schema["properties"].as_object().is_some_and(|p| !p.is_empty()), "{name}");
            assert!(schema.get("x-families").is_none());
            // The form's order is the spec's: every property once.
            let mut order: Vec<&str> = schema["x-property-order"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
            order.sort_unstable();
            let mut properties: Vec<&str> = schema["properties"].as_object().unwrap().keys().map(String::as_str).collect();
            properties.sort_unstable();
            assert_eq!(order, properties, "{name}");
        }
    }
}
