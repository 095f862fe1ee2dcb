//! LDA's job parameters, their defaults and their limits.

use crate::models::chain::Schedule;
use crate::models::design::DesignRequest;
use crate::models::params::{ParamError, ParamReader, ParamsDoc};
use crate::models::seeds::{MissingSeedWords, SeedTopic, SeedWords};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// LDA's parameters as encoded by models of format version 2 (before held-out splits);
/// decoded and upgraded by [`super::LdaModel::decode`].
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(test, derive(Serialize))]
pub(crate) struct LdaParamsV2 {
    pub topics: usize,
    pub alpha: f64,
    pub beta: f64,
    pub iterations: usize,
    pub burn_in: usize,
    pub thin: usize,
    pub sync_tokens: usize,
    pub loglik_every: usize,
    pub threads: usize,
}

impl From<LdaParamsV2> for LdaParamsV3 {
    fn from(p: LdaParamsV2) -> Self {
        let chib = super::heldout::ChibSettings::default();
        LdaParamsV3 {
            topics: p.topics,
            alpha: p.alpha,
            beta: p.beta,
            iterations: p.iterations,
            burn_in: p.burn_in,
            thin: p.thin,
            sync_tokens: p.sync_tokens,
            loglik_every: p.loglik_every,
            threads: p.threads,
            test_fraction: 0.0,
            heldout_burn_in: chib.burn_in,
            heldout_chain_length: chib.chain_length,
        }
    }
}

/// LDA's parameters as encoded by models of format version 3 (before hyperparameter
/// optimisation); decoded and upgraded by [`super::LdaModel::decode`].
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(test, derive(Serialize))]
pub(crate) struct LdaParamsV3 {
    pub topics: usize,
    pub alpha: f64,
    pub beta: f64,
    pub iterations: usize,
    pub burn_in: usize,
    pub thin: usize,
    pub sync_tokens: usize,
    pub loglik_every: usize,
    /// The job's thread count: read to pass over its bytes, never used.
    #[allow(dead_code)]
    pub threads: usize,
    pub test_fraction: f64,
    pub heldout_burn_in: usize,
    pub heldout_chain_length: usize,
}

impl From<LdaParamsV3> for LdaParams {
    fn from(p: LdaParamsV3) -> Self {
        LdaParams {
            topics: p.topics,
            alpha: p.alpha,
            beta: p.beta,
            iterations: p.iterations,
            burn_in: p.burn_in,
            thin: p.thin,
            sync_tokens: p.sync_tokens,
            loglik_every: p.loglik_every,
            test_fraction: p.test_fraction,
            heldout_burn_in: p.heldout_burn_in,
            heldout_chain_length: p.heldout_chain_length,
            optimize_interval: 0,
            optimize_burn_in: 0,
            optimize_beta: false,
            chains: 1,
            covariates: Vec::new(),
            reference: BTreeMap::new(),
            splines: BTreeMap::new(),
            keep_draws: 0,
            seed_words: Vec::new(),
            seed_strength: crate::models::seeds::DEFAULT_STRENGTH,
            missing_seed_words: MissingSeedWords::Reject,
        }
    }
}

/// LDA's parameters as encoded by models of format version 4 (which kept the job's
/// `threads`, always 0 once the runner took it from the job's options); decoded and
/// upgraded by [`super::LdaModel::decode`].
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(test, derive(Serialize))]
pub(crate) struct LdaParamsV4 {
    pub topics: usize,
    pub alpha: f64,
    pub beta: f64,
    pub iterations: usize,
    pub burn_in: usize,
    pub thin: usize,
    pub sync_tokens: usize,
    pub loglik_every: usize,
    /// The job's thread count: read to pass over its bytes, never used.
    #[allow(dead_code)]
    pub threads: usize,
    pub test_fraction: f64,
    pub heldout_burn_in: usize,
    pub heldout_chain_length: usize,
    pub optimize_interval: usize,
    pub optimize_burn_in: usize,
    pub optimize_beta: bool,
}

