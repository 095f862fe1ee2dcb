//! The `"lda"` entry of the registry: parsing and checking LDA's params, its memory
//! estimate, its fits (one process or over ranks) and decoding its stored models.

use super::fit::{fit_lda, fit_lda_edited, fit_lda_updated};
use super::model::LdaModel;
use super::{fit_memory, ranked, LdaParams};
use crate::corpus::{Corpus, CorpusStats};
use crate::models::design::DesignSpec;
use crate::models::edits::EditPlan;
use crate::models::seeds::SeedWords;
use crate::models::{EditStart, FitContext, FitError, ModelError, ModelFamily, ParamError, RankedModel, TopicModel, UpdateStart};
use crate::ranks::Ranks;
use serde_json::json;

/// The `"lda"` model family.
pub struct LdaFamily;

impl ModelFamily for LdaFamily {
    fn name(&self) -> &'static str {
        "lda"
    }

    type Params = LdaParams;

    fn parse_params(&self, params: &serde_json::Value) -> Result<LdaParams, ParamError> {
        LdaParams::from_json(params)
    }

    fn params_json(&self, params: &LdaParams) -> serde_json::Value {
        // The struct's fields are the wire names.
        serde_json::to_value(params).expect("plain data serialises")
    }

    fn fit(&self, corpus: &Corpus, params: &LdaParams, seed: u64, ctx: &FitContext) -> Result<Box<dyn TopicModel>, FitError> {
        Ok(Box::new(fit_lda(corpus, params, seed, ctx)?))
    }

    fn fit_ranked(&self, corpus: Option<Corpus>, params: &LdaParams, seed: u64, ctx: &FitContext, ranks: &dyn Ranks) -> Result<RankedModel, FitError> {
        Ok(ranked::fit_lda_ranked(corpus, params, seed, ctx, ranks)?.map(|m| Box::new(m) as Box<dyn TopicModel>))
    }

    fn edited_params(&self, parent: &LdaParams, plan: &EditPlan, iterations: usize) -> Result<LdaParams, ParamError> {
        parent.edited(plan.child_topics(), iterations)
    }

    fn fit_edited(&self, corpus: &Corpus, params: &LdaParams, start: &EditStart<'_>, seed: u64, ctx: &FitContext) -> Result<Box<dyn TopicModel>, FitError> {
        Ok(Box::new(fit_lda_edited(corpus, params, start, seed, ctx)?))
    }

    fn updated_params(&self, parent: &LdaParams, new_topics: usize, iterations: usize) -> Result<LdaParams, ParamError> {
        parent.edited(parent.topics + new_topics, iterations)
    }

    fn fit_updated(&self, corpus: &Corpus, params: &LdaParams, start: &UpdateStart<'_>, seed: u64, ctx: &FitContext) -> Result<Box<dyn TopicModel>, FitError> {
        Ok(Box::new(fit_lda_updated(corpus, params, start, seed, ctx)?))
    }

    fn check_params(&self, params: &LdaParams, corpus: &CorpusStats) -> Result<(), ParamError> {
        DesignSpec::check(&params.design_request(), &corpus.covariates)
    }

    fn check_ranks(&self, params: &LdaParams, ranks: usize) -> Result<(), ParamError> {
        params.check_ranks(ranks)
    }

    fn seeds(&self, params: &LdaParams) -> SeedWords {
        params.seeds()
    }

    fn fit_memory(&self, corpus: &CorpusStats, params: &LdaParams, threads: usize) -> u64 {
        fit_memory::estimate(corpus, params, threads)
    }

    fn quick_params(&self) -> LdaParams {
        LdaParams::from_json(&json!({"topics": 2, "iterations": 4, "burn_in": 2, "thin": 1})).expect("valid brief-fit params")
    }

    fn decode(&self, bytes: &[u8]) -> Result<Box<dyn TopicModel>, ModelError> {
        Ok(Box::new(LdaModel::decode(bytes)?))
    }

    fn capabilities(&self) -> crate::models::capabilities::Capabilities {
        crate::models::capabilities::Capabilities {
            heldout_likelihood: true,
            summary_intervals: true,
            prediction_intervals: true,
            effects: true,
            edits: true,
            updates: true,
            ..crate::models::capabilities::Capabilities::TOPIC_MODEL
        }
    }
}
