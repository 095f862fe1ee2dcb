//! Stability of a pooled LDA fit's topics: a chain forced into a different mode shows
//! as the topic it lost, and only that one.

use super::*;
use crate::corpus::build_corpus;
use crate::models::lda::sampler::tests::{lda_corpus, raw_options};
use crate::models::lda::LdaParams;
use crate::models::test_kit::{recorded_run, SEED};
use crate::models::TopicModel;

fn l1(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).sum()
}

/// Chain 0 is a real fit on four planted topics; the second chain is chain 0 in
/// another mode: its topic 0 mixes chain 0's topics 0 and 1 (0.3 : 0.7) and its topic
/// 1 is spread evenly over the words. The cheapest matching pairs the mixture with
/// topic 1 and the even topic with topic 0, so topic 0 is the one no other chain
/// found; topics 2 and 3 recur exactly. Every similarity is 1 − L1/2 of the matched
/// pair, recomputed here from the word distributions.
#[test]
fn a_chain_in_another_mode_leaves_exactly_its_lost_topic_unmatched() {
    let (_, docs) = lda_corpus(4, 40, 120, 40, 0.3, 3);
    let corpus = build_corpus(raw_options(), &[], docs).expect("corpus builds");
    let p = LdaParams::from_json(&serde_json::json!({"topics": 4, "iterations": 60, "burn_in": 20, "thin": 4})).unwrap();
    let a = recorded_run(1, None, |ctx| crate::models::lda::fit_lda(&corpus, &p, SEED, ctx).expect("fit runs")).model;
    assert_eq!(a.topic_stability(), None, "one chain: stability is unknown, not 1");
    let v = a.num_terms;
    let topic = |m: &LdaModel, k: usize| m.word_rates[k * v..(k + 1) * v].to_vec();
    let mut b = a.clone();
    let mixture: Vec<f64> = topic(&a, 0).iter().zip(topic(&a, 1)).map(|(x, y)| 0.3 * x + 0.7 * y).collect();
    b.word_rates[..v].copy_from_slice(&mixture);
    b.word_rates[v..2 * v].fill(1.0 / v as f64);
    let mut pooled = merge(&[&a, &b]);
    pooled.params.chains = 2;
    let s = pooled.topic_stability().expect("two chains have a stability");
    assert_eq!(s.iter().map(|t| (t.chains, t.matched)).collect::<Vec<_>>(), [(2, 0), (2, 1), (2, 1), (2, 1)]);
    let expected = [1.0 - l1(&topic(&a, 0), &topic(&b, 1)) / 2.0, 1.0 - l1(&topic(&a, 1), &mixture) / 2.0, 1.0, 1.0];
    for (k, (t, e)) in s.iter().zip(expected).enumerate() {
        assert!((t.similarity - e).abs() < 1e-12, "topic {k}: {} against {e}", t.similarity);
    }
    assert!(expected[0] < 0.5 && expected[1] >= 0.5, "the construction puts topic 0 below the line and topic 1 above it: {expected:?}");
    // The same chain twice: every topic recurs, with similarity 1.
    let same = merge(&[&a, &a]).topic_stability().unwrap();
    assert!(same.iter().all(|t| t.in_every_chain() && (t.similarity - 1.0).abs() < 1e-12), "{same:?}");
}

/// A seeded fit's chains keep their seeded topics in place: a second chain holding
/// chain 0's topics 0 and 1 swapped would be matched back by the free assignment, but
/// with topic 0 seeded (pinned) topic 0 is pooled with topic 0, and the unseeded ones
/// are still matched freely (chain 1's topics 2 and 3, swapped, go back).
#[test]
fn seeded_topics_pool_with_themselves() {
    let (_, docs) = lda_corpus(4, 40, 120, 40, 0.3, 3);
    let corpus = build_corpus(raw_options(), &[], docs).expect("corpus builds");
    let p = LdaParams::from_json(&serde_json::json!({"topics": 4, "iterations": 40, "burn_in": 20, "thin": 4})).unwrap();
    let a = recorded_run(1, None, |ctx| crate::models::lda::fit_lda(&corpus, &p, SEED, ctx).expect("fit runs")).model;
    let v = a.num_terms;
    let mut b = a.clone();
    b.word_rates = [1, 0, 3, 2].iter().flat_map(|&k| a.word_rates[k * v..(k + 1) * v].to_vec()).collect();
    let free = merge(&[&a, &b]);
    assert_eq!(free.alignments[0].permutation, vec![1, 0, 3, 2], "unseeded: every topic matched back");
    let mut seeded_a = a.clone();
    seeded_a.params.seed_words = vec![crate::models::seeds::SeedTopic { name: "s".into(), words: vec!["w000".into()] }];
    let pinned = merge(&[&seeded_a, &b]);
    assert_eq!(pinned.alignments[0].permutation[0], 0, "the seeded topic stays with itself");
    assert_eq!(&pinned.alignments[0].permutation[2..], &[3, 2], "the unseeded ones are matched freely");
}
