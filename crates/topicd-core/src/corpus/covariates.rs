//! Document covariates: the metadata whose effect on what documents are about users ask
//! for (a year, a score, a section, a party).
//!
//! Why it exists: a document may carry `covariates`, numbers (continuous), strings
//! (categorical) or dates (`"2019-03-02"` or RFC 3339, kept as a fractional year). Each
//! covariate has one kind across the corpus, decided here once: numbers throughout are
//! continuous, strings that are all dates are a date, other strings are categorical
//! (levels ordered most frequent first, so the first is the default reference level of
//! a one-hot encoding). A missing value (`null`, or the key absent) is counted, never
//! filled in: what a model does with it is the model's rule. `features` (numbers only)
//! are the numeric subset and are collected here too. The table is stored with the
//! corpus ([`super::order`]'s covariate trailer) and summarised in its upload answer.
//!
//! [`CovariateCollector`] gathers values document by document (refusing a value whose
//! type disagrees with earlier documents' before anything is recorded);
//! [`CovariateCollector::finish`] builds the [`CovariateTable`] of the kept documents.

use super::CorpusError;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// Most distinct covariate names a corpus may carry.
pub const MAX_COVARIATES: usize = 200;
/// Most levels a categorical covariate may have (a one-hot column each).
pub const MAX_LEVELS: usize = 1_000;
/// Longest level name, in bytes.
pub const MAX_LEVEL_BYTES: usize = 200;
/// The code of a missing value of a categorical covariate.
pub const MISSING_LEVEL: u32 = u32::MAX;

/// One document's value of one covariate, as uploaded.
#[derive(Debug, Clone, PartialEq)]
pub enum RawCovariate {
    Number(f64),
    Text(String),
    Missing,
}

/// What a covariate is, across the corpus.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CovariateKind {
    Continuous,
    /// Dates, kept as fractional years (continuous in every model).
    Date,
    Categorical,
}

/// One covariate's values over the corpus' documents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CovariateColumn {
    pub name: String,
    pub values: CovariateValues,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum CovariateValues {
    /// One number per document, NaN where missing; `date`: fractional years of dates.
    Numeric { date: bool, values: Vec<f64> },
    /// Level names, most frequent first (ties by name), and one code per document
    /// indexing them ([`MISSING_LEVEL`] where missing).
    Categorical { levels: Vec<String>, codes: Vec<u32> },
}

/// Every covariate of a corpus, sorted by name, one value per kept document.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CovariateTable {
    pub columns: Vec<CovariateColumn>,
}

/// A level of a categorical covariate and how many documents have it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelCount {
    pub level: String,
    pub documents: usize,
}

/// What the corpus summary says of one covariate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CovariateSummary {
    pub name: String,
    pub kind: CovariateKind,
    /// Documents without a value.
    pub missing: usize,
    /// Continuous and date covariates: the range and mean of the given values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean: Option<f64>,
    /// Categorical covariates: the levels, most frequent first; the first is the
    /// default reference level of a one-hot encoding.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub levels: Vec<LevelCount>,
}

