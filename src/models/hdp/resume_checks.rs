//! Checks of the HDP fit's bytes: fits are pinned to the models the pass loop before the
//! pass driver produced (merges and deletes accepted, an early convergence, a held-out
//! split scored by document completion).

use super::fit::fit_memoized;
use super::fit_tests::{appstream_corpus, planted_corpus, V};
use super::*;
use serde_json::json;

/// CRC-64/XZ of a model's encoding with the pass timings zeroed (wall-clock seconds are
/// the one thing two runs of the same fit may differ in).
fn fingerprint(model: &HdpModel) -> u64 {
    let mut m = model.clone();
    m.passes.iter_mut().for_each(|p| p.seconds = 0.0);
    crc::Crc::<u64>::new(&crc::CRC_64_XZ).checksum(&m.encode())
}

const SEED: u64 = 7;

/// The planted corpus the direct cases fit: 150 documents of 50 tokens over 60 words.
fn planted() -> DocTermMatrix {
    planted_corpus(150, 50, 31)
}

/// Configurations fitted on the planted corpus through `fit_memoized`, with the
/// fingerprint of the model the loop before the pass driver produced for each (on x86-64).
fn direct_cases() -> Vec<(&'static str, serde_json::Value, u64)> {
    vec![
        ("moves", json!({"topics": 10, "batches": 3, "passes": 10, "merge_every": 2, "delete_every": 2, "convergence_tolerance": 0}), PIN_MOVES),
        ("converges", json!({"topics": 8, "batches": 2, "passes": 60}), PIN_CONVERGES),
    ]
}

const PIN_MOVES: u64 = 0x08edd1f64886209e;
const PIN_CONVERGES: u64 = 0x60dcdf2844e97b91;
const PIN_HELDOUT: u64 = 0xf4b6ec871ab74964;

/// The held-out case: the family's path on appstream, a fifth of the documents scored by
/// document completion.
fn heldout_params() -> serde_json::Value {
    json!({"topics": 8, "batches": 2, "passes": 4, "test_fraction": 0.2})
}

fn fit_direct(m: &DocTermMatrix, p: &HdpParams, ctx: &FitContext) -> HdpModel {
    let out = fit_memoized(m, V, p, SEED, ctx).expect("fit runs");
    HdpModel::from_fit(out, p.clone(), V, m.total_tokens())
}

#[test]
fn fits_are_pinned_to_the_bytes_before_the_pass_driver() {
    let m = planted();
    let mut differ = Vec::new();
    for (name, params, pin) in direct_cases() {
        let p = HdpParams::from_json(&params).unwrap();
        let model = FitContext::silent(|ctx| fit_direct(&m, &p, ctx));
        let merges = model.passes.iter().map(|r| r.merges_accepted).sum::<usize>();
        let deletes = model.passes.iter().filter(|r| r.deleted).count();
        eprintln!("{name}: {:#018x} passes {} K {} merges {merges} deletes {deletes}", fingerprint(&model), model.passes.len(), model.num_topics);
        match name {
            "moves" => assert!(merges > 0 && deletes > 0, "{name}: the case must accept merges and deletes"),
            _ => assert!(model.passes.len() < p.passes, "{name}: the case must converge early"),
        }
        if fingerprint(&model) != pin {
            differ.push(format!("{name}: {:#018x}", fingerprint(&model)));
        }
    }
    let corpus = appstream_corpus();
    let p = HdpParams::from_json(&heldout_params()).unwrap();
    let model = FitContext::silent(|ctx| fit_hdp(&corpus, &p, SEED, ctx)).unwrap();
    eprintln!("heldout: {:#018x} passes {} test docs {}", fingerprint(&model), model.passes.len(), model.test_documents);
    if fingerprint(&model) != PIN_HELDOUT {
        differ.push(format!("heldout: {:#018x}", fingerprint(&model)));
    }
    assert!(differ.is_empty(), "fingerprints differ: {differ:?}");
}
