//! Checks of DCNT and SCNT on the chain driver: fits are pinned to the model bytes the
//! scan loop before the driver produced, and a fit interrupted at any checkpoint (inside
//! the chain, at its end, or while its held-out documents are scored) and resumed ends
//! with exactly the bytes of the uninterrupted fit (DCNT with features, SCNT, topic swaps
//! on and off, thinning, no kept scan, Chib scoring; resumed on another thread count).

use super::fit::fit_dcnt;
use super::model::DcntModel;
use super::params::DcntParams;
use super::variant::Covariance;
use crate::corpus::{build_corpus, Corpus};
use crate::models::chain::{Checkpoint, Resume};
use crate::models::consensus::two_chain_pooled_distance;
use crate::models::lda::sampler::tests::{lda_corpus, raw_options};
use crate::models::test_kit::{check_two_chain_resumes, recorded_run, Run, SEED};
use crate::models::{FitContext, TopicModel};
use serde_json::json;

/// CRC-64/XZ of a model's encoding in the layout its pins were recorded in (before
/// `threads` left the parameters).
fn fingerprint(model: &DcntModel) -> u64 {
    crc::Crc::<u64>::new(&crc::CRC_64_XZ).checksum(&super::model::as_before_threads_left(&model.encode()))
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
    /// DCNT (full A) or SCNT (diagonal A).
    covariance: Covariance,
    params: serde_json::Value,
    /// The fingerprint of the model the scan loop before the chain driver produced
    /// (computed with that code, on x86-64). `scnt` and `dcnt_heldout` were re-pinned
    /// when the topic swaps began to run in the scan's blocks (decision 0058, *Later*):
    /// a document's swaps there read the other documents' counts as the block found
    /// them, which changes these two fits' draws; the other cases' bytes did not move.
    pin: u64,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "dcnt_features",
            covariance: Covariance::Full,
            params: json!({"topics": 5, "iterations": 14, "burn_in": 4, "thin": 3, "loglik_every": 4}),
            pin: PIN_DCNT,
        },
        Case {
            name: "scnt",
            covariance: Covariance::Diagonal,
            params: json!({"topics": 6, "iterations": 12, "burn_in": 5, "thin": 2, "topic_swaps": 3}),
            pin: PIN_SCNT,
        },
        Case {
            name: "dcnt_no_swaps",
            covariance: Covariance::Full,
            params: json!({"topics": 4, "iterations": 10, "burn_in": 2, "thin": 1, "topic_swaps": 0}),
            pin: PIN_NO_SWAPS,
        },
        // No scan falls on the thinning grid: the final state stands in for the means.
        Case {
            name: "scnt_none_kept",
            covariance: Covariance::Diagonal,
            params: json!({"topics": 4, "iterations": 8, "burn_in": 6, "thin": 5}),
            pin: PIN_NONE_KEPT,
        },
        Case {
            name: "dcnt_heldout",
            covariance: Covariance::Full,
            params: json!({"topics": 4, "iterations": 10, "burn_in": 4, "thin": 2, "test_fraction": 0.2,
                           "heldout_burn_in": 4, "heldout_chain_length": 8, "heldout_acceptance_samples": 8}),
            pin: PIN_HELDOUT,
        },
    ]
}

const PIN_DCNT: u64 = 0xd1fae8a74f2cd72b;
const PIN_SCNT: u64 = 0x5f9458b0461289e0;
const PIN_NO_SWAPS: u64 = 0x652a1203614e2cd0;
const PIN_NONE_KEPT: u64 = 0x44762a9a90969114;
const PIN_HELDOUT: u64 = 0xab594add2b221123;

/// Fit on `threads` threads, checkpointing after every scan (and every scored held-out
/// document), from `resume` if given.
fn fit(corpus: &Corpus, p: &DcntParams, covariance: Covariance, threads: usize, resume: Option<&[u8]>) -> Run<DcntModel> {
    recorded_run(threads, resume, |ctx| fit_dcnt(corpus, p, covariance, SEED, ctx).expect("fit runs"))
}

/// The same (corpus, params, seed) gives the model bytes it gave before the driver, and
/// checkpointing after every scan and every scored document changes nothing.
#[test]
fn fits_are_pinned_to_the_bytes_before_the_chain_driver() {
    let corpus = small_corpus();
    let fitted: Vec<(&str, u64, u64)> = cases()
        .into_iter()
        .map(|case| {
            let p = DcntParams::from_json(&case.params).unwrap();
            let silent = FitContext::silent(|ctx| fit_dcnt(&corpus, &p, case.covariance, SEED, ctx).unwrap());
            let checkpointed = fit(&corpus, &p, case.covariance, 1, None);
            assert_eq!(checkpointed.model.encode(), silent.encode(), "{}: checkpoints change nothing", case.name);
            (case.name, fingerprint(&silent), case.pin)
        })
        .collect();
    for (name, got, pin) in &fitted {
        assert_eq!(got, pin, "{name}: {got:#018x}; all: {fitted:#x?}");
    }
}

