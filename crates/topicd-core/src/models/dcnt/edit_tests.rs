//! Checks of DCNT's and SCNT's refit from an edit, read through the served face (the
//! child's ids): untouched topics stay where they were and a merge holds both topics'
//! words (LDA's and PCM's bounds), retired slots are empty in every answer that names
//! topics, a split divides a topic that holds two planted ones, an edited fit neither
//! depends on the thread count nor changes when resumed, seeded topics are refused by
//! name, a second edit and an update of the child keep its retired slots retired.

use super::fit::{fit_dcnt, fit_dcnt_edited, fit_dcnt_updated};
use super::model::DcntModel;
use super::params::DcntParams;
use super::variant::Covariance;
use crate::corpus::{build_corpus, Corpus};
use crate::models::edit_checks::{assert_merge_of_first_two, assert_split_separates_two_blocks, block_mass, documents, l1, main_block, two_block_topic};
use crate::models::edits::{self, EditPlan, RetiredTopics};
use crate::models::lda::sampler::tests::{lda_corpus, raw_options};
use crate::models::slots::Slots;
use crate::models::test_kit::recorded_run;
use crate::models::{EditStart, FitContext, ModelFamily, TableOptions, TopicModel, UpdateStart};
use serde_json::{json, Value};

/// A corpus drawn from LDA with `k` planted topics over 60 words (each topic's block of
/// 60/k words holds 90 % of its mass).
fn planted(k: usize, seed: u64) -> Corpus {
    let (_, docs) = lda_corpus(k, 60, 240, 40, 0.3, seed);
    build_corpus(raw_options(), &[], docs).expect("corpus builds")
}

/// The parent: 100 collapsed sweeps place its start (as the update checks' parent, which
/// says why).
fn parent(corpus: &Corpus, k: usize, covariance: Covariance) -> (DcntModel, DcntParams) {
    let p = DcntParams::from_json(&json!({"topics": k, "iterations": 120, "warm_start": 100, "test_fraction": 0.1})).unwrap();
    (FitContext::silent(|ctx| fit_dcnt(corpus, &p, covariance, 3, ctx).unwrap()), p)
}

fn plan(ops: Value, topics: usize, retired: &RetiredTopics) -> EditPlan {
    edits::plan(edits::parse_operations(&ops).unwrap(), topics, retired).unwrap()
}

/// The refit of `parent` (fitted with seed 3) edited by `plan`, 40 scans, seed `seed`:
/// the stored model and the model as the family serves it.
fn refit(corpus: &Corpus, parent: &DcntModel, parent_params: &DcntParams, plan: &EditPlan, seed: u64) -> (DcntModel, Box<dyn TopicModel>) {
    let p = parent_params.edited(plan, 40).unwrap();
    let bytes = parent.encode();
    let start = EditStart { parent: &bytes, plan, split_seed: 3 };
    let child = FitContext::silent(|ctx| fit_dcnt_edited(corpus, &p, parent.covariance, &start, seed, ctx).unwrap());
    let served = served(&child);
    (child, served)
}

/// `m` as its family serves it from its bytes.
fn served(m: &DcntModel) -> Box<dyn TopicModel> {
    let family = match m.covariance {
        Covariance::Full => &super::DCNT,
        Covariance::Diagonal => &super::SCNT,
    };
    family.decode(&m.encode()).expect("the model decodes")
}

/// Served topic `k`'s word distribution.
fn row(m: &dyn TopicModel, k: usize) -> Vec<f64> {
    m.topic_table(&TableOptions::default()).frequency.row(k).to_vec()
}

fn shares(m: &dyn TopicModel) -> Vec<f64> {
    m.topic_table(&TableOptions::default()).topics.iter().map(|t| t.proportion).collect()
}

/// Merge 0 and 1 of five planted topics: topics 2 to 4 stay within a tenth of the
/// nearest distinct topic's distance of where they were, and the merged topic within a
/// quarter of it of the share-weighted mixture of the two it joined (LDA's and PCM's
/// edits are held to the same bounds); the retired slot 1 is served empty, and the
/// child keeps five ids over four fitted topics.
#[test]
fn a_merge_keeps_the_other_topics_and_joins_the_two() {
    let corpus = planted(5, 7);
    let (parent, p) = parent(&corpus, 5, Covariance::Full);
    let (child, served) = refit(&corpus, &parent, &p, &plan(json!([{"op": "merge", "topics": [0, 1]}]), 5, &RetiredTopics::new()), 5);
    assert_eq!((served.num_topics(), child.params.topics, shares(served.as_ref())[1]), (5, 4, 0.0));
    let ps = shares(&parent);
    assert_merge_of_first_two(|k| row(&parent, k), |k| row(served.as_ref(), k), (ps[0], ps[1]));
}

