//! From a corpus' covariates to the rows of a design matrix: what a model regresses a
//! document's topic weights on.
//!
//! Why it exists: a user names the covariates a fit reads (`covariates: ["year",
//! "party"]`), and every model that takes metadata needs the same columns from them, at
//! fit time and again, unchanged, when new documents are scored or an effect curve is
//! drawn. [`DesignSpec::build`] fixes the columns once from the corpus (an intercept;
//! each continuous or date covariate as itself, or in a cubic B-spline basis of `df`
//! columns as R's `splines::bs(x, df)` and stm's `s()`; each categorical covariate one
//! column per level but the reference level, which is the most frequent unless the fit
//! names another), and [`DesignSpec::row`] evaluates them for any values. The spec is
//! stored with the model, so the columns a model was fitted with are the ones it
//! answers with.
//!
//! A document missing a covariate the fit reads has no row: the fit is refused before
//! it is queued, naming the covariate and how many documents lack it (a documented
//! rule, not an imputation).

use crate::corpus::covariates::{CovariateColumn, CovariateKind, CovariateSummary, CovariateTable, CovariateValues, MISSING_LEVEL};
use crate::models::params::{ParamError, ParamReader};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Cubic splines, as `splines::bs`' default.
pub const SPLINE_DEGREE: usize = 3;
/// Most spline columns per covariate.
pub const MAX_SPLINE_DF: usize = 20;

/// What a fit asks for: the covariates it reads, reference levels other than the most
/// frequent, and spline expansions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DesignRequest {
    pub covariates: Vec<String>,
    pub reference: BTreeMap<String, String>,
    pub splines: BTreeMap<String, usize>,
}

/// The range and mean of a continuous (or date) covariate over the fit's corpus: where
/// an effect curve is drawn and the value it is held at while another varies.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ValueRange {
    pub min: f64,
    pub max: f64,
    pub mean: f64,
}

/// One covariate's columns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum DesignTerm {
    /// A continuous (or date) covariate as itself.
    Linear { covariate: String, values: ValueRange },
    /// A continuous (or date) covariate in a B-spline basis.
    Spline { covariate: String, basis: BSplineBasis, values: ValueRange },
    /// A categorical covariate: one indicator per level but `reference`.
    OneHot { covariate: String, levels: Vec<String>, reference: usize },
}

/// The columns of a design: an intercept, then each term's, in the request's order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DesignSpec {
    pub terms: Vec<DesignTerm>,
}

/// One document's value of one covariate, as a design reads it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CovariateInput<'a> {
    Number(f64),
    Level(&'a str),
}

/// A B-spline basis of `df` columns on `[lower, upper]` (the first basis function is
/// dropped, as `bs(intercept = FALSE)`), with interior knots at quantiles of the data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BSplineBasis {
    /// The full knot vector: `degree + 1` copies of each boundary around the interior
    /// knots.
    pub knots: Vec<f64>,
    pub degree: usize,
}

impl DesignRequest {
    /// The covariates a fit's params name (`covariates`, `reference`, `splines`; each
    /// absent is empty).
    pub fn read(r: &mut ParamReader) -> Result<Self, ParamError> {
        Ok(DesignRequest { covariates: r.string_list_or_empty("covariates")?, reference: r.string_map_or_empty("reference")?, splines: Self::read_splines(r)? })
    }

    /// `splines` alone: columns per covariate in [[`SPLINE_DEGREE`], [`MAX_SPLINE_DF`]]
    /// (checked again against the corpus by [`DesignSpec::check`]), naming
    /// `splines.<name>` when out of range.
    pub fn read_splines(r: &mut ParamReader) -> Result<BTreeMap<String, usize>, ParamError> {
        r.uint_map_or_empty("splines", SPLINE_DEGREE as u64, MAX_SPLINE_DF as u64)
    }
}

impl BSplineBasis {
    /// `df` columns (`df ≥ degree`) with interior knots at the type-7 quantiles of
    /// `values` (as R's `bs`), boundaries at their range.
    pub fn fit(values: &[f64], df: usize, degree: usize) -> Option<Self> {
        if df < degree || values.is_empty() {
            return None;
        }
        let mut sorted: Vec<f64> = values.to_vec();
        sorted.sort_unstable_by(f64::total_cmp);
        let (lower, upper) = (sorted[0], sorted[sorted.len() - 1]);
        if upper <= lower {
            return None;
        }
        let interior = df - degree;
        let mut knots = vec![lower; degree + 1];
        knots.extend((1..=interior).map(|i| quantile7(&sorted, i as f64 / (interior + 1) as f64)));
        knots.extend(std::iter::repeat_n(upper, degree + 1));
        Some(BSplineBasis { knots, degree })
    }

