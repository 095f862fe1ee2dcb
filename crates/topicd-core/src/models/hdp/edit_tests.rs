//! Checks of HDP's refit from an edit (the planted corpora and bounds of LDA's and PCM's
//! edit checks): untouched topics stay where they were, retired slots stay empty and take
//! no weight in predictions, a merge holds both topics' words, a split divides a topic
//! that holds two planted ones (by seeds, and by the restricted fit alone), an edited
//! fit neither depends on the thread count nor changes when resumed, and an update of an
//! edited child keeps its retired slots retired.

use super::edit::fit_hdp_edited;
use super::fit::fit_hdp;
use super::update::fit_hdp_updated;
use super::{HdpModel, HdpParams};
use crate::corpus::{build_corpus, Corpus};
use crate::models::edit_checks::{assert_merge_of_first_two, assert_split_separates_two_blocks, block_mass, documents, l1, main_block};
use crate::models::edits::{self, EditPlan, RetiredTopics};
use crate::models::lda::sampler::tests::{lda_corpus, raw_options};
use crate::models::test_kit::recorded_run;
use crate::models::{EditStart, FitContext, TopicModel, UpdateStart};
use serde_json::{json, Value};

/// A corpus drawn from LDA with `k` planted topics over 60 words (each topic's block of
/// 60/k words holds 90 % of its mass).
fn planted(k: usize, seed: u64) -> Corpus {
    let (_, docs) = lda_corpus(k, 60, 240, 40, 0.3, seed);
    build_corpus(raw_options(), &[], docs).expect("corpus builds")
}

/// A parent of `k` topics: HDP with its moves off, so that the truncation is its K.
fn parent(corpus: &Corpus, k: usize) -> (HdpModel, HdpParams) {
    let p =
        HdpParams::from_json(&json!({"topics": k, "passes": 60, "batches": 2, "merge_every": 0, "delete_every": 0, "birth_every": 0, "test_fraction": 0.1}))
            .unwrap();
    (FitContext::silent(|ctx| fit_hdp(corpus, &p, 3, ctx).unwrap()), p)
}

/// A parent that found the `k` planted topics of `corpus` (blocks of `size` words) with
/// HDP's moves (truncation k + 3): each of its topics holds one block (more than half
/// its mass), in the order the fit left them.
fn planted_parent(corpus: &Corpus, k: usize, size: usize) -> (HdpModel, HdpParams) {
    let p = HdpParams::from_json(&json!({"topics": k + 3, "passes": 60, "batches": 2, "merge_every": 1, "birth_every": 2, "test_fraction": 0.1})).unwrap();
    let parent = FitContext::silent(|ctx| fit_hdp(corpus, &p, 3, ctx).unwrap());
    let blocks: Vec<usize> =
        (0..parent.num_topics).map(|t| main_block(k, |b| block_mass(&row(&parent, t), corpus, b, size))).filter(|m| m.0 > 0.5).map(|m| m.1).collect();
    assert_eq!((parent.num_topics, blocks.len()), (k, k), "the parent holds the {k} planted topics: {blocks:?}");
    (parent, p)
}

fn plan(ops: Value, parent: &HdpModel) -> EditPlan {
    edits::plan(edits::parse_operations(&ops).unwrap(), parent.num_topics, &RetiredTopics::new()).unwrap()
}

/// The refit of `parent` (fitted with seed 3) edited by `plan`, 30 passes, seed `seed`,
/// through its stored bytes.
fn refit(corpus: &Corpus, parent: &HdpModel, parent_params: &HdpParams, plan: &EditPlan, seed: u64) -> HdpModel {
    let p = parent_params.edited(plan, 30).unwrap();
    let bytes = parent.encode();
    let start = EditStart { parent: &bytes, plan, split_seed: 3 };
    let child = FitContext::silent(|ctx| fit_hdp_edited(corpus, &p, &start, seed, ctx).unwrap());
    HdpModel::decode(&child.encode()).expect("the child decodes")
}

/// Topic `k`'s E[φ_k·].
fn row(m: &HdpModel, k: usize) -> Vec<f64> {
    m.topic_means()[k * m.num_terms..(k + 1) * m.num_terms].to_vec()
}

/// Merge 0 and 1 on five planted topics: topics 2 to 4 stay within a tenth of the
/// nearest distinct topic's distance of where they were, and the merged topic within a
/// quarter of it of the token-weighted mixture of the two it joined (LDA's and PCM's
/// bounds); topic 1 is retired.
#[test]
fn a_merge_keeps_the_other_topics_and_joins_the_two() {
    let corpus = planted(5, 7);
    let (parent, p) = planted_parent(&corpus, 5, 12);
    let child = refit(&corpus, &parent, &p, &plan(json!([{"op": "merge", "topics": [0, 1]}]), &parent), 5);
    assert_eq!((child.num_topics, child.retired_slots()), (5, vec![1]));
    assert_merge_of_first_two(|k| row(&parent, k), |k| row(&child, k), (parent.topic_tokens[0], parent.topic_tokens[1]));
}

