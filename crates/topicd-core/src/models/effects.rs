//! Covariate effects: how a topic's expected share moves with a document's metadata,
//! as a posterior mean and an equal-tailed interval.
//!
//! Why it exists: the first thing users of R's stm ask after a fit (`estimateEffect`):
//! topic prevalence along a continuous covariate, across the levels of a categorical
//! one, and the difference between two values. This module holds what every method
//! shares: the question ([`EffectQuery`]), the answer ([`Effects`]) and the summaries of
//! draws (mean and quantile interval). A family computes the draws its own way (DCNT:
//! the model's own prior under each kept draw of its globals, [`super::dcnt::effects`]).

use super::design::{CovariateInput, DesignSpec, DesignTerm};
use super::ModelError;
use crate::corpus::covariates::fractional_year;
use serde::Serialize;
use serde_json::{json, Value};

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
    /// Which chains' draws a topic's effect pools, in a fit of several chains.
    pub chains: ChainPooling,
}

/// Which chains' draws a topic's effect pools (the model method, several chains).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChainPooling {
    /// Every chain's, each moved onto the model's topics by its alignment, whether or
    /// not its matched topic is the same topic.
    All,
    /// Only those of the chains that hold the topic (the reference chain, whose topics
    /// the model serves, and each other whose matched topic is at least 0.5 similar),
    /// as the served topic's words are pooled: no curve mixes different topics. With
    /// the reference chosen by consensus, its 95 % intervals cover the truth on corpora
    /// drawn from DCNT 92 % of the time, against 94 % for every chain's draws and 86 %
    /// with chain 0 as the reference (bench/README.md, decision 0071).
    #[default]
    Matched,
}

/// A document's topic proportions and the interval of each.
pub type ProportionsWithIntervals = (Vec<f64>, Vec<Interval>);

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
    /// For a model of several chains whose effects pool their draws: how many chains'
    /// draws this topic's effect rests on: with [`ChainPooling::Matched`] those where
    /// the topic is matched (the reference chain and every other that holds it; its
    /// `stability`), every chain with [`ChainPooling::All`]. Absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pooled_chains: Option<usize>,
}

/// The answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Effects {
    pub covariate: String,
    /// `continuous`, `date` or `categorical`.
    pub kind: &'static str,
    /// `model`: the model's own prior under each kept draw of its parameters;
    /// `composition`: a regression of kept draws of the documents' topic proportions on
    /// the covariates (stm's `estimateEffect`).
    pub method: &'static str,
    /// Posterior draws the intervals are taken over.
    pub draws: usize,
    /// Composition: coefficient draws per posterior draw (the intervals are over
    /// draws × simulations values).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub simulations: Option<usize>,
    pub level: f64,
    /// What every other covariate is held at (its mean, or its reference level).
    pub held_at: serde_json::Map<String, Value>,
    /// For a model of several chains: which chains' draws each topic's effect pools
    /// (each topic's `pooled_chains` says how many); absent for one chain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chains: Option<ChainPooling>,
    /// Monte Carlo samples per draw and point, and the largest standard error they
    /// leave on a posterior mean, against a tenth of its interval's width (the model
    /// method; none for composition, which integrates nothing).
    pub monte_carlo: Option<MonteCarlo>,
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

/// The covariate a design term reads.
pub fn covariate_of(term: &DesignTerm) -> &str {
    match term {
        DesignTerm::Linear { covariate, .. } | DesignTerm::Spline { covariate, .. } | DesignTerm::OneHot { covariate, .. } => covariate,
    }
}

/// A covariate's value at a point of the curve: as a design reads it, and as the
/// answer shows it.
#[derive(Debug, Clone, PartialEq)]
pub enum PointValue {
    Number(f64),
    Level(String),
}

impl PointValue {
    pub fn input(&self) -> CovariateInput<'_> {
        match self {
            PointValue::Number(x) => CovariateInput::Number(*x),
            PointValue::Level(l) => CovariateInput::Level(l),
        }
    }

    pub fn json(&self) -> Value {
        match self {
            PointValue::Number(x) => json!(x),
            PointValue::Level(l) => json!(l),
        }
    }
}

/// What a query asks of a model whose design is `spec`, checked: the covariate's
/// points (a grid along a continuous one, the levels of a categorical one), the
/// contrast's two sides, every other covariate's held value, the design rows of the
/// points followed by the contrast's two sides, and the topics to report of `k`.
#[derive(Debug, Clone)]
pub struct EffectPlan {
    pub kind: &'static str,
    pub points: Vec<PointValue>,
    pub contrast: Option<(PointValue, PointValue)>,
    pub held: Vec<(String, PointValue)>,
    pub rows: Vec<Vec<f64>>,
    pub topics: Vec<usize>,
}

