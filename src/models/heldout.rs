//! Held-out likelihood: the estimator-independent part of scoring new documents.
//!
//! Why it exists: every model that can say how probable a new document is (LDA and
//! DCNT/SCNT by Chib-style estimators) shares the same outer loop: documents scored in
//! parallel, each with its own random stream keyed by its position, progress reported
//! and cancellation honoured between chunks, then per-document log p(w_d), the total
//! and the perplexity. A model supplies a [`DocScorer`]; [`score_documents`] does the
//! rest, so results never depend on the thread count or the chunking.

use super::{FitContext, FitError, Progress};
use crate::corpus::lexicon::EncodedDoc;
use crate::rng::{stream, Purpose, StreamRng};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// A document to score: its words (encoded with the model's lexicon) and, for models
/// driven by metadata, its features in the model's feature order.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HeldoutDoc {
    pub id: String,
    pub doc: EncodedDoc,
    pub features: Vec<f64>,
}

/// Estimates log p(w_d) of one document under a fitted model.
pub trait DocScorer: Sync {
    /// The estimator's name, reported with the result.
    fn estimator(&self) -> &'static str;
    /// The settings in force (defaults filled in), reported with the result.
    fn settings(&self) -> serde_json::Value;
    /// log p(w_d) for one document, drawing only from `rng`.
    fn log_likelihood(&self, doc: &HeldoutDoc, rng: &mut StreamRng) -> f64;
}

/// One document's estimate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocEstimate {
    pub id: String,
    pub log_likelihood: f64,
    /// Tokens scored (in the model's vocabulary).
    pub tokens: u64,
}

/// Every document's estimate, the total and the perplexity exp(−total / tokens).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldoutReport {
    pub estimator: String,
    /// The estimator's settings as JSON text (kept as text so the report stays plain
    /// data for the binary model encodings).
    pub settings: String,
    pub seed: u64,
    pub documents: Vec<DocEstimate>,
    pub total_log_likelihood: f64,
    pub tokens: u64,
    pub perplexity: f64,
}

impl HeldoutReport {
    /// The wire form shared by evaluation jobs and model diagnostics.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "estimator": self.estimator,
            "params": serde_json::from_str::<serde_json::Value>(&self.settings).unwrap_or(serde_json::Value::Null),
            "seed": self.seed,
            "documents": self.documents,
            "total_log_likelihood": self.total_log_likelihood,
            "tokens": self.tokens,
            "log_likelihood_per_token": if self.tokens > 0 { self.total_log_likelihood / self.tokens as f64 } else { 0.0 },
            "perplexity": self.perplexity,
        })
    }
}

impl HeldoutDoc {
    /// The document as a token list (each term repeated by its count), terms outside a
    /// vocabulary of `num_terms` dropped.
    pub fn tokens(&self, num_terms: usize) -> Vec<u32> {
        self.doc.terms.iter().zip(&self.doc.counts).filter(|(&t, _)| (t as usize) < num_terms).flat_map(|(&t, &c)| std::iter::repeat_n(t, c as usize)).collect()
    }
}

/// Score corpus documents a fit held out (`documents` are corpus indices; `features`
/// gives each one's metadata row). The fit's progress stands while they are scored;
/// cancellation still applies.
pub fn score_corpus_documents(
    scorer: &dyn DocScorer,
    corpus: &crate::corpus::Corpus,
    documents: &[usize],
    features: impl Fn(usize) -> Vec<f64>,
    seed: u64,
    ctx: &FitContext,
) -> Result<HeldoutReport, FitError> {
    let docs: Vec<HeldoutDoc> = documents
        .iter()
        .map(|&d| {
            let (terms, counts) = corpus.counts.row(d);
            let doc = EncodedDoc { terms: terms.to_vec(), counts: counts.to_vec(), oov_tokens: 0 };
            HeldoutDoc { id: corpus.doc_ids[d].clone(), doc, features: features(d) }
        })
        .collect();
    let quiet = FitContext { progress: &|_| {}, cancel: ctx.cancel, sample: &|_, _| {}, checkpoint: crate::models::Checkpointing::OFF };
    score_documents(scorer, &docs, seed, &quiet)
}

/// Documents per progress report and cancellation check (small: one document can take
/// seconds, and a cancel should land within a few of them).
const CHUNK: usize = 4;

