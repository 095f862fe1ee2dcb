//! Checks of HPC and PCM over ranks: for every R from 1 to 4 (ranks as threads) the
//! model's bytes equal the single-process fit's (HPC with validation, refit and test
//! splits, full and tree-diagonal curvature; PCM), and a fit checkpointed over R ranks,
//! in the first chain or the second, resumes over R' ranks or in one process to the
//! uninterrupted bytes, and the reverse.

use super::fit_hpc_ranked;
use crate::corpus::builder::build_corpus;
use crate::corpus::preprocess::{PreprocessOptions, StopWords};
use crate::corpus::Corpus;
use crate::models::chain::Resume;
use crate::models::hpc::fit::fit_hpc;
use crate::models::hpc::model::HpcModel;
use crate::models::hpc::params::HpcParams;
use crate::models::hpc::simulate::{simulate, SimulationConfig};
use crate::models::hpc::variant::Supervision;
use crate::models::{FitContext, SavedCheckpoints, TopicModel};
use crate::ranks::threads::ThreadRanks;
use crate::ranks::{Ranks, Solo};
use serde_json::json;

/// 300 documents of about 60 tokens over 150 words, drawn from HPC with 3 top labels of
/// 2 children each (K = 9); PCM's copy has no labels.
fn corpus(supervision: Supervision) -> Corpus {
    let config = SimulationConfig { eta: -2.0, ..SimulationConfig::small(300, 150, vec![3, 2], 60.0) };
    let mut docs = simulate(&config, 23).to_raw_documents();
    if supervision == Supervision::Unsupervised {
        docs.iter_mut().for_each(|d| d.labels = None);
    }
    build_corpus(PreprocessOptions { stopwords: StopWords::None, ..PreprocessOptions::default() }, &[], docs).expect("corpus builds")
}

fn params(v: serde_json::Value, supervision: Supervision) -> HpcParams {
    HpcParams::from_json(&v, supervision).expect("valid parameters")
}

/// HPC with validation and test splits (so a calibration and a refit chain) and the
/// full curvature; every other scan refits the modes.
fn hpc_params() -> HpcParams {
    params(
        json!({"iterations": 8, "burn_in": 3, "thin": 2, "hessian_every": 2, "rate_curvature": "full",
        "validation_fraction": 0.2, "test_fraction": 0.2}),
        Supervision::Labelled,
    )
}

const SEED: u64 = 5;

/// Rank 0's model of a fit over `size` thread ranks, checkpointing after every scan,
/// from `resume` if given: the model, rank 0's checkpoints and what became of `resume`.
fn ranked(corpus: &Corpus, p: &HpcParams, supervision: Supervision, size: usize, resume: Option<&[u8]>) -> (HpcModel, SavedCheckpoints, Vec<Resume>) {
    let mut runs = ThreadRanks::run(size, |ranks| {
        let held = ranks.is_root().then(|| corpus.clone());
        let resume = resume.filter(|_| ranks.is_root());
        crate::models::test_kit::recording(resume, |ctx| fit_hpc_ranked(held, p, supervision, SEED, ctx, ranks).expect("fit runs"))
    });
    assert!(runs[1..].iter().all(|r| r.0.is_none()), "only rank 0 holds the model");
    assert!(runs[1..].iter().all(|r| r.1.is_empty()), "only rank 0 hands checkpoints over");
    let (model, saved, resumed) = runs.swap_remove(0);
    (model.expect("rank 0's model"), saved, resumed)
}

fn check_every_rank_count(supervision: Supervision, p: &HpcParams) {
    let corpus = corpus(supervision);
    let single = FitContext::silent(|ctx| fit_hpc(&corpus, p, supervision, SEED, ctx)).expect("fit runs");
    if supervision == Supervision::Labelled {
        assert!(single.refitted_with_validation && single.evaluation.is_some(), "the case calibrates, refits and evaluates");
    }
    let solo = FitContext::silent(|ctx| fit_hpc_ranked(Some(corpus.clone()), p, supervision, SEED, ctx, &Solo)).expect("fit runs").expect("rank 0");
    assert!(solo.encode() == single.encode(), "one rank");
    for size in 2..=4 {
        assert!(ranked(&corpus, p, supervision, size, None).0.encode() == single.encode(), "{size} ranks");
    }
}