/// Check `query` against the design and the model's `k` topics and lay out its points
/// (errors name the query parameter at fault, as `name: why`).
pub fn plan(spec: &DesignSpec, query: &EffectQuery, k: usize) -> Result<EffectPlan, ModelError> {
    let invalid = |m: String| ModelError::Invalid(m);
    let names: Vec<&str> = spec.terms.iter().map(covariate_of).collect();
    let term = spec
        .terms
        .iter()
        .find(|t| covariate_of(t) == query.covariate)
        .ok_or_else(|| invalid(format!("covariate: the model reads no covariate {:?} (it reads {})", query.covariate, names.join(", "))))?;
    if !(2..=MAX_GRID).contains(&query.grid) {
        return Err(invalid(format!("grid: must be between 2 and {MAX_GRID}, got {}", query.grid)));
    }
    if !(query.level > 0.0 && query.level < 1.0) {
        return Err(invalid(format!("level: must be strictly between 0 and 1, got {}", query.level)));
    }
    let topics: Vec<usize> = query.topics.clone().unwrap_or_else(|| (0..k).collect());
    if let Some(&bad) = topics.iter().find(|&&t| t >= k) {
        return Err(invalid(format!("topics: the model has topics 0 to {}, got {bad}", k - 1)));
    }
    let (kind, points) = match term {
        DesignTerm::Linear { values, .. } | DesignTerm::Spline { values, .. } => {
            let step = (values.max - values.min) / (query.grid - 1) as f64;
            ("continuous", (0..query.grid).map(|i| PointValue::Number(values.min + step * i as f64)).collect::<Vec<_>>())
        }
        DesignTerm::OneHot { levels, .. } => ("categorical", levels.iter().cloned().map(PointValue::Level).collect()),
    };
    let contrast = query.contrast.as_ref().map(|(a, b)| Ok::<_, ModelError>((parse_value(term, a)?, parse_value(term, b)?))).transpose()?;
    let held = held_values(spec, &query.covariate);
    let mut values: Vec<PointValue> = points.clone();
    if let Some((a, b)) = &contrast {
        values.extend([a.clone(), b.clone()]);
    }
    let rows: Vec<Vec<f64>> = values
        .iter()
        .map(|x| {
            spec.row(|name| if name == query.covariate { Some(x.input()) } else { held.iter().find(|(n, _)| n == name).map(|(_, v)| v.input()) })
                .map_err(|e| invalid(format!("contrast: {e}")))
        })
        .collect::<Result<_, _>>()?;
    Ok(EffectPlan { kind, points, contrast, held, rows, topics })
}

/// A contrast's side: a level of a categorical covariate, a number of a continuous one
/// (or a date, read as the fractional year a date covariate stores).
fn parse_value(term: &DesignTerm, text: &str) -> Result<PointValue, ModelError> {
    match term {
        DesignTerm::OneHot { covariate, levels, .. } => levels
            .iter()
            .find(|l| l.as_str() == text)
            .map(|l| PointValue::Level(l.clone()))
            .ok_or_else(|| ModelError::Invalid(format!("contrast: {covariate:?} has no level {text:?} (levels: {})", levels.join(", ")))),
        _ => match text.parse::<f64>().ok().or_else(|| fractional_year(text)) {
            Some(x) if x.is_finite() => Ok(PointValue::Number(x)),
            _ => Err(ModelError::Invalid(format!("contrast: {text:?} is neither a number nor a date (YYYY-MM-DD or RFC 3339)"))),
        },
    }
}

/// Every covariate but `varied`, held at its mean (continuous) or reference level.
fn held_values(spec: &DesignSpec, varied: &str) -> Vec<(String, PointValue)> {
    spec.terms
        .iter()
        .filter(|t| covariate_of(t) != varied)
        .map(|t| match t {
            DesignTerm::Linear { covariate, values } | DesignTerm::Spline { covariate, values, .. } => (covariate.clone(), PointValue::Number(values.mean)),
            DesignTerm::OneHot { covariate, levels, reference } => (covariate.clone(), PointValue::Level(levels[*reference].clone())),
        })
        .collect()
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

    /// A continuous side of a contrast is a number or a date (the fractional year a date
    /// covariate was stored as); anything else names what it accepts.
    #[test]
    fn contrast_sides_take_numbers_and_dates() {
        let year = DesignTerm::Linear { covariate: "date".into(), values: super::super::design::ValueRange { min: 2000.0, max: 2020.0, mean: 2010.0 } };
        let value = |text: &str| parse_value(&year, text).map_err(|e| e.to_string());
        assert_eq!(value("2015.5"), Ok(PointValue::Number(2015.5)));
        assert_eq!(value("2019-07-02T12:00:00Z"), Ok(PointValue::Number(2019.5)));
        assert_eq!(value("2020-01-01"), Ok(PointValue::Number(2020.0)));
        let err = value("2020-13-01").unwrap_err();
        assert!(err.contains("neither a number nor a date"), "{err}");
    }
}
