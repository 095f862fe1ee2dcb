//! Checks of LDA on the chain driver: fits are pinned to the model bytes the loop
//! before the driver produced, and a fit interrupted at any checkpoint and resumed ends
//! with exactly the bytes of the uninterrupted fit (dense and sparse kernels, α and β
//! optimisation on and off, thinning, held-out scoring; resumed on another thread count).

use super::*;
use crate::corpus::build_corpus;
use crate::models::chain::Resume;
use crate::models::consensus::two_chain_pooled_distance;
use crate::models::lda::model::as_before_threads_left;
use crate::models::lda::sampler::tests::{lda_corpus, raw_options};
use crate::models::test_kit::{check_two_chain_resumes, recorded_run, Run, SEED};
use serde_json::json;

/// CRC-64/XZ of a model's encoding in the layout the pins were recorded in (before
/// `threads` left the parameters: [`as_before_threads_left`]).
fn fingerprint(model: &LdaModel) -> u64 {
    crc::Crc::<u64>::new(&crc::CRC_64_XZ).checksum(&as_before_threads_left(&model.encode()))
}

/// 120 documents of 40 tokens over 40 words.
fn small_corpus() -> Corpus {
    let (_, docs) = lda_corpus(4, 40, 120, 40, 0.3, 3);
    build_corpus(raw_options(), &[], docs).expect("corpus builds")
}

/// The configurations the checks fit (seed 7), with the fingerprint of the model the
/// fit loop before the chain driver produced for each (computed with that code, on
/// x86-64; the dense kernel's instruction sets agree bit for bit).
fn cases() -> Vec<(&'static str, serde_json::Value, u64)> {
    vec![
        ("dense", json!({"topics": 5, "iterations": 30, "burn_in": 10, "thin": 3, "loglik_every": 4}), PIN_DENSE),
        (
            "dense_optimized",
            json!({"topics": 6, "iterations": 24, "burn_in": 6, "thin": 2, "optimize_interval": 5, "optimize_beta": true}),
            PIN_DENSE_OPTIMIZED,
        ),
        ("sparse", json!({"topics": 300, "iterations": 12, "burn_in": 4, "thin": 2, "sync_tokens": 500}), PIN_SPARSE),
        (
            "sparse_optimized",
            json!({"topics": 260, "iterations": 10, "burn_in": 3, "thin": 3, "sync_tokens": 700, "optimize_interval": 3, "optimize_burn_in": 2}),
            PIN_SPARSE_OPTIMIZED,
        ),
        ("heldout", json!({"topics": 4, "iterations": 16, "thin": 4, "test_fraction": 0.2, "heldout_burn_in": 5, "heldout_chain_length": 10}), PIN_HELDOUT),
    ]
}

const PIN_DENSE: u64 = 0xe74045c4af12a1d5;
const PIN_DENSE_OPTIMIZED: u64 = 0xafe17f84bc13e434;
const PIN_SPARSE: u64 = 0xbbaa46a60b7e584f;
const PIN_SPARSE_OPTIMIZED: u64 = 0xec41f0eb65feb05a;
const PIN_HELDOUT: u64 = 0x82be36cd4f4e88f5;

/// Fit on `threads` threads, checkpointing after every sweep, from `resume` if given.
fn fit(corpus: &Corpus, p: &LdaParams, threads: usize, resume: Option<&[u8]>) -> Run<LdaModel> {
    recorded_run(threads, resume, |ctx| fit_lda(corpus, p, SEED, ctx).expect("fit runs"))
}

/// The same (corpus, params, seed) gives the model bytes it gave before the driver, and
/// checkpointing after every sweep changes nothing.
#[test]
fn fits_are_pinned_to_the_bytes_before_the_chain_driver() {
    let corpus = small_corpus();
    for (name, params, pin) in cases() {
        let p = LdaParams::from_json(&params).unwrap();
        let silent = FitContext::silent(|ctx| fit_lda(&corpus, &p, SEED, ctx).unwrap());
        assert_eq!(fingerprint(&silent), pin, "{name}: {:#018x}", fingerprint(&silent));
        let checkpointed = fit(&corpus, &p, 1, None);
        assert_eq!(checkpointed.model.encode(), silent.encode(), "{name}: checkpoints change nothing");
    }
}