impl From<LdaParamsV4> for LdaParams {
    fn from(p: LdaParamsV4) -> Self {
        LdaParams {
            topics: p.topics,
            alpha: p.alpha,
            beta: p.beta,
            iterations: p.iterations,
            burn_in: p.burn_in,
            thin: p.thin,
            sync_tokens: p.sync_tokens,
            loglik_every: p.loglik_every,
            test_fraction: p.test_fraction,
            heldout_burn_in: p.heldout_burn_in,
            heldout_chain_length: p.heldout_chain_length,
            optimize_interval: p.optimize_interval,
            optimize_burn_in: p.optimize_burn_in,
            optimize_beta: p.optimize_beta,
            chains: 1,
            covariates: Vec::new(),
            reference: BTreeMap::new(),
            splines: BTreeMap::new(),
            keep_draws: 0,
            seed_words: Vec::new(),
            seed_strength: crate::models::seeds::DEFAULT_STRENGTH,
            missing_seed_words: MissingSeedWords::Reject,
        }
    }
}

/// LDA's parameters as encoded by models of format version 5 (one chain per fit);
/// decoded and upgraded by [`super::LdaModel::decode`].
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(test, derive(Serialize))]
pub(crate) struct LdaParamsV5 {
    pub topics: usize,
    pub alpha: f64,
    pub beta: f64,
    pub iterations: usize,
    pub burn_in: usize,
    pub thin: usize,
    pub sync_tokens: usize,
    pub loglik_every: usize,
    pub test_fraction: f64,
    pub heldout_burn_in: usize,
    pub heldout_chain_length: usize,
    pub optimize_interval: usize,
    pub optimize_burn_in: usize,
    pub optimize_beta: bool,
}

impl From<LdaParamsV5> for LdaParams {
    fn from(p: LdaParamsV5) -> Self {
        LdaParams {
            topics: p.topics,
            alpha: p.alpha,
            beta: p.beta,
            iterations: p.iterations,
            burn_in: p.burn_in,
            thin: p.thin,
            sync_tokens: p.sync_tokens,
            loglik_every: p.loglik_every,
            test_fraction: p.test_fraction,
            heldout_burn_in: p.heldout_burn_in,
            heldout_chain_length: p.heldout_chain_length,
            optimize_interval: p.optimize_interval,
            optimize_burn_in: p.optimize_burn_in,
            optimize_beta: p.optimize_beta,
            chains: 1,
            covariates: Vec::new(),
            reference: BTreeMap::new(),
            splines: BTreeMap::new(),
            keep_draws: 0,
            seed_words: Vec::new(),
            seed_strength: crate::models::seeds::DEFAULT_STRENGTH,
            missing_seed_words: MissingSeedWords::Reject,
        }
    }
}

#[cfg(test)]
impl From<&LdaParams> for LdaParamsV5 {
    /// The version 5 layout of one chain's parameters.
    fn from(p: &LdaParams) -> Self {
        assert_eq!(p.chains, 1, "version 5 had one chain");
        LdaParamsV5 {
            topics: p.topics,
            alpha: p.alpha,
            beta: p.beta,
            iterations: p.iterations,
            burn_in: p.burn_in,
            thin: p.thin,
            sync_tokens: p.sync_tokens,
            loglik_every: p.loglik_every,
            test_fraction: p.test_fraction,
            heldout_burn_in: p.heldout_burn_in,
            heldout_chain_length: p.heldout_chain_length,
            optimize_interval: p.optimize_interval,
            optimize_burn_in: p.optimize_burn_in,
            optimize_beta: p.optimize_beta,
        }
    }
}

#[cfg(test)]
impl From<&LdaParams> for LdaParamsV4 {
    /// The version 4 layout of current parameters (`threads` 0, as every job's was).
    fn from(p: &LdaParams) -> Self {
        LdaParamsV4 {
            topics: p.topics,
            alpha: p.alpha,
            beta: p.beta,
            iterations: p.iterations,
            burn_in: p.burn_in,
            thin: p.thin,
            sync_tokens: p.sync_tokens,
            loglik_every: p.loglik_every,
            threads: 0,
            test_fraction: p.test_fraction,
            heldout_burn_in: p.heldout_burn_in,
            heldout_chain_length: p.heldout_chain_length,
            optimize_interval: p.optimize_interval,
            optimize_burn_in: p.optimize_burn_in,
            optimize_beta: p.optimize_beta,
        }
    }
}

/// Largest K accepted (topic ids are stored as `u16` in thinned samples).
pub const MAX_TOPICS: u64 = 10_000;
/// Most sweeps a fit runs (`burn_in` is below it).
pub const MAX_ITERATIONS: u64 = 1_000_000;

