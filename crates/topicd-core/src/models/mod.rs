//! The model layer: one trait pair that every topic model implements.
//!
//! Why it exists: the job runner, the store and the HTTP API treat every model the same
//! way. A [`ModelFamily`] checks parameters, fits a model from a corpus and decodes a
//! stored one; a fitted [`TopicModel`] answers the questions clients ask (topic tables,
//! predictions) and encodes itself. Graph models have their own pair
//! ([`community`]); [`registry`] lists both kinds once. Adding a model means one folder
//! under `models/` and one line in [`registry::REGISTRY`].
//!
//! Invariants: models are synchronous, run inside whatever rayon pool the caller
//! installed, never touch HTTP, SQL or tokio, and are fully determined by
//! `(corpus, params, seed)`.

pub mod after_chain;
pub mod capabilities;
#[cfg(test)]
mod capabilities_tests;
pub mod chain;
pub mod chain_fit;
pub mod chains;
pub mod community;
pub mod completion;
pub mod composition;
pub mod convergence;
pub mod dcnt;
pub mod design;
pub mod effects;
pub mod encoding_upgrade;
pub mod erased;
pub mod exclusivity;
pub mod hdp;
pub mod hdp_ammsb;
pub mod heldout;
pub mod hpc;
pub mod lda;
pub mod memory;
#[cfg(feature = "test-family")]
pub mod mixture;
pub mod options;
#[cfg(test)]
mod param_bounds_tests;
pub mod params;
pub mod passes;
pub mod registry;
pub mod splits;
pub mod state_bytes;
#[cfg(test)]
mod test_kit;
pub mod topic_draws;

