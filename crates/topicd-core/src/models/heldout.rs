//! Held-out likelihood: the estimator-independent part of scoring new documents.
//!
//! Why it exists: every model that can say how probable a new document is (LDA and
//! DCNT/SCNT by Chib-style estimators) shares the same outer loop: documents scored in
//! parallel, each with its own random stream keyed by its position, progress reported
//! as each finishes and cancellation honoured before each starts, then per-document
//! log p(w_d), the total and the perplexity. A model supplies a [`DocScorer`];
//! [`score_documents`] does the rest, so results never depend on the thread count or
//! the order documents finish in.
//!
//! Checkpoints: a document's estimate depends only on (seed, its index), so a scoring
//! run's checkpoint is just the finished documents' estimates ([`ScoredSoFar`]). It is
//! handed over as documents finish (at most every `every`, and once more when the run is
//! cancelled); a run resumed from one skips those documents and ends with the report of
//! the uninterrupted run. Evaluation jobs take theirs from the [`FitContext`]
//! ([`score_documents`]); a fit that scores its held-out documents after its chain wraps
//! them in its own checkpoint ([`score_resuming`]).

use super::chain::Resume;
use super::{CancelToken, Checkpointing, FitContext, FitError, Progress, RestoreError};
use crate::corpus::lexicon::EncodedDoc;
use crate::rng::{stream, Purpose, StreamRng};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::sync::Mutex;
use std::time::Instant;

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

/// The settings a request gives a held-out estimator (`estimator` of
/// `POST /v1/models/{id}/heldout` and of evaluation jobs), read once at the edge with
/// their bounds; unset ones take the estimator's defaults. The stored form of an
/// evaluation's settings is this struct's JSON (unset ones left out). A model whose
/// estimator does not take a setting refuses it by name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EstimatorSettings {
    /// Sweeps before the estimator's search for its high-probability state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burn_in: Option<usize>,
    /// S, the length of the transition chain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain_length: Option<usize>,
    /// DCNT's and SCNT's proposals per activation entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acceptance_samples: Option<usize>,
}

impl EstimatorSettings {
    /// Read `settings` (a JSON object); an unknown key or a value out of bounds is an
    /// error naming it.
    pub fn from_json(settings: &serde_json::Value) -> Result<Self, super::ParamError> {
        let mut r = super::params::ParamReader::new(settings)?;
        let burn_in = r.uint_in("burn_in", 0, 100_000)?.map(|x| x as usize);
        let chain_length = r.uint_in("chain_length", 1, 100_000)?.map(|x| x as usize);
        let acceptance_samples = r.uint_in("acceptance_samples", 1, 1_000_000)?.map(|x| x as usize);
        r.finish()?;
        Ok(EstimatorSettings { burn_in, chain_length, acceptance_samples })
    }

