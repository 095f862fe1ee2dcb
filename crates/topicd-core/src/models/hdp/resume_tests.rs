//! Checks of the HDP fit on the pass driver: fits are pinned to the model bytes the pass
//! loop before the driver produced (merges and deletes accepted, an early convergence,
//! a held-out split scored by document completion), and a fit interrupted at a
//! checkpoint and resumed on another thread count ends with exactly the bytes of the
//! uninterrupted fit, converging at the same pass.

use super::fit_tests::{appstream_corpus, planted_corpus, V};
use super::passes::fit_memoized;
use super::*;
use crate::corpus::{Corpus, DocTermMatrix};
use crate::models::chain::Resume;
use crate::models::passes::{unusable_checkpoints, PassCheckpoint};
use crate::models::test_kit::{recorded_run, Run, SEED};
use crate::models::{FitContext, TopicModel};
use serde_json::json;

/// CRC-64/XZ of [`bytes`] in the layout the pins were recorded in (before `threads`
/// left the parameters: [`super::model::as_before_threads_left`]).
fn fingerprint(model: &HdpModel) -> u64 {
    crc::Crc::<u64>::new(&crc::CRC_64_XZ).checksum(&super::model::as_before_threads_left(&model.encode()))
}

/// What a case fits.
enum Input {
    /// The planted corpus (150 documents of 50 tokens over 60 words) through `fit_memoized`.
    Planted(DocTermMatrix),
    /// Appstream through the family's path (`fit_hdp`: held-out split, completion).
    Corpus(Box<Corpus>),
}

impl Input {
    fn fit(&self, p: &HdpParams, ctx: &FitContext) -> HdpModel {
        match self {
            Input::Planted(m) => {
                let out = fit_memoized(m, V, p, SEED, ctx).expect("fit runs");
                HdpModel::from_fit(out, p.clone(), V, m.total_tokens())
            }
            Input::Corpus(c) => fit_hdp(c, p, SEED, ctx).expect("fit runs"),
        }
    }
}

/// The configurations the checks fit, with the fingerprint of the model each gives
/// (x86-64; see the pins).
fn cases() -> Vec<(&'static str, Input, HdpParams, u64)> {
    let planted = || Input::Planted(planted_corpus(150, 50, 31));
    let params = |v: serde_json::Value| HdpParams::from_json(&v).unwrap();
    vec![
        (
            "moves",
            planted(),
            params(json!({"topics": 10, "batches": 3, "passes": 10, "merge_every": 2, "delete_every": 2, "convergence_tolerance": 0})),
            PIN_MOVES,
        ),
        ("converges", planted(), params(json!({"topics": 8, "batches": 2, "passes": 60})), PIN_CONVERGES),
        ("heldout", Input::Corpus(Box::new(appstream_corpus())), params(json!({"topics": 8, "batches": 2, "passes": 4, "test_fraction": 0.2})), PIN_HELDOUT),
    ]
}

// Recorded when batch summaries became split-independent (topic-word counts summed
// exactly, the other statistics chunk by chunk: `exact_counts`, `local::CHUNK`), which
// moved every fit by rounding (each contribution to a multiple of 2^-30); the pass driver's
// bytes had been pinned before that, and the pins still guard the driver and resumes.
// Re-pinned when the delete proposal changed (absorbing start, cold starts, refinement;
// decision 0070), which moved every fit that proposes deletes.
const PIN_MOVES: u64 = 0xa655e4a1396bfc60;
const PIN_CONVERGES: u64 = 0xb1bc7c3e558e5f26;
const PIN_HELDOUT: u64 = 0xea351dd09c281360;

/// Fit on `threads` threads, checkpointing after every pass, from `resume` if given.
fn fit(input: &Input, p: &HdpParams, threads: usize, resume: Option<&[u8]>) -> Run<HdpModel> {
    recorded_run(threads, resume, |ctx| input.fit(p, ctx))
}

/// The same (corpus, params, seed) gives the model bytes it gave before the driver,
/// checkpointing after every pass changes nothing, and the cases do what they are for.
#[test]
fn fits_are_pinned_to_the_bytes_before_the_pass_driver() {
    let mut differ = Vec::new();
    for (name, input, p, pin) in cases() {
        let silent = FitContext::silent(|ctx| input.fit(&p, ctx));
        let merges = silent.passes.iter().map(|r| r.merges_accepted).sum::<usize>();
        let deletes = silent.passes.iter().filter(|r| r.deleted).count();
        eprintln!("{name}: {:#018x} passes {} K {} merges {merges} deletes {deletes}", fingerprint(&silent), silent.passes.len(), silent.num_topics);
        match name {
            "moves" => assert!(merges > 0 && deletes > 0, "{name}: the case must accept merges and deletes"),
            "converges" => assert!(silent.passes.len() < p.passes, "{name}: the case must converge early"),
            _ => assert!(silent.test_documents > 0 && silent.heldout.is_some(), "{name}: the case must score a test split"),
        }
        if fingerprint(&silent) != pin {
            differ.push(format!("{name}: {:#018x}", fingerprint(&silent)));
        }
        let checkpointed = fit(&input, &p, 1, None);
        assert_eq!(checkpointed.model.encode(), silent.encode(), "{name}: checkpoints change nothing");
    }
    assert!(differ.is_empty(), "fingerprints differ: {differ:?}");
}

