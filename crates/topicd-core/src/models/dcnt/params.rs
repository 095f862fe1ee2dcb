//! DCNT's and SCNT's job parameters, their defaults and their limits.
//!
//! Defaults follow the toy experiment of Kim & Sudderth (2011, §4.1): γ_μ = 10⁶ and
//! every Gamma prior (λ_f, λ_A, λ_V) with shape a = 0.01 and rate b = 0.01 (mean 1,
//! variance 100); β = 0.01, the topic smoothing the paper uses for its LDA comparison.

use crate::models::design::DesignRequest;
use crate::models::params::{ParamError, ParamReader, ParamsDoc};
use crate::models::seeds::SeedWords;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Largest truncation accepted (topic ids are stored as `u16` in thinned samples, and
/// every scan factors K̄ × K̄ matrices).
pub const MAX_TOPICS: u64 = 1_000;

/// Most scans a fit runs (`burn_in` is below it).
pub const MAX_ITERATIONS: u64 = 1_000_000;

/// Bounds of the Gamma priors' shapes and rates (`a_f`, `b_f`, `a_a`, `b_a`, `a_v`,
/// `b_v`). The paper's 0.01 is the usual vague choice and 1e-6 vaguer than any use; a
/// shape or rate of 1e4 already makes the prior a point mass. Fits with every shape and
/// rate at either end, and with the shapes at one end and the rates at the other, stay
/// finite (`models::param_bounds_tests`; they did up to 1e6 too).
pub const MIN_GAMMA_HYPER: f64 = 1e-6;
pub const MAX_GAMMA_HYPER: f64 = 1e4;
/// Bounds of γ_μ, the prior variance of μ_f: the paper's 1e6 is already flat, 1e12 (a
/// standard deviation of 1e6 on the activations' log-odds scale) flatter than any use,
/// and 1e-6 pins μ at 0.
pub const MIN_GAMMA_MU: f64 = 1e-6;
pub const MAX_GAMMA_MU: f64 = 1e12;

/// The prior hyperparameters (shape/rate Gamma pairs; γ_μ is a variance).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Priors {
    /// Symmetric Dirichlet on each topic's word distribution Ω_k.
    pub beta: f64,
    /// μ_f ~ N(0, γ_μ).
    pub gamma_mu: f64,
    /// λ_f ~ Gamma(a_f, b_f).
    pub a_f: f64,
    pub b_f: f64,
    /// λ_A ~ Gamma(a_a, b_a).
    pub a_a: f64,
    pub b_a: f64,
    /// λ_v ~ Gamma(a_v, b_v).
    pub a_v: f64,
    pub b_v: f64,
}

impl Default for Priors {
    fn default() -> Self {
        Priors { beta: 0.01, gamma_mu: 1e6, a_f: 0.01, b_f: 0.01, a_a: 0.01, b_a: 0.01, a_v: 0.01, b_v: 0.01 }
    }
}

/// Parameters of a DCNT or SCNT fit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DcntParams {
    /// The truncation K̄.
    pub topics: usize,
    pub priors: Priors,
    /// Gibbs scans.
    pub iterations: usize,
    /// Scans discarded before posterior means are accumulated (default iterations/2).
    pub burn_in: usize,
    /// Keep every `thin`-th scan after burn-in (default 10, at most what remains).
    pub thin: usize,
    /// Compute the log joint every this many scans (and on the first and last).
    pub loglik_every: usize,
    /// Share of documents held out (by the seed) when the corpus has no `split` tags;
    /// held-out documents are scored by the Chib-style estimator at the end of the fit.
    pub test_fraction: f64,
    /// That estimator's settings: T, S and R (paper 000, A.4).
    pub heldout_burn_in: usize,
    pub heldout_chain_length: usize,
    pub heldout_acceptance_samples: usize,
    /// Within-document topic swaps proposed per document and scan ([`super::swap`];
    /// 0 turns the move off).
    pub topic_swaps: usize,
    /// Sweeps of collapsed LDA Gibbs that place the chain's start
    /// ([`super::warm_start`]; 0, the default: the paper's start from the prior alone).
    pub warm_start: usize,
    /// Scans whose A, η and λ_v the model stores (evenly spread over every scan after
    /// burn-in, whatever `thin` is; at most this many, and at most the scans after
    /// burn-in), from which covariate effects get their intervals.
    pub keep_draws: usize,
    /// The covariates φ_d is built from (`covariates`, `reference`, `splines`;
    /// [`crate::models::design`]); none: the documents' `features` as they are (φ_d = 1
    /// without).
    pub design: DesignRequest,
    /// Independent chains run one after another ([`crate::models::chains`]; 1 to 8),
    /// pooled into one model ([`super::pooled`]).
    pub chains: usize,
    /// Seeded topics (`seed_words`, `seed_strength`, `missing_seed_words`;
    /// [`crate::models::seeds`]): topic i is seed i, at the i-th stick.
    pub seeds: SeedWords,
}