/// Score every document in parallel (inside the caller's rayon pool). Document `i`
/// draws from `stream(seed, Heldout, 0, i)` whatever the chunking or thread count.
pub fn score_documents(scorer: &dyn DocScorer, docs: &[HeldoutDoc], seed: u64, ctx: &FitContext) -> Result<HeldoutReport, FitError> {
    let total = docs.len() as u64;
    let mut estimates = Vec::with_capacity(docs.len());
    for (c, chunk) in docs.chunks(CHUNK).enumerate() {
        if ctx.cancel.is_cancelled() {
            return Err(FitError::Cancelled);
        }
        let first = c * CHUNK;
        let scored: Vec<f64> = chunk
            .par_iter()
            .enumerate()
            .map(|(j, d)| {
                if d.doc.is_empty() {
                    return 0.0;
                }
                let mut rng = stream(seed, Purpose::Heldout, 0, (first + j) as u64);
                scorer.log_likelihood(d, &mut rng)
            })
            .collect();
        for (d, ll) in chunk.iter().zip(scored) {
            if !ll.is_finite() {
                return Err(FitError::Numerical(format!("document {:?}: the estimate is {ll}", d.id)));
            }
            estimates.push(DocEstimate { id: d.id.clone(), log_likelihood: ll, tokens: d.doc.num_tokens() });
        }
        (ctx.progress)(Progress { iteration: estimates.len() as u64, total, ..Default::default() });
    }
    let total_ll: f64 = estimates.iter().map(|e| e.log_likelihood).sum();
    let tokens: u64 = estimates.iter().map(|e| e.tokens).sum();
    Ok(HeldoutReport {
        estimator: scorer.estimator().to_string(),
        settings: scorer.settings().to_string(),
        seed,
        perplexity: if tokens > 0 { (-total_ll / tokens as f64).exp() } else { f64::NAN },
        documents: estimates,
        total_log_likelihood: total_ll,
        tokens,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngExt;

    /// A scorer whose answer is a draw from the document's stream plus its length.
    struct Noisy;
    impl DocScorer for Noisy {
        fn estimator(&self) -> &'static str {
            "noisy"
        }
        fn settings(&self) -> serde_json::Value {
            serde_json::json!({})
        }
        fn log_likelihood(&self, doc: &HeldoutDoc, rng: &mut StreamRng) -> f64 {
            -(doc.doc.num_tokens() as f64) - rng.random::<f64>()
        }
    }

    fn docs(n: usize) -> Vec<HeldoutDoc> {
        (0..n)
            .map(|i| {
                let doc = if i % 3 == 0 { EncodedDoc::default() } else { EncodedDoc { terms: vec![0], counts: vec![(i % 3) as u32], oov_tokens: 0 } };
                HeldoutDoc { id: format!("d{i}"), doc, features: vec![] }
            })
            .collect()
    }

    #[test]
    fn totals_perplexity_and_thread_independence() {
        let d = docs(40);
        let run = |threads| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            FitContext::silent(|ctx| pool.install(|| score_documents(&Noisy, &d, 9, ctx).unwrap()))
        };
        let (a, b) = (run(1), run(2));
        assert_eq!(a, b);
        // Empty documents score exactly 0; the others are −tokens − U(0, 1).
        for (e, doc) in a.documents.iter().zip(&d) {
            if doc.doc.num_tokens() == 0 {
                assert_eq!(e.log_likelihood, 0.0);
            } else {
                let n = doc.doc.num_tokens() as f64;
                assert!(e.log_likelihood < -n && e.log_likelihood > -n - 1.0);
            }
        }
        let total: f64 = a.documents.iter().map(|e| e.log_likelihood).sum();
        assert!((a.total_log_likelihood - total).abs() < 1e-12);
        assert!((a.perplexity - (-total / a.tokens as f64).exp()).abs() < 1e-12);
        // The report survives the binary encoding models use.
        let bytes = postcard::to_allocvec(&a).unwrap();
        assert_eq!(postcard::from_bytes::<HeldoutReport>(&bytes).unwrap(), a);
        assert_eq!(a.to_json()["params"], serde_json::json!({}));
    }

    #[test]
    fn cancellation_stops_between_chunks() {
        let d = docs(100);
        let cancel = crate::models::CancelToken::new();
        cancel.cancel();
        let ctx = FitContext { progress: &|_| {}, cancel: &cancel, sample: &|_, _| {}, checkpoint: crate::models::Checkpointing::OFF };
        assert!(matches!(score_documents(&Noisy, &d, 1, &ctx), Err(FitError::Cancelled)));
    }
}
