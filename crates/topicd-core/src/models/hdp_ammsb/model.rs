//! The `hdp_ammsb` family and the stored model.
//!
//! Why it exists: it is the boundary between the variational fit and the service:
//! parameter checking against the uploaded graph, fitting through
//! [`super::fit::fit_ammsb`], the versioned encoding, and what a fitted model reports
//! (memberships, communities, diagnostics).
//!
//! Reported communities are the *active* ones, by increasing id (their index in the
//! truncation): those whose expected size Σ_i E[π_ik] is at least [`ACTIVE_SIZE`], one
//! node's worth of membership. A community the data do not use keeps only its prior
//! share, Σ_i E[π_ik] ≈ N α E[β_k] / (P + α) ≤ α E[β_k] N/(N − 1) (P = pairs per node
//! ≥ N − 1), below one for the default α = 0.5 on any graph of three or more nodes.
//! Directed graphs are supported: both
//! directions of a node pair are observed separately, the sender's membership choosing s
//! and the receiver's r.

use super::fit::fit_ammsb;
use super::params::AmmsbParams;
use super::state::GlobalState;
use crate::graph::{Graph, GraphStats};
use crate::models::community::{Communities, CommunityFamily, CommunityModel, CommunitySummary, NodeMembership};
use crate::models::{FitContext, FitError, ModelError, ParamError};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Format version of [`AmmsbModel`]'s encoding.
pub const ENCODING_VERSION: u32 = 1;
/// Expected size (in nodes) from which a community is reported.
pub const ACTIVE_SIZE: f64 = 1.0;
/// Objective values kept in the diagnostics (the last ones).
const TRACE_SHOWN: usize = 200;

/// The `"hdp_ammsb"` family.
pub struct HdpAmmsbFamily;

pub static HDP_AMMSB: HdpAmmsbFamily = HdpAmmsbFamily;

impl CommunityFamily for HdpAmmsbFamily {
    fn name(&self) -> &'static str {
        "hdp_ammsb"
    }

    fn effective_params(&self, params: &serde_json::Value) -> Result<serde_json::Value, ParamError> {
        // The struct's fields are the wire names; `epsilon` and `batches` stay null when
        // they default to values the graph decides. `checkpoint_every_s` is the runner's.
        let effective = serde_json::to_value(AmmsbParams::from_json(params)?).expect("plain data serialises");
        Ok(crate::models::params::with_requested_checkpoint_every(params, effective))
    }

    fn check_params(&self, params: &serde_json::Value, graph: &GraphStats) -> Result<(), ParamError> {
        AmmsbParams::from_json(params)?.check_against(graph)
    }

    fn fit(&self, graph: &Graph, params: &serde_json::Value, seed: u64, ctx: &FitContext) -> Result<Box<dyn CommunityModel>, FitError> {
        let p = AmmsbParams::from_json(params)?;
        let stats = GraphStats {
            num_nodes: graph.num_nodes(),
            num_edges: graph.num_edges(),
            directed: graph.directed,
            self_loops_dropped: 0,
            duplicate_edges_dropped: 0,
        };
        p.check_against(&stats)?;
        Ok(Box::new(fit_ammsb(graph, &p, seed, ctx)?))
    }

    fn fit_memory(&self, graph: &GraphStats, params: &serde_json::Value, threads: usize) -> u64 {
        let p = AmmsbParams::from_json(params).or_else(|_| AmmsbParams::from_json(&serde_json::json!({}))).expect("the defaults parse");
        crate::models::memory::ammsb(graph, &p, threads)
    }

    fn decode(&self, bytes: &[u8]) -> Result<Box<dyn CommunityModel>, ModelError> {
        Ok(Box::new(AmmsbModel::decode(bytes)?))
    }
}

/// A fitted HDP-aMMSB: the final variational posterior and how the fit went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AmmsbModel {
    pub version: u32,
    pub params: AmmsbParams,
    pub node_names: Vec<String>,
    pub directed: bool,
    pub num_edges: usize,
    /// Memoized batches used.
    pub batches: usize,
    /// The background link probability used (given or defaulted).
    pub epsilon: f64,
    /// q(π), q(φ), q(u) after the last pass.
    pub state: GlobalState,
    /// The objective after each full pass.
    pub objective_trace: Vec<f64>,
    /// Whether the last pass gained less than `params.tolerance` per pair.
    pub converged: bool,
    /// Global steps in which the stick optimiser fell back (ρ alone, or kept its start).
    pub stick_fallbacks: usize,
}

