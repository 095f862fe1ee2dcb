//! Checks of the memoized HDP fit: the objective never decreases (synthetic and real
//! data), planted topics and their number are recovered from a too-large truncation,
//! prediction, the encoding, and independence from the thread count.

use super::fit::{fit_memoized, FitOutcome};
use super::params::HdpParams;
use super::HdpModel;
use crate::corpus::lexicon::EncodedDoc;
use crate::corpus::{CorpusBuilder, DocTermMatrix, PreprocessOptions, RawDocument};
use crate::models::{FitContext, PredictOptions, TopicModel};
use crate::rng::{stream, Purpose};
use rand::RngExt;
use serde_json::json;

const PLANTED: usize = 6;
const BLOCK: usize = 10;
const V: usize = PLANTED * BLOCK;

/// Planted topic t: uniform on its own block of 10 words (well separated: the topics'
/// supports are disjoint, so every topic is identifiable from the documents).
fn planted_topics() -> Vec<Vec<f64>> {
    (0..PLANTED).map(|t| (0..V).map(|w| if w / BLOCK == t { 1.0 / BLOCK as f64 } else { 0.0 }).collect()).collect()
}

/// `docs` documents of `len` tokens, each mixing two distinct planted topics with a
/// uniform weight, drawn with the seed's streams.
fn planted_corpus(docs: usize, len: usize, seed: u64) -> DocTermMatrix {
    let topics = planted_topics();
    DocTermMatrix::from_rows((0..docs).map(|d| {
        let mut r = stream(seed, Purpose::SyntheticCorpus, 0, d as u64);
        let a = r.random_range(0..PLANTED);
        let b = (a + 1 + r.random_range(0..PLANTED - 1)) % PLANTED;
        let wa: f64 = r.random();
        let mut counts = vec![0u32; V];
        for _ in 0..len {
            let phi = if r.random::<f64>() < wa { &topics[a] } else { &topics[b] };
            let u: f64 = r.random();
            let mut acc = 0.0;
            let w = phi.iter().position(|&p| {
                acc += p;
                acc > u
            });
            counts[w.unwrap_or(V - 1)] += 1;
        }
        counts.iter().enumerate().filter(|(_, &c)| c > 0).map(|(w, &c)| (w as u32, c)).collect()
    }))
}

fn fit(matrix: &DocTermMatrix, v: usize, params: serde_json::Value, seed: u64) -> FitOutcome {
    let p = HdpParams::from_json(&params).unwrap();
    FitContext::silent(|ctx| fit_memoized(matrix, v, &p, seed, ctx)).unwrap()
}

/// Every recorded objective (after each batch visit and each move, once the summary
/// covers all batches) is at least the previous one, up to floating-point rounding:
/// the running total (total − old + new) and the per-topic sums are accumulated in a
/// different order than a fresh sum, which moves |L| by a few ulps per term; 1e-9·|L|
/// is orders of magnitude above that and far below any real decrease (a wrong step
/// loses O(1) nats or more).
fn assert_monotone(steps: &[f64]) -> f64 {
    assert!(steps.len() > 3, "too few steps: {steps:?}");
    let mut worst: f64 = 0.0;
    for w in steps.windows(2) {
        let drop = w[0] - w[1];
        worst = worst.max(drop / w[0].abs());
        assert!(drop <= 1e-9 * w[0].abs(), "objective fell from {} to {} (steps {steps:?})", w[0], w[1]);
    }
    worst
}

fn hellinger(p: &[f64], q: &[f64]) -> f64 {
    let s: f64 = p.iter().zip(q).map(|(a, b)| (a.sqrt() - b.sqrt()).powi(2)).sum();
    (0.5 * s).sqrt()
}

fn topic_means(fit: &FitOutcome, v: usize) -> Vec<Vec<f64>> {
    fit.topic_word
        .chunks(v)
        .map(|row| {
            let s: f64 = row.iter().sum();
            row.iter().map(|x| x / s).collect()
        })
        .collect()
}

#[test]
fn objective_never_decreases_on_synthetic_data_with_batches_and_merges() {
    let m = planted_corpus(240, 60, 11);
    let out = fit(&m, V, json!({"topics": 12, "batches": 4, "passes": 12, "convergence_tolerance": 0}), 3);
    let worst = assert_monotone(&out.step_objectives);
    assert!(out.passes.iter().any(|p| p.merges_accepted > 0), "no merge was accepted: {:?}", out.passes);
    eprintln!("synthetic: {} steps, worst relative drop {worst:e}, K {}", out.step_objectives.len(), out.num_topics);
}

fn appstream_matrix() -> (DocTermMatrix, usize) {
    let text = include_str!("../../../tests/data/appstream_300.jsonl");
    let options = PreprocessOptions { min_df: 3, ..Default::default() };
    let mut builder = CorpusBuilder::new(options, &[]).unwrap();
    for (i, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        let doc: RawDocument = serde_json::from_str(line).unwrap();
        builder.add_document(doc, i, Some(i + 1)).unwrap();
    }
    let corpus = builder.finish().unwrap();
    let v = corpus.num_terms();
    (corpus.counts, v)
}

