//! HPC's and PCM's job parameters, their defaults and their limits.

use super::rates::Curvature;
use crate::models::chain::Schedule;
use crate::models::design::DesignRequest;
use crate::models::params::{ParamError, ParamReader};

/// `rate_curvature = auto` uses the full Hessian up to this many topics: beyond it the
/// co-occurrence core of frequent words makes the sparse factor's fill, and its cost,
/// grow quadratically (see the benchmark in
/// `docs/decisions/0011-hpc-tree-diagonal-curvature-above-200-labels.md`).
pub const AUTO_FULL_CURVATURE_MAX_TOPICS: usize = 200;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// Parameters of an HPC (supervised) or PCM (unsupervised) fit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HpcParams {
    /// PCM only: the number of latent topics (HPC takes the corpus' labels).
    pub topics: usize,
    /// Gibbs scans.
    pub iterations: usize,
    /// Scans discarded before posterior means are accumulated (default iterations/2).
    pub burn_in: usize,
    /// Keep every `thin`-th scan after burn-in.
    pub thin: usize,
    /// The Hessian schedule: conditional modes and likelihood Hessians are refit on
    /// scan 1 and then every `hessian_every` scans up to the end of burn-in.
    pub hessian_every: usize,
    /// Leapfrog steps and step size of every HMC draw (in the mass matrix' whitened
    /// coordinates, so 1 is the posterior's scale).
    pub leapfrog_steps: usize,
    pub step_size: f64,
    /// The rate block's curvature: `full` (tree plus label co-occurrence, the paper's
    /// Hessian), `tree_diagonal` (tree plus the likelihood's diagonal, fill-free), or
    /// `auto` (`None` here): full up to [`AUTO_FULL_CURVATURE_MAX_TOPICS`] topics.
    pub rate_curvature: Option<Curvature>,
    /// Drop a document's labels that are ancestors of its other labels.
    pub strip_ancestors: bool,
    /// Share of labelled documents held out to calibrate prediction thresholds (when
    /// the corpus has no `split` tags).
    pub validation_fraction: f64,
    /// Share held out as a test split for evaluation (when the corpus has no tags).
    pub test_fraction: f64,
    /// Validation documents a label needs for its own threshold (else the global one).
    pub min_label_validation: usize,
    /// HPC: how P(label) is computed for new documents. Not in the stored encoding
    /// (added after version 1): the fitted choice is stored in `HpcModel::prediction`.
    #[serde(skip)]
    pub predictor: Predictor,
    /// HPC: whether predicted sets include ancestors (`auto`: as the corpus' sets do).
    /// Not stored either, for the same reason.
    #[serde(skip)]
    pub label_closure: Closure,
    /// HPC, label-set predictor: how many multi-label sets (the most frequent) are
    /// candidates beside the single labels. Read at fit time only; not stored.
    #[serde(skip)]
    pub max_label_sets: usize,
    /// HPC: after the thresholds are calibrated on the validation documents, fit the
    /// rates again on the training and validation documents together (a second chain,
    /// seed derived from the job's), keeping the calibration. Read at fit time; the
    /// model records whether it happened (`HpcModel::refitted_with_validation`).
    #[serde(skip)]
    pub refit_with_validation: bool,
    /// Independent chains (1 to 8) run one after another and pooled
    /// ([`super::pooled`]); with a refit, as many again on the training and validation
    /// documents. Read at fit time; the model records it (`HpcModel::chains`).
    #[serde(skip, default = "one_chain")]
    pub chains: usize,
    /// The covariates whose effects `/effects` estimates by composition
    /// ([`crate::models::composition`]; `covariates`, `reference`, `splines`). Read at
    /// fit time; the model keeps the design it built.
    #[serde(skip)]
    pub design: DesignRequest,
    /// Draws of the documents' topic proportions kept for composition (default
    /// [`crate::models::composition::DEFAULT_KEEP_DRAWS`] with covariates, else 0),
    /// shared by the chains. Read at fit time.
    #[serde(skip)]
    pub keep_draws: usize,
}

/// What a decoded model's parameters hold for `chains` until the model sets its own.
fn one_chain() -> usize {
    1
}

