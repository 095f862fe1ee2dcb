//! The `dcnt` and `scnt` families ([`DCNT`], [`SCNT`]) and the served face of their
//! fitted [`DcntModel`] ([`TopicModel`]).
//!
//! Why it exists: it is DCNT's face towards the rest of the service, the registry's
//! seam ([`crate::models::registry::REGISTRY`]): parameter checks, fitting
//! ([`super::fit::fit_dcnt`]) and decoding, and the questions a fitted model answers
//! (topic table, prediction, held-out scoring and topic correlations through
//! [`super::scoring`], diagnostics). The fit builds the model and the scoring reads it,
//! so this face cannot live in [`super::model`] without import circles; here it sits
//! above every other module of the folder and none of them names it.

use super::fit::{fit_dcnt, fit_dcnt_edited, fit_dcnt_updated};
use super::model::DcntModel;
use super::params::DcntParams;
use super::sample::Loadings;
use super::scoring::{self, DcntChib};
use super::variant::Covariance;
use crate::corpus::lexicon::EncodedDoc;
use crate::corpus::{Corpus, CorpusStats};
use crate::models::chains;
use crate::models::convergence::ConvergenceReport;
use crate::models::design::DesignSpec;
use crate::models::edits::EditPlan;
use crate::models::heldout::{DocScorer, HeldoutReport};
use crate::models::seeds::{seeds_diagnostics, SeedWords};
use crate::models::slotted::Slotted;
use crate::models::{
    DocPrediction, EditStart, FitContext, FitError, ModelError, ModelFamily, ParamError, PredictOptions, PredictionWithIntervals, TableOptions,
    TopicCorrelations, TopicDraw, TopicModel, TopicTable, UpdateStart,
};
use serde_json::json;

/// The `"dcnt"` (full A) or `"scnt"` (diagonal A) family.
pub struct DcntFamily {
    pub covariance: Covariance,
}

pub static DCNT: DcntFamily = DcntFamily { covariance: Covariance::Full };
pub static SCNT: DcntFamily = DcntFamily { covariance: Covariance::Diagonal };

impl ModelFamily for DcntFamily {
    fn name(&self) -> &'static str {
        self.covariance.family_name()
    }

    type Params = DcntParams;

    fn parse_params(&self, params: &serde_json::Value) -> Result<DcntParams, ParamError> {
        DcntParams::from_json(params)
    }

    fn params_json(&self, params: &DcntParams) -> serde_json::Value {
        params.to_json()
    }

    fn seeds(&self, params: &DcntParams) -> SeedWords {
        params.seeds.clone()
    }

    fn check_params(&self, params: &DcntParams, corpus: &CorpusStats) -> Result<(), ParamError> {
        if corpus.num_tokens == 0 {
            return Err(ParamError::new("corpus", "the corpus has no tokens"));
        }
        DesignSpec::check(&params.design, &corpus.covariates)
    }

    fn fit(&self, corpus: &Corpus, params: &DcntParams, seed: u64, ctx: &FitContext) -> Result<Box<dyn TopicModel>, FitError> {
        Ok(Box::new(fit_dcnt(corpus, params, self.covariance, seed, ctx)?))
    }

    fn edited_params(&self, parent: &DcntParams, plan: &EditPlan, iterations: usize) -> Result<DcntParams, ParamError> {
        parent.edited(plan, iterations)
    }

    fn fit_edited(&self, corpus: &Corpus, params: &DcntParams, start: &EditStart<'_>, seed: u64, ctx: &FitContext) -> Result<Box<dyn TopicModel>, FitError> {
        Ok(served(fit_dcnt_edited(corpus, params, self.covariance, start, seed, ctx)?))
    }

    fn updated_params(&self, parent: &DcntParams, new_topics: usize, iterations: usize) -> Result<DcntParams, ParamError> {
        parent.updated(parent.topics + new_topics, iterations)
    }

    fn fit_updated(&self, corpus: &Corpus, params: &DcntParams, start: &UpdateStart<'_>, seed: u64, ctx: &FitContext) -> Result<Box<dyn TopicModel>, FitError> {
        Ok(served(fit_dcnt_updated(corpus, params, self.covariance, start, seed, ctx)?))
    }

    fn fit_memory(&self, corpus: &CorpusStats, params: &DcntParams, threads: usize) -> u64 {
        super::fit_memory::estimate(corpus, params, threads)
    }

    fn quick_params(&self) -> DcntParams {
        DcntParams::from_json(&json!({"topics": 2, "iterations": 4, "burn_in": 2, "thin": 1})).expect("valid brief-fit params")
    }

    fn decode(&self, bytes: &[u8]) -> Result<Box<dyn TopicModel>, ModelError> {
        let m = DcntModel::decode(bytes)?;
        if m.covariance != self.covariance {
            return Err(ModelError::Decode(format!("a {} model, not {}", m.covariance.family_name(), self.name())));
        }
        Ok(served(m))
    }

    fn capabilities(&self) -> crate::models::capabilities::Capabilities {
        crate::models::capabilities::Capabilities {
            correlations: true,
            heldout_likelihood: true,
            effects: true,
            summary_intervals: true,
            prediction_intervals: true,
            updates: true,
            edits: true,
            ..crate::models::capabilities::Capabilities::TOPIC_MODEL
        }
    }
}

