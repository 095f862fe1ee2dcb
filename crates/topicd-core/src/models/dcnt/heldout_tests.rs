//! Checks of the Chib-style held-out estimator against plain Monte Carlo, across
//! thread counts, and on the empty document.

use super::heldout::{chib_batch, chib_log_likelihood, std_normal, ChibSettings};
use super::point::DcntPoint;
use super::stick::stick_weights;
use crate::corpus::EncodedDoc;
use crate::models::CancelToken;
use crate::rng::{stream, Purpose};

/// K̄ = 3, V = 4, two features, a full A (DCNT).
fn full_point() -> DcntPoint {
    DcntPoint {
        num_topics: 3,
        num_features: 2,
        a: vec![1.0, 0.0, 0.0, 0.8, 0.9, 0.0, -0.5, 0.4, 1.1],
        eta: vec![0.3, -0.2, 0.1, 0.5, 0.4, -0.6],
        lambda_v: 1.5,
        topic_word: vec![0.6, 0.2, 0.1, 0.1, 0.1, 0.5, 0.3, 0.1, 0.05, 0.05, 0.2, 0.7],
    }
}

/// K̄ = 4, V = 5, no features (φ = 1), a diagonal A (SCNT).
fn diagonal_point() -> DcntPoint {
    let k = 4;
    let mut a = vec![0.0; k * k];
    for (i, d) in [1.2, 0.7, 1.5, 0.9].into_iter().enumerate() {
        a[i * k + i] = d;
    }
    DcntPoint {
        num_topics: k,
        num_features: 1,
        a,
        eta: vec![0.5, -0.3, 0.2, 0.0],
        lambda_v: 0.8,
        topic_word: vec![
            0.5, 0.2, 0.1, 0.1, 0.1, //
            0.1, 0.6, 0.1, 0.1, 0.1, //
            0.05, 0.05, 0.6, 0.2, 0.1, //
            0.1, 0.1, 0.1, 0.1, 0.6,
        ],
    }
}

/// Mean and standard error of p(w) = E_{u,v ~ prior}[Π_n Σ_k π_k(v) Ω_{k,w_n}] from
/// independent prior draws.
fn monte_carlo(point: &DcntPoint, features: &[f64], words: &[u32], draws: usize, index: u64) -> (f64, f64) {
    let k = point.num_topics;
    let mean_u = point.u_mean(features);
    let sd = 1.0 / point.lambda_v.sqrt();
    let mut rng = stream(77, Purpose::Estimate, 0, index);
    let (mut sum, mut sq) = (0.0, 0.0);
    let mut u = vec![0.0; k];
    for _ in 0..draws {
        for (x, m) in u.iter_mut().zip(&mean_u) {
            *x = m + std_normal(&mut rng);
        }
        let v: Vec<f64> = point.a_times(&u).iter().map(|m| m + sd * std_normal(&mut rng)).collect();
        let pi = stick_weights(&v);
        let p: f64 = words.iter().map(|&w| (0..k).map(|t| pi[t] * point.omega(t, w as usize)).sum::<f64>()).product();
        sum += p;
        sq += p * p;
    }
    let mean = sum / draws as f64;
    let var = (sq / draws as f64 - mean * mean) * draws as f64 / (draws - 1) as f64;
    (mean, (var / draws as f64).sqrt())
}

/// Mean and standard error of the Chib estimate of p(w) (linear scale: the estimator is
/// unbiased for p(w), not for log p(w)) over independent runs.
fn chib_runs(point: &DcntPoint, features: &[f64], words: &[u32], settings: &ChibSettings, runs: usize, index: u64) -> (f64, f64) {
    let estimates: Vec<f64> = (0..runs)
        .map(|r| {
            let mut rng = stream(2024, Purpose::Heldout, r as u64, index);
            chib_log_likelihood(point, features, words, settings, &mut rng).exp()
        })
        .collect();
    let mean = estimates.iter().sum::<f64>() / runs as f64;
    let var = estimates.iter().map(|e| (e - mean).powi(2)).sum::<f64>() / (runs - 1) as f64;
    (mean, (var / runs as f64).sqrt())
}

