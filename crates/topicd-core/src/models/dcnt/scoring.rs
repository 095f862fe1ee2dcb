//! DCNT and SCNT towards evaluation: the Chib estimator as a held-out scorer, and the
//! Monte Carlo topic correlations of a fitted model.
//!
//! Why it exists: the estimators ([`super::heldout`], [`super::covariance`]) work on a
//! bare [`DcntPoint`]; the service asks a fitted model. This module picks the point
//! ([`DcntModel::plugin_point`]), supplies each document's metadata (φ_d = 1 for a model fitted
//! without features) and reads the estimator's settings from request params.

use super::covariance::{activation_covariance, topic_covariance};
use super::heldout::{chib_log_likelihood, ChibSettings};
use super::model::DcntModel;
use super::point::DcntPoint;
use crate::models::heldout::{DocScorer, EstimatorSettings, HeldoutDoc};
use crate::models::TopicCorrelations;
use crate::rng::StreamRng;
use serde_json::json;

/// The Chib-style held-out likelihood of paper 000, A.4, at the model's plug-in point.
pub struct DcntChib {
    point: DcntPoint,
    settings: ChibSettings,
    /// Whether the model was fitted without features (φ_d = 1 for every document).
    constant_features: bool,
}

impl DcntChib {
    pub fn new(model: &DcntModel, settings: ChibSettings) -> Self {
        DcntChib { point: model.plugin_point(), settings, constant_features: model.feature_names.is_empty() }
    }

    /// Read `{"burn_in", "chain_length", "acceptance_samples"}`; absent keys keep the
    /// estimator's defaults (T = S = 1000).
    pub fn settings_from(given: &EstimatorSettings) -> ChibSettings {
        let d = ChibSettings::default();
        ChibSettings {
            burn_in: given.burn_in.unwrap_or(d.burn_in),
            chain_length: given.chain_length.unwrap_or(d.chain_length),
            acceptance_samples: given.acceptance_samples.unwrap_or(d.acceptance_samples),
        }
    }
}

impl DocScorer for DcntChib {
    fn estimator(&self) -> &'static str {
        "chib (Kim & Sudderth 2011, supplement A.4)"
    }

    fn settings(&self) -> serde_json::Value {
        json!({
            "burn_in": self.settings.burn_in,
            "chain_length": self.settings.chain_length,
            "acceptance_samples": self.settings.acceptance_samples,
        })
    }

    fn log_likelihood(&self, doc: &HeldoutDoc, rng: &mut StreamRng) -> f64 {
        let words = doc.tokens(self.point.num_terms());
        let constant = [1.0];
        let features = if self.constant_features { &constant[..] } else { &doc.features[..] };
        chib_log_likelihood(&self.point, features, &words, &self.settings, rng)
    }
}

/// The covariance and correlation of topic weights over the training documents'
/// metadata, `draws` per document (000, A.3).
pub fn correlations(model: &DcntModel, draws: usize, seed: u64) -> TopicCorrelations {
    let features: Vec<Vec<f64>> = model.train_documents.iter().map(|&d| model.document_features(d).to_vec()).collect();
    let point = model.plugin_point();
    let c = topic_covariance(&point, &features, draws, seed);
    let activation = Some(activation_covariance(&point));
    TopicCorrelations { num_topics: model.params.topics, draws, mean: c.mean, covariance: c.covariance, correlation: c.correlation, activation }
}
