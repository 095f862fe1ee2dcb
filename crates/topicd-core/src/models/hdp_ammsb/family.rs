//! The `hdp_ammsb` family ([`HDP_AMMSB`]), the registry's seam for HDP-aMMSB.
//!
//! Why it exists: the family checks parameters against the uploaded graph, fits
//! through [`super::fit::fit_ammsb`] and decodes the stored [`AmmsbModel`]. The fit
//! builds that model, so the family cannot live beside it in [`super::model`] without
//! an import circle (model → fit → model); here it sits above every other module of
//! the folder and none of them names it.

use super::fit::fit_ammsb;
use super::model::AmmsbModel;
use super::params::AmmsbParams;
use crate::graph::{Graph, GraphStats};
use crate::models::community::{CommunityFamily, CommunityModel};
use crate::models::{FitContext, FitError, ModelError, ParamError};

/// The `"hdp_ammsb"` family.
pub struct HdpAmmsbFamily;

pub static HDP_AMMSB: HdpAmmsbFamily = HdpAmmsbFamily;

impl CommunityFamily for HdpAmmsbFamily {
    fn name(&self) -> &'static str {
        "hdp_ammsb"
    }

    type Params = AmmsbParams;

    fn parse_params(&self, params: &serde_json::Value) -> Result<AmmsbParams, ParamError> {
        AmmsbParams::from_json(params)
    }

    fn params_json(&self, params: &AmmsbParams) -> serde_json::Value {
        // The struct's fields are the wire names; `epsilon` and `batches` stay null when
        // they default to values the graph decides.
        serde_json::to_value(params).expect("plain data serialises")
    }

    fn check_params(&self, params: &AmmsbParams, graph: &GraphStats) -> Result<(), ParamError> {
        params.check_against(graph)
    }

    fn fit(&self, graph: &Graph, params: &AmmsbParams, seed: u64, ctx: &FitContext) -> Result<Box<dyn CommunityModel>, FitError> {
        let p = params;
        let stats = GraphStats {
            num_nodes: graph.num_nodes(),
            num_edges: graph.num_edges(),
            directed: graph.directed,
            self_loops_dropped: 0,
            duplicate_edges_dropped: 0,
        };
        p.check_against(&stats)?;
        Ok(Box::new(fit_ammsb(graph, p, seed, ctx)?))
    }

    fn fit_memory(&self, graph: &GraphStats, params: &AmmsbParams, threads: usize) -> u64 {
        super::fit_memory::estimate(graph, params, threads)
    }

    fn quick_params(&self) -> AmmsbParams {
        AmmsbParams::from_json(&serde_json::json!({"communities": 2, "passes": 3})).expect("valid brief-fit params")
    }

    fn decode(&self, bytes: &[u8]) -> Result<Box<dyn CommunityModel>, ModelError> {
        Ok(Box::new(AmmsbModel::decode(bytes)?))
    }
}
