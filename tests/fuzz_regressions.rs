//! The fuzz targets (`topicd::fuzzing`) in the normal test run: every input of the
//! regression corpus (`tests/data/fuzz_regressions/<target>/`, inputs `fuzz/run.sh`
//! found) replayed, and bounded property checks over arbitrary and mutated valid inputs.
//! An entry may return an error; a panic fails the test.

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use std::path::Path;
use topicd::fuzzing::{target, valid_inputs, TARGETS};

fn regressions_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fuzz_regressions")
}

#[test]
fn every_regression_input_replays_without_a_panic() {
    let dir = regressions_dir();
    let mut replayed = 0;
    for entry in std::fs::read_dir(&dir).expect("the regression corpus exists") {
        let folder = entry.unwrap().path();
        if !folder.is_dir() {
            continue;
        }
        let name = folder.file_name().unwrap().to_string_lossy().to_string();
        let run = target(&name).unwrap_or_else(|| panic!("{}: no fuzz target is called {name}", folder.display()));
        for file in std::fs::read_dir(&folder).unwrap() {
            let path = file.unwrap().path();
            let data = std::fs::read(&path).unwrap();
            let outcome = std::panic::catch_unwind(|| run(&data));
            assert!(outcome.is_ok(), "{} panicked", path.display());
            replayed += 1;
        }
    }
    eprintln!("replayed {replayed} regression inputs");
}

#[test]
fn every_target_has_a_regression_folder_and_valid_inputs_it_accepts() {
    let mut refused = Vec::new();
    for (name, run) in TARGETS {
        assert!(regressions_dir().join(name).is_dir(), "tests/data/fuzz_regressions/{name}/ is missing");
        let valid = valid_inputs(name);
        assert!(!valid.is_empty(), "{name} has no valid inputs");
        for (i, input) in valid.iter().enumerate() {
            if let Err(e) = run(input) {
                refused.push(format!("{name}: valid input {i} is refused: {e}"));
            }
        }
    }
    assert!(refused.is_empty(), "{refused:#?}");
    // One model blob and at least one checkpoint per registered family.
    assert_eq!(valid_inputs("model_blob").len(), topicd::models::registry::REGISTRY.len());
    let families: std::collections::BTreeSet<u8> = valid_inputs("checkpoint_resume").iter().map(|c| c[0]).collect();
    assert_eq!(families.len(), topicd::models::registry::REGISTRY.len(), "a checkpoint of every family");
}

/// A change to a valid input: flip a bit, cut it short, drop a range, insert bytes or
/// overwrite bytes with one (0x00 / 0xff are the lengths and varints a decoder reads).
#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Truncate(usize),
    Remove(usize, usize),
    Insert(usize, Vec<u8>),
    Fill(usize, usize, u8),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 0u8..8).prop_map(|(at, bit)| Mutation::Flip(at, bit)),
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), 1usize..16).prop_map(|(at, n)| Mutation::Remove(at, n)),
        (any::<usize>(), proptest::collection::vec(any::<u8>(), 1..12)).prop_map(|(at, b)| Mutation::Insert(at, b)),
        (any::<usize>(), 1usize..10, prop_oneof![Just(0u8), Just(0xff), Just(0x7f), Just(0x80), any::<u8>()]).prop_map(|(at, n, b)| Mutation::Fill(at, n, b)),
    ]
}

fn mutate(mut data: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for m in mutations {
        let len = data.len();
        match m {
            Mutation::Flip(at, bit) if len > 0 => data[at % len] ^= 1 << bit,
            Mutation::Truncate(at) => data.truncate(at % (len + 1)),
            Mutation::Remove(at, n) if len > 0 => {
                let start = at % len;
                data.drain(start..(start + n).min(len));
            }
            Mutation::Insert(at, bytes) => {
                let at = at % (len + 1);
                data.splice(at..at, bytes.iter().copied());
            }
            Mutation::Fill(at, n, b) if len > 0 => {
                let start = at % len;
                data[start..(start + n).min(len)].fill(*b);
            }
            _ => {}
        }
    }
    data
}

/// A runner with a fixed seed: the same cases every run, so the suite's outcome does not
/// depend on luck; exploring new inputs is `fuzz/run.sh`'s job, and what it finds joins
/// the regression corpus above.
fn runner(cases: u32) -> TestRunner {
    let config = Config { cases, failure_persistence: None, ..Config::default() };
    TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha))
}

/// Cases per target: the checkpoint target runs a small fit per case.
fn cases(name: &str, arbitrary: bool) -> u32 {
    match (name, arbitrary) {
        ("checkpoint_resume", true) => 16,
        ("checkpoint_resume", false) => 96,
        ("model_blob", false) => 400,
        (_, true) => 256,
        (_, false) => 256,
    }
}

#[test]
fn arbitrary_bytes_never_panic() {
    for (name, run) in TARGETS {
        let strategy = proptest::collection::vec(any::<u8>(), 0..600);
        runner(cases(name, true))
            .run(&strategy, |data| {
                let _ = run(&data);
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn arbitrary_text_never_panics() {
    for name in ["corpus_json", "label_tree", "tokenize", "graph_json"] {
        let run = target(name).unwrap();
        runner(256)
            .run(&any::<String>(), |s| {
                let _ = run(s.as_bytes());
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn mutated_valid_inputs_never_panic() {
    for (name, run) in TARGETS {
        let valid = valid_inputs(name);
        let strategy = (0..valid.len(), proptest::collection::vec(mutation(), 1..4));
        runner(cases(name, false))
            .run(&strategy, |(i, mutations)| {
                let data = mutate(valid[i].clone(), &mutations);
                let _ = run(&data);
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}
