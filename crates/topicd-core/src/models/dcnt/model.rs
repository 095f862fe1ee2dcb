//! The `dcnt` and `scnt` families and the stored model.
//!
//! Why it exists: it is the boundary between the sampler and the rest of the service:
//! parameter checking, fitting through [`super::fit::fit_dcnt`], the versioned
//! encoding, and the questions a fitted model answers (topic table, prediction,
//! diagnostics), plus the accessors the held-out and covariance estimators read.

use super::fit::fit_dcnt;
use super::params::DcntParams;
use super::point::DcntPoint;
use super::predict::fold_in;
use super::scoring::{self, DcntChib};
use crate::corpus::lexicon::EncodedDoc;
use crate::corpus::{Corpus, CorpusStats};
use crate::models::heldout::{DocScorer, HeldoutReport};
use crate::models::{
    DocPrediction, FitContext, FitError, ModelError, ModelFamily, ParamError, PredictOptions, TableOptions, TopicCorrelations, TopicInfo, TopicModel,
    TopicTable,
};
use ndarray::Array2;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Format version of [`DcntModel`]'s encoding.
pub const ENCODING_VERSION: u32 = 2;

/// The `"dcnt"` (full A) or `"scnt"` (diagonal A) family.
pub struct DcntFamily {
    pub diagonal: bool,
}

pub static DCNT: DcntFamily = DcntFamily { diagonal: false };
pub static SCNT: DcntFamily = DcntFamily { diagonal: true };

pub(super) fn family_name(diagonal: bool) -> &'static str {
    if diagonal {
        "scnt"
    } else {
        "dcnt"
    }
}

impl ModelFamily for DcntFamily {
    fn name(&self) -> &'static str {
        family_name(self.diagonal)
    }

    fn effective_params(&self, params: &serde_json::Value) -> Result<serde_json::Value, ParamError> {
        // `checkpoint_every_s` is the runner's (its default is the server's flag, not the
        // model's): kept only when given.
        let mut effective = DcntParams::from_json(params)?.to_json();
        if crate::models::params::requested_checkpoint_every(params).is_some() {
            effective["checkpoint_every_s"] = params["checkpoint_every_s"].clone();
        }
        Ok(effective)
    }

    fn check_params(&self, params: &serde_json::Value, corpus: &CorpusStats) -> Result<(), ParamError> {
        DcntParams::from_json(params)?;
        if corpus.num_tokens == 0 {
            return Err(ParamError::new("corpus", "the corpus has no tokens"));
        }
        Ok(())
    }

    fn fit(&self, corpus: &Corpus, params: &serde_json::Value, seed: u64, ctx: &FitContext) -> Result<Box<dyn TopicModel>, FitError> {
        let p = DcntParams::from_json(params)?;
        Ok(Box::new(fit_dcnt(corpus, &p, self.diagonal, seed, ctx)?))
    }

    fn fit_memory(&self, corpus: &CorpusStats, params: &serde_json::Value, threads: usize) -> u64 {
        let p = DcntParams::from_json(params).or_else(|_| DcntParams::from_json(&serde_json::json!({}))).expect("the defaults parse");
        crate::models::memory::dcnt(corpus, &p, threads)
    }

    fn decode(&self, bytes: &[u8]) -> Result<Box<dyn TopicModel>, ModelError> {
        let m = DcntModel::decode(bytes)?;
        if m.diagonal != self.diagonal {
            return Err(ModelError::Decode(format!("a {} model, not {}", family_name(m.diagonal), self.name())));
        }
        Ok(Box::new(m))
    }

    fn capabilities(&self) -> crate::models::capabilities::Capabilities {
        crate::models::capabilities::Capabilities { correlations: true, heldout_likelihood: true, ..crate::models::capabilities::Capabilities::TOPIC_MODEL }
    }
}

/// One setting of A, η and λ_v (a posterior mean or a sample).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Loadings {
    /// K̄ × K̄ row-major.
    pub a: Vec<f64>,
    /// F × K̄ row-major.
    pub eta: Vec<f64>,
    pub lambda_v: f64,
}

