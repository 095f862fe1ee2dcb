//! The stored DCNT/SCNT model.
//!
//! Why it exists: it is the fitted, served form of the sampler's output: the versioned
//! encoding, the global parameters prediction and the estimators condition on
//! ([`DcntModel::plugin_point`]), prediction with explicit features, and the accessors
//! the held-out and covariance estimators read. The `dcnt`/`scnt` families and the
//! model's [`crate::models::TopicModel`] face (topic table, prediction, held-out
//! scoring, correlations, diagnostics) are [`super::family`]'s, above the fit and the
//! scoring, so that neither of them is named from here.

use super::params::DcntParams;
use super::point::DcntPoint;
use super::predict::fold_in;
pub use super::sample::Loadings;
use crate::corpus::lexicon::EncodedDoc;
use crate::models::heldout::HeldoutReport;
use crate::models::{ModelError, PredictOptions};
use serde::{Deserialize, Serialize};

/// Format version of [`DcntModel`]'s encoding.
pub const ENCODING_VERSION: u32 = 2;

pub(super) fn family_name(diagonal: bool) -> &'static str {
    if diagonal {
        "scnt"
    } else {
        "dcnt"
    }
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
