//! Checks of HPC's and PCM's update with new documents: an update of a model fitted on
//! data drawn from HPC recovers the rates as a fit on every document does, keeps the
//! parent's labels (or topics) in order, neither depends on the thread count nor
//! changes when resumed, and a parent of other documents or the other variant is
//! refused.

use super::fit::{assign_roles, fit_hpc, fit_hpc_updated, Role};
use super::fit_tests::pearson;
use super::model::HpcModel;
use super::params::HpcParams;
use super::simulate::{simulate, SimulatedCorpus, SimulationConfig};
use super::start::UpdatedStart;
use super::variant::Supervision;
use crate::corpus::append::append;
use crate::corpus::like::LikeBase;
use crate::corpus::preprocess::{PreprocessOptions, StopWords};
use crate::corpus::{build_corpus, Corpus, CorpusBuilder, RawDocument};
use crate::models::test_kit::recorded_run;
use crate::models::{FitContext, TopicModel, UpdateStart};
use serde_json::json;

fn options() -> PreprocessOptions {
    PreprocessOptions { stopwords: StopWords::None, ..PreprocessOptions::default() }
}

/// The corpus of the first `old` documents, and it joined with the others made like it.
pub(crate) fn corpora(docs: Vec<RawDocument>, old: usize) -> (Corpus, Corpus) {
    let first = build_corpus(options(), &[], docs[..old].to_vec()).unwrap();
    let mut builder = CorpusBuilder::like(LikeBase::of(&first, options())).unwrap();
    for (i, d) in docs[old..].iter().enumerate() {
        builder.add_document(d.clone(), i, None).unwrap();
    }
    let joined = append(&first, &builder.finish().unwrap()).unwrap();
    (first, joined)
}

/// Two levels of labels (K = 12), 400 words, 1 500 documents: the first 1 000 old.
fn simulated(supervision: Supervision, docs: usize) -> (SimulatedCorpus, Corpus, Corpus) {
    let config = SimulationConfig { eta: -2.0, ..SimulationConfig::small(docs, 400, vec![3, 3], 150.0) };
    let sim = simulate(&config, 21);
    let mut raw = sim.to_raw_documents();
    if supervision == Supervision::Unsupervised {
        raw.iter_mut().for_each(|d| d.labels = None);
    }
    let (old, joined) = corpora(raw, docs * 2 / 3);
    (sim, old, joined)
}

fn params(supervision: Supervision, v: serde_json::Value) -> HpcParams {
    HpcParams::from_json(&v, supervision).unwrap()
}

fn parent(corpus: &Corpus, p: &HpcParams, supervision: Supervision) -> HpcModel {
    FitContext::silent(|ctx| fit_hpc(corpus, p, supervision, 5, ctx)).unwrap()
}

/// The correlation of a model's E[μ] with the simulation's over every label and word.
fn recovery(model: &HpcModel, sim: &SimulatedCorpus, corpus: &Corpus) -> f64 {
    let n = sim.num_labels() + 1;
    let (mut got, mut want) = (Vec::new(), Vec::new());
    for f in 0..sim.mu.len() / n {
        let Some(term) = corpus.lexicon.id(&format!("w{f}")) else { continue };
        for node in 1..n {
            let name = sim.label_path(node).rsplit('/').next().unwrap().to_owned();
            let topic = corpus.labels.id(&name).unwrap() as usize;
            got.push(model.mu[term as usize * n + topic + 1] as f64);
            want.push(sim.mu[f * n + node]);
        }
    }
    pearson(&got, &want)
}

