//! The hard-EM fit.

use super::model::MixtureModel;
use super::params::MixtureParams;
use crate::corpus::Corpus;
use crate::models::{FitContext, FitError, Progress};
use serde_json::json;

/// The rows of `corpus` as (term, count) pairs.
fn rows(corpus: &Corpus) -> impl Iterator<Item = Vec<(usize, f64)>> + '_ {
    let m = &corpus.counts;
    m.indptr.windows(2).map(move |w| (w[0] as usize..w[1] as usize).map(|i| (m.terms[i] as usize, m.counts[i] as f64)).collect())
}

pub(super) fn fit(corpus: &Corpus, params: &MixtureParams, ctx: &FitContext) -> Result<MixtureModel, FitError> {
    let docs: Vec<Vec<(usize, f64)>> = rows(corpus).collect();
    let (k, v) = (params.topics, corpus.num_terms());
    if docs.is_empty() || v == 0 {
        return Err(FitError::InvalidInput(crate::models::causes::InvalidInput::NoWords { family: "mixture".into() }));
    }
    let mut assignment: Vec<usize> = (0..docs.len()).map(|d| d % k).collect();
    let mut model = MixtureModel { topics: k, terms: v, rates: vec![0.0; k * v], shares: vec![0.0; k], iterations: 0, moved_last: 0 };
    for iteration in 1..=params.iterations {
        if ctx.cancel.is_cancelled() {
            return Err(FitError::Cancelled);
        }
        model.estimate(&docs, &assignment, params.beta);
        let mut moved = 0;
        for (d, doc) in docs.iter().enumerate() {
            let best = model.best_topic(doc);
            moved += usize::from(best != assignment[d]);
            assignment[d] = best;
        }
        model.iterations = iteration;
        model.moved_last = moved;
        let mut diagnostics = serde_json::Map::new();
        diagnostics.insert("moved".into(), json!(moved));
        (ctx.progress)(Progress { iteration: iteration as u64, total: params.iterations as u64, diagnostics, ..Progress::default() });
    }
    model.estimate(&docs, &assignment, params.beta);
    Ok(model)
}
