//! The OpenAPI document (`openapi/openapi.yaml`) against the router: the same routes,
//! every route answered by a handler (not the fallbacks), and `GET /openapi.json` serving
//! the file with the registry's families added (each family's params schema, generated
//! from its parser, and the job request's `model` and `params`); and those generated
//! schemas against the parsers (keys, bounds, defaults).

use serde_json::Value;
use std::collections::BTreeSet;
use topicd::models::options::{without_options, OPTION_KEYS};

const METHODS: &[&str] = &["get", "put", "post", "delete", "options", "head", "patch", "trace"];
const DUMMY_ID: &str = "00000000-0000-0000-0000-000000000000";

fn spec_from_file() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/openapi/openapi.yaml");
    let text = std::fs::read_to_string(path).expect("read openapi/openapi.yaml");
    serde_yaml::from_str::<Value>(&text).expect("openapi/openapi.yaml parses")
}

/// Every (method, path) operation under `paths`.
fn spec_routes(spec: &Value) -> BTreeSet<(String, String)> {
    let paths = spec["paths"].as_object().expect("`paths` is an object");
    let mut out = BTreeSet::new();
    for (path, item) in paths {
        let item = item.as_object().unwrap_or_else(|| panic!("path item {path} is an object"));
        for method in item.keys().filter(|k| METHODS.contains(&k.as_str())) {
            out.insert((method.clone(), path.clone()));
        }
    }
    out
}

fn router_routes() -> BTreeSet<(String, String)> {
    topicd::api::ROUTES.iter().map(|(m, p)| (m.to_string(), p.to_string())).collect()
}

fn show(set: &BTreeSet<&(String, String)>) -> String {
    if set.is_empty() {
        return "(none)".into();
    }
    set.iter().map(|(m, p)| format!("{} {p}", m.to_uppercase())).collect::<Vec<_>>().join(", ")
}

#[test]
fn spec_and_router_list_the_same_routes() {
    let spec: Value = serde_yaml::from_str(topicd::api::ops::OPENAPI_YAML).expect("OPENAPI_YAML parses as YAML");
    let in_spec = spec_routes(&spec);
    let in_router = router_routes();
    assert_eq!(in_router.len(), topicd::api::ROUTES.len(), "ROUTES has duplicate entries");
    let missing_from_spec: BTreeSet<_> = in_router.difference(&in_spec).collect();
    let missing_from_router: BTreeSet<_> = in_spec.difference(&in_router).collect();
    assert!(
        missing_from_spec.is_empty() && missing_from_router.is_empty(),
        "openapi.yaml and ROUTES disagree.\n  in ROUTES but not in openapi.yaml: {}\n  in openapi.yaml but not in ROUTES: {}",
        show(&missing_from_spec),
        show(&missing_from_router),
    );
}

