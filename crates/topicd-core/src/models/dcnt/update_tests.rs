//! Checks of DCNT's and SCNT's update with new documents (the planted corpora of LDA's
//! update checks): the parent's topics stay where they were, a topic the new documents
//! bring is born in a new topic, and an update neither depends on the thread count nor
//! changes when resumed from a checkpoint.

use super::fit::{fit_dcnt, fit_dcnt_updated};
use super::model::DcntModel;
use super::params::DcntParams;
use super::variant::Covariance;
use crate::corpus::{Corpus, FeatureMatrix};
use crate::models::lda::update::tests::{block_of, corpora, l1_to_parent};
use crate::models::test_kit::recorded_run;
use crate::models::{FitContext, TopicModel, UpdateStart};
use serde_json::json;

/// The parent: 100 collapsed sweeps place its start (with 30, DCNT's chain kept two
/// planted topics in one and split a third, the local modes of decision 0047, and the
/// check below would measure that parent, not the update).
fn parent(corpus: &Corpus, covariance: Covariance) -> (DcntModel, DcntParams) {
    let p = DcntParams::from_json(&json!({"topics": 3, "iterations": 120, "warm_start": 100, "test_fraction": 0.1})).unwrap();
    (FitContext::silent(|ctx| fit_dcnt(corpus, &p, covariance, 3, ctx).unwrap()), p)
}

fn row(m: &DcntModel, k: usize) -> &[f64] {
    &m.topic_word[k * m.num_terms..(k + 1) * m.num_terms]
}

fn block_mass(m: &DcntModel, corpus: &Corpus, k: usize, block: usize) -> f64 {
    (0..m.num_terms).filter(|&w| block_of(corpus.lexicon.word(w as u32)) == block).map(|w| row(m, k)[w]).sum()
}

/// Three planted topics fitted by DCNT and by SCNT, then updated with documents that
/// bring a fourth and one new topic. The bounds are LDA's check's: topic 3 is born on
/// the new block (the truth puts 0.9 there; a topic that missed it would hold about
/// 0.1/3), the parent's topics stay within a quarter of the distance between two
/// distinct topics of where they were, and none of them takes the new block (each held
/// at most 0.1/3 ≈ 0.03 of it in truth).
#[test]
fn an_update_keeps_the_old_topics_and_a_new_topic_takes_the_new_words() {
    let (old, joined) = corpora(11);
    for covariance in [Covariance::Full, Covariance::Diagonal] {
        let (parent, p) = parent(&old, covariance);
        let child_params = p.updated(4, 60).unwrap();
        let bytes = parent.encode();
        let start = UpdateStart { parent: &bytes, parent_documents: old.num_documents(), new_topics: 1, split_seed: 3 };
        let child = FitContext::silent(|ctx| fit_dcnt_updated(&joined, &child_params, covariance, &start, 5, ctx).unwrap());
        assert_eq!((child.params.topics, child.params.warm_start, child.params.thin), (4, 0, 1));
        assert_eq!(&child.train_documents[..parent.train_documents.len()], &parent.train_documents[..], "the parent's documents keep their side of the split");
        let pad = vec![0.0; joined.num_terms() - parent.num_terms];
        let mut nearest = f64::INFINITY;
        for a in 0..3 {
            for b in a + 1..3 {
                nearest = nearest.min(l1_to_parent(row(&parent, a), &[row(&parent, b), &pad[..]].concat()));
            }
        }
        for k in 0..3 {
            let moved = l1_to_parent(row(&parent, k), row(&child, k));
            assert!(moved < nearest / 4.0, "{covariance:?}: topic {k} moved {moved:.3}; distinct topics are {nearest:.3} apart");
            let new_block = block_mass(&child, &joined, k, 3);
            assert!(new_block < 0.1, "{covariance:?}: old topic {k} took {new_block:.3} of the new block");
        }
        let born = block_mass(&child, &joined, 3, 3);
        assert!(born > 0.6, "{covariance:?}: the new topic holds {born:.3} of its mass on the new block");
        assert!(child.heldout.as_ref().is_some_and(|h| h.total_log_likelihood.is_finite()));
    }
}

/// An update gives the same bytes on 1 and 2 threads, and resumed from a checkpoint
/// the bytes of the uninterrupted one (the start is drawn only for a fresh chain).
#[test]
fn an_update_is_thread_independent_and_resumes_to_its_bytes() {
    let (old, joined) = corpora(5);
    let (parent, p) = parent(&old, Covariance::Full);
    let child_params = p.updated(4, 12).unwrap();
    let bytes = parent.encode();
    let start = UpdateStart { parent: &bytes, parent_documents: old.num_documents(), new_topics: 1, split_seed: 3 };
    let run = |threads: usize, resume: Option<&[u8]>| {
        recorded_run(threads, resume, |ctx| fit_dcnt_updated(&joined, &child_params, Covariance::Full, &start, 9, ctx).unwrap())
    };
    let full = run(1, None);
    let encoded = full.model.encode();
    assert_eq!(run(2, None).model.encode(), encoded, "2 threads");
    for it in [2, 9] {
        let (_, checkpoint) = &full.checkpoints[it - 1];
        assert_eq!(run(2, Some(checkpoint)).model.encode(), encoded, "resumed after scan {it}");
    }
}

/// A parent that was not fitted on the corpus' first documents, of the other variant,
/// or without the metadata columns the documents now have, is refused, naming
/// `corpus_id`.
#[test]
fn a_parent_of_other_documents_or_variant_is_refused() {
    let (old, joined) = corpora(7);
    let (parent, p) = parent(&old, Covariance::Full);
    let bytes = parent.encode();
    let child_params = p.updated(3, 5).unwrap();
    for (parent_documents, covariance) in [(old.num_documents() - 10, Covariance::Full), (old.num_documents(), Covariance::Diagonal)] {
        let start = UpdateStart { parent: &bytes, parent_documents, new_topics: 0, split_seed: 3 };
        let e = FitContext::silent(|ctx| fit_dcnt_updated(&joined, &child_params, covariance, &start, 1, ctx).unwrap_err());
        assert!(e.to_string().contains("first documents"), "{e}");
    }
    // New documents that bring metadata columns the parent was fitted without (φ_d = 1)
    // would change every parent document's φ_d: refused, naming the columns.
    let mut featured = joined.clone();
    let values = (0..joined.num_documents()).map(|d| (d % 2) as f64).collect();
    featured.features = Some(FeatureMatrix { names: vec!["x".into()], values });
    let start = UpdateStart { parent: &bytes, parent_documents: old.num_documents(), new_topics: 0, split_seed: 3 };
    let e = FitContext::silent(|ctx| fit_dcnt_updated(&featured, &child_params, Covariance::Full, &start, 1, ctx).unwrap_err());
    assert!(e.to_string().contains("metadata columns"), "{e}");
}