/// Interrupted after several sweeps (in burn-in, on a kept sweep, between kept sweeps,
/// after an optimisation, the last but one) and resumed on 2 threads: the same bytes.
#[test]
fn a_resumed_fit_equals_the_uninterrupted_one() {
    let corpus = small_corpus();
    for (name, params, _) in cases() {
        let p = LdaParams::from_json(&params).unwrap();
        let full = fit(&corpus, &p, 1, None);
        assert!(full.resumed.is_empty());
        // One per sweep but the last (and with held-out documents, the scoring phase's).
        let heldout = full.model.test_documents;
        assert_eq!(full.checkpoints.len(), p.iterations - 1 + heldout, "{name}");
        let bytes = full.model.encode();
        let at = [1, p.burn_in, p.burn_in + 1, p.burn_in + p.thin, (p.iterations + p.burn_in) / 2, p.iterations - 1];
        for it in at.into_iter().filter(|&it| it >= 1 && it < p.iterations) {
            let (saved_at, checkpoint) = &full.checkpoints[it - 1];
            assert_eq!(*saved_at as usize, it);
            let resumed = fit(&corpus, &p, 2, Some(checkpoint));
            assert_eq!(resumed.resumed, vec![Resume::From(it as u64)], "{name} after {it}");
            assert_eq!(resumed.model.encode(), bytes, "{name}: resumed after sweep {it}");
            // Its own checkpoints continue the first run's.
            let next = Some(it + 1).filter(|&n| n < p.iterations || heldout > 0).map(|n| n as u64);
            assert_eq!(resumed.checkpoints.first().map(|c| c.0), next, "{name} after {it}");
        }
    }
}

/// With held-out documents, the finished chain is checkpointed at its end and again per
/// scored document; resumed from any of those (on 2 threads), no sweep runs again, only
/// the documents left are scored, and the model is the same bytes. A checkpoint at the
/// end whose model belongs to other parameters is rejected.
#[test]
fn a_fit_resumed_while_scoring_equals_the_uninterrupted_one() {
    let corpus = small_corpus();
    let (name, params, _) = cases().into_iter().find(|c| c.0 == "heldout").unwrap();
    let p = LdaParams::from_json(&params).unwrap();
    let full = fit(&corpus, &p, 1, None);
    let heldout = full.model.test_documents;
    assert!(heldout >= 2, "{name}: {heldout} held-out documents");
    assert_eq!(full.checkpoints.len(), p.iterations - 1 + heldout, "one per sweep but the last, one at the end, one per scored document but the last");
    assert!(full.checkpoints[p.iterations - 1..].iter().all(|c| c.0 as usize == p.iterations));
    let bytes = full.model.encode();
    for (scored, (_, checkpoint)) in full.checkpoints[p.iterations - 1..].iter().enumerate() {
        let resumed = fit(&corpus, &p, 2, Some(checkpoint));
        assert_eq!(resumed.resumed, vec![Resume::From(p.iterations as u64)], "{scored} scored");
        assert_eq!(resumed.model.encode(), bytes, "resumed with {scored} documents scored");
        assert_eq!(resumed.checkpoints.len(), heldout - 1 - scored, "only the documents left are scored");
    }
    // The same checkpoint handed to a fit with a longer Chib chain: its scored
    // documents belong to another estimator setting.
    let longer = LdaParams { heldout_chain_length: p.heldout_chain_length + 1, ..p.clone() };
    let run = fit(&corpus, &longer, 1, Some(&full.checkpoints[p.iterations].1));
    assert!(matches!(&run.resumed[..], [Resume::Rejected(_)]), "{:?}", run.resumed);
    assert_eq!(run.model.encode(), fit(&corpus, &longer, 1, None).model.encode());
}

/// A checkpoint that does not decode, is cut short or belongs to other parameters is
/// rejected and the fit starts over (and so still ends with the same model).
#[test]
fn unusable_checkpoints_are_rejected_and_the_fit_starts_over() {
    let corpus = small_corpus();
    let (_, params, _) = &cases()[0];
    let p = LdaParams::from_json(params).unwrap();
    let full = fit(&corpus, &p, 1, None);
    let good = &full.checkpoints[11].1;
    let mut bumped_state_version = crate::models::chain::Checkpoint::decode_for(good, "lda", SEED, &p.schedule()).unwrap();
    bumped_state_version.state[0] = 9;
    let other = LdaParams::from_json(&json!({"topics": 5, "iterations": 31, "burn_in": 10, "thin": 3, "loglik_every": 4})).unwrap();
    let for_other = fit(&corpus, &other, 1, None).checkpoints[3].1.clone();
    let fewer_topics = LdaParams::from_json(&json!({"topics": 4, "iterations": 30, "burn_in": 10, "thin": 3, "loglik_every": 4})).unwrap();
    let mut wrong_k =
        crate::models::chain::Checkpoint::decode_for(&fit(&corpus, &fewer_topics, 1, None).checkpoints[3].1, "lda", SEED, &fewer_topics.schedule()).unwrap();
    wrong_k.schedule = p.schedule();
    for bad in [good[..good.len() - 9].to_vec(), vec![1, 2, 3], bumped_state_version.encode(), for_other, wrong_k.encode()] {
        let run = fit(&corpus, &p, 1, Some(&bad));
        assert!(matches!(&run.resumed[..], [Resume::Rejected(_)]), "{:?}", run.resumed);
        assert_eq!(run.model.encode(), full.model.encode());
    }
}

