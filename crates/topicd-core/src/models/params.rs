//! Reading model parameters from a JSON object, with errors that name the field.
//!
//! Why it exists: every model takes `params` as a JSON object and must reject unknown
//! keys, wrong types and out-of-range values with the offending field's name, before a
//! job is queued. [`ParamReader`] does the bookkeeping once for all models.
//!
//! The reader is also where a family's params schema comes from: every key it is asked
//! for is recorded with its JSON type, its bounds and (through the `_or` readers) its
//! constant default, and a family's [`ParamsDoc`] adds the descriptions. Running a
//! family's parser on `{}` under [`record_schema`] gives the JSON Schema that
//! `GET /v1/families` and the OpenAPI document serve ([`ParamsSchema`]), so the schema
//! cannot drift from what the parser accepts.

use serde_json::{json, Map, Value};
use std::cell::RefCell;
use std::collections::BTreeMap;

/// The most chains a job may run ([`super::chains`] runs them).
pub const MAX_CHAINS: usize = 8;

/// A parameter that is missing, unknown, mistyped or out of range.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("params.{field}: {message}")]
pub struct ParamError {
    pub field: String,
    pub message: String,
}

impl ParamError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        ParamError { field: field.into(), message: message.into() }
    }
}

/// Takes typed values out of a params object; [`ParamReader::finish`] rejects leftovers,
/// naming the nearest of the keys the family asked for.
pub struct ParamReader {
    rest: Map<String, Value>,
    /// Every key asked for so far, in order: the family's known params.
    known: Vec<String>,
    /// What each key asked for accepts (its schema), in the same order.
    specs: Vec<(String, Map<String, Value>)>,
    /// The descriptions of the family's params ([`ParamReader::described_by`]).
    doc: Option<&'static ParamsDoc>,
}

impl ParamReader {
    pub fn new(params: &Value) -> Result<Self, ParamError> {
        let rest = match params {
            Value::Object(m) => m.clone(),
            Value::Null => Map::new(),
            _ => return Err(ParamError::new("", "params must be a JSON object")),
        };
        Ok(ParamReader { rest, known: Vec::new(), specs: Vec::new(), doc: None })
    }

    /// The same reader, its keys described by `doc` (for the generated schema).
    pub fn described_by(mut self, doc: &'static ParamsDoc) -> Self {
        self.doc = Some(doc);
        self
    }

    /// Record what `key` accepts: `spec` is its JSON Schema (type, bounds, items).
    fn spec(&mut self, key: &str, spec: Value) {
        let Value::Object(spec) = spec else { unreachable!("a key's schema is an object") };
        match self.specs.iter_mut().find(|(k, _)| k == key) {
            Some((_, s)) => *s = spec,
            None => self.specs.push((key.to_string(), spec)),
        }
    }

    /// Record `default` as the value `key` takes when absent or null.
    fn default_is(&mut self, key: &str, default: Value) {
        if let Some((_, s)) = self.specs.iter_mut().find(|(k, _)| k == key) {
            s.insert("default".into(), default);
        }
    }

    fn take(&mut self, key: &str) -> Option<Value> {
        if !self.known.iter().any(|k| k == key) {
            self.known.push(key.to_string());
        }
        match self.rest.remove(key) {
            Some(Value::Null) | None => None,
            Some(v) => Some(v),
        }
    }

    /// A non-negative integer.
    pub fn uint(&mut self, key: &str) -> Result<Option<u64>, ParamError> {
        self.spec(key, json!({"type": "integer", "minimum": 0}));
        match self.take(key) {
            None => Ok(None),
            Some(v) => v.as_u64().map(Some).ok_or_else(|| ParamError::new(key, format!("must be a non-negative integer, got {v}"))),
        }
    }

    /// An integer within `[lo, hi]`.
    pub fn uint_in(&mut self, key: &str, lo: u64, hi: u64) -> Result<Option<u64>, ParamError> {
        let v = self.uint(key);
        self.spec(key, json!({"type": "integer", "minimum": lo, "maximum": hi}));
        let v = v?;
        if let Some(x) = v {
            if x < lo || x > hi {
                return Err(ParamError::new(key, format!("must be between {lo} and {hi}, got {x}")));
            }
        }
        Ok(v)
    }

