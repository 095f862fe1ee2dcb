//! Checks of LDA over ranks: for every R from 1 to 4 (ranks as threads) the model's
//! bytes equal the single-process fit's, on a corpus whose grid has 4 blocks and on one
//! whose grid has a single block (so some ranks own no documents); and the gathered
//! checkpoint state equals the single-process chain's.

use super::*;
use crate::corpus::build_corpus;
use crate::models::chain::{Chain, Resume};
use crate::models::lda::chain::LdaChain;
use crate::models::lda::fit_lda;
use crate::models::lda::ranked::chain::RankedChain;
use crate::models::lda::sampler::tests::{lda_corpus, raw_options};
use crate::models::lda::tokens::Tokens;
use crate::models::SavedCheckpoints;
use crate::models::TopicModel;
use crate::ranks::threads::ThreadRanks;
use crate::ranks::Solo;

/// 2 000 documents of 300 tokens (600 000 tokens: a grid of 4 × 4 blocks).
fn four_block_corpus() -> Corpus {
    let (_, docs) = lda_corpus(6, 600, 2_000, 300, 0.3, 11);
    build_corpus(raw_options(), &[], docs).expect("corpus builds")
}

/// 120 documents of 40 tokens (one block).
fn one_block_corpus() -> Corpus {
    let (_, docs) = lda_corpus(4, 40, 120, 40, 0.3, 3);
    build_corpus(raw_options(), &[], docs).expect("corpus builds")
}

fn params(json: serde_json::Value) -> LdaParams {
    LdaParams::from_json(&json).expect("valid parameters")
}

/// Rank 0's model of a fit over `size` thread ranks (the others return none).
fn ranked_bytes(corpus: &Corpus, p: &LdaParams, seed: u64, size: usize) -> Vec<u8> {
    let models = ThreadRanks::run(size, |ranks| {
        let held = ranks.is_root().then(|| corpus.clone());
        FitContext::silent(|ctx| fit_lda_ranked(held, p, seed, ctx, ranks).expect("fit runs"))
    });
    assert!(models[1..].iter().all(Option::is_none), "only rank 0 holds the model");
    models.into_iter().next().flatten().expect("rank 0's model").encode()
}

#[test]
fn every_rank_count_gives_the_single_process_bytes() {
    let corpus = four_block_corpus();
    // Two chains (pooled), α and β re-estimated, thinning, a log joint every 3 sweeps
    // and held-out documents scored after the chains.
    let p = params(serde_json::json!({
        "topics": 8, "iterations": 7, "burn_in": 2, "thin": 2, "loglik_every": 3,
        "optimize_interval": 3, "optimize_burn_in": 1, "optimize_beta": true, "chains": 2,
        "test_fraction": 0.02, "heldout_burn_in": 2, "heldout_chain_length": 4,
    }));
    let single = FitContext::silent(|ctx| fit_lda(&corpus, &p, 5, ctx)).expect("fit runs").encode();
    let shard = LdaShard::cut(&corpus.counts, corpus.num_terms(), &p, 0, 1);
    assert_eq!(shard.grid_blocks(), 4, "the corpus is cut into a 4 × 4 grid");
    let solo = FitContext::silent(|ctx| fit_lda_ranked(Some(corpus.clone()), &p, 5, ctx, &Solo)).expect("fit runs").expect("one rank is rank 0");
    assert_eq!(solo.encode(), single, "one rank");
    for size in 2..=4 {
        assert_eq!(ranked_bytes(&corpus, &p, 5, size), single, "{size} ranks");
    }
}

#[test]
fn ranks_without_documents_change_nothing() {
    let corpus = one_block_corpus();
    let p = params(serde_json::json!({"topics": 5, "iterations": 9, "burn_in": 3, "thin": 2, "loglik_every": 4}));
    let single = FitContext::silent(|ctx| fit_lda(&corpus, &p, 3, ctx)).expect("fit runs").encode();
    assert_eq!(LdaShard::cut(&corpus.counts, corpus.num_terms(), &p, 0, 3).grid_blocks(), 1);
    assert_eq!(ranked_bytes(&corpus, &p, 3, 3), single);
}