    /// The stored form ([`Self::from_json`] reads it back).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("plain data serialises")
    }

    /// `Err` naming `acceptance_samples` when it is set for an estimator that has none
    /// (`estimator`, for the message).
    pub fn refuse_acceptance_samples(&self, estimator: &str) -> Result<(), super::ParamError> {
        match self.acceptance_samples {
            None => Ok(()),
            Some(_) => Err(super::ParamError::new("acceptance_samples", format!("{estimator} takes burn_in and chain_length only"))),
        }
    }
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
    /// Bytes the report holds on the heap: its strings and every document's estimate.
    pub fn memory_bytes(&self) -> usize {
        use crate::heap_size::{nested, string};
        string(&self.estimator) + string(&self.settings) + nested(&self.documents, |d| string(&d.id))
    }

    /// The wire form of a report on corpus documents (a fit's held-out split), whose
    /// words are all in the model's vocabulary.
    pub fn to_json(&self) -> serde_json::Value {
        self.to_json_with(&vec![0; self.documents.len()])
    }

    /// The wire form shared by evaluation jobs and model diagnostics, given each
    /// document's tokens outside the model's vocabulary (`unknown_tokens`, in document
    /// order). A document with no known token is not scored: its `log_likelihood` is
    /// null and `warnings` names it (a `field` as in problem documents, its id and why);
    /// the totals, `log_likelihood_per_token` and the perplexity count scored documents
    /// only (they are null when none was).
    pub fn to_json_with(&self, unknown_tokens: &[u64]) -> serde_json::Value {
        use serde_json::{json, Value};
        debug_assert_eq!(unknown_tokens.len(), self.documents.len());
        let unknown = |i: usize| unknown_tokens.get(i).copied().unwrap_or(0);
        let documents: Vec<Value> = self
            .documents
            .iter()
            .enumerate()
            .map(|(i, d)| {
                json!({
                    "id": d.id,
                    "log_likelihood": if d.tokens > 0 { json!(d.log_likelihood) } else { Value::Null },
                    "tokens": d.tokens,
                    "unknown_tokens": unknown(i),
                })
            })
            .collect();
        let warnings: Vec<Value> = self
            .documents
            .iter()
            .enumerate()
            .filter(|(_, d)| d.tokens == 0)
            .map(|(i, d)| {
                json!({
                    "field": format!("documents[{i}]"),
                    "id": d.id,
                    "detail": no_known_word(unknown(i)),
                })
            })
            .collect();
        let scored = self.documents.iter().filter(|d| d.tokens > 0).count();
        let any = self.tokens > 0;
        json!({
            "estimator": self.estimator,
            "params": serde_json::from_str::<Value>(&self.settings).unwrap_or(Value::Null),
            "seed": self.seed,
            "documents": documents,
            "scored_documents": scored,
            "total_log_likelihood": self.total_log_likelihood,
            "tokens": self.tokens,
            "unknown_tokens": (0..self.documents.len()).map(unknown).sum::<u64>(),
            "log_likelihood_per_token": if any { json!(self.total_log_likelihood / self.tokens as f64) } else { Value::Null },
            "perplexity": if any { json!(self.perplexity) } else { Value::Null },
            "warnings": warnings,
        })
    }
}

/// Why a document with no known token is not scored (`unknown` tokens were outside the
/// vocabulary): the warning of held-out and prediction results.
pub fn no_known_word(unknown: u64) -> String {
    if unknown == 0 {
        "the document has no token after preprocessing: not scored (log_likelihood is null) and left out of the totals".to_string()
    } else {
        format!("none of the document's {unknown} tokens is in the model's vocabulary: not scored (log_likelihood is null) and left out of the totals")
    }
}

impl HeldoutDoc {
    /// The document as a token list (each term repeated by its count), terms outside a
    /// vocabulary of `num_terms` dropped.
    pub fn tokens(&self, num_terms: usize) -> Vec<u32> {
        self.doc.terms.iter().zip(&self.doc.counts).filter(|(&t, _)| (t as usize) < num_terms).flat_map(|(&t, &c)| std::iter::repeat_n(t, c as usize)).collect()
    }
}

/// Corpus documents as documents to score (`documents` are corpus indices; `features`
/// gives each one's metadata row).
pub fn corpus_documents(corpus: &crate::corpus::Corpus, documents: &[usize], features: impl Fn(usize) -> Vec<f64>) -> Vec<HeldoutDoc> {
    documents
        .iter()
        .map(|&d| {
            let (terms, counts) = corpus.counts.row(d);
            let doc = EncodedDoc { terms: terms.to_vec(), counts: counts.to_vec(), oov_tokens: 0 };
            HeldoutDoc { id: corpus.doc_ids[d].clone(), doc, features: features(d) }
        })
        .collect()
}

/// Format version of [`ScoredSoFar`]'s encoding.
const SCORED_VERSION: u32 = 1;

/// What [`RestoreError`]s about a [`ScoredSoFar`] call it.
const SCORED: &str = "the scored documents";

