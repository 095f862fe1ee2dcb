//! Checks of PCM's refit from an edit: untouched topics stay where they were, retired
//! slots stay empty and take no weight in predictions, a merge holds both topics' words,
//! a split divides a topic that holds two planted ones (by seeds, and by the restricted
//! run alone), a seeded model's seeded topics are refused by name, an edited fit with
//! two chains neither depends on the thread count nor changes when resumed, and an
//! update of an edited child keeps its retired slots retired.

use super::fit::{fit_hpc, fit_hpc_updated, fit_pcm_edited};
use super::model::HpcModel;
use super::params::HpcParams;
use super::variant::Supervision;
use crate::corpus::{build_corpus, Corpus};
use crate::models::edit_checks::{assert_merge_of_first_two, assert_split_separates_two_blocks, documents, l1};
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

fn pcm(v: Value) -> HpcParams {
    HpcParams::from_json(&v, Supervision::Unsupervised).unwrap()
}

fn parent(corpus: &Corpus, k: usize) -> (HpcModel, HpcParams) {
    let p = pcm(json!({"topics": k, "iterations": 80, "test_fraction": 0.1}));
    (FitContext::silent(|ctx| fit_hpc(corpus, &p, Supervision::Unsupervised, 3, ctx).unwrap()), p)
}

fn plan(ops: Value, parent: &HpcModel) -> EditPlan {
    edits::plan(edits::parse_operations(&ops).unwrap(), parent.labels.len(), &RetiredTopics::new()).unwrap()
}

/// The refit of `parent` (fitted with seed 3) edited by `plan`, 30 scans, seed `seed`.
fn refit(corpus: &Corpus, parent: &HpcModel, parent_params: &HpcParams, plan: &EditPlan, seed: u64) -> HpcModel {
    let p = parent_params.edited(Supervision::Unsupervised, plan, 30).unwrap();
    let bytes = parent.encode();
    let start = EditStart { parent: &bytes, plan, split_seed: 3 };
    let child = FitContext::silent(|ctx| fit_pcm_edited(corpus, &p, &start, seed, ctx).unwrap());
    HpcModel::decode(&child.encode()).expect("the child decodes")
}

/// Topic `k`'s word distribution: its served rates E[β_·k] normalised.
fn row(m: &HpcModel, k: usize) -> Vec<f64> {
    let r = &m.frequency[k * m.num_terms..(k + 1) * m.num_terms];
    let total: f64 = r.iter().map(|&x| x as f64).sum();
    r.iter().map(|&x| x as f64 / total).collect()
}

/// Merge 0 and 1 on five planted topics: topics 2 to 4 stay within a tenth of the
/// nearest distinct topic's distance of where they were, and the merged topic within a
/// quarter of it of the share-weighted mixture of the two it joined (LDA's edit is held
/// to the same bounds).
#[test]
fn a_merge_keeps_the_other_topics_and_joins_the_two() {
    let corpus = planted(5, 7);
    let (parent, p) = parent(&corpus, 5);
    let child = refit(&corpus, &parent, &p, &plan(json!([{"op": "merge", "topics": [0, 1]}]), &parent), 5);
    assert_eq!((child.labels.len(), child.params.topics, child.shares[1]), (5, 5, 0.0));
    assert_merge_of_first_two(|k| row(&parent, k), |k| row(&child, k), (parent.shares[0], parent.shares[1]));
}

/// Delete 2 (and merge 0 with 1) on five planted topics: the retired slots have share
/// 0, empty rows and weight below e⁻⁴⁰ in every prediction, and the live topics hold
/// every share; an edit of that child keeps them retired, and one that would leave a
/// single live topic is refused.
#[test]
fn a_delete_retires_its_slot_and_the_model_still_predicts() {
    let corpus = planted(5, 7);
    let (parent, p) = parent(&corpus, 5);
    let child = refit(&corpus, &parent, &p, &plan(json!([{"op": "merge", "topics": [0, 1]}, {"op": "delete", "topic": 2}]), &parent), 5);
    let v = child.num_terms;
    for k in [1, 2] {
        assert_eq!(child.shares[k], 0.0, "topic {k} is retired");
        assert!(child.frequency[k * v..(k + 1) * v].iter().all(|&x| x == 0.0), "retired topic {k}'s row is empty");
    }
    let live: f64 = [0, 3, 4].iter().map(|&k| child.shares[k]).sum();
    assert!((live - 1.0).abs() < 1e-9, "the live topics hold every share ({live})");
    for d in &child.predict(&documents(&corpus, 5), &Default::default()).unwrap() {
        let theta = &d.topic_proportions;
        assert!(theta.iter().all(|x| x.is_finite()) && theta[1] < (-40f64).exp() && theta[2] < (-40f64).exp(), "{theta:?}");
    }
    // A second edit of the child: its retired slots stay retired, and topic 4 joins them.
    let retired: RetiredTopics = [(1, "merged into 0".to_string()), (2, "deleted".to_string())].into();
    let again = edits::plan(edits::parse_operations(&json!([{"op": "merge", "topics": [3, 4]}])).unwrap(), 5, &retired).unwrap();
    let grandchild = refit(&corpus, &child, &child.params, &again, 6);
    assert_eq!(grandchild.retired_slots(), vec![1, 2, 4]);
    let live: f64 = [0, 3].iter().map(|&k| grandchild.shares[k]).sum();
    assert!((live - 1.0).abs() < 1e-9, "the live topics hold every share ({live})");
    // An edit that would leave one live topic is refused.
    let alone = edits::plan(
        edits::parse_operations(&json!([{"op": "delete", "topic": 3}])).unwrap(),
        5,
        &[(1, String::new()), (2, String::new()), (4, String::new())].into(),
    );
    assert_eq!(grandchild.params.edited(Supervision::Unsupervised, &alone.unwrap(), 10).unwrap_err().field, "operations");
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
            assert_eq!(child.labels.len(), 4);
            Box::new(move |k| row(&child, k))
        },
    );
}

