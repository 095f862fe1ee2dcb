//! The fitted LDA model as it is stored and served: its encoding (and the older
//! layouts that still decode), what the topic pages, prediction, effects and held-out
//! scoring read from it, and the Chib-style scorer of new documents.

use super::chain::TopicWordSample;
use super::heldout::{chib_log_likelihood, ChibSettings};
use super::{foldin, params, LdaParams};
use crate::corpus::lexicon::EncodedDoc;
use crate::corpus::Corpus;
use crate::models::chains::{self, Alignment};
use crate::models::convergence::ConvergenceReport;
use crate::models::design::DesignSpec;
use crate::models::encoding_upgrade::with_params_converted;
use crate::models::heldout::{DocScorer, HeldoutDoc, HeldoutReport};
use crate::models::seeds::{seeds_diagnostics, MissingWord};
use crate::models::splits;
use crate::models::topic_draws::{pooled_draw, PooledChains, SparseCounts};
use crate::models::{DocPrediction, ModelError, ParamError, PredictOptions, PredictionWithIntervals, TableOptions, TopicDraw, TopicModel, TopicTable};
use crate::rng::StreamRng;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Format version of [`LdaModel`]'s encoding (8: the reference chain at the model's
/// end; 7: seeded topics among the parameters and
/// the seed words left out at the model's end; 6: `chains` among the parameters, the
/// convergence report and the chains' alignments; 5: the parameters without the job's
/// `threads`; 4: optimisation parameters and the fitted α_k and β; 3: held-out split
/// and its estimate; versions 2 to 7 still decode).
pub(super) const ENCODING_VERSION: u32 = 8;

/// What a blob of version 4 or 5 lacks at its end, in postcard: no convergence report
/// (`None`), no alignments, no design (`None`), no design rows and no θ draws (empty
/// lists).
pub(super) const NO_CHAIN_REPORTS: [u8; 5] = [0; 5];

/// A fitted LDA model: posterior means over the kept sweeps.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LdaModel {
    pub version: u32,
    pub params: LdaParams,
    pub num_terms: usize,
    /// φ, topic-major (`K × V`).
    pub word_rates: Vec<f64>,
    /// θ of the training documents (`D × K`).
    pub document_proportions: Vec<f64>,
    /// Share of tokens per topic.
    pub topic_shares: Vec<f64>,
    pub kept_sweeps: usize,
    pub tokens: u64,
    pub final_loglik_per_token: f64,
    /// Mean over sweeps of the non-zero topics per token's document (the sampler's cost).
    pub mean_doc_topics: f64,
    /// Documents held out of training (`split: test` tags or `test_fraction`).
    pub test_documents: usize,
    /// Their Chib-style held-out likelihood, computed at the end of the fit.
    pub heldout: Option<HeldoutReport>,
    /// α_k the fit ended with, one per topic (all `params.alpha` unless optimised).
    pub alpha: Vec<f64>,
    /// β the fit ended with (`params.beta` unless optimised).
    pub beta: f64,
    /// How many times α (and β) were re-estimated.
    pub optimizations: usize,
    /// Split-R̂ and ESS of the traced quantities, per chain and pooled (none for models
    /// fitted before version 6).
    pub convergence: Option<ConvergenceReport>,
    /// How each chain but the reference was matched to it before pooling, in chain
    /// order (empty for one chain).
    pub alignments: Vec<Alignment>,
    /// The design the fit read its covariates through (`params.covariates`), and its
    /// rows for the training documents (`D × columns`), for effects by composition.
    pub design: Option<DesignSpec>,
    pub design_rows: Vec<f64>,
    /// Kept draws of the training documents' θ (`D × K`, f32; later chains relabelled).
    pub theta_draws: Vec<Vec<f32>>,
    /// Seed words the vocabulary lacked, left out (`missing_seed_words: ignore`).
    pub missing_seed_words: Vec<MissingWord>,
    /// The chain whose topics the model serves, the one the others agree with most
    /// ([`crate::models::consensus`]; 0 for one chain and for every fit before version 8).
    pub reference_chain: usize,
}

/// [`LdaModel`] as encoded by format version 3.
#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
struct LdaModelV3 {
    version: u32,
    params: params::LdaParamsV3,
    num_terms: usize,
    word_rates: Vec<f64>,
    document_proportions: Vec<f64>,
    topic_shares: Vec<f64>,
    kept_sweeps: usize,
    tokens: u64,
    final_loglik_per_token: f64,
    mean_doc_topics: f64,
    test_documents: usize,
    heldout: Option<HeldoutReport>,
}

