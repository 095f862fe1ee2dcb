//! The stored HDP topic model: topic table, prediction, diagnostics and encoding.
//!
//! Why it exists: the service asks every model the same questions. The topic table's
//! frequency is the posterior mean word distribution E[φ_kw] = λ_kw / Σ_w λ_kw, and
//! exclusivity is P(topic | word) with the topics' shares of the expected tokens, as for
//! LDA. Prediction runs the local step on each new document with the topics and sticks
//! fixed and reports E[π_dk] renormalised over the active topics.

use super::fit::{FitOutcome, PassRecord};
use super::globals::expected_log_phi;
use super::local::{infer_document, LocalGlobals};
use super::params::{HdpParams, HdpParamsV1};
use super::stick::StickPosterior;
use crate::corpus::lexicon::EncodedDoc;
use crate::models::completion::CompletionReport;
use crate::models::encoding_upgrade::with_params_converted;
use crate::models::{DocPrediction, ModelError, PredictOptions, TableOptions, TopicInfo, TopicModel, TopicTable};
use ndarray::Array2;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::json;
use statrs::function::gamma::digamma;

/// Format version of [`HdpModel`]'s encoding (2: the parameters without the job's
/// `threads`; version 1 still decodes).
pub const ENCODING_VERSION: u32 = 2;

/// Test support: a current blob in version 1's layout (`threads` 0 among the
/// parameters), against which pins recorded before `threads` left are checked.
#[cfg(test)]
pub(crate) fn as_before_threads_left(bytes: &[u8]) -> Vec<u8> {
    with_params_converted(bytes, |v: u32, p: HdpParams| (v - 1, HdpParamsV1::from(&p))).expect("a current HDP blob")
}

/// Least coordinate-ascent iterations per predicted document (the fit's setting may be
/// lower, because its documents are warm-started).
const PREDICT_ITERATIONS: usize = 200;

/// A fitted HDP topic model (memoized variational posterior).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HdpModel {
    pub version: u32,
    pub params: HdpParams,
    pub num_terms: usize,
    /// The active topics K (after merges).
    pub num_topics: usize,
    /// Posterior Dirichlet parameters λ_kw, topic-major (`K × V`).
    pub topic_word: Vec<f64>,
    pub stick: StickPosterior,
    /// Expected training tokens per topic.
    pub topic_tokens: Vec<f64>,
    pub passes: Vec<PassRecord>,
    pub stick_fallbacks: usize,
    pub documents: usize,
    pub tokens: u64,
    /// Documents held out of training (the test split).
    pub test_documents: usize,
    /// Document completion on the test split, scored at the end of the fit.
    pub heldout: Option<CompletionReport>,
    /// E[log φ] and its exponential, word-major, computed once per loaded model (a
    /// served model answers many predict requests; rebuilding two V × K tables for
    /// each would dominate their cost). Not stored.
    #[serde(skip)]
    pub(crate) expectations: ExpectationCache,
}

/// A lazily filled cache that never takes part in equality or encoding.
#[derive(Debug, Default)]
pub(crate) struct ExpectationCache(std::sync::OnceLock<(Vec<f64>, Vec<f64>)>);

impl Clone for ExpectationCache {
    fn clone(&self) -> Self {
        ExpectationCache::default()
    }
}