/// The documents a scoring run has finished: its checkpoint. It names the run it belongs
/// to (seed, number of documents, estimator and settings) so that it is never read by
/// another.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoredSoFar {
    version: u32,
    seed: u64,
    documents: u64,
    estimator: String,
    settings: String,
    /// (document index, log p(w_d)) of the finished documents, by index.
    done: Vec<(u64, f64)>,
}

impl ScoredSoFar {
    /// A run of `documents` documents that has finished none.
    pub fn none(scorer: &dyn DocScorer, documents: usize, seed: u64) -> Self {
        ScoredSoFar {
            version: SCORED_VERSION,
            seed,
            documents: documents as u64,
            estimator: scorer.estimator().to_string(),
            settings: scorer.settings().to_string(),
            done: Vec::new(),
        }
    }

    /// Documents finished.
    pub fn finished(&self) -> usize {
        self.done.len()
    }

    pub fn encode(&self) -> Vec<u8> {
        postcard::to_allocvec(self).expect("plain data encodes")
    }

    /// Decode and check that the bytes belong to this run (the scorer's estimator and
    /// settings, `documents` documents, `seed`) and list distinct documents in order
    /// with finite estimates; bad bytes are an error, never a panic.
    pub fn decode_for(bytes: &[u8], scorer: &dyn DocScorer, documents: usize, seed: u64) -> Result<Self, RestoreError> {
        let s: ScoredSoFar = postcard::from_bytes(bytes).map_err(|e| RestoreError::undecodable(SCORED, e))?;
        s.check_for(scorer, documents, seed)
    }

    /// [`Self::decode_for`]'s checks, of a value decoded as part of something else.
    pub fn check_for(self, scorer: &dyn DocScorer, documents: usize, seed: u64) -> Result<Self, RestoreError> {
        let s = self; // (short: the checks below read as a table)
        let expected = ScoredSoFar::none(scorer, documents, seed);
        if s.version != SCORED_VERSION {
            return Err(RestoreError::Version { what: SCORED, found: s.version, expected: SCORED_VERSION });
        }
        if (s.seed, s.documents, &s.estimator, &s.settings) != (expected.seed, expected.documents, &expected.estimator, &expected.settings) {
            return Err(RestoreError::other_fit(SCORED, format!("{} documents, seed {}, {} {}", s.documents, s.seed, s.estimator, s.settings)));
        }
        let in_order = s.done.windows(2).all(|w| w[0].0 < w[1].0);
        if !in_order || s.done.iter().any(|&(i, ll)| i >= s.documents || !ll.is_finite()) {
            return Err(RestoreError::inconsistent(SCORED, "documents out of order, out of range or not finite"));
        }
        Ok(s)
    }
}

/// What a scoring run reports to and checkpoints through.
pub struct ScoringHooks<'a> {
    pub cancel: &'a CancelToken,
    /// Documents finished out of all (as iterations of a [`Progress`]).
    pub progress: &'a (dyn Fn(Progress) + Sync),
    /// When a checkpoint is due ([`Checkpointing::due`]; its `save` is not called,
    /// `save` below is).
    pub checkpoint: &'a Checkpointing<'a>,
    /// Receives the documents finished so far.
    pub save: &'a (dyn Fn(&ScoredSoFar) + Sync),
}

