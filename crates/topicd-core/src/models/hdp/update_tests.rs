//! Checks of HDP's update with new documents (the planted corpora of LDA's update
//! checks): the parent's topics keep their ids and words, the new documents' topic is
//! found in an added topic, the moves never remove or move a protected topic, and an
//! update neither depends on the thread count nor changes when resumed.

use super::birth_tests::blended_start;
use super::fit::fit_hdp;
use super::update::fit_hdp_updated;
use super::{HdpModel, HdpParams};
use crate::corpus::Corpus;
use crate::models::lda::update::tests::{block_of, corpora, l1_to_parent};
use crate::models::test_kit::recorded_run;
use crate::models::{FitContext, TopicModel, UpdateStart};
use serde_json::json;

fn parent(corpus: &Corpus) -> (HdpModel, HdpParams) {
    let p = HdpParams::from_json(&json!({"topics": 6, "passes": 40, "batches": 2, "merge_every": 1, "birth_every": 2, "test_fraction": 0.1})).unwrap();
    (FitContext::silent(|ctx| fit_hdp(corpus, &p, 3, ctx).unwrap()), p)
}

/// Topic k's E[φ_k·].
fn row(m: &HdpModel, k: usize) -> Vec<f64> {
    m.topic_means()[k * m.num_terms..(k + 1) * m.num_terms].to_vec()
}

fn block_mass(m: &HdpModel, corpus: &Corpus, k: usize, block: usize) -> f64 {
    row(m, k).iter().enumerate().filter(|&(w, _)| block_of(corpus.lexicon.word(w as u32)) == block).map(|(_, x)| x).sum()
}

/// Three planted topics fitted by HDP (truncation 6, its deletes), then updated with
/// documents that bring a fourth and one empty topic. The bounds are LDA's check's: each
/// parent topic that holds a planted topic (more than half its mass on one block) stays
/// within a quarter of the distance between two distinct parent topics of where it was
/// and takes none of the new block (the truth gives each old topic 0.1/3 ≈ 0.03 of it);
/// an added topic holds the new block (the truth puts 0.9 there, a topic that missed it
/// about 0.1/3).
#[test]
fn an_update_keeps_the_old_topics_and_an_added_topic_takes_the_new_words() {
    let (old, joined) = corpora(11);
    let (parent, p) = parent(&old);
    let child_params = p.updated(1, 20).unwrap();
    let bytes = parent.encode();
    let start = UpdateStart { parent: &bytes, parent_documents: old.num_documents(), new_topics: 1, split_seed: 3 };
    let child = FitContext::silent(|ctx| fit_hdp_updated(&joined, &child_params, &start, 5, ctx).unwrap());
    let kp = parent.num_topics;
    assert!(child.num_topics > kp, "the added topic stays: {} of {kp}", child.num_topics);
    let planted: Vec<usize> = (0..kp).filter(|&k| (0..3).any(|b| block_mass(&parent, &old, k, b) > 0.5)).collect();
    assert!(planted.len() >= 3, "the parent holds the three planted topics: {planted:?} of {kp}");
    let pad = vec![0.0; joined.num_terms() - parent.num_terms];
    let mut nearest = f64::INFINITY;
    for &a in &planted {
        for &b in planted.iter().filter(|&&b| b > a) {
            nearest = nearest.min(l1_to_parent(&row(&parent, a), &[row(&parent, b), pad.clone()].concat()));
        }
    }
    for &k in &planted {
        let moved = l1_to_parent(&row(&parent, k), &row(&child, k));
        assert!(moved < nearest / 4.0, "topic {k} moved {moved:.3}; distinct topics are {nearest:.3} apart");
        let new_block = block_mass(&child, &joined, k, 3);
        assert!(new_block < 0.1, "old topic {k} took {new_block:.3} of the new block");
    }
    let born = (kp..child.num_topics).map(|k| block_mass(&child, &joined, k, 3)).fold(0.0, f64::max);
    assert!(born > 0.6, "the best added topic holds {born:.3} of its mass on the new block");
    assert!(child.heldout.as_ref().is_some_and(|h| h.total_log_likelihood.is_finite()));
}