/// The cases exercise what they are named for: metadata features, held-out scoring, a
/// fit with no kept scan.
#[test]
fn the_cases_cover_features_heldout_scoring_and_no_kept_scan() {
    let corpus = small_corpus();
    let by_name = |name: &str| cases().into_iter().find(|c| c.name == name).unwrap();
    let model = |case: Case| FitContext::silent(|ctx| fit_dcnt(&corpus, &DcntParams::from_json(&case.params).unwrap(), case.covariance, SEED, ctx).unwrap());
    assert_eq!(model(by_name("dcnt_features")).feature_names, vec!["x", "y"]);
    let heldout = model(by_name("dcnt_heldout"));
    let report = heldout.heldout.as_ref().expect("held-out documents scored");
    assert!(report.documents.len() >= 10 && report.documents.len() == heldout.heldout_documents.len(), "{}", report.documents.len());
    assert!(report.total_log_likelihood < 0.0);
    assert_eq!(model(by_name("scnt_none_kept")).kept_scans, 1, "the final state stands in");
}

/// Interrupted after several scans (the first, the last of burn-in, the one after it,
/// the first kept, the middle, the last but one), at the chain's end and after every
/// scored held-out document, and resumed on 2 threads: the same bytes.
#[test]
fn a_resumed_fit_equals_the_uninterrupted_one() {
    let corpus = small_corpus();
    for case in cases() {
        let (name, p) = (case.name, DcntParams::from_json(&case.params).unwrap());
        let full = fit(&corpus, &p, case.covariance, 1, None);
        assert!(full.resumed.is_empty());
        let heldout = full.model.heldout_documents.len();
        // One per scan but the last; with held-out documents, one at the chain's end and
        // one per scored document but the last, all at the last scan.
        assert_eq!(full.checkpoints.len(), p.iterations - 1 + heldout, "{name}");
        assert!(full.checkpoints[p.iterations - 1..].iter().all(|c| c.0 as usize == p.iterations), "{name}");
        let bytes = full.model.encode();
        let at = [1, p.burn_in, p.burn_in + 1, p.burn_in + p.thin, (p.iterations + p.burn_in) / 2, p.iterations - 1];
        for it in at.into_iter().filter(|&it| it >= 1 && it < p.iterations) {
            let (saved_at, checkpoint) = &full.checkpoints[it - 1];
            assert_eq!(*saved_at as usize, it);
            let resumed = fit(&corpus, &p, case.covariance, 2, Some(checkpoint));
            assert_eq!(resumed.resumed, vec![Resume::From(it as u64)], "{name} after {it}");
            assert_eq!(resumed.model.encode(), bytes, "{name}: resumed after scan {it}");
            // Its own checkpoints continue the first run's.
            let next = Some(it + 1).filter(|&n| n < p.iterations || heldout > 0).map(|n| n as u64);
            assert_eq!(resumed.checkpoints.first().map(|c| c.0), next, "{name} after {it}");
        }
        for (scored, (_, checkpoint)) in full.checkpoints[p.iterations - 1..].iter().enumerate() {
            let resumed = fit(&corpus, &p, case.covariance, 2, Some(checkpoint));
            assert_eq!(resumed.resumed, vec![Resume::From(p.iterations as u64)], "{name}: {scored} scored");
            assert_eq!(resumed.model.encode(), bytes, "{name}: resumed with {scored} documents scored");
            // No scan ran again, and only the documents left were scored.
            assert_eq!(resumed.checkpoints.len(), heldout - 1 - scored, "{name}: {scored} scored");
        }
    }
}

