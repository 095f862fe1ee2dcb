//! HPC's and PCM's job parameters, their defaults and their limits.

use super::rates::Curvature;
use super::variant::Supervision;
use crate::models::chain::Schedule;
use crate::models::design::DesignRequest;
use crate::models::edits::EditPlan;
use crate::models::params::{ParamError, ParamReader, ParamsDoc};
use crate::models::seeds::SeedWords;

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
    /// PCM: seeded topics (topic i is seed i), each seed word's log rate in its topic
    /// raised by pseudo-counts for the whole fit ([`crate::models::seeds`],
    /// [`super::data::HpcData::with_seeds`]); empty for HPC, whose topics are its
    /// labels. Not among the stored parameters: the model keeps it
    /// (`HpcModel::seeds`, version 8).
    #[serde(skip)]
    pub seeds: SeedWords,
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
            seeds: SeedWords::default(),
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

/// PCM's default `seed_strength`, below LDA's 0.3: on corpora drawn from LDA
/// (bench/seeded_topics.py --model pcm, 10 replicates) PCM's seeded topics ended at L1
/// 0.299 from the truth with 0.3 and 0.223 with 0.1 on 600 documents, 1.042 and 0.351 on
/// 150 (unseeded PCM's best matches: 0.176 and 0.417); 0.02 and 0.05 (3 replicates)
/// were no closer and 0.02 let another topic merge.
pub const PCM_SEED_STRENGTH: f64 = 0.1;

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