impl AmmsbModel {
    pub fn encode_bytes(&self) -> Vec<u8> {
        postcard::to_allocvec(self).expect("an HDP-aMMSB model always encodes")
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, ModelError> {
        let decode_error = |e: postcard::Error| ModelError::Decode(e.to_string());
        // The version first, so a future layout is named as such rather than failing
        // somewhere inside the struct.
        let (version, _) = postcard::take_from_bytes::<u32>(bytes).map_err(decode_error)?;
        if version != ENCODING_VERSION {
            return Err(ModelError::Decode(format!("HDP-aMMSB encoding version {version} is not {ENCODING_VERSION}")));
        }
        let m: AmmsbModel = postcard::from_bytes(bytes).map_err(decode_error)?;
        let s = &m.state;
        let (n, k) = (s.num_nodes, s.num_communities);
        if m.node_names.len() != n
            || Some(s.theta.len()) != k.checked_add(1).and_then(|k1| n.checked_mul(k1))
            || s.link_on.len() != k
            || s.link_off.len() != k
            || s.stick.num_topics() != k
        {
            return Err(ModelError::Decode("HDP-aMMSB model arrays disagree with its node and community counts".into()));
        }
        Ok(m)
    }

    /// Ids of the communities whose expected size is at least [`ACTIVE_SIZE`].
    pub fn active_of(state: &GlobalState) -> Vec<usize> {
        let k = state.num_communities;
        let mut size = vec![0.0; k];
        for i in 0..state.num_nodes {
            for (s, p) in size.iter_mut().zip(state.expected_pi(i)) {
                *s += p;
            }
        }
        (0..k).filter(|&c| size[c] >= ACTIVE_SIZE).collect()
    }

    pub fn active_communities(&self) -> Vec<usize> {
        Self::active_of(&self.state)
    }

    /// E[π_i] over all K communities and the remainder (last).
    pub fn membership(&self, i: usize) -> Vec<f64> {
        self.state.expected_pi(i)
    }

    pub fn final_objective(&self) -> f64 {
        self.objective_trace.last().copied().unwrap_or(f64::NAN)
    }
}

impl CommunityModel for AmmsbModel {
    fn family(&self) -> &'static str {
        "hdp_ammsb"
    }

    fn num_communities(&self) -> usize {
        self.active_communities().len()
    }

    fn communities(&self) -> Communities {
        let active = self.active_communities();
        let nodes: Vec<NodeMembership> = self
            .node_names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let pi = self.membership(i);
                NodeMembership { node: name.clone(), membership: active.iter().map(|&c| pi[c]).collect() }
            })
            .collect();
        let links = self.state.link_probability();
        let communities = active
            .iter()
            .enumerate()
            .map(|(slot, &c)| CommunitySummary { id: c, link_probability: links[c], size: nodes.iter().map(|m| m.membership[slot]).sum() })
            .collect();
        Communities { nodes, communities }
    }

    fn diagnostics(&self) -> serde_json::Value {
        let pairs = crate::graph::observed_pairs(self.node_names.len(), self.directed);
        let objective = self.final_objective();
        let shown = &self.objective_trace[self.objective_trace.len().saturating_sub(TRACE_SHOWN)..];
        json!({
            "objective": objective,
            "objective_per_pair": objective / pairs as f64,
            "passes": self.objective_trace.len(),
            "converged": self.converged,
            "truncation": self.state.num_communities,
            "active_communities": self.num_communities(),
            "batches": self.batches,
            "stick_fallbacks": self.stick_fallbacks,
            "epsilon": self.epsilon,
            "nodes": self.node_names.len(),
            "edges": self.num_edges,
            "directed": self.directed,
            "objective_trace": shown,
        })
    }

    fn encode(&self) -> Vec<u8> {
        self.encode_bytes()
    }

    fn memory_bytes(&self) -> usize {
        use crate::heap_size::{strings, vec};
        let state = &self.state;
        strings(&self.node_names)
            + vec(&state.stick.rho)
            + vec(&state.stick.omega)
            + vec(&state.theta)
            + vec(&state.link_on)
            + vec(&state.link_off)
            + vec(&self.objective_trace)
    }
}
