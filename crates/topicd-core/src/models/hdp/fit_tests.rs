//! Checks of the memoized HDP fit: the objective never decreases (synthetic and real
//! data), planted topics and their number are recovered from a too-large truncation,
//! prediction, the encoding, and independence from the thread count.

use super::params::HdpParams;
use super::passes::{fit_memoized, FitOutcome};
use super::HdpModel;
use crate::corpus::lexicon::EncodedDoc;
use crate::corpus::{Corpus, CorpusBuilder, DocTermMatrix, PreprocessOptions, RawDocument};
use crate::models::{FitContext, PredictOptions, TopicModel};
use crate::rng::{stream, Purpose};
use rand::RngExt;
use rand_distr::{Distribution, Gamma};
use serde_json::json;

pub(super) const PLANTED: usize = 6;
pub(super) const BLOCK: usize = 10;
pub(super) const V: usize = PLANTED * BLOCK;

/// Planted topic t: uniform on its own block of 10 words (well separated: the topics'
/// supports are disjoint, so every topic is identifiable from the documents).
fn planted_topics() -> Vec<Vec<f64>> {
    (0..PLANTED).map(|t| (0..V).map(|w| if w / BLOCK == t { 1.0 / BLOCK as f64 } else { 0.0 }).collect()).collect()
}

/// Documents' topic weights are drawn from the model itself: π_d ~ Dir(α β) with the
/// planted β uniform over the topics and this α (so most documents use one or two topics).
const PLANTED_ALPHA: f64 = 0.5;

