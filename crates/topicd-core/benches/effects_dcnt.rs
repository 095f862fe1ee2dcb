//! Latency of DCNT's covariate effects (not a test): milliseconds for one
//! `/effects` answer once the model is loaded, K̄ = 20 and 50 topics, 200 kept draws,
//! a continuous covariate in 4 spline columns over 25 grid points beside a three-level
//! categorical one (F = 7 design columns), on one thread and on every core; and the
//! Monte Carlo samples per draw the answer settled on. Issue 42's target: under 200 ms
//! for K̄ = 50, 25 points, 200 draws.
//!
//! Run: `cargo bench --locked --bench effects_dcnt`.

use rand_distr::{Distribution, StandardNormal};
use std::time::Instant;
use topicd_core::models::dcnt::params::DcntParams;
use topicd_core::models::dcnt::sample::Loadings;
use topicd_core::models::dcnt::{Covariance, DcntModel};
use topicd_core::models::design::{BSplineBasis, DesignSpec, DesignTerm, ValueRange};
use topicd_core::models::effects::EffectQuery;
use topicd_core::models::TopicModel;
use topicd_core::rng::{stream, Purpose, StreamRng};

fn normal(rng: &mut StreamRng) -> f64 {
    StandardNormal.sample(rng)
}

/// A model holding only what effects read: the design, the draws and K̄.
fn model(k: usize, draws: usize) -> DcntModel {
    let years: Vec<f64> = (0..200).map(|i| 2000.0 + i as f64 / 10.0).collect();
    let design = DesignSpec {
        terms: vec![
            DesignTerm::Spline {
                covariate: "year".into(),
                basis: BSplineBasis::fit(&years, 4, 3).expect("a basis"),
                values: ValueRange { min: 2000.0, max: 2019.9, mean: 2010.0 },
            },
            DesignTerm::OneHot { covariate: "party".into(), levels: vec!["a".into(), "b".into(), "c".into()], reference: 0 },
        ],
    };
    let f = design.width();
    let mut rng = stream(1, Purpose::Synthetic, 0, 0);
    let draws: Vec<Loadings> = (0..draws)
        .map(|_| {
            let mut a = vec![0.0; k * k];
            for r in 0..k {
                for c in 0..=r {
                    a[r * k + c] = normal(&mut rng) / ((r + 1) as f64).sqrt();
                }
            }
            Loadings { a, eta: (0..f * k).map(|_| 0.3 * normal(&mut rng)).collect(), lambda_v: 2.0 }
        })
        .collect();
    let params = DcntParams::from_json(&serde_json::json!({"topics": k, "covariates": ["year", "party"]})).expect("params");
    DcntModel {
        version: topicd_core::models::dcnt::model::ENCODING_VERSION,
        covariance: Covariance::Full,
        params,
        num_terms: 1,
        topic_word: vec![1.0; k],
        topic_shares: vec![1.0 / k as f64; k],
        document_proportions: Vec::new(),
        train_documents: Vec::new(),
        heldout_documents: Vec::new(),
        feature_names: design.column_names(),
        num_features: f,
        features: Vec::new(),
        mean_features: vec![0.0; f],
        mean: draws[0].clone(),
        last: draws[0].clone(),
        kept_scans: draws.len(),
        tokens: 0,
        final_loglik_per_token: 0.0,
        mh_acceptance: 0.0,
        active_topics: k,
        heldout: None,
        design: Some(design),
        draws,
        convergence: None,
        alignments: Vec::new(),
        draws_per_chain: Vec::new(),
        missing_seed_words: Vec::new(),
        slots: None,
        reference_chain: 0,
    }
}

fn main() {
    let query = EffectQuery {
        covariate: "year".into(),
        grid: 25,
        contrast: Some(("2005".into(), "2015".into())),
        level: 0.95,
        topics: None,
        seed: 1,
        chains: Default::default(),
    };
    for k in [20, 50] {
        let m = model(k, 200);
        for threads in [1, std::thread::available_parallelism().map_or(1, |n| n.get())] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("a pool");
            let mut times = Vec::new();
            let mut samples = 0;
            for _ in 0..5 {
                let t = Instant::now();
                let e = pool.install(|| m.effects(&query)).expect("effects").expect("an estimator");
                times.push(t.elapsed().as_secs_f64() * 1e3);
                samples = e.monte_carlo.expect("the model method integrates").samples;
            }
            times.sort_by(f64::total_cmp);
            println!(
                "K̄ = {k}, 200 draws, 25 points + contrast, {threads} thread(s): median {:.1} ms (min {:.1}), {samples} Monte Carlo samples per draw",
                times[2], times[0]
            );
        }
    }
}
