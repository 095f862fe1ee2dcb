//! PCM topics that hold nothing: fits run on the live topics alone, and their models are
//! put back in the child's slots.
//!
//! Why it exists: an edit retires topics (merged away, deleted) but keeps every id, and
//! later fits of the child (an update with new documents) keep them retired. A retired
//! topic sampled as an ordinary one would come back to life, and one held at θ = 0 would
//! still take sweeps, a share of the affinity prior and a place in FREX's exclusivity.
//! So the chains sample the live topics only (compact topic i is child topic `live[i]`),
//! and every sampler check holds unchanged; [`Slots::expand`] then writes the fitted
//! model into the child's K slots. A retired slot has rate 0 in its topic tables, log
//! rate and η at [`RETIRED_LOG_WEIGHT`] (θ_k below e⁻⁴⁰ in any prediction), share 0, no
//! θ draws, and is matched to itself in the chains' alignments (every chain leaves it
//! empty, as LDA's retired topics are).

use super::calibration::Thresholds;
use super::model::{HpcModel, RETIRED_LOG_WEIGHT};
use super::params::HpcParams;
use crate::models::chains::Alignment;

/// The child's topics and which of them a fit samples.
#[derive(Debug, Clone, PartialEq)]
pub struct Slots {
    /// The child ids of the live topics, in order.
    live: Vec<usize>,
    /// The child's topics, retired ones included.
    total: usize,
}

impl Slots {
    /// `total` topics of which `retired` hold nothing.
    pub fn retiring(retired: &[usize], total: usize) -> Self {
        Slots { live: (0..total).filter(|k| !retired.contains(k)).collect(), total }
    }

    /// The child ids of the live topics, in order (compact topic i is `live()[i]`).
    pub fn live(&self) -> &[usize] {
        &self.live
    }

    /// Whether no topic is retired (the fit's model is the child's as it is).
    pub fn all_live(&self) -> bool {
        self.live.len() == self.total
    }

    /// The params the chains run under: the child's with its live topics only (the
    /// child's own when every topic is live).
    pub fn live_params(&self, child: &HpcParams) -> HpcParams {
        if self.all_live() {
            return child.clone();
        }
        HpcParams { topics: self.live.len(), ..child.clone() }
    }

    /// The model fitted on the live topics, in the child's slots under the child's
    /// params `child` (see the module's doc for what a retired slot holds).
    pub fn expand(&self, mut m: HpcModel, child: &HpcParams) -> HpcModel {
        if self.all_live() {
            return m;
        }
        let (v, kc, k) = (m.num_terms, self.live.len(), self.total);
        debug_assert_eq!(m.labels.len(), kc);
        let rows = |compact: &[f32]| {
            let mut out = vec![0.0f32; k * v];
            for (i, &slot) in self.live.iter().enumerate() {
                out[slot * v..(slot + 1) * v].copy_from_slice(&compact[i * v..(i + 1) * v]);
            }
            out
        };
        (m.frequency, m.exclusivity, m.exclusivity_all) = (rows(&m.frequency), rows(&m.exclusivity), rows(&m.exclusivity_all));
        let mut mu = vec![RETIRED_LOG_WEIGHT as f32; v * (k + 1)];
        for f in 0..v {
            mu[f * (k + 1)] = m.mu[f * (kc + 1)];
            for (i, &slot) in self.live.iter().enumerate() {
                mu[f * (k + 1) + slot + 1] = m.mu[f * (kc + 1) + i + 1];
            }
        }
        m.mu = mu;
        m.eta = self.spread(&m.eta, RETIRED_LOG_WEIGHT);
        m.shares = self.spread(&m.shares, 0.0);
        m.theta_draws = m.theta_draws.iter().map(|draw| draw.chunks(kc).flat_map(|t| self.spread(t, 0.0)).collect()).collect();
        m.alignments = m.alignments.iter().map(|a| self.spread_alignment(a)).collect();
        m.labels = (0..k).map(|t| format!("topic {t}")).collect();
        m.parent = vec![None; k];
        m.thresholds = Thresholds::default_for(k);
        m.params = child.clone();
        m.rate_totals = Default::default();
        m.deepest_first = Default::default();
        m
    }

    /// Per-topic values of the live topics in the child's slots, `retired` elsewhere.
    fn spread<T: Copy>(&self, compact: &[T], retired: T) -> Vec<T> {
        let mut out = vec![retired; self.total];
        for (i, &slot) in self.live.iter().enumerate() {
            out[slot] = compact[i];
        }
        out
    }

    /// A later chain's alignment onto chain 0 in the child's ids; a retired slot is
    /// matched to itself at distance 0.
    fn spread_alignment(&self, a: &Alignment) -> Alignment {
        let mut permutation: Vec<usize> = (0..self.total).collect();
        for (i, &slot) in self.live.iter().enumerate() {
            permutation[slot] = self.live[a.permutation[i]];
        }
        Alignment { permutation, distances: self.spread(&a.distances, 0.0) }
    }
}
