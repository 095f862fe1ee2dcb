//! The stored `hdp_ammsb` model.
//!
//! Why it exists: it is the fitted, served form of the variational fit: the versioned
//! encoding and what a fitted model reports (memberships, communities, diagnostics).
//! The family ([`super::family`]: parameter checking against the uploaded graph,
//! fitting through [`super::fit::fit_ammsb`], decoding) sits above it, so the fit can
//! build this model without the model naming the fit.
//!
//! Reported communities are the *active* ones, by increasing id (their index in the
//! truncation): those whose expected size Σ_i E[π_ik] is at least [`ACTIVE_SIZE`], one
//! node's worth of membership. A community the data do not use keeps only its prior
//! share, Σ_i E[π_ik] ≈ N α E[β_k] / (P + α) ≤ α E[β_k] N/(N − 1) (P = pairs per node
//! ≥ N − 1), below one for the default α = 0.5 on any graph of three or more nodes.
//! Directed graphs are supported: both
//! directions of a node pair are observed separately, the sender's membership choosing s
//! and the receiver's r.

use super::params::{AmmsbParams, AmmsbParamsV1};
use super::state::GlobalState;
use crate::models::community::{Communities, CommunityModel, CommunitySummary, NodeMembership};
use crate::models::encoding_upgrade::with_params_converted;
use crate::models::ModelError;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Format version of [`AmmsbModel`]'s encoding (2: the parameters without the job's
/// `threads`; version 1 still decodes).
pub const ENCODING_VERSION: u32 = 2;
/// Expected size (in nodes) from which a community is reported.
pub const ACTIVE_SIZE: f64 = 1.0;
/// Objective values kept in the diagnostics (the last ones).
const TRACE_SHOWN: usize = 200;

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

/// Test support: a current blob in version 1's layout (`threads` 0 among the
/// parameters), against which pins recorded before `threads` left are checked.
#[cfg(test)]
pub(crate) fn as_before_threads_left(bytes: &[u8]) -> Vec<u8> {
    with_params_converted(bytes, |v: u32, p: AmmsbParams| (v - 1, AmmsbParamsV1::from(&p))).expect("a current HDP-aMMSB blob")
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
        let current = match version {
            ENCODING_VERSION => std::borrow::Cow::Borrowed(bytes),
            // Version 1 is version 2 with `threads` among the parameters.
            1 => with_params_converted(bytes, |_: u32, p: AmmsbParamsV1| (ENCODING_VERSION, AmmsbParams::from(p))).map_err(decode_error)?.into(),
            v => return Err(ModelError::Decode(format!("HDP-aMMSB encoding version {v} is not {ENCODING_VERSION} or 1"))),
        };
        let m: AmmsbModel = postcard::from_bytes(&current).map_err(decode_error)?;
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
