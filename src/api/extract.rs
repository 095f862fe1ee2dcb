//! Request parsing with problem+json errors: JSON bodies, query strings, pagination.
//!
//! Why it exists: axum's own extractors answer bad input with plain-text bodies. These
//! helpers give malformed JSON a 400 with line and column, and a well-formed body with
//! a wrong field a 422 naming the field's path. They also refuse what serde would
//! otherwise take silently: a body (or a struct inside it) given as an array, read by
//! position; a query key given twice, of which one would be dropped; a name longer
//! than [`MAX_NAME_BYTES`].

use super::error::{ApiError, ApiResult};
use crate::unknown_keys::{describe_data_error, parse_serde_unknown_field, unknown_key_message};
use axum::http::HeaderMap;
use serde::de::DeserializeOwned;
use serde::Deserialize;

#[path = "json_objects.rs"]
mod json_objects;

/// Parse a JSON body into `T`, naming the failing field. Every request body is a JSON
/// object: any other top-level value is a 422 at `body`, and a struct inside it given
/// as an array is a 422 at its path ([`json_objects`]).
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> ApiResult<T> {
    require_object(bytes)?;
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(json_objects::ObjectsOnly(&mut de)).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        match inner.classify() {
            serde_json::error::Category::Syntax | serde_json::error::Category::Eof | serde_json::error::Category::Io => {
                ApiError::malformed_json(format!("the body is not valid JSON: {inner}"))
            }
            serde_json::error::Category::Data => data_error(&path, &inner.to_string(), None),
        }
    })?;
    de.end().map_err(|e| ApiError::malformed_json(format!("trailing characters after the JSON value: {e}")))?;
    Ok(value)
}

/// A 422 at `body` unless the body's top-level value is a JSON object: serde would read
/// a struct from an array by position (`["n", [...]]` as a corpus). Only the first
/// byte is looked at, then a body that is not well-formed JSON either keeps its 400.
fn require_object(bytes: &[u8]) -> ApiResult<()> {
    let found = match bytes.iter().find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r')) {
        None | Some(b'{') => return Ok(()),
        Some(b'[') => "an array",
        Some(b'"') => "a string",
        Some(b't' | b'f') => "a boolean",
        Some(b'n') => "null",
        Some(_) => "a number",
    };
    let mut de = serde_json::Deserializer::from_slice(bytes);
    // Whether it is well-formed, in one streaming pass that keeps nothing.
    match serde::de::IgnoredAny::deserialize(&mut de).and_then(|_| de.end()) {
        Ok(()) => Err(ApiError::invalid("body", format!("expected a JSON object, found {found}"))),
        Err(e) => Err(ApiError::malformed_json(format!("the body is not valid JSON: {e}"))),
    }
}

/// The longest name accepted (a corpus, a graph, a topic), in bytes of UTF-8.
pub const MAX_NAME_BYTES: usize = 200;

/// A 422 at `field` when `name` is longer than [`MAX_NAME_BYTES`]: names are listed,
/// logged and exported, and nothing needs a longer one.
pub fn check_name(field: &str, name: &str) -> ApiResult<()> {
    if name.len() > MAX_NAME_BYTES {
        return Err(ApiError::invalid(field, format!("must be at most {MAX_NAME_BYTES} bytes (UTF-8); this one is {} bytes", name.len())));
    }
    Ok(())
}

/// A well-formed value that does not fit its type, as a 422 at the JSON `path` (`.` is
/// the top of the body). An unknown key (serde's `deny_unknown_fields`) names the key,
/// where it was and the nearest known key: field `documents[3].lables`, detail
/// `unknown key "lables" in document 3; did you mean "labels"?`. `line` is an NDJSON
/// line, said in the detail and set on the problem.
pub fn data_error(path: &str, message: &str, line: Option<usize>) -> ApiError {
    let (field, message) = describe_data_error(path, message, line);
    ApiError::invalid(field.unwrap_or_else(|| "body".to_string()), message).with_line(line)
}

/// Read a whole request body, answering an oversized one with a problem+json 413.
pub async fn read_body(body: axum::body::Body, limit: usize) -> ApiResult<axum::body::Bytes> {
    axum::body::to_bytes(body, limit).await.map_err(|_| ApiError::too_large(limit))
}

/// The request's media type, without parameters, lowercased.
pub fn media_type(headers: &HeaderMap) -> String {
    headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|s| s.split(';').next().unwrap_or("").trim().to_ascii_lowercase())
        .unwrap_or_default()
}

/// Require a JSON content type (absent is accepted, for curl users).
pub fn require_json(headers: &HeaderMap) -> ApiResult<()> {
    match media_type(headers).as_str() {
        "" | "application/json" => Ok(()),
        other => Err(ApiError::unsupported_media_type(other)),
    }
}

