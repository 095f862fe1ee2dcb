//! Reading request bodies within what the server has agreed to hold.
//!
//! Why it exists: a body is memory the moment it is read, so how much of it is read,
//! when and how slowly are limits of their own. A request that does work with its body
//! (predict, held-out) is admitted against `--request-memory-mb` by the length it
//! declares before a byte is read, so twenty large bodies at once wait for room instead
//! of all being read ([`admitted`]); a body without a declared length is admitted for a
//! fixed allowance and refused if it outgrows it. Uploads, which stream for as long as
//! the client's bandwidth needs and so have no request time limit, are cut off when
//! they send nothing for `--upload-idle-s` ([`next_chunk`]).

use super::error::{ApiError, ApiResult};
use super::request_memory::{BodyPermit, RequestMemory};
use axum::body::{Body, Bytes};
use axum::http::{header, HeaderMap};
use futures_util::StreamExt;
use std::time::Duration;

/// The next chunk of an upload, waiting at most `idle` for it: `Ok(None)` at the end.
pub async fn next_chunk<S, E>(stream: &mut S, idle: Option<Duration>) -> ApiResult<Option<Bytes>>
where
    S: futures_util::Stream<Item = Result<Bytes, E>> + Unpin,
    E: std::fmt::Display,
{
    let next = match idle {
        Some(idle) => tokio::time::timeout(idle, stream.next()).await.map_err(|_| ApiError::upload_idle(idle.as_secs_f64()))?,
        None => stream.next().await,
    };
    next.transpose().map_err(|e| ApiError::bad_request(format!("could not read the request body: {e}")))
}

/// Read a whole upload body of at most `limit` bytes, cut off when idle for `idle`.
pub async fn read_upload(body: Body, limit: usize, idle: Option<Duration>) -> ApiResult<Bytes> {
    let mut stream = body.into_data_stream();
    let mut out = Vec::new();
    while let Some(chunk) = next_chunk(&mut stream, idle).await? {
        if out.len() + chunk.len() > limit {
            return Err(ApiError::too_large(limit));
        }
        out.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(out))
}

/// The length a request declares (`Content-Length`), if it does.
fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers.get(header::CONTENT_LENGTH)?.to_str().ok()?.trim().parse().ok()
}

/// Admit a body against the request-memory budget by its declared length (waiting for
/// room while other requests hold it), then read it: the body and the permit that
/// accounts for it. A declared length over `max_body` is a 413 before anything is read;
/// one whose copies alone exceed the budget is refused as [`RequestMemory::admit_body`]
/// says. A body without a declared length is admitted for
/// [`RequestMemory::undeclared_allowance`] and is a 413 if it sends more.
pub async fn admitted<'a>(memory: &'a RequestMemory, headers: &HeaderMap, body: Body, max_body: usize) -> ApiResult<(Bytes, BodyPermit<'a>)> {
    let (limit, permit) = match declared_length(headers) {
        Some(n) if n > max_body as u64 => return Err(ApiError::too_large(max_body)),
        Some(n) => (n as usize, memory.admit_body(n).await?),
        None => {
            let allowance = memory.undeclared_allowance().min(max_body as u64);
            (allowance as usize, memory.admit_body(allowance).await?)
        }
    };
    let bytes = axum::body::to_bytes(body, limit).await.map_err(|_| {
        let mut e = ApiError::too_large(limit);
        e.detail = format!(
            "the request body is larger than the {limit} bytes admitted for it (its Content-Length, or, without one, the server's allowance): send a Content-Length"
        );
        e
    })?;
    Ok((bytes, permit))
}