/// `docs` documents of `len` tokens drawn from the HDP's generative process with the
/// planted topics, using the seed's streams.
pub(super) fn planted_corpus(docs: usize, len: usize, seed: u64) -> DocTermMatrix {
    let topics = planted_topics();
    let gamma = Gamma::new(PLANTED_ALPHA / PLANTED as f64, 1.0).unwrap();
    DocTermMatrix::from_rows((0..docs).map(|d| {
        let mut r = stream(seed, Purpose::SyntheticCorpus, 0, d as u64);
        let g: Vec<f64> = (0..PLANTED).map(|_| gamma.sample(&mut r)).collect();
        let s: f64 = g.iter().sum();
        let pi: Vec<f64> = g.iter().map(|x| x / s).collect();
        let mut counts = vec![0u32; V];
        for _ in 0..len {
            let (mut acc, u) = (0.0, r.random::<f64>());
            let z = pi.iter().position(|&p| {
                acc += p;
                acc > u
            });
            let phi = &topics[z.unwrap_or(PLANTED - 1)];
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
pub(super) fn assert_monotone(steps: &[f64]) -> f64 {
    assert!(steps.len() > 3, "too few steps: {steps:?}");
    let mut worst: f64 = 0.0;
    for w in steps.windows(2) {
        let drop = w[0] - w[1];
        worst = worst.max(drop / w[0].abs());
        assert!(drop <= 1e-9 * w[0].abs(), "objective fell from {} to {} (steps {steps:?})", w[0], w[1]);
    }
    worst
}

pub(super) fn topic_means(fit: &FitOutcome, v: usize) -> Vec<Vec<f64>> {
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
    let out = fit(&m, V, json!({"topics": 12, "batches": 4, "passes": 12, "merge_every": 1, "convergence_tolerance": 0}), 3);
    let worst = assert_monotone(&out.step_objectives);
    assert!(out.passes.iter().any(|p| p.merges_accepted > 0), "no merge was accepted: {:?}", out.passes);
    eprintln!("synthetic: {} steps, worst relative drop {worst:e}, K {}", out.step_objectives.len(), out.num_topics);
}

pub(super) fn appstream_corpus() -> Corpus {
    let text = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/appstream_300.jsonl"));
    let options = PreprocessOptions { min_df: 3, ..Default::default() };
    let mut builder = CorpusBuilder::new(options, &[]).unwrap();
    for (i, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        // The fixture's lines carry AppStream's own keys, which a document keeps in `meta`.
        let mut value: serde_json::Value = serde_json::from_str(line).unwrap();
        let fields = value.as_object_mut().unwrap();
        let meta: serde_json::Map<String, serde_json::Value> = ["package", "type", "n_desc_langs"].iter().filter_map(|k| fields.remove_entry(*k)).collect();
        fields.insert("meta".into(), meta.into());
        let doc: RawDocument = serde_json::from_value(value).unwrap();
        builder.add_document(doc, i, Some(i + 1)).unwrap();
    }
    builder.finish().unwrap()
}

fn appstream_matrix() -> (DocTermMatrix, usize) {
    let corpus = appstream_corpus();
    let v = corpus.num_terms();
    (corpus.counts, v)
}

#[test]
fn objective_never_decreases_on_appstream() {
    let (m, v) = appstream_matrix();
    let out = fit(&m, v, json!({"topics": 15, "batches": 3, "passes": 8, "merge_every": 1, "convergence_tolerance": 0}), 5);
    let worst = assert_monotone(&out.step_objectives);
    eprintln!("appstream: D {} V {v}, {} steps, worst relative drop {worst:e}, K {} -> {}", m.num_rows(), out.step_objectives.len(), 15, out.num_topics);
}

#[test]
fn planted_topics_and_their_number_are_recovered_from_a_large_truncation() {
    let m = planted_corpus(400, 80, 21);
    let out = fit(&m, V, json!({"topics": 18, "batches": 2, "passes": 40, "alpha": PLANTED_ALPHA, "merge_every": 1}), 7);
    let fitted = topic_means(&out, V);
    // Topics carrying at least 1% of the tokens (an emptied topic the moves did not
    // reach yet carries almost none).
    let total: f64 = out.topic_tokens.iter().sum();
    let used = out.topic_tokens.iter().filter(|&&n| n > 0.01 * total).count();
    eprintln!("K {} used {used} passes {} tokens {:?}", out.num_topics, out.passes.len(), out.topic_tokens);
    assert!((PLANTED..=PLANTED + 1).contains(&used), "{used} topics in use for {PLANTED} planted");
    for t in 0..PLANTED {
        let block = t * BLOCK..(t + 1) * BLOCK;
        let (best, mass) = fitted.iter().enumerate().map(|(i, f)| (i, f[block.clone()].iter().sum::<f64>())).max_by(|a, b| a.1.total_cmp(&b.1)).unwrap();
        // (1) Mass on the planted block. The prior λ = 0.1 alone puts 50·0.1/N_k ≈ 0.1% of
        // a topic's mass (N_k ≈ 5 000 tokens) on the other 50 words, and a topic mixing
        // two planted topics would put about half its mass elsewhere. The 3% allowance is
        // for the bias of mean-field VI with a sparse α: a document's few tokens of a
        // minority topic are partly absorbed by its dominant topic (measured ≤ 1.3% here);
        // it is an allowance for a known bias, not a sampling error.
        let n_k = out.topic_tokens[best];
        eprintln!("planted {t}: fitted topic {best} with {n_k:.0} tokens, block mass {mass:.4}");
        assert!(mass > 0.97, "planted topic {t}: best fitted topic {best} has only {mass} of its mass on the block");
        // (2) Within the block the rates are uniform up to sampling error: a word's share
        // of the block has SE = sqrt(0.1·0.9/N_k) (multinomial); |z| < 4.5 for each of the
        // 60 words (Bonferroni over 60 tests at 4.5 SD keeps the false alarm rate < 1e-3).
        let se = (0.1 * 0.9 / n_k).sqrt();
        for w in block.clone() {
            let z = (fitted[best][w] / mass - 0.1) / se;
            assert!(z.abs() < 4.5, "planted topic {t}, word {w}: share {} is {z:.2} SE from 0.1", fitted[best][w] / mass);
        }
    }
}

/// At its defaults (deletes every pass, no merges or births) the HDP infers the number
/// of topics from a truncation three times too large: exactly the 6 planted ones, each
/// the best match of its own block. The tolerance is none: the planted topics have
/// disjoint supports, so a 7th topic could only duplicate part of a block, and deleting
/// a duplicate raises the objective (its tokens are explained as well by the topic it
/// copies, without its share of the stick and Dirichlet terms); the defaults' 50 passes
/// leave room for every one of the 12 deletes (one per pass from the third).
#[test]
fn the_defaults_infer_the_number_of_planted_topics() {
    let m = planted_corpus(400, 80, 23);
    let out = fit(&m, V, json!({"topics": 18}), 5);
    assert_monotone(&out.step_objectives);
    let deletes = out.passes.iter().filter(|p| p.deleted).count();
    eprintln!("K {} after {deletes} deletes in {} passes, tokens {:?}", out.num_topics, out.passes.len(), out.topic_tokens);
    assert_eq!(out.num_topics, PLANTED, "topics left at the defaults");
    let fitted = topic_means(&out, V);
    let mut matched: Vec<usize> = (0..PLANTED)
        .map(|t| {
            let block = |f: &Vec<f64>| f[t * BLOCK..(t + 1) * BLOCK].iter().sum::<f64>();
            (0..PLANTED).max_by(|&a, &b| block(&fitted[a]).total_cmp(&block(&fitted[b]))).unwrap()
        })
        .collect();
    matched.sort_unstable();
    matched.dedup();
    assert_eq!(matched.len(), PLANTED, "every planted block has its own fitted topic");
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
    let one = small_model(1);
    let two = small_model(2);
    assert_eq!(one, two);
    assert_eq!(one.encode(), two.encode(), "no wall-clock time in the bytes");
    let back = HdpModel::decode(&one.encode()).unwrap();
    assert_eq!(back, one);
    let mut bad = one.encode();
    bad[0] = 7;
    assert!(HdpModel::decode(&bad).is_err());
    // Version 3: every pass with its seconds.
    let v3 = super::model::as_version3(&one.encode());
    assert_eq!(HdpModel::decode(&v3).expect("a version-3 model decodes"), one);
    // Version 2: version 3 without its four empty covariate fields.
    let mut v2 = v3.clone();
    assert_eq!(v2.split_off(v2.len() - 4), [0; 4]);
    v2[0] = 2;
    assert_eq!(HdpModel::decode(&v2).expect("a version-2 model decodes"), one);
    // Version 1: the parameters with the job's `threads` after them, the rest the same.
    let v1 = super::model::as_before_threads_left(&one.encode());
    assert_eq!(HdpModel::decode(&v1).expect("a version-1 model decodes"), one);
    // Covariate fields that do not fit the model's documents are refused.
    let mut corrupt = one.clone();
    corrupt.doc_dirichlet = vec![1.0; 3];
    assert!(HdpModel::decode(&corrupt.encode()).is_err());
}

/// Intervals on predictions are taken under q(π_d): the point answers are the
/// prediction's, and each interval's mean is the Dirichlet's mean within 4 of its own
/// standard errors (sd of a Dirichlet component over √400 draws; fixed seed).
#[test]
fn prediction_intervals_follow_each_documents_dirichlet() {
    let model = small_model(1);
    let doc = EncodedDoc { terms: (20..30).collect(), counts: vec![3; 10], oov_tokens: 0 };
    let short = EncodedDoc { terms: vec![5], counts: vec![1], oov_tokens: 0 };
    let docs = [doc, short];
    let points = model.topic_proportions(&docs);
    let with = model.topic_proportions_with_intervals(&docs, 3, 0.9);
    for ((p, (q, intervals)), d) in points.iter().zip(&with).zip(0..) {
        assert_eq!(p, q, "document {d}: the prediction's point answer");
        let theta = &model.new_document_dirichlets_for_tests(&docs)[d];
        let total: f64 = theta.iter().sum();
        for (t, i) in intervals.iter().enumerate() {
            let mean = theta[t] / total;
            let sd = (mean * (1.0 - mean) / (total + 1.0)).sqrt();
            assert!((i.mean - mean).abs() < 4.0 * sd / 20.0 + 1e-12, "document {d} topic {t}: {} against {mean}", i.mean);
            // (A topic with a tiny Dirichlet parameter has its mean above its 95 %
            // quantile, so only the interval's ends are ordered.)
            assert!(i.lower <= i.upper);
        }
    }
    let one_word = &with[1].1;
    assert!(
        one_word.iter().map(|i| i.upper - i.lower).sum::<f64>() > with[0].1.iter().map(|i| i.upper - i.lower).sum::<f64>(),
        "one word leaves more doubt than thirty"
    );
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
    let block_mass = |t: usize| (20..30).map(|w| table.frequency[(t, w)]).sum::<f64>();
    let best = (0..model.num_topics()).max_by(|&a, &b| block_mass(a).total_cmp(&block_mass(b))).unwrap();
    assert_eq!(top, best, "predicted topic {top}, block-richest topic {best}");
    assert!(preds[0].topic_proportions[top] > 0.8, "weight {}", preds[0].topic_proportions[top]);
    // Exclusivity columns are distributions over topics.
    for w in 0..V {
        let s: f64 = table.exclusivity.column(w).sum();
        assert!((s - 1.0).abs() < 1e-9);
    }
}

#[test]
fn the_family_fits_through_the_registry() {
    let family = crate::models::registry::lookup("hdp").and_then(crate::models::registry::Family::topics).expect("registered");
    let corpus = appstream_corpus();
    let err = family.parse_params(&json!({"topics": 0})).unwrap_err();
    assert_eq!(err.field, "topics");
    // The fit's state tables are bounded before a job is queued: (D + 4V) × K ≤ 2^27.
    let check = |params: serde_json::Value, stats: &crate::corpus::CorpusStats| family.check_params(&family.parse_params(&params).unwrap(), stats);
    let mut huge = corpus.stats.clone();
    huge.num_documents = 1_000_000;
    assert_eq!(check(json!({"topics": 1000}), &huge).unwrap_err().field, "topics");
    assert!(check(json!({"topics": 100}), &huge).is_ok());
    let params = family.parse_params(&json!({"topics": 8, "passes": 3, "test_fraction": 0.2})).unwrap();
    let model = FitContext::silent(|ctx| family.fit(&corpus, &params, 4, ctx)).unwrap();
    let decoded = family.decode(&model.encode()).unwrap();
    assert_eq!(decoded.diagnostics(), model.diagnostics());
    let test_docs = model.diagnostics()["test_documents"].as_u64().unwrap();
    // 300 documents at 20%: 60 ± 7 (binomial SD); 4.5 SD either side.
    assert!((28..=92).contains(&test_docs), "{test_docs} test documents");
    let eval = model.diagnostics()["heldout"].clone();
    let per_token = eval["per_token"].as_f64().unwrap();
    // Word frequencies in natural text are far from uniform (Zipf), so even a 3-pass model
    // predicts held-out tokens better than the uniform distribution over the vocabulary.
    eprintln!("appstream completion {per_token:.3} nats/token, uniform {:.3}", -(corpus.num_terms() as f64).ln());
    assert!(per_token < 0.0 && per_token > -(corpus.num_terms() as f64).ln(), "{eval}");
    assert_eq!(eval["documents"].as_u64().unwrap(), test_docs);
}

/// The summary-based objective equals the ELBO written out term by term from explicit
/// local parameters (responsibilities r, θ_d), q(φ) = Dir(λ + N), q(u) = Beta(ρω, (1−ρ)ω),
/// with the surrogate K log α + Σ_k E[log β_k] for the Dirichlet normaliser. Both are sums of
/// a few hundred terms of size ≤ 1e3, so they agree to rounding (1e-9 relative).
#[test]
#[allow(clippy::needless_range_loop)]
fn objective_equals_the_elbo_computed_term_by_term() {
    use super::globals::{objective, TopicWord};
    use super::local::{batch_local_step, infer_document, BatchLayout, LocalGlobals};
    use super::summary::Summary;
    use crate::inference::stick_posterior::StickPosterior;
    use statrs::function::gamma::{digamma, ln_gamma};
    let (v, k, alpha, gamma, lambda) = (5usize, 3usize, 0.7, 2.0, 0.3);
    let m = DocTermMatrix::from_rows(vec![vec![(0, 3), (1, 1), (4, 2)], vec![(1, 2), (2, 5)], vec![(3, 4), (4, 1)], vec![(0, 1), (2, 1), (3, 2)]]);
    // Arbitrary q(φ) to produce responsibilities from, and arbitrary sticks.
    let mut seed_counts = Summary::dense(v, k);
    seed_counts.word_topic = (0..v * k).map(|i| ((i * 7) % 5) as f64 + 0.5).collect();
    let tw0 = TopicWord::from_summary(&seed_counts, lambda);
    let stick = StickPosterior { rho: vec![0.4, 0.3, 0.6], omega: vec![5.0, 12.0, 3.0] };
    let beta = stick.expected_beta();
    let g = LocalGlobals::new(alpha, &beta, &tw0.elog_phi, &tw0.exp_elog_phi, 1e-6, 7);
    let layout = BatchLayout::new(&m, 0..4);
    let mut store = vec![0.0; 4 * k];
    let (batch, _) = batch_local_step(&g, &m, &layout, &mut store, false, &[], &crate::ranks::Solo);
    let mut total = Summary::dense(v, k);
    total.add_batch(&batch, 1.0);
    let tw = TopicWord::from_summary(&total, lambda);
    let from_summary = objective(&total, &tw, &stick, alpha, gamma).total();

    // Term by term.
    let docs: Vec<_> = (0..4).map(|d| infer_document(&g, m.row(d).0, m.row(d).1, None, &[])).collect();
    let mut n_kw = vec![0.0; k * v];
    for (d, res) in docs.iter().enumerate() {
        for (i, &w) in m.row(d).0.iter().enumerate() {
            for t in 0..k {
                n_kw[t * v + w as usize] += res.word_topic[i * k + t];
            }
        }
    }
    let c_dir = |a: &[f64]| ln_gamma(a.iter().sum()) - a.iter().map(|&x| ln_gamma(x)).sum::<f64>();
    let mut elbo = 0.0;
    let mut elog_phi = vec![0.0; k * v];
    for t in 0..k {
        let lam: Vec<f64> = (0..v).map(|w| lambda + n_kw[t * v + w]).collect();
        let s: f64 = lam.iter().sum();
        for w in 0..v {
            elog_phi[t * v + w] = digamma(lam[w]) - digamma(s);
        }
        // E log p(φ | λ0) − E log q(φ | λ).
        elbo += c_dir(&vec![lambda; v]) - c_dir(&lam) + (0..v).map(|w| (lambda - lam[w]) * elog_phi[t * v + w]).sum::<f64>();
    }
    // q(u) against Beta(1, γ).
    let mut elog_beta = vec![0.0; k + 1];
    let mut rest = 0.0;
    for t in 0..k {
        let (r, w) = (stick.rho[t], stick.omega[t]);
        let (a, b) = (r * w, (1.0 - r) * w);
        let (eu, e1u) = (digamma(a) - digamma(w), digamma(b) - digamma(w));
        elbo += gamma.ln() + (gamma - 1.0) * e1u - (ln_gamma(w) - ln_gamma(a) - ln_gamma(b) + (a - 1.0) * eu + (b - 1.0) * e1u);
        elog_beta[t] = rest + eu;
        rest += e1u;
    }
    elog_beta[k] = rest;
    for (d, res) in docs.iter().enumerate() {
        let theta: Vec<f64> = (0..=k).map(|t| if t < k { res.doc_topic[t] + g.prior[t] } else { g.prior[k] }).collect();
        let st: f64 = theta.iter().sum();
        let elog_pi: Vec<f64> = theta.iter().map(|&x| digamma(x) - digamma(st)).collect();
        // E log p(π | αβ) with the surrogate, − E log q(π | θ), + E log p(z | π).
        elbo += k as f64 * alpha.ln() + elog_beta.iter().sum::<f64>();
        elbo += (0..=k).map(|t| (alpha * beta[t] - 1.0) * elog_pi[t]).sum::<f64>();
        elbo -= c_dir(&theta) + (0..=k).map(|t| (theta[t] - 1.0) * elog_pi[t]).sum::<f64>();
        elbo += (0..k).map(|t| res.doc_topic[t] * elog_pi[t]).sum::<f64>();
        // E log p(w | z, φ) − E log q(z).
        for (i, (&w, &c)) in m.row(d).0.iter().zip(m.row(d).1).enumerate() {
            for t in 0..k {
                let r = res.word_topic[i * k + t] / c as f64;
                elbo += c as f64 * r * elog_phi[t * v + w as usize];
                if r > 0.0 {
                    elbo -= c as f64 * r * r.ln();
                }
            }
        }
    }
    assert!((elbo - from_summary).abs() < 1e-9 * elbo.abs(), "term by term {elbo} vs summary {from_summary}");
}

#[test]
fn document_completion_on_fresh_planted_documents_beats_the_uniform_predictor() {
    use crate::models::completion::{document_completion, split_document};
    let model = small_model(1);
    let fresh = planted_corpus(60, 60, 77);
    let names: Vec<String> = (0..V).map(|w| format!("w{w}")).collect();
    let docs: Vec<_> =
        (0..fresh.num_rows()).map(|d| split_document(&format!("d{d}"), fresh.row(d).0, fresh.row(d).1, |t| names[t as usize].as_str())).collect();
    let score = document_completion(&model, &docs, &crate::models::PredictOptions::default()).unwrap();
    assert_eq!(score.observed_tokens + score.heldout_tokens, 60 * 60);
    // A planted topic covers 10 of the 60 words: predicting a one-topic document's words
    // from its topic gains log 6 = 1.79 nats per token over the uniform predictor, a
    // two-topic document log 3 = 1.10. Documents drawn with α = 0.5 mostly use one or two
    // topics; 0.8 nats leaves room for estimating π_d from about 30 observed tokens.
    let uniform = -(V as f64).ln();
    eprintln!("completion {:.4} nats/token, uniform {uniform:.4}", score.per_token);
    assert!(score.per_token > uniform + 0.8 && score.per_token < 0.0, "{score:?}");
}

#[test]
fn a_word_no_topic_can_explain_is_left_out_of_a_prediction() {
    let mut model = small_model(1);
    // Word 59 with a vanishing rate in every topic (as a word unseen in training under a
    // tiny λ would have): exp(E[log φ]) underflows to 0 for all topics.
    let v = model.num_terms;
    for t in 0..model.num_topics {
        model.topic_word[t * v + 59] = 1e-300;
    }
    let with = EncodedDoc { terms: vec![20, 21, 59], counts: vec![2, 2, 5], oov_tokens: 0 };
    let without = EncodedDoc { terms: vec![20, 21], counts: vec![2, 2], oov_tokens: 0 };
    let preds = model.predict(&[with, without], &PredictOptions::default()).unwrap();
    assert!(preds[0].topic_proportions.iter().all(|p| p.is_finite()));
    assert_eq!(preds[0].topic_proportions, preds[1].topic_proportions);
}

/// A merge is decided on the objective assembled from the tracked pair statistics (summed
/// over batches); after the merge is applied to every batch summary, the total and the
/// sticks, the objective recomputed from scratch must be the same number (up to the
/// rounding of re-summing: 1e-10 relative).
#[test]
fn merges_are_decided_on_the_exact_objective_of_the_merged_state() {
    use super::memo::Memo;
    use super::merge::{candidate_pairs, merge_round};
    let m = planted_corpus(150, 50, 41);
    let p = HdpParams::from_json(&json!({"topics": 12, "batches": 3, "delete_every": 0})).unwrap();
    let mut memo = Memo::new(&m, V, &p, 2);
    for b in 0..3 {
        memo.visit(b, &[]);
    }
    let pairs = candidate_pairs(&memo.total, 100, 0);
    for b in 0..3 {
        memo.visit(b, &pairs);
    }
    let before = memo.objective().total();
    let round = merge_round(&mut memo, &pairs);
    eprintln!("merges {} of {}: decided {} recomputed {} (before {before})", round.accepted, round.proposed, round.decided_objective, round.objective);
    assert!(round.accepted > 0, "{round:?}");
    assert!(round.objective > before);
    assert!((round.decided_objective - round.objective).abs() < 1e-10 * round.objective.abs(), "{round:?}");
    assert_eq!(memo.num_topics(), 12 - round.accepted);
}