/// An HPC fitted on 1 000 documents (40 scans) and updated with 500 more (20 scans)
/// keeps its labels in order and recovers the rates with the bound of the recovery
/// check on 1 275 training documents (`fit_tests`: a log-rate standard error of
/// 0.13–0.2 against a spread of 1.2 implies a correlation above 0.97; 0.9 allows for
/// rare words' shrinkage), no worse than its parent (which saw two thirds of them)
/// less a hundredth.
#[test]
fn an_hpc_update_keeps_its_labels_and_recovers_the_rates() {
    let (sim, old, joined) = simulated(Supervision::Labelled, 1_500);
    let p = params(Supervision::Labelled, json!({"iterations": 40, "burn_in": 20, "test_fraction": 0.15}));
    let parent = parent(&old, &p, Supervision::Labelled);
    let child_params = p.updated(Supervision::Labelled, 0, 20).unwrap();
    assert_eq!((child_params.iterations, child_params.burn_in, child_params.thin), (20, 10, 1));
    let bytes = parent.encode();
    let start = UpdateStart { parent: &bytes, parent_documents: old.num_documents(), new_topics: 0, split_seed: 5 };
    let child = FitContext::silent(|ctx| fit_hpc_updated(&joined, &child_params, Supervision::Labelled, &start, 7, ctx)).unwrap();
    assert_eq!(child.labels, parent.labels);
    assert!(child.summary.training_documents > parent.summary.training_documents);
    let (before, after) = (recovery(&parent, &sim, &old), recovery(&child, &sim, &joined));
    assert!(after > 0.9 && after > before - 0.01, "correlation with the true rates: parent {before:.3}, update {after:.3}");
    let e = child.evaluation.as_ref().expect("a test split");
    assert!(e.model.micro.f1 > e.most_frequent_baseline.micro.f1 + 0.1, "micro-F1 {} against {}", e.model.micro.f1, e.most_frequent_baseline.micro.f1);
}

/// A PCM update with a new topic gives the same bytes on 1 and 2 threads, and resumed
/// from a checkpoint the bytes of the uninterrupted one.
#[test]
fn a_pcm_update_is_thread_independent_and_resumes_to_its_bytes() {
    let (_, old, joined) = simulated(Supervision::Unsupervised, 300);
    let p = params(Supervision::Unsupervised, json!({"topics": 3, "iterations": 10, "burn_in": 5}));
    let parent = parent(&old, &p, Supervision::Unsupervised);
    let child_params = p.updated(Supervision::Unsupervised, 1, 6).unwrap();
    assert_eq!(child_params.topics, 4);
    let bytes = parent.encode();
    let start = UpdateStart { parent: &bytes, parent_documents: old.num_documents(), new_topics: 1, split_seed: 5 };
    let run = |threads: usize, resume: Option<&[u8]>| {
        recorded_run(threads, resume, |ctx| fit_hpc_updated(&joined, &child_params, Supervision::Unsupervised, &start, 9, ctx).unwrap())
    };
    let full = run(1, None);
    let encoded = full.model.encode();
    assert_eq!(full.model.labels.len(), 4);
    assert_eq!(run(2, None).model.encode(), encoded, "2 threads");
    for it in [2, 5] {
        let (_, checkpoint) = &full.checkpoints[it - 1];
        assert_eq!(run(2, Some(checkpoint)).model.encode(), encoded, "resumed after scan {it}");
    }
}

/// A parent of other documents (fewer, or split by another seed) or of the other
/// variant is refused naming `corpus_id`; HPC refuses new topics naming `new_topics`.
#[test]
fn a_parent_of_other_documents_or_variant_is_refused() {
    let (_, old, joined) = simulated(Supervision::Labelled, 300);
    let p = params(Supervision::Labelled, json!({"iterations": 6, "burn_in": 3, "test_fraction": 0.2}));
    let parent = parent(&old, &p, Supervision::Labelled);
    let bytes = parent.encode();
    assert_eq!(p.updated(Supervision::Labelled, 1, 5).unwrap_err().field, "new_topics");
    let child_params = p.updated(Supervision::Labelled, 0, 5).unwrap();
    for (parent_documents, split_seed) in [(old.num_documents() - 10, 5), (old.num_documents(), 6)] {
        let start = UpdateStart { parent: &bytes, parent_documents, new_topics: 0, split_seed };
        let e = FitContext::silent(|ctx| fit_hpc_updated(&joined, &child_params, Supervision::Labelled, &start, 1, ctx)).unwrap_err();
        assert!(e.to_string().contains("first documents"), "{e}");
    }
    let pcm = params(Supervision::Unsupervised, json!({"topics": 12, "iterations": 5}));
    let start = UpdateStart { parent: &bytes, parent_documents: old.num_documents(), new_topics: 0, split_seed: 5 };
    let e = FitContext::silent(|ctx| fit_hpc_updated(&joined, &pcm, Supervision::Unsupervised, &start, 1, ctx)).unwrap_err();
    assert!(e.to_string().contains("other variant"), "{e}");
}