/// Parse a query string into `T`, naming the failing parameter.
pub fn parse_query<T: DeserializeOwned>(query: Option<&str>) -> ApiResult<T> {
    let q = query.unwrap_or("");
    serde_urlencoded_like(q)
}

fn serde_urlencoded_like<T: DeserializeOwned>(q: &str) -> ApiResult<T> {
    // Query values arrive as strings; convert to a JSON object of strings and let the
    // target type's `deserialize_with` helpers parse numbers.
    let mut map = serde_json::Map::new();
    for (k, v) in unique_form_pairs(q)? {
        map.insert(k, serde_json::Value::String(v));
    }
    let value = serde_json::Value::Object(map);
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let message = e.into_inner().to_string();
        match parse_serde_unknown_field(&message) {
            Some((key, known)) => {
                let known: Vec<&str> = known.iter().map(String::as_str).collect();
                ApiError::invalid(format!("query.{key}"), unknown_key_message(&key, "in the query", &known))
            }
            None => ApiError::invalid(format!("query.{path}"), message),
        }
    })
}

/// [`form_pairs`], with a key given more than once (after decoding) a 422 at
/// `query.<key>`: which of the values would count is not for the server to guess.
pub fn unique_form_pairs(q: &str) -> ApiResult<Vec<(String, String)>> {
    let pairs = form_pairs(q);
    let mut seen = std::collections::HashSet::with_capacity(pairs.len());
    for (k, _) in &pairs {
        if !seen.insert(k.as_str()) {
            return Err(ApiError::invalid(format!("query.{k}"), "given more than once; give each query parameter once"));
        }
    }
    Ok(pairs)
}

