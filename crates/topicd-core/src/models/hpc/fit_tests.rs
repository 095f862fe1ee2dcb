//! End-to-end checks of the HPC fit on data drawn from its own generative process.

use super::fit::fit_hpc;
use super::model::HpcModel;
use super::params::HpcParams;
use super::simulate::{simulate, SimulatedCorpus, SimulationConfig};
use super::variant::Supervision;
use crate::corpus::builder::build_corpus;
use crate::corpus::preprocess::{PreprocessOptions, StopWords};
use crate::corpus::Corpus;
use crate::models::{FitContext, TopicModel};
use serde_json::json;

pub(super) fn pearson(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len() as f64;
    let (ma, mb) = (a.iter().sum::<f64>() / n, b.iter().sum::<f64>() / n);
    let cov: f64 = a.iter().zip(b).map(|(x, y)| (x - ma) * (y - mb)).sum();
    let va: f64 = a.iter().map(|x| (x - ma).powi(2)).sum();
    let vb: f64 = b.iter().map(|y| (y - mb).powi(2)).sum();
    cov / (va * vb).sqrt()
}

/// Two levels (3 top labels with 3 children each, K = 12), 400 words, 1 500 documents.
fn simulated() -> (SimulatedCorpus, Corpus) {
    let config = SimulationConfig { eta: -2.0, ..SimulationConfig::small(1_500, 400, vec![3, 3], 150.0) };
    let sim = simulate(&config, 21);
    let corpus =
        build_corpus(PreprocessOptions { stopwords: StopWords::None, ..PreprocessOptions::default() }, &[], sim.to_raw_documents()).expect("corpus builds");
    (sim, corpus)
}

fn fit(corpus: &Corpus, params: serde_json::Value, seed: u64) -> HpcModel {
    let p = HpcParams::from_json(&params, Supervision::Labelled).unwrap();
    FitContext::silent(|ctx| fit_hpc(corpus, &p, Supervision::Labelled, seed, ctx)).expect("fit succeeds")
}

/// Posterior means of μ and of sibling exclusivity track the truth.
///
/// Bound: a label is active in about 12 % of 1 275 training documents, so a word with
/// rate e^μ collects about 150·e^μ·0.12·1275/150 ≈ 150 e^μ tokens there; for the median
/// word (μ ≈ −1) that is ≈ 55 tokens, a log-rate standard error of about 0.13–0.2 once
/// shared labels are accounted for, against a spread of true μ of about
/// sqrt(γ² + τ²) ≈ 1.2. The implied correlation is above 0.97; rare words
/// (μ ≈ −3, a handful of tokens) are shrunk towards their parents, so the test asks
/// for 0.9 on μ and 0.75 on exclusivity (a ratio, noisier than either rate).
#[test]
fn recovers_rates_and_exclusivity_from_simulated_data() {
    let (sim, corpus) = simulated();
    let model = fit(&corpus, json!({"iterations": 60, "burn_in": 30, "test_fraction": 0.15}), 5);
    let k = sim.num_labels();
    let n = k + 1;
    let (mut got, mut want) = (Vec::new(), Vec::new());
    let (mut got_x, mut want_x) = (Vec::new(), Vec::new());
    let name = |node: usize| sim.label_path(node).rsplit('/').next().unwrap().to_owned();
    let table = model.topic_table(&Default::default());
    for f in 0..sim.mu.len() / n {
        let Some(term) = corpus.lexicon.id(&format!("w{f}")) else { continue };
        let beta: Vec<f64> = sim.mu[f * n..(f + 1) * n].iter().map(|m| m.exp()).collect();
        for node in 1..n {
            let topic = corpus.labels.id(&name(node)).expect("label present") as usize;
            got.push(model.mu[term as usize * n + topic + 1] as f64);
            want.push(sim.mu[f * n + node]);
            let p = sim.parent[node].unwrap();
            let siblings: f64 = (1..n).filter(|&c| sim.parent[c] == Some(p)).map(|c| beta[c]).sum();
            want_x.push(beta[node] / siblings);
            got_x.push(table.exclusivity[(topic, term as usize)]);
        }
    }
    let (r_mu, r_excl) = (pearson(&got, &want), pearson(&got_x, &want_x));
    assert!(r_mu > 0.9, "correlation of posterior mean mu with the truth: {r_mu}");
    assert!(r_excl > 0.75, "correlation of exclusivity with the truth: {r_excl}");
    assert!(model.summary.rate_acceptance > 0.6, "rate acceptance {}", model.summary.rate_acceptance);
    assert!(model.summary.affinity_acceptance > 0.6, "affinity acceptance {}", model.summary.affinity_acceptance);
    let eval = model.evaluation.as_ref().expect("a test split was held out");
    assert!(
        eval.model.micro.f1 > eval.most_frequent_baseline.micro.f1 + 0.1,
        "micro-F1 {} vs baseline {}",
        eval.model.micro.f1,
        eval.most_frequent_baseline.micro.f1
    );
}

