//! `/v1/corpora`: upload (JSON or streamed NDJSON), list, read, delete.

use super::corpus_like;
use super::error::{ApiError, ApiResult};
use super::extract::{check_name, media_type, parse_json, parse_query, unique_form_pairs, Page};
use super::AppState;
use crate::corpus::like::LikeBase;
use crate::corpus::ndjson::{NdjsonError, NdjsonReader};
use crate::corpus::synthetic::{bars, BarsConfig, BarsVariant, Orientation};
use crate::corpus::{Corpus, CorpusBuilder, CorpusError, PreprocessOptions, RawDocument, TokenLimits, TreeEntry};
use crate::store::corpora::NewCorpus;
use crate::store::{CorpusRow, DeleteOutcome};
use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

/// The JSON upload body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CorpusUpload {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    documents: Vec<RawDocument>,
    /// A generated corpus instead of documents (`{"kind": "bars", ...}`).
    #[serde(default)]
    synthetic: Option<SyntheticSpec>,
    #[serde(default)]
    tree: Vec<TreeEntry>,
    #[serde(default)]
    preprocess: PreprocessOptions,
    /// Shorthand for `preprocess.label_separator`; an empty string disables paths.
    #[serde(default)]
    label_separator: Option<String>,
}

/// A synthetic corpus to generate: the bars of Kim & Sudderth (2011, §4.1).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SyntheticSpec {
    kind: String,
    #[serde(default)]
    variant: Option<String>,
    #[serde(default)]
    documents: Option<usize>,
    #[serde(default)]
    tokens: Option<usize>,
    #[serde(default)]
    max_bars: Option<usize>,
    #[serde(default)]
    seed: Option<u64>,
}

/// Most tokens a synthetic corpus may have.
const MAX_SYNTHETIC_TOKENS: usize = 50_000_000;

impl SyntheticSpec {
    fn config(&self) -> ApiResult<BarsConfig> {
        if self.kind != "bars" {
            return Err(ApiError::invalid("synthetic.kind", format!("unknown kind {:?}; known: bars", self.kind)));
        }
        let variant = match self.variant.as_deref() {
            None => BarsVariant::Random,
            Some(v) => BarsVariant::parse(v).ok_or_else(|| ApiError::invalid("synthetic.variant", "must be random or correlated"))?,
        };
        let d = BarsConfig::default();
        let documents = self.documents.unwrap_or(d.documents);
        let tokens = self.tokens.unwrap_or(d.tokens);
        if !(1..=1_000_000).contains(&documents) {
            return Err(ApiError::invalid("synthetic.documents", "must be between 1 and 1000000"));
        }
        if !(1..=100_000).contains(&tokens) {
            return Err(ApiError::invalid("synthetic.tokens", "must be between 1 and 100000"));
        }
        if documents.saturating_mul(tokens) > MAX_SYNTHETIC_TOKENS {
            return Err(ApiError::invalid("synthetic", format!("documents × tokens must be at most {MAX_SYNTHETIC_TOKENS}")));
        }
        let max_bars = self.max_bars.unwrap_or(d.max_bars);
        if !(1..=5).contains(&max_bars) {
            return Err(ApiError::invalid("synthetic.max_bars", "must be between 1 and 5"));
        }
        Ok(BarsConfig { variant, documents, tokens, max_bars, seed: self.seed.unwrap_or(0) })
    }
}

/// The generated corpus and its truth (kept in the corpus summary).
fn build_synthetic(spec: &SyntheticSpec) -> ApiResult<(Corpus, Value)> {
    let config = spec.config()?;
    let generated = bars(&config);
    let corpus = generated.to_corpus();
    let v = generated.words.len();
    let true_topics: Vec<Value> = (0..generated.orientations.len())
        .map(|b| {
            let words: Vec<Value> = (0..v)
                .filter(|&w| generated.topics[b * v + w] > 0.0)
                .map(|w| json!({"word": generated.words[w], "probability": generated.topics[b * v + w]}))
                .collect();
            let orientation = match generated.orientations[b] {
                Orientation::Horizontal => "horizontal",
                Orientation::Vertical => "vertical",
            };
            json!({"id": b, "orientation": orientation, "words": words})
        })
        .collect();
    let variant = match config.variant {
        BarsVariant::Random => "random",
        BarsVariant::Correlated => "correlated",
    };
    let truth = json!({
        "kind": "bars",
        "variant": variant,
        "documents": config.documents,
        "tokens": config.tokens,
        "max_bars": config.max_bars,
        "seed": config.seed,
        "true_topics": true_topics,
    });
    Ok((corpus, truth))
}

