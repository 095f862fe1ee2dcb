//! Sparse document × term counts in compressed-sparse-row (CSR) form.
//!
//! Why it exists: corpora are very sparse (a document uses a tiny fraction of the
//! vocabulary), and every model sweeps documents row by row, so CSR is both the
//! smallest representation and the one samplers iterate over directly. Rows keep their
//! term ids strictly increasing and counts positive, which models may rely on.

use serde::{Deserialize, Serialize};

/// Documents × terms count matrix in CSR form.
///
/// Row `d` is `terms[indptr[d]..indptr[d+1]]` with matching `counts`; within a row,
/// term ids are strictly increasing and every count is ≥ 1.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct DocTermMatrix {
    /// Row offsets into `terms`/`counts`; `num_rows() + 1` entries starting at 0.
    pub indptr: Vec<u64>,
    /// Term ids of the non-zero entries, row by row.
    pub terms: Vec<u32>,
    /// Counts of the non-zero entries (parallel to `terms`).
    pub counts: Vec<u32>,
}

impl Default for DocTermMatrix {
    /// An empty matrix with no rows.
    fn default() -> Self {
        DocTermMatrix { indptr: vec![0], terms: Vec::new(), counts: Vec::new() }
    }
}

/// Sorts `row` by term, merges duplicate terms by summing (saturating) and drops zero
/// counts, in place.
pub fn normalize_row(row: &mut Vec<(u32, u32)>) {
    row.sort_unstable_by_key(|&(t, _)| t);
    let mut out = 0;
    for i in 0..row.len() {
        let (t, c) = row[i];
        if c == 0 {
            continue;
        }
        if out > 0 && row[out - 1].0 == t {
            row[out - 1].1 = row[out - 1].1.saturating_add(c);
        } else {
            row[out] = (t, c);
            out += 1;
        }
    }
    row.truncate(out);
}

impl DocTermMatrix {
    /// An empty matrix with no rows (same as `default()`).
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds a matrix from rows of `(term, count)` pairs in any order; duplicates are
    /// summed and zero counts dropped.
    pub fn from_rows(rows: impl IntoIterator<Item = Vec<(u32, u32)>>) -> Self {
        let mut m = Self::default();
        for mut row in rows {
            normalize_row(&mut row);
            m.push_sorted_row(&row);
        }
        m
    }

    /// Appends a row of `(term, count)` pairs in any order (normalized like
    /// [`Self::from_rows`]); `row` is left sorted and merged.
    pub fn push_row(&mut self, row: &mut Vec<(u32, u32)>) {
        normalize_row(row);
        self.push_sorted_row(row);
    }

    /// Appends a row already sorted by strictly increasing term with positive counts.
    ///
    /// # Panics
    /// In debug builds, if the row is not sorted/merged or has a zero count.
    pub fn push_sorted_row(&mut self, row: &[(u32, u32)]) {
        debug_assert!(row.windows(2).all(|w| w[0].0 < w[1].0), "row not strictly sorted");
        debug_assert!(row.iter().all(|&(_, c)| c > 0), "zero count in row");
        if self.indptr.is_empty() {
            self.indptr.push(0);
        }
        self.terms.extend(row.iter().map(|&(t, _)| t));
        self.counts.extend(row.iter().map(|&(_, c)| c));
        self.indptr.push(self.terms.len() as u64);
    }

    /// Number of rows (documents).
    pub fn num_rows(&self) -> usize {
        self.indptr.len().saturating_sub(1)
    }

    /// Number of stored (non-zero) entries.
    pub fn nnz(&self) -> usize {
        self.terms.len()
    }

    /// Row `d` as `(terms, counts)` slices.
    ///
    /// # Panics
    /// If `d >= num_rows()`.
    pub fn row(&self, d: usize) -> (&[u32], &[u32]) {
        let (a, b) = (self.indptr[d] as usize, self.indptr[d + 1] as usize);
        (&self.terms[a..b], &self.counts[a..b])
    }

