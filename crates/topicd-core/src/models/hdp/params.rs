//! The HDP topic model's job parameters, their defaults and their limits.
//!
//! Defaults follow bnpy's HDPTopicModel examples: α = 0.5 (document-level concentration),
//! γ = 10 (top-level concentration), λ = 0.1 (symmetric topic-word Dirichlet), the local
//! step's convergence threshold 0.01 on the document-topic counts, and a delete proposed
//! in every pass: the move that infers K at the defaults (reuters395: 11–13 topics of a
//! truncation of 50 at −7.419 nats per held-out token, bnpy's moves 10–16 at −7.429;
//! decision 0070). Merges are opt-in (`merge_every`): they raise the objective but
//! lower the predictive score. On a validation split carved from reuters395's training
//! documents (every 5th of them, 3 seeds) document completion gave −7.36 nats per token
//! without merges and −7.50 with them (K 50 → 9–12). Births (one topic split into two
//! fresh ones, `birth_every`) are opt-in as well: with the defaults' deletes they keep
//! 30–35 topics on reuters395 (bench/README.md).

use crate::models::design::DesignRequest;
use crate::models::params::{ParamError, ParamReader, ParamsDoc};
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
    /// The initial truncation K (deletes and merges may lower it; births never take it
    /// above this).
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
    /// Propose a birth (one topic split into fresh ones) during every `birth_every`-th
    /// pass (0: never; [`HdpParams::births_in`] says which when a delete is due too).
    pub birth_every: usize,
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

/// [`HdpParams`] as encoded by models of format version 1: version 2's with the job's
/// `threads` after them (always 0 once the runner took it from the job's options; postcard
/// writes a nested struct's fields in place, so this is the flat layout); upgraded by
/// [`super::model::HdpModel::decode`].
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(test, derive(Serialize))]
pub(crate) struct HdpParamsV1 {
    pub params: HdpParamsV2,
    /// The job's thread count: read to pass over its bytes, never used.
    #[allow(dead_code)]
    pub threads: usize,
}

/// [`HdpParams`] as encoded by models of format versions 2 to 4 (before `birth_every`);
/// upgraded by [`super::model::HdpModel::decode`] with births off, as those fits ran.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct HdpParamsV2 {
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
}

#[cfg(test)]
impl From<&HdpParams> for HdpParamsV2 {
    /// The version 2–4 layout of current parameters (`birth_every` dropped).
    fn from(p: &HdpParams) -> Self {
        HdpParamsV2 {
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
        }
    }
}

impl From<HdpParamsV2> for HdpParams {
    fn from(p: HdpParamsV2) -> Self {
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
            birth_every: 0,
            convergence_tolerance: p.convergence_tolerance,
            test_fraction: p.test_fraction,
            design: DesignRequest::default(),
            keep_draws: 0,
        }
    }
}

#[cfg(test)]
impl From<&HdpParamsV2> for HdpParamsV1 {
    /// The version 1 layout of version 2 parameters (`threads` 0, as every job's was).
    fn from(p: &HdpParamsV2) -> Self {
        HdpParamsV1 { params: p.clone(), threads: 0 }
    }
}

impl From<HdpParamsV1> for HdpParamsV2 {
    fn from(p: HdpParamsV1) -> Self {
        p.params
    }
}

