//! Stability of a pooled LDA fit's topics: a chain forced into a different mode shows
//! as the topic it lost, and only that one.

use super::*;
use crate::corpus::build_corpus;
use crate::models::lda::sampler::tests::{lda_corpus, raw_options};
use crate::models::lda::LdaParams;
use crate::models::test_kit::{recorded_run, SEED};
use crate::models::TopicModel;

/// One chain's fit of 4 topics on a corpus of 40 documents drawn from 4 planted ones.
fn four_topic_fit(iterations: usize) -> LdaModel {
    let (_, docs) = lda_corpus(4, 40, 120, 40, 0.3, 3);
    let corpus = build_corpus(raw_options(), &[], docs).expect("corpus builds");
    let p = LdaParams::from_json(&serde_json::json!({"topics": 4, "iterations": iterations, "burn_in": 20, "thin": 4})).unwrap();
    recorded_run(1, None, |ctx| crate::models::lda::fit_lda(&corpus, &p, SEED, ctx).expect("fit runs")).model
}

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
    let a = four_topic_fit(60);
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
    let a = four_topic_fit(40);
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

/// Each topic is averaged over the chains that found it up to Monte Carlo error
/// (similarity at least `POOL_SIMILARITY`) and over no other: chain 1 holds chain 0's
/// topic 2 with 5 % of its mass spread evenly (pooled) and, in topic 0's place, 0.7 of
/// topic 0 and 0.3 of topic 1 (a match for stability, not pooled). Two chains always
/// tie on agreement, so the model serves the one with the higher log joint.
#[test]
fn a_topic_pools_only_the_chains_that_found_it() {
    use crate::models::consensus::POOL_SIMILARITY;
    use crate::models::stability::MATCH_SIMILARITY;
    let a = four_topic_fit(40);
    let (k, v) = (4, a.num_terms);
    let topic = |m: &LdaModel, t: usize| m.word_rates[t * v..(t + 1) * v].to_vec();
    let mut b = a.clone();
    let blend: Vec<f64> = topic(&a, 0).iter().zip(topic(&a, 1)).map(|(x, y)| 0.7 * x + 0.3 * y).collect();
    let noisy: Vec<f64> = topic(&a, 2).iter().map(|x| 0.95 * x + 0.05 / v as f64).collect();
    b.word_rates[..v].copy_from_slice(&blend);
    b.word_rates[2 * v..3 * v].copy_from_slice(&noisy);
    let similarity_of_blend = 1.0 - l1(&topic(&a, 0), &blend) / 2.0;
    assert!((MATCH_SIMILARITY..POOL_SIMILARITY).contains(&similarity_of_blend), "the construction: {similarity_of_blend}");
    b.kept_sweeps = 3 * a.kept_sweeps;
    b.final_loglik_per_token = a.final_loglik_per_token - 0.1;

    let pooled = merge(&[&a, &b]);
    assert_eq!(pooled.reference_chain, 0, "the higher log joint");
    assert_eq!(topic(&pooled, 0), topic(&a, 0), "the blend is not pooled into topic 0");
    for (w, (&served, (&first, &second))) in topic(&pooled, 2).iter().zip(topic(&a, 2).iter().zip(&noisy)).enumerate() {
        assert!((served - (0.25 * first + 0.75 * second)).abs() < 1e-15, "topic 2, word {w}: weighted by kept sweeps");
    }
    assert!(topic(&pooled, 3).iter().zip(topic(&a, 3)).all(|(x, y)| (x - y).abs() < 1e-15), "the same topic in both chains");
    for row in pooled.document_proportions.chunks(k) {
        assert!((row.iter().sum::<f64>() - 1.0).abs() < 1e-12, "θ renormalised: {row:?}");
    }
    assert!((pooled.topic_shares.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    let s = pooled.topic_stability().unwrap();
    assert_eq!(s.iter().map(|t| t.matched).collect::<Vec<_>>(), [1, 1, 1, 1], "stability's looser match counts the blend");

    // The other chain with the higher log joint: its topics are served, its blend unpooled.
    b.final_loglik_per_token = a.final_loglik_per_token + 0.1;
    let pooled = merge(&[&a, &b]);
    assert_eq!(pooled.reference_chain, 1);
    assert_eq!(topic(&pooled, 0), blend);
    assert_eq!(pooled.alignments.len(), 1, "chain 0's alignment onto chain 1");
}