impl From<LdaModelV3> for LdaModel {
    /// A model fitted before optimisation: its α was the symmetric parameter.
    fn from(m: LdaModelV3) -> Self {
        debug_assert_eq!(m.version, 3);
        let params: LdaParams = m.params.into();
        LdaModel {
            version: ENCODING_VERSION,
            alpha: vec![params.alpha; params.topics],
            beta: params.beta,
            optimizations: 0,
            params,
            num_terms: m.num_terms,
            word_rates: m.word_rates,
            document_proportions: m.document_proportions,
            topic_shares: m.topic_shares,
            kept_sweeps: m.kept_sweeps,
            tokens: m.tokens,
            final_loglik_per_token: m.final_loglik_per_token,
            mean_doc_topics: m.mean_doc_topics,
            test_documents: m.test_documents,
            heldout: m.heldout,
            convergence: None,
            alignments: Vec::new(),
            design: None,
            design_rows: Vec::new(),
            theta_draws: Vec::new(),
            missing_seed_words: Vec::new(),
            reference_chain: 0,
        }
    }
}

impl From<LdaModelV2> for LdaModelV3 {
    /// A model fitted before held-out splits: no test documents.
    fn from(m: LdaModelV2) -> Self {
        debug_assert_eq!(m.version, 2);
        LdaModelV3 {
            version: 3,
            params: m.params.into(),
            num_terms: m.num_terms,
            word_rates: m.word_rates,
            document_proportions: m.document_proportions,
            topic_shares: m.topic_shares,
            kept_sweeps: m.kept_sweeps,
            tokens: m.tokens,
            final_loglik_per_token: m.final_loglik_per_token,
            mean_doc_topics: m.mean_doc_topics,
            test_documents: 0,
            heldout: None,
        }
    }
}

/// [`LdaModel`] as encoded by format version 2.
#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
struct LdaModelV2 {
    version: u32,
    params: params::LdaParamsV2,
    num_terms: usize,
    word_rates: Vec<f64>,
    document_proportions: Vec<f64>,
    topic_shares: Vec<f64>,
    kept_sweeps: usize,
    tokens: u64,
    final_loglik_per_token: f64,
    mean_doc_topics: f64,
}

/// Test support: a current blob in version 4's layout (`threads` 0 among the
/// parameters), against which pins recorded before `threads` left are checked.
#[cfg(test)]
pub(crate) fn as_before_threads_left(bytes: &[u8]) -> Vec<u8> {
    let mut m = LdaModel::decode(bytes).expect("a current LDA blob");
    assert_eq!(m.params.chains, 1, "one chain, as every fit before version 6");
    (m.convergence, m.alignments) = (None, Vec::new());
    assert!(m.design.is_none() && m.theta_draws.is_empty(), "no covariates, as every fit before version 6");
    assert!(m.missing_seed_words.is_empty(), "no seeds, as every fit before version 7");
    let mut b = m.encode();
    // The chain reports, the left-out seed words and the reference chain (0).
    b.truncate(b.len() - NO_CHAIN_REPORTS.len() - 2);
    with_params_converted(&b, |_: u32, p: LdaParams| (4u32, params::LdaParamsV4::from(&p))).expect("a current LDA blob")
}

/// Test support: an unseeded current blob in version 6's layout (no seeds among the
/// parameters, no left-out seed words at the end).
#[cfg(test)]
pub(crate) fn as_version6(bytes: &[u8]) -> Vec<u8> {
    let m = LdaModel::decode(bytes).expect("a current LDA blob");
    assert!(m.missing_seed_words.is_empty() && m.params.seed_words.is_empty(), "no seeds");
    assert_eq!(m.reference_chain, 0, "chain 0 the reference, as every fit before version 8");
    let mut b = m.encode();
    // The left-out seed words and the reference chain.
    b.truncate(b.len() - 2);
    with_params_converted(&b, |_: u32, p: LdaParams| (6u32, params::LdaParamsV6::from(&p))).expect("a current LDA blob")
}

/// LDA's held-out likelihood: the Chib-style estimator of Murray & Salakhutdinov (2009)
/// with φ at its posterior mean and the α the fit ended with.
pub(super) struct LdaChib<'a> {
    pub(super) model: &'a LdaModel,
    pub(super) settings: ChibSettings,
}

