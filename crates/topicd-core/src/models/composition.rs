//! Covariate effects by the method of composition (`"method": "composition"`), for any
//! model that keeps draws of its training documents' topic proportions.
//!
//! Why it exists: LDA's, HPC's and PCM's priors do not read a document's metadata, so
//! how a topic's share moves with a covariate is answered as R's stm answers it for any
//! model (`estimateEffect`, Roberts et al. 2019, section 3.4): for each kept draw of the
//! training documents' topic proportions θ, each topic's proportion is regressed on the
//! covariates' design (ordinary least squares: β̂ = (XᵀX)⁻¹Xᵀθ_k, σ̂² = RSS/(D − P)),
//! [`SIMULATIONS`] coefficient vectors are drawn from the regression's sampling
//! distribution N(β̂, σ̂²(XᵀX)⁻¹), and the expected share at a design row r is rᵀβ. The
//! posterior mean and equal-tailed interval are taken over every (draw, simulation).
//! It is an approximation, as in stm: a linear model of proportions (which can leave
//! [0, 1]) whose uncertainty mixes the posterior of θ with a regression's sampling
//! error; DCNT and SCNT answer the same question from their own prior instead
//! ([`crate::models::dcnt::effects`]).
//!
//! A family keeps the draws with [`DrawPlan`] (evenly over a chain's kept iterations,
//! within [`THETA_DRAWS_BYTES`]) and answers with [`composition`]. A multi-chain model
//! whose topics are matched across chains (LDA) says which chains hold each topic
//! ([`DrawChains`]): with `chains=matched`, the default, a topic's effect rests on those
//! chains' draws only, as DCNT's does, so that no curve mixes different topics.

use super::design::DesignSpec;
use super::effects::{interval, plan, ChainPooling, Difference, EffectPlan, EffectPoint, EffectQuery, Effects, TopicEffect};
use super::ModelError;
use crate::rng::{stream, Purpose};
use nalgebra::{DMatrix, DVector};
use rand_distr::{Distribution, StandardNormal};
use rayon::prelude::*;

/// Coefficient draws per kept θ draw (stm's `nsims` default is 25).
pub const SIMULATIONS: usize = 25;

/// A design's normal equations, factored once for every topic and draw.
pub struct Regression {
    x: DMatrix<f64>,
    /// Cholesky factor L of XᵀX (lower).
    factor: nalgebra::Cholesky<f64, nalgebra::Dyn>,
    documents: usize,
}

impl Regression {
    /// The regression on `rows` (`documents × width`, row-major); an error when XᵀX is
    /// singular or there are no more documents than columns.
    pub fn new(rows: &[f64], documents: usize, width: usize) -> Result<Self, String> {
        if documents <= width {
            return Err(format!("{documents} training documents for {width} design columns: a regression needs more documents than columns"));
        }
        let x = DMatrix::from_row_slice(documents, width, rows);
        let factor = (x.transpose() * &x).cholesky().ok_or("the design's columns are linearly dependent (XᵀX is singular)")?;
        Ok(Regression { x, factor, documents })
    }

    /// `simulations` coefficient draws for the response `y`, on `rng`: β̂ + σ̂ L⁻ᵀ z.
    pub fn draw_coefficients(&self, y: &DVector<f64>, simulations: usize, rng: &mut impl rand::Rng) -> Vec<DVector<f64>> {
        let beta = self.factor.solve(&(self.x.transpose() * y));
        let residual = y - &self.x * &beta;
        let p = self.x.ncols();
        let sigma = (residual.norm_squared() / (self.documents - p) as f64).sqrt();
        let upper = self.factor.l().transpose();
        (0..simulations)
            .map(|_| {
                let z = DVector::from_fn(p, |_, _| StandardNormal.sample(rng));
                let shift = upper.solve_upper_triangular(&z).expect("a Cholesky factor has a nonzero diagonal");
                &beta + shift * sigma
            })
            .collect()
    }
}

/// Most bytes a fit's kept topic-proportion draws may take (f32, D × K each).
pub const THETA_DRAWS_BYTES: usize = 64 << 20;

/// Default of a family's `keep_draws` for a fit with covariates (stm's
/// `estimateEffect` simulates 25 regressions per draw; 20 draws of 25 give 500).
pub const DEFAULT_KEEP_DRAWS: usize = 20;

