//! The HDP topic model by memoized variational inference (Hughes, Kim & Sudderth 2015;
//! paper 002 and bnpy's `HDPTopicModel` / `MemoVBMovesAlg`).
//!
//! - [`stick`]: the top-level stick posterior and its optimiser (shared with HDP-aMMSB);
//! - [`params`]: job parameters and defaults;
//! - [`summary`]: per-batch and whole-data sufficient statistics, merge-pair statistics;
//! - [`local`]: per-document coordinate ascent and a batch's summary;
//! - [`globals`]: q(φ) from the summary and the exact whole-data objective;
//! - [`memo`]: the memoized state (visit a batch: local step, total − old + new, global step);
//! - [`merge`]: merge moves and the size reordering, accepted only when the objective rises;
//! - [`delete`]: the delete move (a pass-long proposal without one topic), likewise;
//! - [`fit`]: the passes (their loop, progress, cancellation and checkpoints are
//!   [`crate::models::passes`]');
//! - [`model`]: the stored model (topic table, prediction, encoding);
//!
//! The objective is the ELBO with bnpy's surrogate lower bound for the Dirichlet
//! normaliser E[log Γ(α) − Σ_k log Γ(α β_k)] (see [`stick`]), so it is itself a lower
//! bound on the log marginal likelihood.

pub mod delete;
pub mod documents;
pub mod exact_counts;
pub mod fit;
pub mod fit_memory;
pub mod globals;
pub mod local;
pub mod memo;
pub mod merge;
pub mod model;
pub mod params;
pub mod ranked;
pub mod stick;
pub mod summary;

#[cfg(test)]
mod fit_tests;
#[cfg(test)]
mod ranked_checks;
#[cfg(test)]
mod resume_checks;

use crate::corpus::{Corpus, CorpusStats, DocTermMatrix};
use crate::models::design::DesignSpec;
use crate::models::{completion, splits, FitContext, FitError, ModelError, ModelFamily, ParamError, PredictOptions, TopicModel};
pub use model::HdpModel;
pub use params::HdpParams;

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

    fn fit_ranked(
        &self,
        corpus: Option<Corpus>,
        params: &HdpParams,
        seed: u64,
        ctx: &FitContext,
        ranks: &dyn crate::ranks::Ranks,
    ) -> Result<Option<Box<dyn TopicModel>>, FitError> {
        let model = ranked::fit_hdp_ranked(corpus, params, seed, ctx, ranks)?;
        Ok(model.map(|m| Box::new(m) as Box<dyn TopicModel>))
    }

    fn fit_memory(&self, corpus: &CorpusStats, params: &HdpParams, threads: usize) -> u64 {
        fit_memory::estimate(corpus, params, threads)
    }

    fn quick_params(&self) -> HdpParams {
        HdpParams::from_json(&serde_json::json!({"topics": 3, "passes": 3, "batches": 2})).expect("valid brief-fit params")
    }

    fn decode(&self, bytes: &[u8]) -> Result<Box<dyn TopicModel>, ModelError> {
        Ok(Box::new(HdpModel::decode(bytes)?))
    }

    fn capabilities(&self) -> crate::models::capabilities::Capabilities {
        crate::models::capabilities::Capabilities { effects: true, prediction_intervals: true, ..crate::models::capabilities::Capabilities::TOPIC_MODEL }
    }
}