/// Default of [`DcntParams::keep_draws`]: enough for stable 95 % intervals (the 2.5 %
/// quantile of 200 draws rests on 5 of them), fewer where K̄ is so large that 200 draws
/// would hold more than [`DEFAULT_DRAWS_BYTES`].
pub const DEFAULT_KEEP_DRAWS: usize = 200;
/// The bytes the default number of draws may take in a model.
pub const DEFAULT_DRAWS_BYTES: usize = 64 << 20;

/// The default draws for `topics` topics: 200, or as many as fit in
/// [`DEFAULT_DRAWS_BYTES`] counting A (K̄²) and an η of 8 features (8 K̄), at least 20.
pub fn default_keep_draws(topics: usize) -> usize {
    let per_draw = 8 * (topics * topics + 8 * topics + 1);
    (DEFAULT_DRAWS_BYTES / per_draw).clamp(20, DEFAULT_KEEP_DRAWS)
}
/// Most draws a model keeps.
pub const MAX_KEEP_DRAWS: usize = 10_000;

/// Default of [`DcntParams::chains`] for a fit with `covariates`: Stan's and PyMC's four.
/// A fit with covariates is asked for its effects, and one chain's intervals cover the
/// true effect far less often than 95 % (its chain can hold two planted topics merged;
/// four chains' pooled draws cover it 94 % of the time on corpora drawn from DCNT:
/// bench/README.md, decision 0048). Without covariates, 1.
pub const DEFAULT_CHAINS_WITH_COVARIATES: usize = 4;

/// Default of [`DcntParams::iterations`] without covariates (the paper's toy experiment
/// runs 1 000 scans).
pub const DEFAULT_ITERATIONS: usize = 1_000;
/// Defaults of [`DcntParams::iterations`] and [`DcntParams::warm_start`] for a fit with
/// `covariates`: four chains of 250 scans from a start of 200 collapsed sweeps cover
/// the true effects on corpora drawn from DCNT as often as four chains of 1 000 scans
/// from the prior (0.937 against 0.942, SE 0.007), recover more of the planted topics,
/// agree more often with a real dated corpus' raw text, in a third of the time
/// (bench/README.md, decision 0058).
pub const DEFAULT_ITERATIONS_WITH_COVARIATES: usize = 250;
pub const DEFAULT_WARM_START_WITH_COVARIATES: usize = 200;

/// Default of [`DcntParams::topic_swaps`].
pub const DEFAULT_TOPIC_SWAPS: usize = 1;