/// Score every document in parallel (inside the caller's rayon pool), resuming from the
/// documents `ctx`'s checkpoint finished, and checkpointing through `ctx` (evaluation
/// jobs: the checkpoint's iteration is the number of finished documents). A checkpoint
/// that does not belong to this run is rejected (reported through `ctx`) and every
/// document is scored. Document `i` draws from `stream(seed, Heldout, 0, i)`.
pub fn score_documents(scorer: &dyn DocScorer, docs: &[HeldoutDoc], seed: u64, ctx: &FitContext) -> Result<HeldoutReport, FitError> {
    let from = match ctx.checkpoint.resume_from {
        None => ScoredSoFar::none(scorer, docs.len(), seed),
        Some(bytes) => match ScoredSoFar::decode_for(bytes, scorer, docs.len(), seed) {
            Ok(scored) => {
                (ctx.checkpoint.resumed)(Resume::From(scored.finished() as u64));
                scored
            }
            Err(reason) => {
                (ctx.checkpoint.resumed)(Resume::Rejected(format!("checkpoint rejected, starting from the first document: {reason}")));
                ScoredSoFar::none(scorer, docs.len(), seed)
            }
        },
    };
    let save = |scored: &ScoredSoFar| (ctx.checkpoint.save)(scored.finished() as u64, scored.encode());
    let hooks = ScoringHooks { cancel: ctx.cancel, progress: ctx.progress, checkpoint: &ctx.checkpoint, save: &save };
    score_resuming(scorer, docs, seed, from, &hooks)
}

/// The documents finished so far, between checkpoints.
struct Tally {
    estimates: Vec<Option<f64>>,
    finished: usize,
    /// Finished documents in the last checkpoint handed over (or resumed from).
    saved: usize,
    last_save: Instant,
}

impl Tally {
    fn checkpoint(&mut self, template: &ScoredSoFar, hooks: &ScoringHooks) {
        let done = self.estimates.iter().enumerate().filter_map(|(i, ll)| ll.map(|ll| (i as u64, ll))).collect();
        (hooks.save)(&ScoredSoFar { done, ..template.clone() });
        self.saved = self.finished;
        self.last_save = Instant::now();
    }
}