/// The design of the covariates the fit reads and its rows for the training documents
/// (corpus order, held-out documents left out); `None` without covariates. A model
/// whose documents' q(π_d) would pass [`crate::models::composition::THETA_DRAWS_BYTES`]
/// is refused here, naming `covariates`.
fn training_design(corpus: &Corpus, p: &HdpParams, held_out: &[bool]) -> Result<Option<(DesignSpec, Vec<f64>)>, FitError> {
    if p.design.covariates.is_empty() {
        return Ok(None);
    }
    let training = held_out.iter().filter(|&&t| !t).count();
    if 4 * training * p.topics > crate::models::composition::THETA_DRAWS_BYTES {
        return Err(FitError::Params(ParamError::new(
            "covariates",
            format!("{training} training documents × {} topics of q(π_d) would pass the 64 MB the model may keep for effects", p.topics),
        )));
    }
    let table = corpus.covariates.as_ref().ok_or_else(|| FitError::Params(ParamError::new("covariates", "the corpus has no covariates")))?;
    let spec = DesignSpec::build(&p.design, table).map_err(FitError::Params)?;
    let all = spec.rows(table).map_err(|e| FitError::Params(ParamError::new("covariates", e)))?;
    let width = spec.width();
    let rows = (0..corpus.num_documents()).filter(|&d| !held_out[d]).flat_map(|d| all[d * width..(d + 1) * width].iter().copied()).collect();
    Ok(Some((spec, rows)))
}

/// What a fit takes from the corpus besides the passes: the training documents, the
/// covariates' design and the held-out documents to complete.
struct Prepared<'c> {
    training: std::borrow::Cow<'c, DocTermMatrix>,
    design: Option<(DesignSpec, Vec<f64>)>,
    test_documents: Vec<completion::CompletionDoc>,
}

/// The corpus' training documents (documents tagged `split: test`, or without tags a
/// `test_fraction` of them chosen by the seed, are left out), design and test split.
fn prepare<'c>(corpus: &'c Corpus, p: &HdpParams, seed: u64) -> Result<Prepared<'c>, FitError> {
    let held_out = splits::test_mask(corpus, p.test_fraction, seed);
    let training: std::borrow::Cow<DocTermMatrix> = if held_out.iter().any(|&t| t) {
        std::borrow::Cow::Owned(DocTermMatrix::from_rows((0..corpus.num_documents()).filter(|&d| !held_out[d]).map(|d| {
            let (t, c) = corpus.counts.row(d);
            t.iter().copied().zip(c.iter().copied()).collect()
        })))
    } else {
        std::borrow::Cow::Borrowed(&corpus.counts)
    };
    if training.num_rows() == 0 {
        return Err(FitError::Params(ParamError::new("test_fraction", "every document is held out: nothing is left to train on")));
    }
    let design = training_design(corpus, p, &held_out)?;
    let test_documents = if held_out.iter().any(|&t| t) { completion::split_corpus_documents(corpus, &held_out) } else { Vec::new() };
    Ok(Prepared { training, design, test_documents })
}

/// The model of a finished fit: the design and the training documents' q(π_d)
/// (`doc_dirichlet`, computed only with covariates), and the test split scored.
fn finish(
    mut model: HdpModel,
    design: Option<(DesignSpec, Vec<f64>)>,
    doc_dirichlet: impl FnOnce(&HdpModel) -> Vec<f32>,
    test_documents: &[completion::CompletionDoc],
) -> Result<HdpModel, FitError> {
    if let Some((spec, rows)) = design {
        model.doc_dirichlet = doc_dirichlet(&model);
        (model.design, model.design_rows, model.effect_draws) = (Some(spec), rows, model.params.keep_draws);
    }
    model.test_documents = test_documents.len();
    if model.test_documents > 0 {
        // A variational fit has no chain for a Chib-style estimate of log p(w_d); its
        // predictive density is scored by document completion instead.
        let report = completion::document_completion(&model, test_documents, &PredictOptions::default()).map_err(|e| FitError::Internal(e.to_string()))?;
        model.heldout = Some(report);
    }
    Ok(model)
}

/// Fit on the corpus' training documents (documents tagged `split: test`, or without
/// tags a `test_fraction` of them chosen by the seed, are left out).
pub fn fit_hdp(corpus: &Corpus, p: &HdpParams, seed: u64, ctx: &FitContext) -> Result<HdpModel, FitError> {
    let Prepared { training, design, test_documents } = prepare(corpus, p, seed)?;
    let v = corpus.num_terms();
    let outcome = fit::fit_memoized(&training, v, p, seed, ctx)?;
    let model = HdpModel::from_fit(outcome, p.clone(), v, training.total_tokens());
    finish(model, design, |m| m.document_dirichlets(&training), &test_documents)
}
