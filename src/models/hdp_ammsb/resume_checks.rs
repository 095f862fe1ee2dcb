//! Checks of the HDP-aMMSB fit's bytes: fits are pinned to the models the pass loop
//! before the pass driver produced (undirected and directed graphs, every pass run, an
//! early convergence).

use super::fit::fit_ammsb;
use super::model::AmmsbModel;
use super::params::AmmsbParams;
use super::tests::planted;
use crate::graph::Graph;
use crate::models::FitContext;
use serde_json::json;

/// CRC-64/XZ of a model's encoding (it holds no timings).
fn fingerprint(model: &AmmsbModel) -> u64 {
    crc::Crc::<u64>::new(&crc::CRC_64_XZ).checksum(&model.encode_bytes())
}

const SEED: u64 = 7;

/// The configurations the checks fit: a graph, params, and the fingerprint of the model
/// the loop before the pass driver produced (on x86-64).
fn cases() -> Vec<(&'static str, Graph, serde_json::Value, u64)> {
    vec![
        ("undirected", planted(3, 12, 0.5, 0.05, false, 5).0, json!({"communities": 6, "passes": 12, "tolerance": 0}), PIN_UNDIRECTED),
        ("directed", planted(2, 10, 0.4, 0.05, true, 9).0, json!({"communities": 5, "batches": 3, "passes": 10, "tolerance": 0}), PIN_DIRECTED),
        ("converges", planted(3, 10, 0.6, 0.03, false, 13).0, json!({"communities": 6, "passes": 100}), PIN_CONVERGES),
    ]
}

const PIN_UNDIRECTED: u64 = 0x45e152af5e8068db;
const PIN_DIRECTED: u64 = 0xffa62c2904dae5bf;
const PIN_CONVERGES: u64 = 0xf92cff95becb5aed;

#[test]
fn fits_are_pinned_to_the_bytes_before_the_pass_driver() {
    let mut differ = Vec::new();
    for (name, graph, params, pin) in cases() {
        let p = AmmsbParams::from_json(&params).unwrap();
        let model = FitContext::silent(|ctx| fit_ammsb(&graph, &p, SEED, ctx)).unwrap();
        eprintln!("{name}: {:#018x} passes {} converged {}", fingerprint(&model), model.objective_trace.len(), model.converged);
        assert_eq!(model.converged, name == "converges", "{name}");
        if fingerprint(&model) != pin {
            differ.push(format!("{name}: {:#018x}", fingerprint(&model)));
        }
    }
    assert!(differ.is_empty(), "fingerprints differ: {differ:?}");
}