use crate::corpus::lexicon::EncodedDoc;
use crate::corpus::{Corpus, CorpusStats};
pub use erased::FitParams;
use ndarray::Array2;
pub use params::ParamError;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A kind of topic model, typed: its own parameters, checked once and carried as
/// [`Self::Params`] from submit to fit. The registry sees it through
/// [`erased::TopicEntry`] (implemented for every `ModelFamily`), which binds parsed
/// params to their family ([`FitParams`]) so nothing past the edge reads JSON or
/// downcasts.
pub trait ModelFamily: Sync + 'static {
    /// The family's parameters, every default filled in.
    type Params: Clone + std::fmt::Debug + Send + Sync + 'static;
    /// Wire name used in `POST /v1/jobs` (`"lda"`).
    fn name(&self) -> &'static str;
    /// Parse `params` (a JSON object) into [`Self::Params`] with every default filled
    /// in; unknown keys and out-of-range values are errors naming the field. Done once
    /// at submit; the job stores [`Self::params_json`] and the runner parses that back
    /// into the same value (so a fit keeps its meaning when a default changes later).
    /// Runner options (`threads`, `checkpoint_every_s`) are not parameters: the caller
    /// takes them out first ([`options::JobOptions::take_from`]).
    fn parse_params(&self, params: &serde_json::Value) -> Result<Self::Params, ParamError>;
    /// The stored form of `params`: every parameter under its wire name, which
    /// [`Self::parse_params`] reads back into the same value.
    fn params_json(&self, params: &Self::Params) -> serde_json::Value;
    /// Check `params` against the corpus before a job is queued (a family whose
    /// parameters do not depend on the corpus accepts every corpus).
    fn check_params(&self, params: &Self::Params, corpus: &CorpusStats) -> Result<(), ParamError> {
        let _ = (params, corpus);
        Ok(())
    }
    /// Peak resident memory of this family's fit as the service runs it (the decoded
    /// corpus, the sampler's state, kept samples, checkpoint bytes while one is written,
    /// the encoded model), in bytes, from the corpus summary, the params and `threads`.
    /// Formulas and their measured accuracy: [`memory`].
    fn fit_memory(&self, corpus: &CorpusStats, params: &Self::Params, threads: usize) -> u64;
    /// Fit on `corpus`. Must poll `ctx.cancel` at least once per sweep.
    fn fit(&self, corpus: &Corpus, params: &Self::Params, seed: u64, ctx: &FitContext) -> Result<Box<dyn TopicModel>, FitError>;
    /// Fit over the ranks of a distributed fit ([`crate::ranks`]): rank 0 holds the
    /// corpus and hands each rank its shard; rank 0 returns the model [`Self::fit`]
    /// would, byte for byte, the other ranks `None`. Every rank gets the same error. A
    /// family that cannot run over ranks says so as a parameter error naming `ranks`.
    fn fit_ranked(
        &self,
        corpus: Option<Corpus>,
        params: &Self::Params,
        seed: u64,
        ctx: &FitContext,
        ranks: &dyn crate::ranks::Ranks,
    ) -> Result<Option<Box<dyn TopicModel>>, FitError> {
        let _ = (corpus, params, seed, ctx, ranks);
        Err(FitError::Params(ParamError::new("ranks", format!("{} does not fit over several ranks", self.name()))))
    }
    /// Whether a fit of `params` can run over `ranks` ranks through [`Self::fit_ranked`],
    /// checked when a job asks for them (the error names `ranks`).
    fn check_ranks(&self, params: &Self::Params, ranks: usize) -> Result<(), ParamError> {
        let _ = params;
        if ranks > 1 {
            return Err(ParamError::new("ranks", format!("{} does not fit over several ranks", self.name())));
        }
        Ok(())
    }
    /// Params of a brief fit (a few sweeps, few topics) that any small corpus takes:
    /// what the checks across families and the fuzz targets fit with, so that nothing
    /// outside the family's folder needs to know its parameters.
    fn quick_params(&self) -> Self::Params;
    /// Decode a model previously produced by [`TopicModel::encode`].
    fn decode(&self, bytes: &[u8]) -> Result<Box<dyn TopicModel>, ModelError>;
    /// What a fitted model of this family offers (checked against the fitted models'
    /// answers by a test in `capabilities_tests`).
    fn capabilities(&self) -> capabilities::Capabilities;
    /// The JSON Schema of the family's params, generated by running
    /// [`Self::parse_params`] on `{}` with the reader recording every key it reads (its
    /// type, bounds and constant default) and the family's [`params::ParamsDoc`] (see
    /// [`params::record_schema`]). Nothing to write: it cannot drift from the parser.
    fn params_schema(&self) -> params::ParamsSchema {
        params::record_schema(&params::component_name(self.name()), || {
            let _ = self.parse_params(&serde_json::json!({}));
        })
    }
}

/// A document's prediction and the interval of each topic's proportion
/// ([`TopicModel::predict_with_intervals`]).
pub type PredictionWithIntervals = (DocPrediction, Vec<effects::Interval>);

/// Predictions of topic proportions alone (no labels), each with its intervals.
pub fn proportions_with_intervals(answers: Vec<effects::ProportionsWithIntervals>) -> Vec<PredictionWithIntervals> {
    answers.into_iter().map(|(t, i)| (DocPrediction { topic_proportions: t, labels: vec![], predicted_labels: vec![] }, i)).collect()
}

/// A fitted model.
pub trait TopicModel: Send + Sync {
    /// The family's wire name.
    fn family(&self) -> &'static str;
    /// Number of topics.
    fn num_topics(&self) -> usize;
    /// Posterior-mean word rates and exclusivities, one row per topic.
    fn topic_table(&self, options: &TableOptions) -> TopicTable;
    /// Topic proportions (and labels, for supervised models) for new documents.
    fn predict(&self, docs: &[EncodedDoc], options: &PredictOptions) -> Result<Vec<DocPrediction>, ModelError>;
    /// Fit diagnostics shown by `GET /v1/models/{id}` (plain JSON data).
    fn diagnostics(&self) -> serde_json::Value;
    /// A versioned binary encoding, decoded by [`ModelFamily::decode`].
    fn encode(&self) -> Vec<u8>;
    /// Bytes this decoded model holds on the heap, caches it has filled since included
    /// (counted with [`crate::heap_size`]): the server's model cache budgets by it.
    fn memory_bytes(&self) -> usize;