#[test]
fn every_rank_count_gives_the_single_process_hpc_bytes() {
    check_every_rank_count(Supervision::Labelled, &hpc_params());
}

#[test]
fn every_rank_count_gives_the_single_process_pcm_bytes() {
    let p = params(
        json!({"topics": 4, "iterations": 7, "burn_in": 3, "hessian_every": 3, "rate_curvature": "tree_diagonal", "test_fraction": 0.2}),
        Supervision::Unsupervised,
    );
    check_every_rank_count(Supervision::Unsupervised, &p);
}

/// Checkpoints over 3 ranks are the single-process checkpoints, byte for byte; one from
/// the first chain and one from the second resume over 2 ranks and in one process, and
/// one process's over 4 ranks, to the uninterrupted bytes.
#[test]
fn checkpoints_cross_rank_counts() {
    let (supervision, p) = (Supervision::Labelled, hpc_params());
    let corpus = corpus(supervision);
    let (single, single_saved, _) = crate::models::test_kit::recording(None, |ctx| fit_hpc(&corpus, &p, supervision, SEED, ctx).expect("fit runs"));
    let (model, saved, _) = ranked(&corpus, &p, supervision, 3, None);
    assert!(model.encode() == single.encode());
    assert_eq!(saved.len(), single_saved.len(), "the same checkpoints");
    for ((it, bytes), (single_it, single_bytes)) in saved.iter().zip(&single_saved) {
        assert_eq!(it, single_it);
        assert!(bytes == single_bytes, "checkpoint at {it}");
    }
    let iterations = p.iterations as u64;
    for position in [4, iterations + 3] {
        let bytes = &saved.iter().find(|(it, _)| *it == position).expect("a checkpoint there").1;
        let (resumed, _, how) = ranked(&corpus, &p, supervision, 2, Some(bytes));
        assert!(matches!(how[..], [Resume::From(_)]), "{how:?}");
        assert!(resumed.encode() == single.encode(), "resumed over 2 ranks at scan {position}");
        let (one, _, _) = crate::models::test_kit::recording(Some(bytes), |ctx| fit_hpc(&corpus, &p, supervision, SEED, ctx).expect("fit runs"));
        assert!(one.encode() == single.encode(), "resumed in one process at scan {position}");
    }
    let single_in_first = &single_saved.iter().find(|(it, _)| *it == 5).expect("a checkpoint").1;
    let (resumed, _, how) = ranked(&corpus, &p, supervision, 4, Some(single_in_first));
    assert!(matches!(how[..], [Resume::From(5)]), "{how:?}");
    assert!(resumed.encode() == single.encode(), "one process's checkpoint resumed over 4 ranks");
}

/// Several chains and covariates are refused over ranks, naming `ranks` and why.
#[test]
fn unsupported_fits_are_refused() {
    let corpus = corpus(Supervision::Labelled);
    for (v, says) in [(json!({"iterations": 4, "chains": 2}), "chains 1"), (json!({"iterations": 4, "covariates": ["group"]}), "covariates")] {
        let p = params(v, Supervision::Labelled);
        match FitContext::silent(|ctx| fit_hpc_ranked(Some(corpus.clone()), &p, Supervision::Labelled, SEED, ctx, &Solo)) {
            Err(crate::models::FitError::Params(e)) => assert!(e.field == "ranks" && e.message.contains(says), "{e:?}"),
            Err(e) => panic!("another error: {e}"),
            Ok(_) => panic!("{says}: fitted over ranks"),
        }
    }
}