impl LdaChib<'_> {
    /// Read `{"burn_in", "chain_length"}`, defaults from the estimator.
    fn settings_from(given: &crate::models::heldout::EstimatorSettings) -> Result<ChibSettings, ParamError> {
        given.refuse_acceptance_samples("LDA's estimator")?;
        let d = ChibSettings::default();
        Ok(ChibSettings { burn_in: given.burn_in.unwrap_or(d.burn_in), chain_length: given.chain_length.unwrap_or(d.chain_length) })
    }
}

impl DocScorer for LdaChib<'_> {
    fn estimator(&self) -> &'static str {
        "chib (Murray & Salakhutdinov 2009)"
    }

    fn settings(&self) -> serde_json::Value {
        json!({"burn_in": self.settings.burn_in, "chain_length": self.settings.chain_length})
    }

    fn log_likelihood(&self, doc: &HeldoutDoc, rng: &mut StreamRng) -> f64 {
        let words = doc.tokens(self.model.num_terms);
        chib_log_likelihood(&words, &self.model.word_rates, self.model.params.topics, &self.model.alpha, &self.settings, rng)
    }
}

impl LdaModel {
    pub fn decode(bytes: &[u8]) -> Result<Self, ModelError> {
        let decode_error = |e: postcard::Error| ModelError::Decode(e.to_string());
        // The version is the first field: read it, then the layout it names.
        let (version, _) = postcard::take_from_bytes::<u32>(bytes).map_err(decode_error)?;
        let model: LdaModel = match version {
            ENCODING_VERSION => postcard::from_bytes(bytes).map_err(decode_error)?,
            7 => {
                // Version 7 is version 8 without the reference chain at the end (chain 0).
                let mut upgraded = bytes.to_vec();
                upgraded.push(0);
                postcard::from_bytes(&upgraded).map(|m| LdaModel { version: ENCODING_VERSION, ..m }).map_err(decode_error)?
            }
            6 => {
                // Version 6 is version 7 without the seeds among the parameters and
                // without the left-out seed words at the end (an empty list).
                let mut upgraded =
                    with_params_converted(bytes, |_: u32, p: params::LdaParamsV6| (ENCODING_VERSION, LdaParams::from(p))).map_err(decode_error)?;
                upgraded.extend_from_slice(&[0, 0]);
                postcard::from_bytes(&upgraded).map_err(decode_error)?
            }
            5 | 4 => {
                // Version 5 is version 6 without `chains` among the parameters and
                // without the chain reports at the end; version 4 is version 5 with
                // `threads` among the parameters.
                let mut upgraded = match version {
                    5 => with_params_converted(bytes, |_: u32, p: params::LdaParamsV5| (ENCODING_VERSION, LdaParams::from(p))),
                    _ => with_params_converted(bytes, |_: u32, p: params::LdaParamsV4| (ENCODING_VERSION, LdaParams::from(p))),
                }
                .map_err(decode_error)?;
                upgraded.extend_from_slice(&NO_CHAIN_REPORTS);
                upgraded.extend_from_slice(&[0, 0]);
                postcard::from_bytes(&upgraded).map_err(decode_error)?
            }
            3 | 2 => {
                let old = match version {
                    3 => postcard::from_bytes::<LdaModelV3>(bytes).map_err(decode_error)?,
                    _ => LdaModelV3::from(postcard::from_bytes::<LdaModelV2>(bytes).map_err(decode_error)?),
                };
                // α is filled in per topic: check the topic count before allocating it.
                if old.topic_shares.len() != old.params.topics {
                    return Err(ModelError::Decode(format!("{} topic shares for {} topics", old.topic_shares.len(), old.params.topics)));
                }
                old.into()
            }
            v => return Err(ModelError::Decode(format!("LDA encoding version {v} is not {ENCODING_VERSION}, 7, 6, 5, 4, 3 or 2"))),
        };
        model.check_shapes()
    }

    /// A decoded model whose lengths disagree with its topics and terms is corrupt (its
    /// readers index by them).
    fn check_shapes(self) -> Result<Self, ModelError> {
        let k = self.params.topics;
        let docs = self.document_proportions.len() / k.max(1);
        let design_fits = match &self.design {
            None => self.design_rows.is_empty(),
            Some(spec) => Some(self.design_rows.len()) == docs.checked_mul(spec.width()),
        };
        let ok = self.topic_shares.len() == k
            && self.alpha.len() == k
            && Some(self.word_rates.len()) == k.checked_mul(self.num_terms)
            && design_fits
            && self.theta_draws.iter().all(|t| t.len() == self.document_proportions.len());
        if ok {
            Ok(self)
        } else {
            Err(ModelError::Decode(format!("the stored lengths do not match {k} topics and {} terms", self.num_terms)))
        }
    }

