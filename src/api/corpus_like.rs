//! `POST /v1/corpora?like=<corpus id>`: new documents preprocessed as a stored corpus
//! was, so an update of a model fitted on it reads them in its own word ids.
//!
//! Why it exists: the upload handlers (`corpora`) read options from the body or the
//! query; a corpus made *like* another takes that corpus' options, label tree and
//! lexicon instead ([`crate::corpus::like`]) and refuses to be given its own. This
//! module reads the named corpus into a [`LikeBase`] and builds a JSON upload on it;
//! NDJSON uploads use [`crate::corpus::ndjson::NdjsonReader::like`].

use super::error::{ApiError, ApiResult};
use super::extract::parse_json;
use super::AppState;
use crate::corpus::like::{LikeBase, Unknown};
use crate::corpus::{Corpus, CorpusBuilder, CorpusError, PreprocessOptions, RawDocument, TokenLimits};
use serde::Deserialize;

/// The `like` query parameter's name.
pub const LIKE: &str = "like";
/// The query parameter that says what a corpus made like another does with labels and
/// categorical levels the other lacks: `refuse` (the default) or `drop`.
pub const UNKNOWN: &str = "unknown";

/// The `unknown` query parameter: a 422 naming `query.unknown` for another value, or
/// when the upload is not made like another corpus.
pub fn unknown_of(pairs: &[(String, String)], like: bool) -> ApiResult<Unknown> {
    match pairs.iter().find(|(k, _)| k == UNKNOWN).map(|(_, v)| v.as_str()) {
        None => Ok(Unknown::Refuse),
        Some(_) if !like => Err(ApiError::invalid("query.unknown", "applies to documents preprocessed like another corpus: give like=<corpus id> too")),
        Some("refuse") => Ok(Unknown::Refuse),
        Some("drop") => Ok(Unknown::Drop),
        Some(other) => Err(ApiError::invalid("query.unknown", format!("must be refuse or drop, got {other:?}"))),
    }
}

/// The stored corpus `id` as the base of a corpus made like it: a 422 naming
/// `query.like` when there is none.
pub async fn like_base(state: &AppState, id: &str) -> ApiResult<LikeBase> {
    let row = state.store.get_corpus(id).await?.ok_or_else(|| ApiError::invalid("query.like", format!("there is no corpus {id:?} to preprocess like")))?;
    let options: PreprocessOptions = serde_json::from_value(row.summary["preprocess"].clone()).unwrap_or_default();
    let blob = state.store.corpus_data(id).await?.ok_or_else(|| ApiError::invalid("query.like", format!("corpus {id:?} was deleted")))?;
    tokio::task::spawn_blocking(move || {
        let corpus = Corpus::decode_without_order(&blob).map_err(ApiError::internal)?;
        // The options in force are the summary's (the lexicon does not store every one).
        let options = PreprocessOptions { label_identity: options.label_identity, ..corpus.lexicon.options.clone() };
        Ok(LikeBase::of(&corpus, options))
    })
    .await
    .map_err(ApiError::internal)?
}

/// A JSON upload made like another corpus: a name and documents, nothing that would
/// preprocess them otherwise.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LikeUpload {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    documents: Vec<RawDocument>,
}

/// Build a JSON upload's documents like `base` (on a blocking thread).
pub fn build_like_json(bytes: &[u8], caps: TokenLimits, base: LikeBase) -> ApiResult<(Option<String>, Corpus)> {
    if let Ok(serde_json::Value::Object(fields)) = serde_json::from_slice::<serde_json::Value>(bytes) {
        if let Some(key) = ["preprocess", "tree", "label_separator", "synthetic"].into_iter().find(|k| fields.contains_key(*k)) {
            return Err(ApiError::invalid(key, format!("documents preprocessed like another corpus take its {key}: leave out {key:?}")));
        }
    }
    let upload: LikeUpload = parse_json(bytes)?;
    let mut builder = CorpusBuilder::like(base)?.with_token_limits(caps);
    let without_line = |mut e: CorpusError| {
        e.line = None;
        ApiError::from(e)
    };
    for (i, doc) in upload.documents.into_iter().enumerate() {
        builder.add_document(doc, i, None).map_err(without_line)?;
    }
    Ok((upload.name, builder.finish().map_err(without_line)?))
}

/// An NDJSON upload made like another corpus takes a `name` and nothing else that
/// preprocesses: a 422 naming the first other query parameter.
pub fn check_like_query(pairs: &[(String, String)]) -> ApiResult<()> {
    match pairs.iter().find(|(k, _)| k != "name" && k != LIKE && k != UNKNOWN) {
        Some((key, _)) => {
            Err(ApiError::invalid(format!("query.{key}"), "documents preprocessed like another corpus take its options: give only name, like and unknown"))
        }
        None => Ok(()),
    }
}
