//! The stored HDP topic model: topic table, prediction, diagnostics and encoding.
//!
//! Why it exists: the service asks every model the same questions. The topic table's
//! frequency is the posterior mean word distribution E[φ_kw] = λ_kw / Σ_w λ_kw, and
//! exclusivity is P(topic | word) with the topics' shares of the expected tokens, as for
//! LDA. Prediction runs the local step on each new document with the topics and sticks
//! fixed and reports E[π_dk] renormalised over the active topics.

use super::globals::expected_log_phi;
use super::local::{infer_document, LocalGlobals};
use super::params::{HdpParams, HdpParamsV1, HdpParamsV2};
use super::passes::{FitOutcome, PassRecord, PassSummary};
use crate::corpus::lexicon::EncodedDoc;
use crate::corpus::DocTermMatrix;
use crate::inference::stick_posterior::StickPosterior;
use crate::models::completion::CompletionReport;
use crate::models::design::DesignSpec;
use crate::models::encoding_upgrade::with_params_converted;
use crate::models::{DocPrediction, ModelError, PredictOptions, PredictionWithIntervals, TableOptions, TopicModel, TopicTable};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::json;
use statrs::function::gamma::digamma;

/// Format version of [`HdpModel`]'s encoding (2: the parameters without the job's
/// `threads`; 3: the covariates' design, its rows and the training documents' q(π_d),
/// last; 4: the passes without their wall-clock seconds, so that the same seed gives
/// the same bytes; 5: `birth_every` among the parameters; versions 4 to 1 still decode,
/// births off).
pub const ENCODING_VERSION: u32 = 5;

/// A retired slot's stick proportion ([`super::retired`]): E[β_k] = 0, and the mark of
/// the slot in a stored model.
pub const RETIRED_RHO: f64 = 0.0;

/// What a version 2 blob lacks at its end: no design, no rows, no q(π_d), no draws.
const NO_COVARIATES: [u8; 4] = [0, 0, 0, 0];

/// Test support: a current blob in version 1's layout (`threads` 0 among the
/// parameters, every pass' seconds 0), against which pins recorded before `threads`
/// left are checked.
#[cfg(test)]
pub(crate) fn as_before_threads_left(bytes: &[u8]) -> Vec<u8> {
    let mut current = as_version3(bytes);
    assert_eq!(current.split_off(current.len() - NO_COVARIATES.len()), NO_COVARIATES, "no covariates");
    with_params_converted(&current, |v: u32, p: HdpParamsV2| (v - 2, HdpParamsV1::from(&p))).expect("a current HDP blob")
}

/// Test support: a current blob (births off) in version 3's layout, every pass' seconds 0.
#[cfg(test)]
pub(crate) fn as_version3(bytes: &[u8]) -> Vec<u8> {
    let v4 = with_params_converted(bytes, |_: u32, p: HdpParams| (4u32, HdpParamsV2::from(&p))).expect("a current HDP blob");
    with_params_converted(&v4, |h: (u32, HdpParamsV2, usize, usize, Vec<f64>, StickPosterior, Vec<f64>), passes: Vec<PassSummary>| {
        let timed = passes.into_iter().map(|summary| PassRecord { summary, seconds: 0.0 });
        ((3u32, h.1, h.2, h.3, h.4, h.5, h.6), timed.collect::<Vec<_>>())
    })
    .expect("a version 4 HDP blob")
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
    pub passes: Vec<PassSummary>,
    pub stick_fallbacks: usize,
    pub documents: usize,
    pub tokens: u64,
    /// Documents held out of training (the test split).
    pub test_documents: usize,
    /// Document completion on the test split, scored at the end of the fit.
    pub heldout: Option<CompletionReport>,
    /// The design of the covariates the fit read (`None`: none), for `/effects` by
    /// composition ([`crate::models::composition`]).
    pub design: Option<DesignSpec>,
    /// Its rows for the training documents (corpus order).
    pub design_rows: Vec<f64>,
    /// The training documents' q(π_d) over the active topics: Dirichlet parameters
    /// N_dk + α E[β_k] (D × K, f32), from which `/effects` draws their proportions.
    pub doc_dirichlet: Vec<f32>,
    /// How many draws of the documents' proportions an `/effects` answer regresses (the
    /// fit's `keep_draws`).
    pub effect_draws: usize,
    /// E[log φ] and its exponential, word-major, computed once per loaded model (a
    /// served model answers many predict requests; rebuilding two V × K tables for
    /// each would dominate their cost). Not stored.
    #[serde(skip)]
    pub(crate) expectations: ExpectationCache,
}