/// Score the documents `from` has not finished, in parallel, each as it finishes
/// reported to `hooks.progress` and, once a checkpoint is due, handed over in a
/// checkpoint with every finished document; a cancelled run hands over one more. The
/// report equals the uninterrupted run's. (When several documents' estimates are not
/// finite, which one the error names may depend on the thread count.)
pub fn score_resuming(scorer: &dyn DocScorer, docs: &[HeldoutDoc], seed: u64, from: ScoredSoFar, hooks: &ScoringHooks) -> Result<HeldoutReport, FitError> {
    let total = docs.len() as u64;
    let mut estimates = vec![None; docs.len()];
    for &(i, ll) in &from.done {
        estimates[i as usize] = Some(ll);
    }
    let todo: Vec<usize> = (0..docs.len()).filter(|&i| estimates[i].is_none()).collect();
    let finished = from.done.len();
    let tally = Mutex::new(Tally { estimates, finished, saved: finished, last_save: Instant::now() });
    let scored = todo.par_iter().try_for_each(|&i| {
        if hooks.cancel.is_cancelled() {
            return Err(FitError::Cancelled);
        }
        let d = &docs[i];
        let ll = if d.doc.is_empty() { 0.0 } else { scorer.log_likelihood(d, &mut stream(seed, Purpose::Heldout, 0, i as u64)) };
        if !ll.is_finite() {
            return Err(FitError::Numerical(super::causes::NonFinite::heldout_estimate(&d.id, ll)));
        }
        let mut t = tally.lock().expect("scoring tally");
        t.estimates[i] = Some(ll);
        t.finished += 1;
        (hooks.progress)(Progress { iteration: t.finished as u64, total, ..Default::default() });
        if t.finished < docs.len() && hooks.checkpoint.due(t.last_save) {
            t.checkpoint(&from, hooks);
        }
        Ok(())
    });
    let mut t = tally.into_inner().expect("scoring tally");
    if let Err(e) = scored {
        if matches!(e, FitError::Cancelled) && hooks.checkpoint.every.is_some() && t.finished > t.saved {
            // Hand over where the run is, so a graceful stop resumes here.
            t.checkpoint(&from, hooks);
        }
        return Err(e);
    }
    let estimates: Vec<DocEstimate> = docs
        .iter()
        .zip(t.estimates)
        .map(|(d, ll)| DocEstimate { id: d.id.clone(), log_likelihood: ll.expect("every document was scored"), tokens: d.doc.num_tokens() })
        .collect();
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

    /// Documents with no known token are null with a warning, never a score of 0 that
    /// reads as probability one; totals and per-token figures are the scored ones'.
    #[test]
    fn unscored_documents_are_null_and_warned() {
        let d = docs(6);
        let report = FitContext::silent(|ctx| score_documents(&Noisy, &d, 9, ctx).unwrap());
        let unknown: Vec<u64> = (0..6).map(|i| if i % 3 == 0 { 4 } else { 1 }).collect();
        let j = report.to_json_with(&unknown);
        let docs_json = j["documents"].as_array().unwrap();
        let mut total = 0.0;
        for (i, (e, doc)) in docs_json.iter().zip(&d).enumerate() {
            assert_eq!(e["unknown_tokens"], unknown[i]);
            assert_eq!(e["tokens"], doc.doc.num_tokens());
            if doc.doc.is_empty() {
                assert!(e["log_likelihood"].is_null(), "{e}");
            } else {
                total += e["log_likelihood"].as_f64().unwrap();
            }
        }
        assert_eq!(j["scored_documents"], 4);
        assert_eq!(j["unknown_tokens"], 12);
        assert!((j["total_log_likelihood"].as_f64().unwrap() - total).abs() < 1e-12);
        let per_token = j["log_likelihood_per_token"].as_f64().unwrap();
        assert!((per_token - total / j["tokens"].as_f64().unwrap()).abs() < 1e-12);
        let warned: Vec<&str> = j["warnings"].as_array().unwrap().iter().map(|w| w["field"].as_str().unwrap()).collect();
        assert_eq!(warned, ["documents[0]", "documents[3]"]);
        assert_eq!(j["warnings"][1]["id"], "d3");
        // No scored document at all: the per-token figures are null, not 0 or NaN.
        let none = FitContext::silent(|ctx| score_documents(&Noisy, &[d[0].clone()], 9, ctx).unwrap()).to_json_with(&[2]);
        assert!(none["log_likelihood_per_token"].is_null() && none["perplexity"].is_null(), "{none}");
    }

    #[test]
    fn cancellation_stops_before_the_next_document() {
        let d = docs(100);
        let cancel = crate::models::CancelToken::new();
        cancel.cancel();
        let ctx = FitContext { progress: &|_| {}, cancel: &cancel, sample: &|_, _| {}, checkpoint: crate::models::Checkpointing::OFF };
        assert!(matches!(score_documents(&Noisy, &d, 1, &ctx), Err(FitError::Cancelled)));
    }

    /// [`Noisy`], counting the documents it scores.
    #[derive(Default)]
    struct Counted(std::sync::atomic::AtomicUsize);
    impl DocScorer for Counted {
        fn estimator(&self) -> &'static str {
            Noisy.estimator()
        }
        fn settings(&self) -> serde_json::Value {
            Noisy.settings()
        }
        fn log_likelihood(&self, doc: &HeldoutDoc, rng: &mut StreamRng) -> f64 {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Noisy.log_likelihood(doc, rng)
        }
    }

    /// Score `d` (seed 9) on `threads` threads, checkpointing after every document, from
    /// `resume` if given: the report, the checkpoints, what became of `resume`, and how
    /// many documents the scorer was asked about.
    fn scored(d: &[HeldoutDoc], threads: usize, resume: Option<&[u8]>) -> (HeldoutReport, crate::models::SavedCheckpoints, Vec<Resume>, usize) {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let scorer = Counted::default();
        let (report, saved, resumed) = crate::models::test_kit::recording(resume, |ctx| pool.install(|| score_documents(&scorer, d, 9, ctx).unwrap()));
        (report, saved, resumed, scorer.0.into_inner())
    }

    /// Resumed (on 2 threads) from the checkpoint after every finished document, a run
    /// scores only the documents left and gives the uninterrupted report.
    #[test]
    fn a_resumed_run_skips_finished_documents_and_gives_the_same_report() {
        let d = docs(30);
        let non_empty = |from: usize| d.iter().skip(from).filter(|x| !x.doc.is_empty()).count();
        let (full, saved, resumed, calls) = scored(&d, 1, None);
        assert!(resumed.is_empty());
        assert_eq!(calls, non_empty(0));
        assert_eq!(saved.iter().map(|s| s.0).collect::<Vec<_>>(), (1..30).collect::<Vec<_>>(), "one per document but the last");
        for (finished, bytes) in &saved {
            let (report, more, outcome, calls) = scored(&d, 2, Some(bytes));
            assert_eq!(outcome, vec![Resume::From(*finished)]);
            assert_eq!(report, full, "resumed after {finished} documents");
            // On one thread documents finish in order: the checkpoint holds the first ones.
            assert_eq!(calls, non_empty(*finished as usize), "resumed after {finished} documents");
            assert_eq!(more.first().map(|m| m.0), Some(finished + 1).filter(|&m| m < 30));
        }
    }

    /// A run cancelled mid-way (a graceful shutdown) hands over the documents it finished,
    /// although its interval never came; resuming from them gives the same report.
    #[test]
    fn a_cancelled_run_hands_over_what_it_finished() {
        let d = docs(40);
        let (full, _, _, _) = scored(&d, 1, None);
        let saved = Mutex::new(Vec::new());
        let cancel = crate::models::CancelToken::new();
        let ctx = FitContext {
            progress: &|p| {
                if p.iteration == 10 {
                    cancel.cancel();
                }
            },
            cancel: &cancel,
            sample: &|_, _| {},
            checkpoint: crate::models::Checkpointing {
                every: Some(std::time::Duration::from_secs(3600)),
                save: &|n, b| saved.lock().unwrap().push((n, b)),
                resume_from: None,
                resumed: &|_| {},
                ready: crate::models::ALWAYS_READY,
            },
        };
        let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        assert!(matches!(pool.install(|| score_documents(&Noisy, &d, 9, &ctx)), Err(FitError::Cancelled)));
        let saved = saved.into_inner().unwrap();
        assert_eq!(saved.iter().map(|s| s.0).collect::<Vec<_>>(), vec![10]);
        let (report, _, outcome, _) = scored(&d, 2, Some(&saved[0].1));
        assert_eq!(outcome, vec![Resume::From(10)]);
        assert_eq!(report, full);
    }

    /// A checkpoint of another run (seed, documents, settings), out of order, out of range,
    /// not finite or not decoding is rejected, and every document is scored.
    #[test]
    fn a_checkpoint_of_another_run_is_rejected() {
        let d = docs(12);
        let (full, saved, _, _) = scored(&d, 1, None);
        let good = ScoredSoFar::decode_for(&saved[5].1, &Noisy, 12, 9).unwrap();
        let variants: [fn(&mut ScoredSoFar); 7] = [
            |s| s.seed = 8,
            |s| s.documents = 13,
            |s| s.settings = "{\"chain_length\":2}".into(),
            |s| s.version = 2,
            |s| s.done.swap(0, 1),
            |s| s.done[0].0 = 12,
            |s| s.done[1].1 = f64::NAN,
        ];
        let mut bad: Vec<Vec<u8>> = variants
            .iter()
            .map(|change| {
                let mut s = good.clone();
                change(&mut s);
                s.encode()
            })
            .collect();
        bad.push(saved[5].1[..saved[5].1.len() - 4].to_vec());
        for bytes in bad {
            let (report, _, outcome, calls) = scored(&d, 1, Some(&bytes));
            assert!(matches!(&outcome[..], [Resume::Rejected(r)] if r.contains("starting from the first document")), "{outcome:?}");
            assert_eq!(report, full);
            assert_eq!(calls, d.iter().filter(|x| !x.doc.is_empty()).count());
        }
    }
}
