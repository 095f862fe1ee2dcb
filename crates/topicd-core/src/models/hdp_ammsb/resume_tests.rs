//! Checks of the HDP-aMMSB fit on the pass driver: fits are pinned to the model bytes
//! the pass loop before the driver produced (undirected and directed graphs, every pass
//! run, an early convergence), and a fit interrupted at a checkpoint and resumed on
//! another thread count ends with exactly the bytes of the uninterrupted fit, converging
//! at the same pass.

use super::fit::{fit_ammsb, AmmsbPasses};
use super::fit_tests::planted;
use super::init::initial_state;
use super::model::AmmsbModel;
use super::params::AmmsbParams;
use crate::graph::Graph;
use crate::models::chain::Resume;
use crate::models::passes::{unusable_checkpoints, PassCheckpoint};
use crate::models::test_kit::{recorded_run, Run, SEED};
use crate::models::FitContext;
use serde_json::json;

/// CRC-64/XZ of a model's encoding (it holds no timings) in the layout the pins were
/// recorded in (before `threads` left the parameters).
fn fingerprint(model: &AmmsbModel) -> u64 {
    crc::Crc::<u64>::new(&crc::CRC_64_XZ).checksum(&super::model::as_before_threads_left(&model.encode_bytes()))
}

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

/// Fit on `threads` threads, checkpointing after every pass, from `resume` if given.
fn fit(graph: &Graph, p: &AmmsbParams, threads: usize, resume: Option<&[u8]>) -> Run<AmmsbModel> {
    recorded_run(threads, resume, |ctx| fit_ammsb(graph, p, SEED, ctx).expect("fit runs"))
}

/// The same (graph, params, seed) gives the model bytes it gave before the driver, and
/// checkpointing after every pass changes nothing.
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
        let checkpointed = fit(&graph, &p, 1, None);
        assert!(checkpointed.model.encode_bytes() == model.encode_bytes(), "{name}: checkpoints change nothing");
    }
    assert!(differ.is_empty(), "fingerprints differ: {differ:?}");
}

/// Interrupted after the first pass, the middle one and the last but one, and resumed on
/// 2 threads (the original ran on 1): the same bytes, and a fit that converged does so
/// at the same pass.
#[test]
fn a_resumed_fit_equals_the_uninterrupted_one() {
    for (name, graph, params, _) in cases() {
        let p = AmmsbParams::from_json(&params).unwrap();
        let full = fit(&graph, &p, 1, None);
        assert!(full.resumed.is_empty());
        let n = full.model.objective_trace.len();
        assert_eq!(full.checkpoints.iter().map(|c| c.0 as usize).collect::<Vec<_>>(), (1..n).collect::<Vec<_>>(), "{name}: one per pass but the last");
        for pass in [1, n / 2, n - 1] {
            let resumed = fit(&graph, &p, 2, Some(&full.checkpoints[pass - 1].1));
            assert_eq!(resumed.resumed, vec![Resume::From(pass as u64)], "{name} after {pass}");
            assert_eq!((resumed.model.objective_trace.len(), resumed.model.converged), (n, full.model.converged), "{name}: resumed after pass {pass}");
            assert!(resumed.model.encode_bytes() == full.model.encode_bytes(), "{name}: resumed after pass {pass}, the model differs");
            assert_eq!(resumed.checkpoints.first().map(|c| c.0 as usize), Some(pass + 1).filter(|&next| next < n), "{name} after {pass}");
        }
    }
}

/// A checkpoint that does not decode, is cut short, belongs to other parameters or
/// another seed, or carries a state shaped for another truncation is rejected and the
/// fit starts over (and so still ends with the same model).
#[test]
fn unusable_checkpoints_are_rejected_and_the_fit_starts_over() {
    let (_, graph, params, _) = cases().remove(0);
    let p = AmmsbParams::from_json(&params).unwrap();
    let full = fit(&graph, &p, 1, None);
    let good = &full.checkpoints[4].1;
    let decoded = |b: &[u8], p: &AmmsbParams| PassCheckpoint::decode_for(b, &AmmsbPasses::new(&graph, p, initial_state(&graph, p, SEED)), SEED).unwrap();
    let other = AmmsbParams { communities: 5, ..p.clone() };
    let for_other = fit(&graph, &other, 1, None).checkpoints[4].1.clone();
    let bad = unusable_checkpoints(good, &decoded(good, &p), &for_other, &decoded(&for_other, &other));
    for (i, b) in bad.iter().enumerate() {
        let run = fit(&graph, &p, 1, Some(b));
        assert!(matches!(&run.resumed[..], [Resume::Rejected(r)] if r.contains("starting from iteration 0")), "case {i}: {:?}", run.resumed);
        assert!(run.model.encode_bytes() == full.model.encode_bytes(), "case {i}: a fit that started over ends as a fresh one");
    }
}