    /// Number of columns.
    pub fn df(&self) -> usize {
        self.knots.len() - self.degree - 2
    }

    /// The basis at `x` (clamped to the boundary knots: beyond the data the curve is
    /// held at its end value).
    pub fn eval(&self, x: f64) -> Vec<f64> {
        let (k, t) = (self.degree, &self.knots);
        let (lower, upper) = (t[0], t[t.len() - 1]);
        let x = x.clamp(lower, upper);
        let n = t.len() - k - 1; // basis functions, the dropped first included
                                 // The knot span holding x: t[span] ≤ x < t[span + 1], the last span at `upper`.
        let span = if x >= upper { n - 1 } else { (k..n).rfind(|&i| t[i] <= x).unwrap_or(k) };
        // Cox–de Boor, the k + 1 functions that are non-zero on the span.
        let mut b = vec![0.0; k + 1];
        b[0] = 1.0;
        for d in 1..=k {
            let mut saved = 0.0;
            for r in 0..d {
                let (left, right) = (t[span + r + 1], t[span + r + 1 - d]);
                let term = if left > right { b[r] / (left - right) } else { 0.0 };
                b[r] = saved + (left - x) * term;
                saved = (x - right) * term;
            }
            b[d] = saved;
        }
        let mut out = vec![0.0; n];
        for (r, v) in b.into_iter().enumerate() {
            out[span - k + r] = v;
        }
        out.remove(0);
        out
    }
}

/// R's type-7 quantile of sorted values.
fn quantile7(sorted: &[f64], p: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * p;
    let (lo, frac) = (h.floor() as usize, h - h.floor());
    if lo + 1 < sorted.len() {
        sorted[lo] + frac * (sorted[lo + 1] - sorted[lo])
    } else {
        sorted[lo]
    }
}

impl DesignSpec {
    /// Checks a request against the corpus' covariate summaries (what is known at
    /// submit): every covariate exists and is given on every document, splines are of
    /// continuous or date covariates, reference levels exist. Errors name the param.
    pub fn check(request: &DesignRequest, summaries: &[CovariateSummary]) -> Result<(), ParamError> {
        let known = || summaries.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join(", ");
        let find = |name: &str| summaries.iter().find(|s| s.name == name);
        for name in &request.covariates {
            let Some(s) = find(name) else {
                let have = if summaries.is_empty() { "none".to_string() } else { known() };
                return Err(ParamError::new("covariates", format!("the corpus has no covariate {name:?} (it has: {have})")));
            };
            if s.missing > 0 {
                return Err(ParamError::new(
                    "covariates",
                    format!("{name:?} is missing on {} document(s): a fit reads covariates every document gives (upload the corpus without those documents, or with a value)", s.missing),
                ));
            }
        }
        for (name, level) in &request.reference {
            let s = find(name).filter(|_| request.covariates.contains(name));
            match s {
                Some(s) if s.kind == CovariateKind::Categorical => {
                    if !s.levels.iter().any(|l| &l.level == level) {
                        return Err(ParamError::new(format!("reference.{name}"), format!("{name:?} has no level {level:?}")));
                    }
                }
                Some(_) => {
                    return Err(ParamError::new(
                        format!("reference.{name}"),
                        format!("{name:?} is not categorical: only a categorical covariate has a reference level"),
                    ))
                }
                None => return Err(ParamError::new(format!("reference.{name}"), format!("{name:?} is not among the fit's covariates"))),
            }
        }
        for (name, &df) in &request.splines {
            match find(name).filter(|_| request.covariates.contains(name)) {
                Some(s) if s.kind != CovariateKind::Categorical => {
                    if !(SPLINE_DEGREE..=MAX_SPLINE_DF).contains(&df) {
                        return Err(ParamError::new(
                            format!("splines.{name}"),
                            format!("must be between {SPLINE_DEGREE} and {MAX_SPLINE_DF} columns, got {df}"),
                        ));
                    }
                    if s.min == s.max {
                        return Err(ParamError::new(format!("splines.{name}"), format!("{name:?} takes one value only: it has no curve")));
                    }
                }
                Some(_) => {
                    return Err(ParamError::new(
                        format!("splines.{name}"),
                        format!("{name:?} is categorical: only a continuous or date covariate has a spline basis"),
                    ))
                }
                None => return Err(ParamError::new(format!("splines.{name}"), format!("{name:?} is not among the fit's covariates"))),
            }
        }
        Ok(())
    }