/// The descriptions of the HdpParams schema (`GET /v1/families`, OpenAPI), in a form's order.
pub(crate) const DOC: ParamsDoc = ParamsDoc {
    component: "HdpParams",
    description: r#"The HDP topic model by memoized variational inference (Hughes, Kim & Sudderth 2015). The training corpus is split into `batches`; each pass visits every batch: a per-document coordinate-ascent local step, the batch's sufficient statistics replaced in the whole-data summary (total − old + new), then the global step (topic-word Dirichlets, and the top-level stick q(u_k) = Beta(ρ_k ω_k, (1 − ρ_k) ω_k) by L-BFGS over (logit ρ, log ω) with the analytic gradient, ρ alone if that fails). Delete moves (and merges and births, opt-in with `merge_every` and `birth_every`) are accepted only when the exact whole-data objective rises; the number of topics starts at `topics` and never exceeds it. At the defaults the number of topics is inferred: a delete proposed every pass removes the topics the data do not support (on reuters395 11–13 of 50 are kept). The objective never decreases across passes. With a test split (documents tagged `split: test`, or `test_fraction`), the held-out documents are scored by document completion at the end (`diagnostics.heldout`). A null value means the default."#,
    basic: &["topics", "passes", "test_fraction", "covariates", "reference", "splines"],
    keys: &[
        ("topics", r#"The initial truncation K. (documents + 4 × terms) × topics must be at most 2^27 (a 422 naming `topics` otherwise)."#),
        ("alpha", r#"Document-level concentration, π_d ~ Dir(α β)."#),
        ("gamma", r#"Top-level concentration, β ~ GEM(γ)."#),
        ("lambda", r#"Symmetric Dirichlet prior of each topic's word distribution."#),
        ("batches", r#"Memoized batches; more batches than training documents is lowered to one document per batch."#),
        ("passes", r#"Passes over every batch (fewer when a pass changes little, `convergence_tolerance`)."#),
        ("local_tolerance", r#"The local step stops when no document-topic count moves by more than this..."#),
        ("local_iterations", r#"...or after this many iterations per document."#),
        (
            "merge_every",
            r#"Propose merges after every n-th pass (0 never, the default; merges raise the objective but lowered held-out document completion on a validation split)."#,
        ),
        ("merge_pairs", r#"Candidate topic pairs tracked per pass."#),
        (
            "delete_every",
            r#"Propose deleting one topic in every n-th pass from the third (0 never): the smallest topics in turn; the proposal runs beside the pass, the topics whose document counts correlate with the target starting with its word counts added to theirs, and takes up to three more steps of its own until it beats the current state (a delete pass costs up to five local steps). Deletes stop once 10 delete passes in a row accept none."#,
        ),
        (
            "birth_every",
            r#"Propose a birth in every n-th pass from the third (0 never; where a delete is due too, births take the odd passes and deletes the even ones): the largest topics in turn are split into 2 fresh topics by a short fit to the words they hold, kept only if the objective rises after a whole pass and three more steps of the proposal's own (never above `topics`; a birth pass costs up to five local steps). Off by default: with the default deletes it kept twice as many topics on reuters395. One process only (no births over ranks)."#,
        ),
        (
            "convergence_tolerance",
            r#"Stop early when a pass accepts no move and raises the objective by less than this fraction of its magnitude (0 runs every pass)."#,
        ),
        (
            "test_fraction",
            r#"Share of documents held out by the seed when the corpus has no `split` tags (documents tagged `test` are held out otherwise), scored by document completion at the end of the fit (`diagnostics.heldout`)."#,
        ),
        (
            "covariates",
            r#"Corpus covariates for effects by the method of composition (`/effects`), as LDA's: the model keeps the design's rows and every training document's q(π_d) over the active topics, from which each answer draws `keep_draws` proportion vectors per document. They do not change the topics. A covariate the corpus lacks is a 422 naming `params.covariates`, as is a fit whose q(π_d) table (documents × topics × 4 bytes) would pass 64 MB."#,
        ),
        ("reference", r#"Reference level per categorical covariate of `covariates` (default the most frequent level)."#),
        ("splines", r#"Cubic B-spline columns per continuous or date covariate of `covariates`."#),
        ("keep_draws", r#"Draws of the training documents' proportions from q(π_d) each `/effects` answer regresses (default 20 with `covariates`, else 0)."#),
    ],
};

impl HdpParams {
    /// Parse and check `params`; every error names its field.
    pub fn from_json(params: &Value) -> Result<Self, ParamError> {
        let mut r = ParamReader::new(params)?.described_by(&DOC);
        r.one_chain_only("this family is fitted by memoized variational inference, which runs no chains")?;
        let topics = r.uint_in_or("topics", 1, MAX_TOPICS, 50)? as usize;
        let alpha = r.concentration_or("alpha", 0.5)?;
        let gamma = r.concentration_or("gamma", 10.0)?;
        let lambda = r.concentration_or("lambda", 0.1)?;
        let batches = r.uint_in_or("batches", 1, 100_000, 1)? as usize;
        let passes = r.uint_in_or("passes", 1, 100_000, 50)? as usize;
        let local_tolerance = r.number_in_or("local_tolerance", MIN_LOCAL_TOLERANCE, MAX_LOCAL_TOLERANCE, 0.01)?;
        let local_iterations = r.uint_in_or("local_iterations", 1, 100_000, 100)? as usize;
        let merge_every = r.uint_in_or("merge_every", 0, 100_000, 0)? as usize;
        let merge_pairs = r.uint_in_or("merge_pairs", 1, 100_000, 100)? as usize;
        let delete_every = r.uint_in_or("delete_every", 0, 100_000, 1)? as usize;
        let birth_every = r.uint_in_or("birth_every", 0, 100_000, 0)? as usize;
        let convergence_tolerance = r.fraction_or("convergence_tolerance", 1.0, 1e-7)?;
        let test_fraction = r.fraction_or("test_fraction", 1.0, 0.0)?;
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
            birth_every,
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

    /// The params of an update ([`super::update`]) of a model fitted with these: the
    /// truncation raised by `new_topics` (the topics it adds), at most `passes`
    /// passes, every move as the parent had it.
    pub fn updated(&self, new_topics: usize, passes: usize) -> Result<Self, ParamError> {
        let topics = self.topics + new_topics;
        if topics as u64 > MAX_TOPICS {
            return Err(ParamError::new("new_topics", format!("the model's truncation {} and {new_topics} new topics pass {MAX_TOPICS}", self.topics)));
        }
        Ok(HdpParams { topics, passes: passes.max(1), ..self.clone() })
    }

    /// The params of a refit of a model fitted with these, edited by `plan`, for `passes`
    /// passes: the truncation grows to the child's topics where the edit's splits pass
    /// it (the refit itself runs on the live topics, [`super::edit`]).
    pub fn edited(&self, plan: &crate::models::edits::EditPlan, passes: usize) -> Result<Self, ParamError> {
        let topics = self.topics.max(plan.child_topics());
        if topics as u64 > MAX_TOPICS {
            return Err(ParamError::new("operations", format!("the edit's {} topics pass HDP's {MAX_TOPICS}", plan.child_topics())));
        }
        Ok(HdpParams { topics, passes: passes.max(1), ..self.clone() })
    }

    /// Whether merges are proposed at the end of pass `pass` (1-based). The first pass
    /// only fills the summary, so merges start with the second.
    pub fn merges_after(&self, pass: usize) -> bool {
        self.merge_every > 0 && pass >= 2 && pass.is_multiple_of(self.merge_every)
    }

    /// Whether a delete is proposed during pass `pass` (1-based): from the third pass on,
    /// so that the proposal starts from a state every batch has refined, in every
    /// `delete_every`-th pass, except an odd pass where a birth is due as well.
    pub fn deletes_in(&self, pass: usize) -> bool {
        self.delete_due(pass) && (pass.is_multiple_of(2) || !self.birth_due(pass))
    }

    /// Whether a birth is proposed during pass `pass` (1-based): from the third pass on,
    /// in every `birth_every`-th pass counted from it, except an even pass where a delete
    /// is due as well (one proposal per pass: when both are due, births take the odd
    /// passes and deletes the even ones).
    pub fn births_in(&self, pass: usize) -> bool {
        self.birth_due(pass) && (!pass.is_multiple_of(2) || !self.delete_due(pass))
    }

    fn delete_due(&self, pass: usize) -> bool {
        self.delete_every > 0 && pass >= 3 && pass.is_multiple_of(self.delete_every)
    }

    fn birth_due(&self, pass: usize) -> bool {
        self.birth_every > 0 && pass >= 3 && (pass - 3).is_multiple_of(self.birth_every)
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
        assert!(!p.merges_after(2) && !p.merges_after(3) && !p.deletes_in(2) && p.deletes_in(3) && p.deletes_in(4));
        let p = HdpParams::from_json(&json!({"merge_every": 1})).unwrap();
        assert!(!p.merges_after(1) && p.merges_after(2) && p.merges_after(3));
        let p = HdpParams::from_json(&json!({"merge_every": 2})).unwrap();
        assert!(!p.merges_after(3) && p.merges_after(4));
        let p = HdpParams::from_json(&json!({"merge_every": 0})).unwrap();
        assert!(!p.merges_after(2));
        let p = HdpParams::from_json(&json!({"birth_every": 2})).unwrap();
        assert!(!p.births_in(1) && !p.births_in(2) && p.births_in(3) && !p.births_in(4) && p.births_in(5), "odd passes");
        assert!(!p.deletes_in(3) && p.deletes_in(4) && !p.deletes_in(5) && p.deletes_in(6), "deletes in the even ones");
        let p = HdpParams::from_json(&json!({"birth_every": 1, "delete_every": 2})).unwrap();
        assert!(p.births_in(3) && !p.births_in(4) && p.births_in(5) && p.deletes_in(4) && !p.deletes_in(5), "one proposal per pass");
        let p = HdpParams::from_json(&json!({"birth_every": 1, "delete_every": 0})).unwrap();
        assert!(p.births_in(3) && p.births_in(4));
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
            (json!({"birth_every": "x"}), "birth_every"),
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
