//! The wire shapes of an upload: one [`RawDocument`] per document and, optionally, an
//! explicit label tree as a list of [`TreeEntry`].
//!
//! Why it exists: uploads come from many tools (JSON arrays, NDJSON files written by
//! scripts, `topicd fit --input`), and all of them must read a document the same way.
//! Both shapes are strict (`deny_unknown_fields`): a typo such as `"lables"` would
//! otherwise be dropped silently and change the model, so an unknown key is an error
//! naming the nearest known key ([`crate::unknown_keys`]). What a user wants kept beside
//! a document without it being a model input (a title, a URL, a package name) goes in
//! its `meta` object. Integer ids are accepted. Nothing here validates semantics;
//! [`crate::corpus::CorpusBuilder`] does that with field paths.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::CorpusError;
use crate::unknown_keys::{parent_path, parse_serde_unknown_field, place_of, unknown_key_message};

/// One uploaded document, exactly as it arrived (before any validation).
///
/// Exactly one of `text` and `counts` must be present (checked by the builder).
/// Unknown keys are refused; extra data (e.g. `"package"`) belongs in `meta`.
#[derive(Deserialize, Debug, Clone, Default, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct RawDocument {
    /// The document's id: a JSON string or integer (integers are kept as their decimal
    /// text). Absent means "use the 0-based document index".
    #[serde(deserialize_with = "deserialize_id")]
    pub id: Option<String>,
    /// Raw text, tokenised by the corpus' preprocessing.
    pub text: Option<String>,
    /// A bag of words (`word → count`); counts must be non-negative integers.
    /// Also accepted under the name `bow`.
    #[serde(alias = "bow")]
    pub counts: Option<BTreeMap<String, f64>>,
    /// Label names; with a label separator (default `/`), `a/b/c` is a path.
    pub labels: Option<Vec<String>>,
    /// Label paths, each root→leaf, e.g. `[["Development","RevisionControl"]]`: the
    /// document is labelled with each path's last element and each path gives parent
    /// edges.
    pub paths: Option<Vec<Vec<String>>>,
    /// Numeric metadata (`name → value`), values must be finite: the numeric subset of
    /// `covariates`, kept for models that read features.
    pub features: Option<BTreeMap<String, f64>>,
    /// Document metadata whose effect models estimate (`name → value`): a number
    /// (continuous), a string (a category, or a date `YYYY-MM-DD` / RFC 3339) or `null`
    /// (missing); see [`super::covariates`].
    pub covariates: Option<BTreeMap<String, Value>>,
    /// Free-form split tag such as `"train"` or `"test"`.
    pub split: Option<String>,
    /// Anything the uploader wants kept beside the document (a title, a URL, a package
    /// name): stored with the corpus, returned with representative documents, never a
    /// model input. At most [`super::meta::MAX_META_BYTES`] serialised.
    pub meta: Option<Map<String, Value>>,
}

/// Reads one document from its JSON value (an NDJSON line, a line of `topicd fit
/// --input`). An error names the document and its line: an unknown key with the
/// nearest known one (`unknown key "lables" in document 3 (line 4); did you mean
/// "labels"?`, field `documents[3].lables`), any other with its field path.
pub fn document_from_value(value: Value, index: usize, line: Option<usize>) -> Result<RawDocument, CorpusError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let at = format!("documents[{index}]");
        let path = e.path().to_string();
        let message = e.into_inner().to_string();
        let error = match parse_serde_unknown_field(&message) {
            Some((key, known)) => {
                let mut place = place_of(&at);
                if let Some(l) = line {
                    place.push_str(&format!(" (line {l})"));
                }
                let known: Vec<&str> = known.iter().map(String::as_str).collect();
                let within = match parent_path(&path, &key) {
                    "" => at,
                    parent => format!("{at}.{parent}"),
                };
                CorpusError::field(format!("{within}.{key}"), unknown_key_message(&key, &place, &known))
            }
            None => CorpusError::field(if path == "." { at } else { format!("{at}.{path}") }, message),
        };
        match line {
            Some(l) => error.with_line(l),
            None => error,
        }
    })
}

/// One node of an explicitly uploaded label tree: `parent: null` (or absent) hangs the
/// label directly under the implicit root.
#[derive(Deserialize, Serialize, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TreeEntry {
    /// The label's name.
    pub label: String,
    /// The parent label's name; `None` for a top-level label.
    #[serde(default)]
    pub parent: Option<String>,
}

/// Accepts a JSON string, a JSON integer (kept as decimal text) or null for `id`.
fn deserialize_id<'de, D>(deserializer: D) -> Result<Option<String>, D::Error>
where
    D: Deserializer<'de>,
{
    struct IdVisitor;

    impl<'de> serde::de::Visitor<'de> for IdVisitor {
        type Value = Option<String>;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a string or an integer document id")
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Some(v.to_owned()))
        }
        fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Self::Value, E> {
            Ok(Some(v))
        }
        fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
        fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
        fn visit_i128<E: serde::de::Error>(self, v: i128) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
        fn visit_u128<E: serde::de::Error>(self, v: u128) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
        fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Self::Value, E> {
            Err(E::invalid_type(serde::de::Unexpected::Float(v), &self))
        }
        fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D2: Deserializer<'de>>(self, d: D2) -> Result<Self::Value, D2::Error> {
            d.deserialize_any(IdVisitor)
        }
    }

    deserializer.deserialize_any(IdVisitor)
}