/// HPC's and PCM's parameters as encoded by models of format version 4 and earlier
/// (which kept the job's `threads`, always 0 once the runner took it from the job's
/// options); upgraded by [`super::model::HpcModel::decode`].
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(test, derive(Serialize))]
pub(crate) struct HpcParamsV4 {
    pub topics: usize,
    pub iterations: usize,
    pub burn_in: usize,
    pub thin: usize,
    pub hessian_every: usize,
    pub leapfrog_steps: usize,
    pub step_size: f64,
    pub rate_curvature: Option<Curvature>,
    pub strip_ancestors: bool,
    pub validation_fraction: f64,
    pub test_fraction: f64,
    pub min_label_validation: usize,
    /// The job's thread count: read to pass over its bytes, never used.
    #[allow(dead_code)]
    pub threads: usize,
}

impl From<HpcParamsV4> for HpcParams {
    /// The settings read at fit time only were never stored: they read as their
    /// defaults, as a current blob's do.
    fn from(p: HpcParamsV4) -> Self {
        HpcParams {
            topics: p.topics,
            iterations: p.iterations,
            burn_in: p.burn_in,
            thin: p.thin,
            hessian_every: p.hessian_every,
            leapfrog_steps: p.leapfrog_steps,
            step_size: p.step_size,
            rate_curvature: p.rate_curvature,
            strip_ancestors: p.strip_ancestors,
            validation_fraction: p.validation_fraction,
            test_fraction: p.test_fraction,
            min_label_validation: p.min_label_validation,
            predictor: Predictor::default(),
            label_closure: Closure::default(),
            max_label_sets: 0,
            refit_with_validation: false,
            chains: 1,
            design: DesignRequest::default(),
            keep_draws: 0,
        }
    }
}

#[cfg(test)]
impl From<&HpcParams> for HpcParamsV4 {
    /// The version 4 layout of current parameters (`threads` 0, as every job's was).
    fn from(p: &HpcParams) -> Self {
        HpcParamsV4 {
            topics: p.topics,
            iterations: p.iterations,
            burn_in: p.burn_in,
            thin: p.thin,
            hessian_every: p.hessian_every,
            leapfrog_steps: p.leapfrog_steps,
            step_size: p.step_size,
            rate_curvature: p.rate_curvature,
            strip_ancestors: p.strip_ancestors,
            validation_fraction: p.validation_fraction,
            test_fraction: p.test_fraction,
            min_label_validation: p.min_label_validation,
            threads: 0,
        }
    }
}

/// How P(label) is computed for a new document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Predictor {
    /// logistic(ξ*_k) at the mode of the simplified model (paper 003, §3.3).
    Mode,
    /// The tempered posterior over single-label explanations of the words.
    SingleLabel,
    /// The tempered posterior over the label sets seen in training (and single labels).
    #[default]
    LabelSets,
}

/// Whether predicted label sets include their labels' ancestors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Closure {
    /// Decide from the corpus ([`super::label_posterior::ancestors_are_uploaded`]).
    #[default]
    Auto,
    Ancestors,
    None,
}

/// Most scans a fit runs (`burn_in` is below it).
pub const MAX_ITERATIONS: u64 = 1_000_000;

/// Bounds of the leapfrog step size, in the mass matrix' whitened coordinates (where the
/// posterior's scale is 1): above 2 a leapfrog trajectory is unstable even on a Gaussian
/// target (every proposal is rejected); below 1e-4 even 1000 steps move a draw by a
/// tenth of the posterior's scale, so the chain stands still.
pub const MIN_STEP_SIZE: f64 = 1e-4;
pub const MAX_STEP_SIZE: f64 = 2.0;

/// Multi-label candidate sets kept by default (AppStream's 1 372 training documents
/// have 241 distinct ones).
pub const DEFAULT_MAX_LABEL_SETS: usize = 2_000;