/// `/v1/models/{id}/topics/{topic}/frex` → a concrete path with dummy ids.
fn concrete(path: &str) -> String {
    path.replace("{id}", DUMMY_ID).replace("{topic}", "0")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_is_served() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let config = topicd::config::ServeConfig::for_tests(dir.path().join("topicd.db"));
    let server = topicd::api::start(&config).await.expect("server starts");
    let base = format!("http://{}", server.addr);
    let client = reqwest::Client::new();

    let mut failures = Vec::new();
    for (method, path) in topicd::api::ROUTES {
        let url = format!("{base}{}", concrete(path));
        let request = match *method {
            "get" => client.get(&url),
            "delete" => client.delete(&url),
            "post" => client.post(&url).header("content-type", "application/json").body("{}"),
            "put" => client.put(&url).header("content-type", "application/json").body("{}"),
            "patch" => client.patch(&url).header("content-type", "application/json").body("{}"),
            other => panic!("ROUTES has a method this test does not know: {other}"),
        };
        let response = request.send().await.unwrap_or_else(|e| panic!("{method} {url}: {e}"));
        let status = response.status().as_u16();
        let content_type = response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
        let body = response.text().await.unwrap_or_default();
        let label = format!("{} {path}", method.to_uppercase());
        if status == 405 {
            failures.push(format!("{label}: 405 Method Not Allowed ({body})"));
            continue;
        }
        if status == 404 {
            if !content_type.starts_with("application/problem+json") {
                failures.push(format!("{label}: 404 with content type {content_type:?}, expected application/problem+json"));
                continue;
            }
            let problem: Value = match serde_json::from_str(&body) {
                Ok(v) => v,
                Err(e) => {
                    failures.push(format!("{label}: 404 body is not JSON ({e}): {body}"));
                    continue;
                }
            };
            let detail = problem["detail"].as_str().unwrap_or("");
            if detail.is_empty() || detail.starts_with("no route") {
                failures.push(format!("{label}: 404 from the router's fallback, not a handler: {body}"));
            }
        }
    }
    server.stop().await;
    assert!(failures.is_empty(), "routes not served by their handlers:\n  {}", failures.join("\n  "));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn served_spec_is_the_file_with_the_registrys_families() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let config = topicd::config::ServeConfig::for_tests(dir.path().join("topicd.db"));
    let server = topicd::api::start(&config).await.expect("server starts");
    let response = reqwest::get(format!("http://{}/openapi.json", server.addr)).await.expect("GET /openapi.json");
    let status = response.status().as_u16();
    let mut served: Value = response.json().await.expect("GET /openapi.json is JSON");
    server.stop().await;
    assert_eq!(status, 200);
    assert_eq!(&served, topicd::api::ops::openapi_value());
    let file = spec_from_file();
    let schemas = served["components"]["schemas"].as_object_mut().unwrap();
    // Each family's params schema, generated, under its component with `x-families`.
    let components = topicd::models::registry::params_components();
    for c in &components {
        assert!(file["components"]["schemas"].get(&c.component).is_none(), "{} is generated, not written in the file", c.component);
        assert_eq!(schemas.remove(&c.component).as_ref(), Some(&c.schema), "{}", c.component);
    }
    assert_eq!(components.iter().flat_map(|c| c.schema["x-families"].as_array().unwrap().clone()).count(), topicd::models::registry::REGISTRY.len());
    // The job's runner options, generated from their parser the same way.
    let options = topicd::models::options::options_schema();
    assert!(file["components"]["schemas"].get(&options.component).is_none(), "JobOptions is generated, not written in the file");
    assert_eq!(schemas.remove(&options.component).as_ref(), Some(&options.schema), "JobOptions");
    assert_eq!(options.schema["properties"]["threads"]["type"], serde_json::json!(["integer", "null"]), "an option may be null: the server's default");
    // The job request's model and params, from the registry.
    let request = schemas["JobRequest"]["properties"].as_object_mut().unwrap();
    let model = request["model"].as_object_mut().unwrap();
    assert_eq!(model.remove("enum"), Some(serde_json::json!(topicd::models::registry::names())));
    model.insert("x-registry".into(), "names".into());
    let params = request["params"].as_object_mut().unwrap();
    let mut refs: Vec<Value> = components.iter().map(|c| serde_json::json!({"$ref": format!("#/components/schemas/{}", c.component)})).collect();
    refs.push(serde_json::json!({"type": "null"}));
    assert_eq!(params.remove("oneOf"), Some(Value::Array(refs)));
    params.insert("x-registry".into(), "params".into());
    params.insert("type".into(), serde_json::json!(["object", "null"]));
    // The rest is the file, but for each component schema's property order (JSON objects
    // lose the file's order).
    let lda_order = served["components"]["schemas"]["JobRequest"]["x-property-order"].clone();
    assert_eq!(lda_order[0], "corpus_id", "the file's order");
    for schema in served["components"]["schemas"].as_object_mut().unwrap().values_mut() {
        let object = schema.as_object_mut().unwrap();
        let order = object.remove("x-property-order");
        assert_eq!(order.is_some(), object.contains_key("properties"), "{object:?}");
    }
    assert_eq!(served, file, "GET /openapi.json differs from openapi/openapi.yaml parsed to JSON (the registry's parts aside)");
    assert_eq!(served["openapi"], "3.1.0");
}