/// With every move on (merges, deletes, births every pass), no parent topic is
/// removed or moved, and the 3 added topics stay: the first topics of the child are the parent's, in order, near
/// where they were (each parent topic's nearest child topic is the one with its id).
#[test]
fn every_move_spares_the_parent_topics() {
    let (old, joined) = corpora(13);
    let (parent, p) = parent(&old);
    let moves = HdpParams { merge_every: 1, delete_every: 2, birth_every: 1, ..p.updated(3, 12).unwrap() };
    let bytes = parent.encode();
    let start = UpdateStart { parent: &bytes, parent_documents: old.num_documents(), new_topics: 3, split_seed: 3 };
    let child = FitContext::silent(|ctx| fit_hdp_updated(&joined, &moves, &start, 5, ctx).unwrap());
    let kp = parent.num_topics;
    assert!(child.num_topics >= kp + 3, "{} topics after the update of {kp} with 3 added, which are protected too", child.num_topics);
    assert!(child.passes.iter().any(|s| s.merges_accepted > 0 || s.deleted), "a merge or delete was accepted: {:?}", child.passes);
    for k in 0..kp {
        let parent_row = row(&parent, k);
        let distance = |j: usize| l1_to_parent(&parent_row, &row(&child, j));
        let closest = (0..child.num_topics).min_by(|&a, &b| distance(a).total_cmp(&distance(b))).unwrap();
        assert_eq!(closest, k, "parent topic {k} is nearest child topic {closest} ({:.3} against {:.3})", distance(closest), distance(k));
    }
}

/// An update gives the same bytes on 1 and 2 threads, and resumed from a checkpoint
/// the bytes of the uninterrupted one.
#[test]
fn an_update_is_thread_independent_and_resumes_to_its_bytes() {
    let (old, joined) = corpora(5);
    let (parent, p) = parent(&old);
    let child_params = HdpParams { convergence_tolerance: 0.0, ..p.updated(1, 6).unwrap() };
    let bytes = parent.encode();
    let start = UpdateStart { parent: &bytes, parent_documents: old.num_documents(), new_topics: 1, split_seed: 3 };
    let run = |threads: usize, resume: Option<&[u8]>| recorded_run(threads, resume, |ctx| fit_hdp_updated(&joined, &child_params, &start, 9, ctx).unwrap());
    let full = run(1, None);
    let encoded = full.model.encode();
    assert_eq!(run(2, None).model.encode(), encoded, "2 threads");
    for pass in [1, 4] {
        let (_, checkpoint) = &full.checkpoints[pass - 1];
        assert_eq!(run(2, Some(checkpoint)).model.encode(), encoded, "resumed after pass {pass}");
    }
}

/// A parent not fitted on the corpus' first documents, or on another held-out split,
/// is refused, naming `corpus_id`.
#[test]
fn a_parent_of_other_documents_is_refused() {
    let (old, joined) = corpora(7);
    let (parent, p) = parent(&old);
    let bytes = parent.encode();
    let child_params = p.updated(0, 5).unwrap();
    for (parent_documents, split_seed) in [(old.num_documents() - 10, 3), (old.num_documents(), 4)] {
        let start = UpdateStart { parent: &bytes, parent_documents, new_topics: 0, split_seed };
        let e = FitContext::silent(|ctx| fit_hdp_updated(&joined, &child_params, &start, 1, ctx).unwrap_err());
        assert!(e.to_string().contains("first documents"), "{e}");
    }
}

/// The starting sticks: the parent's topics keep their weights relative to each other
/// and to the remainder, and each added topic starts at the parent's mean topic weight
/// (not at a share of the remainder, which left added topics unused: decision 0063).
#[test]
fn added_topics_start_with_a_parent_sized_stick() {
    let (old, joined) = corpora(7);
    let (parent, _) = parent(&old);
    let bytes = parent.encode();
    let start = UpdateStart { parent: &bytes, parent_documents: old.num_documents(), new_topics: 2, split_seed: 3 };
    let p = HdpParams::from_json(&json!({"topics": parent.num_topics + 2, "test_fraction": 0.1})).unwrap();
    let from = super::update::UpdatedStart::new(&start, &joined, &p).unwrap();
    let before = parent.stick.expected_beta();
    let after = from.initial_stick().expected_beta();
    let kp = parent.num_topics;
    assert_eq!(after.len(), kp + 3);
    let scale = after[0] / before[0];
    for k in 0..kp {
        assert!((after[k] / before[k] - scale).abs() < 1e-9 * scale, "topic {k}: {} vs {}", after[k], before[k] * scale);
    }
    assert!((after[kp + 2] / before[kp] - scale).abs() < 1e-9 * scale, "the remainder keeps its weight");
    let mean = before[..kp].iter().sum::<f64>() / kp as f64 * scale;
    for (k, &weight) in after.iter().enumerate().skip(kp).take(2) {
        assert!((weight - mean).abs() < 1e-9, "added topic {k}: {weight} vs the mean {mean}");
    }
    assert!((after.iter().sum::<f64>() - 1.0).abs() < 1e-12);
}

