//! The `"hpc"` and `"pcm"` model families ([`HPC`], [`PCM`]) and the served face of
//! their fitted [`HpcModel`] ([`TopicModel`]).
//!
//! Why it exists: it is HPC's face towards the rest of the service, the registry's seam
//! ([`crate::models::registry::REGISTRY`]): parameter checks, fitting ([`super::fit`])
//! and decoding, topic tables (frequency, exclusivity against siblings or every topic,
//! FREX computed on top by the summaries), label prediction ([`super::predict`],
//! [`super::label_posterior`]) and diagnostics. It sits above every other module of the
//! folder and none of them names it, so the fit, the prediction and the model itself
//! stay free of import circles.

use super::calibration::SetScores;
use super::fit::{fit_hpc, fit_hpc_updated, fit_pcm_edited};
use super::label_posterior::{document_rates, known_words, label_probabilities, Evidence};
use super::model::{Evaluation, HpcModel};
use super::params::HpcParams;
use super::predict::predict_affinities;
use super::predict_intervals::laplace_intervals;
use super::variant::Supervision;
use crate::corpus::lexicon::EncodedDoc;
use crate::corpus::{Corpus, CorpusStats};
use crate::models::convergence::ConvergenceReport;
use crate::models::edits::EditPlan;
use crate::models::{
    Comparison, DocPrediction, EditStart, FitContext, FitError, ModelError, ModelFamily, ParamError, PredictOptions, PredictionWithIntervals, RankedModel,
    TableOptions, TopicInfo, TopicModel, TopicTable, UpdateStart,
};
use crate::ranks::Ranks;
use rayon::prelude::*;
use serde_json::json;

/// HPC (labels on a tree) or PCM (latent topics under the root).
pub struct HpcFamily {
    pub supervision: Supervision,
}

/// The `"hpc"` family.
pub static HPC: HpcFamily = HpcFamily { supervision: Supervision::Labelled };
/// The `"pcm"` family.
pub static PCM: HpcFamily = HpcFamily { supervision: Supervision::Unsupervised };