    /// Iterates over the rows as `(terms, counts)` slices.
    pub fn rows(&self) -> impl ExactSizeIterator<Item = (&[u32], &[u32])> + '_ {
        (0..self.num_rows()).map(move |d| self.row(d))
    }

    /// Total count of row `d` (the document's length in tokens).
    pub fn doc_len(&self, d: usize) -> u64 {
        self.row(d).1.iter().map(|&c| c as u64).sum()
    }

    /// Sum of all counts (the corpus length in tokens).
    pub fn total_tokens(&self) -> u64 {
        self.counts.iter().map(|&c| c as u64).sum()
    }

    /// One more than the largest term id used (0 for a matrix without entries).
    pub fn num_cols_hint(&self) -> usize {
        self.terms.iter().max().map_or(0, |&t| t as usize + 1)
    }

    /// Number of rows each term appears in, for terms `0..num_terms`.
    ///
    /// # Panics
    /// If a term id is `>= num_terms`.
    pub fn column_document_frequencies(&self, num_terms: usize) -> Vec<u32> {
        let mut df = vec![0u32; num_terms];
        // Rows have distinct terms, so each entry is one (row, term) occurrence.
        for &t in &self.terms {
            df[t as usize] += 1;
        }
        df
    }

    /// Total count of each term over all rows, for terms `0..num_terms`.
    ///
    /// # Panics
    /// If a term id is `>= num_terms`.
    pub fn column_totals(&self, num_terms: usize) -> Vec<u64> {
        let mut tf = vec![0u64; num_terms];
        for (&t, &c) in self.terms.iter().zip(&self.counts) {
            tf[t as usize] += c as u64;
        }
        tf
    }

    /// Checks the CSR invariants (useful after deserializing stored data):
    /// `indptr` starts at 0, is non-decreasing and ends at `nnz`; `terms` and `counts`
    /// have equal length; rows are strictly increasing, counts positive and (when
    /// given) term ids below `num_terms`.
    pub fn check(&self, num_terms: Option<usize>) -> Result<(), String> {
        if self.indptr.first() != Some(&0) {
            return Err("indptr must start with 0".into());
        }
        if self.terms.len() != self.counts.len() {
            return Err("terms and counts differ in length".into());
        }
        if *self.indptr.last().unwrap() != self.terms.len() as u64 {
            return Err("indptr must end at the number of entries".into());
        }
        if self.indptr.windows(2).any(|w| w[0] > w[1]) {
            return Err("indptr must be non-decreasing".into());
        }
        for (d, (terms, counts)) in self.rows().enumerate() {
            if terms.windows(2).any(|w| w[0] >= w[1]) {
                return Err(format!("row {d}: terms not strictly increasing"));
            }
            if counts.contains(&0) {
                return Err(format!("row {d}: zero count"));
            }
            if let (Some(n), Some(&last)) = (num_terms, terms.last()) {
                if last as usize >= n {
                    return Err(format!("row {d}: term {last} out of range (< {n})"));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty() {
        let m = DocTermMatrix::default();
        assert_eq!(m.num_rows(), 0);
        assert_eq!(m.nnz(), 0);
        assert_eq!(m.total_tokens(), 0);
        assert_eq!(m.num_cols_hint(), 0);
        assert_eq!(m.column_document_frequencies(3), vec![0, 0, 0]);
        assert!(m.check(Some(0)).is_ok());
        assert_eq!(DocTermMatrix::new(), m);
    }

    #[test]
    fn from_rows_sorts_merges_and_drops_zeros() {
        let m = DocTermMatrix::from_rows(vec![vec![(5, 1), (2, 3), (5, 2), (7, 0), (0, 1)], vec![], vec![(1, 0)], vec![(3, 4)]]);
        assert_eq!(m.num_rows(), 4);
        assert_eq!(m.row(0), (&[0u32, 2, 5][..], &[1u32, 3, 3][..]));
        assert_eq!(m.row(1), (&[][..], &[][..]));
        assert_eq!(m.row(2).0.len(), 0);
        assert_eq!(m.row(3), (&[3u32][..], &[4u32][..]));
        assert_eq!(m.indptr, vec![0, 3, 3, 3, 4]);
        assert_eq!(m.nnz(), 4);
        assert_eq!(m.doc_len(0), 7);
        assert_eq!(m.doc_len(1), 0);
        assert_eq!(m.total_tokens(), 11);
        assert_eq!(m.num_cols_hint(), 6);
        assert_eq!(m.column_document_frequencies(6), vec![1, 0, 1, 1, 0, 1]);
        assert_eq!(m.column_totals(6), vec![1, 0, 3, 4, 0, 3]);
        assert!(m.check(Some(6)).is_ok());
        assert!(m.check(Some(5)).is_err());
        assert_eq!(m.rows().len(), 4);
    }

    #[test]
    fn merge_saturates() {
        let m = DocTermMatrix::from_rows(vec![vec![(1, u32::MAX), (1, 5)]]);
        assert_eq!(m.row(0).1, &[u32::MAX]);
    }

    #[test]
    fn push_row_and_normalize() {
        let mut m = DocTermMatrix::new();
        let mut r = vec![(9, 1), (4, 1), (9, 1)];
        m.push_row(&mut r);
        assert_eq!(r, vec![(4, 1), (9, 2)]);
        m.push_sorted_row(&[(0, 1)]);
        assert_eq!(m.num_rows(), 2);
        assert_eq!(m.row(1), (&[0u32][..], &[1u32][..]));
    }

    #[test]
    fn check_detects_corruption() {
        let mut m = DocTermMatrix::from_rows(vec![vec![(1, 1), (2, 1)]]);
        m.terms = vec![2, 1];
        assert!(m.check(None).is_err());
        let mut m = DocTermMatrix::from_rows(vec![vec![(1, 1)]]);
        m.counts[0] = 0;
        assert!(m.check(None).is_err());
        let mut m = DocTermMatrix::from_rows(vec![vec![(1, 1)]]);
        m.indptr = vec![0, 2];
        assert!(m.check(None).is_err());
    }

    #[test]
    fn serde_roundtrip() {
        let m = DocTermMatrix::from_rows(vec![vec![(3, 2), (1, 1)], vec![(0, 5)]]);
        let s = serde_json::to_string(&m).unwrap();
        let back: DocTermMatrix = serde_json::from_str(&s).unwrap();
        assert_eq!(back, m);
    }
}