/// Every `model` enum of the served spec (the job request's, and any other schema
/// property named `model` with an enum) lists exactly the registered families: the
/// topic families and the community (graph) families.
#[test]
fn model_enums_equal_the_registry() {
    let spec = topicd::api::ops::openapi_value();
    let registry: BTreeSet<String> = topicd::models::registry::names().into_iter().map(String::from).collect();
    let schemas = spec["components"]["schemas"].as_object().expect("components.schemas is an object");
    let mut found = 0;
    for (name, schema) in schemas {
        if let Some(values) = schema["properties"]["model"]["enum"].as_array() {
            let in_spec: BTreeSet<String> = values.iter().map(|v| v.as_str().expect("enum values are strings").to_string()).collect();
            assert_eq!(in_spec, registry, "schema {name}: OpenAPI's model enum against the registry");
            found += 1;
        }
    }
    assert!(found > 0, "no schema has a `model` enum");
}

/// The served params schema of `family`: its own (`GET /v1/families`), and the
/// component that lists it in `x-families` (OpenAPI), which must have every key of its
/// own with the same type and bounds.
fn params_schema(family: topicd::models::registry::Family) -> Value {
    let spec = topicd::api::ops::openapi_value();
    let schemas = spec["components"]["schemas"].as_object().expect("components.schemas is an object");
    let claiming: Vec<&Value> = schemas.values().filter(|s| s["x-families"].as_array().is_some_and(|f| f.iter().any(|n| n == family.name()))).collect();
    assert_eq!(claiming.len(), 1, "{}: exactly one params schema must list it in x-families", family.name());
    let own = topicd::api::families::params_schema(family.name()).unwrap();
    for (key, property) in own["properties"].as_object().unwrap() {
        let shared = &claiming[0]["properties"][key];
        for field in ["type", "minimum", "maximum", "exclusiveMaximum", "items", "additionalProperties", "enum", "description"] {
            assert_eq!(property.get(field), shared.get(field), "{}: params.{key}.{field} in its component", family.name());
        }
    }
    own
}

/// What a job stores (the parsed params' JSON): every given value kept (the family's
/// brief-fit params, every key given), every default filled in, read back to itself,
/// and under exactly the property names of the family's params schema, but for the
/// runner options the schema documents as accepted in `params` and moved to `options`.
#[test]
fn stored_params_keep_given_values_fill_defaults_and_match_the_schema() {
    for f in topicd::models::registry::REGISTRY {
        let name = f.name();
        let effective = |p: &Value| f.parse_params(&without_options(p.clone())).unwrap_or_else(|e| panic!("{name}: {p}: {e:?}")).json().clone();
        let schema = params_schema(*f);
        let documented: BTreeSet<String> = schema["properties"].as_object().unwrap().keys().cloned().collect();
        let mut given_quick = f.quick_params().json().clone();
        given_quick["threads"] = serde_json::json!(2);
        for given in [serde_json::json!({}), given_quick] {
            let filled = effective(&given);
            let keys: BTreeSet<String> = filled.as_object().expect("an object").keys().cloned().collect();
            let undocumented: Vec<&String> = keys.difference(&documented).collect();
            assert!(undocumented.is_empty(), "{name}: {undocumented:?} are not in its params schema");
            // A key with one accepted value (`chains` of a one-chain family) is not stored.
            let single = |k: &str| schema["properties"][k]["minimum"].is_number() && schema["properties"][k]["minimum"] == schema["properties"][k]["maximum"];
            let missing: Vec<&String> = documented.difference(&keys).filter(|k| !OPTION_KEYS.contains(&k.as_str()) && !single(k)).collect();
            assert!(missing.is_empty(), "{name}: its schema documents {missing:?}, which its stored params do not carry");
            for (k, v) in given.as_object().unwrap().iter().filter(|(k, _)| !OPTION_KEYS.contains(&k.as_str())) {
                assert_eq!(&filled[k], v, "{name}: the given {k} is kept");
            }
            assert!(OPTION_KEYS.iter().all(|k| filled.get(k).is_none()), "{name}: runner options are not stored among the params");
            assert_eq!(effective(&filled), filled, "{name}: stored params read back to themselves");
        }
    }
}