/// A family's `keep_draws` for effects by composition: default [`DEFAULT_KEEP_DRAWS`]
/// with covariates, else 0.
pub fn read_keep_draws(r: &mut super::params::ParamReader, design: &super::design::DesignRequest) -> Result<usize, super::params::ParamError> {
    let default = if design.covariates.is_empty() { 0 } else { DEFAULT_KEEP_DRAWS };
    Ok(r.uint_in("keep_draws", 0, 10_000)?.map_or(default, |x| x as usize))
}

/// Which kept iterations of one chain give a draw of θ: `keep` of its `kept` kept
/// iterations, spread evenly (draw j at kept iteration ⌊j · kept / keep⌋, 0-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DrawPlan {
    pub keep: usize,
    pub kept: usize,
}

impl DrawPlan {
    /// `keep_draws` shared by `chains` chains of `kept` kept iterations each, fewer when
    /// the fit's draws (`documents × topics` f32 each) would pass [`THETA_DRAWS_BYTES`].
    pub fn new(keep_draws: usize, chains: usize, documents: usize, topics: usize, kept: usize) -> Self {
        let affordable = THETA_DRAWS_BYTES / (4 * documents * topics).max(1);
        DrawPlan { keep: keep_draws.min(affordable).div_ceil(chains.max(1)).min(kept), kept }
    }

    /// Whether the kept iteration numbered `kept_so_far` (1-based) gives draw `next`.
    pub fn due(&self, next: usize, kept_so_far: usize) -> bool {
        next < self.keep && kept_so_far >= 1 && kept_so_far - 1 == next * self.kept / self.keep
    }
}

/// Which chains kept the θ draws of a multi-chain model, and which topics each holds.
pub struct DrawChains {
    /// The draws are the chains' in chain order, this many from each.
    pub draws_per_chain: usize,
    /// `holds[c][t]`: whether chain c holds the model's topic t
    /// ([`super::consensus::chain_holds`]).
    pub holds: Vec<Vec<bool>>,
}

impl DrawChains {
    /// Whether draw `m` counts towards topic `t`'s effect under `pooling`.
    fn counts(&self, pooling: ChainPooling, m: usize, t: usize) -> bool {
        pooling == ChainPooling::All || self.holds.get(m / self.draws_per_chain.max(1)).is_some_and(|h| h.get(t).copied().unwrap_or(false))
    }

    /// How many chains topic `t`'s effect rests on under `pooling`.
    fn pooled(&self, pooling: ChainPooling, t: usize) -> usize {
        self.holds.iter().filter(|h| pooling == ChainPooling::All || h.get(t).copied().unwrap_or(false)).count()
    }
}