    /// A held-out likelihood estimator configured by `settings` (a setting this model's
    /// estimator does not take is an error naming it). `Ok(None)`: this model has no
    /// such estimator.
    fn heldout_scorer(&self, settings: &heldout::EstimatorSettings) -> Result<Option<Box<dyn heldout::DocScorer + '_>>, ParamError> {
        let _ = settings;
        Ok(None)
    }

    /// Names of the metadata features the model reads, in the order
    /// [`heldout::HeldoutDoc::features`] gives them (empty: the model reads none).
    fn feature_names(&self) -> Vec<String> {
        Vec::new()
    }

    /// How the topics' expected shares move with a covariate ([`effects`]); `Ok(None)`:
    /// this family has no effect estimator. `Err`: a question the model cannot answer
    /// (a covariate it does not read, a bad grid), naming what is wrong.
    fn effects(&self, query: &effects::EffectQuery) -> Result<Option<effects::Effects>, ModelError> {
        let _ = query;
        Ok(None)
    }

    /// Each document's prediction, as [`TopicModel::predict`] gives it with `options`,
    /// and the interval of every topic's proportion at `level` from the same inference
    /// (one fold-in or mode search per document, not two); `Ok(None)`: this family gives
    /// no intervals on predictions.
    fn predict_with_intervals(&self, docs: &[EncodedDoc], options: &PredictOptions, level: f64) -> Result<Option<Vec<PredictionWithIntervals>>, ModelError> {
        let _ = (docs, options, level);
        Ok(None)
    }

    /// One draw of the topic table from a kept sample (its job iteration and bytes, as
    /// the fit handed it over), for intervals on the summaries
    /// ([`crate::summaries::intervals`]); `Ok(None)`: this family keeps no samples to
    /// draw from. `Err`: bytes that are not one of this model's samples.
    fn topic_draw(&self, iteration: u64, sample: &[u8]) -> Result<Option<TopicTable>, ModelError> {
        let _ = (iteration, sample);
        Ok(None)
    }

    /// Monte Carlo covariance and correlation of topic weights (`draws` per document);
    /// `None` for models without correlated topics.
    fn correlations(&self, draws: usize, seed: u64) -> Option<TopicCorrelations> {
        let _ = (draws, seed);
        None
    }

    /// Score the model on the test split of the corpus it was fitted on (`seed` is the
    /// fit's, so the split is the fit's); `None` when the model has no such evaluation.
    fn evaluate_test_split(&self, corpus: &Corpus, seed: u64) -> Option<Result<serde_json::Value, FitError>> {
        let _ = (corpus, seed);
        None
    }

    /// The posterior-mean topic proportions of the training documents of `corpus` (the
    /// corpus it was fitted on, `seed` the fit's), for a model that keeps them; `None`
    /// otherwise (callers fold documents in through [`TopicModel::predict`]).
    fn training_proportions(&self, corpus: &Corpus, seed: u64) -> Option<DocumentProportions> {
        let _ = (corpus, seed);
        None
    }
}

/// Topic proportions of some corpus documents.
#[derive(Debug, Clone, PartialEq)]
pub struct DocumentProportions {
    /// Corpus indices of the documents, in row order.
    pub documents: Vec<usize>,
    /// `documents.len() × K`, row-major.
    pub rows: Vec<f64>,
}

