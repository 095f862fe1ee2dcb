//! Comparing two topic models' topics: which topic of one is which of the other, how
//! close, and which words rose and fell.
//!
//! Why it exists: users refit (another K, another seed, an edit, an update) and need to
//! see what changed. The topics are matched as a fit's chains are
//! ([`super::chains::align_topics`]): the assignment minimising the summed L1 distance
//! between matched topics' word distributions, here over the union of the two models'
//! vocabularies (words by their strings, so models of different corpora compare) and
//! with a dummy partner of cost 2 (the largest L1) for each topic the smaller model
//! lacks. Similarity is the stability's, 1 − L1/2 ([`super::stability`]); a pair is
//! a match at [`super::stability::MATCH_SIMILARITY`] and above. Plain numerics over word
//! lists and K × V rows: the HTTP handler gives the models' tables and names.

use super::stability::{is_match, similarity};
use crate::inference::assignment::min_cost_assignment;
use ndarray::Array2;
use serde::Serialize;
use std::collections::HashMap;

/// One side of a comparison: its vocabulary and its topics' word weights (K × V; each
/// row is normalised here).
pub struct Side<'a> {
    pub words: Vec<&'a str>,
    pub rows: &'a Array2<f64>,
}

/// A word whose weight moved between the matched topics: its weight in each.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WordShift {
    pub word: String,
    pub a: f64,
    pub b: f64,
}

/// Topic `a` of the first model matched to topic `b` of the second.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TopicPair {
    pub a: usize,
    pub b: usize,
    /// 1 − L1/2 between the two word distributions.
    pub similarity: f64,
    /// Whether the similarity reaches the match line (the same topic).
    pub matched: bool,
    /// Jaccard overlap of the two topics' top 10 words (Greene et al. 2014).
    pub top_words_jaccard: f64,
    /// The words that gained weight most from a to b, and those that lost most.
    pub rose: Vec<WordShift>,
    pub fell: Vec<WordShift>,
}

/// The two models' topics paired, and those left without a partner (the larger
/// model's extra topics).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelComparison {
    pub pairs: Vec<TopicPair>,
    pub unpaired_a: Vec<usize>,
    pub unpaired_b: Vec<usize>,
}

/// How many top words the Jaccard overlap reads.
pub const JACCARD_TOP: usize = 10;

/// Most work a comparison takes on: K_a · K_b · (words in either vocabulary), the
/// distance computations (a few seconds), which also bounds the rows' memory.
pub const MAX_WORK: u64 = 2_000_000_000;

/// The work comparing `a` and `b` takes ([`MAX_WORK`] bounds it): the pairs' distances
/// over the larger vocabulary (a lower bound of the union's).
pub fn work(a: &Side, b: &Side) -> u64 {
    let (ka, kb) = (a.rows.nrows() as u64, b.rows.nrows() as u64);
    ka * kb * a.words.len().max(b.words.len()) as u64
}

/// Compare `a` and `b`, listing `shifts` risen and fallen words per pair.
pub fn compare(a: &Side, b: &Side, shifts: usize) -> ModelComparison {
    let (words, a_rows, b_rows) = on_union(a, b);
    let (ka, kb) = (a_rows.len(), b_rows.len());
    let n = ka.max(kb);
    let mut cost = vec![2.0; n * n];
    let empty = |row: &[f64]| row.iter().all(|&x| x == 0.0);
    for i in 0..ka {
        for j in 0..kb {
            // A topic with no weight at all is like no other topic (cost 2: no match).
            if !empty(&a_rows[i]) && !empty(&b_rows[j]) {
                cost[i * n + j] = a_rows[i].iter().zip(&b_rows[j]).map(|(x, y)| (x - y).abs()).sum();
            }
        }
    }
    let permutation = min_cost_assignment(&cost, n);
    let mut pairs = Vec::new();
    let mut unpaired_a = Vec::new();
    for (i, &j) in permutation.iter().enumerate().take(ka) {
        if j >= kb {
            unpaired_a.push(i);
            continue;
        }
        let l1 = cost[i * n + j];
        let (rose, fell) = word_shifts(&words, &a_rows[i], &b_rows[j], shifts);
        pairs.push(TopicPair {
            a: i,
            b: j,
            similarity: similarity(l1),
            matched: is_match(l1),
            top_words_jaccard: top_jaccard(&a_rows[i], &b_rows[j]),
            rose,
            fell,
        });
    }
    let unpaired_b = (0..kb).filter(|j| !pairs.iter().any(|p| p.b == *j)).collect();
    ModelComparison { pairs, unpaired_a, unpaired_b }
}

/// Both sides' rows over the union of their vocabularies (a's words first, then b's
/// others), each row normalised to sum 1 (a row of zeros stays zeros).
fn on_union<'a>(a: &Side<'a>, b: &Side<'a>) -> (Vec<&'a str>, Vec<Vec<f64>>, Vec<Vec<f64>>) {
    let mut words = a.words.clone();
    let mut index: HashMap<&str, usize> = words.iter().enumerate().map(|(i, &w)| (w, i)).collect();
    let b_index: Vec<usize> = b
        .words
        .iter()
        .map(|&w| {
            *index.entry(w).or_insert_with(|| {
                words.push(w);
                words.len() - 1
            })
        })
        .collect();
    let spread = |rows: &Array2<f64>, place: &dyn Fn(usize) -> usize| -> Vec<Vec<f64>> {
        rows.rows()
            .into_iter()
            .map(|row| {
                let total: f64 = row.iter().sum();
                let mut out = vec![0.0; words.len()];
                for (w, &x) in row.iter().enumerate() {
                    out[place(w)] = if total > 0.0 { x / total } else { 0.0 };
                }
                out
            })
            .collect()
    };
    let a_rows = spread(a.rows, &|w| w);
    let b_rows = spread(b.rows, &|w| b_index[w]);
    (words, a_rows, b_rows)
}