/// `POST /v1/corpora`.
pub async fn create(State(state): State<AppState>, headers: HeaderMap, RawQuery(query): RawQuery, body: Body) -> ApiResult<Response> {
    let corpus_id = uuid::Uuid::new_v4().to_string();
    let pairs = unique_form_pairs(query.as_deref().unwrap_or(""))?;
    let like = pairs.iter().find(|(k, _)| k == corpus_like::LIKE).map(|(_, v)| v.clone());
    let unknown = corpus_like::unknown_of(&pairs, like.is_some())?;
    let base = match &like {
        Some(id) => Some(corpus_like::like_base(&state, id).await?.with_unknown(unknown)),
        None => None,
    };
    let (name, corpus, truth) = match media_type(&headers).as_str() {
        "" | "application/json" if base.is_some() => {
            corpus_like::check_like_query(&pairs)?;
            if let Some((key, _)) = pairs.iter().find(|(k, _)| k != corpus_like::LIKE && k != corpus_like::UNKNOWN) {
                return Err(ApiError::invalid(format!("query.{key}"), "a JSON upload gives its name in the body"));
            }
            let bytes = super::body::read_upload(body, state.max_body_bytes, state.limits.upload_idle).await?;
            let caps = state.limits.upload_tokens();
            let base = base.expect("matched");
            let (name, corpus) = tokio::task::spawn_blocking(move || corpus_like::build_like_json(&bytes, caps, base)).await.map_err(ApiError::internal)??;
            (name, corpus, None)
        }
        "" | "application/json" => {
            // Query parameters configure NDJSON uploads; a JSON body carries its own.
            if let Some((key, _)) = pairs.first() {
                return Err(ApiError::invalid(
                    format!("query.{key}"),
                    "query parameters configure NDJSON uploads; a JSON upload gives its options in the body (name, preprocess)",
                ));
            }
            let bytes = super::body::read_upload(body, state.max_body_bytes, state.limits.upload_idle).await?;
            let caps = state.limits.upload_tokens();
            tokio::task::spawn_blocking(move || build_from_json(&bytes, caps)).await.map_err(ApiError::internal)??
        }
        "application/x-ndjson" | "application/jsonl" | "application/json-lines" => {
            let (name, corpus) = ndjson_upload(&state, &pairs, base, body).await?;
            (name, corpus, None)
        }
        other => return Err(ApiError::unsupported_media_type(other)),
    };
    let name = name.unwrap_or_else(|| format!("corpus-{}", &corpus_id[..8]));
    check_name("name", &name)?;
    let mut summary = summary_json(&corpus);
    if let Some(truth) = truth {
        summary["synthetic"] = truth;
    }
    if let Some(like) = like {
        summary["like"] = json!(like);
    }
    let stats = corpus.stats.clone();
    let data = tokio::task::spawn_blocking(move || corpus.encode()).await.map_err(ApiError::internal)?;
    let row = state.store.insert_corpus(NewCorpus { id: &corpus_id, name: &name, stats: &stats, summary, data }).await?;
    tracing::info!(corpus_id = %row.id, documents = row.num_documents, terms = row.num_terms, "corpus stored");
    let location = format!("/v1/corpora/{}", row.id);
    Ok((StatusCode::CREATED, [(header::LOCATION, location)], Json(corpus_json(&row))).into_response())
}