    /// A finite number strictly greater than zero.
    pub fn positive(&mut self, key: &str) -> Result<Option<f64>, ParamError> {
        self.spec(key, json!({"type": "number", "exclusiveMinimum": 0}));
        match self.take(key) {
            None => Ok(None),
            Some(v) => match v.as_f64() {
                Some(x) if x.is_finite() && x > 0.0 => Ok(Some(x)),
                _ => Err(ParamError::new(key, format!("must be a finite number greater than 0, got {v}"))),
            },
        }
    }

    /// A finite number in `[lo, hi]` (both included): a prior, a tolerance or a step
    /// size whose range keeps the fit's arithmetic finite ([`MIN_CONCENTRATION`] and
    /// the families' own bounds say why each range is what it is).
    pub fn number_in(&mut self, key: &str, lo: f64, hi: f64) -> Result<Option<f64>, ParamError> {
        self.spec(key, json!({"type": "number", "minimum": lo, "maximum": hi}));
        match self.take(key) {
            None => Ok(None),
            Some(v) => match v.as_f64() {
                Some(x) if x.is_finite() && (lo..=hi).contains(&x) => Ok(Some(x)),
                _ => Err(ParamError::new(key, format!("must be a number between {} and {}, got {v}", show(lo), show(hi)))),
            },
        }
    }

    /// A Dirichlet or Dirichlet-process concentration: a number in
    /// [[`MIN_CONCENTRATION`], [`MAX_CONCENTRATION`]].
    pub fn concentration(&mut self, key: &str) -> Result<Option<f64>, ParamError> {
        self.number_in(key, MIN_CONCENTRATION, MAX_CONCENTRATION)
    }

    /// A finite number in `[0, hi]`.
    pub fn non_negative(&mut self, key: &str, hi: f64) -> Result<Option<f64>, ParamError> {
        self.spec(key, json!({"type": "number", "minimum": 0, "maximum": hi}));
        match self.take(key) {
            None => Ok(None),
            Some(v) => match v.as_f64() {
                Some(x) if x.is_finite() && (0.0..=hi).contains(&x) => Ok(Some(x)),
                _ => Err(ParamError::new(key, format!("must be a number between 0 and {hi}, got {v}"))),
            },
        }
    }

    /// A fraction in `[0, hi)`.
    pub fn fraction(&mut self, key: &str, hi: f64) -> Result<Option<f64>, ParamError> {
        self.spec(key, json!({"type": "number", "minimum": 0, "exclusiveMaximum": hi}));
        match self.take(key) {
            None => Ok(None),
            Some(v) => match v.as_f64() {
                Some(x) if x.is_finite() && (0.0..hi).contains(&x) => Ok(Some(x)),
                _ => Err(ParamError::new(key, format!("must be a number in [0, {hi}), got {v}"))),
            },
        }
    }

    /// A string.
    pub fn string(&mut self, key: &str) -> Result<Option<String>, ParamError> {
        self.spec(key, json!({"type": "string"}));
        match self.take(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(v) => Err(ParamError::new(key, format!("must be a string, got {v}"))),
        }
    }

    /// A boolean.
    pub fn boolean(&mut self, key: &str) -> Result<Option<bool>, ParamError> {
        self.spec(key, json!({"type": "boolean"}));
        match self.take(key) {
            None => Ok(None),
            Some(v) => v.as_bool().map(Some).ok_or_else(|| ParamError::new(key, format!("must be true or false, got {v}"))),
        }
    }