/// A bound and whether it is exclusive.
type Bound = Option<(f64, bool)>;

/// A schema's lower and upper bound (`minimum` or `exclusiveMinimum`, `maximum` or
/// `exclusiveMaximum`).
fn bounds_of(schema: &Value) -> (Bound, Bound) {
    let bound = |inclusive: &str, exclusive: &str| match (schema[inclusive].as_f64(), schema[exclusive].as_f64()) {
        (Some(x), None) => Some((x, false)),
        (None, Some(x)) => Some((x, true)),
        (None, None) => None,
        (Some(_), Some(_)) => panic!("{schema}: both {inclusive} and {exclusive}"),
    };
    (bound("minimum", "exclusiveMinimum"), bound("maximum", "exclusiveMaximum"))
}

/// A value just past `bound` on the outside (`below`: under a lower bound) and one just
/// inside it: ±1 for integers, a relative 1e-9 (or 1e-12 at 0) for numbers.
fn beside(bound: f64, integer: bool, below: bool) -> (Value, Value) {
    let sign = if below { -1.0 } else { 1.0 };
    if integer {
        let step = |d: f64| if bound + d < 0.0 { serde_json::json!((bound + d) as i64) } else { serde_json::json!((bound + d) as u64) };
        (step(sign), step(-sign))
    } else {
        let d = if bound == 0.0 { 1e-12 } else { bound.abs() * 1e-9 };
        (serde_json::json!(bound + sign * d), serde_json::json!(bound - sign * d))
    }
}