/// The edit a user makes of a fit stuck in a local mode (decision 0047): SCNT on the
/// same five planted topics ends with one topic holding two planted blocks and two
/// topics sharing another (the premise, asserted). Merging the pair and splitting the
/// two-block topic in one edit gives a child in which each planted block is the main
/// block (more than 0.6 of the mass; the truth puts 0.9 there) of exactly one live topic.
#[test]
fn an_edit_repairs_a_fit_stuck_in_a_local_mode() {
    let corpus = planted(5, 7);
    let (parent, p) = parent(&corpus, 5, Covariance::Diagonal);
    let size = 12;
    let main = |rows: &dyn Fn(usize) -> Vec<f64>, k: usize| main_block(5, |b| block_mass(&rows(k), &corpus, b, size));
    let parent_rows = |k: usize| row(&parent, k);
    let (two_block, _) = two_block_topic(5, 5, |k, b| block_mass(&parent_rows(k), &corpus, b, size));
    let others: Vec<usize> = (0..5).filter(|&k| k != two_block).collect();
    let pair: Vec<usize> = others.iter().copied().filter(|&a| others.iter().any(|&b| b != a && main(&parent_rows, a).1 == main(&parent_rows, b).1)).collect();
    assert_eq!(pair.len(), 2, "the premise: two parent topics share a planted block ({:?})", (0..5).map(|k| main(&parent_rows, k)).collect::<Vec<_>>());
    let ops = json!([{"op": "merge", "topics": pair}, {"op": "split", "topic": two_block, "into": 2}]);
    let (child, served) = refit(&corpus, &parent, &p, &plan(ops, 5, &RetiredTopics::new()), 5);
    let live = child.slots.as_ref().expect("the merge retires a slot").live().to_vec();
    let child_rows = |k: usize| row(served.as_ref(), k);
    let mut blocks: Vec<usize> = live
        .iter()
        .map(|&k| {
            let (mass, block) = main(&child_rows, k);
            assert!(mass > 0.6, "child topic {k} puts {mass:.2} on its main block {block}");
            block
        })
        .collect();
    blocks.sort();
    assert_eq!(blocks, vec![0, 1, 2, 3, 4], "each planted block in one live topic");
}

/// Merge 0 and 1 and delete 2 of five planted topics: the retired slots 1 and 2 read as
/// empty in the table, predictions, intervals, training proportions and correlations;
/// the live ones hold every share; the held-out score is finite; stored slots that do not
/// fit the fitted topics do not decode. A second edit of the
/// child keeps them retired, and one that would leave a single live topic is refused.
#[test]
fn a_delete_retires_its_slot_in_every_answer() {
    let corpus = planted(5, 7);
    let (parent, p) = parent(&corpus, 5, Covariance::Full);
    let ops = json!([{"op": "merge", "topics": [0, 1]}, {"op": "delete", "topic": 2}]);
    let (child, served) = refit(&corpus, &parent, &p, &plan(ops.clone(), 5, &RetiredTopics::new()), 5);
    assert_eq!((served.num_topics(), child.params.topics), (5, 3), "five served slots, three fitted topics");
    for k in [1, 2] {
        assert!(row(served.as_ref(), k).iter().all(|&x| x == 0.0), "retired topic {k}'s row is empty");
    }
    let s = shares(served.as_ref());
    assert!((s[0] + s[3] + s[4] - 1.0).abs() < 1e-9 && s[1] == 0.0 && s[2] == 0.0, "{s:?}");
    let docs = documents(&corpus, 4);
    let retired_zero = |theta: &[f64]| theta.len() == 5 && theta[1] == 0.0 && theta[2] == 0.0 && (theta.iter().sum::<f64>() - 1.0).abs() < 1e-9;
    assert!(served.predict(&docs, &Default::default()).unwrap().iter().all(|d| retired_zero(&d.topic_proportions)));
    for (d, intervals) in served.predict_with_intervals(&docs, &Default::default(), 0.9).unwrap().unwrap() {
        assert!(retired_zero(&d.topic_proportions) && intervals.len() == 5 && intervals[1].upper == 0.0, "{intervals:?}");
    }
    let training = served.training_proportions(&corpus, 3).unwrap();
    assert!(training.rows.chunks(5).all(retired_zero), "training proportions");
    let c = served.correlations(5, 1).unwrap();
    assert_eq!((c.num_topics, c.covariance.len(), c.covariance[5 + 1], c.mean[2]), (5, 25, 0.0, 0.0));
    assert!(c.covariance[3 * 5 + 3] > 0.0, "a live topic varies");
    assert!(child.heldout.as_ref().is_some_and(|h| h.total_log_likelihood.is_finite()));
    // Stored slots that do not fit the fitted topics are a decode error, not a panic.
    for bad in [Slots::retiring(&[1], 5), Slots::retiring(&[0, 1], 4)] {
        let tampered = postcard::to_allocvec(&DcntModel { slots: Some(bad), ..child.clone() }).unwrap();
        assert!(DcntModel::decode(&tampered).is_err());
    }
    // A second edit of the child: its retired slots stay retired, 4 joins them.
    let retired: RetiredTopics = [(1, "merged into 0".to_string()), (2, "deleted".to_string())].into();
    let child_params = p.edited(&plan(ops, 5, &RetiredTopics::new()), 40).unwrap();
    let (grandchild, served) = refit(&corpus, &child, &child_params, &plan(json!([{"op": "merge", "topics": [3, 4]}]), 5, &retired), 6);
    assert_eq!((served.num_topics(), grandchild.slots.as_ref().map(|s| s.live().to_vec())), (5, Some(vec![0, 3])));
    let s = shares(served.as_ref());
    assert!((s[0] + s[3] - 1.0).abs() < 1e-9, "{s:?}");
    let alone = plan(json!([{"op": "delete", "topic": 3}]), 5, &[(1, String::new()), (2, String::new()), (4, String::new())].into());
    assert_eq!(child_params.edited(&alone, 10).unwrap_err().field, "operations");
}