/// The descriptions of the HpcParams schema (`GET /v1/families`, OpenAPI), in a form's order.
pub(crate) const DOC: ParamsDoc = ParamsDoc {
    component: "HpcParams",
    description: r#"Parameters of an HPC (hierarchical Poisson convolution) or PCM fit by block Gibbs with scheduled conditional HMC. A null value means the default. Splits - if the corpus has `split` tags, `test` documents form the test split and `validation` (`valid`, `dev`) the validation split; otherwise each labelled document is assigned by the seed with `validation_fraction` and `test_fraction`. Thresholds for predicted label sets are calibrated on the validation split to maximise F1; the test split is scored (micro/macro F1, precision, recall, per label, beside the most-frequent-labels baseline) and shown in the model's diagnostics."#,
    basic: &["topics", "iterations", "burn_in", "chains", "test_fraction", "seed_words", "covariates", "reference", "splines"],
    keys: &[
        ("topics", r#"PCM only (HPC takes the corpus' labels) - the number of latent topics."#),
        ("iterations", r#"Gibbs scans."#),
        ("burn_in", r#"Scans discarded before posterior means are accumulated; default iterations/2."#),
        ("thin", r#"Keep every `thin`-th scan after burn-in."#),
        (
            "hessian_every",
            r#"The Hessian schedule - conditional modes and likelihood Hessians are refit on scan 1 and every `hessian_every` scans up to the end of burn-in."#,
        ),
        ("leapfrog_steps", r#"Leapfrog steps per HMC proposal."#),
        (
            "step_size",
            r#"Leapfrog step size in the mass matrix' whitened coordinates (where the posterior's scale is 1; above 2 leapfrog is unstable, below 1e-4 a draw barely moves)."#,
        ),
        (
            "rate_curvature",
            r#"Curvature of the per-word rate block - `full` (tree precision plus label co-occurrence, sparse Cholesky), `tree_diagonal` (tree precision plus the likelihood's diagonal, fill-free) or `auto` (full up to 200 topics)."#,
        ),
        ("strip_ancestors", r#"Drop a document's labels that are ancestors of its other labels."#),
        (
            "validation_fraction",
            r#"Share of labelled documents held out for threshold calibration when the corpus has no split tags; default 0.15 for hpc, 0 for pcm."#,
        ),
        ("test_fraction", r#"Share held out as the test split when the corpus has no split tags."#),
        (
            "min_label_validation",
            r#"Positive validation documents a label needs for its own threshold (otherwise the global one); an own threshold is shrunk towards the global one as if the global one had been seen on 10 documents."#,
        ),
        (
            "predictor",
            r#"HPC only. How P(label) of a new document is computed - `label_sets` (the posterior over which label set explains the words, among the sets the training and validation documents carried and every single label, each set spreading θ evenly over its labels under HPC's Poisson likelihood with the posterior-mean rates, each set's frequency among those documents as prior, the likelihood tempered by a temperature chosen on the validation split; P(label) sums the sets that contain it), `single_label` (the same with single labels only) or `mode` (logistic of the affinity mode ξ* with θ over every label, the paper's section 3.3)."#,
        ),
        (
            "max_label_sets",
            r#"HPC only, `label_sets` predictor. How many of the training and validation documents' sets of two or more labels (the most frequent) are candidates beside every single label; prediction costs O(words · Σ|S|) per document, so a corpus with very many distinct sets keeps its common ones. 0 leaves single labels only."#,
        ),
        (
            "refit_with_validation",
            r#"HPC only. Once the temperature and thresholds are calibrated on the validation documents, fit the rates again on the training and validation documents together (a second chain of `iterations` scans with a seed derived from the job's) and keep the calibration, as scikit-learn's refit after a search does. The model's topic tables and predictions come from the second chain; the job's progress counts both chains (2 × `iterations`), and a fit costs about twice one chain. No effect without validation documents; the model's `diagnostics.refitted_with_validation` says whether it happened, and `diagnostics.fit.training_documents` then counts the validation documents too. On AppStream it raised micro-F1 on every one of five splits (bench/README.md)."#,
        ),
        (
            "covariates",
            r#"Corpus covariates for effects by the method of composition (`/effects`, `"method": "composition"`), as LDA's: the design is built as DCNT builds its φ; every document must give each (a covariate the corpus lacks, or one missing on some documents, is a 422 naming `params.covariates`). They do not change the rates. The model keeps the design's rows for the documents its rates learned from (with a refit, the training and validation documents)."#,
        ),
        ("reference", r#"Reference level per categorical covariate of `covariates` (default the most frequent level)."#),
        ("splines", r#"Cubic B-spline columns per continuous or date covariate of `covariates`."#),
        (
            "keep_draws",
            r#"Draws of the documents' topic proportions θ = softmax(ξ) (over each document's active labels, zero elsewhere) the model keeps for `/effects` (default 20 with `covariates`, else none; spread over the kept scans of every chain, of the stage whose rates the model keeps), fewer when they would pass 64 MB (each is D × K × 4 bytes)."#,
        ),
        (
            "chains",
            r#"Independent chains run one after another from seeds derived from the job's (chain 0 uses the job's seed) on the same split, pooled: the frequency and exclusivity tables, the posterior mean log rates and the topic shares averaged over the chains, weighted by kept scans. HPC's topics are the labels, the same in every chain; PCM's later chains' topics are matched to chain 0's by their normalised expected rates (`diagnostics.chain_alignment`). η, λ² and the summary's last hyperparameters are chain 0's. With a refit the second stage runs as many chains again, and the calibration is chosen on the pooled first stage; progress counts chains × `iterations` per stage. `diagnostics.convergence` compares the chains (split-R̂)."#,
        ),
        (
            "seed_words",
            r#"PCM only (HPC's topics are its labels). Seeded (keyword-assisted) topics, `[{"name": "games", "words": ["game", "play", "player"]}, ...]`, as LDA's: topic i is the i-th seed and is served under its name. Each seed word w of a seeded topic k adds c = ⌈seed_strength · n_w⌉ pseudo-counts (n_w: its training tokens) for the whole fit: c μ_wk joins the conditional of the word's log rates (the Poisson likelihood of c tokens of w in topic k with no exposure), so the word's rate in its topic rises and its other topics' do not fall; a chain starts with the word's counts in its seeded topics. The served rates leave out the pseudo-counts' share, as LDA serves its assigned tokens, not its pseudo-counts. Later chains keep the seeded topics in place when pooled. Words are normalised as the corpus' were; one the vocabulary lacks is a 422 naming it unless `missing_seed_words` is `ignore`. At most `topics` seeds."#,
        ),
        (
            "seed_strength",
            r#"PCM only. Pseudo-counts each seed word adds to its seeded topic, as a share of the word's training tokens (default 0.1, below LDA's 0.3: on corpora drawn from LDA, 0.3 left PCM's seeded topics much further from the truth than 0.1 did; bench/README.md)."#,
        ),
        (
            "missing_seed_words",
            r#"PCM only. `reject` (a seed word the vocabulary lacks is a 422 naming it) or `ignore` (it is left out and listed in the model's `diagnostics.seeds.missing_words`)."#,
        ),
        (
            "label_closure",
            r#"HPC only. Whether predicted label sets include their labels' ancestors (P(parent) = the sum of the probabilities of the sets, or single labels, in its subtree, or under `mode` the largest). `auto` follows the corpus - ancestors when, of the training documents' labels that have a parent label, at least half come with it."#,
        ),
    ],
};

/// HPC's topics are its labels: a seed key is a 422 naming it.
fn refuse_seeds(params: &Value) -> Result<(), ParamError> {
    match ["seed_words", "seed_strength", "missing_seed_words"].into_iter().find(|k| params.get(*k).is_some_and(|v| !v.is_null())) {
        Some(key) => Err(ParamError::new(key, "HPC's topics are the corpus' labels: seeded topics are for PCM (and LDA, DCNT, SCNT)")),
        None => Ok(()),
    }
}

/// PCM's `topics` and seeds (HPC: 0 and none, its topics being the corpus' labels).
fn topics_and_seeds(r: &mut ParamReader, supervision: Supervision) -> Result<(usize, SeedWords), ParamError> {
    match supervision {
        Supervision::Labelled => Ok((0, SeedWords::default())),
        Supervision::Unsupervised => {
            let topics = r.uint_in_or("topics", 2, 2_000, 20)? as usize;
            Ok((topics, SeedWords::read_with_default_strength(r, topics, PCM_SEED_STRENGTH)?))
        }
    }
}

impl HpcParams {
    /// Parse and check `params`; every error names its field. `supervision` selects the
    /// HPC defaults (validation split on) or PCM's (`topics`, no split).
    pub fn from_json(params: &Value, supervision: Supervision) -> Result<Self, ParamError> {
        if supervision.is_labelled() {
            refuse_seeds(params)?;
        }
        let mut r = ParamReader::new(params)?.described_by(&DOC);
        let chains = r.uint_in_or("chains", 1, crate::models::chains::MAX_CHAINS as u64, 1)? as usize;
        let design = DesignRequest::read(&mut r)?;
        let keep_draws = crate::models::composition::read_keep_draws(&mut r, &design)?;
        let (topics, seeds) = topics_and_seeds(&mut r, supervision)?;
        let iterations = r.uint_in_or("iterations", 1, MAX_ITERATIONS, 200)? as usize;
        let burn_in = match r.uint_in("burn_in", 0, MAX_ITERATIONS - 1)?.map(|b| b as usize) {
            Some(b) if b >= iterations => return Err(ParamError::new("burn_in", format!("must be less than iterations ({iterations}), got {b}"))),
            Some(b) => b,
            None => iterations / 2,
        };
        let thin = r.uint_in_or("thin", 1, 1_000_000, 1)? as usize;
        let hessian_every = r.uint_in_or("hessian_every", 1, 1_000_000, 20)? as usize;
        let leapfrog_steps = r.uint_in_or("leapfrog_steps", 1, 1_000, 6)? as usize;
        let step_size = r.number_in_or("step_size", MIN_STEP_SIZE, MAX_STEP_SIZE, 0.3)?;
        let rate_curvature = match r.choice_or("rate_curvature", &["auto", "full", "tree_diagonal"], "auto")? {
            "full" => Some(Curvature::Full),
            "tree_diagonal" => Some(Curvature::TreeDiagonal),
            _ => None,
        };
        let strip_ancestors = r.boolean_or("strip_ancestors", true)?;
        let (default_validation, default_test) = match supervision {
            Supervision::Labelled => (0.15, 0.0),
            Supervision::Unsupervised => (0.0, 0.0),
        };
        let validation_fraction = r.fraction_or("validation_fraction", 0.9, default_validation)?;
        let test_fraction = r.fraction_or("test_fraction", 0.9, default_test)?;
        if validation_fraction + test_fraction >= 0.9 {
            return Err(ParamError::new("test_fraction", "validation_fraction + test_fraction must be below 0.9"));
        }
        let min_label_validation = r.uint_in_or("min_label_validation", 1, 1_000_000, 5)? as usize;
        let (predictor, label_closure, max_label_sets, refit_with_validation) = match supervision {
            Supervision::Labelled => {
                let predictor = match r.choice_or("predictor", &["label_sets", "single_label", "mode"], "label_sets")? {
                    "single_label" => Predictor::SingleLabel,
                    "mode" => Predictor::Mode,
                    _ => Predictor::LabelSets,
                };
                let closure = match r.choice_or("label_closure", &["auto", "ancestors", "none"], "auto")? {
                    "ancestors" => Closure::Ancestors,
                    "none" => Closure::None,
                    _ => Closure::Auto,
                };
                let max_label_sets = r.uint_in_or("max_label_sets", 0, 1_000_000, DEFAULT_MAX_LABEL_SETS as u64)? as usize;
                let refit = r.boolean_or("refit_with_validation", true)?;
                (predictor, closure, max_label_sets, refit)
            }
            Supervision::Unsupervised => (Predictor::default(), Closure::default(), DEFAULT_MAX_LABEL_SETS, false),
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
            seeds,
        })
    }

    /// The parameters under their wire names, as [`HpcParams::from_json`] reads them
    /// back: `topics` for PCM, the prediction settings for HPC, `rate_curvature`
    /// `auto` when unset.
    /// The params of an update ([`super::start`]) of a model fitted with these: PCM's
    /// topics raised by `new_topics` (HPC's topics are its labels: a 422 naming
    /// `new_topics`), `iterations` scans with the first half burn-in and every later
    /// scan kept, the rest as the parent had them.
    pub fn updated(&self, supervision: Supervision, new_topics: usize, iterations: usize) -> Result<Self, ParamError> {
        if supervision.is_labelled() && new_topics > 0 {
            return Err(ParamError::new("new_topics", "HPC's topics are its labels: an update adds no topics (new labels come with a new tree)"));
        }
        let mut json = self.to_json(supervision);
        let o = json.as_object_mut().expect("params serialise to an object");
        if !supervision.is_labelled() {
            o.insert("topics".into(), json!(self.topics + new_topics));
        }
        o.insert("iterations".into(), json!(iterations));
        o.remove("burn_in");
        o.insert("thin".into(), json!(1));
        HpcParams::from_json(&json, supervision)
    }

    /// The params of a PCM refit edited by `plan` ([`super::edit`]): these with the
    /// child's topics (retired ones included) and a schedule of `iterations` scans, every
    /// one after the burn-in kept. HPC's topics are its labels: an error naming `model`.
    /// A seeded model's seeded topics are the first ones and stay in place, so an
    /// operation on one is an error naming the operation; an edit that leaves fewer than
    /// 2 live topics is an error naming `operations` (PCM fits at least 2).
    pub fn edited(&self, supervision: Supervision, plan: &EditPlan, iterations: usize) -> Result<Self, ParamError> {
        if supervision.is_labelled() {
            return Err(ParamError::new("model", "HPC's topics are its labels: edit the label tree and refit instead"));
        }
        plan.check_seeded_and_live(&self.seeds, "a PCM model")?;
        let mut json = self.to_json(supervision);
        let o = json.as_object_mut().expect("params serialise to an object");
        o.insert("topics".into(), json!(plan.child_topics()));
        o.insert("iterations".into(), json!(iterations));
        o.remove("burn_in");
        o.insert("thin".into(), json!(1));
        HpcParams::from_json(&json, supervision)
    }

    pub fn to_json(&self, supervision: Supervision) -> Value {
        let mut v = serde_json::to_value(self).expect("plain data serialises");
        let o = v.as_object_mut().expect("a struct serialises to an object");
        o.insert("rate_curvature".into(), self.rate_curvature.map_or(json!("auto"), |c| json!(c)));
        o.insert("chains".into(), json!(self.chains));
        o.insert("keep_draws".into(), json!(self.keep_draws));
        if let Value::Object(design) = json!(self.design) {
            o.extend(design);
        }
        match supervision {
            Supervision::Labelled => {
                o.remove("topics");
                o.insert("predictor".into(), json!(self.predictor));
                o.insert("label_closure".into(), json!(self.label_closure));
                o.insert("max_label_sets".into(), json!(self.max_label_sets));
                o.insert("refit_with_validation".into(), json!(self.refit_with_validation));
            }
            Supervision::Unsupervised => self.seeds.write_json(o),
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
        use Supervision::{Labelled, Unsupervised};
        let p = HpcParams::from_json(&json!({"iterations": 100}), Labelled).unwrap();
        assert_eq!(p.burn_in, 50);
        assert!(p.refits_modes(1) && p.refits_modes(21) && p.refits_modes(41));
        assert!(!p.refits_modes(2) && !p.refits_modes(61));
        assert!(p.schedule().is_kept(51) && !p.schedule().is_kept(50));
        let thinned = HpcParams::from_json(&json!({"iterations": 20, "burn_in": 5, "thin": 4}), Labelled).unwrap().schedule();
        assert_eq!((1..=20).filter(|&it| thinned.is_kept(it)).collect::<Vec<_>>(), vec![9, 13, 17]);
        assert!((1..=20).all(|it| thinned.computes_loglik(it)), "the trace has every scan");
        assert_eq!(p.validation_fraction, 0.15);
        let pcm = HpcParams::from_json(&json!({"topics": 8}), Unsupervised).unwrap();
        assert_eq!((pcm.topics, pcm.validation_fraction, pcm.chains), (8, 0.0, 1));
        let three = HpcParams::from_json(&json!({"chains": 3}), Labelled).unwrap();
        assert_eq!(three.chains, 3);
        assert_eq!(HpcParams::from_json(&three.to_json(Labelled), Labelled).unwrap(), three, "chains survives the stored JSON");
        let with = HpcParams::from_json(&json!({"topics": 3, "covariates": ["year"], "splines": {"year": 4}}), Unsupervised).unwrap();
        assert_eq!((with.design.covariates.clone(), with.keep_draws), (vec!["year".to_string()], 20), "20 draws with covariates");
        assert_eq!(HpcParams::from_json(&with.to_json(Unsupervised), Unsupervised).unwrap(), with, "the design survives the stored JSON");
        assert_eq!(pcm.keep_draws, 0, "none without");
    }

    #[test]
    fn bad_values_name_their_field() {
        use Supervision::{Labelled, Unsupervised};
        for (body, supervision, field) in [
            (json!({"topics": 5}), Labelled, "topics"),
            (json!({"topics": 1}), Unsupervised, "topics"),
            (json!({"iterations": 10, "burn_in": 10}), Labelled, "burn_in"),
            (json!({"step_size": 0}), Labelled, "step_size"),
            (json!({"step_size": 3.0}), Labelled, "step_size"),
            (json!({"strip_ancestors": "yes"}), Labelled, "strip_ancestors"),
            (json!({"validation_fraction": 0.5, "test_fraction": 0.45}), Labelled, "test_fraction"),
            (json!({"leapfrog_steps": 0}), Labelled, "leapfrog_steps"),
            (json!({"rate_curvature": "dense"}), Labelled, "rate_curvature"),
            (json!({"predictor": "svm"}), Labelled, "predictor"),
            (json!({"label_closure": true}), Labelled, "label_closure"),
            (json!({"predictor": "mode"}), Unsupervised, "predictor"),
            (json!({"max_label_sets": -1}), Labelled, "max_label_sets"),
            (json!({"max_label_sets": 10}), Unsupervised, "max_label_sets"),
            (json!({"refit_with_validation": "yes"}), Labelled, "refit_with_validation"),
            (json!({"refit_with_validation": true}), Unsupervised, "refit_with_validation"),
            (json!({"threads": 2}), Labelled, "threads"),
            (json!({"chains": 0}), Unsupervised, "chains"),
            (json!({"chains": 9}), Labelled, "chains"),
            (json!({"checkpoint_every_s": 0.5}), Unsupervised, "checkpoint_every_s"),
        ] {
            assert_eq!(HpcParams::from_json(&body, supervision).unwrap_err().field, field, "{body}");
        }
    }
}
