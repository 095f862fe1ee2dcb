//! HDP topics that hold nothing: the passes run on the live topics alone, and the fitted
//! state is put back in the child's slots.
//!
//! Why it exists: an edit retires topics (merged away, deleted) but keeps every id
//! ([`crate::models::edits`]), and an update of the child keeps them retired. A retired
//! topic left among the memoized passes' topics would hold a stick of its own, be a merge
//! or delete candidate and could take tokens back. So the passes run on the live topics
//! only ([`Slots`]: compact topic i is child topic `live()[i]`, topics a birth adds
//! take ids after the child's last) and [`expand`] writes the outcome into the child's
//! slots. A retired slot holds no tokens (q(φ_k) = Dir(λ), N_k = 0) and its stick is
//! ρ_k = [`RETIRED_RHO`] = 0: E[β_k] = 0 exactly and every other topic's E[β] is what
//! the live fit gave it (the factor 1 − ρ_k is 1), so a document's prior weight on it is
//! the local step's floor and no token goes there in a prediction. A fitted stick is
//! never exactly 0 (the optimiser works on logit ρ), so ρ_k = 0 also marks the slot in
//! the stored model ([`super::HdpModel::retired_slots`]) without an encoding change.

use super::model::{HdpModel, RETIRED_RHO};
use super::passes::FitOutcome;
use crate::inference::stick_posterior::StickPosterior;
use crate::models::slots::Slots;

/// A retired slot's stick concentration (any positive value: its weight is 0 whatever
/// it is).
const RETIRED_OMEGA: f64 = 1.0;

/// The outcome of passes over the live topics in the child's slots (see the module's
/// doc for what a retired slot holds); `lambda` is the topic-word prior.
pub fn expand(slots: &Slots, fit: FitOutcome, lambda: f64) -> FitOutcome {
    if slots.all_live() {
        return fit;
    }
    let v = fit.topic_word.len() / fit.num_topics.max(1);
    let topic_tokens = slots.spread(&fit.topic_tokens, 0.0);
    let k = topic_tokens.len();
    let mut topic_word = vec![lambda; k * v];
    for (i, row) in fit.topic_word.chunks(v.max(1)).enumerate() {
        let slot = slots.child_of(i);
        topic_word[slot * v..(slot + 1) * v].copy_from_slice(row);
    }
    let stick = StickPosterior { rho: slots.spread(&fit.stick.rho, RETIRED_RHO), omega: slots.spread(&fit.stick.omega, RETIRED_OMEGA) };
    FitOutcome { num_topics: k, topic_word, stick, topic_tokens, ..fit }
}

/// `model` with its retired slots left out (the live topics in order): what an update of
/// an edited model starts from.
pub fn live_topics(mut model: HdpModel, slots: &Slots) -> HdpModel {
    if slots.all_live() {
        return model;
    }
    let (v, k) = (model.num_terms, model.num_topics);
    let live = slots.live();
    let pick = |xs: &[f64]| live.iter().map(|&t| xs[t]).collect::<Vec<f64>>();
    model.topic_word = live.iter().flat_map(|&t| model.topic_word[t * v..(t + 1) * v].iter().copied()).collect();
    model.stick = StickPosterior { rho: pick(&model.stick.rho), omega: pick(&model.stick.omega) };
    model.topic_tokens = pick(&model.topic_tokens);
    model.doc_dirichlet = model.doc_dirichlet.chunks(k.max(1)).flat_map(|row| live.iter().map(|&t| row[t]).collect::<Vec<f32>>()).collect();
    model.num_topics = live.len();
    model
}
