//! Reading model parameters from a JSON object, with errors that name the field.
//!
//! Why it exists: every model takes `params` as a JSON object and must reject unknown
//! keys, wrong types and out-of-range values with the offending field's name, before a
//! job is queued. [`ParamReader`] does the bookkeeping once for all models.

use serde_json::{Map, Value};
use std::collections::BTreeMap;

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
}

impl ParamReader {
    pub fn new(params: &Value) -> Result<Self, ParamError> {
        match params {
            Value::Object(m) => Ok(ParamReader { rest: m.clone(), known: Vec::new() }),
            Value::Null => Ok(ParamReader { rest: Map::new(), known: Vec::new() }),
            _ => Err(ParamError::new("", "params must be a JSON object")),
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
        match self.take(key) {
            None => Ok(None),
            Some(v) => v.as_u64().map(Some).ok_or_else(|| ParamError::new(key, format!("must be a non-negative integer, got {v}"))),
        }
    }

    /// An integer within `[lo, hi]`.
    pub fn uint_in(&mut self, key: &str, lo: u64, hi: u64) -> Result<Option<u64>, ParamError> {
        let v = self.uint(key)?;
        if let Some(x) = v {
            if x < lo || x > hi {
                return Err(ParamError::new(key, format!("must be between {lo} and {hi}, got {x}")));
            }
        }
        Ok(v)
    }

    /// A finite number strictly greater than zero.
    pub fn positive(&mut self, key: &str) -> Result<Option<f64>, ParamError> {
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
        match self.take(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(v) => Err(ParamError::new(key, format!("must be a string, got {v}"))),
        }
    }

    /// A boolean.
    pub fn boolean(&mut self, key: &str) -> Result<Option<bool>, ParamError> {
        match self.take(key) {
            None => Ok(None),
            Some(v) => v.as_bool().map(Some).ok_or_else(|| ParamError::new(key, format!("must be true or false, got {v}"))),
        }
    }

    /// A list of distinct non-empty strings.
    pub fn string_list(&mut self, key: &str) -> Result<Option<Vec<String>>, ParamError> {
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
        self.map_of(key, |k, v| v.as_str().map(str::to_string).ok_or_else(|| ParamError::new(format!("{key}.{k}"), format!("must be a string, got {v}"))))
    }

    /// An object whose values are integers within `[lo, hi]` (`{"year": 5}`).
    pub fn uint_map(&mut self, key: &str, lo: u64, hi: u64) -> Result<Option<BTreeMap<String, usize>>, ParamError> {
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

    /// Takes `chains` for a family that runs one chain per job: 1 is accepted (and not
    /// stored: it is what the family does); more is refused with `why`.
    pub fn one_chain_only(&mut self, why: &str) -> Result<(), ParamError> {
        match self.uint_in("chains", 1, super::chains::MAX_CHAINS as u64)? {
            Some(c) if c > 1 => Err(ParamError::new("chains", format!("{c} chains asked for: {why}"))),
            _ => Ok(()),
        }
    }

    /// Rejects any key not taken: `unknown key "topcs"; did you mean "topics"?`, or the
    /// known keys listed when none is close.
    pub fn finish(self) -> Result<(), ParamError> {
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