/// The passes to interrupt a fit after: the first, those where a merge or a delete was
/// accepted, the middle one and the last but one (a checkpoint exists after every pass
/// but the last).
fn interruptions(model: &HdpModel) -> Vec<usize> {
    let n = model.passes.len();
    let moved = model.passes.iter().filter(|r| r.merges_accepted > 0 || r.deleted).map(|r| r.pass);
    let mut at: Vec<usize> = [1, n / 2, n - 1].into_iter().chain(moved).filter(|&pass| pass >= 1 && pass < n).collect();
    at.sort_unstable();
    at.dedup();
    at
}

/// Interrupted after several passes and resumed on 2 threads (the original ran on 1):
/// the same bytes, and a fit that converged does so at the same pass.
#[test]
fn a_resumed_fit_equals_the_uninterrupted_one() {
    for (name, input, p, _) in cases() {
        let full = fit(&input, &p, 1, None);
        assert!(full.resumed.is_empty());
        let n = full.model.passes.len();
        assert_eq!(full.checkpoints.iter().map(|c| c.0 as usize).collect::<Vec<_>>(), (1..n).collect::<Vec<_>>(), "{name}: one per pass but the last");
        for pass in interruptions(&full.model) {
            let resumed = fit(&input, &p, 2, Some(&full.checkpoints[pass - 1].1));
            assert_eq!(resumed.resumed, vec![Resume::From(pass as u64)], "{name} after {pass}");
            assert_eq!(resumed.model.passes.len(), n, "{name}: resumed after pass {pass}, ended at another pass");
            assert!(resumed.model.encode() == full.model.encode(), "{name}: resumed after pass {pass}, the model differs");
            // Its own checkpoints continue the first run's.
            assert_eq!(resumed.checkpoints.first().map(|c| c.0 as usize), Some(pass + 1).filter(|&next| next < n), "{name} after {pass}");
        }
    }
}

/// A checkpoint that does not decode, is cut short, belongs to other parameters or
/// another seed, or carries a state that does not fit the corpus is rejected and the fit
/// starts over (and so still ends with the same model).
#[test]
fn unusable_checkpoints_are_rejected_and_the_fit_starts_over() {
    let (_, input, p, _) = cases().remove(0);
    let full = fit(&input, &p, 1, None);
    let good = &full.checkpoints[4].1;
    let decoded = |b: &[u8], p: &HdpParams| {
        let Input::Planted(m) = &input else { unreachable!() };
        PassCheckpoint::decode_for(b, &super::passes::HdpPasses::new(m, V, p, SEED), SEED).unwrap()
    };
    let other = HdpParams { batches: 2, ..p.clone() };
    let for_other = fit(&input, &other, 1, None).checkpoints[4].1.clone();
    let mut bad = unusable_checkpoints(good, &decoded(good, &p), &for_other, &decoded(&for_other, &other));
    let mut shifted = decoded(good, &p);
    shifted.position.objective = shifted.position.objective.map(|x| x + 1.0);
    bad.push(shifted.encode());
    for (i, b) in bad.iter().enumerate() {
        let run = fit(&input, &p, 1, Some(b));
        assert!(matches!(&run.resumed[..], [Resume::Rejected(r)] if r.contains("starting from iteration 0")), "case {i}: {:?}", run.resumed);
        assert!(run.model.encode() == full.model.encode(), "case {i}: a fit that started over ends as a fresh one");
    }
}

/// What a checkpoint costs the fit thread on linuxdoc at the timing benchmark's settings
/// (K = 50, gensim's priors, one batch): encoding it after a pass, and decoding and
/// restoring it, against the pass itself; release build, after
/// `python3 bench/prepare_linuxdoc.py`:
/// `cargo test --release --lib models::hdp::resume_tests::checkpoint_cost -- --ignored --nocapture`.
#[test]
#[ignore]
fn checkpoint_cost_on_linuxdoc() {
    use crate::corpus::{CorpusBuilder, PreprocessOptions, RawDocument, StopWords};
    use crate::models::passes::{Passes, Position};
    use std::time::Instant;
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench/out/linuxdoc_bow.jsonl");
    let text = std::fs::read_to_string(path).expect("bench/out/linuxdoc_bow.jsonl (python3 bench/prepare_linuxdoc.py)");
    let mut builder = CorpusBuilder::new(PreprocessOptions { stopwords: StopWords::None, min_df: 1, ..Default::default() }, &[]).unwrap();
    for (i, line) in text.lines().enumerate() {
        builder.add_document(serde_json::from_str::<RawDocument>(line).unwrap(), i, Some(i + 1)).unwrap();
    }
    let corpus = builder.finish().unwrap();
    let p = HdpParams::from_json(&json!({"topics": 50, "alpha": 1, "gamma": 1, "lambda": 0.01, "passes": 50})).unwrap();
    let mut fit = super::passes::HdpPasses::new(&corpus.counts, corpus.num_terms(), &p, 1);
    let t = Instant::now();
    let report = fit.pass(1, &|| false).expect("not stopped");
    let pass_seconds = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let state = fit.save();
    let save_seconds = t.elapsed().as_secs_f64();
    let position = Position { pass: 1, objective: Some(report.objective) };
    let mut fresh = super::passes::HdpPasses::new(&corpus.counts, corpus.num_terms(), &p, 1);
    let t = Instant::now();
    fresh.restore(&state, &position).expect("restores");
    let restore_seconds = t.elapsed().as_secs_f64();
    assert!(fresh.save() == state, "a restored fit saves the same bytes");
    eprintln!(
        "{}",
        json!({"documents": corpus.num_documents(), "terms": corpus.num_terms(), "state_bytes": state.len(),
               "pass_seconds": pass_seconds, "save_seconds": save_seconds, "restore_seconds": restore_seconds})
    );
}