    /// A list of distinct non-empty strings.
    pub fn string_list(&mut self, key: &str) -> Result<Option<Vec<String>>, ParamError> {
        self.spec(key, json!({"type": "array", "items": {"type": "string", "minLength": 1}, "uniqueItems": true}));
        let Some(v) = self.take(key) else { return Ok(None) };
        let items = v.as_array().ok_or_else(|| ParamError::new(key, format!("must be a list of names, got {v}")))?;
        let mut out: Vec<String> = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            match item.as_str() {
                Some(s) if !s.is_empty() && !out.iter().any(|o| o == s) => out.push(s.to_string()),
                Some(s) if !s.is_empty() => return Err(ParamError::new(key, format!("names {s:?} twice"))),
                _ => return Err(ParamError::new(format!("{key}[{i}]"), format!("must be a non-empty string, got {item}"))),
            }
        }
        Ok(Some(out))
    }

    /// An object whose values are strings (`{"party": "green"}`).
    pub fn string_map(&mut self, key: &str) -> Result<Option<BTreeMap<String, String>>, ParamError> {
        self.spec(key, json!({"type": "object", "additionalProperties": {"type": "string"}}));
        self.map_of(key, |k, v| v.as_str().map(str::to_string).ok_or_else(|| ParamError::new(format!("{key}.{k}"), format!("must be a string, got {v}"))))
    }

    /// An object whose values are integers within `[lo, hi]` (`{"year": 5}`).
    pub fn uint_map(&mut self, key: &str, lo: u64, hi: u64) -> Result<Option<BTreeMap<String, usize>>, ParamError> {
        self.spec(key, json!({"type": "object", "additionalProperties": {"type": "integer", "minimum": lo, "maximum": hi}}));
        self.map_of(key, |k, v| match v.as_u64() {
            Some(x) if (lo..=hi).contains(&x) => Ok(x as usize),
            _ => Err(ParamError::new(format!("{key}.{k}"), format!("must be an integer between {lo} and {hi}, got {v}"))),
        })
    }

    fn map_of<T>(&mut self, key: &str, read: impl Fn(&str, &Value) -> Result<T, ParamError>) -> Result<Option<BTreeMap<String, T>>, ParamError> {
        let Some(v) = self.take(key) else { return Ok(None) };
        let map = v.as_object().ok_or_else(|| ParamError::new(key, format!("must be an object, got {v}")))?;
        map.iter().map(|(k, v)| Ok((k.clone(), read(k, v)?))).collect::<Result<BTreeMap<_, _>, _>>().map(Some)
    }

    /// The raw value of `key` (absent or null: `None`), whose schema is `spec`: for a
    /// structured parameter whose own module reads it (`seed_words`).
    pub fn raw(&mut self, key: &str, spec: Value) -> Option<Value> {
        self.spec(key, spec);
        self.take(key)
    }

    /// Takes `chains` for a family that runs one chain per job: 1 is accepted (and not
    /// stored: it is what the family does); more is refused with `why`.
    pub fn one_chain_only(&mut self, why: &str) -> Result<(), ParamError> {
        let chains = self.uint_in("chains", 1, MAX_CHAINS as u64);
        self.spec("chains", json!({"type": "integer", "minimum": 1, "maximum": 1, "default": 1, "description": format!("One chain only: {why}.")}));
        match chains? {
            Some(c) if c > 1 => Err(ParamError::new("chains", format!("{c} chains asked for: {why}"))),
            _ => Ok(()),
        }
    }

    /// An integer within `[lo, hi]`, `default` when absent (the schema states it).
    pub fn uint_in_or(&mut self, key: &str, lo: u64, hi: u64, default: u64) -> Result<u64, ParamError> {
        let v = self.uint_in(key, lo, hi);
        self.default_is(key, json!(default));
        Ok(v?.unwrap_or(default))
    }

    /// A number in `[lo, hi]`, `default` when absent.
    pub fn number_in_or(&mut self, key: &str, lo: f64, hi: f64, default: f64) -> Result<f64, ParamError> {
        let v = self.number_in(key, lo, hi);
        self.default_is(key, json!(default));
        Ok(v?.unwrap_or(default))
    }

    /// A concentration ([`ParamReader::concentration`]), `default` when absent.
    pub fn concentration_or(&mut self, key: &str, default: f64) -> Result<f64, ParamError> {
        self.number_in_or(key, MIN_CONCENTRATION, MAX_CONCENTRATION, default)
    }

    /// A fraction in `[0, hi)`, `default` when absent.
    pub fn fraction_or(&mut self, key: &str, hi: f64, default: f64) -> Result<f64, ParamError> {
        let v = self.fraction(key, hi);
        self.default_is(key, json!(default));
        Ok(v?.unwrap_or(default))
    }

    /// A boolean, `default` when absent.
    pub fn boolean_or(&mut self, key: &str, default: bool) -> Result<bool, ParamError> {
        let v = self.boolean(key);
        self.default_is(key, json!(default));
        Ok(v?.unwrap_or(default))
    }

    /// One of `choices` (a string), `default` when absent; anything else is refused
    /// naming the choices.
    pub fn choice_or(&mut self, key: &str, choices: &[&'static str], default: &'static str) -> Result<&'static str, ParamError> {
        let v = self.string(key);
        self.spec(key, json!({"type": "string", "enum": choices, "default": default}));
        match v?.as_deref() {
            None => Ok(default),
            Some(s) => choices.iter().find(|c| **c == s).copied().ok_or_else(|| {
                let listed = match choices {
                    [rest @ .., last] if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
                    _ => choices.join(", "),
                };
                ParamError::new(key, format!("must be {listed}, got {s:?}"))
            }),
        }
    }

    /// A list of distinct non-empty strings ([`ParamReader::string_list`]), empty when absent.
    pub fn string_list_or_empty(&mut self, key: &str) -> Result<Vec<String>, ParamError> {
        let v = self.string_list(key);
        self.default_is(key, json!([]));
        Ok(v?.unwrap_or_default())
    }

    /// An object of strings ([`ParamReader::string_map`]), empty when absent.
    pub fn string_map_or_empty(&mut self, key: &str) -> Result<BTreeMap<String, String>, ParamError> {
        let v = self.string_map(key);
        self.default_is(key, json!({}));
        Ok(v?.unwrap_or_default())
    }

    /// An object of bounded integers ([`ParamReader::uint_map`]), empty when absent.
    pub fn uint_map_or_empty(&mut self, key: &str, lo: u64, hi: u64) -> Result<BTreeMap<String, usize>, ParamError> {
        let v = self.uint_map(key, lo, hi);
        self.default_is(key, json!({}));
        Ok(v?.unwrap_or_default())
    }

    /// Rejects any key not taken: `unknown key "topcs"; did you mean "topics"?`, or the
    /// known keys listed when none is close.
    pub fn finish(self) -> Result<(), ParamError> {
        RECORDING.with(|r| {
            if let Some(recorded) = r.borrow_mut().as_mut() {
                recorded.push(Recorded { doc: self.doc, specs: self.specs.clone() });
            }
        });
        match self.rest.keys().next() {
            None => Ok(()),
            Some(k) => {
                let known: Vec<&str> = self.known.iter().map(String::as_str).collect();
                Err(ParamError::new(k.clone(), crate::unknown_keys::unknown_key_message(k, "", &known)))
            }
        }
    }
}