impl PartialEq for ExpectationCache {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl HdpModel {
    pub fn from_fit(fit: FitOutcome, params: HdpParams, num_terms: usize, tokens: u64) -> Self {
        HdpModel {
            version: ENCODING_VERSION,
            params,
            num_terms,
            num_topics: fit.num_topics,
            topic_word: fit.topic_word,
            stick: fit.stick,
            topic_tokens: fit.topic_tokens,
            passes: fit.passes,
            stick_fallbacks: fit.stick_fallbacks,
            documents: fit.documents,
            tokens,
            test_documents: 0,
            heldout: None,
            expectations: ExpectationCache::default(),
        }
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, ModelError> {
        let decode_error = |e: postcard::Error| ModelError::Decode(e.to_string());
        let (version, _) = postcard::take_from_bytes::<u32>(bytes).map_err(decode_error)?;
        let current = match version {
            ENCODING_VERSION => std::borrow::Cow::Borrowed(bytes),
            // Version 1 is version 2 with `threads` among the parameters.
            1 => with_params_converted(bytes, |_: u32, p: HdpParamsV1| (ENCODING_VERSION, HdpParams::from(p))).map_err(decode_error)?.into(),
            v => return Err(ModelError::Decode(format!("HDP encoding version {v} is not {ENCODING_VERSION} or 1"))),
        };
        let m: HdpModel = postcard::from_bytes(&current).map_err(decode_error)?;
        let k = m.num_topics;
        if Some(m.topic_word.len()) != k.checked_mul(m.num_terms) || m.stick.num_topics() != k || m.topic_tokens.len() != k {
            return Err(ModelError::Decode("HDP model arrays disagree with its topic and term counts".into()));
        }
        Ok(m)
    }

    /// E[φ_kw], topic-major.
    pub fn topic_means(&self) -> Vec<f64> {
        let v = self.num_terms;
        let mut out = self.topic_word.clone();
        for row in out.chunks_mut(v.max(1)) {
            let s: f64 = row.iter().sum();
            row.iter_mut().for_each(|x| *x /= s);
        }
        out
    }

    /// E[log φ_kw] and its exponential, word-major (`V × K`), for the local step.
    pub(crate) fn word_major_expectations(&self) -> (Vec<f64>, Vec<f64>) {
        let v = self.num_terms;
        let digamma_total: Vec<f64> = self.topic_word.chunks(v.max(1)).map(|row| digamma(row.iter().sum())).collect();
        expected_log_phi(v, &digamma_total, |w, t| self.topic_word[t * v + w])
    }

    /// E[π_d] over the active topics (renormalised) for each document.
    pub fn topic_proportions(&self, docs: &[EncodedDoc]) -> Vec<Vec<f64>> {
        let (elog, exp) = self.expectations.0.get_or_init(|| self.word_major_expectations());
        let beta = self.stick.expected_beta();
        let iterations = self.params.local_iterations.max(PREDICT_ITERATIONS);
        let g = LocalGlobals::new(self.params.alpha, &beta, elog, exp, self.params.local_tolerance, iterations);
        let v = self.num_terms as u32;
        docs.par_iter()
            .map(|doc| {
                let (terms, counts): (Vec<u32>, Vec<u32>) = doc.terms.iter().zip(&doc.counts).filter(|(&w, _)| w < v).map(|(&w, &c)| (w, c)).unzip();
                let res = infer_document(&g, &terms, &counts, None, &[]);
                let theta: Vec<f64> = res.doc_topic.iter().zip(&g.prior).map(|(n, a)| n + a).collect();
                let s: f64 = theta.iter().sum();
                theta.into_iter().map(|x| x / s).collect()
            })
            .collect()
    }
}

impl TopicModel for HdpModel {
    fn family(&self) -> &'static str {
        "hdp"
    }

    fn num_topics(&self) -> usize {
        self.num_topics
    }

    fn topic_table(&self, _options: &TableOptions) -> TopicTable {
        let k = self.num_topics;
        let phi = Array2::from_shape_vec((k, self.num_terms), self.topic_means()).expect("shape stored with the model");
        let total: f64 = self.topic_tokens.iter().sum();
        let shares: Vec<f64> = self.topic_tokens.iter().map(|&n| if total > 0.0 { n / total } else { 1.0 / k as f64 }).collect();
        let exclusivity = crate::models::exclusivity::topic_given_word(&phi, &shares);
        let topics = shares.iter().map(|&s| TopicInfo { label: None, parent: None, children: vec![], proportion: s }).collect();
        TopicTable { frequency: phi, exclusivity, topics }
    }

    fn predict(&self, docs: &[EncodedDoc], _options: &PredictOptions) -> Result<Vec<DocPrediction>, ModelError> {
        Ok(self.topic_proportions(docs).into_iter().map(|t| DocPrediction { topic_proportions: t, labels: vec![], predicted_labels: vec![] }).collect())
    }

    fn diagnostics(&self) -> serde_json::Value {
        let last = self.passes.last();
        json!({
            "inference": "memoized variational (Hughes, Kim & Sudderth 2015)",
            "documents": self.documents,
            "test_documents": self.test_documents,
            "heldout": self.heldout.as_ref().map(CompletionReport::to_json),
            "tokens": self.tokens,
            "active_topics": self.num_topics,
            "initial_topics": self.params.topics,
            "passes": self.passes.len(),
            "objective": last.map(|r| r.objective),
            "objective_per_token": last.map(|r| r.objective / self.tokens.max(1) as f64),
            "merges_accepted": self.passes.iter().map(|r| r.merges_accepted).sum::<usize>(),
            "deletes_accepted": self.passes.iter().filter(|r| r.deleted).count(),
            "stick_fallbacks": self.stick_fallbacks,
            "seconds_per_pass": self.passes.iter().map(|r| r.seconds).sum::<f64>() / self.passes.len().max(1) as f64,
            "objective_trace": self.passes.iter().map(|r| r.objective).collect::<Vec<_>>(),
            "topics_trace": self.passes.iter().map(|r| r.topics).collect::<Vec<_>>(),
            "expected_beta": self.stick.expected_beta(),
            "alpha": self.params.alpha,
            "gamma": self.params.gamma,
            "lambda": self.params.lambda,
        })
    }

    fn encode(&self) -> Vec<u8> {
        postcard::to_allocvec(self).expect("plain data encodes")
    }

    fn memory_bytes(&self) -> usize {
        use crate::heap_size::vec;
        let expectations = self.expectations.0.get().map_or(0, |(log_phi, phi)| vec(log_phi) + vec(phi));
        vec(&self.topic_word) + vec(&self.stick.rho) + vec(&self.stick.omega) + vec(&self.topic_tokens) + vec(&self.passes) + expectations
    }
}
