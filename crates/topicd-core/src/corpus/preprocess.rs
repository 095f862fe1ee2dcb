//! Preprocessing options: how text becomes terms and which terms survive pruning.
//!
//! Why it exists: the options are part of a corpus' identity. They are given once at
//! upload (as JSON, or as query parameters for NDJSON streams), validated here with
//! field paths the client can act on (`preprocess.max_df`), and stored inside the
//! [`crate::corpus::Lexicon`] so that prediction-time documents are processed the same
//! way.

use std::collections::HashSet;
use std::fmt;

use serde::de::{self, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::CorpusError;

/// Which stop words to remove.
///
/// JSON (and any human-readable format): the string `"english"` (built-in list), the
/// string `"none"`, or an array of words. Binary formats (postcard) use a plain tagged
/// enum instead, since they cannot distinguish a string from an array untagged.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum StopWords {
    /// The built-in English list ([`crate::corpus::stopwords::english`]).
    #[default]
    English,
    /// No stop-word removal.
    None,
    /// A custom list (replaces the built-in one).
    List(Vec<String>),
}

/// Plain enum form used by non-self-describing formats (e.g. postcard), which cannot
/// tell a string from an array without a tag.
#[derive(Serialize)]
#[serde(rename = "StopWords")]
enum StopWordsRef<'a> {
    English,
    None,
    List(&'a [String]),
}

/// Owned counterpart of [`StopWordsRef`] (same variant order).
#[derive(Deserialize)]
#[serde(rename = "StopWords")]
enum StopWordsRepr {
    English,
    None,
    List(Vec<String>),
}

impl Serialize for StopWords {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if !serializer.is_human_readable() {
            return match self {
                StopWords::English => StopWordsRef::English,
                StopWords::None => StopWordsRef::None,
                StopWords::List(words) => StopWordsRef::List(words),
            }
            .serialize(serializer);
        }
        match self {
            StopWords::English => serializer.serialize_str("english"),
            StopWords::None => serializer.serialize_str("none"),
            StopWords::List(words) => words.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for StopWords {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if !deserializer.is_human_readable() {
            return Ok(match StopWordsRepr::deserialize(deserializer)? {
                StopWordsRepr::English => StopWords::English,
                StopWordsRepr::None => StopWords::None,
                StopWordsRepr::List(words) => StopWords::List(words),
            });
        }
        struct StopWordsVisitor;

        impl<'de> Visitor<'de> for StopWordsVisitor {
            type Value = StopWords;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(r#""english", "none" or an array of stop words"#)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<StopWords, E> {
                match v {
                    "english" => Ok(StopWords::English),
                    "none" => Ok(StopWords::None),
                    other => Err(E::invalid_value(de::Unexpected::Str(other), &self)),
                }
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<StopWords, A::Error> {
                let mut words = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(w) = seq.next_element::<String>()? {
                    words.push(w);
                }
                Ok(StopWords::List(words))
            }
        }

        deserializer.deserialize_any(StopWordsVisitor)
    }
}

/// How documents are turned into terms and how the vocabulary is pruned.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct PreprocessOptions {
    /// Unicode-aware lowercasing of tokens (default true).
    pub lowercase: bool,
    /// Stop words to remove (default the built-in English list).
    pub stopwords: StopWords,
    /// Snowball (Porter 2) English stemming (default false).
    pub stem: bool,
    /// Tokens shorter than this many characters are dropped (default 2).
    pub min_token_length: usize,
    /// Keep tokens without any alphabetic character, such as "2024" (default false).
    pub keep_numbers: bool,
    /// Minimum number of documents a term must appear in (default 1).
    pub min_df: usize,
    /// Maximum fraction of documents a term may appear in, in (0, 1] (default 1.0).
    pub max_df: f64,
    /// Keep only the N most frequent terms (by total count), after the df filters.
    pub top_n: Option<usize>,
    /// Keep only this fraction (rounded up) of the most frequent terms, after the df
    /// filters. With `top_n` too, the smaller of the two limits applies.
    pub top_fraction: Option<f64>,
    /// Labels containing this string are paths (`a/b/c`); `None` disables paths.
    pub label_separator: Option<String>,
    /// What to do with a document whose id was already used (default: reject the
    /// upload with a 422 naming both documents).
    pub duplicate_ids: DuplicateIds,
    /// What makes two labels the same label: their name (default) or their path from
    /// the root. Only the label tree depends on it, so a [`super::Lexicon`] does not
    /// store it (see there); the corpus summary keeps it.
    pub label_identity: LabelIdentity,
}

/// What makes two labels the same label ([`PreprocessOptions::label_identity`]).
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum LabelIdentity {
    /// A label is its name: `a/b/arm` and `c/arm` name one label `arm`, given two
    /// parents (a 422).
    #[default]
    Name,
    /// A label is its path from the root, and is named by it: `a/b/arm` and `c/arm`
    /// are two labels, named `a/b/arm` and `c/arm`. A plain label `arm` is the
    /// top-level `arm`. Needs a `label_separator` (names are paths joined by it).
    Path,
}

/// Policy for repeated document ids.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum DuplicateIds {
    /// The upload fails with a 422 naming the line.
    #[default]
    Reject,
    /// The first document with an id is kept; later ones are skipped and reported.
    KeepFirst,
}