/// Largest `checkpoint_every_s` accepted (a week).
pub const MAX_CHECKPOINT_EVERY_S: f64 = 604_800.0;

/// Smallest concentration of a Dirichlet or Dirichlet-process prior accepted (LDA's α
/// and β, DCNT's β, HDP's and HDP-aMMSB's α and γ, HDP's λ; HDP-aMMSB's Beta prior has
/// a floor of its own, `hdp_ammsb::params::MIN_TAU`). Honest priors are 1e-3 and up;
/// much below 1e-6 a prior's mass on an unused topic or word (α·β/(n_k + Vβ) in LDA's
/// single-precision kernel, α·β_k in the HDPs' digammas) heads for underflow. Fits at
/// both ends stay finite (`models::param_bounds_tests`).
pub const MIN_CONCENTRATION: f64 = 1e-6;
/// Largest concentration accepted: 10 000 pseudo-counts per topic or word already
/// swamps any corpus, and sums such as V·β and K·α stay far from overflow (β = 1e308
/// made V·β infinite and a fit's log-likelihood NaN).
pub const MAX_CONCENTRATION: f64 = 1e4;

/// A bound as messages show it: `0.000001` as `1e-6`, `1000000000000` as `1e12`.
fn show(x: f64) -> String {
    if x != 0.0 && (x.abs() < 1e-3 || x.abs() >= 1e6) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// What a family says about its params beside what its parser reads: the OpenAPI
/// component they are listed under (families sharing a parser share one, and its
/// `x-families` names them), the schema's description and each key's, in the order a
/// form shows them. Kept next to the parser in the family's `params.rs`, and handed to
/// it by [`ParamReader::described_by`].
#[derive(Debug)]
pub struct ParamsDoc {
    /// The component name in OpenAPI's `components.schemas` (`"LdaParams"`).
    pub component: &'static str,
    pub description: &'static str,
    /// `(key, description)` of every key the parser reads, in display order.
    pub keys: &'static [(&'static str, &'static str)],
    /// The keys a first fit sets (the console shows them first and folds the rest under
    /// "Advanced"): the schema's `x-basic`.
    pub basic: &'static [&'static str],
}