/// An edited fit with two chains gives the same bytes on 1 and 2 threads, and resumed
/// from a checkpoint in each chain (on 2 threads) the bytes of the uninterrupted one;
/// its alignment keeps the retired slot matched to itself.
#[test]
fn an_edited_fit_is_thread_independent_and_resumes_to_its_bytes() {
    let corpus = planted(4, 5);
    let p = pcm(json!({"topics": 4, "iterations": 30, "chains": 2}));
    let parent = FitContext::silent(|ctx| fit_hpc(&corpus, &p, Supervision::Unsupervised, 3, ctx).unwrap());
    let plan = plan(json!([{"op": "delete", "topic": 1}, {"op": "split", "topic": 2, "into": 2}]), &parent);
    let child_params = p.edited(Supervision::Unsupervised, &plan, 12).unwrap();
    let bytes = parent.encode();
    let start = EditStart { parent: &bytes, plan: &plan, split_seed: 3 };
    let run = |threads: usize, resume: Option<&[u8]>| recorded_run(threads, resume, |ctx| fit_pcm_edited(&corpus, &child_params, &start, 9, ctx).unwrap());
    let full = run(1, None);
    let encoded = full.model.encode();
    assert_eq!(run(2, None).model.encode(), encoded, "2 threads");
    for it in [4, 18] {
        let (_, checkpoint) = &full.checkpoints[it - 1];
        assert_eq!(run(2, Some(checkpoint)).model.encode(), encoded, "resumed after scan {it}");
    }
    let alignment = &full.model.alignments[0];
    assert_eq!((alignment.permutation.len(), alignment.permutation[1], alignment.distances[1]), (5, 1, 0.0));
}

/// A seeded model's seeded topics stay as fitted: an operation naming one is refused
/// by name; an edit of its other topics keeps the seeds on the same ids. HPC refuses.
#[test]
fn seeded_topics_are_not_edited_and_hpc_refuses_edits() {
    let corpus = planted(4, 5);
    let p = pcm(json!({"topics": 4, "iterations": 20, "seed_words": [{"name": "first", "words": ["w000", "w001"]}]}));
    let parent = FitContext::silent(|ctx| fit_hpc(&corpus, &p, Supervision::Unsupervised, 3, ctx).unwrap());
    let refused =
        p.edited(Supervision::Unsupervised, &plan(json!([{"op": "delete", "topic": 2}, {"op": "merge", "topics": [3, 0]}]), &parent), 10).unwrap_err();
    assert_eq!(refused.field, "operations[1]", "{refused:?}");
    assert!(refused.message.contains("\"first\""), "{refused:?}");
    let child = refit(&corpus, &parent, &p, &plan(json!([{"op": "merge", "topics": [2, 3]}]), &parent), 5);
    assert_eq!(child.seeds.topics, p.seeds.topics, "the seeds stay");
    let hpc = HpcParams::from_json(&json!({}), Supervision::Labelled).unwrap();
    assert_eq!(hpc.edited(Supervision::Labelled, &plan(json!([{"op": "delete", "topic": 2}]), &parent), 10).unwrap_err().field, "model");
}

/// An update of an edited child with new documents and a new topic keeps the retired
/// slot retired (share 0, found by [`HpcModel::retired_slots`]), keeps the live topics'
/// ids (each is nearest the child's topic of the same id) and gives the new topic its
/// own slot after them.
#[test]
fn an_update_of_an_edited_child_keeps_its_retired_slots() {
    let (_, docs) = lda_corpus(4, 60, 300, 40, 0.3, 5);
    let (old, joined) = super::update_tests::corpora(docs, 240);
    let (parent, p) = parent(&old, 4);
    let child = refit(&old, &parent, &p, &plan(json!([{"op": "delete", "topic": 1}]), &parent), 5);
    assert_eq!(child.retired_slots(), vec![1]);
    let update_params = child.params.updated(Supervision::Unsupervised, 1, 30).unwrap();
    let bytes = child.encode();
    let start = UpdateStart { parent: &bytes, parent_documents: old.num_documents(), new_topics: 1, split_seed: 3 };
    let updated = FitContext::silent(|ctx| fit_hpc_updated(&joined, &update_params, Supervision::Unsupervised, &start, 7, ctx).unwrap());
    let updated = HpcModel::decode(&updated.encode()).unwrap();
    assert_eq!((updated.labels.len(), updated.retired_slots()), (5, vec![1]));
    assert!(updated.shares[4] > 0.0, "the new topic holds tokens: {:?}", updated.shares);
    for k in [0, 2, 3] {
        let nearest = [0, 2, 3].into_iter().min_by(|&a, &b| l1(&row(&updated, k), &row(&child, a)).total_cmp(&l1(&row(&updated, k), &row(&child, b)))).unwrap();
        assert_eq!(nearest, k, "the update's topic {k} is nearest the child's topic {nearest}");
    }
}