/// The added topics start from the words the parent does not predict, and differently:
/// the new documents' only unpredicted words are the new block's (their old words come
/// at the parent's rates, so their excess share is near 0, while every new-block word is
/// new), so each added topic starts with most of its counts there; and the restricted
/// fit starts them from different documents, so they are not identical (identical
/// empty topics take identical shares and were merged into one).
#[test]
fn added_topics_start_on_the_words_the_parent_does_not_predict() {
    let (old, joined) = corpora(11);
    let (parent, p) = parent(&old);
    let bytes = parent.encode();
    let start = UpdateStart { parent: &bytes, parent_documents: old.num_documents(), new_topics: 2, split_seed: 3 };
    let child_params = p.updated(2, 5).unwrap();
    let from = super::update::UpdatedStart::new(&start, &joined, &child_params).unwrap();
    let training = super::fit::prepare(&joined, &child_params, 3).unwrap().training;
    let v = joined.num_terms();
    let init = from.initial_counts(&training, v, &child_params, 5);
    let (kp, k) = (parent.num_topics, parent.num_topics + 2);
    let column = |t: usize| (0..v).map(|w| init.word_topic[w * k + t]).collect::<Vec<f64>>();
    let added: Vec<Vec<f64>> = (kp..k).map(column).collect();
    for (i, c) in added.iter().enumerate() {
        let total: f64 = c.iter().sum();
        let new_block: f64 = c.iter().enumerate().filter(|&(w, _)| block_of(joined.lexicon.word(w as u32)) == 3).map(|(_, x)| x).sum();
        assert!(total > 0.0 && new_block / total > 0.8, "added topic {i}: {new_block:.1} of {total:.1} on the new block");
    }
    let normalised = |c: &[f64]| c.iter().map(|x| x / c.iter().sum::<f64>()).collect::<Vec<f64>>();
    let apart = l1_to_parent(&normalised(&added[0]), &normalised(&added[1]));
    assert!(apart > 1e-3, "the added topics start identical (L1 {apart:.2e})");
}

/// The protected topics under each move's choice: a delete never proposes one, a merge
/// never removes one, the size reordering leaves them in place.
#[test]
fn the_moves_choose_no_protected_topic() {
    use super::delete::choose_topic;
    use super::merge::candidate_pairs;
    let start = blended_start();
    let k = start.num_topics;
    for rank in 0..2 * k {
        assert!(choose_topic(&start, rank, 2).is_some_and(|t| t >= 2));
    }
    assert_eq!(choose_topic(&start, 0, k), None);
    for protected in 0..=k {
        assert!(candidate_pairs(&start, 100, protected).iter().all(|&(a, b)| a < b && b >= protected));
    }
}

/// A birth's proposed topics: a protected target keeps its place for its largest fresh
/// part; an unprotected one is dropped and its fresh parts follow the others (a fit's
/// layout, which the recorded model bytes pin).
#[test]
fn a_birth_on_a_protected_topic_keeps_its_place() {
    use super::birth::{layout, Slot::*};
    assert_eq!(layout(5, 1, &[3.0, 7.0], 2), vec![Old(0), Fresh(1), Old(2), Old(3), Old(4), Fresh(0)]);
    assert_eq!(layout(5, 3, &[3.0, 7.0], 2), vec![Old(0), Old(1), Old(2), Old(4), Fresh(0), Fresh(1)]);
    assert_eq!(layout(3, 0, &[1.0, 1.0, 2.0], 0), vec![Old(1), Old(2), Fresh(0), Fresh(1), Fresh(2)]);
}

/// With no empty topic to fill, the parent's births (every second pass) find the new
/// documents' topic: the parent topic that first absorbs the new block is split, its
/// largest part keeps its id (still more than half on the planted block it held) and a
/// fresh part, with a new id, takes the new block (0.9 of it in truth).
#[test]
fn a_birth_finds_the_new_topic_when_no_empty_topic_is_added() {
    let (old, joined) = corpora(11);
    let (parent, p) = parent(&old);
    let child_params = p.updated(0, 20).unwrap();
    let bytes = parent.encode();
    let start = UpdateStart { parent: &bytes, parent_documents: old.num_documents(), new_topics: 0, split_seed: 3 };
    let child = FitContext::silent(|ctx| fit_hdp_updated(&joined, &child_params, &start, 5, ctx).unwrap());
    let kp = parent.num_topics;
    assert!(child.num_topics > kp, "a topic was born: {} of {kp}", child.num_topics);
    for k in 0..kp {
        let new_block = block_mass(&child, &joined, k, 3);
        assert!(new_block < 0.1, "old topic {k} kept {new_block:.3} of the new block");
        let main_block = |m: &HdpModel, c: &Corpus| (0..3).map(|b| (block_mass(m, c, k, b), b)).fold((0.0, 0), |x, y| if y.0 > x.0 { y } else { x });
        let (was, now) = (main_block(&parent, &old), main_block(&child, &joined));
        assert!(was.0 > 0.5 && now.0 > 0.5 && was.1 == now.1, "topic {k} holds the planted block it held: {was:?} then {now:?}");
    }
    let born = (kp..child.num_topics).map(|k| block_mass(&child, &joined, k, 3)).fold(0.0, f64::max);
    assert!(born > 0.6, "the best born topic holds {born:.3} of its mass on the new block");
}
