//! Checks of HDP over ranks: for every R from 1 to 4 (ranks as threads) the model's bytes
//! equal the single-process fit's (merges and deletes accepted, a test split, covariates),
//! ranks beyond a batch's chunks change nothing, and a fit checkpointed over R ranks
//! resumes over R' ranks or in one process to the uninterrupted bytes.

use super::ranked::fit_hdp_ranked;
use super::*;
use crate::corpus::{build_corpus, Corpus};
use crate::models::chain::Resume;
use crate::models::lda::sampler::tests::{lda_corpus, raw_options};
use crate::models::{FitContext, TopicModel};
use crate::ranks::threads::ThreadRanks;
use crate::ranks::{Ranks, Solo};
use serde_json::json;

/// 1 200 documents of 30 tokens over 120 words from 6 topics, each with a group
/// covariate: with 2 batches, 10 chunks of 64 documents each, so 4 ranks all hold some.
fn corpus() -> Corpus {
    let (_, mut docs) = lda_corpus(6, 120, 1_200, 30, 0.3, 21);
    for (d, doc) in docs.iter_mut().enumerate() {
        doc.covariates = Some([("group".to_string(), json!(if d % 3 == 0 { "a" } else { "b" }))].into_iter().collect());
    }
    build_corpus(raw_options(), &[], docs).expect("corpus builds")
}

fn params(v: serde_json::Value) -> HdpParams {
    HdpParams::from_json(&v).expect("valid parameters")
}

/// Merges and deletes every other pass, a test split and covariates.
fn moving_params() -> HdpParams {
    params(json!({"topics": 12, "batches": 2, "passes": 6, "merge_every": 2, "delete_every": 2,
        "convergence_tolerance": 0, "test_fraction": 0.1, "covariates": ["group"]}))
}

/// Rank 0's model of a fit over `size` thread ranks, checkpointing after every pass
/// from `resume` if given: the model, rank 0's checkpoints and what became of `resume`.
fn ranked(corpus: &Corpus, p: &HdpParams, size: usize, resume: Option<&[u8]>) -> (HdpModel, crate::models::SavedCheckpoints, Vec<Resume>) {
    let mut runs = ThreadRanks::run(size, |ranks| {
        let held = ranks.is_root().then(|| corpus.clone());
        let resume = resume.filter(|_| ranks.is_root());
        crate::models::test_kit::recording(resume, |ctx| fit_hdp_ranked(held, p, 4, ctx, ranks).expect("fit runs"))
    });
    assert!(runs[1..].iter().all(|r| r.0.is_none()), "only rank 0 holds the model");
    assert!(runs[1..].iter().all(|r| r.1.is_empty()), "only rank 0 hands checkpoints over");
    let (model, saved, resumed) = runs.swap_remove(0);
    (model.expect("rank 0's model"), saved, resumed)
}

#[test]
fn every_rank_count_gives_the_single_process_bytes() {
    let corpus = corpus();
    let p = moving_params();
    let single = FitContext::silent(|ctx| fit_hdp(&corpus, &p, 4, ctx)).expect("fit runs");
    let merges: usize = single.passes.iter().map(|r| r.merges_accepted).sum();
    assert!(merges > 0 && single.passes.iter().any(|r| r.deleted), "the case accepts merges and deletes");
    assert!(single.heldout.is_some() && !single.doc_dirichlet.is_empty(), "the case scores a test split and keeps q(π_d)");
    let solo = FitContext::silent(|ctx| fit_hdp_ranked(Some(corpus.clone()), &p, 4, ctx, &Solo)).expect("fit runs").expect("one rank is rank 0");
    assert_eq!(solo.encode(), single.encode(), "one rank");
    for size in 2..=4 {
        assert_eq!(ranked(&corpus, &p, size, None).0.encode(), single.encode(), "{size} ranks");
    }
}

/// One batch of 100 documents is two chunks: over 4 ranks, two hold nothing of it.
#[test]
fn ranks_without_documents_change_nothing() {
    let (_, docs) = lda_corpus(3, 30, 100, 20, 0.3, 5);
    let corpus = build_corpus(raw_options(), &[], docs).expect("corpus builds");
    let p = params(json!({"topics": 5, "passes": 4}));
    let single = FitContext::silent(|ctx| fit_hdp(&corpus, &p, 4, ctx)).expect("fit runs");
    assert_eq!(ranked(&corpus, &p, 4, None).0.encode(), single.encode());
}

/// Checkpoints taken over 3 ranks resume over 2 ranks and in one process, and one taken
/// in one process resumes over 4 ranks, each to the uninterrupted bytes.
#[test]
fn checkpoints_cross_rank_counts() {
    let corpus = corpus();
    let p = moving_params();
    let single = FitContext::silent(|ctx| fit_hdp(&corpus, &p, 4, ctx)).expect("fit runs");
    let (_, over_three, _) = ranked(&corpus, &p, 3, None);
    let (_, in_one, _) = crate::models::test_kit::recording(None, |ctx| fit_hdp(&corpus, &p, 4, ctx).expect("fit runs"));
    // After pass 3: a delete was decided in pass 2, merges follow pass 4.
    let at = |saved: &crate::models::SavedCheckpoints| saved.iter().find(|(pass, _)| *pass == 3).expect("a checkpoint after pass 3").1.clone();
    // The same layout (the bytes differ only by the passes' wall-clock seconds; that
    // they hold the same state is what the resumes below show).
    assert_eq!(at(&over_three).len(), at(&in_one).len(), "the gathered checkpoint has the single-process layout");
    let (resumed, _, how) = ranked(&corpus, &p, 2, Some(&at(&over_three)));
    assert_eq!(how, vec![Resume::From(3)]);
    assert_eq!(resumed.encode(), single.encode(), "3 ranks' checkpoint over 2 ranks");
    let (resumed, _, _) = crate::models::test_kit::recording(Some(&at(&over_three)), |ctx| fit_hdp(&corpus, &p, 4, ctx).expect("fit runs"));
    assert_eq!(resumed.encode(), single.encode(), "3 ranks' checkpoint in one process");
    let (resumed, _, how) = ranked(&corpus, &p, 4, Some(&at(&in_one)));
    assert_eq!(how, vec![Resume::From(3)]);
    assert_eq!(resumed.encode(), single.encode(), "one process' checkpoint over 4 ranks");
}

/// Rank 0's refusal (covariates the corpus lacks) reaches every rank as the same error.
#[test]
fn rank_zero_errors_reach_every_rank() {
    let (_, docs) = lda_corpus(3, 30, 100, 20, 0.3, 5);
    let corpus = build_corpus(raw_options(), &[], docs).expect("corpus builds");
    let p = params(json!({"topics": 3, "passes": 2, "covariates": ["year"]}));
    let errors = ThreadRanks::run(3, |ranks| {
        let held = ranks.is_root().then(|| corpus.clone());
        FitContext::silent(|ctx| fit_hdp_ranked(held, &p, 1, ctx, ranks)).expect_err("every rank fails").to_string()
    });
    assert!(errors.iter().all(|e| e.contains("covariates")), "{errors:?}");
}