/// Everything a version 3 blob holds before its passes, which version 4 keeps as it was.
type BeforePasses = (u32, HdpParams, usize, usize, Vec<f64>, StickPosterior, Vec<f64>);

/// A version 3 blob (passes with their seconds) in version 4's layout.
fn without_pass_seconds(bytes: &[u8]) -> Result<Vec<u8>, postcard::Error> {
    with_params_converted(bytes, |header: BeforePasses, passes: Vec<PassRecord>| {
        let header = (ENCODING_VERSION, header.1, header.2, header.3, header.4, header.5, header.6);
        (header, passes.into_iter().map(|r| r.summary).collect::<Vec<_>>())
    })
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
            design: None,
            design_rows: Vec::new(),
            doc_dirichlet: Vec::new(),
            effect_draws: 0,
            expectations: ExpectationCache::default(),
        }
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, ModelError> {
        let decode_error = |e: postcard::Error| ModelError::Decode(e.to_string());
        let (version, _) = postcard::take_from_bytes::<u32>(bytes).map_err(decode_error)?;
        // Versions 2 to 4 hold the parameters before `birth_every` (version 4 is then
        // the current layout).
        let upgraded;
        let bytes = if (2..=4).contains(&version) {
            let next = |v: u32| if v == 4 { ENCODING_VERSION } else { v };
            upgraded = with_params_converted(bytes, |v: u32, p: HdpParamsV2| (next(v), HdpParams::from(p))).map_err(decode_error)?;
            &upgraded[..]
        } else {
            bytes
        };
        let version3 = match version {
            ENCODING_VERSION | 4 => None,
            3 => Some(std::borrow::Cow::Borrowed(bytes)),
            // Version 2 is version 3 without covariates at its end.
            2 => {
                let mut v3 = with_params_converted(bytes, |_: u32, p: HdpParams| (3u32, p)).map_err(decode_error)?;
                v3.extend_from_slice(&NO_COVARIATES);
                Some(v3.into())
            }
            // Version 1 is version 2 with `threads` among the parameters.
            1 => {
                let mut v3 = with_params_converted(bytes, |_: u32, p: HdpParamsV1| (3u32, HdpParams::from(HdpParamsV2::from(p)))).map_err(decode_error)?;
                v3.extend_from_slice(&NO_COVARIATES);
                Some(v3.into())
            }
            v => return Err(ModelError::Decode(format!("HDP encoding version {v} is not {ENCODING_VERSION}, 4, 3, 2 or 1"))),
        };
        let current = match version3 {
            None => std::borrow::Cow::Borrowed(bytes),
            Some(v3) => std::borrow::Cow::Owned(without_pass_seconds(&v3).map_err(decode_error)?),
        };
        let m: HdpModel = postcard::from_bytes(&current).map_err(decode_error)?;
        let k = m.num_topics;
        if Some(m.topic_word.len()) != k.checked_mul(m.num_terms) || m.stick.num_topics() != k || m.topic_tokens.len() != k {
            return Err(ModelError::Decode("HDP model arrays disagree with its topic and term counts".into()));
        }
        let covariates_fit = match &m.design {
            None => m.design_rows.is_empty() && m.doc_dirichlet.is_empty(),
            Some(spec) => Some(m.design_rows.len()) == m.documents.checked_mul(spec.width()) && Some(m.doc_dirichlet.len()) == m.documents.checked_mul(k),
        };
        if !covariates_fit {
            return Err(ModelError::Decode("HDP model's design rows or q(π_d) disagree with its documents and topics".into()));
        }
        Ok(m)
    }

    /// The slots an edit retired (ρ_k = [`RETIRED_RHO`], [`super::retired`]).
    pub fn retired_slots(&self) -> Vec<usize> {
        (0..self.num_topics).filter(|&k| self.stick.rho[k] == RETIRED_RHO).collect()
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

    /// Every document's q(π_d) over the active topics, N_dk + α E[β_k] (`rows × K`,
    /// f32), inferred with the fitted globals as prediction does.
    pub fn document_dirichlets(&self, matrix: &DocTermMatrix) -> Vec<f32> {
        let (elog, exp) = self.expectations.0.get_or_init(|| self.word_major_expectations());
        let beta = self.stick.expected_beta();
        let iterations = self.params.local_iterations.max(PREDICT_ITERATIONS);
        let g = LocalGlobals::new(self.params.alpha, &beta, elog, exp, self.params.local_tolerance, iterations);
        let rows: Vec<Vec<f32>> = (0..matrix.num_rows())
            .into_par_iter()
            .map(|d| {
                let (terms, counts) = matrix.row(d);
                let res = infer_document(&g, terms, counts, None, &[]);
                res.doc_topic.iter().zip(&g.prior).map(|(n, a)| (n + a) as f32).collect()
            })
            .collect();
        rows.concat()
    }

    /// `draws` draws of the training documents' proportions over the active topics from
    /// their q(π_d) (the Dirichlet's first K components renormalised are Dir(θ_1..K)),
    /// draw m of document d from its own stream (seed, m, d).
    pub fn proportion_draws(&self, draws: usize, seed: u64) -> Vec<Vec<f32>> {
        use rand_distr::{Distribution, Gamma};
        let k = self.num_topics.max(1);
        (0..draws)
            .map(|m| {
                let rows: Vec<Vec<f32>> = self
                    .doc_dirichlet
                    .par_chunks(k)
                    .enumerate()
                    .map(|(d, theta)| {
                        let mut rng = crate::rng::stream(seed, crate::rng::Purpose::EffectDraws, m as u64, d as u64);
                        let g: Vec<f64> =
                            theta.iter().map(|&a| Gamma::new(f64::from(a).max(1e-300), 1.0).expect("a positive shape").sample(&mut rng)).collect();
                        let total: f64 = g.iter().sum::<f64>().max(f64::MIN_POSITIVE);
                        g.iter().map(|x| (x / total) as f32).collect()
                    })
                    .collect();
                rows.concat()
            })
            .collect()
    }

    /// E[π_d] over the active topics (renormalised) for each document.
    pub fn topic_proportions(&self, docs: &[EncodedDoc]) -> Vec<Vec<f64>> {
        self.new_document_dirichlets(docs).into_iter().map(|theta| normalised(&theta)).collect()
    }

    /// Each new document's q(π_d) over the active topics (N_dk + α E[β_k]) by the local
    /// step with the topics fixed; words outside the vocabulary are left out.
    fn new_document_dirichlets(&self, docs: &[EncodedDoc]) -> Vec<Vec<f64>> {
        let (elog, exp) = self.expectations.0.get_or_init(|| self.word_major_expectations());
        let beta = self.stick.expected_beta();
        let iterations = self.params.local_iterations.max(PREDICT_ITERATIONS);
        let g = LocalGlobals::new(self.params.alpha, &beta, elog, exp, self.params.local_tolerance, iterations);
        let v = self.num_terms as u32;
        docs.par_iter()
            .map(|doc| {
                let (terms, counts): (Vec<u32>, Vec<u32>) = doc.terms.iter().zip(&doc.counts).filter(|(&w, _)| w < v).map(|(&w, &c)| (w, c)).unzip();
                let res = infer_document(&g, &terms, &counts, None, &[]);
                res.doc_topic.iter().zip(&g.prior).map(|(n, a)| n + a).collect()
            })
            .collect()
    }
}

