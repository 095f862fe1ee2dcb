//! Documents' `meta`: what a user keeps beside a document without it being a model
//! input (a title, a URL, a package name).
//!
//! Why it exists: documents refuse unknown keys (a typo must not vanish silently), so
//! the extra keys real data files carry need one place to go. `meta` is any JSON object,
//! kept as its serialised text per document (postcard cannot encode a `serde_json::Value`
//! tree, and nothing reads inside it), bounded by [`MAX_META_BYTES`] so one upload
//! cannot make every later read of its corpus slow. It is stored as a trailer of the
//! corpus blob (see [`super::order`] for the layout), so corpora stored before it
//! existed decode unchanged, and fits, which read only the corpus, never pay for it.
//! Representative documents return it.

use super::CorpusError;
use serde_json::{Map, Value};

/// Most bytes a document's `meta` may take, serialised as compact JSON.
pub const MAX_META_BYTES: usize = 16 * 1024;

/// The tag of the corpus blob's meta trailer (the token-order trailer's is
/// [`super::blob::ORDER_TRAILER_VERSION`]).
pub const META_TRAILER: u32 = 2;

/// A document's `meta` as stored: its compact JSON text, checked against
/// [`MAX_META_BYTES`]; the error names `documents[index].meta`.
pub fn serialise(meta: &Map<String, Value>, index: usize) -> Result<String, CorpusError> {
    let text = serde_json::to_string(meta).expect("a JSON object serialises");
    if text.len() > MAX_META_BYTES {
        return Err(CorpusError::field(
            format!("documents[{index}].meta"),
            format!("the meta of document {index} is {} bytes as JSON; at most {MAX_META_BYTES} are kept per document", text.len()),
        ));
    }
    Ok(text)
}

/// A stored `meta` back as JSON (`None` when the text is not a JSON object, which a
/// blob written by [`serialise`] never holds).
pub fn parse(text: &str) -> Option<Value> {
    serde_json::from_str::<Value>(text).ok().filter(Value::is_object)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn meta_is_kept_as_compact_json_and_bounded() {
        let meta = json!({"title": "Git", "tags": ["vcs", 1]});
        let text = serialise(meta.as_object().unwrap(), 0).unwrap();
        assert_eq!(text, r#"{"tags":["vcs",1],"title":"Git"}"#);
        assert_eq!(parse(&text), Some(meta));
        let big = json!({"x": "a".repeat(MAX_META_BYTES)});
        let e = serialise(big.as_object().unwrap(), 7).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("documents[7].meta"));
        assert!(e.message.contains("document 7") && e.message.contains("16384"), "{}", e.message);
        let just_fits = json!({"x": "a".repeat(MAX_META_BYTES - 8)});
        assert_eq!(serde_json::to_string(&just_fits).unwrap().len(), MAX_META_BYTES);
        assert!(serialise(just_fits.as_object().unwrap(), 0).is_ok());
        assert_eq!(parse("[1]"), None);
    }
}