/// Four planted topics fitted with three: a split of the topic that holds two planted
/// blocks separates them, by seeds and by the restricted run alone
/// ([`assert_split_separates_two_blocks`]); the new part takes id 3.
#[test]
fn a_split_divides_a_topic_that_holds_two() {
    let corpus = planted(4, 11);
    let (parent, p) = parent(&corpus, 3, Covariance::Full);
    assert_split_separates_two_blocks(
        &corpus,
        |k| row(&parent, k),
        |ops| {
            let (child, served) = refit(&corpus, &parent, &p, &plan(ops, 3, &RetiredTopics::new()), 5);
            assert_eq!((served.num_topics(), child.slots.clone()), (4, None), "a split retires nothing");
            Box::new(move |k| row(served.as_ref(), k))
        },
    );
}

/// An edited fit with two chains gives the same bytes on 1 and 2 threads, and resumed
/// from a checkpoint in each chain (on 2 threads) the bytes of the uninterrupted one.
#[test]
fn an_edited_fit_is_thread_independent_and_resumes_to_its_bytes() {
    let corpus = planted(4, 5);
    let p = DcntParams::from_json(&json!({"topics": 4, "iterations": 30, "chains": 2})).unwrap();
    let parent = FitContext::silent(|ctx| fit_dcnt(&corpus, &p, Covariance::Full, 3, ctx).unwrap());
    let plan = plan(json!([{"op": "delete", "topic": 1}, {"op": "split", "topic": 2, "into": 2}]), 4, &RetiredTopics::new());
    let child_params = p.edited(&plan, 12).unwrap();
    let bytes = parent.encode();
    let start = EditStart { parent: &bytes, plan: &plan, split_seed: 3 };
    let run = |threads: usize, resume: Option<&[u8]>| {
        recorded_run(threads, resume, |ctx| fit_dcnt_edited(&corpus, &child_params, Covariance::Full, &start, 9, ctx).unwrap())
    };
    let full = run(1, None);
    let encoded = full.model.encode();
    assert_eq!(run(2, None).model.encode(), encoded, "2 threads");
    for it in [4, 18] {
        let (_, checkpoint) = &full.checkpoints[it - 1];
        assert_eq!(run(2, Some(checkpoint)).model.encode(), encoded, "resumed after scan {it}");
    }
    let served = served(&full.model);
    let stability = served.topic_stability().unwrap();
    assert_eq!((stability.len(), stability[1].matched, stability[1].similarity), (5, 1, 1.0), "the retired slot is the same empty topic in both chains");
}

/// A seeded model's seeded topics stay as fitted: an operation naming one is refused
/// by name.
#[test]
fn seeded_topics_are_not_edited() {
    let p = DcntParams::from_json(&json!({"topics": 4, "seed_words": [{"name": "first", "words": ["w000", "w001"]}]})).unwrap();
    let refused = p.edited(&plan(json!([{"op": "delete", "topic": 2}, {"op": "merge", "topics": [3, 0]}]), 4, &RetiredTopics::new()), 10).unwrap_err();
    assert_eq!(refused.field, "operations[1]", "{refused:?}");
    assert!(refused.message.contains("\"first\""), "{refused:?}");
    assert!(p.edited(&plan(json!([{"op": "merge", "topics": [2, 3]}]), 4, &RetiredTopics::new()), 10).is_ok());
}