/// Merge 0 with 1 and delete 2 on five planted topics: the retired slots hold no tokens
/// and a stick of 0, weigh below e⁻⁴⁰ in every prediction, and the live topics hold
/// every token; an edit of that child keeps them retired.
#[test]
fn a_delete_retires_its_slot_and_the_model_still_predicts() {
    let corpus = planted(5, 7);
    let (parent, p) = planted_parent(&corpus, 5, 12);
    let child = refit(&corpus, &parent, &p, &plan(json!([{"op": "merge", "topics": [0, 1]}, {"op": "delete", "topic": 2}]), &parent), 5);
    assert_eq!(child.retired_slots(), vec![1, 2]);
    let beta = child.stick.expected_beta();
    for k in [1, 2] {
        assert_eq!((child.topic_tokens[k], beta[k]), (0.0, 0.0), "topic {k} is retired");
    }
    let live: f64 = [0, 3, 4].iter().map(|&k| child.topic_tokens[k]).sum();
    let tokens = child.tokens as f64;
    assert!((live - tokens).abs() < 1e-6 * tokens, "the live topics hold every token ({live} of {tokens})");
    for d in &child.predict(&documents(&corpus, 5), &Default::default()).unwrap() {
        let theta = &d.topic_proportions;
        assert!(theta.iter().all(|x| x.is_finite()) && theta[1] < (-40f64).exp() && theta[2] < (-40f64).exp(), "{theta:?}");
    }
    assert_eq!(child.diagnostics()["active_topics"], 3);
    // A second edit of the child: its retired slots stay retired, and topic 4 joins them.
    let retired: RetiredTopics = [(1, "merged into 0".to_string()), (2, "deleted".to_string())].into();
    let again = edits::plan(edits::parse_operations(&json!([{"op": "merge", "topics": [3, 4]}])).unwrap(), 5, &retired).unwrap();
    let grandchild = refit(&corpus, &child, &child.params, &again, 6);
    assert_eq!(grandchild.retired_slots(), vec![1, 2, 4]);
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
        |k| row(&parent, k),
        |ops| {
            let child = refit(&corpus, &parent, &p, &plan(ops, &parent), 5);
            assert_eq!((child.num_topics, child.retired_slots()), (4, vec![]));
            Box::new(move |k| row(&child, k))
        },
    );
}

/// An edited fit gives the same bytes on 1 and 2 threads, and resumed from a checkpoint
/// (on 2 threads) the bytes of the uninterrupted one.
#[test]
fn an_edited_fit_is_thread_independent_and_resumes_to_its_bytes() {
    let corpus = planted(4, 5);
    let (parent, p) = parent(&corpus, 4);
    let plan = plan(json!([{"op": "delete", "topic": 1}, {"op": "split", "topic": 2, "into": 2}]), &parent);
    let child_params = HdpParams { convergence_tolerance: 0.0, ..p.edited(&plan, 12).unwrap() };
    let bytes = parent.encode();
    let start = EditStart { parent: &bytes, plan: &plan, split_seed: 3 };
    let run = |threads: usize, resume: Option<&[u8]>| recorded_run(threads, resume, |ctx| fit_hdp_edited(&corpus, &child_params, &start, 9, ctx).unwrap());
    let full = run(1, None);
    let encoded = full.model.encode();
    assert_eq!(run(2, None).model.encode(), encoded, "2 threads");
    for pass in [2, 9] {
        let (_, checkpoint) = &full.checkpoints[pass - 1];
        assert_eq!(run(2, Some(checkpoint)).model.encode(), encoded, "resumed after pass {pass}");
    }
}

/// An update of an edited child with new documents and a new topic keeps the retired
/// slot retired (found by [`HdpModel::retired_slots`]), keeps the live topics' ids (each
/// is nearest the child's topic of the same id) and gives the new topic its own slot
/// after them.
#[test]
fn an_update_of_an_edited_child_keeps_its_retired_slots() {
    let (old, joined) = crate::models::lda::update::tests::corpora(11);
    let (parent, p) = parent(&old, 4);
    let child = refit(&old, &parent, &p, &plan(json!([{"op": "delete", "topic": 1}]), &parent), 5);
    assert_eq!(child.retired_slots(), vec![1]);
    let update_params = child.params.updated(1, 20).unwrap();
    let bytes = child.encode();
    let start = UpdateStart { parent: &bytes, parent_documents: old.num_documents(), new_topics: 1, split_seed: 3 };
    let updated = FitContext::silent(|ctx| fit_hdp_updated(&joined, &update_params, &start, 7, ctx).unwrap());
    let updated = HdpModel::decode(&updated.encode()).unwrap();
    assert_eq!(updated.retired_slots(), vec![1]);
    assert!(updated.num_topics >= 5 && updated.topic_tokens[4] > 0.0, "the new topic holds tokens: {:?}", updated.topic_tokens);
    let pad = vec![0.0; joined.num_terms() - child.num_terms];
    let child_row = |k: usize| [row(&child, k), pad.clone()].concat();
    for k in [0, 2, 3] {
        let nearest = [0, 2, 3].into_iter().min_by(|&a, &b| l1(&row(&updated, k), &child_row(a)).total_cmp(&l1(&row(&updated, k), &child_row(b)))).unwrap();
        assert_eq!(nearest, k, "the update's topic {k} is nearest the child's topic {nearest}");
    }
}