impl CovariateColumn {
    pub fn kind(&self) -> CovariateKind {
        match &self.values {
            CovariateValues::Numeric { date: false, .. } => CovariateKind::Continuous,
            CovariateValues::Numeric { date: true, .. } => CovariateKind::Date,
            CovariateValues::Categorical { .. } => CovariateKind::Categorical,
        }
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        match &self.values {
            CovariateValues::Numeric { values, .. } => values.len(),
            CovariateValues::Categorical { codes, .. } => codes.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether document `d` has no value.
    pub fn is_missing(&self, d: usize) -> bool {
        match &self.values {
            CovariateValues::Numeric { values, .. } => values[d].is_nan(),
            CovariateValues::Categorical { codes, .. } => codes[d] == MISSING_LEVEL,
        }
    }

    pub fn summary(&self) -> CovariateSummary {
        let missing = (0..self.len()).filter(|&d| self.is_missing(d)).count();
        let mut s = CovariateSummary { name: self.name.clone(), kind: self.kind(), missing, min: None, max: None, mean: None, levels: Vec::new() };
        match &self.values {
            CovariateValues::Numeric { values, .. } => {
                let given: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
                if !given.is_empty() {
                    s.min = given.iter().copied().reduce(f64::min);
                    s.max = given.iter().copied().reduce(f64::max);
                    s.mean = Some(given.iter().sum::<f64>() / given.len() as f64);
                }
            }
            CovariateValues::Categorical { levels, codes } => {
                let mut counts = vec![0usize; levels.len()];
                codes.iter().filter(|&&c| c != MISSING_LEVEL).for_each(|&c| counts[c as usize] += 1);
                s.levels = levels.iter().zip(counts).map(|(level, documents)| LevelCount { level: level.clone(), documents }).collect();
            }
        }
        s
    }
}

impl CovariateTable {
    pub fn column(&self, name: &str) -> Option<&CovariateColumn> {
        self.columns.iter().find(|c| c.name == name)
    }

    pub fn summaries(&self) -> Vec<CovariateSummary> {
        self.columns.iter().map(CovariateColumn::summary).collect()
    }

    /// Number of documents (0 for a table without columns).
    pub fn num_documents(&self) -> usize {
        self.columns.first().map_or(0, CovariateColumn::len)
    }
}

/// Reads one uploaded value: a finite number, a non-empty string, or `null` (missing).
/// `at` is the field's path for errors (`documents[3].covariates.year`).
pub fn read_value(value: &Value, at: &str) -> Result<RawCovariate, CorpusError> {
    match value {
        Value::Null => Ok(RawCovariate::Missing),
        Value::Number(n) => match n.as_f64() {
            Some(x) if x.is_finite() => Ok(RawCovariate::Number(x)),
            _ => Err(CorpusError::field(at, format!("a covariate must be a finite number, a string or null, got {n}"))),
        },
        Value::String(s) if s.trim().is_empty() => Err(CorpusError::field(at, "a covariate string must not be empty (use null for a missing value)")),
        Value::String(s) if s.len() > MAX_LEVEL_BYTES => Err(CorpusError::field(at, format!("a covariate string is at most {MAX_LEVEL_BYTES} bytes"))),
        Value::String(s) => Ok(RawCovariate::Text(s.clone())),
        other => Err(CorpusError::field(at, format!("a covariate must be a number, a string (a category or a date) or null, got {other}"))),
    }
}

/// A date (`YYYY-MM-DD`) or an RFC 3339 date-time (`YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`)
/// as a fractional year: the year plus the elapsed share of it (UTC), so 2019-07-02T12:00Z
/// is 2019.5. `None` when `text` is neither.
pub fn fractional_year(text: &str) -> Option<f64> {
    let b = text.as_bytes();
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let digits = |s: &[u8]| -> Option<i64> { s.iter().all(u8::is_ascii_digit).then(|| s.iter().fold(0i64, |n, d| n * 10 + (d - b'0') as i64)) };
    let (year, month, day) = (digits(&b[0..4])?, digits(&b[5..7])?, digits(&b[8..10])?);
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    let mut seconds = 0.0;
    if b.len() > 10 {
        if !matches!(b[10], b'T' | b't' | b' ') || b.len() < 20 || b[13] != b':' || b[16] != b':' {
            return None;
        }
        let (h, m, s) = (digits(&b[11..13])?, digits(&b[14..16])?, digits(&b[17..19])?);
        if h > 23 || m > 59 || s > 60 {
            return None;
        }
        let mut rest = &b[19..];
        let mut fraction = 0.0;
        if rest.first() == Some(&b'.') {
            let n = rest[1..].iter().take_while(|c| c.is_ascii_digit()).count();
            if n == 0 {
                return None;
            }
            fraction = std::str::from_utf8(&rest[..n + 1]).ok()?.parse::<f64>().ok()?;
            rest = &rest[n + 1..];
        }
        let offset = match rest {
            [b'Z' | b'z'] => 0,
            [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
                let (oh, om) = (digits(&[*h1, *h2])?, digits(&[*m1, *m2])?);
                if oh > 23 || om > 59 {
                    return None;
                }
                let minutes = oh * 60 + om;
                if *sign == b'+' {
                    minutes
                } else {
                    -minutes
                }
            }
            _ => return None,
        };
        seconds = (h * 3600 + m * 60 + s - offset * 60) as f64 + fraction;
    }
    let day_of_year = (1..month).map(|m| days_in_month(year, m)).sum::<i64>() + day - 1;
    let year_seconds = 86_400.0 * if is_leap(year) { 366.0 } else { 365.0 };
    // An offset may move the instant into the neighbouring year: the sum handles it.
    Some(year as f64 + (day_of_year as f64 * 86_400.0 + seconds) / year_seconds)
}

fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// How the documents so far gave a covariate: its first number's and first string's
/// document, for the message when a later document disagrees.
#[derive(Debug, Clone, Copy, Default)]
struct SeenTypes {
    number: Option<usize>,
    text: Option<usize>,
}

/// Gathers covariates document by document.
#[derive(Debug, Default)]
pub struct CovariateCollector {
    index: HashMap<String, u32>,
    names: Vec<String>,
    seen: Vec<SeenTypes>,
    /// Per document, its given values by covariate id.
    rows: Vec<Vec<(u32, RawCovariate)>>,
}

impl CovariateCollector {
    /// Checks one document's covariates (and `features`, the numeric subset) against
    /// the documents before it; `Err` names the field and changes nothing.
    /// `index` is the document's 0-based position, `at` its path (`documents[3]`).
    pub fn check(&self, covariates: &BTreeMap<String, Value>, features: &BTreeMap<String, f64>, at: &str) -> Result<Vec<(String, RawCovariate)>, CorpusError> {
        let mut out = Vec::with_capacity(covariates.len() + features.len());
        for (name, value) in covariates {
            let field = format!("{at}.covariates.{name}");
            if name.trim().is_empty() {
                return Err(CorpusError::field(field, "a covariate needs a name"));
            }
            if features.contains_key(name) {
                return Err(CorpusError::field(field, format!("{name:?} is given both as a feature and as a covariate: give it once")));
            }
            out.push((name.clone(), read_value(value, &field)?));
        }
        out.extend(features.iter().map(|(name, &v)| (name.clone(), RawCovariate::Number(v))));
        let new_names = out.iter().filter(|(n, _)| !self.index.contains_key(n)).count();
        if self.names.len() + new_names > MAX_COVARIATES {
            return Err(CorpusError::field(format!("{at}.covariates"), format!("a corpus carries at most {MAX_COVARIATES} covariates")));
        }
        for (name, value) in &out {
            let Some(&id) = self.index.get(name) else { continue };
            let seen = self.seen[id as usize];
            let conflict = match value {
                RawCovariate::Number(_) => seen.text.map(|d| (d, "a string")),
                RawCovariate::Text(_) => seen.number.map(|d| (d, "a number")),
                RawCovariate::Missing => None,
            };
            if let Some((other, was)) = conflict {
                return Err(CorpusError::field(
                    format!("{at}.covariates.{name}"),
                    format!("{name:?} is {was} in documents[{other}]: a covariate is numbers, dates or category names in every document"),
                ));
            }
        }
        Ok(out)
    }

    /// Records document `index`'s values (as [`Self::check`] returned them).
    pub fn push(&mut self, index: usize, values: Vec<(String, RawCovariate)>) {
        let mut row = Vec::with_capacity(values.len());
        for (name, value) in values {
            let id = match self.index.get(&name) {
                Some(&id) => id,
                None => {
                    let id = self.names.len() as u32;
                    self.index.insert(name.clone(), id);
                    self.names.push(name);
                    self.seen.push(SeenTypes::default());
                    id
                }
            };
            let seen = &mut self.seen[id as usize];
            match &value {
                RawCovariate::Number(_) => seen.number = seen.number.or(Some(index)),
                RawCovariate::Text(_) => seen.text = seen.text.or(Some(index)),
                RawCovariate::Missing => {}
            }
            row.push((id, value));
        }
        self.rows.push(row);
    }

    /// The table of the kept documents (`kept`, indexes of pushed documents in order);
    /// `None` when no document gave a covariate. `Err` (naming the covariate) for a
    /// categorical covariate with more than [`MAX_LEVELS`] levels.
    pub fn finish(self, kept: &[usize]) -> Result<Option<CovariateTable>, CorpusError> {
        if self.names.is_empty() {
            return Ok(None);
        }
        // Each covariate's value per kept document, in one pass over the documents.
        let mut given: Vec<Vec<Option<&RawCovariate>>> = vec![vec![None; kept.len()]; self.names.len()];
        for (row, &d) in kept.iter().enumerate() {
            for (id, value) in &self.rows[d] {
                given[*id as usize][row] = Some(value);
            }
        }
        let mut order: Vec<usize> = (0..self.names.len()).collect();
        order.sort_unstable_by(|&a, &b| self.names[a].cmp(&self.names[b]));
        let mut columns = Vec::with_capacity(order.len());
        for id in order {
            let name = self.names[id].clone();
            let values = if self.seen[id].text.is_none() {
                let values = given[id].iter().map(|v| match v {
                    Some(RawCovariate::Number(x)) => *x,
                    _ => f64::NAN,
                });
                CovariateValues::Numeric { date: false, values: values.collect() }
            } else {
                let texts: Vec<Option<&str>> = given[id]
                    .iter()
                    .map(|v| match v {
                        Some(RawCovariate::Text(s)) => Some(s.as_str()),
                        _ => None,
                    })
                    .collect();
                let dates: Vec<Option<f64>> = texts.iter().map(|t| t.and_then(fractional_year)).collect();
                if texts.iter().zip(&dates).all(|(t, d)| t.is_some() == d.is_some()) {
                    CovariateValues::Numeric { date: true, values: dates.into_iter().map(|d| d.unwrap_or(f64::NAN)).collect() }
                } else {
                    categorical(&name, &texts)?
                }
            };
            columns.push(CovariateColumn { name, values });
        }
        Ok(Some(CovariateTable { columns }))
    }
}

/// Levels most frequent first (ties by name) and each document's code.
fn categorical(name: &str, texts: &[Option<&str>]) -> Result<CovariateValues, CorpusError> {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    texts.iter().flatten().for_each(|t| *counts.entry(t).or_default() += 1);
    if counts.len() > MAX_LEVELS {
        return Err(CorpusError::field(
            format!("covariates.{name}"),
            format!(
                "{name:?} has {} distinct values, more than {MAX_LEVELS}: a categorical covariate needs fewer levels (an id belongs in meta)",
                counts.len()
            ),
        ));
    }
    let mut levels: Vec<(&str, usize)> = counts.into_iter().collect();
    levels.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let code: HashMap<&str, u32> = levels.iter().enumerate().map(|(i, (l, _))| (*l, i as u32)).collect();
    let codes = texts.iter().map(|t| t.map_or(MISSING_LEVEL, |t| code[t])).collect();
    Ok(CovariateValues::Categorical { levels: levels.into_iter().map(|(l, _)| l.to_string()).collect(), codes })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn collect(docs: &[Value]) -> Result<Option<CovariateTable>, CorpusError> {
        let mut c = CovariateCollector::default();
        for (i, d) in docs.iter().enumerate() {
            let map: BTreeMap<String, Value> = serde_json::from_value(d.clone()).unwrap();
            let values = c.check(&map, &BTreeMap::new(), &format!("documents[{i}]"))?;
            c.push(i, values);
        }
        let kept: Vec<usize> = (0..docs.len()).collect();
        c.finish(&kept)
    }

    #[test]
    fn dates_are_fractional_years() {
        assert_eq!(fractional_year("2019-01-01"), Some(2019.0));
        assert_eq!(fractional_year("2019-07-02T12:00:00Z"), Some(2019.5), "day 182.5 of 365");
        assert_eq!(fractional_year("2020-07-02"), Some(2020.0 + 183.0 / 366.0), "a leap year: day 183 of 366");
        // 2019-01-01T01:30+01:30 is 2019-01-01T00:00Z.
        assert_eq!(fractional_year("2019-01-01T01:30:00+01:30"), Some(2019.0));
        assert_eq!(fractional_year("2019-01-01T00:00:00-00:00"), Some(2019.0));
        let half_second = fractional_year("2019-01-01T00:00:00.5Z").unwrap() - 2019.0;
        // A year near 2019 is resolved to about 2019 × 2⁻⁵² years, 1.4e-5 seconds.
        assert!((half_second * 365.0 * 86_400.0 - 0.5).abs() < 1e-4);
        for bad in [
            "2019-02-29",
            "2019-13-01",
            "2019-1-01",
            "20190101",
            "2019-01-01T25:00:00Z",
            "2019-01-01T00:00:00",
            "2019-01-01T00:00:00+1",
            "party A",
            "2019-01-01x",
        ] {
            assert_eq!(fractional_year(bad), None, "{bad}");
        }
        assert_eq!(fractional_year("2000-02-29").map(|y| y.floor()), Some(2000.0), "2000 is a leap year");
        assert_eq!(fractional_year("1900-02-29"), None, "1900 is not");
    }

    #[test]
    fn each_covariate_has_one_kind_and_missing_values_are_counted() {
        let t = collect(&[
            json!({"year": 2001, "party": "B", "day": "2019-03-02"}),
            json!({"year": 2003.5, "party": "A", "day": null}),
            json!({"party": "B", "day": "2020-01-01"}),
            json!({"year": null, "party": null}),
        ])
        .unwrap()
        .unwrap();
        let names: Vec<&str> = t.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["day", "party", "year"], "sorted by name");
        let s = t.summaries();
        assert_eq!((s[0].kind, s[0].missing), (CovariateKind::Date, 2));
        assert_eq!((s[0].min, s[0].max), (fractional_year("2019-03-02"), Some(2020.0)));
        assert_eq!((s[1].kind, s[1].missing), (CovariateKind::Categorical, 1));
        assert_eq!(s[1].levels, vec![LevelCount { level: "B".into(), documents: 2 }, LevelCount { level: "A".into(), documents: 1 }], "most frequent first");
        assert_eq!((s[2].kind, s[2].missing, s[2].min, s[2].max, s[2].mean), (CovariateKind::Continuous, 2, Some(2001.0), Some(2003.5), Some(2002.25)));
        assert!(t.column("year").unwrap().is_missing(2) && !t.column("party").unwrap().is_missing(2));
        assert_eq!(t.num_documents(), 4);
    }

    #[test]
    fn strings_that_are_not_all_dates_are_categories() {
        let t = collect(&[json!({"when": "2019-03-02"}), json!({"when": "later"})]).unwrap().unwrap();
        assert_eq!(t.columns[0].kind(), CovariateKind::Categorical);
        // Level ties are broken by name.
        assert_eq!(t.columns[0].summary().levels[0].level, "2019-03-02");
    }

    #[test]
    fn bad_values_name_their_document_and_covariate() {
        let e = collect(&[json!({"year": 2001}), json!({"year": "2002"})]).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("documents[1].covariates.year"));
        assert!(e.message.contains("a number in documents[0]"), "{}", e.message);
        for (bad, why) in
            [(json!({"x": true}), "got true"), (json!({"x": [1]}), "got [1]"), (json!({"x": " "}), "must not be empty"), (json!({"": 1}), "needs a name")]
        {
            let e = collect(std::slice::from_ref(&bad)).unwrap_err();
            assert!(e.message.contains(why), "{bad}: {}", e.message);
            assert!(e.field.as_deref().unwrap().starts_with("documents[0].covariates."), "{bad}");
        }
        let many: serde_json::Map<String, Value> = (0..=MAX_COVARIATES).map(|i| (format!("c{i}"), json!(1))).collect();
        assert!(collect(&[Value::Object(many)]).unwrap_err().message.contains("at most"));
        let ids: Vec<Value> = (0..=MAX_LEVELS).map(|i| json!({"id": format!("x{i}")})).collect();
        let e = collect(&ids).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("covariates.id"));
    }

    #[test]
    fn features_are_the_numeric_subset_and_a_name_is_given_once() {
        let mut c = CovariateCollector::default();
        let features = BTreeMap::from([("len".to_string(), 5.0)]);
        let values = c.check(&BTreeMap::new(), &features, "documents[0]").unwrap();
        c.push(0, values);
        let twice = BTreeMap::from([("len".to_string(), json!(3))]);
        assert_eq!(c.check(&twice, &features, "documents[1]").unwrap_err().field.as_deref(), Some("documents[1].covariates.len"));
        let t = c.finish(&[0]).unwrap().unwrap();
        assert_eq!(t.columns[0].values, CovariateValues::Numeric { date: false, values: vec![5.0] });
    }

    #[test]
    fn only_kept_documents_are_in_the_table_and_none_without_covariates() {
        let mut c = CovariateCollector::default();
        for (i, v) in [json!({"g": "a"}), json!({"g": "b"}), json!({"g": "b"})].into_iter().enumerate() {
            let map: BTreeMap<String, Value> = serde_json::from_value(v).unwrap();
            let values = c.check(&map, &BTreeMap::new(), "d").unwrap();
            c.push(i, values);
        }
        let t = c.finish(&[0, 2]).unwrap().unwrap();
        assert_eq!(t.columns[0].values, CovariateValues::Categorical { levels: vec!["a".into(), "b".into()], codes: vec![0, 1] });
        assert_eq!(CovariateCollector::default().finish(&[0]).unwrap(), None);
    }
}
