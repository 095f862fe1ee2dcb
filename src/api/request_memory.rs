//! The memory that predict requests being answered may hold together.
//!
//! Why it exists: a predict request holds its body, the parsed and encoded documents,
//! the fold-in's per-token state and its answer (a probability and a proportion per
//! topic per document) until it is written. A few large requests at once could take
//! more memory than the machine has, and every fit and request on it would go down
//! together. So a request is admitted twice against `--request-memory-mb`: its body by
//! the length it declares, before it is read ([`RequestMemory::admit_body`]: copies of
//! the body), then its work by what the documents expand to, once they are parsed
//! ([`RequestMemory::admit_work`]: tokens and answer). Each pool has half the budget. A
//! request larger than its pool is refused; others wait for room. Two pools, taken in
//! one order (body, then work, then a turn on the predict threads), so a request that
//! waits for work room holds only body room, which the requests already admitted to
//! work never wait for: no request waits on another in a circle.

use super::error::{ApiError, ApiResult};
use tokio::sync::{Semaphore, SemaphorePermit};

/// Bytes of the answer per document and topic: two numbers as JSON text (about 20
/// characters each) and as `f64`s while the answer is built.
const ANSWER_BYTES_PER_TOPIC: u64 = 2 * (20 + 8);
/// Copies of the body a request holds at its peak: the raw bytes, the parsed documents'
/// strings, and their tokens while they are encoded.
const BODY_COPIES: u64 = 3;
/// Bytes a predicted token holds while the fold-in runs (its topic, its word and the
/// sampler's scratch; 40 M counted tokens held 643 MB in one LDA fold-in: 16 a token).
const BYTES_PER_TOKEN: u64 = 16;

/// Room held for a request's body (see [`RequestMemory::admit_body`]).
pub type BodyPermit<'a> = SemaphorePermit<'a>;

/// The budget, counted in KiB so that a semaphore's permits can hold terabytes.
#[derive(Debug)]
pub struct RequestMemory {
    /// Each pool's share of the budget, KiB.
    pool_kib: u32,
    bodies: Semaphore,
    work: Semaphore,
}

impl RequestMemory {
    /// A budget of `bytes`, half for bodies and half for work.
    pub fn new(bytes: u64) -> Self {
        let pool_kib = u32::try_from(bytes / 2048).unwrap_or(u32::MAX).max(1);
        RequestMemory { pool_kib, bodies: Semaphore::new(pool_kib as usize), work: Semaphore::new(pool_kib as usize) }
    }

    /// The whole budget in bytes.
    pub fn budget_bytes(&self) -> u64 {
        2 * u64::from(self.pool_kib) * 1024
    }

    /// The body length admitted for a request that declares none: a quarter of what the
    /// body pool can hold, so a few such requests fit at once.
    pub fn undeclared_allowance(&self) -> u64 {
        u64::from(self.pool_kib) * 1024 / BODY_COPIES / 4
    }

