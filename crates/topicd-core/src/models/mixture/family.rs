//! The `"mixture"` entry of the registry.

use super::fit::fit;
use super::model::MixtureModel;
use super::params::MixtureParams;
use crate::corpus::{Corpus, CorpusStats};
use crate::models::capabilities::Capabilities;
use crate::models::params::ParamError;
use crate::models::{FitContext, FitError, ModelError, ModelFamily, TopicModel};
use serde_json::Value;

/// The family, as registered.
pub struct MixtureFamily;

impl ModelFamily for MixtureFamily {
    type Params = MixtureParams;
    fn name(&self) -> &'static str {
        "mixture"
    }
    fn parse_params(&self, params: &Value) -> Result<MixtureParams, ParamError> {
        MixtureParams::from_json(params)
    }
    fn params_json(&self, params: &MixtureParams) -> Value {
        serde_json::to_value(params).expect("plain data serialises")
    }
    fn fit_memory(&self, corpus: &CorpusStats, params: &MixtureParams, _threads: usize) -> u64 {
        // The corpus, the rates (twice: counts and rates) and the assignments.
        let corpus_bytes = 12 * corpus.num_tokens + 8 * corpus.num_documents as u64;
        corpus_bytes + 16 * (params.topics * corpus.num_terms) as u64 + 8 * corpus.num_documents as u64
    }
    fn fit(&self, corpus: &Corpus, params: &MixtureParams, _seed: u64, ctx: &FitContext) -> Result<Box<dyn TopicModel>, FitError> {
        Ok(Box::new(fit(corpus, params, ctx)?))
    }
    fn quick_params(&self) -> MixtureParams {
        MixtureParams { topics: 2, iterations: 3, beta: 0.1 }
    }
    fn decode(&self, bytes: &[u8]) -> Result<Box<dyn TopicModel>, ModelError> {
        let model: MixtureModel = postcard::from_bytes(bytes).map_err(|e| ModelError::Decode(e.to_string()))?;
        if model.rates.len() != model.topics * model.terms || model.shares.len() != model.topics {
            return Err(ModelError::Decode("mixture: table sizes disagree".into()));
        }
        Ok(Box::new(model))
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities::TOPIC_MODEL
    }
}
