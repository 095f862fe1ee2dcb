//! Checks of LDA's refit from an edit: untouched topics stay where they were, retired
//! topics stay empty, a merge holds both topics' words, a split divides a topic that
//! holds two planted ones (by seeds, and by the restricted run alone), and an edited fit
//! neither depends on the thread count nor changes when resumed from a checkpoint.

use crate::corpus::lexicon::EncodedDoc;
use crate::corpus::{build_corpus, Corpus};
use crate::models::edit_checks::{assert_merge_of_first_two, assert_split_separates_two_blocks};
use crate::models::edits::{self, EditPlan, RetiredTopics};
use crate::models::lda::fit::fit_lda_edited;
use crate::models::lda::sampler::tests::{lda_corpus, raw_options};
use crate::models::lda::{fit_lda, LdaModel, LdaParams};
use crate::models::test_kit::recorded_run;
use crate::models::{EditStart, FitContext, TopicModel};
use serde_json::{json, Value};

/// A corpus drawn from LDA with `k` planted topics over 60 words (each topic's block of
/// 60/k words holds 90 % of its mass).
fn planted(k: usize, seed: u64) -> Corpus {
    let (_, docs) = lda_corpus(k, 60, 240, 40, 0.3, seed);
    build_corpus(raw_options(), &[], docs).expect("corpus builds")
}

fn parent(corpus: &Corpus, k: usize) -> (LdaModel, LdaParams) {
    let p = LdaParams::from_json(&json!({"topics": k, "alpha": 0.3, "iterations": 120, "test_fraction": 0.1})).unwrap();
    (FitContext::silent(|ctx| fit_lda(corpus, &p, 3, ctx).unwrap()), p)
}

fn plan(ops: Value, parent: &LdaModel) -> EditPlan {
    edits::plan(edits::parse_operations(&ops).unwrap(), parent.params.topics, &RetiredTopics::new()).unwrap()
}

/// The refit of `parent` (fitted with seed 3) edited by `plan`, 40 sweeps, seed `seed`.
fn refit(corpus: &Corpus, parent: &LdaModel, parent_params: &LdaParams, plan: &EditPlan, seed: u64) -> LdaModel {
    let p = parent_params.edited(plan.child_topics(), 40).unwrap();
    let bytes = parent.encode();
    let start = EditStart { parent: &bytes, plan, split_seed: 3 };
    FitContext::silent(|ctx| fit_lda_edited(corpus, &p, &start, seed, ctx).unwrap())
}

fn row(m: &LdaModel, k: usize) -> &[f64] {
    &m.word_rates[k * m.num_terms..(k + 1) * m.num_terms]
}

/// Merge 0 and 1 on five planted topics: topics 2 to 4 stay within a tenth of the
/// nearest distinct topic's distance of where they were, and the merged topic within a
/// quarter of it of the share-weighted mixture of the two it joined; topic 1 holds
/// nothing and has α = 0.
#[test]
fn a_merge_keeps_the_other_topics_and_joins_the_two() {
    let corpus = planted(5, 7);
    let (parent, p) = parent(&corpus, 5);
    let child = refit(&corpus, &parent, &p, &plan(json!([{"op": "merge", "topics": [0, 1]}]), &parent), 5);
    assert_eq!((child.params.topics, child.topic_shares[1], child.alpha[1]), (5, 0.0, 0.0), "topic 1 is retired");
    assert_merge_of_first_two(|k| row(&parent, k).to_vec(), |k| row(&child, k).to_vec(), (parent.topic_shares[0], parent.topic_shares[1]));
}