#[test]
fn objective_never_decreases_on_appstream() {
    let (m, v) = appstream_matrix();
    let out = fit(&m, v, json!({"topics": 15, "batches": 3, "passes": 8, "convergence_tolerance": 0}), 5);
    let worst = assert_monotone(&out.step_objectives);
    eprintln!("appstream: D {} V {v}, {} steps, worst relative drop {worst:e}, K {} -> {}", m.num_rows(), out.step_objectives.len(), 15, out.num_topics);
}

#[test]
fn planted_topics_and_their_number_are_recovered_from_a_large_truncation() {
    let m = planted_corpus(400, 80, 21);
    let out = fit(&m, V, json!({"topics": 18, "batches": 2, "passes": 40}), 7);
    let fitted = topic_means(&out, V);
    // Topics carrying at least 1% of the tokens (an emptied topic the merges did not
    // reach yet carries almost none).
    let total: f64 = out.topic_tokens.iter().sum();
    let used = out.topic_tokens.iter().filter(|&&n| n > 0.01 * total).count();
    eprintln!("K {} used {used} passes {} tokens {:?}", out.num_topics, out.passes.len(), out.topic_tokens);
    assert!((PLANTED..=PLANTED + 2).contains(&used), "{used} topics in use for {PLANTED} planted");
    // Each planted topic has about 32 000/6 ≈ 5 300 tokens over its 10 words; a word's
    // estimated rate has variance φ(1 − φ)/N, so the expected squared Hellinger distance is
    // about Σ_w (1 − φ_w)/(8N) = 9/(8·5 300) ≈ 2.1e-4 (H ≈ 0.015); the prior λ = 0.1 on the
    // 50 other words adds about 5/5 300 ≈ 1e-3 of mass there, H² ≈ 5e-4. A bound of 0.06
    // is twice the root of their sum (0.027), and far below the distance between two
    // planted topics (1) or of a planted topic to an even mixture of two (0.54).
    for (t, planted) in planted_topics().iter().enumerate() {
        let best = fitted.iter().map(|f| hellinger(f, planted)).fold(f64::INFINITY, f64::min);
        eprintln!("planted {t}: Hellinger {best:.4}");
        assert!(best < 0.06, "planted topic {t} is matched only at Hellinger distance {best}");
    }
}

fn small_model(threads: usize) -> HdpModel {
    let m = planted_corpus(120, 50, 31);
    let p = HdpParams::from_json(&json!({"topics": 10, "batches": 3, "passes": 6, "convergence_tolerance": 0})).unwrap();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    let out = pool.install(|| FitContext::silent(|ctx| fit_memoized(&m, V, &p, 9, ctx)).unwrap());
    HdpModel::from_fit(out, p, V, m.total_tokens())
}

#[test]
fn same_seed_same_model_at_one_and_two_threads_and_encoding_round_trips() {
    let mut one = small_model(1);
    let mut two = small_model(2);
    // Wall-clock times are the only thing allowed to differ.
    for m in [&mut one, &mut two] {
        m.passes.iter_mut().for_each(|p| p.seconds = 0.0);
    }
    assert_eq!(one, two);
    let back = HdpModel::decode(&one.encode()).unwrap();
    assert_eq!(back, one);
    let mut bad = one.encode();
    bad[0] = 7;
    assert!(HdpModel::decode(&bad).is_err());
}

#[test]
fn prediction_gives_proportions_that_sum_to_one_and_find_the_topic() {
    let model = small_model(1);
    let table = model.topic_table(&Default::default());
    // A document of planted topic 2's words only.
    let doc = EncodedDoc { terms: (20..30).collect(), counts: vec![3; 10], oov_tokens: 0 };
    let empty = EncodedDoc { terms: vec![], counts: vec![], oov_tokens: 0 };
    let preds = model.predict(&[doc, empty], &PredictOptions::default()).unwrap();
    for p in &preds {
        let s: f64 = p.topic_proportions.iter().sum();
        assert!((s - 1.0).abs() < 1e-12, "proportions sum to {s}");
        assert_eq!(p.topic_proportions.len(), model.num_topics());
    }
    let top = (0..model.num_topics()).max_by(|&a, &b| preds[0].topic_proportions[a].total_cmp(&preds[0].topic_proportions[b])).unwrap();
    // The predicted topic is the one that puts most of its mass on words 20..30.
    let block_mass: f64 = (20..30).map(|w| table.frequency[(top, w)]).sum();
    assert!(block_mass > 0.8 && preds[0].topic_proportions[top] > 0.8, "topic {top}: block mass {block_mass}, weight {}", preds[0].topic_proportions[top]);
    // Exclusivity columns are distributions over topics.
    for w in 0..V {
        let s: f64 = table.exclusivity.column(w).sum();
        assert!((s - 1.0).abs() < 1e-9);
    }
}

#[test]
fn the_family_fits_through_the_registry() {
    let family = crate::models::family("hdp").expect("registered");
    let (m, v) = appstream_matrix();
    assert!(v > 0 && m.num_rows() > 0);
    let err = family.check_params(&json!({"topics": 0}), &Default::default()).unwrap_err();
    assert_eq!(err.field, "topics");
}