/// One reader's record: the keys it was asked for, each with its schema.
#[derive(Debug, Clone)]
struct Recorded {
    doc: Option<&'static ParamsDoc>,
    specs: Vec<(String, Map<String, Value>)>,
}

thread_local! {
    /// The readers finished on this thread while [`record_schema`] runs.
    static RECORDING: RefCell<Option<Vec<Recorded>>> = const { RefCell::new(None) };
}

/// A family's params schema, generated from its parser ([`record_schema`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ParamsSchema {
    /// The OpenAPI component the schema is listed under ([`ParamsDoc::component`]).
    pub component: String,
    /// A JSON Schema object: `type`, `description`, `additionalProperties: false`,
    /// `properties` (type, bounds, default where constant, description) and
    /// `x-property-order` (the doc's order: JSON objects lose it).
    pub schema: Value,
    /// Keys the doc describes that this parser did not read (a key of another family
    /// sharing the doc; one no family reads is a test failure).
    pub unread: Vec<String>,
}

/// Run `parse` (a family's parser on `{}`) and build the schema of every key its
/// readers asked for; `fallback` names the component when the parser has no
/// [`ParamsDoc`]. Keys the doc describes come first in its order, then any other in the
/// order read.
pub fn record_schema(fallback: &str, parse: impl FnOnce()) -> ParamsSchema {
    let previous = RECORDING.with(|r| r.borrow_mut().replace(Vec::new()));
    parse();
    let recorded = RECORDING.with(|r| std::mem::replace(&mut *r.borrow_mut(), previous)).unwrap_or_default();
    let doc = recorded.iter().find_map(|r| r.doc);
    let mut specs: Vec<(String, Map<String, Value>)> = Vec::new();
    for (key, spec) in recorded.into_iter().flat_map(|r| r.specs) {
        if !specs.iter().any(|(k, _)| *k == key) {
            specs.push((key, spec));
        }
    }
    let described = |key: &str| doc.and_then(|d| d.keys.iter().position(|(k, _)| *k == key)).unwrap_or(usize::MAX);
    specs.sort_by_key(|(k, _)| described(k));
    let mut properties = Map::new();
    for (key, mut spec) in specs.iter().cloned() {
        if let Some((_, text)) = doc.and_then(|d| d.keys.iter().find(|(k, _)| *k == key)) {
            spec.insert("description".into(), json!(text));
        }
        properties.insert(key, Value::Object(spec));
    }
    let order: Vec<&String> = specs.iter().map(|(k, _)| k).collect();
    let mut schema = json!({"type": "object", "additionalProperties": false, "properties": properties, "x-property-order": order});
    if let Some(d) = doc {
        schema["description"] = json!(d.description);
        let basic: Vec<&str> = d.basic.iter().copied().filter(|k| specs.iter().any(|(s, _)| s == k)).collect();
        if !basic.is_empty() {
            schema["x-basic"] = json!(basic);
        }
    }
    let unread = doc.into_iter().flat_map(|d| d.keys.iter()).filter(|(k, _)| !specs.iter().any(|(s, _)| s == k)).map(|(k, _)| k.to_string()).collect();
    ParamsSchema { component: doc.map_or_else(|| fallback.to_string(), |d| d.component.to_string()), schema, unread }
}