/// The gathered checkpoint state after a few sweeps is the single-process chain's, byte
/// for byte: what lets a fit checkpointed over R ranks resume in one process.
#[test]
fn the_gathered_state_is_the_single_process_checkpoint() {
    let corpus = four_block_corpus();
    let p = params(serde_json::json!({"topics": 6, "iterations": 4, "burn_in": 1, "thin": 1, "optimize_interval": 2}));
    let tokens = Tokens::from_counts(&corpus.counts, corpus.num_terms());
    let schedule = p.schedule();
    let single = FitContext::silent(|ctx| {
        let mut lda = LdaChain::new(&p, &tokens, 9);
        crate::models::chain::run(&mut lda, "lda", 9, &schedule, Position::START, ctx).expect("chain runs");
        lda.save()
    });
    let states = ThreadRanks::run(3, |ranks| {
        let shard = LdaShard::cut(&corpus.counts, corpus.num_terms(), &p, ranks.rank(), ranks.size());
        FitContext::silent(|ctx| {
            let mut chain = RankedChain::new(&p, &shard, ranks, 9);
            crate::models::chain::run(&mut chain, "lda", 9, &schedule, Position::START, ctx).expect("chain runs");
            chain.save()
        })
    });
    assert_eq!(states[0], single);
    assert!(states[1..].iter().all(Vec::is_empty));
}

/// The sparse kernel (more than 256 topics) over ranks: sync blocks of 700 tokens,
/// α re-estimated, one process' bytes at R = 2 and 3.
#[test]
fn the_sparse_kernel_gives_the_single_process_bytes() {
    let corpus = one_block_corpus();
    let p = params(serde_json::json!({"topics": 260, "iterations": 6, "burn_in": 2, "thin": 2, "sync_tokens": 700, "optimize_interval": 2}));
    let single = FitContext::silent(|ctx| fit_lda(&corpus, &p, 8, ctx)).expect("fit runs").encode();
    for size in [2, 3] {
        assert_eq!(ranked_bytes(&corpus, &p, 8, size), single, "{size} ranks");
    }
}

/// Rank 0's refusal (covariates the corpus does not have) reaches every rank as the same error,
/// and no rank waits for a shard that never comes.
#[test]
fn rank_zeros_error_reaches_every_rank() {
    let corpus = one_block_corpus();
    let p = params(serde_json::json!({"topics": 3, "iterations": 2, "covariates": ["year"]}));
    let errors = ThreadRanks::run(3, |ranks| {
        let held = ranks.is_root().then(|| corpus.clone());
        FitContext::silent(|ctx| fit_lda_ranked(held, &p, 1, ctx, ranks).map(|_| ()).expect_err("the fit is refused").to_string())
    });
    assert!(errors[0].contains("covariates"), "{}", errors[0]);
    assert!(errors[1..].iter().all(|e| e.contains(&errors[0])), "{errors:?}");
}

/// Rank 0's model and checkpoints of a fit over `size` thread ranks, checkpointing
/// after every sweep and resuming from `resume` (rank 0's context; the others' are
/// silent), and what became of `resume`.
fn ranked_recording(corpus: &Corpus, p: &LdaParams, seed: u64, size: usize, resume: Option<&[u8]>) -> (Vec<u8>, SavedCheckpoints, Vec<Resume>) {
    let mut results = ThreadRanks::run(size, |ranks| {
        if ranks.is_root() {
            let (model, saved, resumed) =
                crate::models::test_kit::recording(resume, |ctx| fit_lda_ranked(Some(corpus.clone()), p, seed, ctx, ranks).expect("fit runs"));
            Some((model.expect("rank 0's model").encode(), saved, resumed))
        } else {
            FitContext::silent(|ctx| fit_lda_ranked(None, p, seed, ctx, ranks).expect("fit runs"));
            None
        }
    });
    results.swap_remove(0).expect("rank 0's results")
}

