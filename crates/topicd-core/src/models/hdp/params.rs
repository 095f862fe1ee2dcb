//! The HDP topic model's job parameters, their defaults and their limits.
//!
//! Defaults follow bnpy's HDPTopicModel examples: α = 0.5 (document-level concentration),
//! γ = 10 (top-level concentration), λ = 0.1 (symmetric topic-word Dirichlet), the local
//! step's convergence threshold 0.01 on the document-topic counts, and a delete proposed
//! in every second pass. Merges are opt-in (`merge_every`): they raise the objective but
//! lower the predictive score. On a validation split carved from reuters395's training
//! documents (every 5th of them, 3 seeds) document completion gave −7.36 nats per token
//! without merges and −7.50 with them (K 50 → 9–12); deletes alone left it at −7.36.

use crate::models::design::DesignRequest;
use crate::models::params::{ParamError, ParamReader};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Largest initial truncation accepted.
pub const MAX_TOPICS: u64 = 1_000;

/// Bounds of `local_tolerance`, a change in a document's expected topic counts (bnpy's
/// default is 0.01): 1e-8 is already at the rounding of a long document's counts (16
/// digits), and at 1000 almost every document's local step stops after one iteration.
pub const MIN_LOCAL_TOLERANCE: f64 = 1e-8;
pub const MAX_LOCAL_TOLERANCE: f64 = 1e3;

/// Parameters of a memoized variational HDP fit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HdpParams {
    /// The initial truncation K (merges may lower it; it never grows).
    pub topics: usize,
    /// α: π_d ~ Dir(α β).
    pub alpha: f64,
    /// γ: β ~ GEM(γ).
    pub gamma: f64,
    /// λ: φ_k ~ Dir(λ, …, λ).
    pub lambda: f64,
    /// B, the number of batches the (training) corpus is split into (at most D).
    pub batches: usize,
    /// Passes over the whole corpus (each visits every batch once).
    pub passes: usize,
    /// The local step stops when no document-topic count moves by more than this.
    pub local_tolerance: f64,
    /// ... or after this many coordinate-ascent iterations per document.
    pub local_iterations: usize,
    /// Propose merges after every `merge_every`-th pass (0: never).
    pub merge_every: usize,
    /// Candidate pairs tracked per pass (the most similar topic pairs).
    pub merge_pairs: usize,
    /// Propose deleting one topic during every `delete_every`-th pass (0: never).
    pub delete_every: usize,
    /// Stop early when a pass accepts no merge and raises the objective by less than
    /// this fraction of its magnitude (0: run every pass).
    pub convergence_tolerance: f64,
    /// Share of documents held out (by the seed) when the corpus has no `split` tags;
    /// the test split is scored by document completion.
    pub test_fraction: f64,
    /// The covariates whose effects `/effects` estimates by composition
    /// ([`crate::models::composition`]; `covariates`, `reference`, `splines`). Read at
    /// fit time; the model keeps the design it built and its documents' q(π_d).
    #[serde(skip)]
    pub design: DesignRequest,
    /// Draws of the documents' topic proportions from q(π_d) each `/effects` answer
    /// regresses (default [`crate::models::composition::DEFAULT_KEEP_DRAWS`] with
    /// covariates, else 0). Read at fit time; the model keeps it.
    #[serde(skip)]
    pub keep_draws: usize,
}

/// [`HdpParams`] as encoded by models of format version 1 (with the job's `threads`,
/// always 0 once the runner took it from the job's options); upgraded by
/// [`super::model::HdpModel::decode`].
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(test, derive(Serialize))]
pub(crate) struct HdpParamsV1 {
    pub topics: usize,
    pub alpha: f64,
    pub gamma: f64,
    pub lambda: f64,
    pub batches: usize,
    pub passes: usize,
    pub local_tolerance: f64,
    pub local_iterations: usize,
    pub merge_every: usize,
    pub merge_pairs: usize,
    pub delete_every: usize,
    pub convergence_tolerance: f64,
    pub test_fraction: f64,
    /// The job's thread count: read to pass over its bytes, never used.
    #[allow(dead_code)]
    pub threads: usize,
}

#[cfg(test)]
impl From<&HdpParams> for HdpParamsV1 {
    /// The version 1 layout of current parameters (`threads` 0, as every job's was).
    fn from(p: &HdpParams) -> Self {
        HdpParamsV1 {
            topics: p.topics,
            alpha: p.alpha,
            gamma: p.gamma,
            lambda: p.lambda,
            batches: p.batches,
            passes: p.passes,
            local_tolerance: p.local_tolerance,
            local_iterations: p.local_iterations,
            merge_every: p.merge_every,
            merge_pairs: p.merge_pairs,
            delete_every: p.delete_every,
            convergence_tolerance: p.convergence_tolerance,
            test_fraction: p.test_fraction,
            threads: 0,
        }
    }
}

impl From<HdpParamsV1> for HdpParams {
    fn from(p: HdpParamsV1) -> Self {
        HdpParams {
            topics: p.topics,
            alpha: p.alpha,
            gamma: p.gamma,
            lambda: p.lambda,
            batches: p.batches,
            passes: p.passes,
            local_tolerance: p.local_tolerance,
            local_iterations: p.local_iterations,
            merge_every: p.merge_every,
            merge_pairs: p.merge_pairs,
            delete_every: p.delete_every,
            convergence_tolerance: p.convergence_tolerance,
            test_fraction: p.test_fraction,
            design: DesignRequest::default(),
            keep_draws: 0,
        }
    }
}