/// Checks one bag-of-words count: it must be a finite, non-negative integer that fits
/// in a `u32`. The error is a short human-readable reason (the caller adds the word).
pub fn parse_count(value: f64) -> Result<u32, &'static str> {
    if !value.is_finite() {
        Err("count must be a finite number")
    } else if value < 0.0 {
        Err("count must not be negative")
    } else if value.fract() != 0.0 {
        Err("count must be an integer")
    } else if value > u32::MAX as f64 {
        Err("count is too large")
    } else {
        Ok(value as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_and_integer_ids() {
        let d: RawDocument = serde_json::from_str(r#"{"id":"doc-1","text":"x"}"#).unwrap();
        assert_eq!(d.id.as_deref(), Some("doc-1"));
        let d: RawDocument = serde_json::from_str(r#"{"id":42,"text":"x"}"#).unwrap();
        assert_eq!(d.id.as_deref(), Some("42"));
        let d: RawDocument = serde_json::from_str(r#"{"id":-7,"text":"x"}"#).unwrap();
        assert_eq!(d.id.as_deref(), Some("-7"));
        let d: RawDocument = serde_json::from_str(r#"{"id":null,"text":"x"}"#).unwrap();
        assert_eq!(d.id, None);
        let d: RawDocument = serde_json::from_str(r#"{"text":"x"}"#).unwrap();
        assert_eq!(d.id, None);
    }

    #[test]
    fn float_or_object_id_rejected() {
        assert!(serde_json::from_str::<RawDocument>(r#"{"id":1.5}"#).is_err());
        assert!(serde_json::from_str::<RawDocument>(r#"{"id":{"a":1}}"#).is_err());
        assert!(serde_json::from_str::<RawDocument>(r#"{"id":true}"#).is_err());
    }

    #[test]
    fn bow_alias_and_meta() {
        let d: RawDocument = serde_json::from_str(
            r#"{"meta":{"package":"git","n":[1,2]},"id":"git","bow":{"commit":3,"branch":1},
                "paths":[["Development"],["Development","RevisionControl"]],
                "split":"train","features":{"year":2001}}"#,
        )
        .unwrap();
        let counts = d.counts.unwrap();
        assert_eq!(counts.get("commit"), Some(&3.0));
        assert_eq!(counts.len(), 2);
        assert_eq!(d.paths.unwrap()[1], vec!["Development", "RevisionControl"]);
        assert_eq!(d.split.as_deref(), Some("train"));
        assert_eq!(d.features.unwrap()["year"], 2001.0);
        assert_eq!(d.meta.unwrap()["package"], "git");
        assert!(d.text.is_none());
        assert!(d.labels.is_none());
        assert!(serde_json::from_str::<RawDocument>(r#"{"text":"x","meta":"git"}"#).is_err(), "meta is an object");
    }

    #[test]
    fn unknown_keys_name_the_document_line_and_nearest_key() {
        let e = document_from_value(serde_json::json!({"text": "x", "lables": ["a"]}), 3, Some(4)).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("documents[3].lables"));
        assert_eq!(e.line, Some(4));
        assert_eq!(e.message, r#"unknown key "lables" in document 3 (line 4); did you mean "labels"?"#);
        let e = document_from_value(serde_json::json!({"text": "x", "package": "git"}), 0, None).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("documents[0].package"));
        assert_eq!(e.line, None);
        assert!(e.message.starts_with(r#"unknown key "package" in document 0; known keys: id, text, bow, counts"#), "{}", e.message);
        assert!(e.message.ends_with(r#"keep other data under "meta""#), "{}", e.message);
        // Other errors keep their field path.
        let e = document_from_value(serde_json::json!({"counts": {"a": "two"}}), 1, Some(2)).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("documents[1].counts.a"));
        let d = document_from_value(serde_json::json!({"text": "x", "meta": {"title": "T"}}), 0, Some(1)).unwrap();
        assert_eq!(d.meta.unwrap()["title"], "T");
    }

    #[test]
    fn counts_under_own_name() {
        let d: RawDocument = serde_json::from_str(r#"{"counts":{"a":1},"labels":["x","y/z"]}"#).unwrap();
        assert_eq!(d.counts.unwrap()["a"], 1.0);
        assert_eq!(d.labels.unwrap(), vec!["x", "y/z"]);
    }

    #[test]
    fn tree_entry_is_strict() {
        let e: TreeEntry = serde_json::from_str(r#"{"label":"a","parent":null}"#).unwrap();
        assert_eq!(e, TreeEntry { label: "a".into(), parent: None });
        let e: TreeEntry = serde_json::from_str(r#"{"label":"b"}"#).unwrap();
        assert_eq!(e.parent, None);
        let e: TreeEntry = serde_json::from_str(r#"{"label":"b","parent":"a"}"#).unwrap();
        assert_eq!(e.parent.as_deref(), Some("a"));
        assert!(serde_json::from_str::<TreeEntry>(r#"{"label":"a","parnet":"b"}"#).is_err());
        assert!(serde_json::from_str::<TreeEntry>(r#"{"parent":"b"}"#).is_err());
    }

    #[test]
    fn parse_count_rules() {
        assert_eq!(parse_count(0.0), Ok(0));
        assert_eq!(parse_count(3.0), Ok(3));
        assert!(parse_count(-1.0).is_err());
        assert!(parse_count(1.5).is_err());
        assert!(parse_count(f64::NAN).is_err());
        assert!(parse_count(f64::INFINITY).is_err());
        assert!(parse_count(1e12).is_err());
    }
}
