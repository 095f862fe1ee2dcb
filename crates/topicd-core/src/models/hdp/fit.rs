//! Fitting HDP in one process: the corpus' training documents, covariates' design and
//! held-out documents are prepared, the memoized passes ([`super::passes`]) run, and the
//! finished model gets its design rows and its held-out documents completed.

use super::passes;
use super::{HdpModel, HdpParams};
use crate::corpus::{Corpus, DocTermMatrix};
use crate::models::causes::Internal;
use crate::models::design::DesignSpec;
use crate::models::{completion, splits, FitContext, FitError, ParamError, PredictOptions};

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
pub(super) struct Prepared<'c> {
    pub(super) training: std::borrow::Cow<'c, DocTermMatrix>,
    pub(super) design: Option<(DesignSpec, Vec<f64>)>,
    pub(super) test_documents: Vec<completion::CompletionDoc>,
}

/// The corpus' training documents (documents tagged `split: test`, or without tags a
/// `test_fraction` of them chosen by the seed, are left out), design and test split.
pub(super) fn prepare<'c>(corpus: &'c Corpus, p: &HdpParams, seed: u64) -> Result<Prepared<'c>, FitError> {
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
pub(super) fn finish(
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
        let report = completion::document_completion(&model, test_documents, &PredictOptions::default())
            .map_err(|e| FitError::Internal(Internal::bug(e.to_string())))?;
        model.heldout = Some(report);
    }
    Ok(model)
}

/// Fit on the corpus' training documents (documents tagged `split: test`, or without
/// tags a `test_fraction` of them chosen by the seed, are left out).
pub fn fit_hdp(corpus: &Corpus, p: &HdpParams, seed: u64, ctx: &FitContext) -> Result<HdpModel, FitError> {
    let Prepared { training, design, test_documents } = prepare(corpus, p, seed)?;
    let v = corpus.num_terms();
    let outcome = passes::fit_memoized(&training, v, p, seed, ctx)?;
    let model = HdpModel::from_fit(outcome, p.clone(), v, training.total_tokens());
    finish(model, design, |m| m.document_dirichlets(&training), &test_documents)
}
