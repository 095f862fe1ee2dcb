//! The contract every topic model family keeps: [`ModelFamily`] (typed params, fit,
//! decode) and the fitted [`TopicModel`] (topic tables, predictions, encoding), with
//! the plain types their answers are made of.
//!
//! Why it exists: the job runner, the store and the HTTP API treat every family the same
//! way through these two traits; the registry erases them ([`super::erased`]).

use super::{capabilities, effects, heldout, params, FitContext, FitError, ModelError, ParamError};
use crate::corpus::lexicon::EncodedDoc;
use crate::corpus::{Corpus, CorpusStats};
use crate::ranks::Ranks;
use ndarray::Array2;

/// A kind of topic model, typed: its own parameters, checked once and carried as
/// [`Self::Params`] from submit to fit. The registry sees it through
/// [`super::erased::TopicEntry`] (implemented for every `ModelFamily`), which binds parsed
/// params to their family ([`super::FitParams`]) so nothing past the edge reads JSON or
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
    /// takes them out first ([`super::options::JobOptions::take_from`]).
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
    /// Formulas and their measured accuracy: [`super::memory`].
    fn fit_memory(&self, corpus: &CorpusStats, params: &Self::Params, threads: usize) -> u64;
    /// Fit on `corpus`. Must poll `ctx.cancel` at least once per sweep.
    fn fit(&self, corpus: &Corpus, params: &Self::Params, seed: u64, ctx: &FitContext) -> Result<Box<dyn TopicModel>, FitError>;
    /// Fit over the ranks of a distributed fit ([`crate::ranks`]): rank 0 holds the
    /// corpus and hands each rank its shard; rank 0 returns the model [`Self::fit`]
    /// would, byte for byte, the other ranks `None`. Every rank gets the same error. A
    /// family that cannot run over ranks says so as a parameter error naming `ranks`.
    fn fit_ranked(&self, corpus: Option<Corpus>, params: &Self::Params, seed: u64, ctx: &FitContext, ranks: &dyn Ranks) -> Result<RankedModel, FitError> {
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
    /// The seeded topics `params` ask for ([`super::seeds`]): checked against the
    /// corpus' vocabulary at submit, and their names given to the fitted model's topics.
    /// Families without seeds have none.
    fn seeds(&self, params: &Self::Params) -> super::seeds::SeedWords {
        let _ = params;
        super::seeds::SeedWords::default()
    }
    /// The params of a refit of a model fitted with `parent`, edited by `plan`, for
    /// `iterations` sweeps ([`super::edits`]): the parent's params with the child's
    /// number of topics and that schedule. A family that cannot refit from an edit
    /// refuses (the error names `model`; its capabilities say `edits: false`).
    fn edited_params(&self, parent: &Self::Params, plan: &super::edits::EditPlan, iterations: usize) -> Result<Self::Params, ParamError> {
        let _ = (parent, plan, iterations);
        Err(ParamError::new("model", format!("{} models cannot be edited", self.name())))
    }
    /// Refit on `corpus` from `start.parent` (a model of this family, as stored) with
    /// `start.plan` done on its state, under params from [`Self::edited_params`].
    fn fit_edited(&self, corpus: &Corpus, params: &Self::Params, start: &EditStart<'_>, seed: u64, ctx: &FitContext) -> Result<Box<dyn TopicModel>, FitError> {
        let _ = (corpus, params, start, seed, ctx);
        Err(FitError::Params(ParamError::new("model", format!("{} models cannot be edited", self.name()))))
    }
    /// The params of an update of a model fitted with `parent` ([`super::updates`]):
    /// the parent's params with `new_topics` more topics and `iterations` sweeps. A
    /// family that cannot update refuses (the error names `model`; its capabilities
    /// say `updates: false`).
    fn updated_params(&self, parent: &Self::Params, new_topics: usize, iterations: usize) -> Result<Self::Params, ParamError> {
        let _ = (parent, new_topics, iterations);
        Err(ParamError::new("model", format!("{} models cannot be updated", self.name())))
    }
    /// Fit `corpus` (the parent's documents first, then the new ones) from
    /// `start.parent`'s state, under params from [`Self::updated_params`].
    fn fit_updated(
        &self,
        corpus: &Corpus,
        params: &Self::Params,
        start: &UpdateStart<'_>,
        seed: u64,
        ctx: &FitContext,
    ) -> Result<Box<dyn TopicModel>, FitError> {
        let _ = (corpus, params, start, seed, ctx);
        Err(FitError::Params(ParamError::new("model", format!("{} models cannot be updated", self.name()))))
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

/// Where an edit's refit starts ([`ModelFamily::fit_edited`]).
pub struct EditStart<'a> {
    /// The parent model's stored bytes.
    pub parent: &'a [u8],
    /// The edit, checked against the parent.
    pub plan: &'a super::edits::EditPlan,
    /// The seed the parent was fitted with, which drew its held-out split: the refit
    /// trains on the same documents.
    pub split_seed: u64,
}

/// Where an update's fit starts ([`ModelFamily::fit_updated`]).
pub struct UpdateStart<'a> {
    /// The parent model's stored bytes.
    pub parent: &'a [u8],
    /// How many of the corpus' first documents the parent held (in its order).
    pub parent_documents: usize,
    /// Topics added empty after the parent's.
    pub new_topics: usize,
    /// The seed that drew the parent's held-out split: its documents keep their side.
    pub split_seed: u64,
}