/// Decode `a=1&b=x%20y` into pairs.
pub fn form_pairs(q: &str) -> Vec<(String, String)> {
    q.split('&')
        .filter(|s| !s.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Deserialize a number that arrives as a query-string value.
pub mod from_str {
    use serde::{de::Error, Deserialize, Deserializer};
    use std::str::FromStr;

    pub fn opt<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
    where
        D: Deserializer<'de>,
        T: FromStr,
        T::Err: std::fmt::Display,
    {
        let s: Option<String> = Option::deserialize(d)?;
        s.map(|s| s.parse::<T>().map_err(|e| D::Error::custom(format!("{s:?}: {e}")))).transpose()
    }
}

/// `?offset=&limit=` on list endpoints.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Page {
    #[serde(default, deserialize_with = "from_str::opt")]
    pub offset: Option<i64>,
    #[serde(default, deserialize_with = "from_str::opt")]
    pub limit: Option<i64>,
    /// Only for `GET /v1/jobs`.
    #[serde(default)]
    pub status: Option<String>,
}

pub const DEFAULT_PAGE: i64 = 50;
pub const MAX_PAGE: i64 = 500;
/// The largest offset: 2^53 - 1, the largest integer every JSON client reads exactly.
pub const MAX_OFFSET: i64 = (1 << 53) - 1;

impl Page {
    /// Checked (offset, limit).
    pub fn bounds(&self) -> ApiResult<(i64, i64)> {
        let offset = self.offset.unwrap_or(0);
        let limit = self.limit.unwrap_or(DEFAULT_PAGE);
        if !(0..=MAX_OFFSET).contains(&offset) {
            return Err(ApiError::invalid("query.offset", format!("must be between 0 and {MAX_OFFSET}")));
        }
        if !(1..=MAX_PAGE).contains(&limit) {
            return Err(ApiError::invalid("query.limit", format!("must be between 1 and {MAX_PAGE}")));
        }
        Ok((offset, limit))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Body {
        name: String,
        n: u32,
    }

    #[test]
    fn malformed_json_is_400_and_bad_field_is_422() {
        assert_eq!(parse_json::<Body>(b"{not json").unwrap_err().status.as_u16(), 400);
        let e = parse_json::<Body>(br#"{"name": "a", "n": -1}"#).unwrap_err();
        assert_eq!(e.status.as_u16(), 422);
        assert_eq!(e.field.as_deref(), Some("n"));
        let e = parse_json::<Body>(br#"{"name": "a", "n": 1, "x": 2}"#).unwrap_err();
        assert_eq!(e.status.as_u16(), 422);
        assert_eq!(e.field.as_deref(), Some("x"));
        assert_eq!(e.detail, r#"unknown key "x"; known keys: name, n"#);
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Outer {
        documents: Vec<Body>,
    }

    #[test]
    fn unknown_keys_name_their_place_and_the_nearest_key() {
        let e = parse_json::<Outer>(br#"{"documents": [{"name": "a", "n": 1}, {"name": "b", "nn": 2}]}"#).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("documents[1].nn"));
        assert_eq!(e.detail, r#"unknown key "nn" in document 1; did you mean "n"?"#);
        assert_eq!(e.line, None);
        let e = parse_json::<Outer>(br#"{"documnets": []}"#).unwrap_err();
        assert_eq!((e.field.as_deref(), e.detail.as_str()), (Some("documnets"), r#"unknown key "documnets"; did you mean "documents"?"#));
        let e = data_error("tree[2]", "unknown field `parnet`, expected `label` or `parent`", Some(1));
        assert_eq!((e.field.as_deref(), e.line), (Some("tree[2].parnet"), Some(1)));
        assert_eq!(e.detail, r#"unknown key "parnet" in tree entry 2 (line 1); did you mean "parent"?"#);
        let e = parse_query::<Page>(Some("limt=3")).unwrap_err();
        assert_eq!((e.field.as_deref(), e.detail.as_str()), (Some("query.limt"), r#"unknown key "limt" in the query; did you mean "limit"?"#));
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Graph {
        name: String,
        edges: Vec<(String, String)>,
        #[serde(default)]
        inner: Option<Body>,
    }

    #[test]
    fn a_body_or_a_struct_given_as_an_array_is_refused() {
        for (body, found) in [(r#"["a", 1]"#, "an array"), (r#" "a""#, "a string"), ("null", "null"), ("\n3", "a number"), ("true", "a boolean")] {
            let e = parse_json::<Body>(body.as_bytes()).unwrap_err();
            assert_eq!((e.status.as_u16(), e.field.as_deref()), (422, Some("body")), "{body}");
            assert_eq!(e.detail, format!("expected a JSON object, found {found}"));
        }
        // Not JSON at all stays a 400, whatever its first byte.
        for body in ["nope", "[1,", "[1] x", ""] {
            assert_eq!(parse_json::<Body>(body.as_bytes()).unwrap_err().status.as_u16(), 400, "{body}");
        }
        let e = parse_json::<Outer>(br#"{"documents": [{"name": "a", "n": 1}, ["b", 2]]}"#).unwrap_err();
        assert_eq!((e.status.as_u16(), e.field.as_deref()), (422, Some("documents[1]")));
        assert!(e.detail.starts_with("expected a JSON object, found an array"), "{}", e.detail);
        let e = parse_json::<Graph>(br#"{"name": "g", "edges": [], "inner": ["a", 1]}"#).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("inner"));
        // Tuples, sequences and objects are read as before.
        let g: Graph = parse_json(br#" {"name": "g", "edges": [["a", "b"]], "inner": {"name": "x", "n": 2}}"#).unwrap();
        assert_eq!((g.edges.len(), g.inner.map(|b| b.n)), (1, Some(2)));
    }

    #[test]
    fn a_repeated_query_key_is_refused() {
        let e = parse_query::<Page>(Some("limit=1&offset=0&limit=2")).unwrap_err();
        assert_eq!((e.status.as_u16(), e.field.as_deref()), (422, Some("query.limit")));
        assert!(e.detail.contains("more than once"), "{}", e.detail);
        // Keys are compared as decoded.
        assert_eq!(parse_query::<Page>(Some("limit=1&l%69mit=2")).unwrap_err().field.as_deref(), Some("query.limit"));
        assert_eq!(unique_form_pairs("a=1&b=2").unwrap().len(), 2);
        assert_eq!(unique_form_pairs("a=1&b=2&a").unwrap_err().field.as_deref(), Some("query.a"));
    }

    #[test]
    fn names_are_bounded_in_bytes() {
        assert!(check_name("name", &"x".repeat(MAX_NAME_BYTES)).is_ok());
        assert!(check_name("name", &"é".repeat(MAX_NAME_BYTES / 2)).is_ok());
        let e = check_name("name", &"é".repeat(MAX_NAME_BYTES / 2 + 1)).unwrap_err();
        assert_eq!((e.status.as_u16(), e.field.as_deref()), (422, Some("name")));
        assert_eq!(e.detail, "must be at most 200 bytes (UTF-8); this one is 202 bytes");
    }

    #[test]
    fn query_pairs_decode() {
        assert_eq!(form_pairs("a=1&b=x%20y+z&c"), vec![("a".into(), "1".into()), ("b".into(), "x y z".into()), ("c".into(), "".into())]);
        let p: Page = parse_query(Some("offset=5&limit=10")).unwrap();
        assert_eq!(p.bounds().unwrap(), (5, 10));
        assert!(parse_query::<Page>(Some("limit=abc")).is_err());
        assert!(parse_query::<Page>(Some("bogus=1")).is_err());
        let p: Page = parse_query(Some("limit=0")).unwrap();
        assert!(p.bounds().is_err());
    }
}