/// Both estimates are unbiased for the same p(w) and independent, so their difference
/// has mean 0 and standard deviation sqrt(SE_chib² + SE_mc²); each SE comes from its own
/// sample (runs of the estimator; prior draws). |z| < 4 fails by chance with
/// probability ≈ 6e-5 per document under normality. Short chains (T = S = 30) keep the
/// test fast; unbiasedness does not depend on the chain length, only the variance does.
fn check_against_monte_carlo(point: &DcntPoint, features: &[f64], documents: &[Vec<u32>]) {
    let settings = ChibSettings { burn_in: 30, chain_length: 30, acceptance_samples: 100 };
    for (i, words) in documents.iter().enumerate() {
        let (chib, chib_se) = chib_runs(point, features, words, &settings, 2000, i as u64);
        let (mc, mc_se) = monte_carlo(point, features, words, 1_000_000, i as u64);
        let z = (chib - mc) / (chib_se * chib_se + mc_se * mc_se).sqrt();
        eprintln!("doc {words:?}: chib {chib:.6e} ± {chib_se:.2e}, mc {mc:.6e} ± {mc_se:.2e}, z = {z:.2}");
        assert!(z.abs() < 4.0, "doc {words:?}: chib {chib} ± {chib_se}, mc {mc} ± {mc_se}, z = {z}");
    }
}

fn tiny_documents() -> Vec<Vec<u32>> {
    vec![vec![2], vec![0, 3], vec![1, 1, 3], vec![3, 0, 2, 2]]
}

#[test]
fn chib_agrees_with_monte_carlo_for_a_full_a() {
    check_against_monte_carlo(&full_point(), &[1.0, 0.5], &tiny_documents());
}

#[test]
fn chib_agrees_with_monte_carlo_for_a_diagonal_a() {
    let mut docs = tiny_documents();
    docs.push(vec![4, 4, 0, 2]);
    check_against_monte_carlo(&diagonal_point(), &[1.0], &docs);
}

#[test]
fn batch_does_not_depend_on_the_thread_count() {
    let point = full_point();
    let docs: Vec<EncodedDoc> = [(vec![0u32, 2], vec![2u32, 1]), (vec![1, 3], vec![1, 4]), (vec![0, 1, 2, 3], vec![1, 1, 1, 1]), (vec![3], vec![2])]
        .into_iter()
        .map(|(terms, counts)| EncodedDoc { terms, counts, oov_tokens: 0 })
        .collect();
    let features = vec![vec![1.0, 0.5], vec![1.0, -1.0], vec![1.0, 0.0], vec![1.0, 2.0]];
    let settings = ChibSettings { burn_in: 20, chain_length: 20, acceptance_samples: 50 };
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| chib_batch(&point, &features, &docs, &settings, 9, &CancelToken::new())).expect("not cancelled")
    };
    let one = run(1);
    assert_eq!(one, run(2));
    assert!(one.iter().all(|x| x.is_finite() && *x < 0.0), "{one:?}");
    // The same document through the single-document entry point on its stream.
    let words = [1u32, 3, 3, 3, 3];
    let single = chib_log_likelihood(&point, &features[1], &words, &settings, &mut stream(9, Purpose::Heldout, 0, 1));
    assert_eq!(single, one[1]);
}

#[test]
fn cancelled_batch_returns_none() {
    let point = full_point();
    let docs = vec![EncodedDoc { terms: vec![0], counts: vec![1], oov_tokens: 0 }];
    let cancel = CancelToken::new();
    cancel.cancel();
    assert!(chib_batch(&point, &[vec![1.0, 0.0]], &docs, &ChibSettings::default(), 1, &cancel).is_none());
}

#[test]
fn empty_document_has_probability_one() {
    let point = diagonal_point();
    let settings = ChibSettings::default();
    let mut rng = stream(1, Purpose::Heldout, 0, 0);
    assert_eq!(chib_log_likelihood(&point, &[1.0], &[], &settings, &mut rng), 0.0);
    // Out-of-vocabulary ids are ignored, so a document of them is empty too.
    assert_eq!(chib_log_likelihood(&point, &[1.0], &[5, 17], &settings, &mut rng), 0.0);
    let docs = vec![EncodedDoc::default()];
    assert_eq!(chib_batch(&point, &[vec![1.0]], &docs, &settings, 3, &CancelToken::new()), Some(vec![0.0]));
}
