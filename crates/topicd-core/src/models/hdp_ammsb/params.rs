//! HDP-aMMSB's job parameters, their defaults and their limits.
//!
//! Why it exists: every setting of a fit (truncation, the HDP's α and γ, the background
//! link probability ε, the Beta prior on within-community link probabilities, the
//! memoized batches, passes and stopping rule) is read here once, with errors that name
//! the field, so `check_params` and `fit` agree on what a valid job is.
//!
//! Defaults: α = 0.5 and γ = 10 are bnpy's `HDPAssortativeMMSB` defaults; τ1 = τ0 = 1
//! puts a uniform prior on each community's link probability. ε is fixed, not learned
//! (as in bnpy and Gopalan et al.'s aMMSB); by default it is a tenth of the graph's
//! density (links / observed pairs), clamped to [1e-6, 0.05]: background links are then
//! rare relative to an average pair whatever the graph's sparsity. A fixed tiny ε (1e-4
//! on a graph of density 0.1) makes every cross-community link cheaper to explain by a
//! 1–2 % membership in the other community than by ε; on planted partitions that
//! mixing flipped a few nodes' strongest community, which the density-scaled default
//! avoided. The truncation K = 20 is only an upper bound: the HDP empties communities
//! the graph does not need.

use crate::graph::GraphStats;
use crate::models::params::{ParamError, ParamReader, ParamsDoc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Largest truncation accepted (a pass costs O(N² K)).
pub const MAX_COMMUNITIES: u64 = 500;
/// Largest number of memoized batches.
pub const MAX_BATCHES: u64 = 1_000;
/// Cap on batches × nodes × K: memoized inference keeps one N × K usage table per batch
/// (16.8 M entries, 134 MB of f64).
pub const MAX_SUMMARY_ENTRIES: u64 = 1 << 24;

/// Bounds of the density-scaled default ε.
pub const MIN_DEFAULT_EPSILON: f64 = 1e-6;
pub const MAX_DEFAULT_EPSILON: f64 = 0.05;

/// Bounds of a given ε. At 1e-10 fewer than one background link is expected on any
/// graph a fit takes (at most [`MAX_PASS_WORK`] pairs), so smaller says nothing more;
/// above one half a link between communities would be likelier than not, which is no
/// background (the density-scaled default never passes [`MAX_DEFAULT_EPSILON`]).
pub const MIN_EPSILON: f64 = 1e-10;
pub const MAX_EPSILON: f64 = 0.5;

/// Bounds of τ1 and τ0, the Beta prior's pseudo-counts of links and non-links in a
/// community. A community with no link (or no non-link) has E[log φ_k] (or
/// E[log(1 − φ_k)]) near −1/τ, and the local step multiplies exp of it into each
/// pair's normaliser: below 1/745 that underflows to 0 and the objective is NaN (as it
/// was at τ1 = 0.001 on planted graphs). 0.01 keeps it above e^-100; honest priors are
/// 0.1 (sparse) to 10.
pub const MIN_TAU: f64 = 0.01;
pub const MAX_TAU: f64 = crate::models::params::MAX_CONCENTRATION;

/// Cap on node pairs × communities, the work of one pass (a 10 000-node graph allows
/// K = 100).
pub const MAX_PASS_WORK: u64 = 5_000_000_000;

/// Parameters of an HDP-aMMSB fit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AmmsbParams {
    /// Initial truncation K: communities the variational posterior can use.
    pub communities: usize,
    /// Concentration of each node's membership π_i ~ Dir(α β).
    pub alpha: f64,
    /// Concentration of the top-level sticks u_k ~ Beta(1, γ).
    pub gamma: f64,
    /// Background link probability ε between nodes acting in different communities;
    /// `None`: [`AmmsbParams::epsilon_for`]'s density-scaled default.
    pub epsilon: Option<f64>,
    /// Beta(τ1, τ0) prior on each community's within-block link probability φ_k.
    pub tau1: f64,
    pub tau0: f64,
    /// Memoized batches; `None` = min(4, N). Batches are contiguous ranges of owner nodes.
    pub batches: Option<usize>,
    /// Upper bound on memoized passes.
    pub passes: usize,
    /// Stop when a pass raises the objective by less than this per observed pair (in
    /// [0, 1); 0 runs every pass).
    pub tolerance: f64,
}

/// [`AmmsbParams`] as encoded by models of format version 1 (with the job's `threads`,
/// always 0 once the runner took it from the job's options); upgraded by
/// [`super::model::AmmsbModel::decode`].
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(test, derive(Serialize))]
pub(crate) struct AmmsbParamsV1 {
    pub communities: usize,
    pub alpha: f64,
    pub gamma: f64,
    pub epsilon: Option<f64>,
    pub tau1: f64,
    pub tau0: f64,
    pub batches: Option<usize>,
    pub passes: usize,
    pub tolerance: f64,
    /// The job's thread count: read to pass over its bytes, never used.
    #[allow(dead_code)]
    pub threads: usize,
}

#[cfg(test)]
impl From<&AmmsbParams> for AmmsbParamsV1 {
    /// The version 1 layout of current parameters (`threads` 0, as every job's was).
    fn from(p: &AmmsbParams) -> Self {
        let AmmsbParams { communities, alpha, gamma, epsilon, tau1, tau0, batches, passes, tolerance } = p.clone();
        AmmsbParamsV1 { communities, alpha, gamma, epsilon, tau1, tau0, batches, passes, tolerance, threads: 0 }
    }
}

impl From<AmmsbParamsV1> for AmmsbParams {
    fn from(p: AmmsbParamsV1) -> Self {
        let AmmsbParamsV1 { communities, alpha, gamma, epsilon, tau1, tau0, batches, passes, tolerance, threads: _ } = p;
        AmmsbParams { communities, alpha, gamma, epsilon, tau1, tau0, batches, passes, tolerance }
    }
}

