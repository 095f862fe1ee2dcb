//! Where a continuous covariate's values lie among the documents that share the levels
//! an effect holds the other covariates at.
//!
//! Why it exists: an effect curve (`/effects`) is drawn over the covariate's whole range
//! in the corpus, but with a categorical covariate held at a level the documents of that
//! level may cover only part of it (every `group = other` document dated 2000 to 2010,
//! the curve drawn to 2020). Readers of stm see a rug under `plot.estimateEffect`; the
//! console shades this range, draws the rug, and says when a curve extrapolates.

use super::covariates::{CovariateKind, CovariateTable, CovariateValues};
use serde::Serialize;

/// The most values a rug carries: order statistics spread evenly over the sorted values.
pub const RUG_VALUES: usize = 400;

/// The documents' values of one continuous or date covariate, among those that have the
/// held levels.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ValueSupport {
    /// `continuous` or `date` (fractional years).
    pub kind: CovariateKind,
    /// Documents that have every held level and a value of the covariate.
    pub documents: usize,
    pub min: f64,
    pub max: f64,
    /// At most [`RUG_VALUES`] of the values, sorted: all of them, or evenly spaced order
    /// statistics (the smallest and largest always among them).
    pub values: Vec<f64>,
}

impl CovariateTable {
    /// Where `covariate`'s values lie among the documents whose categorical covariates
    /// have the `held` levels (a held covariate that is not categorical is not a
    /// condition: a number held at its mean matches no document exactly). `None` when
    /// the covariate is absent or categorical, or no document qualifies.
    pub fn support(&self, covariate: &str, held: &[(&str, &str)]) -> Option<ValueSupport> {
        let column = self.column(covariate)?;
        let CovariateValues::Numeric { values, .. } = &column.values else { return None };
        let conditions: Vec<(&[u32], Option<u32>)> = held
            .iter()
            .filter_map(|(name, level)| match &self.column(name)?.values {
                CovariateValues::Categorical { levels, codes } => Some((codes.as_slice(), levels.iter().position(|l| l == level).map(|i| i as u32))),
                CovariateValues::Numeric { .. } => None,
            })
            .collect();
        let has_levels = |d: usize| conditions.iter().all(|(codes, level)| Some(codes[d]) == *level);
        let mut kept: Vec<f64> = (0..values.len()).filter(|&d| !values[d].is_nan() && has_levels(d)).map(|d| values[d]).collect();
        if kept.is_empty() {
            return None;
        }
        kept.sort_by(f64::total_cmp);
        let (min, max) = (kept[0], kept[kept.len() - 1]);
        Some(ValueSupport { kind: column.kind(), documents: kept.len(), min, max, values: rug(&kept) })
    }
}

/// At most [`RUG_VALUES`] of `sorted`: all, or the order statistics at evenly spaced ranks.
fn rug(sorted: &[f64]) -> Vec<f64> {
    if sorted.len() <= RUG_VALUES {
        return sorted.to_vec();
    }
    (0..RUG_VALUES).map(|i| sorted[i * (sorted.len() - 1) / (RUG_VALUES - 1)]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::covariates::CovariateColumn;

    /// Six documents: `year` 2000..2005 (the fourth missing), `group` a, a, b, b, b, a.
    fn table() -> CovariateTable {
        CovariateTable {
            columns: vec![
                CovariateColumn {
                    name: "group".into(),
                    values: CovariateValues::Categorical { levels: vec!["b".into(), "a".into()], codes: vec![1, 1, 0, 0, 0, 1] },
                },
                CovariateColumn {
                    name: "year".into(),
                    values: CovariateValues::Numeric { date: false, values: vec![2000.0, 2001.0, 2002.0, f64::NAN, 2004.0, 2005.0] },
                },
            ],
        }
    }

    #[test]
    fn support_counts_only_documents_with_the_held_levels() {
        let t = table();
        let all = t.support("year", &[]).unwrap();
        assert_eq!((all.documents, all.min, all.max), (5, 2000.0, 2005.0), "the missing year is left out");
        let a = t.support("year", &[("group", "a")]).unwrap();
        assert_eq!((a.documents, a.min, a.max, a.values.clone()), (3, 2000.0, 2005.0, vec![2000.0, 2001.0, 2005.0]));
        let b = t.support("year", &[("group", "b")]).unwrap();
        assert_eq!((b.documents, b.min, b.max), (2, 2002.0, 2004.0), "b's third document has no year");
        assert_eq!(b.kind, CovariateKind::Continuous);
    }

    #[test]
    fn no_support_for_an_unknown_level_a_categorical_covariate_or_a_missing_name() {
        let t = table();
        assert_eq!(t.support("year", &[("group", "c")]), None, "no document has level c");
        assert_eq!(t.support("group", &[]), None, "a categorical covariate has levels, not a range");
        assert_eq!(t.support("month", &[]), None);
        // A held continuous covariate is no condition (its mean matches no document).
        assert_eq!(t.support("year", &[("year", "2002.5")]).unwrap().documents, 5);
    }

    #[test]
    fn a_long_rug_keeps_evenly_spaced_order_statistics_with_both_ends() {
        let sorted: Vec<f64> = (0..1000).map(f64::from).collect();
        let r = rug(&sorted);
        assert_eq!(r.len(), RUG_VALUES);
        assert_eq!((r[0], r[RUG_VALUES - 1]), (0.0, 999.0));
        assert!(r.windows(2).all(|w| w[0] < w[1]), "distinct ranks, in order");
        assert_eq!(rug(&sorted[..10]), sorted[..10].to_vec(), "a short list is kept whole");
    }
}
