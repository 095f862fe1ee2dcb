//! Checks of HPC and PCM on the chain driver: fits are pinned to the model bytes the
//! scan loop before the driver produced.

use super::fit::fit_hpc;
use super::model::HpcModel;
use super::params::HpcParams;
use super::simulate::{simulate, SimulationConfig};
use crate::corpus::builder::build_corpus;
use crate::corpus::preprocess::{PreprocessOptions, StopWords};
use crate::corpus::Corpus;
use crate::models::{FitContext, TopicModel};
use serde_json::json;

/// CRC-64/XZ of a model's encoding.
fn fingerprint(model: &HpcModel) -> u64 {
    crc::Crc::<u64>::new(&crc::CRC_64_XZ).checksum(&model.encode())
}

/// 360 documents of about 80 tokens over 200 words, drawn from HPC with two levels of
/// labels (3 top labels with 3 children each, K = 12); every seventh document is tagged
/// for a split when `tagged` (test, validation, dev or train in turn), and PCM's copy
/// has no labels.
fn small_corpus(supervised: bool, tagged: bool) -> Corpus {
    let config = SimulationConfig {
        documents: 360,
        words: 200,
        fanout: vec![3, 3],
        psi: -1.0,
        gamma2: 1.0,
        nu: 6.0,
        sigma2: 0.5,
        eta: -2.0,
        lambda2: 1.0,
        mean_length: 80.0,
    };
    let mut docs = simulate(&config, 17).to_raw_documents();
    for (d, doc) in docs.iter_mut().enumerate() {
        if !supervised {
            doc.labels = None;
        }
        if tagged {
            doc.split = ["test", "validation", "train", "dev", "Test", "", "train"].get(d % 7).filter(|t| !t.is_empty()).map(|t| t.to_string());
        }
    }
    build_corpus(PreprocessOptions { stopwords: StopWords::None, ..PreprocessOptions::default() }, &[], docs).expect("corpus builds")
}

/// A configuration the checks fit: its name, whether it is HPC (else PCM), whether the
/// corpus carries split tags, the params, how many documents land in each split, and
/// the fingerprint of the model the scan loop before the chain driver produced
/// (computed with that code, seed [`SEED`], x86-64).
struct Case {
    name: &'static str,
    supervised: bool,
    tagged: bool,
    params: serde_json::Value,
    /// Training, validation and test documents.
    split: (usize, usize, usize),
    pin: u64,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "hpc_splits",
            supervised: true,
            tagged: false,
            params: json!({"iterations": 12, "burn_in": 5, "hessian_every": 3, "validation_fraction": 0.2, "test_fraction": 0.2}),
            split: (219, 75, 66),
            pin: PIN_HPC_SPLITS,
        },
        Case {
            name: "hpc_thinned_full",
            supervised: true,
            tagged: false,
            params: json!({"iterations": 14, "burn_in": 4, "thin": 3, "hessian_every": 2, "rate_curvature": "full", "predictor": "single_label"}),
            split: (312, 48, 0),
            pin: PIN_HPC_THINNED_FULL,
        },
        Case {
            name: "hpc_tagged",
            supervised: true,
            tagged: true,
            params: json!({"iterations": 9, "burn_in": 3, "thin": 2, "hessian_every": 4, "rate_curvature": "tree_diagonal"}),
            split: (154, 103, 103),
            pin: PIN_HPC_TAGGED,
        },
        Case {
            name: "pcm",
            supervised: false,
            tagged: false,
            params: json!({"topics": 4, "iterations": 12, "burn_in": 6, "thin": 2, "hessian_every": 4}),
            split: (360, 0, 0),
            pin: PIN_PCM,
        },
        Case {
            name: "pcm_test_split",
            supervised: false,
            tagged: false,
            params: json!({"topics": 3, "iterations": 8, "burn_in": 2, "thin": 3, "hessian_every": 1, "test_fraction": 0.25, "rate_curvature": "tree_diagonal"}),
            split: (279, 0, 81),
            pin: PIN_PCM_TEST_SPLIT,
        },
    ]
}

const PIN_HPC_SPLITS: u64 = 0x8ea418d025792a05;
const PIN_HPC_THINNED_FULL: u64 = 0x51b46110a5531e9c;
const PIN_HPC_TAGGED: u64 = 0xba88aae6b7e2dc0f;
const PIN_PCM: u64 = 0x95cdd2addbefb132;
const PIN_PCM_TEST_SPLIT: u64 = 0x36de4fb956d62886;

const SEED: u64 = 7;

fn params_of(case: &Case) -> HpcParams {
    HpcParams::from_json(&case.params, case.supervised).expect("params are valid")
}

/// The same (corpus, params, seed) gives the model bytes it gave before the driver.
#[test]
fn fits_are_pinned_to_the_bytes_before_the_chain_driver() {
    let mut wrong = Vec::new();
    for case in cases() {
        let corpus = small_corpus(case.supervised, case.tagged);
        let p = params_of(&case);
        let silent = FitContext::silent(|ctx| fit_hpc(&corpus, &p, case.supervised, SEED, ctx).expect("fit runs"));
        let s = &silent.summary;
        assert_eq!((s.training_documents, s.validation_documents, s.test_documents), case.split, "{}: the documents' roles", case.name);
        if fingerprint(&silent) != case.pin {
            wrong.push(format!("{}: {:#018x}", case.name, fingerprint(&silent)));
        }
    }
    assert!(wrong.is_empty(), "fingerprints changed: {wrong:?}");
}