/// Checkpoints over ranks are the single-process checkpoints byte for byte inside the
/// chain, so a fit resumes across rank counts: a 3-rank checkpoint inside the chain and one in the scoring, each resumed
/// over 2 ranks (and so, the checkpoints being the same bytes, in one process, which
/// `resume_tests` covers), end with the uninterrupted fit's bytes.
#[test]
fn checkpoints_are_single_process_checkpoints_and_resume_over_other_rank_counts() {
    let corpus = four_block_corpus();
    let p = params(serde_json::json!({
        "topics": 6, "iterations": 5, "burn_in": 1, "thin": 2, "optimize_interval": 2,
        "test_fraction": 0.01, "heldout_burn_in": 1, "heldout_chain_length": 2,
    }));
    let (single, single_saved, _) = crate::models::test_kit::recording(None, |ctx| fit_lda(&corpus, &p, 4, ctx));
    let single = single.expect("fit runs").encode();
    let (model, saved, _) = ranked_recording(&corpus, &p, 4, 3, None);
    assert_eq!(model, single);
    // The chain's checkpoints are equal byte for byte; those of the held-out scoring
    // after it hold the documents finished when the checkpoint was due, which depends on
    // how the threads went (in one process too), so they are checked by resuming.
    let chain_end = 5;
    let in_chain = |saved: &[(u64, Vec<u8>)]| saved.iter().map(|(it, _)| *it).filter(|&it| it < chain_end).collect::<Vec<_>>();
    assert_eq!(in_chain(&saved), in_chain(&single_saved));
    assert_eq!(in_chain(&saved), vec![1, 2, 3, 4], "a checkpoint after every sweep but the last");
    for ((it, a), (_, b)) in saved.iter().zip(&single_saved).filter(|((it, _), _)| *it < chain_end) {
        assert!(a == b, "the checkpoint after sweep {it} is not the single-process one");
    }
    let inside = saved.iter().find(|(it, _)| *it == 3).expect("a checkpoint after sweep 3");
    let scoring = saved.iter().rev().find(|(it, _)| *it == chain_end).expect("a checkpoint during the scoring");
    for (it, bytes) in [inside, scoring] {
        let (resumed_model, _, resumed) = ranked_recording(&corpus, &p, 4, 2, Some(bytes));
        assert_eq!(resumed, vec![Resume::From(*it)]);
        assert_eq!(resumed_model, single, "resumed after {it} over 2 ranks");
    }
}

/// Two chains over 3 ranks hand over the single-process checkpoints (the current chain's
/// state with the first chain's result after it, and the one between the chains), byte
/// for byte; one inside the second chain and the one between the chains, resumed over 2
/// ranks and in one process, and a one-process checkpoint resumed over 4 ranks, end
/// with the uninterrupted fit's bytes.
#[test]
fn several_chains_checkpoint_and_resume_across_rank_counts() {
    let corpus = four_block_corpus();
    let p = params(serde_json::json!({"topics": 5, "iterations": 4, "burn_in": 1, "thin": 1, "optimize_interval": 2, "chains": 2}));
    let (single, single_saved, _) = crate::models::test_kit::recording(None, |ctx| fit_lda(&corpus, &p, 6, ctx));
    let single = single.expect("fit runs").encode();
    let (model, saved, _) = ranked_recording(&corpus, &p, 6, 3, None);
    assert_eq!(model, single);
    assert_eq!(saved.iter().map(|(it, _)| *it).collect::<Vec<_>>(), single_saved.iter().map(|(it, _)| *it).collect::<Vec<_>>());
    assert!(saved.iter().zip(&single_saved).all(|(a, b)| a.1 == b.1), "the checkpoints are the single-process ones");
    let boundary = saved.iter().find(|(it, _)| *it == 4).expect("the checkpoint between the chains");
    let second = saved.iter().find(|(it, _)| *it == 6).expect("a checkpoint inside the second chain");
    for (it, bytes) in [boundary, second] {
        let (resumed_model, _, resumed) = ranked_recording(&corpus, &p, 6, 2, Some(bytes));
        assert_eq!(resumed, vec![Resume::From(*it)]);
        assert_eq!(resumed_model, single, "resumed after {it} over 2 ranks");
        let (one, _, _) = crate::models::test_kit::recording(Some(bytes), |ctx| fit_lda(&corpus, &p, 6, ctx));
        assert_eq!(one.expect("fit runs").encode(), single, "resumed after {it} in one process");
    }
    let first = &single_saved.iter().find(|(it, _)| *it == 2).expect("a one-process checkpoint in the first chain").1;
    let (resumed_model, _, resumed) = ranked_recording(&corpus, &p, 6, 4, Some(first));
    assert_eq!(resumed, vec![Resume::From(2)]);
    assert_eq!(resumed_model, single, "a one-process checkpoint resumed over 4 ranks");
}
