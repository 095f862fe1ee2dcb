//! The `"hpc"` and `"pcm"` model families and the fitted [`HpcModel`].
//!
//! Why it exists: it is HPC's face towards the rest of the service: parameter checks,
//! the stored encoding, topic tables (frequency, exclusivity against siblings or every
//! topic, FREX computed on top by the summaries), label prediction and diagnostics.

use super::calibration::{SetScores, Thresholds};
use super::fit::fit_hpc;
use super::label_posterior::{deepest_first, document_rates, known_words, label_probabilities, Evidence, LabelPrediction, LabelSet};
use super::params::HpcParams;
use super::predict::predict_affinities;
use crate::corpus::lexicon::EncodedDoc;
use crate::corpus::{Corpus, CorpusStats};
use crate::models::{
    Comparison, DocPrediction, FitContext, FitError, ModelError, ModelFamily, ParamError, PredictOptions, TableOptions, TopicInfo, TopicModel, TopicTable,
};
use ndarray::Array2;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::sync::OnceLock;

/// Format version of [`HpcModel`]'s encoding. Version 4 appended
/// [`HpcModel::refitted_with_validation`] (version 3 blobs decode with `false`, as they
/// were fitted). Version 3 appended the label sets
/// ([`LabelPrediction::sets`]; version 2 blobs decode with none, predicting as they were
/// fitted); version 2 appended [`HpcModel::prediction`]; version 1 blobs decode with the
/// paper's predictor ([`LabelPrediction::mode_only`]), as they were fitted.
pub const ENCODING_VERSION: u32 = 4;

/// HPC (`supervised`, labels on a tree) or PCM (latent topics under the root).
pub struct HpcFamily {
    pub supervised: bool,
}

/// The `"hpc"` family.
pub static HPC: HpcFamily = HpcFamily { supervised: true };
/// The `"pcm"` family.
pub static PCM: HpcFamily = HpcFamily { supervised: false };

/// The wire name of the supervised (`hpc`) or unsupervised (`pcm`) family.
pub(super) fn family_name(supervised: bool) -> &'static str {
    if supervised {
        "hpc"
    } else {
        "pcm"
    }
}

impl ModelFamily for HpcFamily {
    fn name(&self) -> &'static str {
        family_name(self.supervised)
    }

    fn effective_params(&self, params: &serde_json::Value) -> Result<serde_json::Value, ParamError> {
        // `checkpoint_every_s` is the runner's (its default is the server's flag, not the
        // model's): kept only when given.
        let mut effective = HpcParams::from_json(params, self.supervised)?.to_json(self.supervised);
        if crate::models::params::requested_checkpoint_every(params).is_some() {
            effective["checkpoint_every_s"] = params["checkpoint_every_s"].clone();
        }
        Ok(effective)
    }

    fn check_params(&self, params: &serde_json::Value, corpus: &CorpusStats) -> Result<(), ParamError> {
        HpcParams::from_json(params, self.supervised)?;
        if self.supervised && corpus.num_labels == 0 {
            return Err(ParamError::new("", "the corpus has no labels: hpc needs labelled documents (pcm fits an unlabelled corpus)"));
        }
        Ok(())
    }

    fn fit(&self, corpus: &Corpus, params: &serde_json::Value, seed: u64, ctx: &FitContext) -> Result<Box<dyn TopicModel>, FitError> {
        let p = HpcParams::from_json(params, self.supervised)?;
        Ok(Box::new(fit_hpc(corpus, &p, self.supervised, seed, ctx)?))
    }

    fn fit_memory(&self, corpus: &CorpusStats, params: &serde_json::Value, threads: usize) -> u64 {
        let p = HpcParams::from_json(params, self.supervised)
            .or_else(|_| HpcParams::from_json(&serde_json::json!({}), self.supervised))
            .expect("the defaults parse");
        crate::models::memory::hpc(corpus, &p, self.supervised, threads)
    }

    fn decode(&self, bytes: &[u8]) -> Result<Box<dyn TopicModel>, ModelError> {
        Ok(Box::new(HpcModel::decode(bytes)?))
    }

    fn capabilities(&self) -> crate::models::capabilities::Capabilities {
        // HPC predicts and scores labels; PCM has latent topics only.
        crate::models::capabilities::Capabilities {
            label_prediction: self.supervised,
            label_evaluation: self.supervised,
            ..crate::models::capabilities::Capabilities::TOPIC_MODEL
        }
    }
}

/// Numbers about the fit shown with the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FitSummary {
    pub training_documents: usize,
    pub validation_documents: usize,
    pub test_documents: usize,
    pub unlabelled_documents: usize,
    pub kept_scans: usize,
    pub tokens: f64,
    pub final_loglik_per_token: f64,
    pub final_label_loglik: f64,
    pub rate_acceptance: f64,
    pub affinity_acceptance: f64,
    pub mode_hessian_repairs: usize,
    pub mass_matrix_repairs: usize,
    pub inactive_fallbacks: usize,
    pub factor_nonzeros: usize,
    pub rate_curvature: super::rates::Curvature,
    pub nu: f64,
    pub sigma2: f64,
    pub psi: f64,
    pub gamma2: f64,
}