impl ModelFamily for HpcFamily {
    fn name(&self) -> &'static str {
        self.supervision.family_name()
    }

    type Params = HpcParams;

    fn parse_params(&self, params: &serde_json::Value) -> Result<HpcParams, ParamError> {
        HpcParams::from_json(params, self.supervision)
    }

    fn params_json(&self, params: &HpcParams) -> serde_json::Value {
        params.to_json(self.supervision)
    }

    fn seeds(&self, params: &HpcParams) -> crate::models::seeds::SeedWords {
        params.seeds.clone()
    }

    fn check_params(&self, params: &HpcParams, corpus: &CorpusStats) -> Result<(), ParamError> {
        if self.supervision.is_labelled() && corpus.num_labels == 0 {
            return Err(ParamError::new("", "the corpus has no labels: hpc needs labelled documents (pcm fits an unlabelled corpus)"));
        }
        crate::models::design::DesignSpec::check(&params.design, &corpus.covariates)
    }

    fn fit(&self, corpus: &Corpus, params: &HpcParams, seed: u64, ctx: &FitContext) -> Result<Box<dyn TopicModel>, FitError> {
        Ok(Box::new(fit_hpc(corpus, params, self.supervision, seed, ctx)?))
    }

    fn updated_params(&self, parent: &HpcParams, new_topics: usize, iterations: usize) -> Result<HpcParams, ParamError> {
        parent.updated(self.supervision, new_topics, iterations)
    }

    fn fit_updated(&self, corpus: &Corpus, params: &HpcParams, start: &UpdateStart<'_>, seed: u64, ctx: &FitContext) -> Result<Box<dyn TopicModel>, FitError> {
        Ok(Box::new(fit_hpc_updated(corpus, params, self.supervision, start, seed, ctx)?))
    }

    fn edited_params(&self, parent: &HpcParams, plan: &EditPlan, iterations: usize) -> Result<HpcParams, ParamError> {
        parent.edited(self.supervision, plan, iterations)
    }

    fn fit_edited(&self, corpus: &Corpus, params: &HpcParams, start: &EditStart<'_>, seed: u64, ctx: &FitContext) -> Result<Box<dyn TopicModel>, FitError> {
        if self.supervision.is_labelled() {
            return Err(FitError::Params(ParamError::new("model", "HPC's topics are its labels: its models cannot be edited")));
        }
        Ok(Box::new(fit_pcm_edited(corpus, params, start, seed, ctx)?))
    }

    fn check_ranks(&self, params: &HpcParams, _ranks: usize) -> Result<(), ParamError> {
        match super::ranked::unsupported(params) {
            Some(reason) => Err(ParamError::new("ranks", reason)),
            None => Ok(()),
        }
    }

    fn fit_ranked(&self, corpus: Option<Corpus>, params: &HpcParams, seed: u64, ctx: &FitContext, ranks: &dyn Ranks) -> Result<RankedModel, FitError> {
        Ok(super::ranked::fit_hpc_ranked(corpus, params, self.supervision, seed, ctx, ranks)?.map(|m| Box::new(m) as Box<dyn TopicModel>))
    }

    fn fit_memory(&self, corpus: &CorpusStats, params: &HpcParams, threads: usize) -> u64 {
        super::fit_memory::estimate(corpus, params, self.supervision, threads)
    }

    fn quick_params(&self) -> HpcParams {
        let brief = match self.supervision {
            Supervision::Labelled => json!({"iterations": 4, "burn_in": 2, "thin": 1}),
            Supervision::Unsupervised => json!({"topics": 2, "iterations": 4, "burn_in": 2, "thin": 1}),
        };
        HpcParams::from_json(&brief, self.supervision).expect("valid brief-fit params")
    }

    fn decode(&self, bytes: &[u8]) -> Result<Box<dyn TopicModel>, ModelError> {
        Ok(Box::new(HpcModel::decode(bytes)?))
    }

    fn capabilities(&self) -> crate::models::capabilities::Capabilities {
        // HPC predicts and scores labels; PCM has latent topics only.
        crate::models::capabilities::Capabilities {
            label_prediction: self.supervision.is_labelled(),
            label_evaluation: self.supervision.is_labelled(),
            prediction_intervals: true,
            effects: true,
            updates: true,
            edits: !self.supervision.is_labelled(),
            ..crate::models::capabilities::Capabilities::TOPIC_MODEL
        }
    }
}

impl HpcModel {
    /// The mean η over the topics that are not retired ([`HpcModel::retired_slots`]).
    fn live_eta_mean(&self) -> f64 {
        let retired = self.retired_slots();
        let live: Vec<f64> = self.eta.iter().enumerate().filter(|(k, _)| !retired.contains(k)).map(|(_, &e)| e).collect();
        live.iter().sum::<f64>() / live.len().max(1) as f64
    }

    /// One document's prediction, and what `at_mode` makes of its known words, their
    /// rates and its mode ξ* (the intervals around it, or nothing).
    fn predict_one<T>(&self, doc: &EncodedDoc, at_mode: impl FnOnce(&[(usize, f64)], &[f64], &[f64]) -> T) -> (DocPrediction, T) {
        let words = known_words(self, doc.terms.iter().zip(&doc.counts).map(|(&t, &c)| (t as usize, c as f64)));
        // β*_f· of the document's words and their likelihoods under each label and
        // candidate set, taken once for ξ* and the label probabilities.
        let rates = document_rates(self, &words);
        let evidence = Evidence::of(self, &words, &rates);
        let xi = predict_affinities(self, &words, &rates, &evidence);
        let extra = at_mode(&words, &rates, &xi);
        let topic_proportions = super::affinity::softmax(&xi);
        let Supervision::Labelled = self.supervision else {
            return (DocPrediction::proportions(topic_proportions), extra);
        };
        let probabilities = label_probabilities(self, &self.prediction, &evidence, self.deepest_first(), || xi);
        let predicted = self.prediction.decide(&self.thresholds, &probabilities, &self.parent);
        let predicted_labels = predicted.into_iter().map(|k| self.labels[k].clone()).collect();
        let labels = self.labels.iter().cloned().zip(probabilities).collect();
        (DocPrediction { topic_proportions, labels, predicted_labels }, extra)
    }
}

