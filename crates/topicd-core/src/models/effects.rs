//! Covariate effects: how a topic's expected share moves with a document's metadata,
//! as a posterior mean and an equal-tailed interval.
//!
//! Why it exists: the first thing users of R's stm ask after a fit (`estimateEffect`):
//! topic prevalence along a continuous covariate, across the levels of a categorical
//! one, and the difference between two values. This module holds what every method
//! shares: the question ([`EffectQuery`]), the answer ([`Effects`]) and the summaries of
//! draws (mean and quantile interval). A family computes the draws its own way (DCNT:
//! the model's own prior under each kept draw of its globals, [`super::dcnt::effects`]).

use serde::Serialize;
use serde_json::Value;

/// Most grid points of a continuous covariate's curve.
pub const MAX_GRID: usize = 200;

/// What `GET /v1/models/{id}/effects` asks.
#[derive(Debug, Clone, PartialEq)]
pub struct EffectQuery {
    pub covariate: String,
    /// Points along a continuous covariate's range (default 25).
    pub grid: usize,
    /// Two levels, or two values, whose shares are compared.
    pub contrast: Option<(String, String)>,
    /// The intervals' probability (default 0.95).
    pub level: f64,
    /// Topics to report (default all).
    pub topics: Option<Vec<usize>>,
    /// Seed of the Monte Carlo integrals (same seed, same answer).
    pub seed: u64,
}

/// A posterior mean and its equal-tailed interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Interval {
    pub mean: f64,
    pub lower: f64,
    pub upper: f64,
}

/// One point of a topic's curve: the covariate's value (a number, or a level's name).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EffectPoint {
    pub x: Value,
    #[serde(flatten)]
    pub share: Interval,
}

/// The difference of a topic's expected share between `a` and `b`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Difference {
    pub a: Value,
    pub b: Value,
    #[serde(flatten)]
    pub share: Interval,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TopicEffect {
    pub id: usize,
    pub points: Vec<EffectPoint>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub difference: Option<Difference>,
}

/// The answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Effects {
    pub covariate: String,
    /// `continuous`, `date` or `categorical`.
    pub kind: &'static str,
    /// `model`: the model's own prior under each kept draw of its parameters.
    pub method: &'static str,
    /// Posterior draws the intervals are taken over.
    pub draws: usize,
    pub level: f64,
    /// What every other covariate is held at (its mean, or its reference level).
    pub held_at: serde_json::Map<String, Value>,
    /// Monte Carlo samples per draw and point, and the largest standard error they
    /// leave on a posterior mean, against a tenth of its interval's width.
    pub monte_carlo: MonteCarlo,
    pub topics: Vec<TopicEffect>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MonteCarlo {
    pub samples: usize,
    pub max_standard_error: f64,
    /// The largest ratio of a (point, topic)'s Monte Carlo standard error of the
    /// posterior mean to a tenth of its interval's width.
    pub max_ratio_to_tenth_of_width: f64,
    /// Whether every ratio is at most 1 (else the samples reached their cap).
    pub within: bool,
}

/// Mean and equal-tailed `level` interval (type-7 quantiles) of draws.
pub fn interval(draws: &[f64], level: f64) -> Interval {
    let mut sorted = draws.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    let q = |p: f64| {
        let h = (sorted.len() - 1) as f64 * p;
        let lo = h.floor() as usize;
        let hi = (lo + 1).min(sorted.len() - 1);
        sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
    };
    let tail = (1.0 - level) / 2.0;
    Interval { mean: draws.iter().sum::<f64>() / draws.len() as f64, lower: q(tail), upper: q(1.0 - tail) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_are_type_7_quantiles() {
        let draws: Vec<f64> = (0..=100).map(f64::from).rev().collect();
        let i = interval(&draws, 0.9);
        assert_eq!(i.mean, 50.0);
        assert!((i.lower - 5.0).abs() < 1e-12 && (i.upper - 95.0).abs() < 1e-12, "{i:?}");
        let i = interval(&[1.0, 2.0], 0.5);
        assert_eq!((i.lower, i.upper), (1.25, 1.75));
        assert_eq!(interval(&[3.0], 0.95), Interval { mean: 3.0, lower: 3.0, upper: 3.0 });
    }
}