impl Default for PreprocessOptions {
    fn default() -> Self {
        PreprocessOptions {
            lowercase: true,
            stopwords: StopWords::English,
            stem: false,
            min_token_length: 2,
            keep_numbers: false,
            min_df: 1,
            max_df: 1.0,
            top_n: None,
            top_fraction: None,
            label_separator: Some("/".to_owned()),
            duplicate_ids: DuplicateIds::Reject,
            label_identity: LabelIdentity::Name,
        }
    }
}

fn bad(name: &str, message: impl Into<String>) -> CorpusError {
    CorpusError::field(format!("preprocess.{name}"), message)
}

impl PreprocessOptions {
    /// Checks value ranges; the error's field is `preprocess.<name>`.
    pub fn validate(&self) -> Result<(), CorpusError> {
        if self.min_token_length < 1 {
            return Err(bad("min_token_length", "min_token_length must be at least 1"));
        }
        if self.min_df < 1 {
            return Err(bad("min_df", "min_df must be at least 1"));
        }
        if !(self.max_df > 0.0 && self.max_df <= 1.0) {
            return Err(bad("max_df", format!("max_df must be a fraction of documents in (0, 1], got {}", self.max_df)));
        }
        if self.top_n == Some(0) {
            return Err(bad("top_n", "top_n must be at least 1"));
        }
        if let Some(f) = self.top_fraction {
            if !(f > 0.0 && f <= 1.0) {
                return Err(bad("top_fraction", format!("top_fraction must be in (0, 1], got {f}")));
            }
        }
        if let Some(sep) = &self.label_separator {
            if sep.is_empty() {
                return Err(bad("label_separator", "label_separator must not be empty (use null to disable label paths)"));
            }
        }
        if self.label_identity == LabelIdentity::Path && self.label_separator.is_none() {
            return Err(bad("label_identity", "label_identity path names each label by its path joined with label_separator: give a label_separator"));
        }
        Ok(())
    }

    /// Reads options from URL query pairs (used for NDJSON uploads, whose body holds
    /// only documents). Keys are the field names; booleans are `true`/`false`;
    /// `stopwords` is `english`, `none` or a comma-separated list (empty = none);
    /// an empty `label_separator`, `top_n` or `top_fraction` means "not set". The key
    /// `name` (the corpus name, handled by the caller) is ignored; any other unknown or
    /// repeated key is an error naming it. The result is validated.
    pub fn from_query_pairs(pairs: &[(String, String)]) -> Result<Self, CorpusError> {
        let mut opts = PreprocessOptions::default();
        let mut seen: HashSet<&str> = HashSet::new();
        for (key, value) in pairs {
            let key = key.as_str();
            if key == "name" {
                continue;
            }
            if !seen.insert(key) {
                return Err(bad(key, format!("query parameter '{key}' given more than once")));
            }
            match key {
                "lowercase" => opts.lowercase = parse_bool(key, value)?,
                "stem" => opts.stem = parse_bool(key, value)?,
                "keep_numbers" => opts.keep_numbers = parse_bool(key, value)?,
                "min_token_length" => opts.min_token_length = parse_num(key, value)?,
                "min_df" => opts.min_df = parse_num(key, value)?,
                "max_df" => opts.max_df = parse_num(key, value)?,
                "top_n" => opts.top_n = parse_opt(key, value)?,
                "top_fraction" => opts.top_fraction = parse_opt(key, value)?,
                "duplicate_ids" => {
                    opts.duplicate_ids = match value.as_str() {
                        "reject" => DuplicateIds::Reject,
                        "keep_first" => DuplicateIds::KeepFirst,
                        _ => return Err(bad(key, format!("duplicate_ids must be reject or keep_first, got '{value}'"))),
                    }
                }
                "label_identity" => {
                    opts.label_identity = match value.as_str() {
                        "name" => LabelIdentity::Name,
                        "path" => LabelIdentity::Path,
                        _ => return Err(bad(key, format!("label_identity must be name or path, got '{value}'"))),
                    }
                }
                "label_separator" => opts.label_separator = (!value.is_empty()).then(|| value.clone()),
                "stopwords" => {
                    opts.stopwords = match value.trim() {
                        "english" => StopWords::English,
                        "none" | "" => StopWords::None,
                        list => StopWords::List(list.split(',').map(str::trim).filter(|w| !w.is_empty()).map(str::to_owned).collect()),
                    }
                }
                _ => return Err(CorpusError::field(key, format!("unknown query parameter '{key}'"))),
            }
        }
        opts.validate()?;
        Ok(opts)
    }
}