/// The model as served: an edited model's compact topics in the child's slots
/// ([`Slotted`]), any other as it is.
fn served(m: DcntModel) -> Box<dyn TopicModel> {
    match m.slots.clone() {
        Some(slots) => Box::new(Slotted::new(m, slots)),
        None => Box::new(m),
    }
}

impl TopicModel for DcntModel {
    fn family(&self) -> &'static str {
        self.covariance.family_name()
    }

    fn num_topics(&self) -> usize {
        self.params.topics
    }

    fn topic_table(&self, _options: &TableOptions) -> TopicTable {
        TopicTable::flat_rows(self.params.topics, self.num_terms, self.topic_word.clone(), &self.topic_shares)
    }

    /// New documents carry no metadata: they use the training documents' mean φ.
    fn predict(&self, docs: &[EncodedDoc], options: &PredictOptions) -> Result<Vec<DocPrediction>, ModelError> {
        let features: Vec<f64> = docs.iter().flat_map(|_| self.mean_features.iter().copied()).collect();
        let proportions = self.predict_with_features(docs, &features, options)?;
        Ok(proportions.into_iter().map(DocPrediction::proportions).collect())
    }

    /// Intervals over the fold-in chain's kept sweeps, new documents at the training
    /// documents' mean φ as in [`TopicModel::predict`].
    fn predict_with_intervals(&self, docs: &[EncodedDoc], options: &PredictOptions, level: f64) -> Result<Option<Vec<PredictionWithIntervals>>, ModelError> {
        let features: Vec<f64> = docs.iter().flat_map(|_| self.mean_features.iter().copied()).collect();
        let answers = self.predict_with_features_and_intervals(docs, &features, options, level)?;
        Ok(Some(crate::models::proportions_with_intervals(answers)))
    }

    /// A kept scan's topic-word counts as a table (Ω at the Dirichlet mean with β); a
    /// later chain's scan is relabelled onto the model's topics.
    fn topic_draw(&self, iteration: u64, sample: &[u8]) -> Result<Option<TopicDraw>, ModelError> {
        use crate::models::topic_draws::{pooled_draw, PooledChains, SparseCounts};
        let s: super::sample::DcntSample = postcard::from_bytes(sample).map_err(|e| ModelError::Decode(format!("a DCNT sample: {e}")))?;
        let counts = SparseCounts { num_topics: s.num_topics as usize, word_ptr: &s.word_ptr, topics: &s.topics, counts: &s.counts };
        if counts.num_topics != self.params.topics {
            return Err(ModelError::Invalid(format!("a sample of {} topics for a model of {}", counts.num_topics, self.params.topics)));
        }
        let pooling =
            PooledChains { alignments: &self.alignments, reference: self.reference_chain, iterations: self.params.iterations, chains: self.params.chains };
        pooled_draw(&counts, self.num_terms, self.params.priors.beta, iteration, &pooling).map(Some)
    }

    fn heldout_scorer(&self, given: &crate::models::heldout::EstimatorSettings) -> Result<Option<Box<dyn DocScorer + '_>>, ParamError> {
        let settings = DcntChib::settings_from(given);
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

    fn effects(&self, query: &crate::models::effects::EffectQuery) -> Result<Option<crate::models::effects::Effects>, ModelError> {
        super::effects::effects(self, query).map(Some)
    }

    fn correlations(&self, draws: usize, seed: u64) -> Option<TopicCorrelations> {
        Some(scoring::correlations(self, draws, seed))
    }

    fn topic_stability(&self) -> Option<Vec<crate::models::stability::TopicStability>> {
        crate::models::stability::from_alignments(&self.alignments, self.num_topics())
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
            // K̄ of the sticks: an edited model's live topics (`live_topics` lists them).
            "truncation": self.params.topics,
            "num_features": self.num_features,
            "feature_names": self.feature_names,
            "train_documents": self.train_documents.len(),
            "heldout_documents": self.heldout_documents.len(),
            "beta": self.params.priors.beta,
            "chains": self.params.chains,
            "reference_chain": (self.params.chains > 1).then_some(self.reference_chain),
            "convergence": self.convergence.as_ref().map(ConvergenceReport::to_json),
            // In the served ids: an edited model's alignments spread into its slots.
            "chain_alignment": match &self.slots {
                Some(slots) => chains::alignments_json(&self.alignments.iter().map(|a| slots.spread_alignment(a)).collect::<Vec<_>>()),
                None => chains::alignments_json(&self.alignments),
            },
            "seeds": (!self.params.seeds.is_empty()).then(|| seeds_diagnostics(&self.params.seeds, &self.missing_seed_words)),
        })
    }

    fn encode(&self) -> Vec<u8> {
        postcard::to_allocvec(self).expect("plain data encodes")
    }

    fn memory_bytes(&self) -> usize {
        use crate::heap_size::{nested, strings, vec};
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
            + nested(&self.draws, loadings)
            + self.design.as_ref().map_or(0, DesignSpec::memory_bytes)
            // The request's reference and spline maps (a few short entries) are not counted.
            + strings(&self.params.design.covariates)
            + nested(&self.alignments, |a| vec(&a.permutation) + vec(&a.distances))
            + vec(&self.draws_per_chain)
    }
}