/// The effect of `query.covariate` on `k` topics, by composition over `theta_draws`
/// (each `documents × k`, f32) of the documents whose design rows are `design_rows`
/// (`documents × spec.width()`, the design `spec` built); `chains`, for a model of
/// several chains whose topics were matched, which topics each chain's draws hold.
pub fn composition(
    spec: &DesignSpec,
    design_rows: &[f64],
    k: usize,
    theta_draws: &[Vec<f32>],
    chains: Option<&DrawChains>,
    query: &EffectQuery,
) -> Result<Effects, ModelError> {
    let invalid = |m: String| ModelError::Invalid(m);
    if theta_draws.is_empty() {
        return Err(ModelError::NotOffered("this model kept no draws of its documents' topic proportions (`keep_draws` was 0)".into()));
    }
    let EffectPlan { kind, points, contrast, held, rows, topics } = plan(spec, query, k)?;
    let width = spec.width();
    let documents = design_rows.len() / width.max(1);
    let regression = Regression::new(design_rows, documents, width).map_err(|e| invalid(format!("covariate: {e}")))?;
    let rows: Vec<DVector<f64>> = rows.into_iter().map(DVector::from_vec).collect();
    // Per topic, per (draw, simulation): the share at every row.
    let per_topic: Vec<Vec<Vec<f64>>> = topics
        .par_iter()
        .map(|&t| {
            let mut values = vec![Vec::with_capacity(theta_draws.len() * SIMULATIONS); rows.len()];
            for (m, theta) in theta_draws.iter().enumerate().filter(|(m, _)| chains.is_none_or(|c| c.counts(query.chains, *m, t))) {
                let y = DVector::from_fn(documents, |d, _| f64::from(theta[d * k + t]));
                let mut rng = stream(query.seed, Purpose::Effects, m as u64, t as u64);
                for beta in regression.draw_coefficients(&y, SIMULATIONS, &mut rng) {
                    for (r, row) in rows.iter().enumerate() {
                        values[r].push(row.dot(&beta));
                    }
                }
            }
            values
        })
        .collect();
    let report = topics
        .iter()
        .zip(&per_topic)
        .map(|(&t, values)| {
            let effect_points = points.iter().enumerate().map(|(p, x)| EffectPoint { x: x.json(), share: interval(&values[p], query.level) }).collect();
            let difference = contrast.as_ref().map(|(a, b)| {
                let (pa, pb) = (points.len(), points.len() + 1);
                let diffs: Vec<f64> = values[pa].iter().zip(&values[pb]).map(|(x, y)| x - y).collect();
                Difference { a: a.json(), b: b.json(), share: interval(&diffs, query.level) }
            });
            TopicEffect { id: t, points: effect_points, difference, pooled_chains: chains.map(|c| c.pooled(query.chains, t)) }
        })
        .collect();
    Ok(Effects {
        covariate: query.covariate.clone(),
        kind,
        method: "composition",
        draws: theta_draws.len(),
        simulations: Some(SIMULATIONS),
        level: query.level,
        held_at: held.iter().map(|(n, v)| (n.clone(), v.json())).collect(),
        chains: chains.map(|_| query.chains),
        monte_carlo: None,
        topics: report,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngExt;

    /// On y = 0.2 + 0.3 x + N(0, 0.05²) with D = 400, the coefficient draws' mean at
    /// x = 0 and x = 1 is the OLS fit, and their spread is the OLS standard error: the
    /// draws' 2.5 % and 97.5 % quantiles sit at fitted ± 1.96 se, within the quantiles'
    /// own Monte Carlo error (4 000 draws: about 0.04 se at those tails, bound 0.15 se).
    /// The fit itself is within 4 standard errors of the truth.
    #[test]
    fn coefficient_draws_follow_the_regressions_sampling_distribution() {
        let d = 400;
        let mut rng = stream(5, Purpose::Estimate, 0, 0);
        let xs: Vec<f64> = (0..d).map(|_| rng.random::<f64>()).collect();
        let rows: Vec<f64> = xs.iter().flat_map(|&x| [1.0, x]).collect();
        let y = DVector::from_fn(d, |i, _| 0.2 + 0.3 * xs[i] + 0.05 * Distribution::<f64>::sample(&StandardNormal, &mut rng));
        let reg = Regression::new(&rows, d, 2).unwrap();
        let draws = reg.draw_coefficients(&y, 4_000, &mut stream(6, Purpose::Effects, 0, 0));
        // The OLS fit and its covariance, computed directly.
        let x = DMatrix::from_row_slice(d, 2, &rows);
        let xtx_inv = (x.transpose() * &x).try_inverse().unwrap();
        let beta = &xtx_inv * x.transpose() * &y;
        let resid = &y - &x * &beta;
        let s2 = resid.norm_squared() / (d - 2) as f64;
        for at in [0.0, 1.0] {
            let r = DVector::from_vec(vec![1.0, at]);
            let fitted = r.dot(&beta);
            let se = (s2 * (r.transpose() * &xtx_inv * &r)[(0, 0)]).sqrt();
            assert!((fitted - (0.2 + 0.3 * at)).abs() < 4.0 * se, "fit {fitted} at {at}");
            let values: Vec<f64> = draws.iter().map(|b| r.dot(b)).collect();
            let i = interval(&values, 0.95);
            assert!((i.mean - fitted).abs() < 4.0 * se / (4_000f64).sqrt(), "mean {} vs {fitted}", i.mean);
            assert!((i.lower - (fitted - 1.96 * se)).abs() < 0.15 * se, "lower {} vs {}", i.lower, fitted - 1.96 * se);
            assert!((i.upper - (fitted + 1.96 * se)).abs() < 0.15 * se, "upper {} vs {}", i.upper, fitted + 1.96 * se);
        }
    }

    /// Two chains of two θ draws each over eight documents in two groups; the second
    /// chain holds the model's topic 0 but found something else in topic 1's place
    /// (flat shares). With `chains=matched` topic 1's effect is composition over the
    /// first chain's draws alone, exactly (each draw's coefficient stream is its index
    /// and topic's), and says it rests on one chain; with `all` it is over all four
    /// draws; topic 0 pools both chains either way. Without chains nothing is said.
    #[test]
    fn a_topic_some_chain_does_not_hold_rests_on_the_chains_that_do() {
        let mut collector = crate::corpus::covariates::CovariateCollector::default();
        for d in 0..8 {
            let map = std::collections::BTreeMap::from([("group".to_string(), serde_json::json!(["a", "b"][d % 2]))]);
            let values = collector.check(&map, &Default::default(), "d").unwrap();
            collector.push(d, values);
        }
        let table = collector.finish(&(0..8).collect::<Vec<_>>()).unwrap().unwrap();
        let request = crate::models::design::DesignRequest { covariates: vec!["group".into()], ..Default::default() };
        let spec = DesignSpec::build(&request, &table).unwrap();
        let rows = spec.rows(&table).unwrap();
        // θ_d0 is high in group a, with a little noise so the regression has residuals.
        let draw = |shift: f32, flat_topic_1: bool| -> Vec<f32> {
            (0..8)
                .flat_map(|d| {
                    let t0 = if d % 2 == 0 { 0.8 } else { 0.2 } + shift * (d as f32 - 3.5) / 10.0;
                    let t1 = if flat_topic_1 { 0.5 } else { 1.0 - t0 };
                    [t0, t1]
                })
                .collect()
        };
        let draws = vec![draw(0.1, false), draw(-0.1, false), draw(0.05, true), draw(-0.05, true)];
        let chains = DrawChains { draws_per_chain: 2, holds: vec![vec![true, true], vec![true, false]] };
        let query = |pooling: ChainPooling| EffectQuery {
            covariate: "group".into(),
            grid: 5,
            contrast: Some(("a".into(), "b".into())),
            level: 0.9,
            topics: None,
            seed: 7,
            chains: pooling,
        };
        let matched = composition(&spec, &rows, 2, &draws, Some(&chains), &query(ChainPooling::Matched)).unwrap();
        let first_chain = composition(&spec, &rows, 2, &draws[..2], None, &query(ChainPooling::Matched)).unwrap();
        let every = composition(&spec, &rows, 2, &draws, None, &query(ChainPooling::All)).unwrap();
        let all = composition(&spec, &rows, 2, &draws, Some(&chains), &query(ChainPooling::All)).unwrap();
        let difference = |e: &Effects, t: usize| e.topics[t].difference.as_ref().unwrap().share;
        assert_eq!(difference(&matched, 1), difference(&first_chain, 1), "topic 1 over the first chain's draws");
        assert_eq!(difference(&matched, 0), difference(&every, 0), "topic 0 over every draw");
        assert_eq!((difference(&all, 0), difference(&all, 1)), (difference(&every, 0), difference(&every, 1)));
        assert_ne!(difference(&matched, 1), difference(&every, 1), "the flat chain would move topic 1's difference");
        assert_eq!(matched.topics.iter().map(|t| t.pooled_chains).collect::<Vec<_>>(), [Some(2), Some(1)]);
        assert_eq!(all.topics.iter().map(|t| t.pooled_chains).collect::<Vec<_>>(), [Some(2), Some(2)]);
        assert_eq!((matched.chains, all.chains, every.chains), (Some(ChainPooling::Matched), Some(ChainPooling::All), None));
        assert!(every.topics.iter().all(|t| t.pooled_chains.is_none()));
    }

    #[test]
    fn a_singular_or_too_small_design_is_refused() {
        assert!(Regression::new(&[1.0, 2.0, 1.0, 2.0, 1.0, 2.0], 3, 2).is_err(), "the second column is twice the first");
        assert!(Regression::new(&[1.0, 0.5], 1, 2).is_err());
    }
}