/// HPC's topics are its labels, whatever PCM's `topics` (default 20) says: an update of
/// a parent with 30 labels starts all 30 from the parent and fits them under the
/// update's own params.
#[test]
fn an_hpc_update_starts_every_label_beyond_pcms_default_topics() {
    let config = SimulationConfig { eta: -2.0, ..SimulationConfig::small(300, 200, vec![5, 5], 100.0) };
    let (old, joined) = corpora(simulate(&config, 3).to_raw_documents(), 200);
    let p = params(Supervision::Labelled, json!({"iterations": 4, "burn_in": 2, "test_fraction": 0.0, "validation_fraction": 0.0}));
    let parent = parent(&old, &p, Supervision::Labelled);
    assert!(parent.labels.len() > p.topics, "{} labels against topics {}", parent.labels.len(), p.topics);
    let child_params = p.updated(Supervision::Labelled, 0, 2).unwrap();
    let bytes = parent.encode();
    let start = UpdateStart { parent: &bytes, parent_documents: old.num_documents(), new_topics: 0, split_seed: 5 };
    let roles = assign_roles(&joined, &child_params, Supervision::Labelled, 5);
    let count = |role: Role| roles[..old.num_documents()].iter().filter(|&&r| r == role).count();
    let counts = [count(Role::Train), count(Role::Validation), count(Role::Test), count(Role::Unlabelled)];
    let from = UpdatedStart::new(&start, &joined, &child_params, Supervision::Labelled, counts).unwrap();
    assert_eq!(from.slots().live().len(), parent.labels.len());
    assert_eq!(super::retired::live_params(from.slots(), &child_params), child_params);
}

/// PCM's update on LDA's update corpora (three planted topics old, a fourth block in the
/// new documents): a parent of three topics updated with one new topic keeps each
/// parent topic within a quarter of the distance between two distinct parent topics of
/// where it was (LDA's and HDP's bound: a topic that moved to another planted topic
/// would be a whole distance away), and the new topic puts most of its mass (> 0.6; the
/// truth 0.9, a topic that missed the block about 0.1/3) on the new block.
#[test]
fn a_pcm_update_keeps_its_topics_and_a_new_topic_takes_the_new_words() {
    use crate::models::lda::update::tests::{block_of, corpora, l1_to_parent};
    let (old, joined) = corpora(11);
    let p = params(Supervision::Unsupervised, json!({"topics": 3, "iterations": 80, "test_fraction": 0.1}));
    let parent = FitContext::silent(|ctx| fit_hpc(&old, &p, Supervision::Unsupervised, 3, ctx)).unwrap();
    let child_params = p.updated(Supervision::Unsupervised, 1, 30).unwrap();
    let bytes = parent.encode();
    let start = UpdateStart { parent: &bytes, parent_documents: old.num_documents(), new_topics: 1, split_seed: 3 };
    let child = FitContext::silent(|ctx| fit_hpc_updated(&joined, &child_params, Supervision::Unsupervised, &start, 5, ctx)).unwrap();
    let row = |m: &HpcModel, k: usize| {
        let r = &m.frequency[k * m.num_terms..(k + 1) * m.num_terms];
        let total: f64 = r.iter().map(|&x| x as f64).sum();
        r.iter().map(|&x| x as f64 / total).collect::<Vec<f64>>()
    };
    let mut nearest = f64::INFINITY;
    for a in 0..3 {
        for b in a + 1..3 {
            nearest = nearest.min(l1_to_parent(&row(&parent, a), &row(&parent, b)));
        }
    }
    for k in 0..3 {
        let moved = l1_to_parent(&row(&parent, k), &row(&child, k));
        assert!(moved < nearest / 4.0, "topic {k} moved {moved:.3}; distinct topics are {nearest:.3} apart");
    }
    let new_block: f64 = row(&child, 3).iter().enumerate().filter(|&(w, _)| block_of(joined.lexicon.word(w as u32)) == 3).map(|(_, x)| x).sum();
    assert!(new_block > 0.6, "the new topic holds {new_block:.3} of its mass on the new block");
}