    /// For a fit of several chains, which topics each chain's θ draws hold (the chains
    /// keep equally many, in chain order); `None` for one chain, or draws that do not
    /// split evenly (then every draw counts for every topic).
    fn draw_chains(&self) -> Option<crate::models::composition::DrawChains> {
        let (chains, k) = (self.params.chains, self.params.topics);
        let even = chains > 1 && !self.theta_draws.is_empty() && self.theta_draws.len().is_multiple_of(chains);
        even.then(|| crate::models::composition::DrawChains {
            draws_per_chain: self.theta_draws.len() / chains,
            holds: (0..chains).map(|c| (0..k).map(|t| crate::models::consensus::chain_holds(&self.alignments, self.reference_chain, c, t)).collect()).collect(),
        })
    }
}

impl TopicModel for LdaModel {
    fn family(&self) -> &'static str {
        "lda"
    }

    fn num_topics(&self) -> usize {
        self.params.topics
    }

    fn topic_table(&self, _options: &TableOptions) -> TopicTable {
        TopicTable::flat_rows(self.params.topics, self.num_terms, self.word_rates.clone(), &self.topic_shares)
    }

    fn predict(&self, docs: &[EncodedDoc], options: &PredictOptions) -> Result<Vec<DocPrediction>, ModelError> {
        let thetas = foldin::fold_in(docs, &self.word_rates, self.params.topics, &self.alpha, options.iterations, options.burn_in, options.seed);
        Ok(thetas.into_iter().map(DocPrediction::proportions).collect())
    }

    fn training_proportions(&self, corpus: &Corpus, seed: u64) -> Option<crate::models::DocumentProportions> {
        let held_out = splits::test_mask(corpus, self.params.test_fraction, seed);
        let documents: Vec<usize> = (0..corpus.num_documents()).filter(|&d| !held_out[d]).collect();
        (documents.len() * self.params.topics == self.document_proportions.len())
            .then(|| crate::models::DocumentProportions { documents, rows: self.document_proportions.clone() })
    }

    /// Effects by the method of composition, for a fit that read covariates.
    fn effects(&self, query: &crate::models::effects::EffectQuery) -> Result<Option<crate::models::effects::Effects>, ModelError> {
        let spec = self
            .design
            .as_ref()
            .ok_or_else(|| ModelError::NotOffered("this model was fitted without covariates: effects need a fit with `covariates` in its params".into()))?;
        crate::models::composition::composition(spec, &self.design_rows, self.params.topics, &self.theta_draws, self.draw_chains().as_ref(), query).map(Some)
    }

    fn predict_with_intervals(&self, docs: &[EncodedDoc], options: &PredictOptions, level: f64) -> Result<Option<Vec<PredictionWithIntervals>>, ModelError> {
        let (p, k) = (options, self.params.topics);
        let answers = foldin::fold_in_with_intervals(docs, &self.word_rates, k, &self.alpha, p.iterations, p.burn_in, p.seed, level);
        Ok(Some(crate::models::proportions_with_intervals(answers)))
    }

    /// A kept sweep's topic-word counts as a table (φ at the Dirichlet mean with the
    /// fitted β); another chain's sweep is relabelled onto the reference chain's topics
    /// and stands for the topics its chain is pooled into.
    fn topic_draw(&self, iteration: u64, sample: &[u8]) -> Result<Option<TopicDraw>, ModelError> {
        let s: TopicWordSample = postcard::from_bytes(sample).map_err(|e| ModelError::Decode(format!("an LDA sample: {e}")))?;
        let counts = SparseCounts { num_topics: s.num_topics as usize, word_ptr: &s.word_ptr, topics: &s.topics, counts: &s.counts };
        if counts.num_topics != self.params.topics {
            return Err(ModelError::Invalid(format!("a sample of {} topics for a model of {}", counts.num_topics, self.params.topics)));
        }
        let pooling =
            PooledChains { alignments: &self.alignments, reference: self.reference_chain, iterations: self.params.iterations, chains: self.params.chains };
        pooled_draw(&counts, self.num_terms, self.beta, iteration, &pooling).map(Some)
    }

    fn heldout_scorer(&self, given: &crate::models::heldout::EstimatorSettings) -> Result<Option<Box<dyn DocScorer + '_>>, ParamError> {
        let settings = LdaChib::settings_from(given)?;
        Ok(Some(Box::new(LdaChib { model: self, settings })))
    }

    fn topic_stability(&self) -> Option<Vec<crate::models::stability::TopicStability>> {
        crate::models::stability::from_alignments(&self.alignments, self.num_topics())
    }

    fn diagnostics(&self) -> serde_json::Value {
        json!({
            "test_documents": self.test_documents,
            "heldout": self.heldout.as_ref().map(HeldoutReport::to_json),
            "tokens": self.tokens,
            "kept_sweeps": self.kept_sweeps,
            "final_loglik_per_token": self.final_loglik_per_token,
            "mean_doc_topics": self.mean_doc_topics,
            "alpha": self.params.alpha,
            "beta": self.params.beta,
            "optimizations": self.optimizations,
            "fitted_alpha": self.alpha,
            "fitted_alpha_sum": self.alpha.iter().sum::<f64>(),
            "fitted_beta": self.beta,
            "chains": self.params.chains,
            "reference_chain": self.reference_chain,
            "convergence": self.convergence.as_ref().map(ConvergenceReport::to_json),
            "chain_alignment": chains::alignments_json(&self.alignments),
            "seeds": (!self.params.seed_words.is_empty()).then(|| seeds_diagnostics(&self.params.seeds(), &self.missing_seed_words)),
        })
    }

    fn encode(&self) -> Vec<u8> {
        postcard::to_allocvec(self).expect("plain data encodes")
    }

    fn memory_bytes(&self) -> usize {
        use crate::heap_size::vec;
        vec(&self.word_rates)
            + vec(&self.document_proportions)
            + vec(&self.topic_shares)
            + vec(&self.alpha)
            + self.heldout.as_ref().map_or(0, |h| h.memory_bytes())
    }
}