/// What a fit over ranks ends in ([`ModelFamily::fit_ranked`]): rank 0's model, `None`
/// on the other ranks.
pub type RankedModel = Option<Box<dyn TopicModel>>;

/// A document's prediction and the interval of each topic's proportion
/// ([`TopicModel::predict_with_intervals`]).
pub type PredictionWithIntervals = (DocPrediction, Vec<effects::Interval>);

/// Predictions of topic proportions alone (no labels), each with its intervals.
pub fn proportions_with_intervals(answers: Vec<effects::ProportionsWithIntervals>) -> Vec<PredictionWithIntervals> {
    answers.into_iter().map(|(t, i)| (DocPrediction::proportions(t), i)).collect()
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
    /// ([`crate::summaries::intervals`]), with the topics it stands for; `Ok(None)`:
    /// this family keeps no samples to draw from. `Err`: bytes that are not one of this
    /// model's samples.
    fn topic_draw(&self, iteration: u64, sample: &[u8]) -> Result<Option<TopicDraw>, ModelError> {
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

    /// Each served topic's stability across the fit's chains ([`super::stability`]);
    /// `None` for a one-chain fit, and for a family whose topics are not matched
    /// across chains (HPC's are its labels, the same in every chain).
    fn topic_stability(&self) -> Option<Vec<super::stability::TopicStability>> {
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

/// One kept sample read as a table of the model's topics ([`TopicModel::topic_draw`]).
#[derive(Debug, Clone)]
pub struct TopicDraw {
    pub table: TopicTable,
    /// Per topic of the model, whether the sample's chain is among those its point
    /// estimates pool: false where that chain found a different topic in its place
    /// ([`super::consensus::chain_pools`]), so the topic's intervals leave this draw out
    /// as its served numbers leave the chain out.
    pub pooled: Vec<bool>,
}

impl TopicDraw {
    /// A draw that stands for every topic (a one-chain fit, or a chain pooled into all).
    pub fn of_every_topic(table: TopicTable) -> TopicDraw {
        let pooled = vec![true; table.topics.len()];
        TopicDraw { table, pooled }
    }
}

/// Frequency (β, rows = topics, columns = terms) and exclusivity tables.
#[derive(Debug, Clone)]
pub struct TopicTable {
    pub frequency: Array2<f64>,
    pub exclusivity: Array2<f64>,
    pub topics: Vec<TopicInfo>,
}

impl TopicTable {
    /// The table of a flat model (no labels, no tree): `frequency` (K × V), each word's
    /// exclusivity among all K topics, and each topic's share of the tokens.
    pub fn flat(frequency: Array2<f64>, shares: &[f64]) -> TopicTable {
        let exclusivity = super::exclusivity::topic_given_word(&frequency, shares);
        let topics = shares.iter().map(|&proportion| TopicInfo { label: None, parent: None, children: vec![], proportion }).collect();
        TopicTable { frequency, exclusivity, topics }
    }

    /// [`TopicTable::flat`] of `rows`, K × V row-major (a stored model's word rates).
    pub fn flat_rows(topics: usize, terms: usize, rows: Vec<f64>, shares: &[f64]) -> TopicTable {
        Self::flat(Array2::from_shape_vec((topics, terms), rows).expect("K × V rows, as stored with the model"), shares)
    }
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

impl DocPrediction {
    /// A prediction of topic proportions alone (a model without labels).
    pub fn proportions(topic_proportions: Vec<f64>) -> DocPrediction {
        DocPrediction { topic_proportions, labels: vec![], predicted_labels: vec![] }
    }
}