/// An update of an edited child with new documents and a new topic keeps the retired
/// slot retired, keeps the live topics' ids (each is nearest the child's topic of the
/// same id) and gives the new topic its own slot after them.
#[test]
fn an_update_of_an_edited_child_keeps_its_retired_slots() {
    let (_, docs) = lda_corpus(4, 60, 300, 40, 0.3, 5);
    let (old, joined) = crate::models::hpc::update_tests::corpora(docs, 240);
    let (parent, p) = parent(&old, 4, Covariance::Full);
    let edit = plan(json!([{"op": "delete", "topic": 1}]), 4, &RetiredTopics::new());
    let (child, child_served) = refit(&old, &parent, &p, &edit, 5);
    let update_params = p.edited(&edit, 40).unwrap().updated(5, 40).unwrap();
    let bytes = child.encode();
    let start = UpdateStart { parent: &bytes, parent_documents: old.num_documents(), new_topics: 1, split_seed: 3 };
    let updated = FitContext::silent(|ctx| fit_dcnt_updated(&joined, &update_params, Covariance::Full, &start, 7, ctx).unwrap());
    let served = served(&updated);
    assert_eq!((served.num_topics(), updated.slots.as_ref().map(|s| s.live().to_vec())), (5, Some(vec![0, 2, 3, 4])));
    let s = shares(served.as_ref());
    assert!(s[1] == 0.0 && s[4] > 0.0, "the retired slot stays empty, the new topic holds tokens: {s:?}");
    let pad = |r: Vec<f64>| [r, vec![0.0; joined.num_terms() - old.num_terms()]].concat();
    for k in [0, 2, 3] {
        let distance = |a: usize| l1(&row(served.as_ref(), k), &pad(row(child_served.as_ref(), a)));
        let nearest = [0, 2, 3].into_iter().min_by(|&a, &b| distance(a).total_cmp(&distance(b))).unwrap();
        assert_eq!(nearest, k, "the update's topic {k} is nearest the child's topic {nearest}");
    }
}

/// The effects of an edited model with covariates name the live topics by their child
/// ids and match the compact model's effects topic for topic; asking for a retired
/// topic is an error naming `topics`.
#[test]
fn effects_are_served_under_the_child_ids() {
    use crate::models::effects::{ChainPooling, EffectQuery};
    let (_, mut docs) = lda_corpus(3, 30, 120, 40, 0.3, 5);
    for (d, doc) in docs.iter_mut().enumerate() {
        doc.covariates = Some([("group".to_string(), json!(if d % 3 == 0 { "x" } else { "y" }))].into_iter().collect());
    }
    let corpus = build_corpus(raw_options(), &[], docs).unwrap();
    let p = DcntParams::from_json(&json!({"topics": 3, "iterations": 60, "warm_start": 50, "covariates": ["group"]})).unwrap();
    let parent = FitContext::silent(|ctx| fit_dcnt(&corpus, &p, Covariance::Full, 3, ctx).unwrap());
    let (child, served) = refit(&corpus, &parent, &p, &plan(json!([{"op": "delete", "topic": 1}]), 3, &RetiredTopics::new()), 5);
    let query = EffectQuery {
        covariate: "group".into(),
        grid: 25,
        contrast: Some(("x".into(), "y".into())),
        level: 0.9,
        topics: None,
        seed: 4,
        chains: ChainPooling::All,
    };
    let effects = served.effects(&query).unwrap().unwrap();
    let compact = child.effects(&query).unwrap().unwrap();
    assert_eq!(effects.topics.iter().map(|t| t.id).collect::<Vec<_>>(), vec![0, 2]);
    for (a, b) in effects.topics.iter().zip(&compact.topics) {
        assert_eq!((&a.points, &a.difference), (&b.points, &b.difference), "topic {} is compact topic {}", a.id, b.id);
    }
    let two = served.effects(&EffectQuery { topics: Some(vec![2]), ..query.clone() }).unwrap().unwrap();
    assert_eq!((two.topics.len(), two.topics[0].id, &two.topics[0].points), (1, 2, &compact.topics[1].points));
    let refused = served.effects(&EffectQuery { topics: Some(vec![1]), ..query }).unwrap_err().to_string();
    assert!(refused.contains("topics: topic 1 holds no tokens"), "{refused}");
}