#[cfg(test)]
mod encoding_tests {
    use super::*;

    #[test]
    fn version_2_models_still_decode() {
        let old = LdaModelV2 {
            version: 2,
            params: params::LdaParamsV2 {
                topics: 2,
                alpha: 0.5,
                beta: 0.01,
                iterations: 10,
                burn_in: 5,
                thin: 1,
                sync_tokens: 100,
                loglik_every: 1,
                threads: 0,
            },
            num_terms: 3,
            word_rates: vec![0.2, 0.3, 0.5, 0.6, 0.3, 0.1],
            document_proportions: vec![0.4, 0.6],
            topic_shares: vec![0.45, 0.55],
            kept_sweeps: 5,
            tokens: 12,
            final_loglik_per_token: -1.5,
            mean_doc_topics: 1.7,
        };
        let m = LdaModel::decode(&postcard::to_allocvec(&old).unwrap()).unwrap();
        assert_eq!(m.version, ENCODING_VERSION);
        assert_eq!(m.params.topics, 2);
        assert_eq!(m.params.test_fraction, 0.0);
        assert_eq!((m.alpha.clone(), m.beta, m.params.optimize_interval), (vec![0.5, 0.5], 0.01, 0));
        assert_eq!(m.word_rates, old.word_rates);
        assert_eq!((m.test_documents, m.heldout.is_none()), (0, true));
        // And the current version round-trips.
        assert_eq!(LdaModel::decode(&m.encode()).unwrap().word_rates, m.word_rates);
        let mut future = m.encode();
        future[0] = 9;
        assert!(LdaModel::decode(&future).is_err());
    }

    #[test]
    fn version_3_models_still_decode() {
        let old = v3_example();
        let m = LdaModel::decode(&postcard::to_allocvec(&old).unwrap()).unwrap();
        assert_eq!(m.version, ENCODING_VERSION);
        assert_eq!((m.params.test_fraction, m.params.heldout_chain_length, m.test_documents), (0.25, 7, 1));
        assert_eq!((m.alpha.clone(), m.beta, m.optimizations), (vec![0.7, 0.7], 0.02, 0));
        assert_eq!((m.params.optimize_interval, m.params.optimize_burn_in, m.params.optimize_beta), (0, 0, false));
        // A version 4 model with an asymmetric α round-trips it.
        let mut fitted = m.clone();
        fitted.alpha = vec![0.1, 2.5];
        fitted.beta = 0.03;
        let back = LdaModel::decode(&fitted.encode()).unwrap();
        assert_eq!((back.alpha, back.beta), (vec![0.1, 2.5], 0.03));
    }