/// Covariance of topic weights across documents' draws, with topic ids as in the
/// topic table.
#[derive(Debug, Clone, PartialEq)]
pub struct TopicCorrelations {
    pub num_topics: usize,
    /// Draws per document.
    pub draws: usize,
    /// Mean topic weights.
    pub mean: Vec<f64>,
    /// K × K row-major.
    pub covariance: Vec<f64>,
    /// K × K row-major; 0 where a topic's variance is 0.
    pub correlation: Vec<f64>,
    /// The model's own covariance of the latent activations behind the weights (for
    /// DCNT/SCNT Cov[v_d] = A Aᵀ + λ_v⁻¹ I), K × K row-major, and its correlation;
    /// `None` for a model without such a parameterisation.
    pub activation: Option<(Vec<f64>, Vec<f64>)>,
}

/// Which topics a word's exclusivity is measured against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Comparison {
    /// The model's natural set: siblings in a tree, every topic for flat models.
    #[default]
    Natural,
    /// Every topic.
    All,
}

#[derive(Debug, Clone, Default)]
pub struct TableOptions {
    pub comparison: Comparison,
}

/// Per-topic descriptive information.
#[derive(Debug, Clone, PartialEq)]
pub struct TopicInfo {
    /// The topic's label (supervised models), `None` for latent topics.
    pub label: Option<String>,
    /// Parent topic index in the label tree (`None` under the root or for flat models).
    pub parent: Option<usize>,
    pub children: Vec<usize>,
    /// Share of the corpus' tokens the topic carries (posterior mean).
    pub proportion: f64,
}

/// Frequency (β, rows = topics, columns = terms) and exclusivity tables.
#[derive(Debug, Clone)]
pub struct TopicTable {
    pub frequency: Array2<f64>,
    pub exclusivity: Array2<f64>,
    pub topics: Vec<TopicInfo>,
}

/// Options for prediction; every model reads what applies to it.
#[derive(Debug, Clone)]
pub struct PredictOptions {
    /// Fold-in sweeps per document (Gibbs-based models).
    pub iterations: usize,
    pub burn_in: usize,
    pub seed: u64,
}

impl Default for PredictOptions {
    fn default() -> Self {
        PredictOptions { iterations: 100, burn_in: 50, seed: 0 }
    }
}

/// One document's prediction.
#[derive(Debug, Clone, PartialEq)]
pub struct DocPrediction {
    pub topic_proportions: Vec<f64>,
    /// `(label, probability)` for supervised models; empty otherwise.
    pub labels: Vec<(String, f64)>,
    pub predicted_labels: Vec<String>,
}

/// A progress report from a running fit.
#[derive(Debug, Clone, Default)]
pub struct Progress {
    /// Sweeps completed.
    pub iteration: u64,
    pub total: u64,
    /// Log-likelihood per token, on the sweeps where it was computed.
    pub loglik_per_token: Option<f64>,
    /// Model-specific numbers (acceptance rates, active topics, ...).
    pub diagnostics: serde_json::Map<String, serde_json::Value>,
    /// The kind of step this was, for a family whose schedule mixes kinds of different
    /// cost (`None` for the others): what a client times steps by.
    pub kind: Option<StepKind>,
}

/// Kinds of step in a schedule that mixes them ([`chain::Chain::step_kind`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepKind {
    /// A step that reuses what the last costly one computed.
    Steady,
    /// A step that recomputes it (HPC's scans that refit the conditional modes and
    /// their Hessians).
    Refit,
}

/// Cooperative cancellation, shared between the runner and a fit.
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// What a fit may call back into: progress, cancellation, thinned samples, checkpoints.
pub struct FitContext<'a> {
    pub progress: &'a (dyn Fn(Progress) + Sync),
    pub cancel: &'a CancelToken,
    /// Receives each thinned posterior sample (iteration, model-specific encoding).
    pub sample: &'a (dyn Fn(u64, Vec<u8>) + Sync),
    /// Where checkpoints go and the one to resume from (fits on [`chain`] and [`passes`] only).
    pub checkpoint: Checkpointing<'a>,
}

