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
use crate::models::{FitContext, FitError, FitParams, ModelError, ParamError};

/// The `"hdp_ammsb"` family.
pub struct HdpAmmsbFamily;

pub static HDP_AMMSB: HdpAmmsbFamily = HdpAmmsbFamily;

impl CommunityFamily for HdpAmmsbFamily {
    fn name(&self) -> &'static str {
        "hdp_ammsb"
    }

    fn parse_params(&self, params: &serde_json::Value) -> Result<FitParams, ParamError> {
        // The struct's fields are the wire names; `epsilon` and `batches` stay null when
        // they default to values the graph decides.
        Ok(FitParams::serialized(self.name(), AmmsbParams::from_json(params)?))
    }

    fn check_params(&self, params: &FitParams, graph: &GraphStats) -> Result<(), ParamError> {
        params.get::<AmmsbParams>().check_against(graph)
    }

    fn fit(&self, graph: &Graph, params: &FitParams, seed: u64, ctx: &FitContext) -> Result<Box<dyn CommunityModel>, FitError> {
        let p = params.get::<AmmsbParams>();
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

    fn fit_memory(&self, graph: &GraphStats, params: &FitParams, threads: usize) -> u64 {
        super::fit_memory::estimate(graph, params.get::<AmmsbParams>(), threads)
    }

    fn quick_params(&self) -> serde_json::Value {
        serde_json::json!({"communities": 2, "passes": 3})
    }

    fn decode(&self, bytes: &[u8]) -> Result<Box<dyn CommunityModel>, ModelError> {
        Ok(Box::new(AmmsbModel::decode(bytes)?))
    }
}