    /// The design of a checked request on the corpus' covariates (errors as
    /// [`Self::check`], for a request that was not checked against this table).
    pub fn build(request: &DesignRequest, table: &CovariateTable) -> Result<DesignSpec, ParamError> {
        let summaries = table.summaries();
        Self::check(request, &summaries)?;
        let column = |name: &str| table.column(name).expect("checked: the covariate exists");
        let summary = |name: &str| summaries.iter().find(|s| s.name == name).expect("checked: the covariate exists");
        let terms = request
            .covariates
            .iter()
            .map(|name| match &column(name).values {
                CovariateValues::Numeric { values: xs, .. } => {
                    let s = summary(name);
                    let values = ValueRange {
                        min: s.min.expect("checked: no value is missing"),
                        max: s.max.expect("checked: no value is missing"),
                        mean: s.mean.expect("checked: no value is missing"),
                    };
                    match request.splines.get(name) {
                        Some(&df) => {
                            let basis = BSplineBasis::fit(xs, df, SPLINE_DEGREE).expect("checked: df and range");
                            DesignTerm::Spline { covariate: name.clone(), basis, values }
                        }
                        None => DesignTerm::Linear { covariate: name.clone(), values },
                    }
                }
                CovariateValues::Categorical { levels, .. } => {
                    let reference = request.reference.get(name).and_then(|r| levels.iter().position(|l| l == r)).unwrap_or(0);
                    DesignTerm::OneHot { covariate: name.clone(), levels: levels.clone(), reference }
                }
            })
            .collect();
        Ok(DesignSpec { terms })
    }

    /// Column names: `(intercept)`, then `year`, `s(year)1`.., `party=blue` (each level
    /// but the reference).
    pub fn column_names(&self) -> Vec<String> {
        let mut names = vec!["(intercept)".to_string()];
        for term in &self.terms {
            match term {
                DesignTerm::Linear { covariate, .. } => names.push(covariate.clone()),
                DesignTerm::Spline { covariate, basis, .. } => names.extend((1..=basis.df()).map(|j| format!("s({covariate}){j}"))),
                DesignTerm::OneHot { covariate, levels, reference } => {
                    names.extend(levels.iter().enumerate().filter(|(i, _)| i != reference).map(|(_, l)| format!("{covariate}={l}")))
                }
            }
        }
        names
    }

    /// Bytes the spec holds on the heap ([`crate::heap_size`]).
    pub fn memory_bytes(&self) -> usize {
        use crate::heap_size::{nested, string, strings, vec};
        nested(&self.terms, |t| match t {
            DesignTerm::Linear { covariate, .. } => string(covariate),
            DesignTerm::Spline { covariate, basis, .. } => string(covariate) + vec(&basis.knots),
            DesignTerm::OneHot { covariate, levels, .. } => string(covariate) + strings(levels),
        })
    }

    /// Number of columns.
    pub fn width(&self) -> usize {
        self.column_names().len()
    }