impl Default for AmmsbParams {
    fn default() -> Self {
        AmmsbParams { communities: 20, alpha: 0.5, gamma: 10.0, epsilon: None, tau1: 1.0, tau0: 1.0, batches: None, passes: 100, tolerance: 1e-6 }
    }
}

/// The descriptions of the AmmsbParams schema (`GET /v1/families`, OpenAPI), in a form's order.
pub(crate) const DOC: ParamsDoc = ParamsDoc {
    component: "AmmsbParams",
    description: r#"HDP-aMMSB (assortative mixed-membership stochastic blockmodel with an HDP prior over communities) fitted by memoized variational inference on a graph. Node i's membership π_i ~ Dir(α β), β from the top-level stick; a pair links with probability φ_k when both ends act in community k and ε otherwise. The local step keeps only the K diagonal responsibilities per pair and the off-diagonal mass in closed form (O(N²K) per pass). Fits start from a seeded label propagation. A null value means the default."#,
    basic: &["communities", "passes"],
    keys: &[
        (
            "communities",
            r#"The truncation K (an upper bound; unused communities empty). Node pairs × communities must be at most 5e9 per pass (a 422 naming `communities`; 10 000 undirected nodes allow K = 100)."#,
        ),
        ("alpha", r#"Node-level concentration, π_i ~ Dir(α β)."#),
        ("gamma", r#"Top-level concentration, β ~ GEM(γ)."#),
        ("epsilon", r#"Background link probability (fixed, 1e-10 to 0.5); default a tenth of the graph's density, clamped to [1e-6, 0.05]."#),
        (
            "tau1",
            r#"Beta(tau1, tau0) prior on each community's link probability (each 0.01 to 1e4; below 0.01 an empty community's link terms underflow in the local step)."#,
        ),
        ("tau0", r#"The second shape of that Beta prior (see `tau1`)."#),
        ("batches", r#"Memoized batches of owner nodes; default min(4, N); at most N. batches × N × K is capped at 2^24 (a 422 naming `batches`)."#),
        ("passes", r#"Passes over every batch of owner nodes (fewer when a pass raises the objective by less than `tolerance`)."#),
        ("tolerance", r#"Stop when a pass raises the objective by less than this per observed pair (0 runs every pass)."#),
    ],
};

impl AmmsbParams {
    /// Parse and check `params`; every error names its field.
    pub fn from_json(params: &Value) -> Result<Self, ParamError> {
        let d = AmmsbParams::default();
        let mut r = ParamReader::new(params)?.described_by(&DOC);
        r.one_chain_only("this family is fitted by memoized variational inference, which runs no chains")?;
        let communities = r.uint_in_or("communities", 1, MAX_COMMUNITIES, d.communities as u64)? as usize;
        let alpha = r.concentration_or("alpha", d.alpha)?;
        let gamma = r.concentration_or("gamma", d.gamma)?;
        let epsilon = r.number_in("epsilon", MIN_EPSILON, MAX_EPSILON)?;
        let tau1 = r.number_in_or("tau1", MIN_TAU, MAX_TAU, d.tau1)?;
        let tau0 = r.number_in_or("tau0", MIN_TAU, MAX_TAU, d.tau0)?;
        let batches = r.uint_in("batches", 1, MAX_BATCHES)?.map(|b| b as usize);
        let passes = r.uint_in_or("passes", 1, 100_000, d.passes as u64)? as usize;
        let tolerance = r.fraction_or("tolerance", 1.0, d.tolerance)?;
        r.finish()?;
        Ok(AmmsbParams { communities, alpha, gamma, epsilon, tau1, tau0, batches, passes, tolerance })
    }

    /// ε on a graph with `num_edges` links among `num_pairs` observed pairs: the given
    /// value, else a tenth of the density clamped to [[`MIN_DEFAULT_EPSILON`],
    /// [`MAX_DEFAULT_EPSILON`]].
    pub fn epsilon_for(&self, num_edges: usize, num_pairs: usize) -> f64 {
        self.epsilon.unwrap_or_else(|| (0.1 * num_edges as f64 / num_pairs.max(1) as f64).clamp(MIN_DEFAULT_EPSILON, MAX_DEFAULT_EPSILON))
    }

    /// The batch count used on a graph of `num_nodes` nodes.
    pub fn num_batches(&self, num_nodes: usize) -> usize {
        self.batches.unwrap_or(4).min(num_nodes).max(1)
    }

    /// The checks that need the graph: batches no more than nodes, memory within the cap.
    pub fn check_against(&self, graph: &GraphStats) -> Result<(), ParamError> {
        let n = graph.num_nodes;
        if let Some(b) = self.batches {
            if b > n {
                return Err(ParamError::new("batches", format!("must be at most the number of nodes ({n}), got {b}")));
            }
        }
        let entries = self.num_batches(n) as u64 * n as u64 * self.communities as u64;
        if entries > MAX_SUMMARY_ENTRIES {
            return Err(ParamError::new(
                "batches",
                format!("batches × nodes × communities = {entries} exceeds {MAX_SUMMARY_ENTRIES}; use fewer batches or communities"),
            ));
        }
        // A pass touches every observed pair once per community; past this a single
        // batch runs for minutes between cancellation checks.
        let work = graph.num_observed_pairs().saturating_mul(self.communities as u64);
        if work > MAX_PASS_WORK {
            return Err(ParamError::new("communities", format!("node pairs × communities = {work} exceeds {MAX_PASS_WORK} per pass; use fewer communities")));
        }
        Ok(())
    }
}