/// The descriptions of the LdaParams schema (`GET /v1/families`, OpenAPI), in a form's order.
pub(crate) const DOC: ParamsDoc = ParamsDoc {
    component: "LdaParams",
    description: r#"Parameters of a collapsed-Gibbs LDA fit (sparse exact sampler, counts synchronised between blocks of documents). A null value means the default."#,
    basic: &["topics", "iterations", "burn_in", "chains", "test_fraction", "seed_words", "covariates", "reference", "splines"],
    keys: &[
        ("topics", r#"K, the number of topics."#),
        ("alpha", r#"Symmetric document-topic prior; default 50/K (Griffiths & Steyvers)."#),
        ("beta", r#"Symmetric topic-word prior."#),
        ("iterations", r#"Sweeps over the corpus."#),
        ("burn_in", r#"Sweeps discarded before posterior means are accumulated; less than `iterations`, default iterations/2."#),
        ("thin", r#"Keep every `thin`-th sweep after burn-in; default min(10, iterations - burn_in)."#),
        (
            "sync_tokens",
            r#"Tokens per synchronisation block of the sparse sampler (K > 256; the dense sampler's partitioned schedule ignores it). Documents of a block are sampled in parallel against topic-word counts refreshed at the block's start; smaller means fresher counts and more refresh work. Never depends on the thread count."#,
        ),
        ("loglik_every", r#"Compute the log-likelihood every this many sweeps (and on the first and last)."#),
        (
            "test_fraction",
            r#"Share of documents held out by the seed when the corpus has no `split` tags (documents tagged `test` are held out otherwise). Held-out documents are scored by the Chib-style estimator at the end of the fit (`diagnostics.heldout`)."#,
        ),
        ("heldout_burn_in", r#"Gibbs sweeps before iterated conditional modes pick z* for that estimate."#),
        (
            "heldout_chain_length",
            r#"S, the transition chain's length for that estimate; 0: no estimate at the fit's end (the documents are still held out; `POST /v1/models/{id}/heldout-likelihood` scores them later). A sweep's LDA fits default to 0: its rows are scored by document completion."#,
        ),
        (
            "optimize_interval",
            r#"Re-estimate an asymmetric α (one α_k per topic, starting from `alpha`) after every this many sweeps once past `optimize_burn_in`, by Minka's fixed point (the maximiser of p(z | α) for the current assignments), as MALLET's `--optimize-interval` and tomotopy's `optim_interval`. 0 keeps α fixed and symmetric. The fitted values are in the model's `diagnostics.fitted_alpha`; prediction and held-out scoring use them."#,
        ),
        (
            "optimize_burn_in",
            r#"Sweeps before the first re-estimation (it happens after sweep `it` when `it > optimize_burn_in` and `it` is a multiple of `optimize_interval`)."#,
        ),
        ("optimize_beta", r#"Also re-estimate a symmetric β at the same sweeps (`diagnostics.fitted_beta`). Needs `optimize_interval` > 0."#),
        (
            "covariates",
            r#"Corpus covariates for covariate effects by the method of composition (`/effects` with `"method": "composition"`, as stm's `estimateEffect`): the design is built as DCNT builds its φ (an intercept, continuous covariates as themselves or B-spline columns, categorical ones as indicators but the reference); every document must give each. They do not change the topics. A covariate the corpus lacks is a 422 naming `params.covariates`."#,
        ),
        ("reference", r#"Reference level per categorical covariate of `covariates` (default the most frequent level)."#),
        ("splines", r#"Cubic B-spline columns per continuous covariate of `covariates` (`{"year": 5}`)."#),
        (
            "keep_draws",
            r#"Draws of the training documents' topic proportions the model keeps for `/effects` (default 20 with `covariates`, else 0; spread over the kept sweeps of every chain), fewer when they would pass 64 MB (each is D × K × 4 bytes: 2 000 documents of K = 20 take 160 KB)."#,
        ),
        (
            "chains",
            r#"Independent chains, run one after another (each `iterations` long; the job's progress counts through all of them) from seeds derived from the job's (chain 0 uses the job's seed, so `chains: 1` is the usual fit). The model serves the topics of the chain the others agree with most (`diagnostics.reference_chain`; of two chains, the one with the higher log joint); the other chains' topics are matched to its topics by the assignment that minimises the summed L1 distance of their word distributions (`diagnostics.chain_alignment`), and each topic's posterior means are pooled over the chains that found it (matched at similarity 0.8 or more). `diagnostics.convergence` compares the chains (split-R̂). DCNT, SCNT, HPC and PCM take it too (`DcntParams`, `HpcParams`); the HDP families accept only 1."#,
        ),
        (
            "seed_words",
            r#"Seeded (keyword-assisted) topics, `[{"name": "games", "words": ["game", "play", "player"]}, ...]`: topic i is the i-th seed and is served under its name. Each seed word w of a seeded topic adds ⌈seed_strength · n_w⌉ pseudo-counts (n_w: its training tokens) to that topic's count of w for the whole fit, raising the word's weight there without lowering the topic's other words (a prior that stays, not only a start: a fresh chain reaches it over the first third of `burn_in` and starts a seed word's tokens in its topic in the documents holding two of the seed's words); the served word distributions are the data's. Words are normalised as the corpus' were; one the vocabulary lacks is a 422 naming it unless `missing_seed_words` is `ignore`. At most `topics` seeds."#,
        ),
        (
            "seed_strength",
            r#"Pseudo-counts each seed word adds to its seeded topic, as a share of the word's training tokens: at 1 a seeded topic weighs the word at least as a topic holding all its tokens would, so the documents decide between them; higher wins it more often, lower is a gentler nudge."#,
        ),
        (
            "missing_seed_words",
            r#"`reject` (a seed word the vocabulary lacks is a 422 naming it) or `ignore` (it is left out and listed in the model's `diagnostics.seeds.missing_words`)."#,
        ),
    ],
};

/// LDA's parameters as encoded by models of format version 6 (before seeded topics);
/// decoded and upgraded by [`super::LdaModel::decode`].
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(test, derive(Serialize))]
pub(crate) struct LdaParamsV6 {
    pub topics: usize,
    pub alpha: f64,
    pub beta: f64,
    pub iterations: usize,
    pub burn_in: usize,
    pub thin: usize,
    pub sync_tokens: usize,
    pub loglik_every: usize,
    pub test_fraction: f64,
    pub heldout_burn_in: usize,
    pub heldout_chain_length: usize,
    pub optimize_interval: usize,
    pub optimize_burn_in: usize,
    pub optimize_beta: bool,
    pub chains: usize,
    pub covariates: Vec<String>,
    pub reference: BTreeMap<String, String>,
    pub splines: BTreeMap<String, usize>,
    pub keep_draws: usize,
}

impl From<LdaParamsV6> for LdaParams {
    fn from(p: LdaParamsV6) -> Self {
        LdaParams {
            topics: p.topics,
            alpha: p.alpha,
            beta: p.beta,
            iterations: p.iterations,
            burn_in: p.burn_in,
            thin: p.thin,
            sync_tokens: p.sync_tokens,
            loglik_every: p.loglik_every,
            test_fraction: p.test_fraction,
            heldout_burn_in: p.heldout_burn_in,
            heldout_chain_length: p.heldout_chain_length,
            optimize_interval: p.optimize_interval,
            optimize_burn_in: p.optimize_burn_in,
            optimize_beta: p.optimize_beta,
            chains: p.chains,
            covariates: p.covariates,
            reference: p.reference,
            splines: p.splines,
            keep_draws: p.keep_draws,
            seed_words: Vec::new(),
            seed_strength: crate::models::seeds::DEFAULT_STRENGTH,
            missing_seed_words: MissingSeedWords::Reject,
        }
    }
}

#[cfg(test)]
impl From<&LdaParams> for LdaParamsV6 {
    /// The version 6 layout of unseeded parameters.
    fn from(p: &LdaParams) -> Self {
        assert!(p.seed_words.is_empty(), "version 6 had no seeds");
        LdaParamsV6 {
            topics: p.topics,
            alpha: p.alpha,
            beta: p.beta,
            iterations: p.iterations,
            burn_in: p.burn_in,
            thin: p.thin,
            sync_tokens: p.sync_tokens,
            loglik_every: p.loglik_every,
            test_fraction: p.test_fraction,
            heldout_burn_in: p.heldout_burn_in,
            heldout_chain_length: p.heldout_chain_length,
            optimize_interval: p.optimize_interval,
            optimize_burn_in: p.optimize_burn_in,
            optimize_beta: p.optimize_beta,
            chains: p.chains,
            covariates: p.covariates.clone(),
            reference: p.reference.clone(),
            splines: p.splines.clone(),
            keep_draws: p.keep_draws,
        }
    }
}

/// Parameters of a collapsed-Gibbs LDA fit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LdaParams {
    /// K, the number of topics.
    pub topics: usize,
    /// Symmetric document-topic prior α (default 50/K, Griffiths & Steyvers).
    pub alpha: f64,
    /// Symmetric topic-word prior β (default 0.01).
    pub beta: f64,
    /// Sweeps over the corpus.
    pub iterations: usize,
    /// Sweeps discarded before posterior means are accumulated (default iterations/2).
    pub burn_in: usize,
    /// Keep every `thin`-th sweep after burn-in (default 10, at most what remains).
    pub thin: usize,
    /// Tokens per synchronisation block of the sparse sampler (K above
    /// `sampler::DENSE_MAX_TOPICS`): documents in a block are sampled in parallel against
    /// counts refreshed at the block's start (smaller = fresher counts, more refresh
    /// work). Never changes with the thread count. The dense sampler's partitioned
    /// schedule sizes its grid from the corpus and ignores it.
    pub sync_tokens: usize,
    /// Compute the log-likelihood every this many sweeps (and on the last one).
    pub loglik_every: usize,
    /// Share of documents held out (by the seed) when the corpus has no `split` tags;
    /// held-out documents are scored by the Chib-style estimator at the end of the fit.
    pub test_fraction: f64,
    /// Settings of that estimator: Gibbs sweeps before ICM, and the chain length S.
    pub heldout_burn_in: usize,
    pub heldout_chain_length: usize,
    /// Re-estimate an asymmetric α (one α_k per topic, starting from `alpha`) by Minka's
    /// fixed point after every this many sweeps, as MALLET's `--optimize-interval` and
    /// tomotopy's `optim_interval`; 0 (the default) keeps α fixed and symmetric.
    pub optimize_interval: usize,
    /// Sweeps before the first optimisation: α is re-estimated after sweep `it` when
    /// `it > optimize_burn_in` and `it` is a multiple of `optimize_interval` (default 0,
    /// as tomotopy's `burn_in`).
    pub optimize_burn_in: usize,
    /// Also re-estimate a symmetric β at the same sweeps (default false; tomotopy keeps
    /// its η fixed).
    pub optimize_beta: bool,
    /// Independent chains run one after another from seeds derived from the job's
    /// (default 1, at most [`crate::models::chains::MAX_CHAINS`]); their topics are
    /// matched to the first chain's and their posterior means pooled, and split-R̂
    /// compares them.
    pub chains: usize,
    /// Covariates of the corpus the fit reads for covariate effects by the method of
    /// composition (`/effects`), with reference levels and spline expansions as DCNT
    /// reads them ([`crate::models::design`]); they do not change the topics.
    pub covariates: Vec<String>,
    pub reference: BTreeMap<String, String>,
    pub splines: BTreeMap<String, usize>,
    /// Draws of the training documents' topic proportions kept for those effects (default
    /// [`DEFAULT_KEEP_DRAWS`] with covariates, else 0), spread over the kept sweeps of
    /// every chain; fewer when they would pass
    /// [`crate::models::composition::THETA_DRAWS_BYTES`].
    pub keep_draws: usize,
    /// Seeded topics: topic i is the i-th seed, its words given an asymmetric prior for
    /// the whole fit ([`crate::models::seeds`]); empty: no seeds.
    pub seed_words: Vec<SeedTopic>,
    /// The seeds' pseudo-counts per seed word, as a share of its training tokens.
    pub seed_strength: f64,
    /// Whether a seed word the vocabulary lacks refuses the fit or is left out.
    pub missing_seed_words: MissingSeedWords,
}

pub use crate::models::composition::DEFAULT_KEEP_DRAWS;

impl LdaParams {
    /// Parse and check `params`; every error names its field.
    pub fn from_json(params: &Value) -> Result<Self, ParamError> {
        let mut r = ParamReader::new(params)?.described_by(&DOC);
        let topics = r.uint_in_or("topics", 1, MAX_TOPICS, 20)? as usize;
        let alpha = r.concentration("alpha")?.unwrap_or(50.0 / topics as f64);
        let beta = r.concentration_or("beta", 0.01)?;
        let iterations = r.uint_in_or("iterations", 1, MAX_ITERATIONS, 200)? as usize;
        let burn_in = r.uint_in("burn_in", 0, MAX_ITERATIONS - 1)?.map(|b| b as usize);
        let burn_in = match burn_in {
            Some(b) if b >= iterations => return Err(ParamError::new("burn_in", format!("must be less than iterations ({iterations}), got {b}"))),
            Some(b) => b,
            None => iterations / 2,
        };
        let thin = r.uint_in("thin", 1, 1_000_000)?.map(|t| t as usize).unwrap_or_else(|| 10.min(iterations - burn_in));
        let sync_tokens = r.uint_in_or("sync_tokens", 1, 1 << 40, 32_768)? as usize;
        let loglik_every = r.uint_in_or("loglik_every", 1, 1_000_000, 10)? as usize;
        let test_fraction = r.fraction_or("test_fraction", 1.0, 0.0)?;
        let chib = super::heldout::ChibSettings::default();
        let heldout_burn_in = r.uint_in_or("heldout_burn_in", 0, 1_000_000, chib.burn_in as u64)? as usize;
        let heldout_chain_length = r.uint_in_or("heldout_chain_length", 0, 1_000_000, chib.chain_length as u64)? as usize;
        let optimize_interval = r.uint_in_or("optimize_interval", 0, 1_000_000, 0)? as usize;
        let optimize_burn_in = r.uint_in_or("optimize_burn_in", 0, 1_000_000, 0)? as usize;
        let optimize_beta = r.boolean_or("optimize_beta", false)?;
        let chains = r.uint_in_or("chains", 1, crate::models::chains::MAX_CHAINS as u64, 1)? as usize;
        let covariates = r.string_list_or_empty("covariates")?;
        let reference = r.string_map_or_empty("reference")?;
        let splines = DesignRequest::read_splines(&mut r)?;
        let default_draws = if covariates.is_empty() { 0 } else { DEFAULT_KEEP_DRAWS };
        let keep_draws = r.uint_in("keep_draws", 0, 10_000)?.map_or(default_draws, |x| x as usize);
        let seeds = SeedWords::read(&mut r, topics)?;
        if optimize_beta && optimize_interval == 0 {
            return Err(ParamError::new("optimize_beta", "needs optimize_interval > 0 (β is re-estimated at the same sweeps as α)"));
        }
        if !seeds.is_empty() && !super::sampler::uses_dense_kernel(topics) {
            return Err(ParamError::new(
                "seed_words",
                format!(
                    "seeded fits take at most {} topics (the dense sampler's; the sparse one's draws assume no word outweighs its topic), got {topics}",
                    super::sampler::DENSE_MAX_TOPICS
                ),
            ));
        }
        if optimize_beta && !seeds.is_empty() {
            return Err(ParamError::new("optimize_beta", "seed_words set the topic-word prior of their topics: β is not re-estimated with them"));
        }
        r.finish()?;
        Ok(LdaParams {
            topics,
            alpha,
            beta,
            iterations,
            burn_in,
            thin,
            sync_tokens,
            loglik_every,
            test_fraction,
            heldout_burn_in,
            heldout_chain_length,
            optimize_interval,
            optimize_burn_in,
            optimize_beta,
            chains,
            covariates,
            reference,
            splines,
            keep_draws,
            seed_words: seeds.topics,
            seed_strength: seeds.strength,
            missing_seed_words: seeds.missing,
        })
    }

    /// Whether the fit runs over `ranks` ranks: seeded fits run in one process, not
    /// through the distributed fit (its ranks sum their shards' counts, which hold no
    /// pseudo-counts), whatever its world's size.
    pub fn check_ranks(&self, ranks: usize) -> Result<(), ParamError> {
        if ranks > 1 {
            self.refuse_seeds_in_ranked_fit()?;
        }
        Ok(())
    }

    /// A ranked fit (over any number of ranks) does not take seeds.
    pub fn refuse_seeds_in_ranked_fit(&self) -> Result<(), ParamError> {
        if !self.seed_words.is_empty() {
            return Err(ParamError::new("ranks", "a fit with seed_words runs in one process: leave out ranks"));
        }
        Ok(())
    }

    /// The params of a fit that starts from a fitted model (an edit's refit, an update;
    /// [`crate::models::edits`], [`crate::models::updates`]): these, with `topics`
    /// topics and `iterations` sweeps, burn-in at its default for that length (half)
    /// and every sweep after it kept (a short warm-started run has few sweeps to
    /// average: thinning by 10 left an AppStream update of 100 sweeps 5 draws for its
    /// posterior means, and its held-out score 0.005 nats a token behind the same
    /// update keeping every sweep; bench/README.md, *Updates*); α, β, the held-out
    /// split, chains, seeds and the rest as fitted.
    pub fn edited(&self, topics: usize, iterations: usize) -> Result<LdaParams, ParamError> {
        let mut json = serde_json::to_value(self).expect("plain data serialises");
        let obj = json.as_object_mut().expect("params serialise to an object");
        obj.insert("topics".into(), topics.into());
        obj.insert("iterations".into(), iterations.into());
        obj.remove("burn_in");
        obj.insert("thin".into(), 1.into());
        LdaParams::from_json(&json)
    }

    /// The fit's seeds ([`crate::models::seeds`]).
    pub fn seeds(&self) -> SeedWords {
        SeedWords { topics: self.seed_words.clone(), strength: self.seed_strength, missing: self.missing_seed_words }
    }

    /// The design the fit reads its covariates through (empty: none).
    pub fn design_request(&self) -> DesignRequest {
        DesignRequest { covariates: self.covariates.clone(), reference: self.reference.clone(), splines: self.splines.clone() }
    }

    /// Whether the hyperparameters are re-estimated after sweep `iteration` (1-based).
    pub fn optimizes_after(&self, iteration: usize) -> bool {
        self.optimize_interval > 0 && iteration > self.optimize_burn_in && iteration.is_multiple_of(self.optimize_interval)
    }

    /// The chain driver's view of the sweeps: burn-in, thinning and when the
    /// log-likelihood is computed.
    pub fn schedule(&self) -> Schedule {
        Schedule { iterations: self.iterations, burn_in: self.burn_in, thin: self.thin, loglik_every: self.loglik_every }
    }

    /// Whether sweep `iteration` (1-based) contributes to the posterior means.
    pub fn is_kept(&self, iteration: usize) -> bool {
        self.schedule().is_kept(iteration)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_follow_the_papers() {
        let p = LdaParams::from_json(&json!({"topics": 25})).unwrap();
        assert_eq!(p.alpha, 2.0);
        assert_eq!(p.beta, 0.01);
        assert_eq!(p.burn_in, 100);
        assert!(p.is_kept(110) && !p.is_kept(100) && !p.is_kept(105));
        assert!((1..=200).all(|it| !p.optimizes_after(it)), "optimisation is off by default");
    }

    /// tomotopy's schedule: after sweep `it` (1-based) when it > burn-in and it is a
    /// multiple of the interval.
    #[test]
    fn optimisation_schedule() {
        let p = LdaParams::from_json(&json!({"optimize_interval": 10, "optimize_burn_in": 15})).unwrap();
        let at: Vec<usize> = (1..=50).filter(|&it| p.optimizes_after(it)).collect();
        assert_eq!(at, vec![20, 30, 40, 50]);
        let p = LdaParams::from_json(&json!({"optimize_interval": 10})).unwrap();
        assert_eq!((1..=30).filter(|&it| p.optimizes_after(it)).collect::<Vec<_>>(), vec![10, 20, 30]);
    }

    #[test]
    fn bad_values_name_their_field() {
        for (body, field) in [
            (json!({"topics": 0}), "topics"),
            (json!({"alpha": -1}), "alpha"),
            (json!({"beta": 0}), "beta"),
            (json!({"iterations": 10, "burn_in": 10}), "burn_in"),
            (json!({"topicz": 3}), "topicz"),
            (json!({"thin": 0}), "thin"),
            (json!({"test_fraction": 1.0}), "test_fraction"),
            (json!({"heldout_chain_length": -1}), "heldout_chain_length"),
            (json!({"optimize_interval": -1}), "optimize_interval"),
            (json!({"optimize_burn_in": "x"}), "optimize_burn_in"),
            (json!({"optimize_beta": true}), "optimize_beta"),
            (json!({"optimize_interval": 10, "optimize_beta": 1}), "optimize_beta"),
            (json!({"threads": 2}), "threads"),
            (json!({"checkpoint_every_s": 0.5}), "checkpoint_every_s"),
        ] {
            assert_eq!(LdaParams::from_json(&body).unwrap_err().field, field, "{body}");
        }
    }
}