    /// Room for a body of `length` bytes (its copies while it is parsed and encoded),
    /// waiting while others hold it; a 413 naming `body` when it alone exceeds the pool.
    pub async fn admit_body(&self, length: u64) -> ApiResult<BodyPermit<'_>> {
        let bytes = BODY_COPIES.saturating_mul(length);
        let kib = self.fits(bytes).map_err(|()| {
            ApiError::too_large_for(
                "request-memory-mb",
                "body",
                format!(
                    "a body of {length} bytes would hold about {:.0} MB while it is read and parsed, more than the {:.0} MB the server gives request bodies (half of --request-memory-mb): send fewer documents per request",
                    bytes as f64 / 1048576.0,
                    self.pool_mb()
                ),
            )
        })?;
        self.bodies.acquire_many(kib).await.map_err(ApiError::internal)
    }

    /// Room for a request's work estimated at `bytes` ([`predict_work_bytes`]), waiting
    /// while others hold it; a 422 naming `documents` when it alone exceeds the pool.
    pub async fn admit_work(&self, bytes: u64) -> ApiResult<SemaphorePermit<'_>> {
        let kib = self.fits(bytes).map_err(|()| {
            let mut e = ApiError::invalid(
                "documents",
                format!(
                    "this request would hold about {:.0} MB while it is answered (its documents' tokens and the model's topics), more than the {:.0} MB the server gives requests' work (half of --request-memory-mb): send fewer or shorter documents per request",
                    bytes as f64 / 1048576.0,
                    self.pool_mb()
                ),
            );
            e.limit = Some("request-memory-mb");
            e
        })?;
        self.work.acquire_many(kib).await.map_err(ApiError::internal)
    }

    /// `bytes` in KiB permits if they fit in one pool.
    fn fits(&self, bytes: u64) -> Result<u32, ()> {
        let kib = bytes.div_ceil(1024).max(1);
        if kib > u64::from(self.pool_kib) {
            return Err(());
        }
        Ok(kib as u32)
    }

    fn pool_mb(&self) -> f64 {
        f64::from(self.pool_kib) / 1024.0
    }
}

/// A predict request's work once its documents are encoded: the fold-in's state for
/// every token and the answer for every document.
pub fn predict_work_bytes(documents: usize, tokens: u64, topics: usize) -> u64 {
    tokens.saturating_mul(BYTES_PER_TOKEN).saturating_add((documents as u64).saturating_mul(topics as u64).saturating_mul(ANSWER_BYTES_PER_TOPIC))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn work_larger_than_its_pool_is_refused_and_others_wait_for_room() {
        let memory = std::sync::Arc::new(RequestMemory::new(20 * 1024));
        let refused = memory.admit_work(11 * 1024).await.unwrap_err();
        assert_eq!((refused.status.as_u16(), refused.field.as_deref(), refused.limit), (422, Some("documents"), Some("request-memory-mb")));
        let first = memory.admit_work(6 * 1024).await.unwrap();
        // A second request of 6 KiB does not fit beside the first: it waits...
        let m2 = memory.clone();
        let second = tokio::spawn(async move { m2.admit_work(6 * 1024).await.map(|p| p.num_permits()) });
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(!second.is_finished(), "a request was admitted beyond the budget");
        // ...until the first has answered.
        drop(first);
        assert_eq!(second.await.unwrap().unwrap(), 6);
    }

    #[tokio::test]
    async fn bodies_are_admitted_by_their_length_before_they_are_read() {
        let memory = std::sync::Arc::new(RequestMemory::new(60 * 1024));
        let refused = memory.admit_body(11 * 1024).await.unwrap_err();
        assert_eq!((refused.status.as_u16(), refused.field.as_deref(), refused.limit), (413, Some("body"), Some("request-memory-mb")));
        let held = memory.admit_body(6 * 1024).await.unwrap();
        assert_eq!(held.num_permits(), 18, "three copies of a 6 KiB body");
        // Work room is a pool of its own: a waiting body never blocks admitted work.
        let work = memory.admit_work(30 * 1024).await.unwrap();
        let m2 = memory.clone();
        let second = tokio::spawn(async move { m2.admit_body(6 * 1024).await.map(|p| p.num_permits()) });
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(!second.is_finished());
        drop((held, work));
        assert_eq!(second.await.unwrap().unwrap(), 18);
        assert_eq!(memory.undeclared_allowance(), 30 * 1024 / 3 / 4);
    }

    #[test]
    fn the_work_estimate_counts_every_token_and_every_answer_number() {
        assert_eq!(predict_work_bytes(1, 0, 10), 10 * ANSWER_BYTES_PER_TOPIC);
        // The 60-byte request of four billion counted tokens: 64 GB, far over any pool.
        assert_eq!(predict_work_bytes(1, 4_000_000_000, 10), 64_000_000_000 + 10 * ANSWER_BYTES_PER_TOPIC);
        assert_eq!(predict_work_bytes(usize::MAX, u64::MAX, usize::MAX), u64::MAX);
    }
}
