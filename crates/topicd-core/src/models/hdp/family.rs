//! The `"hdp"` entry of the registry: parsing and checking HDP's params, its memory
//! estimate, its fits (one process or over ranks) and decoding its stored models.

use super::edit::fit_hdp_edited;
use super::fit::fit_hdp;
use super::update::fit_hdp_updated;
use super::{exact_counts, fit_memory, ranked, HdpModel, HdpParams};
use crate::corpus::{Corpus, CorpusStats};
use crate::models::edits::EditPlan;
use crate::models::{EditStart, FitContext, FitError, ModelError, ModelFamily, ParamError, RankedModel, TopicModel, UpdateStart};
use crate::ranks::Ranks;

/// Cap on the fit's state tables, (documents + 4 × terms) × topics f64 entries.
pub const MAX_STATE_ENTRIES: u64 = 1 << 27;

/// The `"hdp"` model family.
pub struct HdpFamily;

impl ModelFamily for HdpFamily {
    fn name(&self) -> &'static str {
        "hdp"
    }

    type Params = HdpParams;

    fn parse_params(&self, params: &serde_json::Value) -> Result<HdpParams, ParamError> {
        HdpParams::from_json(params)
    }

    fn params_json(&self, params: &HdpParams) -> serde_json::Value {
        params.to_json()
    }

    fn check_params(&self, params: &HdpParams, corpus: &CorpusStats) -> Result<(), ParamError> {
        let p = params;
        if corpus.num_tokens == 0 {
            return Err(ParamError::new("corpus", "the corpus has no tokens"));
        }
        if corpus.num_tokens >= exact_counts::MAX_TOKENS {
            return Err(ParamError::new(
                "corpus",
                format!("the corpus has {} tokens; HDP's exact topic-word sums hold fewer than 2^33 (8.6 billion)", corpus.num_tokens),
            ));
        }
        crate::models::design::DesignSpec::check(&p.design, &corpus.covariates)?;
        // A fit keeps a documents × K table of local state and a few terms × K tables
        // (λ, E[log φ] and its exponential, the summary): bound them before queueing.
        let entries = (corpus.num_documents as u64 + 4 * corpus.num_terms as u64).saturating_mul(p.topics as u64);
        if entries > MAX_STATE_ENTRIES {
            return Err(ParamError::new(
                "topics",
                format!("(documents + 4 × terms) × topics is {entries}, above {MAX_STATE_ENTRIES} (about 1 GiB of state); use fewer topics"),
            ));
        }
        Ok(())
    }

    fn fit(&self, corpus: &Corpus, params: &HdpParams, seed: u64, ctx: &FitContext) -> Result<Box<dyn TopicModel>, FitError> {
        Ok(Box::new(fit_hdp(corpus, params, seed, ctx)?))
    }

    fn check_ranks(&self, _params: &HdpParams, _ranks: usize) -> Result<(), ParamError> {
        Ok(())
    }

    fn fit_ranked(&self, corpus: Option<Corpus>, params: &HdpParams, seed: u64, ctx: &FitContext, ranks: &dyn Ranks) -> Result<RankedModel, FitError> {
        Ok(ranked::fit_hdp_ranked(corpus, params, seed, ctx, ranks)?.map(|m| Box::new(m) as Box<dyn TopicModel>))
    }

    fn fit_memory(&self, corpus: &CorpusStats, params: &HdpParams, threads: usize) -> u64 {
        fit_memory::estimate(corpus, params, threads)
    }

    fn updated_params(&self, parent: &HdpParams, new_topics: usize, iterations: usize) -> Result<HdpParams, ParamError> {
        parent.updated(new_topics, iterations)
    }

    fn fit_updated(&self, corpus: &Corpus, params: &HdpParams, start: &UpdateStart<'_>, seed: u64, ctx: &FitContext) -> Result<Box<dyn TopicModel>, FitError> {
        Ok(Box::new(fit_hdp_updated(corpus, params, start, seed, ctx)?))
    }

    fn edited_params(&self, parent: &HdpParams, plan: &EditPlan, iterations: usize) -> Result<HdpParams, ParamError> {
        parent.edited(plan, iterations)
    }

    fn fit_edited(&self, corpus: &Corpus, params: &HdpParams, start: &EditStart<'_>, seed: u64, ctx: &FitContext) -> Result<Box<dyn TopicModel>, FitError> {
        Ok(Box::new(fit_hdp_edited(corpus, params, start, seed, ctx)?))
    }

    fn quick_params(&self) -> HdpParams {
        HdpParams::from_json(&serde_json::json!({"topics": 3, "passes": 3, "batches": 2})).expect("valid brief-fit params")
    }

    fn decode(&self, bytes: &[u8]) -> Result<Box<dyn TopicModel>, ModelError> {
        Ok(Box::new(HdpModel::decode(bytes)?))
    }

    fn capabilities(&self) -> crate::models::capabilities::Capabilities {
        crate::models::capabilities::Capabilities {
            effects: true,
            prediction_intervals: true,
            updates: true,
            edits: true,
            ..crate::models::capabilities::Capabilities::TOPIC_MODEL
        }
    }
}
