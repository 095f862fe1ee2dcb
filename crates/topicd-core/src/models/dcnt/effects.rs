//! DCNT's and SCNT's covariate effects by the model itself (`"method": "model"`).
//!
//! Why it exists: DCNT puts a document's covariates into the prior of its topic weights,
//! v ~ N(A ηᵀφ, A Aᵀ + λ_v⁻¹ I) with π = stick-breaking(v), so the expected topic
//! shares of a document with covariates φ are a property of the parameters, not a
//! regression fitted afterwards. For each kept draw of (A, η, λ_v) the expected shares
//! E[π | φ] are a Monte Carlo integral over v; the posterior mean and equal-tailed
//! interval over the draws are the effect and its uncertainty.
//!
//! The integral uses common random numbers: one set of M noise vectors A z₁ + z₂/√λ_v
//! per draw, shared by every point of the curve (and by a contrast's two sides), so the
//! K̄² work is per draw and sample, not per point, and differences carry less noise.
//! M doubles from 128 until, for every (point, topic), the Monte Carlo standard error
//! of the posterior mean (over the draws, each with its own samples) is below a tenth
//! of the interval's width, or reaches 4096; the answer says which.
//!
//! With several chains, each draw's expected shares are computed in its own chain's
//! stick order and then moved onto the model's topics by that chain's alignment.

use super::model::DcntModel;
use super::sample::Loadings;
use super::stick::stick_weights_into;
use crate::models::chains::relabel_columns;
use crate::models::effects::{interval, plan, ChainPooling, Difference, EffectPlan, EffectPoint, EffectQuery, Effects, MonteCarlo, TopicEffect};
use crate::models::ModelError;
use crate::rng::{stream, Purpose};
use rand_distr::{Distribution, StandardNormal};
use rayon::prelude::*;

/// Monte Carlo samples per draw: the first try, and the cap.
const FIRST_SAMPLES: usize = 128;
const MAX_SAMPLES: usize = 4096;

/// Expected stick-breaking weights at each design row under one draw of the globals:
/// (points × K̄ means, points × K̄ Monte Carlo standard errors), from `samples` noise
/// vectors on `rng`.
pub fn expected_shares(draw: &Loadings, k: usize, rows: &[Vec<f64>], samples: usize, rng: &mut impl rand::Rng) -> (Vec<f64>, Vec<f64>) {
    let f = draw.eta.len() / k;
    // m(φ) = A ηᵀφ for every row.
    let means: Vec<Vec<f64>> = rows
        .iter()
        .map(|phi| {
            let mut u = vec![0.0; k];
            for (j, &x) in phi.iter().enumerate().take(f) {
                u.iter_mut().zip(&draw.eta[j * k..(j + 1) * k]).for_each(|(m, e)| *m += e * x);
            }
            (0..k).map(|r| draw.a[r * k..(r + 1) * k].iter().zip(&u).map(|(a, b)| a * b).sum()).collect()
        })
        .collect();
    let sd = 1.0 / draw.lambda_v.sqrt();
    let (mut sum, mut sum_sq) = (vec![0.0; rows.len() * k], vec![0.0; rows.len() * k]);
    let (mut z, mut noise, mut v, mut pi) = (vec![0.0; k], vec![0.0; k], vec![0.0; k], vec![0.0; k]);
    for _ in 0..samples {
        z.iter_mut().for_each(|x| *x = StandardNormal.sample(rng));
        for (r, e) in noise.iter_mut().enumerate() {
            let az: f64 = draw.a[r * k..(r + 1) * k].iter().zip(&z).map(|(a, b)| a * b).sum();
            let eps: f64 = StandardNormal.sample(rng);
            *e = az + sd * eps;
        }
        for (p, m) in means.iter().enumerate() {
            v.iter_mut().zip(m).zip(&noise).for_each(|((v, m), e)| *v = m + e);
            stick_weights_into(&v, &mut pi);
            for (t, &w) in pi.iter().enumerate() {
                sum[p * k + t] += w;
                sum_sq[p * k + t] += w * w;
            }
        }
    }
    let n = samples as f64;
    let mean: Vec<f64> = sum.iter().map(|s| s / n).collect();
    let se = sum_sq.iter().zip(&mean).map(|(q, m)| ((q / n - m * m).max(0.0) / (n - 1.0).max(1.0)).sqrt()).collect();
    (mean, se)
}