    /// The row of one document, its values looked up by covariate name; `Err` names a
    /// covariate that is absent, of the wrong type, or a level the model never saw.
    pub fn row<'a>(&self, value_of: impl Fn(&str) -> Option<CovariateInput<'a>>) -> Result<Vec<f64>, String> {
        let mut row = vec![1.0];
        for term in &self.terms {
            match term {
                DesignTerm::Linear { covariate, .. } | DesignTerm::Spline { covariate, .. } => {
                    let x = match value_of(covariate) {
                        Some(CovariateInput::Number(x)) if x.is_finite() => x,
                        Some(_) => return Err(format!("{covariate:?} must be a number")),
                        None => return Err(format!("{covariate:?} is missing")),
                    };
                    match term {
                        DesignTerm::Spline { basis, .. } => row.extend(basis.eval(x)),
                        _ => row.push(x),
                    }
                }
                DesignTerm::OneHot { covariate, levels, reference } => {
                    let level = match value_of(covariate) {
                        Some(CovariateInput::Level(l)) => l,
                        Some(_) => return Err(format!("{covariate:?} must be one of its levels (a string)")),
                        None => return Err(format!("{covariate:?} is missing")),
                    };
                    let at = levels
                        .iter()
                        .position(|l| l == level)
                        .ok_or_else(|| format!("{covariate:?} has no level {level:?} (levels: {})", levels.join(", ")))?;
                    row.extend(levels.iter().enumerate().filter(|(i, _)| i != reference).map(|(i, _)| if i == at { 1.0 } else { 0.0 }));
                }
            }
        }
        Ok(row)
    }

    /// The rows of every document of `table` (D × width, row-major); `Err` as
    /// [`Self::row`] for a document missing a covariate.
    pub fn rows(&self, table: &CovariateTable) -> Result<Vec<f64>, String> {
        let mut out = Vec::with_capacity(table.num_documents() * self.width());
        for d in 0..table.num_documents() {
            out.extend(self.row(|name| table.column(name).and_then(|c| value_at(c, d)))?);
        }
        Ok(out)
    }
}