impl HpcParams {
    /// Parse and check `params`; every error names its field. `supervised` selects the
    /// HPC defaults (validation split on) or PCM's (`topics`, no split).
    pub fn from_json(params: &Value, supervised: bool) -> Result<Self, ParamError> {
        let mut r = ParamReader::new(params)?;
        let chains = r.uint_in("chains", 1, crate::models::chains::MAX_CHAINS as u64)?.unwrap_or(1) as usize;
        let design = DesignRequest::read(&mut r)?;
        let keep_draws = crate::models::composition::read_keep_draws(&mut r, &design)?;
        let topics = if supervised { 0 } else { r.uint_in("topics", 2, 2_000)?.unwrap_or(20) as usize };
        let iterations = r.uint_in("iterations", 1, MAX_ITERATIONS)?.unwrap_or(200) as usize;
        let burn_in = match r.uint_in("burn_in", 0, MAX_ITERATIONS - 1)?.map(|b| b as usize) {
            Some(b) if b >= iterations => return Err(ParamError::new("burn_in", format!("must be less than iterations ({iterations}), got {b}"))),
            Some(b) => b,
            None => iterations / 2,
        };
        let thin = r.uint_in("thin", 1, 1_000_000)?.unwrap_or(1) as usize;
        let hessian_every = r.uint_in("hessian_every", 1, 1_000_000)?.unwrap_or(20) as usize;
        let leapfrog_steps = r.uint_in("leapfrog_steps", 1, 1_000)?.unwrap_or(6) as usize;
        let step_size = r.number_in("step_size", MIN_STEP_SIZE, MAX_STEP_SIZE)?.unwrap_or(0.3);
        let rate_curvature = match r.string("rate_curvature")?.as_deref() {
            None | Some("auto") => None,
            Some("full") => Some(Curvature::Full),
            Some("tree_diagonal") => Some(Curvature::TreeDiagonal),
            Some(other) => return Err(ParamError::new("rate_curvature", format!("must be auto, full or tree_diagonal, got {other:?}"))),
        };
        let strip_ancestors = r.boolean("strip_ancestors")?.unwrap_or(true);
        let (default_validation, default_test) = if supervised { (0.15, 0.0) } else { (0.0, 0.0) };
        let validation_fraction = r.fraction("validation_fraction", 0.9)?.unwrap_or(default_validation);
        let test_fraction = r.fraction("test_fraction", 0.9)?.unwrap_or(default_test);
        if validation_fraction + test_fraction >= 0.9 {
            return Err(ParamError::new("test_fraction", "validation_fraction + test_fraction must be below 0.9"));
        }
        let min_label_validation = r.uint_in("min_label_validation", 1, 1_000_000)?.unwrap_or(5) as usize;
        let (predictor, label_closure, max_label_sets, refit_with_validation) = if supervised {
            let predictor = match r.string("predictor")?.as_deref() {
                None | Some("label_sets") => Predictor::LabelSets,
                Some("single_label") => Predictor::SingleLabel,
                Some("mode") => Predictor::Mode,
                Some(other) => return Err(ParamError::new("predictor", format!("must be label_sets, single_label or mode, got {other:?}"))),
            };
            let closure = match r.string("label_closure")?.as_deref() {
                None | Some("auto") => Closure::Auto,
                Some("ancestors") => Closure::Ancestors,
                Some("none") => Closure::None,
                Some(other) => return Err(ParamError::new("label_closure", format!("must be auto, ancestors or none, got {other:?}"))),
            };
            let max_label_sets = r.uint_in("max_label_sets", 0, 1_000_000)?.unwrap_or(DEFAULT_MAX_LABEL_SETS as u64) as usize;
            let refit = r.boolean("refit_with_validation")?.unwrap_or(true);
            (predictor, closure, max_label_sets, refit)
        } else {
            (Predictor::default(), Closure::default(), DEFAULT_MAX_LABEL_SETS, false)
        };
        r.finish()?;
        Ok(HpcParams {
            topics,
            iterations,
            burn_in,
            thin,
            hessian_every,
            leapfrog_steps,
            step_size,
            rate_curvature,
            strip_ancestors,
            validation_fraction,
            test_fraction,
            min_label_validation,
            predictor,
            label_closure,
            max_label_sets,
            refit_with_validation,
            chains,
            design,
            keep_draws,
        })
    }

    /// The parameters under their wire names, as [`HpcParams::from_json`] reads them
    /// back: `topics` for PCM, the prediction settings for HPC, `rate_curvature`
    /// `auto` when unset.
    pub fn to_json(&self, supervised: bool) -> Value {
        let mut v = serde_json::to_value(self).expect("plain data serialises");
        let o = v.as_object_mut().expect("a struct serialises to an object");
        o.insert("rate_curvature".into(), self.rate_curvature.map_or(json!("auto"), |c| json!(c)));
        o.insert("chains".into(), json!(self.chains));
        o.insert("keep_draws".into(), json!(self.keep_draws));
        if let Value::Object(design) = json!(self.design) {
            o.extend(design);
        }
        if supervised {
            o.remove("topics");
            o.insert("predictor".into(), json!(self.predictor));
            o.insert("label_closure".into(), json!(self.label_closure));
            o.insert("max_label_sets".into(), json!(self.max_label_sets));
            o.insert("refit_with_validation".into(), json!(self.refit_with_validation));
        }
        v
    }

