//! Cost of the Chib-style held-out estimator for LDA: milliseconds per 100-token document
//! with S = 1000 on one thread, for K = 10, 50 and 100 (issue target: under 50 ms at
//! K = 100). φ has V = 5000 rows drawn from a Dirichlet(0.05); documents are drawn from LDA
//! with α = 50/K, the fitting default. Run with `cargo bench --locked --bench heldout_lda`.

use rand::RngExt;
use rand_distr::{Distribution, Gamma};
use std::time::Instant;
use topicd_core::models::lda::heldout::{chib_log_likelihood, ChibSettings};
use topicd_core::rng::{stream, Purpose, StreamRng};

const NUM_TERMS: usize = 5_000;
const DOC_TOKENS: usize = 100;
const DOCS: usize = 20;

fn dirichlet(concentration: f64, len: usize, rng: &mut StreamRng) -> Vec<f64> {
    let gamma = Gamma::new(concentration, 1.0).expect("positive concentration");
    let mut draw: Vec<f64> = (0..len).map(|_| gamma.sample(rng).max(1e-300)).collect();
    let total: f64 = draw.iter().sum();
    draw.iter_mut().for_each(|x| *x /= total);
    draw
}

fn categorical(probabilities: &[f64], rng: &mut StreamRng) -> usize {
    let mut u = rng.random::<f64>();
    for (i, &p) in probabilities.iter().enumerate() {
        if u < p {
            return i;
        }
        u -= p;
    }
    probabilities.len() - 1
}

fn main() {
    let settings = ChibSettings::default();
    println!(
        "Chib-style held-out estimator, LDA, V = {NUM_TERMS}, {DOC_TOKENS}-token documents, burn-in {}, S = {}, 1 thread",
        settings.burn_in, settings.chain_length
    );
    println!("{:>5} {:>12} {:>12} {:>12} {:>16}", "K", "median ms", "min ms", "max ms", "mean log p/token");
    for num_topics in [10usize, 50, 100] {
        let alpha = 50.0 / num_topics as f64;
        let mut rng = stream(1, Purpose::Synthetic, num_topics as u64, 0);
        let phi: Vec<f64> = (0..num_topics).flat_map(|_| dirichlet(0.05, NUM_TERMS, &mut rng)).collect();
        let mut times = Vec::with_capacity(DOCS);
        let mut log_p = 0.0;
        for d in 0..DOCS {
            let theta = dirichlet(alpha, num_topics, &mut rng);
            let words: Vec<u32> = (0..DOC_TOKENS)
                .map(|_| {
                    let k = categorical(&theta, &mut rng);
                    categorical(&phi[k * NUM_TERMS..(k + 1) * NUM_TERMS], &mut rng) as u32
                })
                .collect();
            let mut chain_rng = stream(7, Purpose::Heldout, 0, d as u64);
            let start = Instant::now();
            log_p += chib_log_likelihood(&words, &phi, num_topics, &vec![alpha; num_topics], &settings, &mut chain_rng);
            times.push(start.elapsed().as_secs_f64() * 1e3);
        }
        times.sort_by(|a, b| a.total_cmp(b));
        println!("{num_topics:>5} {:>12.2} {:>12.2} {:>12.2} {:>16.4}", times[DOCS / 2], times[0], times[DOCS - 1], log_p / (DOCS * DOC_TOKENS) as f64);
    }
}