/// A JSON upload: documents (within the token caps), or a synthetic corpus with its truth.
pub(crate) fn build_from_json(bytes: &[u8], caps: TokenLimits) -> ApiResult<(Option<String>, Corpus, Option<Value>)> {
    let upload: CorpusUpload = parse_json(bytes)?;
    if let Some(spec) = &upload.synthetic {
        if !upload.documents.is_empty() || !upload.tree.is_empty() {
            return Err(ApiError::invalid("synthetic", "give documents or a synthetic corpus, not both"));
        }
        if upload.preprocess != PreprocessOptions::default() || upload.label_separator.is_some() {
            return Err(ApiError::invalid("synthetic", "a synthetic corpus takes no preprocessing options: its words are the pixels"));
        }
        let (corpus, truth) = build_synthetic(spec)?;
        return Ok((upload.name, corpus, Some(truth)));
    }
    let mut options = upload.preprocess;
    if let Some(sep) = upload.label_separator {
        options.label_separator = (!sep.is_empty()).then_some(sep);
    }
    let mut builder = CorpusBuilder::new(options, &upload.tree)?.with_token_limits(caps);
    // The field path (`documents[i]...`) locates the error; a JSON body has no lines.
    let without_line = |mut e: CorpusError| {
        e.line = None;
        ApiError::from(e)
    };
    for (i, doc) in upload.documents.into_iter().enumerate() {
        builder.add_document(doc, i, None).map_err(without_line)?;
    }
    Ok((upload.name, builder.finish().map_err(without_line)?, None))
}

/// Stream NDJSON: lines are parsed and added on a blocking thread as they arrive, so
/// memory holds the corpus being built, not the raw upload. A line `{"tree": [...]}`
/// before the first document adds label-tree entries. The upload is cut off when it
/// sends nothing for `--upload-idle-s`; a line longer than `--max-line-mb` is a 413.
async fn ndjson_upload(state: &AppState, pairs: &[(String, String)], base: Option<LikeBase>, body: Body) -> ApiResult<(Option<String>, Corpus)> {
    let name = pairs.iter().find(|(k, _)| k == "name").map(|(_, v)| v.clone());
    if let Some(name) = &name {
        check_name("query.name", name)?;
    }
    let reader = match base {
        Some(base) => {
            corpus_like::check_like_query(pairs)?;
            NdjsonReader::like(base)
        }
        None => NdjsonReader::new(PreprocessOptions::from_query_pairs(pairs).map_err(|e| {
            let mut err = ApiError::from(e);
            err.field = err.field.take().map(|f| format!("query.{}", f.trim_start_matches("preprocess.")));
            err
        })?),
    };
    let reader = reader.with_line_limit(state.limits.max_line_bytes).with_token_limits(state.limits.upload_tokens());
    let (tx, rx) = std::sync::mpsc::sync_channel::<bytes::Bytes>(64);
    let builder_task = tokio::task::spawn_blocking(move || build_from_lines(reader, rx));
    let mut stream = body.into_data_stream();
    let mut received = 0usize;
    let mut read_error = None;
    loop {
        match super::body::next_chunk(&mut stream, state.limits.upload_idle).await {
            Ok(Some(bytes)) => {
                received += bytes.len();
                if received > state.max_body_bytes {
                    read_error = Some(ApiError::too_large(state.max_body_bytes));
                    break;
                }
                // A send error means the builder stopped on bad input: its error wins.
                if tx.send(bytes).is_err() {
                    break;
                }
            }
            Ok(None) => break,
            Err(e) => {
                read_error = Some(e);
                break;
            }
        }
    }
    drop(tx);
    let built = builder_task.await.map_err(ApiError::internal)?;
    if let Some(e) = read_error {
        return Err(e);
    }
    Ok((name, built?))
}

/// Build a corpus from NDJSON chunks as they arrive ([`NdjsonReader`], shared with
/// `topicd fit --input` and the fuzz targets).
fn build_from_lines(mut reader: NdjsonReader, rx: std::sync::mpsc::Receiver<bytes::Bytes>) -> ApiResult<Corpus> {
    for chunk in rx.iter() {
        reader.push(&chunk).map_err(ndjson_error)?;
    }
    reader.finish().map_err(ndjson_error)
}

/// An NDJSON error as problem+json: malformed bytes are a 400, an invalid document or
/// tree a 422; both name the line.
fn ndjson_error(e: NdjsonError) -> ApiError {
    match e {
        NdjsonError::NotUtf8 { line } => ApiError::bad_request("line is not UTF-8").with_line(Some(line)),
        NdjsonError::NotJson { line, ref message } => ApiError::malformed_json(format!("line {line} is not valid JSON: {message}")).with_line(Some(line)),
        NdjsonError::LineTooLong { line, limit } => ApiError::too_large_for(
            "max-line-mb",
            format!("line {line}"),
            format!("line {line} is longer than {limit} bytes, the server's limit for one NDJSON line (--max-line-mb): one document per line, each within it"),
        )
        .with_line(Some(line)),
        NdjsonError::Invalid(e) => ApiError::from(e),
    }
}

