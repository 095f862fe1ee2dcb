//! The memory that predict requests being answered may hold together.
//!
//! Why it exists: a predict request holds its body, the parsed and encoded documents
//! and its answer (a probability and a proportion per topic per document) until it is
//! written. Each is bounded by `--max-body-mb` and `--max-request-documents`, but a few
//! large requests at once could still take more memory than the machine has, and every
//! fit and request on it would go down together. So each request is admitted by an
//! estimate from its documents' size and the model's topics against
//! `--request-memory-mb`: one larger than the whole budget is refused (422 naming
//! `documents`), others wait until the requests before them have answered.

use super::error::{ApiError, ApiResult};
use tokio::sync::{Semaphore, SemaphorePermit};

/// Bytes of the answer per document and topic: two numbers as JSON text (about 20
/// characters each) and as `f64`s while the answer is built.
const ANSWER_BYTES_PER_TOPIC: u64 = 2 * (20 + 8);
/// Copies of the body a request holds at its peak: the raw bytes, the parsed documents'
/// strings, and their tokens while they are encoded.
const BODY_COPIES: u64 = 3;

/// The budget, counted in KiB so that a semaphore's permits can hold terabytes.
#[derive(Debug)]
pub struct RequestMemory {
    budget_kib: u32,
    permits: Semaphore,
}

impl RequestMemory {
    /// A budget of `bytes`.
    pub fn new(bytes: u64) -> Self {
        let budget_kib = u32::try_from(bytes / 1024).unwrap_or(u32::MAX).max(1);
        RequestMemory { budget_kib, permits: Semaphore::new(budget_kib as usize) }
    }

    /// The budget in bytes.
    pub fn budget_bytes(&self) -> u64 {
        u64::from(self.budget_kib) * 1024
    }

    /// Room for a request estimated at `bytes`, waiting while other requests hold it; a
    /// 422 naming `documents` when the request alone exceeds the budget.
    pub async fn admit(&self, bytes: u64) -> ApiResult<SemaphorePermit<'_>> {
        let kib = bytes.div_ceil(1024).max(1);
        if kib > u64::from(self.budget_kib) {
            let mut e = ApiError::invalid(
                "documents",
                format!(
                    "this request would hold about {:.0} MB while it is answered (its documents' size and the model's topics), more than the {:.0} MB that requests may hold together (--request-memory-mb): send fewer or shorter documents per request",
                    bytes as f64 / 1048576.0,
                    self.budget_bytes() as f64 / 1048576.0
                ),
            );
            e.limit = Some("request-memory-mb");
            return Err(e);
        }
        self.permits.acquire_many(kib as u32).await.map_err(ApiError::internal)
    }
}

/// A predict request's estimated peak memory: copies of its body, and the answer for
/// at most as many documents as the body has JSON objects (every document is one).
pub fn predict_bytes(body: &[u8], topics: usize, max_documents: usize) -> u64 {
    let objects = body.iter().filter(|&&b| b == b'{').count().min(max_documents) as u64;
    BODY_COPIES * body.len() as u64 + objects * topics as u64 * ANSWER_BYTES_PER_TOPIC
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_request_larger_than_the_budget_is_refused_and_others_wait_for_room() {
        let memory = std::sync::Arc::new(RequestMemory::new(10 * 1024));
        let refused = memory.admit(11 * 1024).await.unwrap_err();
        assert_eq!((refused.status.as_u16(), refused.field.as_deref(), refused.limit), (422, Some("documents"), Some("request-memory-mb")));
        let first = memory.admit(6 * 1024).await.unwrap();
        // A second request of 6 KiB does not fit beside the first: it waits...
        let m2 = memory.clone();
        let second = tokio::spawn(async move { m2.admit(6 * 1024).await.map(|p| p.num_permits()) });
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(!second.is_finished(), "a request was admitted beyond the budget");
        // ...until the first has answered.
        drop(first);
        assert_eq!(second.await.unwrap().unwrap(), 6);
    }

    #[test]
    fn the_estimate_grows_with_the_body_and_with_documents_times_topics() {
        let one = br#"{"documents": [{"text": "a b c"}]}"#;
        let two = br#"{"documents": [{"text": "a b c"}, {"text": "a b c"}]}"#;
        assert_eq!(predict_bytes(one, 10, 100), 3 * one.len() as u64 + 2 * 10 * ANSWER_BYTES_PER_TOPIC);
        assert!(predict_bytes(two, 10, 100) > predict_bytes(one, 10, 100));
        assert!(predict_bytes(one, 100, 100) > predict_bytes(one, 10, 100));
        // Never more documents than the server accepts.
        assert_eq!(predict_bytes(two, 10, 1), 3 * two.len() as u64 + 10 * ANSWER_BYTES_PER_TOPIC);
    }
}