/// The params schemas' numeric bounds are the parsers': every integer and number of a
/// family's params schema (and every integer of a map's values, `splines`) has a lower
/// and an upper bound; the family accepts a value at an inclusive bound (just inside an
/// exclusive one) and refuses one just outside with a 422's field naming the key. The
/// runner options (`threads`, `checkpoint_every_s`) are checked by the options' reader.
/// So the schema a client reads from `GET /v1/families` says exactly what a job accepts.
#[test]
fn params_schema_bounds_are_what_the_families_accept() {
    let mut checked = 0;
    for f in topicd::models::registry::REGISTRY {
        let name = f.name();
        let schema = params_schema(*f);
        for (key, property) in schema["properties"].as_object().unwrap() {
            // A map of integers (`splines`) is bounded in its values.
            let (property, map) = match property["additionalProperties"].get("type") {
                Some(_) if property["type"] == "object" => (&property["additionalProperties"], true),
                _ => (property, false),
            };
            let integer = match property["type"].as_str() {
                Some("integer") => true,
                Some("number") => false,
                _ => continue,
            };
            let (lower, upper) = bounds_of(property);
            let (Some(lower), Some(upper)) = (lower, upper) else { panic!("{name}: params.{key} is not bounded on both sides: {property}") };
            let is_option = OPTION_KEYS.contains(&key.as_str());
            for ((bound, exclusive), below) in [(lower, true), (upper, false)] {
                let (outside, inside) = beside(bound, integer, below);
                let at = if exclusive {
                    inside
                } else if integer {
                    serde_json::json!(bound as u64)
                } else {
                    serde_json::json!(bound)
                };
                let read = |value: &Value| -> Result<(), String> {
                    let mut params =
                        if map { serde_json::json!({"covariates": ["x"], key.as_str(): {"x": value}}) } else { serde_json::json!({ key.as_str(): value }) };
                    if key == "burn_in" {
                        params["iterations"] = schema["properties"]["iterations"]["maximum"].clone();
                    }
                    if key == "test_fraction" && schema["properties"]["validation_fraction"].get("default").is_some_and(|d| d != 0.0) {
                        params["validation_fraction"] = serde_json::json!(0);
                    }
                    if is_option {
                        topicd::models::options::JobOptions::from_json(&params).map(|_| ()).map_err(|e| e.field)
                    } else {
                        f.parse_params(&params).map(|_| ()).map_err(|e| e.field)
                    }
                };
                let field = if map { format!("{key}.x") } else { key.clone() };
                assert_eq!(read(&at), Ok(()), "{name}: params.{key} = {at} is within the schema's bounds");
                assert_eq!(read(&outside), Err(field), "{name}: params.{key} = {outside} is outside the schema's bounds");
                if exclusive {
                    assert!(read(&serde_json::json!(bound)).is_err(), "{name}: params.{key} = {bound} is an exclusive bound");
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 150, "{checked} bounds checked");
}

/// The params schemas' defaults are the parsers': every property with a `default` is
/// filled in with exactly that value when a job gives none, every property with an
/// `enum` accepts each of its values and refuses another naming the key, and every
/// stored parameter without a default in the schema has one that depends on other
/// parameters or on the input (`alpha` = 50/K, `burn_in` = iterations/2), which its
/// description states. With the bounds above and the keys of
/// `stored_params_keep_given_values_fill_defaults_and_match_the_schema`, the schema a
/// client reads cannot drift from what a job does.
#[test]
fn params_schema_defaults_are_what_the_families_fill_in() {
    let mut checked = 0;
    for f in topicd::models::registry::REGISTRY {
        let name = f.name();
        let schema = params_schema(*f);
        let stored = f.parse_params(&serde_json::json!({})).unwrap().json().clone();
        for (key, property) in schema["properties"].as_object().unwrap() {
            for choice in property["enum"].as_array().into_iter().flatten() {
                f.parse_params(&serde_json::json!({ key.as_str(): choice })).unwrap_or_else(|e| panic!("{name}: params.{key} = {choice}: {e}"));
                let e = f.parse_params(&serde_json::json!({ key.as_str(): "not-a-choice" })).unwrap_err();
                assert_eq!(e.field, *key, "{name}");
            }
            let Some(filled) = stored.get(key) else {
                assert!(
                    OPTION_KEYS.contains(&key.as_str()) || property["minimum"] == property["maximum"],
                    "{name}: params.{key} is in its schema but not stored"
                );
                continue;
            };
            match property.get("default") {
                Some(default) => {
                    let same = match (default.as_f64(), filled.as_f64()) {
                        (Some(a), Some(b)) => a == b,
                        _ => default == filled || property["enum"].is_array(),
                    };
                    assert!(same, "{name}: params.{key} defaults to {filled}, the schema says {default}");
                    checked += 1;
                }
                None => {
                    let description = property["description"].as_str().unwrap_or("");
                    assert!(
                        description.to_lowercase().contains("default"),
                        "{name}: params.{key} is filled in with {filled} but the schema gives no default and its description does not say how it is chosen"
                    );
                }
            }
        }
    }
    assert!(checked > 80, "{checked} defaults checked");
}

/// What the auth middleware leaves open, as the spec must say it (`security: []`).
fn open_without_token(path: &str) -> bool {
    matches!(path, "/healthz" | "/readyz" | "/openapi.json" | "/" | "/console/{path}")
}

#[test]
fn token_and_limit_answers_are_documented_on_every_protected_operation() {
    let spec = spec_from_file();
    let mut missing = Vec::new();
    for (method, path) in spec_routes(&spec) {
        let op = &spec["paths"][&path][&method];
        let codes: BTreeSet<&str> = op["responses"].as_object().unwrap().keys().map(String::as_str).collect();
        if open_without_token(&path) {
            assert_eq!(op["security"], serde_json::json!([]), "{method} {path} is open: its security must be []");
            continue;
        }
        assert!(op.get("security").is_none(), "{method} {path} needs a token, so it takes the document's security");
        let mut needed = vec!["401", "403", "429"];
        if path.starts_with("/v1") {
            needed.push("503"); // the request time limit
        }
        if op.get("requestBody").is_some() {
            needed.push("400");
        }
        for code in needed.into_iter().filter(|c| !codes.contains(c)) {
            missing.push(format!("{} {path}: {code}", method.to_uppercase()));
        }
    }
    assert!(missing.is_empty(), "undocumented answers:\n  {}", missing.join("\n  "));
    assert_eq!(spec["security"], serde_json::json!([{"bearerAuth": []}, {}]), "tokens are optional: loopback servers run without them");
    assert_eq!(spec["components"]["securitySchemes"]["bearerAuth"]["scheme"], "bearer");
}