    /// A version 5 blob (no `chains`, no chain reports) decodes to one chain's model.
    #[test]
    fn version_5_models_still_decode() {
        let old = LdaModel::decode(&postcard::to_allocvec(&v3_example()).unwrap()).unwrap();
        let current = old.encode();
        let ((_, p), rest) = postcard::take_from_bytes::<(u32, LdaParams)>(&current).unwrap();
        let mut v5 = postcard::to_allocvec(&(5u32, params::LdaParamsV5::from(&p))).unwrap();
        v5.extend_from_slice(&rest[..rest.len() - NO_CHAIN_REPORTS.len() - 1]);
        let m = LdaModel::decode(&v5).unwrap();
        assert_eq!((m.version, m.params.chains, m.convergence.is_none(), m.alignments.len()), (ENCODING_VERSION, 1, true, 0));
        assert_eq!(m.encode(), current);
    }

    /// A version 4 blob (the parameters with the job's `threads`) decodes to the model
    /// whose version 5 blob is the same but for that field.
    #[test]
    fn version_4_models_still_decode() {
        let old = LdaModel::decode(&postcard::to_allocvec(&v3_example()).unwrap()).unwrap();
        let current = old.encode();
        let ((_, p), rest) = postcard::take_from_bytes::<(u32, LdaParams)>(&current).unwrap();
        let rest = &rest[..rest.len() - NO_CHAIN_REPORTS.len() - 1];
        let v4_params = params::LdaParamsV4 { threads: 3, optimize_interval: 4, optimize_burn_in: 2, optimize_beta: true, ..params::LdaParamsV4::from(&p) };
        let mut v4 = postcard::to_allocvec(&(4u32, v4_params)).unwrap();
        v4.extend_from_slice(rest);
        let m = LdaModel::decode(&v4).unwrap();
        assert_eq!(m.version, ENCODING_VERSION);
        assert_eq!(m.params, LdaParams { optimize_interval: 4, optimize_burn_in: 2, optimize_beta: true, ..p });
        assert_eq!((m.word_rates, m.alpha, m.test_documents), (old.word_rates, old.alpha, old.test_documents));
    }

    /// A version 6 blob (no seeds among the parameters, no left-out seed words at the
    /// end) decodes to the unseeded model whose current blob it was.
    #[test]
    fn version_7_models_decode_with_chain_0_the_reference() {
        let mut current = LdaModel::decode(&postcard::to_allocvec(&v3_example()).unwrap()).unwrap();
        current.reference_chain = 1;
        let bytes = current.encode();
        assert_eq!(bytes.last(), Some(&1), "the reference chain is the last byte");
        let mut v7 = bytes[..bytes.len() - 1].to_vec();
        v7[0] = 7;
        let m = LdaModel::decode(&v7).unwrap();
        assert_eq!((m.version, m.reference_chain), (ENCODING_VERSION, 0));
        assert_eq!(LdaModel { reference_chain: 1, ..m }.encode(), bytes);
    }

    #[test]
    fn version_6_models_still_decode() {
        let old = LdaModel::decode(&postcard::to_allocvec(&v3_example()).unwrap()).unwrap();
        let current = old.encode();
        let v6 = as_version6(&current);
        assert_eq!(postcard::take_from_bytes::<u32>(&v6).unwrap().0, 6);
        assert!(v6.len() < current.len(), "the seeds' parameters are gone");
        assert_eq!(LdaModel::decode(&v6).unwrap().encode(), current);
    }

    fn v3_example() -> LdaModelV3 {
        LdaModelV3 {
            version: 3,
            params: params::LdaParamsV3 {
                topics: 2,
                alpha: 0.7,
                beta: 0.02,
                iterations: 10,
                burn_in: 5,
                thin: 1,
                sync_tokens: 100,
                loglik_every: 1,
                threads: 0,
                test_fraction: 0.25,
                heldout_burn_in: 3,
                heldout_chain_length: 7,
            },
            num_terms: 3,
            word_rates: vec![0.2, 0.3, 0.5, 0.6, 0.3, 0.1],
            document_proportions: vec![0.4, 0.6],
            topic_shares: vec![0.45, 0.55],
            kept_sweeps: 5,
            tokens: 12,
            final_loglik_per_token: -1.5,
            mean_doc_topics: 1.7,
            test_documents: 1,
            heldout: None,
        }
    }
}
