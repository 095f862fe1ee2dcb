//! Checks of DCNT and SCNT fits pinned to their model bytes: the same (corpus, params,
//! seed) must keep giving exactly the model the scan loop before the chain driver gave.

use super::fit::fit_dcnt;
use super::model::DcntModel;
use super::params::DcntParams;
use crate::corpus::{build_corpus, Corpus};
use crate::models::lda::sampler::checks::{lda_corpus, raw_options};
use crate::models::{FitContext, TopicModel};
use serde_json::json;

/// CRC-64/XZ of a model's encoding.
fn fingerprint(model: &DcntModel) -> u64 {
    crc::Crc::<u64>::new(&crc::CRC_64_XZ).checksum(&model.encode())
}

/// 120 documents of 40 tokens over 40 words, each with two metadata features.
fn small_corpus() -> Corpus {
    let (_, mut docs) = lda_corpus(4, 40, 120, 40, 0.3, 3);
    for (d, doc) in docs.iter_mut().enumerate() {
        doc.features = Some([("x".to_string(), (d % 5) as f64 / 4.0), ("y".to_string(), ((d * 7) % 3) as f64 - 1.0)].into_iter().collect());
    }
    build_corpus(raw_options(), &[], docs).expect("corpus builds")
}

/// One configuration the checks fit (seed 7).
struct Case {
    name: &'static str,
    /// SCNT (diagonal A) or DCNT.
    diagonal: bool,
    params: serde_json::Value,
    /// The fingerprint of the model the scan loop before the chain driver produced
    /// (computed with that code, on x86-64).
    pin: u64,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "dcnt_features",
            diagonal: false,
            params: json!({"topics": 5, "iterations": 14, "burn_in": 4, "thin": 3, "loglik_every": 4}),
            pin: PIN_DCNT,
        },
        Case { name: "scnt", diagonal: true, params: json!({"topics": 6, "iterations": 12, "burn_in": 5, "thin": 2, "topic_swaps": 3}), pin: PIN_SCNT },
        Case {
            name: "dcnt_no_swaps",
            diagonal: false,
            params: json!({"topics": 4, "iterations": 10, "burn_in": 2, "thin": 1, "topic_swaps": 0}),
            pin: PIN_NO_SWAPS,
        },
        // No scan falls on the thinning grid: the final state stands in for the means.
        Case { name: "scnt_none_kept", diagonal: true, params: json!({"topics": 4, "iterations": 8, "burn_in": 6, "thin": 5}), pin: PIN_NONE_KEPT },
        Case {
            name: "dcnt_heldout",
            diagonal: false,
            params: json!({"topics": 4, "iterations": 10, "burn_in": 4, "thin": 2, "test_fraction": 0.2,
                           "heldout_burn_in": 4, "heldout_chain_length": 8, "heldout_acceptance_samples": 8}),
            pin: PIN_HELDOUT,
        },
    ]
}

const PIN_DCNT: u64 = 0xd1fae8a74f2cd72b;
const PIN_SCNT: u64 = 0xdc225bbcffc82672;
const PIN_NO_SWAPS: u64 = 0x652a1203614e2cd0;
const PIN_NONE_KEPT: u64 = 0x44762a9a90969114;
const PIN_HELDOUT: u64 = 0xb0719fabce173515;

const SEED: u64 = 7;

/// The same (corpus, params, seed) gives the model bytes it gave before the driver.
#[test]
fn fits_are_pinned_to_the_bytes_before_the_chain_driver() {
    let corpus = small_corpus();
    let fitted: Vec<(&str, u64, u64)> = cases()
        .into_iter()
        .map(|case| {
            let p = DcntParams::from_json(&case.params).unwrap();
            let model = FitContext::silent(|ctx| fit_dcnt(&corpus, &p, case.diagonal, SEED, ctx).unwrap());
            (case.name, fingerprint(&model), case.pin)
        })
        .collect();
    for (name, got, pin) in &fitted {
        assert_eq!(got, pin, "{name}: {got:#018x}; all: {fitted:#x?}");
    }
}