/// A fitted DCNT/SCNT model: posterior means over the kept scans.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DcntModel {
    pub version: u32,
    /// SCNT (diagonal A) or DCNT.
    pub diagonal: bool,
    pub params: DcntParams,
    pub num_terms: usize,
    /// Posterior mean of Ω, K̄ × V topic-major.
    pub topic_word: Vec<f64>,
    /// Posterior mean share of the training tokens per topic.
    pub topic_shares: Vec<f64>,
    /// Posterior mean π(v_d) of the training documents, D_train × K̄.
    pub document_proportions: Vec<f64>,
    /// Corpus indices of the training documents (rows of `document_proportions`).
    pub train_documents: Vec<usize>,
    /// Corpus indices of the held-out (test) documents.
    pub heldout_documents: Vec<usize>,
    /// Feature names (empty when the corpus had none and φ_d = 1).
    pub feature_names: Vec<String>,
    /// F, the number of metadata features the model uses (1 for the constant).
    pub num_features: usize,
    /// φ_d of every corpus document, corpus order, D × F.
    pub features: Vec<f64>,
    /// Mean φ over the training documents (used for new documents, which carry none).
    pub mean_features: Vec<f64>,
    /// Posterior means of A, η and λ_v.
    pub mean: Loadings,
    /// The last kept sample of A, η and λ_v.
    pub last: Loadings,
    pub kept_scans: usize,
    pub tokens: u64,
    pub final_loglik_per_token: f64,
    /// Mean share of accepted v entries over the kept scans.
    pub mh_acceptance: f64,
    /// Topics holding more than 1 % of the tokens (by the posterior mean shares).
    pub active_topics: usize,
    /// The held-out documents' Chib-style likelihood, computed at the end of the fit.
    pub heldout: Option<HeldoutReport>,
}

impl DcntModel {
    pub fn decode(bytes: &[u8]) -> Result<Self, ModelError> {
        let decode_error = |e: postcard::Error| ModelError::Decode(e.to_string());
        let (version, _) = postcard::take_from_bytes::<u32>(bytes).map_err(decode_error)?;
        if version == 1 {
            return Self::decode_v1(bytes);
        }
        let m: DcntModel = postcard::from_bytes(bytes).map_err(decode_error)?;
        if m.version != ENCODING_VERSION {
            return Err(ModelError::Decode(format!("DCNT encoding version {} is not {ENCODING_VERSION}", m.version)));
        }
        Ok(m)
    }

    /// Models stored before `topic_swaps` existed (version 1): their parameters lack
    /// that field (they were fitted without swaps, so it reads as 0); everything after
    /// the parameters is laid out as in version 2, so the rest decodes unchanged.
    fn decode_v1(bytes: &[u8]) -> Result<Self, ModelError> {
        let decode_error = |e: postcard::Error| ModelError::Decode(e.to_string());
        let ((_, diagonal, old), rest) = postcard::take_from_bytes::<(u32, bool, DcntParamsV1)>(bytes).map_err(decode_error)?;
        let params = DcntParams {
            topics: old.topics,
            priors: old.priors,
            iterations: old.iterations,
            burn_in: old.burn_in,
            thin: old.thin,
            loglik_every: old.loglik_every,
            test_fraction: old.test_fraction,
            heldout_burn_in: old.heldout_burn_in,
            heldout_chain_length: old.heldout_chain_length,
            heldout_acceptance_samples: old.heldout_acceptance_samples,
            topic_swaps: 0,
            threads: old.threads,
        };
        let mut upgraded = postcard::to_allocvec(&(ENCODING_VERSION, diagonal, params)).map_err(decode_error)?;
        upgraded.extend_from_slice(rest);
        postcard::from_bytes(&upgraded).map_err(decode_error)
    }

    /// The global parameters at their posterior means (Ω, A, η, λ_v).
    pub fn point(&self) -> DcntPoint {
        self.point_from(&self.mean)
    }

    /// The global parameters of the last kept sample (Ω still the posterior mean).
    pub fn last_point(&self) -> DcntPoint {
        self.point_from(&self.last)
    }

    /// The parameters prediction, held-out likelihood and topic correlations condition
    /// on: Ω at its posterior mean, (A, η, λ_v) at the last kept sample. A is identified
    /// only up to a rotation from the right (A u with u ~ N(ηᵀφ, I) is unchanged by
    /// A → AR, u → Rᵀu, η → ηR, and A's row prior is isotropic), so the chain drifts
    /// along rotations and the posterior mean of A shrinks A Aᵀ, the activations'
    /// covariance; a single posterior draw keeps it.
    pub fn plugin_point(&self) -> DcntPoint {
        self.last_point()
    }

    fn point_from(&self, l: &Loadings) -> DcntPoint {
        DcntPoint {
            num_topics: self.params.topics,
            num_features: self.num_features,
            a: l.a.clone(),
            eta: l.eta.clone(),
            lambda_v: l.lambda_v,
            topic_word: self.topic_word.clone(),
        }
    }

    /// φ_d of corpus document `d` (corpus order).
    pub fn document_features(&self, d: usize) -> &[f64] {
        &self.features[d * self.num_features..(d + 1) * self.num_features]
    }

