//! Checks of the birth move: a topic that blends two planted topics is split by births
//! and stays blended without them, the objective never decreases while births are
//! proposed, the same seed gives the same fit, and a fit resumed around a birth ends as
//! the uninterrupted one.

use super::documents::HdpDocuments;
use super::fit_tests::{assert_monotone, planted_corpus, topic_means, BLOCK, PLANTED, V};
use super::memo::Memo;
use super::params::HdpParams;
use super::passes::{FitOutcome, HdpPasses};
use super::summary::Summary;
use crate::models::passes::{Passes, Position};
use crate::models::{passes, FitContext};
use crate::ranks::Solo;
use serde_json::json;

/// A start of six topics: topic 0 holds planted blocks 0 and 1 (two topics blended),
/// topics 1–4 blocks 2–5 and topic 5 almost nothing (a hundredth of a count per word),
/// so that a delete frees the room a birth needs under the truncation of 6.
pub(super) fn blended_start() -> Summary {
    let k = PLANTED;
    let mut s = Summary::dense(V, k);
    for w in 0..V {
        let t = match w / BLOCK {
            0 | 1 => 0,
            b => b - 1,
        };
        s.word_topic[w * k + t] = 50.0;
        s.word_topic[w * k + k - 1] += 0.01;
    }
    s
}

/// Deletes every second pass and, unless `birth_every` is 0, births; no merges.
fn moves(birth_every: u64) -> serde_json::Value {
    json!({"topics": 6, "batches": 2, "passes": 40, "merge_every": 0, "delete_every": 2, "birth_every": birth_every, "convergence_tolerance": 0})
}

fn fit_from_blend(params: serde_json::Value) -> FitOutcome {
    let m = planted_corpus(300, 60, 5);
    let p = HdpParams::from_json(&params).unwrap();
    FitContext::silent(|ctx| {
        let memo = Memo::over(HdpDocuments::whole(&m, V, p.batches), blended_start(), &p, &Solo);
        let mut fit = HdpPasses::over(memo, 9);
        passes::run(&mut fit, 9, ctx)?;
        Ok::<_, crate::models::FitError>(fit.outcome())
    })
    .unwrap()
}

/// Each fitted topic's share of its mass on every planted block (in %).
fn block_shares(out: &FitOutcome) -> Vec<Vec<f64>> {
    topic_means(out, V).iter().map(|f| (0..PLANTED).map(|b| 100.0 * f[b * BLOCK..(b + 1) * BLOCK].iter().sum::<f64>()).collect()).collect()
}

/// The topics that blend two planted blocks: at least a quarter of their mass on each
/// of two. An even blend puts about half on each; a topic fitted to one block puts above
/// 97 % on it (the planted-recovery test in `fit_tests`), under 3 % elsewhere, so a
/// quarter separates the two with room on both sides (no sampling tolerance involved).
fn blended_topics(out: &FitOutcome) -> usize {
    block_shares(out).iter().filter(|s| s.iter().filter(|&&x| x >= 25.0).count() >= 2).count()
}

/// Whether every planted block holds most of the mass of some topic.
fn every_block_leads_a_topic(out: &FitOutcome) -> bool {
    let shares = block_shares(out);
    (0..PLANTED).all(|b| shares.iter().any(|s| s[b] > 50.0))
}

#[test]
fn births_split_a_blended_topic_that_stays_blended_without_them() {
    let without = fit_from_blend(moves(0));
    assert_eq!(blended_topics(&without), 1, "without births the blend of blocks 0 and 1 stays: {:?}", block_shares(&without));
    let with = fit_from_blend(moves(2));
    let births = with.passes.windows(2).filter(|w| w[1].topics > w[0].topics).count();
    assert!(births >= 1, "no birth was accepted: {:?}", with.passes);
    assert_eq!(blended_topics(&with), 0, "{:?}", block_shares(&with));
    assert!(every_block_leads_a_topic(&with), "{:?}", block_shares(&with));
    assert_eq!(with.num_topics, PLANTED);
    assert_monotone(&with.step_objectives);
    assert_eq!(fit_from_blend(moves(2)).topic_word, with.topic_word, "the same seed gives the same fit");
}

/// Interrupted just before the first accepted birth's pass, or just after it, and
/// resumed from the checkpoint's bytes: the proposal is made again from the restored
/// state and the seed, and the fit ends exactly as the uninterrupted one.
#[test]
fn a_fit_with_births_resumed_around_a_birth_equals_the_uninterrupted_one() {
    let m = planted_corpus(300, 60, 5);
    let p = HdpParams::from_json(&moves(2)).unwrap();
    let fresh = || HdpPasses::over(Memo::over(HdpDocuments::whole(&m, V, p.batches), blended_start(), &p, &Solo), 9);
    let mut full = fresh();
    let mut saved = Vec::new();
    for pass in 1..=p.passes {
        let report = full.pass(pass, &|| false).expect("not stopped");
        saved.push((full.save(), report.objective));
    }
    let full = full.outcome();
    let birth = full.passes.windows(2).find(|w| w[1].topics > w[0].topics).expect("a birth")[1].pass;
    for at in [birth - 1, birth] {
        let (state, objective) = &saved[at - 1];
        let mut resumed = fresh();
        resumed.restore(state, &Position { pass: at, objective: Some(*objective) }).expect("restores");
        for pass in at + 1..=p.passes {
            resumed.pass(pass, &|| false).expect("not stopped");
        }
        let resumed = resumed.outcome();
        assert_eq!(resumed.passes, full.passes, "resumed after pass {at}");
        assert!(resumed.topic_word == full.topic_word, "resumed after pass {at}: the topics differ");
    }
}