/// Several chains: chain 0 is the one-chain fit (the job's seed), the pooled model is
/// the reference chain's topics, each pooled with its match where that is the same
/// topic, and a job stopped anywhere
/// (inside a chain, at the boundary between chains, while scoring) and resumed on 2
/// threads ends with the bytes of the uninterrupted one.
#[test]
fn several_chains_pool_and_resume_to_the_same_bytes() {
    let corpus = small_corpus();
    let (_, params, _) = cases().into_iter().find(|c| c.0 == "heldout").unwrap();
    let mut params = params;
    params["chains"] = json!(2);
    let p = LdaParams::from_json(&params).unwrap();
    let full = fit(&corpus, &p, 1, None);
    let m = &full.model;
    let (k, v) = (p.topics, m.num_terms);
    assert_eq!((m.params.chains, m.alignments.len()), (2, 1));
    let report = m.convergence.as_ref().expect("a convergence report");
    assert_eq!((report.chains, report.draws_per_chain), (2, (p.iterations - p.burn_in) / p.thin));
    assert_eq!(m.kept_sweeps, 2 * report.draws_per_chain);
    for t in 0..k {
        let total: f64 = m.word_rates[t * v..(t + 1) * v].iter().sum();
        assert!((total - 1.0).abs() < 1e-9, "topic {t} sums to {total}");
    }
    // Chain 0 alone is the one-chain fit's posterior mean: each served topic is the
    // reference chain's, pooled with the other chain's match where that is the same
    // topic (similarity ≥ 0.8), so it lies half the matched distance from chain 0's
    // topic, or none or all of it ([`two_chain_pooled_distance`]).
    let one = fit(&corpus, &LdaParams { chains: 1, ..p.clone() }, 1, None).model;
    let al = &m.alignments[0];
    for t in 0..k {
        let (a, expected) = two_chain_pooled_distance(al, m.reference_chain, t);
        let l1: f64 = (0..v).map(|w| (m.word_rates[t * v + w] - one.word_rates[a * v + w]).abs()).sum();
        assert!((l1 - expected).abs() < 1e-9, "topic {t} (reference chain {}): {l1} vs {expected}", m.reference_chain);
    }
    // Checkpoints: one per sweep but the last in each chain, the boundary after chain
    // 0, and the scoring phase's after chain 1.
    let heldout = m.test_documents;
    assert_eq!(full.checkpoints.len(), 2 * (p.iterations - 1) + 1 + heldout);
    check_two_chain_resumes(&full.checkpoints, p.iterations, &m.encode(), |checkpoint| fit(&corpus, &p, 2, Some(checkpoint)));
    // A checkpoint of a one-chain job is not one of this job's.
    let run = fit(&corpus, &p, 1, Some(&fit(&corpus, &LdaParams { chains: 1, ..p.clone() }, 1, None).checkpoints[3].1));
    assert!(matches!(&run.resumed[..], [Resume::Rejected(_)]), "{:?}", run.resumed);
}

/// `heldout_chain_length: 0` holds the documents out of training but ends without the
/// Chib-style estimate (a sweep's default: its rows are scored by document completion);
/// the fit is otherwise the one that scores them.
#[test]
fn a_zero_chain_length_holds_out_without_scoring() {
    let corpus = small_corpus();
    let (_, mut params, _) = cases().into_iter().find(|c| c.0 == "heldout").unwrap();
    params["heldout_chain_length"] = json!(0);
    let p = LdaParams::from_json(&params).unwrap();
    let unscored = fit(&corpus, &p, 1, None);
    assert!(unscored.model.test_documents > 0 && unscored.model.heldout.is_none(), "held out, not scored");
    assert_eq!(unscored.checkpoints.len(), p.iterations - 1, "no scoring phase to checkpoint");
    let scored = fit(&corpus, &LdaParams { heldout_chain_length: 5, ..p.clone() }, 1, None).model;
    assert!(scored.heldout.is_some());
    assert_eq!(scored.word_rates, unscored.model.word_rates, "the same fit otherwise");
}
