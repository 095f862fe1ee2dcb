//! Occurrence and co-occurrence counts of a few words, as gensim's coherence counts them.
//!
//! Why it exists: coherence needs, for the K·n distinct top words of a model's topics,
//! how many "virtual documents" contain each word and each pair. gensim has two
//! estimates and this module reproduces both exactly:
//!
//! - boolean document (`p_boolean_document`, used by `u_mass`): a virtual document is a
//!   document; read from the doc-term matrix, so it works for every corpus.
//! - boolean sliding window (`p_boolean_sliding_window` with `processes=1`, used by
//!   `c_v`, `c_npmi`, `c_uci`): every window of `w` consecutive tokens of a document is
//!   a virtual document; a document shorter than (or as long as) the window is one
//!   window, and an empty one still counts as one (empty) virtual document. gensim's
//!   `WordOccurrenceAccumulator` tracks the set of words in the current window
//!   incrementally: moving on, it *unmarks the token that leaves* and marks the token
//!   that enters, even when the leaving token still occurs inside the window. That
//!   under-counts repeated words; we reproduce it, since agreeing with gensim is the
//!   point. With `w` ≥ the longest document the windows are the documents, with no
//!   sliding and hence no quirk: the document estimate.
//!
//! Each word's membership is kept as sorted runs `[start, end)` of virtual-document
//! numbers (a run per stretch of consecutive windows holding it), so memory is ∝ the
//! words' occurrences, counts are run lengths, and a pair's count is the overlap of two
//! run lists. Pure functions, no I/O.

use crate::corpus::{DocTermMatrix, TokenOrder};

/// The virtual-document memberships of a set of words.
#[derive(Debug, Clone)]
pub struct Occurrences {
    /// Number of virtual documents (gensim's `num_docs`).
    pub num_docs: u64,
    /// Term id → index into `runs` ([`NOT_COUNTED`] for other terms), dense up to the
    /// largest counted id so the pass over every token is one array read per token.
    slot: Vec<u32>,
    /// Per word: disjoint, non-adjacent runs of virtual documents, increasing.
    runs: Vec<Vec<(u64, u64)>>,
}

const NOT_COUNTED: u32 = u32::MAX;

/// Appends `[start, end)` to `runs`, merging with an adjacent last run.
fn push_run(runs: &mut Vec<(u64, u64)>, start: u64, end: u64) {
    match runs.last_mut() {
        Some(last) if last.1 == start => last.1 = end,
        _ => runs.push((start, end)),
    }
}

impl Occurrences {
    fn empty(words: &[u32]) -> Self {
        let mut slot = vec![NOT_COUNTED; words.iter().max().map_or(0, |&w| w as usize + 1)];
        let mut n = 0;
        for &w in words {
            if slot[w as usize] == NOT_COUNTED {
                slot[w as usize] = n;
                n += 1;
            }
        }
        Occurrences { num_docs: 0, slot, runs: vec![Vec::new(); n as usize] }
    }

    /// The index of term `t` in `runs`, if it is counted.
    #[inline]
    fn slot_of(&self, t: u32) -> Option<usize> {
        match self.slot.get(t as usize) {
            Some(&s) if s != NOT_COUNTED => Some(s as usize),
            _ => None,
        }
    }

    /// Boolean document estimate: virtual document `d` is row `d` of `counts`.
    pub fn from_documents(counts: &DocTermMatrix, words: &[u32]) -> Self {
        let mut occ = Self::empty(words);
        for (d, (terms, _)) in counts.rows().enumerate() {
            for &t in terms {
                if let Some(s) = occ.slot_of(t) {
                    push_run(&mut occ.runs[s], d as u64, d as u64 + 1);
                }
            }
        }
        occ.num_docs = counts.num_rows() as u64;
        occ
    }

    /// Boolean sliding-window estimate with windows of `window` (≥ 1) tokens, exactly
    /// as gensim's serial `WordOccurrenceAccumulator` slides them.
    pub fn from_windows(order: &TokenOrder, words: &[u32], window: usize) -> Self {
        assert!(window >= 1, "a window holds at least one token");
        let mut occ = Self::empty(words);
        // Per word: whether it is in the current window's set, and since when.
        let mut open: Vec<Option<u64>> = vec![None; occ.runs.len()];
        let mut touched: Vec<usize> = Vec::new();
        let mut g: u64 = 0;
        for d in 0..order.num_documents() {
            let doc = order.doc(d);
            let first = &doc[..doc.len().min(window)];
            for s in first.iter().filter_map(|&t| occ.slot_of(t)) {
                if open[s].is_none() {
                    open[s] = Some(g);
                    touched.push(s);
                }
            }
            // Windows of this document: 1 when it is no longer than the window.
            let n = if doc.len() > window { (doc.len() - window + 1) as u64 } else { 1 };
            for i in 1..n as usize {
                let at = g + i as u64;
                if let Some(s) = occ.slot_of(doc[i - 1]) {
                    if let Some(start) = open[s].take() {
                        push_run(&mut occ.runs[s], start, at);
                    }
                }
                if let Some(s) = occ.slot_of(doc[i + window - 1]) {
                    if open[s].is_none() {
                        open[s] = Some(at);
                        touched.push(s);
                    }
                }
            }
            g += n;
            for s in touched.drain(..) {
                if let Some(start) = open[s].take() {
                    push_run(&mut occ.runs[s], start, g);
                }
            }
        }
        occ.num_docs = g;
        occ
    }