/// A checkpoint that does not decode, is cut short, belongs to the other family or to
/// other parameters (inside the chain or after it) is rejected and the fit starts over
/// (and so still ends with the same model).
#[test]
fn unusable_checkpoints_are_rejected_and_the_fit_starts_over() {
    let corpus = small_corpus();
    let case = cases().into_iter().find(|c| c.name == "dcnt_heldout").unwrap();
    let p = DcntParams::from_json(&case.params).unwrap();
    let full = fit(&corpus, &p, Covariance::Full, 1, None);
    let good = &full.checkpoints[5].1;
    let decode = |bytes: &[u8], p: &DcntParams| Checkpoint::decode_for(bytes, "dcnt", SEED, &super::chain::schedule(p)).unwrap();
    let mut bumped_state_version = decode(good, &p);
    bumped_state_version.state[0] = 9;
    let mut as_scnt = decode(good, &p);
    as_scnt.family = Covariance::Diagonal.family_name().into();
    let with = |change: serde_json::Value| {
        let mut params = case.params.clone();
        params.as_object_mut().unwrap().extend(change.as_object().unwrap().clone());
        DcntParams::from_json(&params).unwrap()
    };
    // Inside the chain: one more topic, same schedule.
    let more_topics = with(json!({"topics": 5}));
    let wrong_k = fit(&corpus, &more_topics, Covariance::Full, 1, None).checkpoints[3].1.clone();
    // After the chain: the model of a fit whose estimator settings differ.
    let longer_chib = with(json!({"heldout_chain_length": 9}));
    let other_model = fit(&corpus, &longer_chib, Covariance::Full, 1, None).checkpoints.last().unwrap().1.clone();
    let mut after_chain_cut = decode(full.checkpoints.last().unwrap().1.as_slice(), &p);
    after_chain_cut.state.truncate(after_chain_cut.state.len() - 3);
    let bad = [good[..good.len() - 9].to_vec(), vec![1, 2, 3], bumped_state_version.encode(), as_scnt.encode(), wrong_k, other_model, after_chain_cut.encode()];
    for (i, bytes) in bad.iter().enumerate() {
        let run = fit(&corpus, &p, Covariance::Full, 1, Some(bytes));
        assert!(matches!(&run.resumed[..], [Resume::Rejected(_)]), "{i}: {:?}", run.resumed);
        assert_eq!(run.model.encode(), full.model.encode(), "{i}");
    }
    // A DCNT checkpoint handed to SCNT is rejected too.
    let scnt = fit(&corpus, &p, Covariance::Diagonal, 1, Some(good));
    assert!(matches!(&scnt.resumed[..], [Resume::Rejected(reason)] if reason.contains("belongs to another fit")), "{:?}", scnt.resumed);
}

/// Several chains: chain 0 is the one-chain fit (the job's seed), the pooled model is
/// the reference chain's Ω, each topic pooled with its match where that is the same
/// topic, with the reference's loadings, and a job stopped anywhere (inside a chain, at the boundary between chains, while
/// scoring) and resumed on 2 threads ends with the bytes of the uninterrupted one.
#[test]
fn several_chains_pool_and_resume_to_the_same_bytes() {
    let corpus = small_corpus();
    let case = cases().into_iter().find(|c| c.name == "dcnt_heldout").unwrap();
    let mut params = case.params.clone();
    params["chains"] = json!(2);
    let p = DcntParams::from_json(&params).unwrap();
    let full = fit(&corpus, &p, Covariance::Full, 1, None);
    let m = &full.model;
    let (k, v) = (p.topics, m.num_terms);
    assert_eq!((m.params.chains, m.alignments.len()), (2, 1));
    let report = m.convergence.as_ref().expect("a convergence report");
    let per_chain = (p.iterations - p.burn_in) / p.thin;
    assert_eq!((report.chains, report.draws_per_chain, m.kept_scans), (2, per_chain, 2 * per_chain));
    assert_eq!(m.draws_per_chain, vec![p.iterations - p.burn_in; 2], "every scan after burn-in gives a draw, in each chain");
    assert!((m.topic_shares.iter().sum::<f64>() - 1.0).abs() < 1e-9);
    // Chain 0 alone is the one-chain fit: each served topic's Ω is the reference
    // chain's, pooled with the other chain's match where that is the same topic
    // (similarity ≥ 0.8), so it lies half the matched distance from chain 0's topic, or
    // none or all of it ([`two_chain_pooled_distance`]); the loadings are the reference's.
    let one = fit(&corpus, &DcntParams { chains: 1, ..p.clone() }, Covariance::Full, 1, None).model;
    let al = &m.alignments[0];
    for t in 0..k {
        let (a, expected) = two_chain_pooled_distance(al, m.reference_chain, t);
        let l1: f64 = (0..v).map(|w| (m.topic_word[t * v + w] - one.topic_word[a * v + w]).abs()).sum();
        assert!((l1 - expected).abs() < 1e-9, "topic {t} (reference chain {}): {l1} vs {expected}", m.reference_chain);
    }
    assert_eq!((&m.mean, &m.last) == (&one.mean, &one.last), m.reference_chain == 0, "the loadings are the reference chain's");
    assert_eq!(&m.draws[..one.draws.len()], &one.draws[..], "chain 0's draws first");
    // Checkpoints: one per scan but the last in each chain, the boundary after chain 0,
    // and the scoring phase's after chain 1.
    let heldout = m.heldout_documents.len();
    assert!(heldout > 0 && m.heldout.is_some());
    assert_eq!(full.checkpoints.len(), 2 * (p.iterations - 1) + 1 + heldout);
    check_two_chain_resumes(&full.checkpoints, p.iterations, &m.encode(), |checkpoint| fit(&corpus, &p, Covariance::Full, 2, Some(checkpoint)));
    // A checkpoint of a one-chain job is not one of this job's.
    let run = fit(&corpus, &p, Covariance::Full, 1, Some(&fit(&corpus, &DcntParams { chains: 1, ..p.clone() }, Covariance::Full, 1, None).checkpoints[3].1));
    assert!(matches!(&run.resumed[..], [Resume::Rejected(_)]), "{:?}", run.resumed);
}