/// The effect of `query.covariate` on the model's topics.
pub fn effects(model: &DcntModel, query: &EffectQuery) -> Result<Effects, ModelError> {
    let spec = model
        .design
        .as_ref()
        .ok_or_else(|| ModelError::NotOffered("this model was fitted without covariates: effects need a fit with `covariates` in its params".into()))?;
    if model.draws.is_empty() {
        return Err(ModelError::NotOffered("this model kept no draws of its parameters (`keep_draws` was 0)".into()));
    }
    let k = model.params.topics;
    let EffectPlan { kind, points, contrast, held, rows, topics } = plan(spec, query, k)?;

    let mut samples = FIRST_SAMPLES;
    loop {
        let per_draw: Vec<(Vec<f64>, Vec<f64>)> = model
            .draws
            .par_iter()
            .enumerate()
            .map(|(s, draw)| {
                let shares = expected_shares(draw, k, &rows, samples, &mut stream(query.seed, Purpose::Effects, samples as u64, s as u64));
                match model.draw_topics(s) {
                    None => shares,
                    Some(to) => (relabel_columns(&shares.0, to), relabel_columns(&shares.1, to)),
                }
            })
            .collect();
        let mut worst: (f64, f64) = (0.0, 0.0); // (largest se, largest se / (width / 10))
        let mut report = Vec::with_capacity(topics.len());
        for &t in &topics {
            // Every chain's draws, or those of the chains that hold this topic
            // ([`DcntModel::draw_counts_for`]).
            let counts = |s: usize| query.chains == ChainPooling::All || model.draw_counts_for(s, t);
            let counted: Vec<&(Vec<f64>, Vec<f64>)> = per_draw.iter().enumerate().filter(|(s, _)| counts(*s)).map(|(_, d)| d).collect();
            let along = |p: usize| counted.iter().map(|(m, _)| m[p * k + t]).collect::<Vec<f64>>();
            let mut effect_points = Vec::with_capacity(points.len());
            for (p, x) in points.iter().enumerate() {
                let share = interval(&along(p), query.level);
                // The Monte Carlo error of the posterior mean over the draws.
                let se = (counted.iter().map(|(_, e)| e[p * k + t].powi(2)).sum::<f64>()).sqrt() / counted.len() as f64;
                worst = (worst.0.max(se), worst.1.max(se / ((share.upper - share.lower) / 10.0).max(f64::MIN_POSITIVE)));
                effect_points.push(EffectPoint { x: x.json(), share });
            }
            let difference = contrast.as_ref().map(|(a, b)| {
                let (pa, pb) = (points.len(), points.len() + 1);
                let diffs: Vec<f64> = counted.iter().map(|(m, _)| m[pa * k + t] - m[pb * k + t]).collect();
                Difference { a: a.json(), b: b.json(), share: interval(&diffs, query.level) }
            });
            report.push(TopicEffect { id: t, points: effect_points, difference, pooled_chains: model.pooled_chains(t, query.chains) });
        }
        let within = worst.1 <= 1.0;
        if within || samples >= MAX_SAMPLES {
            return Ok(Effects {
                covariate: query.covariate.clone(),
                kind,
                method: "model",
                draws: model.draws.len(),
                simulations: None,
                level: query.level,
                held_at: held.iter().map(|(n, v)| (n.clone(), v.json())).collect(),
                chains: (model.draws_per_chain.len() > 1).then_some(query.chains),
                monte_carlo: Some(MonteCarlo { samples, max_standard_error: worst.0, max_ratio_to_tenth_of_width: worst.1, within }),
                topics: report,
            });
        }
        samples *= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// E[σ(v)] for v ~ N(m, s²) by the trapezoid rule on ±12 s (exact to far below
    /// the Monte Carlo error).
    fn logistic_normal_mean(m: f64, s: f64) -> f64 {
        let n = 20_000;
        let h = 24.0 * s / n as f64;
        (0..=n)
            .map(|i| {
                let x = m - 12.0 * s + h * i as f64;
                let w = if i == 0 || i == n { 0.5 } else { 1.0 };
                w * (-(x - m).powi(2) / (2.0 * s * s)).exp() / (s * (2.0 * std::f64::consts::PI).sqrt()) / (1.0 + (-x).exp())
            })
            .sum::<f64>()
            * h
    }

    /// Two topics: π₁ = σ(v₁) with v₁ ~ N((A ηᵀφ)₁, (A Aᵀ)₁₁ + 1/λ_v), a one-dimensional
    /// integral. The Monte Carlo mean lies within 4 of its own standard errors of it
    /// (a 6e-5 chance of failing by chance with this fixed seed), and π₂ = 1 − π₁.
    #[test]
    fn two_topic_shares_match_the_logistic_normal_integral() {
        let draw = Loadings { a: vec![1.2, 0.3, -0.4, 0.9], eta: vec![0.5, -0.2, -1.0, 0.7], lambda_v: 2.0 };
        let rows = vec![vec![1.0, 0.0], vec![1.0, 1.0], vec![1.0, 2.5]];
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
        let (mean, se) = expected_shares(&draw, 2, &rows, 20_000, &mut rng);
        for (p, phi) in rows.iter().enumerate() {
            let u = [draw.eta[0] * phi[0] + draw.eta[2] * phi[1], draw.eta[1] * phi[0] + draw.eta[3] * phi[1]];
            let m1 = draw.a[0] * u[0] + draw.a[1] * u[1];
            let s1 = (draw.a[0].powi(2) + draw.a[1].powi(2) + 1.0 / draw.lambda_v).sqrt();
            let exact = logistic_normal_mean(m1, s1);
            assert!((mean[p * 2] - exact).abs() < 4.0 * se[p * 2], "point {p}: {} against {exact} (se {})", mean[p * 2], se[p * 2]);
            assert!((mean[p * 2] + mean[p * 2 + 1] - 1.0).abs() < 1e-12);
        }
    }

    /// A two-topic DCNT fitted with a two-level covariate: the effect's posterior mean
    /// and interval against a direct computation from the stored draws (each draw's
    /// share by the one-dimensional integral, then their mean and quantiles). The
    /// Monte Carlo estimate of each draw is within a few of its own standard errors of
    /// the integral (those are at most √draws × the posterior mean's, which the answer
    /// reports), so the mean and the quantiles are within 4 √draws × that error (a
    /// quantile moves by at most its draws' largest error). With two chains, the second
    /// chain's draws count for the model's topic their alignment maps them to.
    #[test]
    fn effects_match_a_direct_computation_from_the_stored_draws() {
        for chains in [1, 2] {
            effects_match_the_stored_draws(chains);
        }
    }

    /// A two-topic DCNT fitted with a two-level covariate (`group`: x on every third
    /// document, else y) over `iterations` scans, 20 of them burn-in, and `chains`.
    fn two_level_fit(iterations: usize, chains: usize) -> DcntModel {
        use crate::corpus::build_corpus;
        use crate::models::lda::sampler::tests::{lda_corpus, raw_options};
        use crate::models::FitContext;
        let (_, mut docs) = lda_corpus(2, 30, 80, 40, 0.3, 5);
        for (d, doc) in docs.iter_mut().enumerate() {
            doc.covariates = Some([("group".to_string(), serde_json::json!(if d % 3 == 0 { "x" } else { "y" }))].into_iter().collect());
        }
        let corpus = build_corpus(raw_options(), &[], docs).unwrap();
        let p = super::super::params::DcntParams::from_json(
            &serde_json::json!({"topics": 2, "iterations": iterations, "burn_in": 20, "thin": 2, "covariates": ["group"], "chains": chains}),
        )
        .unwrap();
        FitContext::silent(|ctx| super::super::fit::fit_dcnt(&corpus, &p, super::super::Covariance::Full, 3, ctx)).unwrap()
    }

    /// The contrast x − y at level 0.9, seed 4, pooling `chains`.
    fn group_query(chains: ChainPooling) -> EffectQuery {
        EffectQuery { covariate: "group".into(), grid: 25, contrast: Some(("x".into(), "y".into())), level: 0.9, topics: None, seed: 4, chains }
    }

    /// Two chains whose topics do not match (L1 distances set past 1). Pooling the
    /// matched chains only (the default), every topic's effect rests on the reference
    /// chain's draws alone and equals, to the bit, the effect of the model cut to that
    /// chain; with one topic matched and one not, the matched topic pools both chains'
    /// draws, and each says so (`pooled_chains`). Pooling every chain ignores the
    /// distances: the same answer whatever they are.
    #[test]
    fn matched_pooling_leaves_out_the_chains_that_lack_a_topic() {
        let mut model = two_level_fit(40, 2);
        let (all, matched) = (group_query(ChainPooling::All), group_query(ChainPooling::Matched));
        let pooled_all = effects(&model, &all).unwrap();

        model.alignments[0].distances = vec![1.5, 1.9];
        assert_eq!(effects(&model, &all).unwrap(), pooled_all, "pooling every chain reads no distance");
        assert!(pooled_all.topics.iter().all(|t| t.pooled_chains == Some(2)));
        // The reference chain's draws (each chain kept as many).
        let per_chain = model.draws_per_chain[0];
        let own = model.reference_chain * per_chain..(model.reference_chain + 1) * per_chain;
        let mut cut = model.clone();
        cut.draws = model.draws[own.clone()].to_vec();
        cut.draws_per_chain = vec![per_chain];
        cut.reference_chain = 0;
        let (both, alone) = (effects(&model, &matched).unwrap(), effects(&cut, &matched).unwrap());
        assert_eq!((both.chains, alone.chains, pooled_all.chains), (Some(ChainPooling::Matched), None, Some(ChainPooling::All)), "the pooling is said");
        for (b, a) in both.topics.iter().zip(&alone.topics) {
            assert_eq!((b.points.clone(), b.difference.clone()), (a.points.clone(), a.difference.clone()), "topic {}", b.id);
            assert_eq!(b.pooled_chains, Some(1));
        }
        assert_ne!(both.topics[0].points, pooled_all.topics[0].points, "the other chain's draws made a difference");
        assert!((0..model.draws.len()).filter(|s| !own.contains(s)).all(|s| !model.draw_counts_for(s, 0) && !model.draw_counts_for(s, 1)));

        model.alignments[0].distances = vec![0.4, 1.2];
        let mixed = effects(&model, &matched).unwrap();
        assert_eq!(mixed.topics.iter().map(|t| t.pooled_chains).collect::<Vec<_>>(), [Some(2), Some(1)]);
        assert!((0..model.draws.len()).all(|s| model.draw_counts_for(s, 0) && model.draw_counts_for(s, 1) == own.contains(&s)));
    }

    fn effects_match_the_stored_draws(chains: usize) {
        use crate::models::design::DesignTerm;
        let model = two_level_fit(60, chains);
        assert_eq!(model.draws.len(), 40 * chains, "a draw from every scan after burn-in (not only the 20 kept ones), in every chain");
        assert_eq!(model.draws_per_chain, if chains == 1 { vec![] } else { vec![40; chains] });
        let query = group_query(ChainPooling::All);
        let e = effects(&model, &query).unwrap();
        let Some(DesignTerm::OneHot { levels, reference, .. }) = model.design.as_ref().map(|d| d.terms[0].clone()) else { panic!("a one-hot term") };
        assert_eq!((levels.clone(), reference), (vec!["y".to_string(), "x".to_string()], 0), "y, the most frequent, is the reference");
        let tolerance = 4.0 * (model.draws.len() as f64).sqrt() * e.monte_carlo.unwrap().max_standard_error;
        for (p, level) in levels.iter().enumerate() {
            let phi = [1.0, if level == "x" { 1.0 } else { 0.0 }];
            let exact: Vec<f64> = model
                .draws
                .iter()
                .enumerate()
                .map(|(s, d)| {
                    let u: Vec<f64> = (0..2).map(|t| d.eta[t] * phi[0] + d.eta[2 + t] * phi[1]).collect();
                    let m1 = d.a[0] * u[0] + d.a[1] * u[1];
                    let first = logistic_normal_mean(m1, (d.a[0].powi(2) + d.a[1].powi(2) + 1.0 / d.lambda_v).sqrt());
                    // The draw's own topic that the model's topic 0 is.
                    let own = model.draw_topics(s).map_or(0, |to| to.iter().position(|&b| b == 0).unwrap());
                    assert_eq!(
                        model.draw_topics(s).is_some(),
                        chains > 1 && s / 40 != model.reference_chain,
                        "draw {s}: only the other chains' draws are moved"
                    );
                    if own == 0 {
                        first
                    } else {
                        1.0 - first
                    }
                })
                .collect();
            let want = interval(&exact, 0.9);
            let got = e.topics[0].points[p].share;
            assert_eq!(e.topics[0].points[p].x, serde_json::json!(level));
            for (g, w, what) in [(got.mean, want.mean, "mean"), (got.lower, want.lower, "lower"), (got.upper, want.upper, "upper")] {
                assert!((g - w).abs() < tolerance, "{level} {what}: {g} against {w} (tolerance {tolerance})");
            }
        }
        assert!(e.monte_carlo.unwrap().within, "{:?}", e.monte_carlo);
        let d = e.topics[0].difference.as_ref().unwrap();
        assert!(d.share.lower <= d.share.mean && d.share.mean <= d.share.upper);
    }
}