/// The `n` words whose weight rose most from `a` to `b`, and the `n` that fell most
/// (strict changes only; ties by word order).
fn word_shifts(words: &[&str], a: &[f64], b: &[f64], n: usize) -> (Vec<WordShift>, Vec<WordShift>) {
    let mut order: Vec<usize> = (0..words.len()).filter(|&w| a[w] != b[w]).collect();
    order.sort_by(|&x, &y| (b[y] - a[y]).total_cmp(&(b[x] - a[x])).then(x.cmp(&y)));
    let shift = |w: usize| WordShift { word: words[w].to_string(), a: a[w], b: b[w] };
    let rose = order.iter().copied().take_while(|&w| b[w] > a[w]).take(n).map(shift).collect();
    let fell = order.iter().rev().copied().take_while(|&w| b[w] < a[w]).take(n).map(shift).collect();
    (rose, fell)
}

/// Jaccard overlap of the top [`JACCARD_TOP`] words of two rows.
fn top_jaccard(a: &[f64], b: &[f64]) -> f64 {
    let top = |row: &[f64]| {
        let mut order: Vec<usize> = (0..row.len()).collect();
        order.sort_by(|&x, &y| row[y].total_cmp(&row[x]).then(x.cmp(&y)));
        order.truncate(JACCARD_TOP);
        order
    };
    let (ta, tb) = (top(a), top(b));
    let common = ta.iter().filter(|w| tb.contains(w)).count();
    common as f64 / (ta.len() + tb.len() - common).max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    /// Model b holds a's two topics in the other order, one of them changed, over a
    /// vocabulary that differs in one word, plus a topic a lacks.
    #[test]
    fn topics_pair_across_vocabularies_and_the_extra_topic_is_unpaired() {
        let a_rows = array![[0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 0.5, 0.5]];
        let a = Side { words: vec!["w", "x", "y", "z"], rows: &a_rows };
        // b's words: z, y, x, new; b's topic 0 is a's topic 1 exactly, topic 1 is a's
        // topic 0 with x's weight moved to "new", topic 2 is "new" alone.
        let b_rows = array![[0.5, 0.5, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.5, 0.5], [0.0, 0.0, 0.0, 1.0, 0.0]];
        let b = Side { words: vec!["z", "y", "x", "new", "w"], rows: &b_rows };
        let c = compare(&a, &b, 3);
        assert_eq!(c.unpaired_a, Vec::<usize>::new());
        assert_eq!(c.unpaired_b, vec![2]);
        assert_eq!((c.pairs[0].a, c.pairs[0].b), (0, 1));
        assert_eq!((c.pairs[1].a, c.pairs[1].b), (1, 0));
        assert!((c.pairs[1].similarity - 1.0).abs() < 1e-12 && c.pairs[1].matched);
        // a's topic 0 {w .5, x .5} against {new .5, w .5}: L1 = 1, similarity 0.5.
        assert!((c.pairs[0].similarity - 0.5).abs() < 1e-12 && c.pairs[0].matched);
        assert_eq!(c.pairs[0].rose, vec![WordShift { word: "new".into(), a: 0.0, b: 0.5 }]);
        assert_eq!(c.pairs[0].fell, vec![WordShift { word: "x".into(), a: 0.5, b: 0.0 }]);
        assert!(c.pairs[1].rose.is_empty() && c.pairs[1].fell.is_empty());
        // Top words: {w, x, y, z, new} ordered by weight then word order; for a 5-word
        // union every word is in the top 10, so the overlap is 1.
        assert_eq!(c.pairs[0].top_words_jaccard, 1.0);
        // The other way round, a's side is the larger: its extra topic is unpaired.
        let back = compare(&b, &a, 3);
        assert_eq!((back.unpaired_a, back.unpaired_b), (vec![2], vec![]));
    }

    /// A topic without weight pairs as no match (a zero row is at distance 1 from every
    /// distribution, which would read as similarity 0.5).
    #[test]
    fn an_empty_topic_is_no_match() {
        let a_rows = array![[0.0, 0.0], [0.3, 0.7]];
        let b_rows = array![[1.0, 0.0], [0.3, 0.7]];
        let c = compare(&Side { words: vec!["p", "q"], rows: &a_rows }, &Side { words: vec!["p", "q"], rows: &b_rows }, 1);
        let empty = c.pairs.iter().find(|p| p.a == 0).unwrap();
        assert!(!empty.matched && empty.similarity == 0.0, "{empty:?}");
    }

    /// Unnormalised rows (Poisson rates) compare as their distributions.
    #[test]
    fn rows_are_compared_as_distributions() {
        let a_rows = array![[2.0, 2.0], [0.0, 6.0]];
        let b_rows = array![[0.5, 0.5], [0.0, 1.0]];
        let c = compare(&Side { words: vec!["p", "q"], rows: &a_rows }, &Side { words: vec!["p", "q"], rows: &b_rows }, 5);
        assert!(c.pairs.iter().all(|p| p.a == p.b && (p.similarity - 1.0).abs() < 1e-12));
    }
}
