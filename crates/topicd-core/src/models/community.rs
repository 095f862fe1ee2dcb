//! Relational models: the trait pair every community model on a graph implements.
//!
//! Why it exists: graph models fit a [`Graph`] rather than a corpus and answer a
//! different question (who belongs to which community), but share the rest of the
//! spine with topic models: jobs, progress, cancellation, parameter errors that name
//! the field, and a versioned encoding the store keeps. A [`CommunityFamily`] checks
//! parameters, fits and decodes; a fitted [`CommunityModel`] reports its communities.
//! Adding one means a folder under `models/` and a line in [`super::registry::REGISTRY`].

use super::{FitContext, FitError, ModelError, ParamError};
use crate::graph::{Graph, GraphStats};

/// A kind of relational model, typed: parameter checking, fitting and decoding (seen by
/// the registry through [`super::erased::CommunityEntry`], as topic families are).
pub trait CommunityFamily: Sync + 'static {
    /// The family's parameters, every default filled in.
    type Params: Clone + std::fmt::Debug + Send + Sync + 'static;
    /// Wire name used in `POST /v1/jobs` with a `graph_id`.
    fn name(&self) -> &'static str;
    /// Parse `params` (a JSON object) into [`Self::Params`], defaults filled in; errors
    /// name the field (see [`super::ModelFamily::parse_params`]).
    fn parse_params(&self, params: &serde_json::Value) -> Result<Self::Params, ParamError>;
    /// The stored form of `params`, which [`Self::parse_params`] reads back.
    fn params_json(&self, params: &Self::Params) -> serde_json::Value;
    /// Check `params` against the graph before a job is queued.
    fn check_params(&self, params: &Self::Params, graph: &GraphStats) -> Result<(), ParamError>;
    /// Peak resident memory of this family's fit as the service runs it (the decoded
    /// graph, the state, the memo, checkpoint bytes while one is written, the encoded
    /// model), in bytes, from the graph summary, the params and `threads` (see
    /// [`super::ModelFamily::fit_memory`]).
    fn fit_memory(&self, graph: &GraphStats, params: &Self::Params, threads: usize) -> u64;
    /// Fit on `graph`. Must poll `ctx.cancel` at least once per pass.
    fn fit(&self, graph: &Graph, params: &Self::Params, seed: u64, ctx: &FitContext) -> Result<Box<dyn CommunityModel>, FitError>;
    /// Params of a brief fit on any small graph (see [`super::ModelFamily::quick_params`]).
    fn quick_params(&self) -> Self::Params;
    /// Decode a model previously produced by [`CommunityModel::encode`].
    fn decode(&self, bytes: &[u8]) -> Result<Box<dyn CommunityModel>, ModelError>;
    /// What a fitted model of this family offers.
    fn capabilities(&self) -> super::capabilities::Capabilities {
        super::capabilities::Capabilities::COMMUNITY_MODEL
    }
    /// The JSON Schema of the family's params, generated from its parser (see
    /// [`super::ModelFamily::params_schema`]).
    fn params_schema(&self) -> super::params::ParamsSchema {
        super::params::record_schema(&super::params::component_name(self.name()), || {
            let _ = self.parse_params(&serde_json::json!({}));
        })
    }
}

/// A fitted relational model.
pub trait CommunityModel: Send + Sync {
    /// The family's wire name.
    fn family(&self) -> &'static str;
    /// Number of communities reported (active ones, in the order of [`Communities`]).
    fn num_communities(&self) -> usize;
    /// Each node's membership and each community's summary.
    fn communities(&self) -> Communities;
    /// Fit diagnostics shown by `GET /v1/models/{id}` (plain JSON data).
    fn diagnostics(&self) -> serde_json::Value;
    /// A versioned binary encoding, decoded by [`CommunityFamily::decode`].
    fn encode(&self) -> Vec<u8>;
    /// Bytes this decoded model holds on the heap (see [`super::TopicModel::memory_bytes`]).
    fn memory_bytes(&self) -> usize;
}

/// What `GET /v1/models/{id}/communities` shows.
#[derive(Debug, Clone, PartialEq)]
pub struct Communities {
    pub nodes: Vec<NodeMembership>,
    pub communities: Vec<CommunitySummary>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NodeMembership {
    pub node: String,
    /// Expected membership weights over the reported communities (sums to at most 1:
    /// the rest is the mass on communities not instantiated).
    pub membership: Vec<f64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CommunitySummary {
    pub id: usize,
    /// Posterior mean probability of a link between two nodes both acting in this
    /// community.
    pub link_probability: f64,
    /// Expected size: the sum over nodes of their membership weight in it.
    pub size: f64,
}
