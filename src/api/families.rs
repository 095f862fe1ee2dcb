//! `GET /v1/families`: the model families this server fits, each with its input
//! (corpus or graph), the capabilities of its fitted models and the JSON Schema of its
//! parameters, read from the registry so that a client (or the console's fit form)
//! never hard-codes which family offers or takes what.
//!
//! A family's params schema is generated from its parser
//! ([`crate::models::registry::Family::params_schema`]): the keys it reads with their
//! types, bounds and defaults, the descriptions its `params.rs` keeps beside them, and
//! the runner options a job's params may carry. The OpenAPI document serves the same
//! schemas ([`super::ops::openapi_value`]).
//! [`require_capability`] is the same declaration read by the handlers of the optional
//! endpoints: a 409 naming `model` and the families that offer it.

use super::error::{ApiError, ApiResult};
use crate::models::capabilities::Capabilities;
use crate::models::registry;
use axum::Json;
use serde_json::{json, Value};
use std::sync::OnceLock;

/// The generated params schema of `family` (`None`: no such family).
pub fn params_schema(family: &str) -> Option<Value> {
    registry::lookup(family).map(|f| f.params_schema().schema)
}

/// `GET /v1/families`: built once (the registry and its generated schemas are fixed for
/// the life of the process), then served from memory.
pub async fn list() -> Json<Value> {
    static FAMILIES: OnceLock<Value> = OnceLock::new();
    Json(
        FAMILIES
            .get_or_init(|| {
                let families: Vec<Value> = registry::REGISTRY
                    .iter()
                    .map(|f| json!({"name": f.name(), "capabilities": f.capabilities(), "params_schema": f.params_schema().schema}))
                    .collect();
                json!({ "families": families })
            })
            .clone(),
    )
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

    /// Every family's schema is an object of the keys its parser reads, each described,
    /// in the doc's order (every property once in `x-property-order`).
    #[test]
    fn every_family_has_a_generated_params_schema() {
        for name in registry::names() {
            let schema = params_schema(name).unwrap();
            assert_eq!((schema["type"].as_str(), schema["additionalProperties"].as_bool()), (Some("object"), Some(false)), "{name}");
            assert!(schema["description"].as_str().is_some_and(|d| !d.is_empty()), "{name}: the schema is described");
            let properties = schema["properties"].as_object().unwrap();
            assert!(!properties.is_empty(), "{name}");
            for (key, p) in properties {
                assert!(p["description"].as_str().is_some_and(|d| !d.is_empty()), "{name}: params.{key} is described");
            }
            let mut order: Vec<&str> = schema["x-property-order"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
            order.sort_unstable();
            let mut keys: Vec<&str> = properties.keys().map(String::as_str).collect();
            keys.sort_unstable();
            assert_eq!(order, keys, "{name}");
        }
        assert!(params_schema("svm").is_none());
    }
}