impl TopicModel for HpcModel {
    fn family(&self) -> &'static str {
        self.supervision.family_name()
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
                label: self.supervision.is_labelled().then(|| self.labels[t].clone()),
                parent: self.parent[t],
                children: (0..self.labels.len()).filter(|&c| self.parent[c] == Some(t)).collect(),
                proportion: self.shares[t],
            })
            .collect();
        TopicTable { frequency: self.table(&self.frequency), exclusivity: self.table(exclusivity), topics }
    }

    fn predict(&self, docs: &[EncodedDoc], _options: &PredictOptions) -> Result<Vec<DocPrediction>, ModelError> {
        Ok(docs.par_iter().map(|doc| self.predict_one(doc, |_, _, _| ()).0).collect())
    }

    /// Effects by the method of composition over the θ draws the fit kept, for a fit
    /// that read covariates.
    fn effects(&self, query: &crate::models::effects::EffectQuery) -> Result<Option<crate::models::effects::Effects>, ModelError> {
        let spec = self
            .design
            .as_ref()
            .ok_or_else(|| ModelError::NotOffered("this model was fitted without covariates: effects need a fit with `covariates` in its params".into()))?;
        crate::models::composition::composition(spec, &self.design_rows, self.labels.len(), &self.theta_draws, None, query).map(Some)
    }

    /// Intervals from the Laplace approximation at each document's ξ*
    /// ([`laplace_intervals`]), the mode its prediction found.
    fn predict_with_intervals(&self, docs: &[EncodedDoc], options: &PredictOptions, level: f64) -> Result<Option<Vec<PredictionWithIntervals>>, ModelError> {
        Ok(Some(
            docs.par_iter()
                .enumerate()
                .map(|(d, doc)| self.predict_one(doc, |words, rates, xi| laplace_intervals(self, words, rates, xi, options.seed, d as u64, level)))
                .collect(),
        ))
    }

    fn evaluate_test_split(&self, corpus: &Corpus, seed: u64) -> Option<Result<serde_json::Value, FitError>> {
        let Supervision::Labelled = self.supervision else {
            return None;
        };
        Some(super::fit::evaluate_test_split(self, corpus, seed).map(|e| match e {
            Some(e) => evaluation_json(&e, &self.labels),
            None => serde_json::Value::Null,
        }))
    }

    fn topic_stability(&self) -> Option<Vec<crate::models::stability::TopicStability>> {
        crate::models::stability::from_alignments(&self.alignments, self.num_topics())
    }

    fn diagnostics(&self) -> serde_json::Value {
        let per_label = self.thresholds.per_label.iter().filter(|t| t.is_some()).count();
        json!({
            "fit": self.summary,
            "refitted_with_validation": self.refitted_with_validation,
            "thresholds": {"global": self.thresholds.global, "labels_with_own_threshold": per_label},
            "prediction": {"predictor": self.prediction.predictor, "ancestors": self.prediction.ancestors, "temperature": self.prediction.temperature, "label_sets": self.prediction.sets.len()},
            "evaluation": self.evaluation.as_ref().map(|e| evaluation_json(e, &self.labels)),
            "hyperparameters": {"eta_mean": self.live_eta_mean(), "lambda2": self.lambda2},
            "chains": self.chains,
            "convergence": self.convergence.as_ref().map(ConvergenceReport::to_json),
            "chain_alignment": crate::models::chains::alignments_json(&self.alignments),
            "seeds": (!self.seeds.is_empty()).then(|| crate::models::seeds::seeds_diagnostics(&self.seeds, &self.missing_seed_words)),
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
        let chains = nested(&self.alignments, |a| vec(&a.permutation) + vec(&a.distances))
            + self.design.as_ref().map_or(0, crate::models::design::DesignSpec::memory_bytes)
            + vec(&self.design_rows)
            + nested(&self.theta_draws, vec);
        tables + labels + prediction + evaluation + caches + chains
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
