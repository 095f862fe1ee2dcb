//! PCM topics that hold nothing: fits run on the live topics alone, and their models are
//! put back in the child's slots.
//!
//! Why it exists: an edit retires topics (merged away, deleted) but keeps every id, and
//! later fits of the child (an update with new documents) keep them retired. A retired
//! topic sampled as an ordinary one would come back to life, and one held at θ = 0 would
//! still take sweeps, a share of the affinity prior and a place in FREX's exclusivity.
//! So the chains sample the live topics only (compact topic i is child topic `live()[i]`, [`crate::models::slots`]),
//! and every sampler check holds unchanged; [`expand`] then writes the fitted
//! model into the child's K slots. A retired slot has rate 0 in its topic tables, log
//! rate and η at [`RETIRED_LOG_WEIGHT`] (θ_k below e⁻⁴⁰ in any prediction), share 0, no
//! θ draws, and is matched to itself in the chains' alignments (every chain leaves it
//! empty, as LDA's retired topics are).

use super::calibration::Thresholds;
use super::model::{HpcModel, RETIRED_LOG_WEIGHT};
use super::params::HpcParams;
use crate::models::slots::Slots;

/// The params the chains run under: the child's with its live topics only (the
/// child's own when every topic is live).
pub fn live_params(slots: &Slots, child: &HpcParams) -> HpcParams {
    if slots.all_live() {
        return child.clone();
    }
    HpcParams { topics: slots.live().len(), ..child.clone() }
}

/// The model fitted on the live topics, in the child's slots under the child's
/// params `child` (see the module's doc for what a retired slot holds).
pub fn expand(slots: &Slots, mut m: HpcModel, child: &HpcParams) -> HpcModel {
    if slots.all_live() {
        return m;
    }
    let live = slots.live();
    let (v, kc, k) = (m.num_terms, live.len(), slots.total());
    debug_assert_eq!(m.labels.len(), kc);
    let rows = |compact: &[f32]| {
        let mut out = vec![0.0f32; k * v];
        for (i, &slot) in live.iter().enumerate() {
            out[slot * v..(slot + 1) * v].copy_from_slice(&compact[i * v..(i + 1) * v]);
        }
        out
    };
    (m.frequency, m.exclusivity, m.exclusivity_all) = (rows(&m.frequency), rows(&m.exclusivity), rows(&m.exclusivity_all));
    let mut mu = vec![RETIRED_LOG_WEIGHT as f32; v * (k + 1)];
    for f in 0..v {
        mu[f * (k + 1)] = m.mu[f * (kc + 1)];
        for (i, &slot) in live.iter().enumerate() {
            mu[f * (k + 1) + slot + 1] = m.mu[f * (kc + 1) + i + 1];
        }
    }
    m.mu = mu;
    m.eta = slots.spread(&m.eta, RETIRED_LOG_WEIGHT);
    m.shares = slots.spread(&m.shares, 0.0);
    m.theta_draws = m.theta_draws.iter().map(|draw| draw.chunks(kc).flat_map(|t| slots.spread(t, 0.0)).collect()).collect();
    m.alignments = m.alignments.iter().map(|a| slots.spread_alignment(a)).collect();
    m.labels = (0..k).map(|t| format!("topic {t}")).collect();
    m.parent = vec![None; k];
    m.thresholds = Thresholds::default_for(k);
    m.params = child.clone();
    m.rate_totals = Default::default();
    m.deepest_first = Default::default();
    m
}