    /// Topic proportions of new documents with explicit features (one F-row each).
    pub fn predict_with_features(&self, docs: &[EncodedDoc], features: &[f64], options: &PredictOptions) -> Result<Vec<Vec<f64>>, ModelError> {
        if features.len() != docs.len() * self.num_features {
            return Err(ModelError::Invalid(format!("expected {} feature values per document", self.num_features)));
        }
        if let Some(bad) = docs.iter().flat_map(|d| &d.terms).find(|&&w| w as usize >= self.num_terms) {
            return Err(ModelError::Invalid(format!("term id {bad} is outside the vocabulary")));
        }
        Ok(fold_in(&self.plugin_point(), docs, features, options.iterations, options.burn_in, options.seed))
    }
}

impl TopicModel for DcntModel {
    fn family(&self) -> &'static str {
        family_name(self.diagonal)
    }

    fn num_topics(&self) -> usize {
        self.params.topics
    }

    fn topic_table(&self, _options: &TableOptions) -> TopicTable {
        let k = self.params.topics;
        let omega = Array2::from_shape_vec((k, self.num_terms), self.topic_word.clone()).expect("shape stored with the model");
        let exclusivity = crate::summaries::topic_given_word(&omega, &self.topic_shares);
        let topics = self.topic_shares.iter().map(|&s| TopicInfo { label: None, parent: None, children: vec![], proportion: s }).collect();
        TopicTable { frequency: omega, exclusivity, topics }
    }

    /// New documents carry no metadata: they use the training documents' mean φ.
    fn predict(&self, docs: &[EncodedDoc], options: &PredictOptions) -> Result<Vec<DocPrediction>, ModelError> {
        let features: Vec<f64> = docs.iter().flat_map(|_| self.mean_features.iter().copied()).collect();
        let proportions = self.predict_with_features(docs, &features, options)?;
        Ok(proportions.into_iter().map(|t| DocPrediction { topic_proportions: t, labels: vec![], predicted_labels: vec![] }).collect())
    }

    fn heldout_scorer(&self, params: &serde_json::Value) -> Result<Option<Box<dyn DocScorer + '_>>, ParamError> {
        let settings = DcntChib::settings_from(params)?;
        Ok(Some(Box::new(DcntChib::new(self, settings))))
    }

    fn feature_names(&self) -> Vec<String> {
        self.feature_names.clone()
    }

    fn training_proportions(&self, corpus: &Corpus, _seed: u64) -> Option<crate::models::DocumentProportions> {
        let fits = self.train_documents.iter().all(|&d| d < corpus.num_documents())
            && self.train_documents.len() * self.params.topics == self.document_proportions.len();
        fits.then(|| crate::models::DocumentProportions { documents: self.train_documents.clone(), rows: self.document_proportions.clone() })
    }

    fn correlations(&self, draws: usize, seed: u64) -> Option<TopicCorrelations> {
        Some(scoring::correlations(self, draws, seed))
    }

    fn diagnostics(&self) -> serde_json::Value {
        json!({
            "heldout": self.heldout.as_ref().map(HeldoutReport::to_json),
            "tokens": self.tokens,
            "kept_scans": self.kept_scans,
            "final_loglik_per_token": self.final_loglik_per_token,
            "mh_acceptance": self.mh_acceptance,
            "active_topics": self.active_topics,
            "lambda_v": self.mean.lambda_v,
            "truncation": self.params.topics,
            "num_features": self.num_features,
            "train_documents": self.train_documents.len(),
            "heldout_documents": self.heldout_documents.len(),
            "beta": self.params.priors.beta,
        })
    }

    fn encode(&self) -> Vec<u8> {
        postcard::to_allocvec(self).expect("plain data encodes")
    }

    fn memory_bytes(&self) -> usize {
        use crate::heap_size::{strings, vec};
        let loadings = |l: &Loadings| vec(&l.a) + vec(&l.eta);
        vec(&self.topic_word)
            + vec(&self.topic_shares)
            + vec(&self.document_proportions)
            + vec(&self.train_documents)
            + vec(&self.heldout_documents)
            + strings(&self.feature_names)
            + vec(&self.features)
            + vec(&self.mean_features)
            + loadings(&self.mean)
            + loadings(&self.last)
            + self.heldout.as_ref().map_or(0, |h| h.memory_bytes())
    }
}

/// [`DcntParams`] as stored by version 1 (before `topic_swaps`).
#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
pub(super) struct DcntParamsV1 {
    pub topics: usize,
    pub priors: super::params::Priors,
    pub iterations: usize,
    pub burn_in: usize,
    pub thin: usize,
    pub loglik_every: usize,
    pub test_fraction: f64,
    pub heldout_burn_in: usize,
    pub heldout_chain_length: usize,
    pub heldout_acceptance_samples: usize,
    pub threads: usize,
}
