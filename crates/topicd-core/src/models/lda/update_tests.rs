//! Checks of LDA's update with new documents: the parent's topics stay where they were,
//! a topic the new documents bring is born in a new topic, and an update neither
//! depends on the thread count nor changes when resumed from a checkpoint.

use crate::corpus::append::append;
use crate::corpus::like::LikeBase;
use crate::corpus::{build_corpus, Corpus, CorpusBuilder, RawDocument};
use crate::models::lda::fit::fit_lda_updated;
use crate::models::lda::sampler::tests::{lda_corpus, raw_options};
use crate::models::lda::{fit_lda, LdaModel, LdaParams};
use crate::models::test_kit::recorded_run;
use crate::models::{FitContext, TopicModel, UpdateStart};
use serde_json::json;

/// Words per planted topic: topic t holds 90 % of its mass on words `w{20t}`..`w{20t+19}`.
const BLOCK: usize = 20;

/// Documents drawn from four planted topics over 80 words; with `without_last`, every
/// token of the fourth topic's block is left out (the old corpus never saw it).
fn documents(docs: usize, seed: u64, prefix: &str, without_last: bool) -> Vec<RawDocument> {
    let (_, mut drawn) = lda_corpus(4, 4 * BLOCK, docs, 40, 0.3, seed);
    for (d, doc) in drawn.iter_mut().enumerate() {
        doc.id = Some(format!("{prefix}{d}"));
        if without_last {
            doc.counts.as_mut().unwrap().retain(|w, _| block_of(w) != 3);
        }
    }
    drawn
}

pub(crate) fn block_of(word: &str) -> usize {
    word[1..].parse::<usize>().unwrap() / BLOCK
}

/// The old corpus (three topics' words), the new documents made like it, and the two
/// joined.
pub(crate) fn corpora(seed: u64) -> (Corpus, Corpus) {
    let old = build_corpus(raw_options(), &[], documents(300, seed, "old", true)).unwrap();
    let mut builder = CorpusBuilder::like(LikeBase::of(&old, raw_options())).unwrap();
    for (i, d) in documents(150, seed + 100, "new", false).into_iter().enumerate() {
        builder.add_document(d, i, None).unwrap();
    }
    let joined = append(&old, &builder.finish().unwrap()).unwrap();
    (old, joined)
}

fn parent(corpus: &Corpus, k: usize) -> (LdaModel, LdaParams) {
    let p = LdaParams::from_json(&json!({"topics": k, "alpha": 0.3, "iterations": 120, "test_fraction": 0.1})).unwrap();
    (FitContext::silent(|ctx| fit_lda(corpus, &p, 3, ctx).unwrap()), p)
}

fn row(m: &LdaModel, k: usize) -> &[f64] {
    &m.word_rates[k * m.num_terms..(k + 1) * m.num_terms]
}

/// L1 between a parent's topic and a child's over the child's vocabulary (the parent's
/// words are its first ones; the parent gives the others no mass).
pub(crate) fn l1_to_parent(parent: &[f64], child: &[f64]) -> f64 {
    child.iter().enumerate().map(|(w, c)| (c - parent.get(w).copied().unwrap_or(0.0)).abs()).sum()
}

fn block_mass(m: &LdaModel, corpus: &Corpus, k: usize, block: usize) -> f64 {
    (0..m.num_terms).filter(|&w| block_of(corpus.lexicon.word(w as u32)) == block).map(|w| row(m, k)[w]).sum()
}

/// Three planted topics fitted, then updated with documents that bring a fourth and
/// one new topic: topic 3 is born on the new block (the truth puts 0.9 there; a topic
/// that missed it would hold about 0.1/3 of its mass there), the parent's topics stay
/// within a quarter of the distance between two distinct topics of where they were
/// (a topic that moved to another planted topic would be a whole distance away), and
/// none of them takes the new block (each held at most 0.1/3 ≈ 0.03 of it in truth).
#[test]
fn an_update_keeps_the_old_topics_and_a_new_topic_takes_the_new_words() {
    let (old, joined) = corpora(11);
    let (parent, p) = parent(&old, 3);
    let child_params = p.edited(4, 60).unwrap();
    let bytes = parent.encode();
    let start = UpdateStart { parent: &bytes, parent_documents: old.num_documents(), new_topics: 1, split_seed: 3 };
    let child = FitContext::silent(|ctx| fit_lda_updated(&joined, &child_params, &start, 5, ctx).unwrap());
    assert_eq!(child.params.topics, 4);
    let mut nearest = f64::INFINITY;
    for a in 0..3 {
        for b in a + 1..3 {
            nearest = nearest.min(l1_to_parent(row(&parent, a), &[row(&parent, b), &vec![0.0; joined.num_terms() - parent.num_terms][..]].concat()));
        }
    }
    for k in 0..3 {
        let moved = l1_to_parent(row(&parent, k), row(&child, k));
        assert!(moved < nearest / 4.0, "topic {k} moved {moved:.3}; distinct topics are {nearest:.3} apart");
        let new_block = block_mass(&child, &joined, k, 3);
        assert!(new_block < 0.1, "old topic {k} took {new_block:.3} of the new block");
    }
    let born = block_mass(&child, &joined, 3, 3);
    assert!(born > 0.6, "the new topic holds {born:.3} of its mass on the new block");
    assert!(child.heldout.as_ref().is_some_and(|h| h.total_log_likelihood.is_finite()));
}

/// An update gives the same bytes on 1 and 2 threads, and resumed from a checkpoint
/// the bytes of the uninterrupted one (the start is drawn only for a fresh chain).
#[test]
fn an_update_is_thread_independent_and_resumes_to_its_bytes() {
    let (old, joined) = corpora(5);
    let (parent, p) = parent(&old, 3);
    let child_params = p.edited(4, 20).unwrap();
    let bytes = parent.encode();
    let start = UpdateStart { parent: &bytes, parent_documents: old.num_documents(), new_topics: 1, split_seed: 3 };
    let run = |threads: usize, resume: Option<&[u8]>| recorded_run(threads, resume, |ctx| fit_lda_updated(&joined, &child_params, &start, 9, ctx).unwrap());
    let full = run(1, None);
    let encoded = full.model.encode();
    assert_eq!(run(2, None).model.encode(), encoded, "2 threads");
    for it in [3, 15] {
        let (_, checkpoint) = &full.checkpoints[it - 1];
        assert_eq!(run(2, Some(checkpoint)).model.encode(), encoded, "resumed after sweep {it}");
    }
}

/// A parent that was not fitted on the corpus' first documents is refused, naming
/// `corpus_id`.
#[test]
fn a_parent_of_other_documents_is_refused() {
    let (old, joined) = corpora(7);
    let (parent, p) = parent(&old, 3);
    let bytes = parent.encode();
    let start = UpdateStart { parent: &bytes, parent_documents: old.num_documents() - 10, new_topics: 0, split_seed: 3 };
    let child_params = p.edited(3, 5).unwrap();
    let e = FitContext::silent(|ctx| fit_lda_updated(&joined, &child_params, &start, 1, ctx).unwrap_err());
    assert!(e.to_string().contains("first documents"), "{e}");
}