/// The component name of a family whose parser has no [`ParamsDoc`]: `hdp_ammsb` →
/// `HdpAmmsbParams`.
pub fn component_name(family: &str) -> String {
    let mut out = String::new();
    for part in family.split(|c: char| !c.is_ascii_alphanumeric()).filter(|p| !p.is_empty()) {
        let mut chars = part.chars();
        out.extend(chars.next().map(|c| c.to_ascii_uppercase()));
        out.push_str(chars.as_str());
    }
    out + "Params"
}

impl ParamsSchema {
    /// This schema with `other`'s keys added after its own (the runner options a
    /// family's params may carry).
    pub fn with_keys_of(mut self, other: &ParamsSchema) -> Self {
        for key in other.schema["x-property-order"].as_array().into_iter().flatten() {
            let k = key.as_str().unwrap_or_default();
            if self.schema["properties"].get(k).is_none() {
                self.schema["properties"][k] = other.schema["properties"][k].clone();
                if let Some(order) = self.schema["x-property-order"].as_array_mut() {
                    order.push(key.clone());
                }
            }
        }
        self
    }

    /// The schema of a component shared by families whose parsers read different keys
    /// (HPC's and PCM's): every key of either, in the doc's order, without a default where
    /// they differ on it (the description says each family's).
    pub fn union(mut self, other: &ParamsSchema) -> Self {
        let theirs = &other.schema["properties"];
        if let Some(mine) = self.schema["properties"].as_object_mut() {
            for (key, spec) in mine.iter_mut() {
                let differs = theirs.get(key).is_some_and(|t| t.get("default") != spec.get("default"));
                if let Some(spec) = spec.as_object_mut().filter(|_| differs) {
                    spec.remove("default");
                }
            }
        }
        let mut order: Vec<Value> = self.schema["x-property-order"].as_array().cloned().unwrap_or_default();
        for key in other.schema["x-property-order"].as_array().into_iter().flatten() {
            let k = key.as_str().unwrap_or_default();
            if self.schema["properties"].get(k).is_none() {
                self.schema["properties"][k] = theirs[k].clone();
                let at = other.schema["x-property-order"].as_array().and_then(|o| o.iter().position(|x| x == key)).unwrap_or(order.len());
                // Before the first of its successors in the other's order that is already here.
                let successors = &other.schema["x-property-order"].as_array().map(|o| o[at + 1..].to_vec()).unwrap_or_default();
                let place = order.iter().position(|x| successors.contains(x)).unwrap_or(order.len());
                order.insert(place, key.clone());
            }
        }
        self.schema["x-property-order"] = Value::Array(order);
        self.unread.retain(|k| other.unread.contains(k));
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Families with one chain take `chains: 1` and refuse more, naming the field; every
    /// family's reader agrees.
    #[test]
    fn one_chain_families_refuse_several() {
        let mut r = ParamReader::new(&json!({"chains": 1})).unwrap();
        r.one_chain_only("why").unwrap();
        r.finish().unwrap();
        let mut r = ParamReader::new(&json!({"chains": 3})).unwrap();
        let e = r.one_chain_only("why").unwrap_err();
        assert_eq!((e.field.as_str(), e.message.as_str()), ("chains", "3 chains asked for: why"));
        for family in super::super::registry::REGISTRY.iter() {
            let several = family.parse_params(&json!({"chains": 2}));
            assert_eq!(several.is_ok(), ["lda", "dcnt", "scnt", "hpc", "pcm"].contains(&family.name()), "{}", family.name());
            if let Err(e) = several {
                assert_eq!(e.field, "chains", "{}", family.name());
            }
            let nine = family.parse_params(&json!({"chains": 9})).unwrap_err();
            assert_eq!(nine.field, "chains");
        }
    }

    #[test]
    fn rejects_unknown_and_bad_values_naming_the_field() {
        let mut r = ParamReader::new(&json!({"topics": 0, "alpha": -1.0, "zzz": 1})).unwrap();
        assert_eq!(r.uint_in("topics", 1, 10).unwrap_err().field, "topics");
        assert_eq!(r.positive("alpha").unwrap_err().field, "alpha");
        assert_eq!(r.finish().unwrap_err().field, "zzz");
        let mut r = ParamReader::new(&json!({"topcs": 3})).unwrap();
        assert_eq!(r.uint_in("topics", 1, 10).unwrap(), None);
        r.positive("alpha").unwrap();
        let e = r.finish().unwrap_err();
        assert_eq!(e.field, "topcs");
        assert_eq!(e.message, r#"unknown key "topcs"; did you mean "topics"?"#);
        let mut r = ParamReader::new(&json!({"zzz": 3})).unwrap();
        r.uint("topics").unwrap();
        r.positive("alpha").unwrap();
        assert_eq!(r.finish().unwrap_err().message, r#"unknown key "zzz"; known keys: topics, alpha"#);
        let mut r = ParamReader::new(&json!({"beta": "x"})).unwrap();
        assert!(r.positive("beta").is_err());
        assert!(ParamReader::new(&json!([1])).is_err());
    }

    /// A bounded number is accepted at both ends of its range and refused outside it
    /// (or when not finite, or not a number), the message naming the range.
    #[test]
    fn bounded_numbers_name_the_field_and_the_range() {
        let mut r = ParamReader::new(&json!({"a": 1e-6, "b": 1e4, "c": 0.5, "d": 2})).unwrap();
        assert_eq!(r.concentration("a").unwrap(), Some(MIN_CONCENTRATION));
        assert_eq!(r.concentration("b").unwrap(), Some(MAX_CONCENTRATION));
        assert_eq!(r.number_in("c", 0.01, 0.5).unwrap(), Some(0.5));
        assert_eq!(r.number_in("d", 2.0, 2.0).unwrap(), Some(2.0));
        assert_eq!(r.concentration("absent").unwrap(), None);
        r.finish().unwrap();
        for value in [json!(1e308), json!(9.99e-7), json!(10000.001), json!(-1), json!("1")] {
            let e = ParamReader::new(&json!({"beta": value})).unwrap().concentration("beta").unwrap_err();
            assert_eq!((e.field.as_str(), e.message), ("beta", format!("must be a number between 1e-6 and 10000, got {value}")));
        }
        let e = ParamReader::new(&json!({"gamma_mu": 2e12})).unwrap().number_in("gamma_mu", 1e-6, 1e12).unwrap_err();
        assert!(e.message.starts_with("must be a number between 1e-6 and 1e12, got "), "{}", e.message);
    }

    #[test]
    fn lists_and_maps_name_the_bad_entry() {
        let mut r = ParamReader::new(&json!({"c": ["a", "b"], "r": {"p": "x"}, "s": {"y": 5}})).unwrap();
        assert_eq!(r.string_list("c").unwrap(), Some(vec!["a".to_string(), "b".to_string()]));
        assert_eq!(r.string_map("r").unwrap(), Some(BTreeMap::from([("p".to_string(), "x".to_string())])));
        assert_eq!(r.uint_map("s", 3, 20).unwrap(), Some(BTreeMap::from([("y".to_string(), 5)])));
        r.finish().unwrap();
        for (body, field) in [
            (json!({"c": "a"}), "c"),
            (json!({"c": ["a", 1]}), "c[1]"),
            (json!({"c": ["a", "a"]}), "c"),
            (json!({"r": {"p": 1}}), "r.p"),
            (json!({"r": []}), "r"),
            (json!({"s": {"y": 2}}), "s.y"),
        ] {
            let mut r = ParamReader::new(&body).unwrap();
            let e = r.string_list("c").and_then(|_| r.string_map("r")).and_then(|_| r.uint_map("s", 3, 20)).unwrap_err();
            assert_eq!(e.field, field, "{body}");
        }
    }

    #[test]
    fn absent_and_null_are_none() {
        let mut r = ParamReader::new(&json!({"a": null})).unwrap();
        assert_eq!(r.positive("a").unwrap(), None);
        assert_eq!(r.uint("b").unwrap(), None);
        r.finish().unwrap();
    }
}