    fn runs_of(&self, w: u32) -> &[(u64, u64)] {
        let s = self.slot_of(w).unwrap_or_else(|| panic!("word {w} was not counted"));
        &self.runs[s]
    }

    /// Virtual documents holding `w`.
    ///
    /// # Panics
    /// If `w` was not among the counted words.
    pub fn count(&self, w: u32) -> u64 {
        self.runs_of(w).iter().map(|&(a, b)| b - a).sum()
    }

    /// Virtual documents holding both `a` and `b` (`count(a)` when `a == b`).
    pub fn co_count(&self, a: u32, b: u32) -> u64 {
        let (x, y) = (self.runs_of(a), self.runs_of(b));
        let (mut i, mut j, mut total) = (0, 0, 0);
        while i < x.len() && j < y.len() {
            let (lo, hi) = (x[i].0.max(y[j].0), x[i].1.min(y[j].1));
            if lo < hi {
                total += hi - lo;
            }
            if x[i].1 <= y[j].1 {
                i += 1;
            } else {
                j += 1;
            }
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(docs: &[&[u32]]) -> TokenOrder {
        let mut o = TokenOrder::new();
        for d in docs {
            o.push(d);
        }
        o
    }

    /// gensim's accumulator, transcribed literally: a boolean mask updated per window.
    fn gensim_windows(docs: &[&[u32]], words: &[u32], window: usize) -> (u64, Vec<u64>, Vec<Vec<u64>>) {
        let idx = |t: u32| words.iter().position(|&w| w == t);
        let r = words.len();
        let (mut occ, mut co, mut num) = (vec![0u64; r], vec![vec![0u64; r]; r], 0u64);
        for doc in docs {
            let wins: Vec<&[u32]> = if doc.len() <= window { vec![doc] } else { doc.windows(window).collect() };
            let mut mask = vec![false; r];
            for (i, win) in wins.iter().enumerate() {
                if i == 0 {
                    mask = vec![false; r];
                    win.iter().filter_map(|&t| idx(t)).for_each(|s| mask[s] = true);
                } else {
                    if let Some(s) = idx(wins[i - 1][0]) {
                        mask[s] = false;
                    }
                    if let Some(s) = idx(*win.last().unwrap()) {
                        mask[s] = true;
                    }
                }
                if !win.is_empty() {
                    for a in 0..r {
                        for b in 0..r {
                            if mask[a] && mask[b] {
                                co[a][b] += 1;
                            }
                        }
                        occ[a] += mask[a] as u64;
                    }
                }
                num += 1;
            }
        }
        (num, occ, co)
    }

    #[test]
    fn windows_match_a_literal_transcription_of_gensim() {
        // Repeats inside windows (the quirk), short documents, an empty one, and tokens
        // that are not counted (9).
        let docs: Vec<&[u32]> = vec![&[1, 2, 1, 3, 9, 1, 2, 2, 3, 1], &[3, 3], &[], &[2, 9, 9, 9, 1, 9, 3], &[1]];
        let words = [1, 2, 3];
        for window in [1, 2, 3, 4, 7, 10, 50] {
            let occ = Occurrences::from_windows(&order(&docs), &words, window);
            let (num, c, co) = gensim_windows(&docs, &words, window);
            assert_eq!(occ.num_docs, num, "window {window}");
            for (a, &wa) in words.iter().enumerate() {
                assert_eq!(occ.count(wa), c[a], "window {window} word {wa}");
                for (b, &wb) in words.iter().enumerate() {
                    assert_eq!(occ.co_count(wa, wb), co[a][b], "window {window} pair {wa},{wb}");
                }
            }
        }
    }

    #[test]
    fn the_quirk_is_real_and_long_windows_are_documents() {
        // Window 3 over [1, 2, 1, 3]: windows [1 2 1], [2 1 3]; gensim unmarks 1 as it
        // leaves, so the second window counts only {2, 3}.
        let o = order(&[&[1, 2, 1, 3]]);
        let occ = Occurrences::from_windows(&o, &[1, 2, 3], 3);
        assert_eq!((occ.num_docs, occ.count(1), occ.count(2), occ.count(3)), (2, 1, 2, 1));
        assert_eq!(occ.co_count(1, 3), 0);
        // A window as long as the longest document: the document estimate.
        let docs: Vec<&[u32]> = vec![&[1, 2, 1, 3], &[2, 2], &[3, 4, 1]];
        let counts = DocTermMatrix::from_rows(docs.iter().map(|d| d.iter().map(|&t| (t, 1)).collect::<Vec<_>>()));
        let by_doc = Occurrences::from_documents(&counts, &[1, 2, 3, 4]);
        let by_win = Occurrences::from_windows(&order(&docs), &[1, 2, 3, 4], 4);
        assert_eq!(by_doc.num_docs, 3);
        assert_eq!(by_win.num_docs, 3);
        for a in 1..=4 {
            for b in 1..=4 {
                assert_eq!(by_doc.co_count(a, b), by_win.co_count(a, b), "{a},{b}");
            }
        }
        assert_eq!(by_doc.count(1), 2);
        assert_eq!(by_doc.co_count(1, 3), 2);
    }
}