/// Document `d`'s value of `column` (`None` when missing).
fn value_at(column: &CovariateColumn, d: usize) -> Option<CovariateInput<'_>> {
    match &column.values {
        CovariateValues::Numeric { values, .. } => Some(values[d]).filter(|x| !x.is_nan()).map(CovariateInput::Number),
        CovariateValues::Categorical { levels, codes } => (codes[d] != MISSING_LEVEL).then(|| CovariateInput::Level(levels[codes[d] as usize].as_str())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::covariates::CovariateCollector;
    use serde_json::{json, Value};

    fn table(docs: &[Value]) -> CovariateTable {
        let mut c = CovariateCollector::default();
        for (i, d) in docs.iter().enumerate() {
            let map: BTreeMap<String, Value> = serde_json::from_value(d.clone()).unwrap();
            let values = c.check(&map, &BTreeMap::new(), "d").unwrap();
            c.push(i, values);
        }
        c.finish(&(0..docs.len()).collect::<Vec<_>>()).unwrap().unwrap()
    }

    fn request(covariates: &[&str]) -> DesignRequest {
        DesignRequest { covariates: covariates.iter().map(|s| s.to_string()).collect(), ..DesignRequest::default() }
    }

    /// The basis of `splines::bs(x, df = 5)` on x = 0, 1, ..., 10 (interior knots at
    /// the 1/3 and 2/3 quantiles, 10/3 and 20/3) at x = 0, 2.5, 5 and 10: the values are
    /// SciPy 1.17's `BSpline.design_matrix(x, t, 3)` on the same knot vector, without
    /// its first column.
    #[test]
    fn the_spline_basis_is_rs_bs() {
        let x: Vec<f64> = (0..=10).map(f64::from).collect();
        let basis = BSplineBasis::fit(&x, 5, 3).unwrap();
        assert_eq!(basis.df(), 5);
        let third = 10.0 / 3.0;
        let expected_knots = [0.0, 0.0, 0.0, 0.0, third, 2.0 * third, 10.0, 10.0, 10.0, 10.0];
        assert!(basis.knots.iter().zip(expected_knots).all(|(a, b)| (a - b).abs() < 1e-12), "{:?}", basis.knots);
        let expected: [(f64, [f64; 5]); 4] = [
            (0.0, [0.0, 0.0, 0.0, 0.0, 0.0]),
            (2.5, [0.45703125, 0.45703125, 0.0703125, 0.0, 0.0]),
            (5.0, [0.03125, 0.46875, 0.46875, 0.03125, 0.0]),
            (10.0, [0.0, 0.0, 0.0, 0.0, 1.0]),
        ];
        for (at, want) in expected {
            let got = basis.eval(at);
            for (g, w) in got.iter().zip(want) {
                assert!((g - w).abs() < 1e-12, "at {at}: {got:?} against {want:?}");
            }
        }
        // With the dropped first function the basis sums to one everywhere.
        for i in 0..=100 {
            let v = i as f64 / 10.0;
            let first = if v < third { (1.0 - v / third).powi(3) } else { 0.0 };
            assert!((basis.eval(v).iter().sum::<f64>() + first - 1.0).abs() < 1e-12, "at {v}");
        }
        assert_eq!(basis.eval(-3.0), basis.eval(0.0), "clamped below");
        assert_eq!(basis.eval(42.0), basis.eval(10.0), "clamped above");
        assert!(BSplineBasis::fit(&[1.0, 1.0], 5, 3).is_none() && BSplineBasis::fit(&x, 2, 3).is_none());
    }

    #[test]
    fn rows_have_an_intercept_numbers_splines_and_indicators_but_the_reference() {
        let t = table(&[
            json!({"year": 2000, "party": "green"}),
            json!({"year": 2005, "party": "blue"}),
            json!({"year": 2010, "party": "green"}),
            json!({"year": 2020, "party": "red"}),
        ]);
        let spec = DesignSpec::build(&request(&["party", "year"]), &t).unwrap();
        assert_eq!(spec.column_names(), ["(intercept)", "party=blue", "party=red", "year"], "green, the most frequent, is the reference");
        assert_eq!(spec.rows(&t).unwrap(), vec![1., 0., 0., 2000., 1., 1., 0., 2005., 1., 0., 0., 2010., 1., 0., 1., 2020.]);
        let other = DesignRequest {
            reference: BTreeMap::from([("party".into(), "red".into())]),
            splines: BTreeMap::from([("year".into(), 4)]),
            ..request(&["year", "party"])
        };
        let spec = DesignSpec::build(&other, &t).unwrap();
        assert_eq!(spec.column_names(), ["(intercept)", "s(year)1", "s(year)2", "s(year)3", "s(year)4", "party=green", "party=blue"]);
        let row = spec.row(|n| match n {
            "year" => Some(CovariateInput::Number(2020.0)),
            _ => Some(CovariateInput::Level("red")),
        });
        assert_eq!(row.unwrap(), vec![1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0]);
        assert!(spec.row(|_| Some(CovariateInput::Level("purple"))).unwrap_err().contains("must be a number"));
        assert!(spec
            .row(|n| if n == "year" { Some(CovariateInput::Number(1.0)) } else { Some(CovariateInput::Level("purple")) })
            .unwrap_err()
            .contains("no level \"purple\""));
        assert!(spec.row(|_| None).unwrap_err().contains("missing"));
    }

    #[test]
    fn requests_are_checked_naming_the_param() {
        let t = table(&[json!({"year": 2000, "party": "a", "gap": 1}), json!({"year": 2001, "party": "b", "gap": null}), json!({"year": 2001, "party": "a"})]);
        let s = t.summaries();
        let err = |r: DesignRequest| DesignSpec::check(&r, &s).unwrap_err();
        let e = err(request(&["yaer"]));
        assert_eq!(e.field, "covariates");
        assert!(e.message.contains("no covariate \"yaer\"") && e.message.contains("gap, party, year"), "{}", e.message);
        let e = err(request(&["gap"]));
        assert!(e.message.contains("missing on 2 document(s)"), "{}", e.message);
        assert_eq!(err(DesignRequest { reference: BTreeMap::from([("party".into(), "z".into())]), ..request(&["party"]) }).field, "reference.party");
        assert_eq!(err(DesignRequest { reference: BTreeMap::from([("year".into(), "a".into())]), ..request(&["year"]) }).field, "reference.year");
        assert_eq!(err(DesignRequest { reference: BTreeMap::from([("party".into(), "a".into())]), ..request(&["year"]) }).field, "reference.party");
        assert_eq!(err(DesignRequest { splines: BTreeMap::from([("party".into(), 4)]), ..request(&["party"]) }).field, "splines.party");
        assert_eq!(err(DesignRequest { splines: BTreeMap::from([("year".into(), 2)]), ..request(&["year"]) }).field, "splines.year");
        assert_eq!(err(DesignRequest { splines: BTreeMap::from([("year".into(), 4)]), ..request(&[]) }).field, "splines.year");
        assert!(DesignSpec::check(&DesignRequest { splines: BTreeMap::from([("year".into(), 3)]), ..request(&["year", "party"]) }, &s).is_ok());
    }
}