/// A fit's checkpoints: how often it hands one over, who takes it, and the checkpoint
/// (as handed over earlier) it should resume from. The model layer only produces and
/// consumes the bytes; the runner stores them.
pub struct Checkpointing<'a> {
    /// Hand over a checkpoint when this long has passed since the last one (or the
    /// start); `None`: never.
    pub every: Option<std::time::Duration>,
    /// Receives (iteration completed, encoded checkpoint).
    pub save: &'a (dyn Fn(u64, Vec<u8>) + Sync),
    /// A checkpoint to continue from, if any.
    pub resume_from: Option<&'a [u8]>,
    /// Told whether `resume_from` was used or rejected.
    pub resumed: &'a (dyn Fn(chain::Resume) + Sync),
    /// Whether the taker is ready for another checkpoint. The runner says no while it is
    /// still storing the last one, and for `every` after that: a checkpoint that takes
    /// longer to store than the interval (gigabytes) must not queue the next whole state
    /// behind it, nor keep the disk busy all the time.
    pub ready: &'a (dyn Fn() -> bool + Sync),
}

/// A taker that is always ready for the next checkpoint ([`Checkpointing::ready`]).
pub const ALWAYS_READY: &(dyn Fn() -> bool + Sync) = &|| true;

impl Checkpointing<'static> {
    /// No checkpoints and nothing to resume.
    pub const OFF: Checkpointing<'static> = Checkpointing { every: None, save: &|_, _| {}, resume_from: None, resumed: &|_| {}, ready: ALWAYS_READY };
}

impl Checkpointing<'_> {
    /// Whether to hand over a checkpoint now, the last having been handed over (or the
    /// work started) at `last`: `every` has passed and the taker is ready.
    pub fn due(&self, last: std::time::Instant) -> bool {
        self.every.is_some_and(|every| last.elapsed() >= every) && (self.ready)()
    }
}

/// Checkpoints a recorded fit handed over: (iteration completed, bytes).
pub type SavedCheckpoints = Vec<(u64, Vec<u8>)>;

impl FitContext<'_> {
    /// A context that ignores progress and samples and is never cancelled.
    pub fn silent<R>(f: impl FnOnce(&FitContext) -> R) -> R {
        let cancel = CancelToken::new();
        let ctx = FitContext { progress: &|_| {}, cancel: &cancel, sample: &|_, _| {}, checkpoint: Checkpointing::OFF };
        f(&ctx)
    }

    /// Run `f` as one stage of a job made of several chains run one after another (HPC's
    /// refit on training and validation documents after its first chain): every
    /// iteration `f` reports (progress, samples, checkpoints, a resume) is shifted by
    /// `offset` and the progress' total is `total`, so the job's trace, the store's
    /// checkpoint iteration and its progress count through the stages as one sequence;
    /// `resume_from` replaces this context's checkpoint to resume from. Cancellation and
    /// the checkpoint interval are this context's.
    pub fn stage<R>(&self, offset: u64, total: u64, resume_from: Option<&[u8]>, f: impl FnOnce(&FitContext) -> R) -> R {
        let progress = |mut p: Progress| {
            p.iteration += offset;
            p.total = total;
            (self.progress)(p)
        };
        let sample = |it: u64, bytes: Vec<u8>| (self.sample)(it + offset, bytes);
        let save = |it: u64, bytes: Vec<u8>| (self.checkpoint.save)(it + offset, bytes);
        let resumed = |r: chain::Resume| {
            (self.checkpoint.resumed)(match r {
                chain::Resume::From(it) => chain::Resume::From(it + offset),
                rejected => rejected,
            })
        };
        let ctx = FitContext {
            progress: &progress,
            cancel: self.cancel,
            sample: &sample,
            checkpoint: Checkpointing { every: self.checkpoint.every, save: &save, resume_from, resumed: &resumed, ready: self.checkpoint.ready },
        };
        f(&ctx)
    }

    /// A context like [`FitContext::silent`] that asks for a checkpoint after every
    /// iteration and hands `resume` (if any) to the fit; returns `f`'s result, the
    /// checkpoints handed over as (iteration, bytes), and what became of `resume`.
    /// (Tests, and the fuzz targets' valid checkpoints.)
    pub fn recording<R>(resume: Option<&[u8]>, f: impl FnOnce(&FitContext) -> R) -> (R, SavedCheckpoints, Vec<chain::Resume>) {
        let saved = std::sync::Mutex::new(Vec::new());
        let resumed = std::sync::Mutex::new(Vec::new());
        let cancel = CancelToken::new();
        let ctx = FitContext {
            progress: &|_| {},
            cancel: &cancel,
            sample: &|_, _| {},
            checkpoint: Checkpointing {
                every: Some(std::time::Duration::ZERO),
                save: &|it, bytes| saved.lock().unwrap().push((it, bytes)),
                resume_from: resume,
                resumed: &|r| resumed.lock().unwrap().push(r),
                ready: ALWAYS_READY,
            },
        };
        let out = f(&ctx);
        (out, saved.into_inner().unwrap(), resumed.into_inner().unwrap())
    }
}