#[cfg(test)]
impl HdpModel {
    /// Test support: each new document's q(π_d) over the active topics.
    pub(crate) fn new_document_dirichlets_for_tests(&self, docs: &[EncodedDoc]) -> Vec<Vec<f64>> {
        self.new_document_dirichlets(docs)
    }
}

/// `xs` divided by their sum.
fn normalised(xs: &[f64]) -> Vec<f64> {
    let s: f64 = xs.iter().sum();
    xs.iter().map(|x| x / s).collect()
}

/// Draws of q(π_d) a prediction's intervals are taken over.
const PREDICT_INTERVAL_DRAWS: usize = 400;

impl HdpModel {
    /// Each document's E[π_d] and every topic's `level` interval under q(π_d) (the
    /// Dirichlet renormalised over the active topics), from [`PREDICT_INTERVAL_DRAWS`]
    /// draws on document d's stream (seed, Predict, 3, d).
    pub fn topic_proportions_with_intervals(&self, docs: &[EncodedDoc], seed: u64, level: f64) -> Vec<crate::models::effects::ProportionsWithIntervals> {
        use rand_distr::{Distribution, Gamma};
        self.new_document_dirichlets(docs)
            .into_par_iter()
            .enumerate()
            .map(|(d, theta)| {
                let mut rng = crate::rng::stream(seed, crate::rng::Purpose::Predict, 3, d as u64);
                let shapes: Vec<Gamma<f64>> = theta.iter().map(|&a| Gamma::new(a.max(1e-300), 1.0).expect("a positive shape")).collect();
                let draws: Vec<Vec<f64>> =
                    (0..PREDICT_INTERVAL_DRAWS).map(|_| normalised(&shapes.iter().map(|g| g.sample(&mut rng)).collect::<Vec<f64>>())).collect();
                let intervals = (0..theta.len()).map(|t| crate::models::effects::interval(&draws.iter().map(|x| x[t]).collect::<Vec<f64>>(), level)).collect();
                (normalised(&theta), intervals)
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
        let total: f64 = self.topic_tokens.iter().sum();
        let shares: Vec<f64> = self.topic_tokens.iter().map(|&n| if total > 0.0 { n / total } else { 1.0 / k as f64 }).collect();
        TopicTable::flat_rows(k, self.num_terms, self.topic_means(), &shares)
    }

    /// Effects by the method of composition over draws from the training documents'
    /// q(π_d), for a fit that read covariates.
    fn effects(&self, query: &crate::models::effects::EffectQuery) -> Result<Option<crate::models::effects::Effects>, ModelError> {
        let spec = self
            .design
            .as_ref()
            .ok_or_else(|| ModelError::NotOffered("this model was fitted without covariates: effects need a fit with `covariates` in its params".into()))?;
        let draws = self.proportion_draws(self.effect_draws, query.seed);
        crate::models::composition::composition(spec, &self.design_rows, self.num_topics, &draws, None, query).map(Some)
    }

    /// Intervals under each document's variational posterior q(π_d).
    fn predict_with_intervals(&self, docs: &[EncodedDoc], options: &PredictOptions, level: f64) -> Result<Option<Vec<PredictionWithIntervals>>, ModelError> {
        let answers = self.topic_proportions_with_intervals(docs, options.seed, level);
        Ok(Some(crate::models::proportions_with_intervals(answers)))
    }

    fn predict(&self, docs: &[EncodedDoc], _options: &PredictOptions) -> Result<Vec<DocPrediction>, ModelError> {
        Ok(self.topic_proportions(docs).into_iter().map(DocPrediction::proportions).collect())
    }

    fn diagnostics(&self) -> serde_json::Value {
        let last = self.passes.last();
        json!({
            "inference": "memoized variational (Hughes, Kim & Sudderth 2015)",
            "documents": self.documents,
            "test_documents": self.test_documents,
            "heldout": self.heldout.as_ref().map(CompletionReport::to_json),
            "tokens": self.tokens,
            "active_topics": self.num_topics - self.retired_slots().len(),
            "initial_topics": self.params.topics,
            "passes": self.passes.len(),
            "objective": last.map(|r| r.objective),
            "objective_per_token": last.map(|r| r.objective / self.tokens.max(1) as f64),
            "merges_accepted": self.passes.iter().map(|r| r.merges_accepted).sum::<usize>(),
            "deletes_accepted": self.passes.iter().filter(|r| r.deleted).count(),
            // Only a birth adds topics (a birth pass proposes no delete and tries no merge).
            "births_accepted": self.passes.windows(2).filter(|w| w[1].topics > w[0].topics).count(),
            "stick_fallbacks": self.stick_fallbacks,
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
        let covariates = self.design.as_ref().map_or(0, DesignSpec::memory_bytes) + vec(&self.design_rows) + vec(&self.doc_dirichlet);
        vec(&self.topic_word) + vec(&self.stick.rho) + vec(&self.stick.omega) + vec(&self.topic_tokens) + vec(&self.passes) + expectations + covariates
    }
}