/// The same seed gives the same model on one and on two threads.
#[test]
fn same_seed_same_model_at_any_thread_count() {
    let (_, corpus) = simulated();
    let params = json!({"iterations": 4, "burn_in": 2, "hessian_every": 2});
    let run = |threads: usize| rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(|| fit(&corpus, params.clone(), 8));
    let (a, b) = (run(1), run(2));
    assert_eq!(a.mu, b.mu);
    assert_eq!(a.exclusivity, b.exclusivity);
    assert_eq!(a.thresholds, b.thresholds);
    assert_eq!(a.prediction, b.prediction);
}

/// A version-1 blob (version 2 without the trailing `prediction`) decodes to the same
/// model with the paper's predictor and no closure, as it was fitted; a version-2 blob
/// (version 3 without the trailing label sets) decodes with its single-label settings
/// and no sets; a version-3 blob (version 4 without the trailing refit flag) decodes as
/// not refitted; a version-4 blob (the parameters with `threads`) and a version-5 blob
/// (without the trailing convergence report) decode to the same model without the
/// report; a version-6 blob (without the trailing chain count and alignments) decodes as
/// one chain; a version-7 blob (without the trailing seeds) decodes unseeded; a
/// version-8 blob round-trips with its prediction settings.
#[test]
fn older_models_decode_with_the_predictor_they_were_fitted_with() {
    use super::label_posterior::{LabelPrediction, Predictor};
    let (_, corpus) = simulated();
    let model = fit(&corpus, json!({"iterations": 2, "burn_in": 1}), 4);
    assert_eq!(model.prediction.predictor, Predictor::LabelSets);
    assert!(model.prediction.sets.len() > model.labels.len(), "the training sets add to the singletons");
    assert!(model.refitted_with_validation, "refit is the default with validation documents");
    let bytes = model.encode();
    let again = HpcModel::decode(&bytes).unwrap();
    assert_eq!((again.prediction.clone(), again.mu.clone(), again.thresholds.clone()), (model.prediction.clone(), model.mu.clone(), model.thresholds.clone()));
    assert!(again.refitted_with_validation);
    assert_eq!(bytes[0], 8, "the version is the first byte");
    assert!(model.convergence.is_some());
    assert_eq!((again.chains, again.params.chains), (1, 1));

    // Version 7: the current blob without the seeds (empty) and the left-out words.
    let v7 = super::model::as_version7(&bytes);
    assert!(v7.len() < bytes.len() && v7[0] == 7);
    assert_eq!(HpcModel::decode(&v7).unwrap().encode(), bytes, "the same model, unseeded");

    // Version 6: version 7 without `chains` (1), the alignments, the design, its rows
    // and the θ draws (none).
    let mut v6 = v7.clone();
    assert_eq!(v6.split_off(v6.len() - 5), [1, 0, 0, 0, 0]);
    v6[0] = 6;
    assert_eq!(HpcModel::decode(&v6).unwrap().encode(), bytes, "the same model, one chain");
    let mut without_report = model.clone();
    without_report.convergence = None;

    // Version 5: version 6 without the report (one zero byte for none).
    let mut v5 = super::model::as_version7(&without_report.encode());
    assert_eq!(v5.split_off(v5.len() - 6), [0, 1, 0, 0, 0, 0]);
    v5[0] = 5;
    assert_eq!(HpcModel::decode(&v5).unwrap().encode(), without_report.encode(), "the same model");

    // Version 4: the parameters carry `threads` (one byte for 0).
    let bytes = as_version_4(&bytes);
    let old = HpcModel::decode(&bytes).unwrap();
    assert_eq!(old.encode(), without_report.encode(), "the same model");

    // Version 3: without the trailing flag (one byte).
    let mut v3 = bytes[..bytes.len() - 1].to_vec();
    v3[0] = 3;
    let old = HpcModel::decode(&v3).unwrap();
    assert_eq!((old.version, old.refitted_with_validation), (8, false));
    assert_eq!((old.prediction, old.mu, old.thresholds), (model.prediction.clone(), model.mu.clone(), model.thresholds.clone()));

    // Version 2: a single-label model's blob without the (empty) set list.
    let single = fit(&corpus, json!({"iterations": 2, "burn_in": 1, "predictor": "single_label"}), 4);
    assert!(single.prediction.sets.is_empty());
    let bytes = as_version_4(&single.encode());
    let without_flag = &bytes[..bytes.len() - 1];
    let mut v2 = without_flag[..without_flag.len() - postcard::to_allocvec(&single.prediction.sets).unwrap().len()].to_vec();
    v2[0] = 2;
    let old = HpcModel::decode(&v2).unwrap();
    assert_eq!((old.prediction, old.version, old.refitted_with_validation), (single.prediction.clone(), 8, false));

    let tail = postcard::to_allocvec(&single.prediction).unwrap().len();
    let mut v1 = without_flag[..without_flag.len() - tail].to_vec();
    v1[0] = 1;
    let old = HpcModel::decode(&v1).unwrap();
    assert_eq!(old.prediction, LabelPrediction::mode_only());
    assert_eq!((old.mu, old.thresholds, old.labels), (single.mu, single.thresholds, single.labels));
    v1[0] = 9;
    assert!(HpcModel::decode(&v1).is_err());
}

/// A current blob in version 4's layout: `threads` (0) after the other parameters, no
/// convergence report.
fn as_version_4(bytes: &[u8]) -> Vec<u8> {
    super::model::as_before_threads_left(bytes)
}
