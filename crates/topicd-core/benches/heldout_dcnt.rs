//! Cost of the DCNT/SCNT held-out estimators (not a test): milliseconds per 100-token
//! document for the Chib-style estimator at its defaults (T = S = 1 000, default R) on
//! one thread, for K̄ = 20 and 50 with V = 5 000, and the Monte Carlo topic covariance
//! for 100 documents × 5 000 draws.
//!
//! Run: `cargo bench --locked --bench heldout_dcnt`.

use rand::RngExt;
use rand_distr::{Distribution, Gamma, StandardNormal};
use std::time::Instant;
use topicd_core::corpus::EncodedDoc;
use topicd_core::models::dcnt::covariance::topic_covariance;
use topicd_core::models::dcnt::heldout::{chib_batch, ChibSettings};
use topicd_core::models::dcnt::point::DcntPoint;
use topicd_core::models::dcnt::stick::stick_weights;
use topicd_core::models::CancelToken;
use topicd_core::rng::{stream, Purpose, StreamRng};

const V: usize = 5_000;
const FEATURES: usize = 3;

fn normal(rng: &mut StreamRng) -> f64 {
    StandardNormal.sample(rng)
}

/// A random point: A lower-triangular with shrinking rows, η small, λ_v = 2, Ω rows
/// from a symmetric Dirichlet(0.05).
fn random_point(k: usize, rng: &mut StreamRng) -> DcntPoint {
    let mut a = vec![0.0; k * k];
    for r in 0..k {
        for c in 0..=r {
            a[r * k + c] = normal(rng) / ((r + 1) as f64).sqrt();
        }
    }
    let eta = (0..FEATURES * k).map(|_| 0.3 * normal(rng)).collect();
    let gamma = Gamma::new(0.05, 1.0).expect("valid gamma");
    let mut topic_word = Vec::with_capacity(k * V);
    for _ in 0..k {
        let row: Vec<f64> = (0..V).map(|_| gamma.sample(rng) + 1e-300).collect();
        let total: f64 = row.iter().sum();
        topic_word.extend(row.iter().map(|x| x / total));
    }
    DcntPoint { num_topics: k, num_features: FEATURES, a, eta, lambda_v: 2.0, topic_word }
}

/// A document of `tokens` words drawn from the model given φ.
fn draw_document(point: &DcntPoint, features: &[f64], tokens: usize, rng: &mut StreamRng) -> EncodedDoc {
    let u: Vec<f64> = point.u_mean(features).iter().map(|m| m + normal(rng)).collect();
    let sd = 1.0 / point.lambda_v.sqrt();
    let v: Vec<f64> = point.a_times(&u).iter().map(|m| m + sd * normal(rng)).collect();
    let pi = stick_weights(&v);
    let mut counts = vec![0u32; V];
    for _ in 0..tokens {
        let pick = |weights: &mut dyn Iterator<Item = f64>, x: f64| {
            let mut acc = 0.0;
            let mut last = 0;
            for (i, w) in weights.enumerate() {
                acc += w;
                last = i;
                if x < acc {
                    return i;
                }
            }
            last
        };
        let z = pick(&mut pi.iter().copied(), rng.random::<f64>());
        let w = pick(&mut point.topic_word[z * V..(z + 1) * V].iter().copied(), rng.random::<f64>());
        counts[w] += 1;
    }
    let terms: Vec<u32> = (0..V as u32).filter(|&w| counts[w as usize] > 0).collect();
    let counts = terms.iter().map(|&w| counts[w as usize]).collect();
    EncodedDoc { terms, counts, oov_tokens: 0 }
}

fn main() {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("a one-thread pool");
    let settings = ChibSettings::default();
    println!("Chib settings: T = {}, S = {}, R = {} (1 thread)", settings.burn_in, settings.chain_length, settings.acceptance_samples);
    for k in [20, 50] {
        let mut rng = stream(1, Purpose::SyntheticCorpus, k as u64, 0);
        let point = random_point(k, &mut rng);
        let docs_n = 10;
        let features: Vec<Vec<f64>> = (0..docs_n).map(|_| std::iter::once(1.0).chain((1..FEATURES).map(|_| normal(&mut rng))).collect()).collect();
        let docs: Vec<EncodedDoc> = features.iter().map(|f| draw_document(&point, f, 100, &mut rng)).collect();
        let start = Instant::now();
        let result = pool.install(|| chib_batch(&point, &features, &docs, &settings, 7, &CancelToken::new())).expect("not cancelled");
        let ms = start.elapsed().as_secs_f64() * 1e3 / docs_n as f64;
        let mean_log = result.iter().sum::<f64>() / docs_n as f64;
        println!("K = {k:>2}: Chib {ms:8.2} ms per 100-token document (mean log p(w) = {mean_log:.2}, {docs_n} documents)");
        // Spread of the estimate: one document, independent seeds.
        let repeats = 10;
        let same: Vec<Vec<f64>> = vec![features[0].clone(); 1];
        let logs: Vec<f64> = (0..repeats)
            .map(|seed| pool.install(|| chib_batch(&point, &same, &docs[..1], &settings, 100 + seed, &CancelToken::new())).expect("not cancelled")[0])
            .collect();
        let mean = logs.iter().sum::<f64>() / repeats as f64;
        let sd = (logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (repeats - 1) as f64).sqrt();
        println!("K = {k:>2}: log p(w) of one document over {repeats} seeds: mean {mean:.3}, sd {sd:.3}");

        let cov_docs = 100;
        let cov_features: Vec<Vec<f64>> = (0..cov_docs).map(|_| std::iter::once(1.0).chain((1..FEATURES).map(|_| normal(&mut rng))).collect()).collect();
        let start = Instant::now();
        let cov = pool.install(|| topic_covariance(&point, &cov_features, 5_000, 3));
        let secs = start.elapsed().as_secs_f64();
        println!(
            "K = {k:>2}: covariance {secs:8.3} s for {cov_docs} distinct documents x 5000 draws (trace {:.4})",
            (0..k).map(|i| cov.covariance[i * k + i]).sum::<f64>()
        );
    }
}
