//! Operational endpoints: liveness, readiness, metrics, the OpenAPI document, and the
//! problem+json answers for unknown routes.

use super::error::ApiError;
use super::AppState;
use crate::models::{registry, FailureKind};
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use std::fmt::Write;
use std::sync::OnceLock;

/// The OpenAPI document, compiled in from `openapi/openapi.yaml`.
pub const OPENAPI_YAML: &str = include_str!("../../openapi/openapi.yaml");

/// The spec as JSON (built once): the file, with each component schema's property
/// order and what the registry says ([`add_families`]).
pub fn openapi_value() -> &'static Value {
    static SPEC: OnceLock<Value> = OnceLock::new();
    SPEC.get_or_init(|| {
        let mut spec: Value = serde_yaml::from_str(OPENAPI_YAML).expect("openapi/openapi.yaml is valid YAML (checked by tests)");
        add_property_order(&mut spec);
        add_families(&mut spec);
        spec
    })
}

/// What the file leaves to the registry, so that it cannot drift from the families:
/// each family's params schema (generated from its parser,
/// [`registry::params_components`]) under its component name with `x-families`, and
/// each property the file marks `x-registry`: `names` gets the registered families'
/// names as its `enum` (the job request's `model`), `params` becomes one of the params
/// schemas or null (the job request's `params`); and the job's runner options
/// (`JobOptions`, generated from their parser the same way).
pub fn add_families(spec: &mut Value) {
    let components = registry::params_components();
    let mut one_of: Vec<Value> = components.iter().map(|c| json!({"$ref": format!("#/components/schemas/{}", c.component)})).collect();
    one_of.push(json!({"type": "null"}));
    let Some(schemas) = spec.pointer_mut("/components/schemas").and_then(Value::as_object_mut) else { return };
    for schema in schemas.values_mut() {
        for property in schema.get_mut("properties").and_then(Value::as_object_mut).into_iter().flat_map(|p| p.values_mut()) {
            let Some(object) = property.as_object_mut() else { continue };
            match object.remove("x-registry").as_ref().and_then(Value::as_str) {
                Some("names") => {
                    object.insert("enum".into(), json!(registry::names()));
                }
                Some("params") => {
                    object.remove("type");
                    object.insert("oneOf".into(), Value::Array(one_of.clone()));
                }
                _ => {}
            }
        }
    }
    for c in components {
        schemas.insert(c.component, c.schema);
    }
    let options = crate::models::options::options_schema();
    schemas.insert(options.component, options.schema);
}

/// Give every component schema with properties an `x-property-order`: the order the
/// spec lists them in (the JSON form sorts object keys), so a generated form shows the
/// important parameters first, as the spec does.
fn add_property_order(spec: &mut Value) {
    let yaml: serde_yaml::Value = serde_yaml::from_str(OPENAPI_YAML).expect("openapi/openapi.yaml is valid YAML (checked by tests)");
    let Some(schemas) = yaml.get("components").and_then(|c| c.get("schemas")).and_then(|s| s.as_mapping()) else { return };
    for (name, schema) in schemas {
        let (Some(name), Some(properties)) = (name.as_str(), schema.get("properties").and_then(|p| p.as_mapping())) else { continue };
        let order: Vec<Value> = properties.keys().filter_map(|k| k.as_str()).map(|k| Value::String(k.to_string())).collect();
        if let Some(target) = spec.pointer_mut(&format!("/components/schemas/{name}")).and_then(Value::as_object_mut) {
            target.insert("x-property-order".into(), Value::Array(order));
        }
    }
}

/// `GET /healthz`: the process answers.
pub async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

/// `GET /readyz`: the database answers.
pub async fn readyz(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    state.store.ping().await.map_err(|e| ApiError::unavailable(format!("database not ready: {e}")))?;
    Ok(Json(json!({"status": "ready", "running_jobs": state.runner.running_jobs()})))
}

/// `GET /metrics`: Prometheus text format.
pub async fn metrics(State(state): State<AppState>) -> Result<Response, ApiError> {
    let mut out = String::new();
    out.push_str("# HELP topicd_jobs Jobs by status.\n# TYPE topicd_jobs gauge\n");
    for (status, n) in state.store.count_jobs_by_status().await? {
        let _ = writeln!(out, "topicd_jobs{{status=\"{}\"}} {n}", status.as_str());
    }
    out.push_str("# HELP topicd_jobs_failed Failed jobs by the class of their failure.\n# TYPE topicd_jobs_failed gauge\n");
    let failed = state.store.count_failed_jobs_by_class().await?;
    for kind in FailureKind::ALL {
        let n = failed.iter().find(|(k, _)| k == kind.as_str()).map_or(0, |(_, n)| *n);
        let _ = writeln!(out, "topicd_jobs_failed{{kind=\"{}\"}} {n}", kind.as_str());
    }
    out.push_str("# HELP topicd_fit_iterations_total Sweeps completed by fits in this process.\n# TYPE topicd_fit_iterations_total counter\n");
    let _ = writeln!(out, "topicd_fit_iterations_total {}", state.runner.fit_iterations());
    out.push_str("# HELP topicd_running_jobs Fits running in this process.\n# TYPE topicd_running_jobs gauge\n");
    let _ = writeln!(out, "topicd_running_jobs {}", state.runner.running_jobs());
    state.models.render(&mut out);
    state.metrics.render(&mut out);
    Ok(([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], out).into_response())
}

/// `GET /openapi.json`.
pub async fn openapi() -> Json<Value> {
    Json(openapi_value().clone())
}

pub async fn not_found(uri: axum::http::Uri) -> ApiError {
    let mut e = ApiError::not_found("route", uri.path());
    e.detail = format!("no route {}", uri.path());
    e
}

pub async fn method_not_allowed() -> ApiError {
    let mut e = ApiError::bad_request("this route does not accept that method");
    e.status = StatusCode::METHOD_NOT_ALLOWED;
    e.slug = "method-not-allowed";
    e.title = "Method not allowed";
    e
}