/// The corpus summary kept beside the blob (what `GET` shows without decoding it).
pub(super) fn summary_json(c: &Corpus) -> Value {
    let labels: Vec<Value> =
        (0..c.labels.len()).map(|k| json!({"label": c.labels.names[k], "parent": c.labels.parent[k].map(|p| c.labels.names[p as usize].clone())})).collect();
    json!({
        "stats": c.stats,
        "preprocess": c.lexicon.options,
        "labels": labels,
        "features": c.features.as_ref().map(|f| f.names.clone()).unwrap_or_default(),
        "covariates": c.stats.covariates,
        "has_splits": c.splits.is_some(),
        "unknown_dropped": c.stats.unknown_dropped,
    })
}

/// The wire form of a corpus.
pub fn corpus_json(r: &CorpusRow) -> Value {
    let stats = &r.summary["stats"];
    // The options in force: corpora stored before `label_identity` existed used names.
    let mut preprocess = r.summary["preprocess"].clone();
    if let Some(o) = preprocess.as_object_mut() {
        o.entry("label_identity").or_insert(json!("name"));
    }
    json!({
        "id": r.id,
        "name": r.name,
        "created_at": r.created_at,
        "num_documents": r.num_documents,
        "num_terms": r.num_terms,
        "num_tokens": r.num_tokens,
        "num_labels": r.num_labels,
        "tree_depth": r.tree_depth,
        "num_dropped_empty": r.num_dropped_empty,
        "dropped_ids": stats["dropped_ids"],
        "num_duplicates_skipped": stats.get("num_duplicates_skipped").cloned().unwrap_or(json!(0)),
        "duplicate_ids": stats.get("duplicate_ids").cloned().unwrap_or(json!([])),
        "num_types_before_pruning": stats["num_types_before_pruning"],
        "preprocess": preprocess,
        "labels": r.summary["labels"],
        "features": r.summary["features"],
        // Corpora stored before covariates existed have none.
        "covariates": r.summary.get("covariates").cloned().unwrap_or(json!([])),
        "synthetic": r.summary.get("synthetic").cloned().unwrap_or(Value::Null),
        // Made like another corpus (`?like=`), or joined from corpora for an update.
        "like": r.summary.get("like").cloned().unwrap_or(Value::Null),
        "parts": r.summary.get("parts").cloned().unwrap_or(Value::Null),
        // What a `?like=` upload with `unknown=drop` left out.
        "unknown_dropped": r.summary.get("unknown_dropped").cloned().unwrap_or(Value::Null),
    })
}

/// `GET /v1/corpora`.
pub async fn list(State(state): State<AppState>, RawQuery(q): RawQuery) -> ApiResult<Json<Value>> {
    let page: Page = parse_query(q.as_deref())?;
    if page.status.is_some() {
        return Err(ApiError::invalid("query.status", "corpora have no status"));
    }
    let (offset, limit) = page.bounds()?;
    let (rows, total) = state.store.list_corpora(offset, limit).await?;
    let items: Vec<Value> = rows
        .iter()
        .map(|r| {
            let mut v = corpus_json(r);
            v.as_object_mut().map(|o| o.remove("labels"));
            v
        })
        .collect();
    Ok(Json(json!({"corpora": items, "total": total, "offset": offset, "limit": limit})))
}

/// `GET /v1/corpora/{id}`.
pub async fn get_one(State(state): State<AppState>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let row = state.store.get_corpus(&id).await?.ok_or_else(|| ApiError::not_found("corpus", &id))?;
    Ok(Json(corpus_json(&row)))
}

/// `DELETE /v1/corpora/{id}`: 409 while a queued or running job uses it.
pub async fn delete(State(state): State<AppState>, Path(id): Path<String>) -> ApiResult<StatusCode> {
    match state.store.delete_corpus(&id).await? {
        DeleteOutcome::Deleted => Ok(StatusCode::NO_CONTENT),
        DeleteOutcome::NotFound => Err(ApiError::not_found("corpus", &id)),
        DeleteOutcome::InUse(jobs) => Err(ApiError::conflict(format!("corpus {id} is used by job(s) {}; cancel them or wait", jobs.join(", ")))),
    }
}