/// Test-split scores of the calibrated predictions and of the trivial baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evaluation {
    pub model: SetScores,
    pub most_frequent_baseline: SetScores,
}

/// A fitted HPC or PCM model: posterior means over the kept scans.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HpcModel {
    pub version: u32,
    pub supervised: bool,
    pub params: HpcParams,
    pub num_terms: usize,
    /// Topic (label) names.
    pub labels: Vec<String>,
    /// Parent topic of each topic (`None` under the root).
    pub parent: Vec<Option<usize>>,
    /// E[β], topic-major `K × V`.
    pub frequency: Vec<f32>,
    /// E[φ] against the siblings (an only child against its parent), `K × V`.
    pub exclusivity: Vec<f32>,
    /// E[φ] against every topic, `K × V`.
    pub exclusivity_all: Vec<f32>,
    /// E[μ], word-major `V × (K + 1)` (node 0 = the root).
    pub mu: Vec<f32>,
    pub eta: Vec<f64>,
    pub lambda2: f64,
    /// Each topic's share of the expected tokens.
    pub shares: Vec<f64>,
    /// Mean training document length (l_d of a new document is its length over this).
    pub mean_length: f64,
    pub thresholds: Thresholds,
    pub evaluation: Option<Evaluation>,
    pub summary: FitSummary,
    /// How labels are predicted (version 1 blobs end before it).
    pub prediction: LabelPrediction,
    /// Whether the rates (and so the topic tables and predictions) were fitted again on
    /// the training and validation documents after the calibration on the validation
    /// documents (last: version 3 blobs end before it).
    pub refitted_with_validation: bool,
    /// B_k = Σ_f exp(E[μ_fk]) over topics, computed on first use.
    #[serde(skip)]
    pub(super) rate_totals: OnceLock<Vec<f64>>,
    #[serde(skip)]
    pub(super) deepest_first: OnceLock<Vec<usize>>,
}

impl HpcModel {
    pub fn decode(bytes: &[u8]) -> Result<Self, ModelError> {
        let bad = |e: postcard::Error| ModelError::Decode(e.to_string());
        let (version, _) = postcard::take_from_bytes::<u32>(bytes).map_err(bad)?;
        let m: HpcModel = match version {
            ENCODING_VERSION => postcard::from_bytes(bytes).map_err(bad)?,
            3 => {
                // Version 3 ends before `refitted_with_validation`: `false` is one zero byte.
                let mut v4 = bytes.to_vec();
                v4.extend(postcard::to_allocvec(&false).map_err(bad)?);
                let mut m: HpcModel = postcard::from_bytes(&v4).map_err(bad)?;
                m.version = ENCODING_VERSION;
                m
            }
            // Postcard writes a struct's fields one after another, without names or
            // lengths, so an older blob is the current one without its trailing fields.
            2 => {
                // Version 2 ends before `prediction.sets`: an empty list is one zero byte.
                let mut v3 = bytes.to_vec();
                v3.extend(postcard::to_allocvec(&Vec::<LabelSet>::new()).map_err(bad)?);
                v3.extend(postcard::to_allocvec(&false).map_err(bad)?);
                let mut m: HpcModel = postcard::from_bytes(&v3).map_err(bad)?;
                m.version = ENCODING_VERSION;
                m
            }
            1 => {
                // Version 1 ends before `prediction`.
                let mut v3 = bytes.to_vec();
                v3.extend(postcard::to_allocvec(&LabelPrediction::mode_only()).map_err(bad)?);
                v3.extend(postcard::to_allocvec(&false).map_err(bad)?);
                let mut m: HpcModel = postcard::from_bytes(&v3).map_err(bad)?;
                m.version = ENCODING_VERSION;
                m
            }
            v => return Err(ModelError::Decode(format!("HPC encoding version {v} is not {ENCODING_VERSION}, 3, 2 or 1"))),
        };
        Ok(m)
    }

    /// Topics deepest first (see [`deepest_first`]), computed on first use.
    pub(super) fn deepest_first(&self) -> &[usize] {
        self.deepest_first.get_or_init(|| deepest_first(&self.parent))
    }

    /// Σ_f β*_fk for every topic, with β* = exp of the posterior-mean log rates.
    pub fn rate_totals(&self) -> &[f64] {
        self.rate_totals.get_or_init(|| {
            let n = self.labels.len() + 1;
            let mut totals = vec![0.0; n - 1];
            for row in self.mu.chunks(n) {
                for (t, &m) in totals.iter_mut().zip(&row[1..]) {
                    *t += (m as f64).exp();
                }
            }
            totals
        })
    }

    fn table(&self, values: &[f32]) -> Array2<f64> {
        Array2::from_shape_vec((self.labels.len(), self.num_terms), values.iter().map(|&x| x as f64).collect()).expect("shape stored with the model")
    }
}