/// Delete 2 (and merge 0 with 1) on five planted topics: the retired topics hold no
/// token in any document and have α = 0, the deleted topic's words went to live topics,
/// and held-out scoring and prediction stay finite with retired topics.
#[test]
fn a_delete_retires_its_slot_and_the_model_still_scores() {
    let corpus = planted(5, 7);
    let (parent, p) = parent(&corpus, 5);
    let plan = plan(json!([{"op": "merge", "topics": [0, 1]}, {"op": "delete", "topic": 2}]), &parent);
    let child = refit(&corpus, &parent, &p, &plan, 5);
    for k in [1, 2] {
        assert_eq!((child.topic_shares[k], child.alpha[k]), (0.0, 0.0), "topic {k} is retired");
        assert!(child.document_proportions.chunks(5).all(|t| t[k] == 0.0), "no document uses retired topic {k}");
    }
    let live: f64 = [0, 3, 4].iter().map(|&k| child.topic_shares[k]).sum();
    assert!((live - 1.0).abs() < 1e-9, "the live topics hold every token ({live})");
    let heldout = child.heldout.as_ref().expect("a held-out report");
    assert!(heldout.total_log_likelihood.is_finite() && heldout.tokens > 0, "{heldout:?}");
    let docs: Vec<EncodedDoc> = (0..3)
        .map(|d| {
            let (terms, counts) = corpus.counts.row(d);
            EncodedDoc { terms: terms.to_vec(), counts: counts.to_vec(), oov_tokens: 0 }
        })
        .collect();
    for d in &child.predict(&docs, &Default::default()).unwrap() {
        let theta = &d.topic_proportions;
        assert!(theta.iter().all(|x| x.is_finite()) && theta[1] == 0.0 && theta[2] == 0.0, "{theta:?}");
    }
}

/// Four planted topics fitted with three: a split of the topic that holds two planted
/// blocks separates them, by seeds and by the restricted run alone
/// ([`assert_split_separates_two_blocks`]); the new part takes id 3.
#[test]
fn a_split_divides_a_topic_that_holds_two() {
    let corpus = planted(4, 11);
    let (parent, p) = parent(&corpus, 3);
    assert_split_separates_two_blocks(
        &corpus,
        |k| row(&parent, k).to_vec(),
        |ops| {
            let child = refit(&corpus, &parent, &p, &plan(ops, &parent), 5);
            assert_eq!(child.params.topics, 4);
            Box::new(move |k| row(&child, k).to_vec())
        },
    );
}

/// An edited fit gives the same bytes on 1 and 2 threads, and resumed from a checkpoint
/// in its burn-in and in its kept sweeps (on 2 threads) the bytes of the uninterrupted
/// one: the start is drawn only for a fresh chain, and retired topics (α = 0) pass the
/// checkpoint's checks.
#[test]
fn an_edited_fit_is_thread_independent_and_resumes_to_its_bytes() {
    let corpus = planted(4, 5);
    let (parent, p) = parent(&corpus, 4);
    let plan = plan(json!([{"op": "delete", "topic": 1}, {"op": "split", "topic": 2, "into": 2}]), &parent);
    let child_params = p.edited(plan.child_topics(), 20).unwrap();
    let bytes = parent.encode();
    let start = EditStart { parent: &bytes, plan: &plan, split_seed: 3 };
    let run = |threads: usize, resume: Option<&[u8]>| recorded_run(threads, resume, |ctx| fit_lda_edited(&corpus, &child_params, &start, 9, ctx).unwrap());
    let full = run(1, None);
    let encoded = full.model.encode();
    assert_eq!(run(2, None).model.encode(), encoded, "2 threads");
    for it in [3, 15] {
        let (_, checkpoint) = &full.checkpoints[it - 1];
        assert_eq!(run(2, Some(checkpoint)).model.encode(), encoded, "resumed after sweep {it}");
    }
}

/// Above 256 topics the sparse kernel sweeps: its smoothing and document buckets give a
/// retired topic (α = 0, no tokens) no weight either.
#[test]
fn the_sparse_kernel_keeps_retired_topics_empty() {
    let corpus = planted(4, 13);
    let p = LdaParams::from_json(&json!({"topics": 260, "alpha": 0.1, "iterations": 6, "sync_tokens": 600})).unwrap();
    let parent = FitContext::silent(|ctx| fit_lda(&corpus, &p, 3, ctx).unwrap());
    let busiest: Vec<usize> = {
        let mut order: Vec<usize> = (0..260).collect();
        order.sort_by(|&a, &b| parent.topic_shares[b].total_cmp(&parent.topic_shares[a]));
        order.into_iter().take(3).collect()
    };
    let plan = plan(json!([{"op": "delete", "topic": busiest[0]}, {"op": "merge", "topics": [busiest[1], busiest[2]]}]), &parent);
    let child = refit(&corpus, &parent, &p, &plan, 5);
    for k in [busiest[0], busiest[2]] {
        assert_eq!((child.topic_shares[k], child.alpha[k]), (0.0, 0.0), "topic {k} is retired");
    }
}