    /// The chain driver's view of the scans: which are kept is [`Schedule::is_kept`].
    /// HPC computes its log-likelihood inside every scan (the affinity block has the
    /// rates at hand), so the driver reports it after every scan.
    pub fn schedule(&self) -> Schedule {
        Schedule { iterations: self.iterations, burn_in: self.burn_in, thin: self.thin, loglik_every: 1 }
    }

    /// The curvature for a model with `topics` topics.
    pub fn curvature(&self, topics: usize) -> Curvature {
        self.rate_curvature.unwrap_or(if topics <= AUTO_FULL_CURVATURE_MAX_TOPICS { Curvature::Full } else { Curvature::TreeDiagonal })
    }

    /// Whether scan `iteration` refits conditional modes and likelihood Hessians.
    pub fn refits_modes(&self, iteration: usize) -> bool {
        iteration == 1 || (iteration <= self.burn_in.max(1) && (iteration - 1).is_multiple_of(self.hessian_every))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_and_schedule() {
        let p = HpcParams::from_json(&json!({"iterations": 100}), true).unwrap();
        assert_eq!(p.burn_in, 50);
        assert!(p.refits_modes(1) && p.refits_modes(21) && p.refits_modes(41));
        assert!(!p.refits_modes(2) && !p.refits_modes(61));
        assert!(p.schedule().is_kept(51) && !p.schedule().is_kept(50));
        let thinned = HpcParams::from_json(&json!({"iterations": 20, "burn_in": 5, "thin": 4}), true).unwrap().schedule();
        assert_eq!((1..=20).filter(|&it| thinned.is_kept(it)).collect::<Vec<_>>(), vec![9, 13, 17]);
        assert!((1..=20).all(|it| thinned.computes_loglik(it)), "the trace has every scan");
        assert_eq!(p.validation_fraction, 0.15);
        let pcm = HpcParams::from_json(&json!({"topics": 8}), false).unwrap();
        assert_eq!((pcm.topics, pcm.validation_fraction, pcm.chains), (8, 0.0, 1));
        let three = HpcParams::from_json(&json!({"chains": 3}), true).unwrap();
        assert_eq!(three.chains, 3);
        assert_eq!(HpcParams::from_json(&three.to_json(true), true).unwrap(), three, "chains survives the stored JSON");
        let with = HpcParams::from_json(&json!({"topics": 3, "covariates": ["year"], "splines": {"year": 4}}), false).unwrap();
        assert_eq!((with.design.covariates.clone(), with.keep_draws), (vec!["year".to_string()], 20), "20 draws with covariates");
        assert_eq!(HpcParams::from_json(&with.to_json(false), false).unwrap(), with, "the design survives the stored JSON");
        assert_eq!(pcm.keep_draws, 0, "none without");
    }

    #[test]
    fn bad_values_name_their_field() {
        for (body, supervised, field) in [
            (json!({"topics": 5}), true, "topics"),
            (json!({"topics": 1}), false, "topics"),
            (json!({"iterations": 10, "burn_in": 10}), true, "burn_in"),
            (json!({"step_size": 0}), true, "step_size"),
            (json!({"step_size": 3.0}), true, "step_size"),
            (json!({"strip_ancestors": "yes"}), true, "strip_ancestors"),
            (json!({"validation_fraction": 0.5, "test_fraction": 0.45}), true, "test_fraction"),
            (json!({"leapfrog_steps": 0}), true, "leapfrog_steps"),
            (json!({"rate_curvature": "dense"}), true, "rate_curvature"),
            (json!({"predictor": "svm"}), true, "predictor"),
            (json!({"label_closure": true}), true, "label_closure"),
            (json!({"predictor": "mode"}), false, "predictor"),
            (json!({"max_label_sets": -1}), true, "max_label_sets"),
            (json!({"max_label_sets": 10}), false, "max_label_sets"),
            (json!({"refit_with_validation": "yes"}), true, "refit_with_validation"),
            (json!({"refit_with_validation": true}), false, "refit_with_validation"),
            (json!({"threads": 2}), true, "threads"),
            (json!({"chains": 0}), false, "chains"),
            (json!({"chains": 9}), true, "chains"),
            (json!({"checkpoint_every_s": 0.5}), false, "checkpoint_every_s"),
        ] {
            assert_eq!(HpcParams::from_json(&body, supervised).unwrap_err().field, field, "{body}");
        }
    }
}