impl HdpParams {
    /// Parse and check `params`; every error names its field.
    pub fn from_json(params: &Value) -> Result<Self, ParamError> {
        let mut r = ParamReader::new(params)?;
        r.one_chain_only("this family is fitted by memoized variational inference, which runs no chains")?;
        let topics = r.uint_in("topics", 1, MAX_TOPICS)?.unwrap_or(50) as usize;
        let alpha = r.concentration("alpha")?.unwrap_or(0.5);
        let gamma = r.concentration("gamma")?.unwrap_or(10.0);
        let lambda = r.concentration("lambda")?.unwrap_or(0.1);
        let batches = r.uint_in("batches", 1, 100_000)?.unwrap_or(1) as usize;
        let passes = r.uint_in("passes", 1, 100_000)?.unwrap_or(50) as usize;
        let local_tolerance = r.number_in("local_tolerance", MIN_LOCAL_TOLERANCE, MAX_LOCAL_TOLERANCE)?.unwrap_or(0.01);
        let local_iterations = r.uint_in("local_iterations", 1, 100_000)?.unwrap_or(100) as usize;
        let merge_every = r.uint_in("merge_every", 0, 100_000)?.unwrap_or(0) as usize;
        let merge_pairs = r.uint_in("merge_pairs", 1, 100_000)?.unwrap_or(100) as usize;
        let delete_every = r.uint_in("delete_every", 0, 100_000)?.unwrap_or(2) as usize;
        let convergence_tolerance = r.fraction("convergence_tolerance", 1.0)?.unwrap_or(1e-7);
        let test_fraction = r.fraction("test_fraction", 1.0)?.unwrap_or(0.0);
        let design = DesignRequest::read(&mut r)?;
        let keep_draws = crate::models::composition::read_keep_draws(&mut r, &design)?;
        r.finish()?;
        Ok(HdpParams {
            topics,
            alpha,
            gamma,
            lambda,
            batches,
            passes,
            local_tolerance,
            local_iterations,
            merge_every,
            merge_pairs,
            delete_every,
            convergence_tolerance,
            test_fraction,
            design,
            keep_draws,
        })
    }

    /// The parameters under their wire names, as [`HdpParams::from_json`] reads them
    /// back (the design's keys at the top level).
    pub fn to_json(&self) -> Value {
        let mut v = serde_json::to_value(self).expect("plain data serialises");
        let o = v.as_object_mut().expect("a struct serialises to an object");
        o.insert("keep_draws".into(), serde_json::json!(self.keep_draws));
        if let Value::Object(design) = serde_json::json!(self.design) {
            o.extend(design);
        }
        v
    }

    /// Whether merges are proposed at the end of pass `pass` (1-based). The first pass
    /// only fills the summary, so merges start with the second.
    pub fn merges_after(&self, pass: usize) -> bool {
        self.merge_every > 0 && pass >= 2 && pass.is_multiple_of(self.merge_every)
    }

    /// Whether a delete is proposed during pass `pass` (1-based): from the third pass on,
    /// so that the proposal starts from a state every batch has refined.
    pub fn deletes_in(&self, pass: usize) -> bool {
        self.delete_every > 0 && pass >= 3 && pass.is_multiple_of(self.delete_every)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_and_schedule() {
        let p = HdpParams::from_json(&json!({})).unwrap();
        assert_eq!((p.topics, p.alpha, p.gamma, p.lambda, p.batches), (50, 0.5, 10.0, 0.1, 1));
        assert!(!p.merges_after(2) && !p.merges_after(3) && p.deletes_in(4));
        let p = HdpParams::from_json(&json!({"merge_every": 1})).unwrap();
        assert!(!p.merges_after(1) && p.merges_after(2) && p.merges_after(3));
        let p = HdpParams::from_json(&json!({"merge_every": 2})).unwrap();
        assert!(!p.merges_after(3) && p.merges_after(4));
        let p = HdpParams::from_json(&json!({"merge_every": 0})).unwrap();
        assert!(!p.merges_after(2));
        let p = HdpParams::from_json(&json!({"delete_every": 3})).unwrap();
        assert!(!p.deletes_in(2) && p.deletes_in(3) && !p.deletes_in(4) && p.deletes_in(6));
    }

    #[test]
    fn bad_values_name_their_field() {
        for (body, field) in [
            (json!({"topics": 0}), "topics"),
            (json!({"alpha": 0}), "alpha"),
            (json!({"gamma": -1}), "gamma"),
            (json!({"lambda": "x"}), "lambda"),
            (json!({"batches": 0}), "batches"),
            (json!({"passes": 0}), "passes"),
            (json!({"local_tolerance": 0}), "local_tolerance"),
            (json!({"local_iterations": 0}), "local_iterations"),
            (json!({"merge_pairs": 0}), "merge_pairs"),
            (json!({"delete_every": -1}), "delete_every"),
            (json!({"convergence_tolerance": 1.5}), "convergence_tolerance"),
            (json!({"test_fraction": 1.0}), "test_fraction"),
            (json!({"threads": 2}), "threads"),
            (json!({"checkpoint_every_s": 0.5}), "checkpoint_every_s"),
            (json!({"topicz": 3}), "topicz"),
        ] {
            assert_eq!(HdpParams::from_json(&body).unwrap_err().field, field, "{body}");
        }
    }
}