/// Why a fit or an evaluation stopped without a result, in the terms its caller acts
/// on: the user fixes an invalid input, retries a store fault, and reports an internal
/// error; [`FitError::kind`] names which, for the job record and `/metrics`.
#[derive(Debug, thiserror::Error)]
pub enum FitError {
    /// Stopped on request (a cancel, a shutdown, a lost lease).
    #[error("cancelled")]
    Cancelled,
    /// A parameter is out of its range for this input.
    #[error(transparent)]
    Params(#[from] ParamError),
    /// The input cannot be fitted as asked: a labelled model on an unlabelled corpus, too
    /// few documents, an input deleted before the job ran. The user's to fix.
    #[error("{0}")]
    InvalidInput(String),
    /// The store could not be read or written. Retrying the job may succeed.
    #[error("{0}")]
    Store(String),
    /// The sampler or the objective reached a non-finite value.
    #[error("{0}")]
    Numerical(String),
    /// A bug or a corrupt stored blob: a panic, a state the code should never reach.
    #[error("{0}")]
    Internal(String),
    /// The fit's processes ended before it did (a rank of a distributed fit died, a
    /// host was lost): retrying resumes from its last checkpoint.
    #[error("{0}")]
    Interrupted(String),
}

/// The class of a failed job, as the job record and `/metrics` name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    InvalidInput,
    StoreFault,
    Interrupted,
    Numerical,
    Internal,
}

impl FailureKind {
    pub const ALL: [FailureKind; 5] =
        [FailureKind::InvalidInput, FailureKind::StoreFault, FailureKind::Interrupted, FailureKind::Numerical, FailureKind::Internal];

    /// The wire name (`failure` on a job, the `kind` label in `/metrics`).
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::InvalidInput => "invalid-input",
            FailureKind::StoreFault => "store-fault",
            FailureKind::Interrupted => "interrupted",
            FailureKind::Numerical => "numerical",
            FailureKind::Internal => "internal",
        }
    }

    pub fn parse(s: &str) -> Option<FailureKind> {
        FailureKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

impl FitError {
    /// The class of this failure.
    pub fn kind(&self) -> FailureKind {
        match self {
            FitError::Cancelled | FitError::Interrupted(_) => FailureKind::Interrupted,
            FitError::Params(_) | FitError::InvalidInput(_) => FailureKind::InvalidInput,
            FitError::Store(_) => FailureKind::StoreFault,
            FitError::Numerical(_) => FailureKind::Numerical,
            FitError::Internal(_) => FailureKind::Internal,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("stored model could not be decoded: {0}")]
    Decode(String),
    #[error("{0}")]
    Invalid(String),
    /// The model cannot answer this kind of question at all, whatever is asked (e.g.
    /// effects of a model fitted without covariates): a property of the model, not of
    /// the request.
    #[error("{0}")]
    NotOffered(String),
}