/// The descriptions of the DcntParams schema (`GET /v1/families`, OpenAPI), in a form's order.
pub(crate) const DOC: ParamsDoc = ParamsDoc {
    component: "DcntParams",
    description: r#"DCNT (full square-root correlation A) and SCNT (diagonal A), Kim & Sudderth (2011). One Gibbs scan draws z by the collapsed update (documents in synchronised blocks, as LDA), each v_d by entry-wise independence Metropolis-Hastings with prior proposals, u_d, A, η, μ and the precisions by their conjugate updates. Priors default to the paper's toy experiment (γ_μ = 1e6, Gamma(0.01, 0.01) precisions). A null value means the default."#,
    basic: &["topics", "iterations", "burn_in", "chains", "test_fraction", "seed_words", "covariates", "reference", "splines"],
    keys: &[
        ("topics", r#"The truncation K̄."#),
        ("iterations", r#"Gibbs scans. Default 1 000, and 250 for a fit with `covariates` (whose chains start from `warm_start`'s collapsed sweeps)."#),
        ("burn_in", r#"Less than `iterations`; default iterations/2."#),
        ("thin", r#"Default min(10, iterations − burn_in)."#),
        (
            "topic_swaps",
            r#"Within-document topic swaps proposed per document and scan (an exact Metropolis-Hastings move that exchanges two topics' labels and activations in one document; it lets merged or split topics escape). 0 turns it off."#,
        ),
        (
            "warm_start",
            r#"Sweeps of collapsed LDA Gibbs (symmetric Dirichlet(0.1) document prior) that place the chain's start before its first scan: topics ordered largest first, each document's activations set so that its stick-breaking weights are its smoothed proportions. 0 starts from the prior as the paper does: the default without covariates or seeds (on the paper's bars data the collapsed start keeps LDA's merged pairs of bars). Default 200 for a fit with `seed_words` (from the prior's start a seeded topic can settle around other words) and for one with `covariates`: with it four chains of 250 scans cover the true effects on corpora drawn from DCNT as often as four chains of 1 000 scans from the prior, in a third of the time (bench/README.md). Discarded with the burn-in; it changes where the chain begins, not what it samples."#,
        ),
        (
            "keep_draws",
            r#"Scans whose A, η and λ_v the model stores (evenly spread over every scan after burn-in, whatever `thin` is; at most this many and at most those scans; with several chains, ⌈keep_draws / chains⌉ from each), which `/effects` takes its intervals over. The default is 200, fewer (at least 20) above K̄ = 200 so that the draws stay within 64 MB. Each costs (K̄² + F·K̄ + 1) × 8 bytes in the model: 200 draws of K̄ = 20, F = 7 are 0.9 MB; of K̄ = 100, 16 MB."#,
        ),
        (
            "chains",
            r#"Independent chains, run one after another from seeds derived from the job's (chain 0 uses the job's seed, so `chains: 1` is the one-chain fit), on the same split; the job's progress counts through all of them. Default 1, and 4 (Stan's and PyMC's default) for a fit with `covariates`: one chain's 95 % effect intervals cover the truth 64 % of the time on corpora drawn from DCNT, four chains' 92 %, at four times the time (bench/README.md). The reference chain is the one the others agree with most (`diagnostics.reference_chain`); the other chains' topics are matched to its topics by their word distributions (`diagnostics.chain_alignment`), and each topic's Ω, share and documents' proportions are pooled over the chains that found it (matched at similarity 0.8 or more; ties in agreement go to the chain with the higher log joint). A, η and λ_v act through a topic's place in the chain's own stick order, so they are not averaged: prediction, the held-out estimator and the correlations use the reference chain's, and `/effects` takes, by default, the draws of the chains that hold each topic, each draw's expected shares moved onto the model's topics. `diagnostics.convergence` compares the chains (split-R̂)."#,
        ),
        (
            "seed_words",
            r#"Seeded (keyword-assisted) topics, `[{"name": "games", "words": ["game", "play", "player"]}, ...]`, as LDA's: topic i is the i-th seed (the i-th stick) and is served under its name. Each seed word w adds ⌈seed_strength · n_w⌉ pseudo-counts (n_w: its training tokens) to that topic's count of w for the whole fit, which the z draws, topic swaps and the collapsed start read; the served Ω is the data's. A seeded fit starts from `warm_start`'s collapsed sweeps by default (from uniform assignments, with a seed word's tokens in its topic in the documents holding two of the seed's words). Words are normalised as the corpus' were; one the vocabulary lacks is a 422 naming it unless `missing_seed_words` is `ignore`. At most `topics` seeds."#,
        ),
        ("seed_strength", r#"Pseudo-counts each seed word adds to its seeded topic, as a share of the word's training tokens (as LDA's)."#),
        (
            "missing_seed_words",
            r#"`reject` (a seed word the vocabulary lacks is a 422 naming it) or `ignore` (it is left out and listed in the model's `diagnostics.seeds.missing_words`)."#,
        ),
        (
            "covariates",
            r#"The corpus covariates φ_d is built from, in this order: an intercept, then each continuous or date covariate as itself (or its B-spline columns, `splines`), each categorical one as an indicator per level but the reference. Every document must give each named covariate: a covariate the corpus lacks, or one missing on some documents, is a 422 naming `params.covariates`. Empty: the documents' `features` as they are (φ_d = 1 without). The model's `feature_names` are the design's columns (`(intercept)`, `year`, `s(year)1`, `party=blue`)."#,
        ),
        (
            "reference",
            r#"Reference level per categorical covariate (`{"party": "green"}`); default the most frequent level. A level the covariate lacks is a 422 naming `params.reference.<name>`."#,
        ),
        (
            "splines",
            r#"Columns of a cubic B-spline basis per continuous or date covariate (`{"year": 5}`), as R's `splines::bs(x, df)` and stm's `s()`: interior knots at the data's quantiles, boundaries at its range; values beyond the range are held at the boundary."#,
        ),
        ("loglik_every", r#"Compute the log-likelihood every this many scans (and on the first and last)."#),
        ("beta", r#"Symmetric Dirichlet prior on each topic's words."#),
        ("gamma_mu", r#"Prior variance of μ_f."#),
        ("a_f", r#"Gamma shape of λ_f."#),
        ("b_f", r#"Gamma rate of λ_f."#),
        ("a_a", r#"Gamma shape of λ_A."#),
        ("b_a", r#"Gamma rate of λ_A."#),
        ("a_v", r#"Gamma shape of λ_V."#),
        ("b_v", r#"Gamma rate of λ_V."#),
        (
            "test_fraction",
            r#"Share of documents held out by the seed (or documents tagged `split: test`), scored at the end of the fit by the Chib-style estimator (`diagnostics.heldout`)."#,
        ),
        ("heldout_burn_in", r#"T of that estimate."#),
        ("heldout_chain_length", r#"S of that estimate."#),
        ("heldout_acceptance_samples", r#"R of that estimate (proposals per activation to estimate its acceptance probability)."#),
    ],
};

impl DcntParams {
    /// The parameters under their wire names, as [`DcntParams::from_json`] reads them
    /// back: the priors and the design (`covariates`, `reference`, `splines`) are
    /// top-level keys (`beta`, `gamma_mu`, `a_f`, ...).
    pub fn to_json(&self) -> Value {
        let mut v = serde_json::to_value(self).expect("plain data serialises");
        let o = v.as_object_mut().expect("a struct serialises to an object");
        for nested in ["priors", "design"] {
            if let Some(Value::Object(inner)) = o.remove(nested) {
                o.extend(inner);
            }
        }
        o.remove("seeds");
        self.seeds.write_json(o);
        v
    }

    /// Parse and check `params`; every error names its field.
    pub fn from_json(params: &Value) -> Result<Self, ParamError> {
        let mut r = ParamReader::new(params)?.described_by(&DOC);
        let topics = r.uint_in_or("topics", 2, MAX_TOPICS, 20)? as usize;
        let defaults = Priors::default();
        let beta = r.concentration_or("beta", defaults.beta)?;
        let gamma_mu = r.number_in_or("gamma_mu", MIN_GAMMA_MU, MAX_GAMMA_MU, defaults.gamma_mu)?;
        let mut gamma_prior = |key: &str, default: f64| r.number_in_or(key, MIN_GAMMA_HYPER, MAX_GAMMA_HYPER, default);
        let (a_f, b_f) = (gamma_prior("a_f", defaults.a_f)?, gamma_prior("b_f", defaults.b_f)?);
        let (a_a, b_a) = (gamma_prior("a_a", defaults.a_a)?, gamma_prior("b_a", defaults.b_a)?);
        let (a_v, b_v) = (gamma_prior("a_v", defaults.a_v)?, gamma_prior("b_v", defaults.b_v)?);
        let priors = Priors { beta, gamma_mu, a_f, b_f, a_a, b_a, a_v, b_v };
        let design = DesignRequest::read(&mut r)?;
        let with_covariates = !design.covariates.is_empty();
        let default_iterations = if with_covariates { DEFAULT_ITERATIONS_WITH_COVARIATES } else { DEFAULT_ITERATIONS };
        let iterations = r.uint_in("iterations", 1, MAX_ITERATIONS)?.map_or(default_iterations, |i| i as usize);
        let burn_in = match r.uint_in("burn_in", 0, MAX_ITERATIONS - 1)?.map(|b| b as usize) {
            Some(b) if b >= iterations => return Err(ParamError::new("burn_in", format!("must be less than iterations ({iterations}), got {b}"))),
            Some(b) => b,
            None => iterations / 2,
        };
        let thin = r.uint_in("thin", 1, 1_000_000)?.map(|t| t as usize).unwrap_or_else(|| 10.min(iterations - burn_in));
        let loglik_every = r.uint_in_or("loglik_every", 1, 1_000_000, 10)? as usize;
        let test_fraction = r.fraction_or("test_fraction", 0.9, 0.0)?;
        let topic_swaps = r.uint_in_or("topic_swaps", 0, 100, DEFAULT_TOPIC_SWAPS as u64)? as usize;
        let seeds = SeedWords::read(&mut r, topics)?;
        // Off by default without covariates: on the bars data the collapsed start keeps
        // LDA's own merged pairs of bars, which the DCNT chain then cannot split
        // (decision 0047). With covariates, on (decision 0058); with seeds too: from the
        // prior's start a seeded topic can settle in a merged mode around other words
        // (its seed words then outside its top 10 in 2 of 4 fits of the planted
        // corpus in `seeded_tests`), from the collapsed start it forms around its
        // seeds (4 of 4).
        let default_warm_start = if with_covariates || !seeds.is_empty() { DEFAULT_WARM_START_WITH_COVARIATES } else { 0 };
        let warm_start = r.uint_in("warm_start", 0, 100_000)?.map_or(default_warm_start, |w| w as usize);
        let chib = super::heldout::ChibSettings::default();
        let heldout_burn_in = r.uint_in_or("heldout_burn_in", 0, 1_000_000, chib.burn_in as u64)? as usize;
        let heldout_chain_length = r.uint_in_or("heldout_chain_length", 1, 1_000_000, chib.chain_length as u64)? as usize;
        let heldout_acceptance_samples = r.uint_in_or("heldout_acceptance_samples", 1, 10_000_000, chib.acceptance_samples as u64)? as usize;
        let keep_draws = r.uint_in("keep_draws", 0, MAX_KEEP_DRAWS as u64)?.map_or_else(|| default_keep_draws(topics), |x| x as usize);
        let default_chains = if with_covariates { DEFAULT_CHAINS_WITH_COVARIATES } else { 1 };
        let chains = r.uint_in("chains", 1, crate::models::chains::MAX_CHAINS as u64)?.map_or(default_chains, |c| c as usize);
        r.finish()?;
        Ok(DcntParams {
            topics,
            priors,
            iterations,
            burn_in,
            thin,
            loglik_every,
            test_fraction,
            heldout_burn_in,
            heldout_chain_length,
            heldout_acceptance_samples,
            topic_swaps,
            warm_start,
            keep_draws,
            design,
            chains,
            seeds,
        })
    }

    /// The params of an update ([`crate::models::updates`]): these, with `topics`
    /// topics and `iterations` scans, burn-in at its default for that length (half),
    /// every scan after it kept (as LDA's: a short warm-started run has few scans to
    /// average), and no collapsed start (the update's start replaces it); priors, the
    /// design, the split, chains, seeds and the rest as fitted.
    pub fn updated(&self, topics: usize, iterations: usize) -> Result<DcntParams, ParamError> {
        let mut json = self.to_json();
        let obj = json.as_object_mut().expect("params serialise to an object");
        obj.insert("topics".into(), topics.into());
        obj.insert("iterations".into(), iterations.into());
        obj.remove("burn_in");
        obj.insert("thin".into(), 1.into());
        obj.insert("warm_start".into(), 0.into());
        DcntParams::from_json(&json)
    }

    /// The params of an edit's refit ([`crate::models::edits`]): as an update's, with
    /// the child's topics (retired slots included) and `iterations` scans. A seeded
    /// topic cannot be edited (its seed is the fit's: the error names the operation), and
    /// the edit must leave at least two live topics (a stick-breaking prior over one
    /// topic has nothing to break).
    pub fn edited(&self, plan: &crate::models::edits::EditPlan, iterations: usize) -> Result<DcntParams, ParamError> {
        plan.check_seeded_and_live(&self.seeds, "a DCNT or SCNT model")?;
        self.updated(plan.child_topics(), iterations)
    }

    /// These params on the live topics of `slots` (what an edited model's chains run
    /// on); the params themselves when every topic is live.
    pub fn on_live_topics(&self, slots: &crate::models::slots::Slots) -> DcntParams {
        DcntParams { topics: slots.live().len(), ..self.clone() }
    }

    /// The draws of the loadings each chain keeps: `keep_draws` shared out over the
    /// chains (rounded up), so the pooled model holds about `keep_draws` of them.
    pub fn draws_per_chain(&self) -> usize {
        self.keep_draws.div_ceil(self.chains.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_follow_the_toy_experiment() {
        let p = DcntParams::from_json(&json!({})).unwrap();
        assert_eq!((p.topics, p.iterations, p.burn_in, p.thin, p.topic_swaps, p.warm_start), (20, 1_000, 500, 10, 1, 0));
        assert_eq!(DcntParams::from_json(&json!({"warm_start": 250})).unwrap().warm_start, 250);
        assert_eq!((p.chains, p.draws_per_chain()), (1, 200));
        let with = DcntParams::from_json(&json!({"covariates": ["year"]})).unwrap();
        assert_eq!((with.chains, with.draws_per_chain()), (4, 50), "four chains with covariates, 200 draws shared");
        assert_eq!((with.iterations, with.burn_in, with.warm_start), (250, 125, 200), "with covariates: 250 scans from a collapsed start");
        let asked = DcntParams::from_json(&json!({"covariates": ["year"], "iterations": 600, "warm_start": 0})).unwrap();
        assert_eq!((asked.iterations, asked.burn_in, asked.warm_start), (600, 300, 0), "asked for, kept");
        assert_eq!(DcntParams::from_json(&json!({"covariates": ["year"], "chains": 1})).unwrap().chains, 1, "asked for, kept");
        let four = DcntParams::from_json(&json!({"chains": 4, "keep_draws": 30})).unwrap();
        assert_eq!((four.chains, four.draws_per_chain()), (4, 8), "30 draws over 4 chains: 8 each");
        assert_eq!(p.priors, Priors::default());
        assert_eq!(p.priors.gamma_mu, 1e6);
        let schedule = super::super::chain::schedule(&p);
        assert!(schedule.is_kept(510) && !schedule.is_kept(500) && !schedule.is_kept(505));
        let p = DcntParams::from_json(&json!({"a_v": 3, "b_v": 2, "iterations": 10})).unwrap();
        assert_eq!((p.priors.a_v, p.priors.b_v, p.burn_in, p.thin), (3.0, 2.0, 5, 5));
    }

    /// 200 draws up to K̄ = 200 (64 MB of draws), fewer above, never under 20.
    #[test]
    fn default_draws_stay_within_their_budget() {
        assert_eq!((default_keep_draws(20), default_keep_draws(100), default_keep_draws(200)), (200, 200, 200));
        assert_eq!((default_keep_draws(201), default_keep_draws(300)), (199, 90));
        assert_eq!(default_keep_draws(1_000), 20);
        for k in [2, 50, 199, 500, 999] {
            let d = default_keep_draws(k);
            assert!(d == 20 || d * 8 * (k * k + 8 * k + 1) <= DEFAULT_DRAWS_BYTES, "{k}: {d}");
        }
        assert_eq!(DcntParams::from_json(&json!({"topics": 300})).unwrap().keep_draws, 90);
        assert_eq!(DcntParams::from_json(&json!({"topics": 300, "keep_draws": 500})).unwrap().keep_draws, 500, "asked for, kept");
    }

    #[test]
    fn bad_values_name_their_field() {
        for (body, field) in [
            (json!({"topics": 1}), "topics"),
            (json!({"topics": 5000}), "topics"),
            (json!({"beta": 0}), "beta"),
            (json!({"gamma_mu": -1}), "gamma_mu"),
            (json!({"a_f": 0}), "a_f"),
            (json!({"b_a": "x"}), "b_a"),
            (json!({"a_v": -2}), "a_v"),
            (json!({"iterations": 0}), "iterations"),
            (json!({"iterations": 10, "burn_in": 10}), "burn_in"),
            (json!({"thin": 0}), "thin"),
            (json!({"topic_swaps": 101}), "topic_swaps"),
            (json!({"warm_start": 100001}), "warm_start"),
            (json!({"chains": 0}), "chains"),
            (json!({"chains": 9}), "chains"),
            (json!({"loglik_every": 0}), "loglik_every"),
            (json!({"test_fraction": 0.95}), "test_fraction"),
            (json!({"alpha": 1}), "alpha"),
            (json!({"threads": 2}), "threads"),
            (json!({"checkpoint_every_s": 0.5}), "checkpoint_every_s"),
        ] {
            assert_eq!(DcntParams::from_json(&body).unwrap_err().field, field, "{body}");
        }
    }
}
