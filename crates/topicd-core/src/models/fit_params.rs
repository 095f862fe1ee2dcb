//! A family's parameters, parsed once into the family's own type and carried across
//! the registry's seam.
//!
//! Why it exists: a job's params arrive as JSON. The family's reader
//! ([`super::ModelFamily::parse_params`], a [`super::params::ParamReader`] whose errors
//! name the field) turns them into the family's typed struct once, at submit, with every
//! default filled in; the job stores that struct's JSON ([`FitParams::json`]); the
//! runner reads the stored JSON back into the same type with the same reader (parsing
//! is the identity on its own output, checked for every family by
//! `registry::tests::stored_params_read_back_into_the_same_type`). The checks against
//! the input, the memory estimate and the fit all take the typed value, never JSON.
//!
//! The registry holds families as `&'static dyn ModelFamily`, so the typed value
//! travels type-erased; a family takes its own type back out with [`FitParams::get`].
//! [`FitParams::family`] says whose params they are, and the registry refuses to hand
//! one family's params to another. How a fit is run (threads, checkpoints) is not a
//! parameter: see [`super::options::JobOptions`].

use serde_json::Value;
use std::any::Any;
use std::sync::Arc;

/// One family's parsed parameters and their stored JSON form.
#[derive(Clone)]
pub struct FitParams {
    family: &'static str,
    typed: Arc<dyn Any + Send + Sync>,
    json: Value,
}

impl FitParams {
    /// `typed`, the parameters of the family named `family`, and `json`, their stored
    /// form (which the family's reader parses back into `typed`).
    pub fn new<P: Any + Send + Sync>(family: &'static str, typed: P, json: Value) -> Self {
        FitParams { family, typed: Arc::new(typed), json }
    }

    /// `typed` stored as its own serde JSON (a family whose struct's fields are the wire
    /// names).
    pub fn serialized<P: Any + Send + Sync + serde::Serialize>(family: &'static str, typed: P) -> Self {
        let json = serde_json::to_value(&typed).expect("plain data serialises");
        FitParams::new(family, typed, json)
    }

    /// The wire name of the family these params belong to.
    pub fn family(&self) -> &'static str {
        self.family
    }

    /// The stored form: every parameter under its wire name, defaults filled in.
    pub fn json(&self) -> &Value {
        &self.json
    }

    /// The family's own typed parameters.
    ///
    /// # Panics
    /// When `P` is not the type the family parsed into: a family reads only the params
    /// its own `parse_params` made, which the registry checks ([`FitParams::family`]).
    pub fn get<P: Any>(&self) -> &P {
        self.typed
            .downcast_ref::<P>()
            .unwrap_or_else(|| panic!("{} params read as {}: a family was handed another family's params", self.family, std::any::type_name::<P>()))
    }
}

impl std::fmt::Debug for FitParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FitParams").field("family", &self.family).field("json", &self.json).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, PartialEq, serde::Serialize)]
    struct Two {
        a: usize,
    }

    #[test]
    fn the_typed_value_and_its_json_travel_together() {
        let p = FitParams::serialized("two", Two { a: 3 });
        assert_eq!((p.family(), p.json()), ("two", &json!({"a": 3})));
        assert_eq!(p.get::<Two>(), &Two { a: 3 });
        let copy = p.clone();
        assert_eq!(copy.get::<Two>(), p.get::<Two>());
    }

    #[test]
    #[should_panic(expected = "two params read as")]
    fn another_type_is_refused() {
        FitParams::serialized("two", Two { a: 3 }).get::<String>();
    }
}