fn parse_bool(key: &str, value: &str) -> Result<bool, CorpusError> {
    match value {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(bad(key, format!("{key} must be true or false, got '{value}'"))),
    }
}

fn parse_num<T: std::str::FromStr>(key: &str, value: &str) -> Result<T, CorpusError> {
    value.trim().parse().map_err(|_| bad(key, format!("{key} must be a number, got '{value}'")))
}

fn parse_opt<T: std::str::FromStr>(key: &str, value: &str) -> Result<Option<T>, CorpusError> {
    if value.trim().is_empty() {
        Ok(None)
    } else {
        parse_num(key, value).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn defaults() {
        let o = PreprocessOptions::default();
        assert!(o.lowercase && !o.stem && !o.keep_numbers);
        assert_eq!(o.stopwords, StopWords::English);
        assert_eq!(o.min_token_length, 2);
        assert_eq!((o.min_df, o.max_df), (1, 1.0));
        assert_eq!((o.top_n, o.top_fraction), (None, None));
        assert_eq!(o.label_separator.as_deref(), Some("/"));
        assert!(o.validate().is_ok());
        let from_empty: PreprocessOptions = serde_json::from_str("{}").unwrap();
        assert_eq!(from_empty, o);
    }

    #[test]
    fn json_roundtrip_and_partial() {
        let o: PreprocessOptions = serde_json::from_str(r#"{"stem":true,"stopwords":["foo","bar"],"top_n":10,"label_separator":null}"#).unwrap();
        assert!(o.stem);
        assert_eq!(o.stopwords, StopWords::List(vec!["foo".into(), "bar".into()]));
        assert_eq!(o.top_n, Some(10));
        assert_eq!(o.label_separator, None);
        assert_eq!(o.min_df, 1);
        let back: PreprocessOptions = serde_json::from_str(&serde_json::to_string(&o).unwrap()).unwrap();
        assert_eq!(back, o);
    }

    #[test]
    fn unknown_option_rejected() {
        let e = serde_json::from_str::<PreprocessOptions>(r#"{"min_dff":2}"#).unwrap_err();
        assert!(e.to_string().contains("min_dff"), "{e}");
    }

    #[test]
    fn stopwords_serde() {
        assert_eq!(serde_json::to_string(&StopWords::English).unwrap(), r#""english""#);
        assert_eq!(serde_json::to_string(&StopWords::None).unwrap(), r#""none""#);
        assert_eq!(serde_json::to_string(&StopWords::List(vec!["a".into()])).unwrap(), r#"["a"]"#);
        assert_eq!(serde_json::from_str::<StopWords>(r#""english""#).unwrap(), StopWords::English);
        assert_eq!(serde_json::from_str::<StopWords>(r#""none""#).unwrap(), StopWords::None);
        assert_eq!(serde_json::from_str::<StopWords>(r#"["x","y"]"#).unwrap(), StopWords::List(vec!["x".into(), "y".into()]));
        assert!(serde_json::from_str::<StopWords>(r#""french""#).is_err());
        assert!(serde_json::from_str::<StopWords>("3").is_err());
        assert!(serde_json::from_str::<StopWords>("[1]").is_err());
    }

    #[test]
    fn validate_names_field() {
        let check = |o: PreprocessOptions, field: &str| {
            let e = o.validate().unwrap_err();
            assert_eq!(e.field.as_deref(), Some(field), "{e:?}");
        };
        let d = PreprocessOptions::default;
        check(PreprocessOptions { max_df: 0.0, ..d() }, "preprocess.max_df");
        check(PreprocessOptions { max_df: 1.5, ..d() }, "preprocess.max_df");
        check(PreprocessOptions { max_df: f64::NAN, ..d() }, "preprocess.max_df");
        check(PreprocessOptions { top_fraction: Some(0.0), ..d() }, "preprocess.top_fraction");
        check(PreprocessOptions { top_fraction: Some(f64::NAN), ..d() }, "preprocess.top_fraction");
        check(PreprocessOptions { top_fraction: Some(1.01), ..d() }, "preprocess.top_fraction");
        check(PreprocessOptions { top_n: Some(0), ..d() }, "preprocess.top_n");
        check(PreprocessOptions { min_df: 0, ..d() }, "preprocess.min_df");
        check(PreprocessOptions { min_token_length: 0, ..d() }, "preprocess.min_token_length");
        check(PreprocessOptions { label_separator: Some(String::new()), ..d() }, "preprocess.label_separator");
        check(PreprocessOptions { label_identity: LabelIdentity::Path, label_separator: None, ..d() }, "preprocess.label_identity");
        assert!(PreprocessOptions { label_identity: LabelIdentity::Path, ..d() }.validate().is_ok());
        assert!(PreprocessOptions { max_df: 1.0, top_fraction: Some(1.0), top_n: Some(1), ..d() }.validate().is_ok());
    }

    #[test]
    fn query_pairs() {
        let o = PreprocessOptions::from_query_pairs(&pairs(&[
            ("name", "my corpus"),
            ("stem", "true"),
            ("lowercase", "false"),
            ("min_df", "3"),
            ("max_df", "0.5"),
            ("top_n", "100"),
            ("top_fraction", ""),
            ("stopwords", "a, b,,c"),
            ("label_separator", ""),
            ("keep_numbers", "true"),
            ("min_token_length", "3"),
        ]))
        .unwrap();
        assert!(o.stem && !o.lowercase && o.keep_numbers);
        assert_eq!((o.min_df, o.max_df, o.top_n, o.top_fraction), (3, 0.5, Some(100), None));
        assert_eq!(o.stopwords, StopWords::List(vec!["a".into(), "b".into(), "c".into()]));
        assert_eq!(o.label_separator, None);
        assert_eq!(o.min_token_length, 3);

        let o = PreprocessOptions::from_query_pairs(&pairs(&[("stopwords", "none")])).unwrap();
        assert_eq!(o.stopwords, StopWords::None);
        let o = PreprocessOptions::from_query_pairs(&pairs(&[("stopwords", "english")])).unwrap();
        assert_eq!(o.stopwords, StopWords::English);
        let o = PreprocessOptions::from_query_pairs(&pairs(&[("label_separator", "::")])).unwrap();
        assert_eq!(o.label_separator.as_deref(), Some("::"));
        assert_eq!(PreprocessOptions::from_query_pairs(&[]).unwrap(), PreprocessOptions::default());
    }

    #[test]
    fn query_pair_errors() {
        let e = PreprocessOptions::from_query_pairs(&pairs(&[("colour", "red")])).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("colour"));
        assert!(e.message.contains("colour"));
        let e = PreprocessOptions::from_query_pairs(&pairs(&[("stem", "yes")])).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("preprocess.stem"));
        let e = PreprocessOptions::from_query_pairs(&pairs(&[("min_df", "-1")])).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("preprocess.min_df"));
        let e = PreprocessOptions::from_query_pairs(&pairs(&[("max_df", "2")])).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("preprocess.max_df"));
        let e = PreprocessOptions::from_query_pairs(&pairs(&[("max_df", "NaN")])).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("preprocess.max_df"));
        let e = PreprocessOptions::from_query_pairs(&pairs(&[("top_n", "0")])).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("preprocess.top_n"));
        let e = PreprocessOptions::from_query_pairs(&pairs(&[("stem", "true"), ("stem", "false")])).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("preprocess.stem"));
        let e = PreprocessOptions::from_query_pairs(&pairs(&[("label_identity", "full")])).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("preprocess.label_identity"));
        let o = PreprocessOptions::from_query_pairs(&pairs(&[("label_identity", "path")])).unwrap();
        assert_eq!(o.label_identity, LabelIdentity::Path);
        // JSON: a value outside the enum is an error naming it.
        let e = serde_json::from_str::<PreprocessOptions>(r#"{"label_identity":"full"}"#).unwrap_err();
        assert!(e.to_string().contains("full"), "{e}");
    }
}