impl TopicModel for HpcModel {
    fn family(&self) -> &'static str {
        family_name(self.supervised)
    }

    fn num_topics(&self) -> usize {
        self.labels.len()
    }

    fn topic_table(&self, options: &TableOptions) -> TopicTable {
        let exclusivity = match options.comparison {
            Comparison::Natural => &self.exclusivity,
            Comparison::All => &self.exclusivity_all,
        };
        let topics = (0..self.labels.len())
            .map(|t| TopicInfo {
                label: self.supervised.then(|| self.labels[t].clone()),
                parent: self.parent[t],
                children: (0..self.labels.len()).filter(|&c| self.parent[c] == Some(t)).collect(),
                proportion: self.shares[t],
            })
            .collect();
        TopicTable { frequency: self.table(&self.frequency), exclusivity: self.table(exclusivity), topics }
    }

    fn predict(&self, docs: &[EncodedDoc], _options: &PredictOptions) -> Result<Vec<DocPrediction>, ModelError> {
        Ok(docs
            .par_iter()
            .map(|doc| {
                let words = known_words(self, doc.terms.iter().zip(&doc.counts).map(|(&t, &c)| (t as usize, c as f64)));
                // β*_f· of the document's words and their likelihoods under each label and
                // candidate set, taken once for ξ* and the label probabilities.
                let rates = document_rates(self, &words);
                let evidence = Evidence::of(self, &words, &rates);
                let xi = predict_affinities(self, &words, &rates, &evidence);
                let topic_proportions = super::affinity::softmax(&xi);
                if !self.supervised {
                    return DocPrediction { topic_proportions, labels: vec![], predicted_labels: vec![] };
                }
                let probabilities = label_probabilities(self, &self.prediction, &evidence, self.deepest_first(), || xi);
                let predicted = self.prediction.decide(&self.thresholds, &probabilities, &self.parent);
                let predicted_labels = predicted.into_iter().map(|k| self.labels[k].clone()).collect();
                let labels = self.labels.iter().cloned().zip(probabilities).collect();
                DocPrediction { topic_proportions, labels, predicted_labels }
            })
            .collect())
    }

    fn evaluate_test_split(&self, corpus: &Corpus, seed: u64) -> Option<Result<serde_json::Value, FitError>> {
        if !self.supervised {
            return None;
        }
        Some(super::fit::evaluate_test_split(self, corpus, seed).map(|e| match e {
            Some(e) => evaluation_json(&e, &self.labels),
            None => serde_json::Value::Null,
        }))
    }

    fn diagnostics(&self) -> serde_json::Value {
        let per_label = self.thresholds.per_label.iter().filter(|t| t.is_some()).count();
        json!({
            "fit": self.summary,
            "refitted_with_validation": self.refitted_with_validation,
            "thresholds": {"global": self.thresholds.global, "labels_with_own_threshold": per_label},
            "prediction": {"predictor": self.prediction.predictor, "ancestors": self.prediction.ancestors, "temperature": self.prediction.temperature, "label_sets": self.prediction.sets.len()},
            "evaluation": self.evaluation.as_ref().map(|e| evaluation_json(e, &self.labels)),
            "hyperparameters": {"eta_mean": self.eta.iter().sum::<f64>() / self.eta.len().max(1) as f64, "lambda2": self.lambda2},
        })
    }

    fn encode(&self) -> Vec<u8> {
        postcard::to_allocvec(self).expect("plain data encodes")
    }

    fn memory_bytes(&self) -> usize {
        use crate::heap_size::{nested, strings, vec};
        let tables = vec(&self.frequency) + vec(&self.exclusivity) + vec(&self.exclusivity_all) + vec(&self.mu);
        let labels = strings(&self.labels) + vec(&self.parent) + vec(&self.eta) + vec(&self.shares) + vec(&self.thresholds.per_label);
        let prediction = vec(&self.prediction.log_prior) + nested(&self.prediction.sets, |s| vec(&s.labels) + vec(&s.members));
        let evaluation = self.evaluation.as_ref().map_or(0, |e| vec(&e.model.per_label) + vec(&e.most_frequent_baseline.per_label));
        let caches = self.rate_totals.get().map_or(0, vec) + self.deepest_first.get().map_or(0, vec);
        tables + labels + prediction + evaluation + caches
    }
}

/// The model's and the baseline's test-split scores as JSON.
fn evaluation_json(e: &Evaluation, labels: &[String]) -> serde_json::Value {
    json!({
        "model": scores_json(&e.model, labels),
        "most_frequent_baseline": scores_json(&e.most_frequent_baseline, labels),
    })
}

/// Test-split scores as JSON, labels by name.
fn scores_json(s: &SetScores, names: &[String]) -> serde_json::Value {
    json!({
        "documents": s.documents,
        "micro": s.micro,
        "macro": s.macro_average,
        "per_label": s.per_label.iter().map(|(k, sc, n)| json!({"label": names[*k], "f1": sc.f1, "precision": sc.precision, "recall": sc.recall, "documents": n})).collect::<Vec<_>>(),
    })
}
