//! Taddy's (2012) residual dispersion: is K large enough for the words' variance?
//!
//! Why it exists: under a correct multinomial topic model a document's word counts x_dw
//! have variance m_d q_dw (1 − q_dw), with m_d its length and q_d = θ_d β its expected
//! word distribution. The sum of the squared standardised residuals over every
//! (document, word), divided by its degrees of freedom, estimates a dispersion σ² that
//! is 1 when the model is right; above 1, the topics leave variance unexplained, "a very
//! rough measure for evidence in favor of a larger number of topics" (Taddy). This is
//! the statistic of stm's `checkResiduals`, computed the same way:
//!
//! - D = Σ_d Σ_w (x_dw − m_d q_dw)² / (m_d q_dw (1 − q_dw)), over every word of the
//!   vocabulary (absent words included);
//! - N̂ = the number of (d, w) with m_d q_dw > tol (tol = 0.01, Taddy's);
//! - df = N̂ − V − (n(K − 1) + K(V − 1)), n the documents scored;
//! - σ² = D / df, undefined (None) when df ≤ 0 (too few expected counts above tol for
//!   the parameters: small corpora).

use crate::corpus::Corpus;
use crate::models::DocumentProportions;
use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;

/// Taddy's tolerance on expected counts for N̂.
pub const TOLERANCE: f64 = 0.01;

/// Documents whose expected word distributions are computed at once (one matrix
/// product of `CHUNK × K` by `K × V`).
const CHUNK: usize = 128;

/// The dispersion and its degrees of freedom.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dispersion {
    pub dispersion: f64,
    pub degrees_of_freedom: f64,
    /// D, the sum of squared standardised residuals.
    pub sum_of_squares: f64,
    /// N̂, the (document, word) pairs whose expected count exceeds [`TOLERANCE`].
    pub above_tolerance: u64,
}

/// Sums over a set of documents.
#[derive(Debug, Clone, Copy, Default)]
struct Sums {
    squares: f64,
    above_tolerance: u64,
}

impl Sums {
    fn add(self, other: Sums) -> Sums {
        Sums { squares: self.squares + other.squares, above_tolerance: self.above_tolerance + other.above_tolerance }
    }
}

/// σ² of the documents `theta` gives proportions for, under the word distributions
/// `beta` (K × V, each row a distribution; rows that do not sum to 1 are normalised).
pub fn residual_dispersion(corpus: &Corpus, theta: &DocumentProportions, beta: ArrayView2<'_, f64>) -> Option<Dispersion> {
    let (k, v) = beta.dim();
    let n = theta.documents.len();
    if n == 0 || k == 0 || theta.rows.len() != n * k {
        return None;
    }
    let mut normalised = beta.to_owned();
    for mut row in normalised.rows_mut() {
        let total: f64 = row.sum();
        if total > 0.0 {
            row /= total;
        }
    }
    let sums = theta
        .documents
        .par_chunks(CHUNK)
        .zip(theta.rows.par_chunks(CHUNK * k))
        .map(|(docs, rows)| chunk_sums(corpus, docs, rows, &normalised))
        .reduce(Sums::default, Sums::add);
    let parameters = (n * (k - 1) + k * (v - 1)) as f64;
    let df = sums.above_tolerance as f64 - v as f64 - parameters;
    (df > 0.0).then(|| Dispersion {
        dispersion: sums.squares / df,
        degrees_of_freedom: df,
        sum_of_squares: sums.squares,
        above_tolerance: sums.above_tolerance,
    })
}

/// The sums over one chunk of documents (`rows`: their proportions, row-major).
fn chunk_sums(corpus: &Corpus, docs: &[usize], rows: &[f64], beta: &Array2<f64>) -> Sums {
    let k = beta.nrows();
    let theta = ArrayView2::from_shape((docs.len(), k), rows).expect("one row of K proportions per document");
    let q = theta.dot(beta);
    let mut sums = Sums::default();
    for (i, &d) in docs.iter().enumerate() {
        let (terms, counts) = corpus.counts.row(d);
        let m: f64 = counts.iter().map(|&c| c as f64).sum();
        if m == 0.0 {
            continue;
        }
        let q = q.row(i);
        // Every word as if absent: x = 0 leaves (m q)² / (m q (1 − q)) = m q / (1 − q).
        for &p in q.iter() {
            let p = p.clamp(f64::MIN_POSITIVE, 1.0 - 1e-12);
            sums.squares += m * p / (1.0 - p);
            sums.above_tolerance += u64::from(m * p > TOLERANCE);
        }
        // The words present: add (x² − 2 x m q) / (m q (1 − q)).
        for (&t, &c) in terms.iter().zip(counts) {
            let (p, x) = (q[t as usize].clamp(f64::MIN_POSITIVE, 1.0 - 1e-12), c as f64);
            sums.squares += (x * x - 2.0 * x * m * p) / (m * p * (1.0 - p));
        }
    }
    sums
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::{build_corpus, RawDocument};
    use crate::models::lda::sampler::tests::raw_options;
    use crate::rng::{stream, Purpose};
    use rand::RngExt;
    use std::collections::BTreeMap;

    fn document(id: String, words: impl IntoIterator<Item = String>) -> RawDocument {
        let mut counts = BTreeMap::new();
        for w in words {
            *counts.entry(w).or_insert(0.0) += 1.0;
        }
        RawDocument { id: Some(id), counts: Some(counts), ..Default::default() }
    }

    /// β's columns in the corpus' word numbering (words are named `w{index}`).
    fn in_corpus_order(corpus: &Corpus, beta: &Array2<f64>) -> Array2<f64> {
        let mut out = Array2::zeros(beta.dim());
        for t in 0..beta.ncols() as u32 {
            let w: usize = corpus.lexicon.word(t)[1..].parse().unwrap();
            out.column_mut(t as usize).assign(&beta.column(w));
        }
        out
    }

    /// The shortcut (every word as absent, then the present words corrected) against
    /// the definition summed term by term, on a corpus small enough to write out.
    #[test]
    fn the_sum_is_the_definition_summed_over_every_word() {
        let docs = vec![
            document("a".into(), ["w0", "w0", "w1", "w2", "w2", "w2"].map(String::from)),
            document("b".into(), ["w1", "w3", "w3"].map(String::from)),
            document("c".into(), ["w0", "w3"].map(String::from)),
        ];
        let corpus = build_corpus(raw_options(), &[], docs).unwrap();
        let beta = Array2::from_shape_vec((2, 4), vec![0.4, 0.3, 0.2, 0.1, 0.1, 0.2, 0.3, 0.4]).unwrap();
        let beta = in_corpus_order(&corpus, &beta);
        let rows = vec![0.7, 0.3, 0.2, 0.8, 0.5, 0.5];
        let theta = DocumentProportions { documents: vec![0, 1, 2], rows: rows.clone() };
        let sums = chunk_sums(&corpus, &theta.documents, &rows, &beta);
        let (mut expected, mut above) = (0.0, 0u64);
        for d in 0..3 {
            let (terms, counts) = corpus.counts.row(d);
            let m: f64 = counts.iter().map(|&c| c as f64).sum();
            for w in 0..4u32 {
                let q: f64 = (0..2).map(|k| rows[d * 2 + k] * beta[[k, w as usize]]).sum();
                let x = terms.iter().position(|&t| t == w).map_or(0.0, |i| counts[i] as f64);
                expected += (x - m * q).powi(2) / (m * q * (1.0 - q));
                above += u64::from(m * q > TOLERANCE);
            }
        }
        assert!((sums.squares - expected).abs() < 1e-9 * expected, "{} against {expected}", sums.squares);
        assert_eq!(sums.above_tolerance, above);
    }

    /// Documents drawn from the model itself (K = 3 disjoint blocks of 10 words, each
    /// document 200 tokens of one topic) scored with the true θ and β: every
    /// standardised residual has expectation 1, so D / N̂ is 1 up to noise. Per
    /// document D is (1 − q)⁻¹ times a Pearson χ² on 10 cells, variance about
    /// 2 · 9 / 0.81 ≈ 22.2; over 600 documents D / N̂ has a standard error of
    /// sqrt(22.2 · 600) / 6000 ≈ 0.019, and the test allows 5 of them. (σ² itself
    /// divides by Taddy's degrees of freedom, which subtract the parameters a fit
    /// estimates; the true parameters were not estimated.) A one-topic model of the
    /// same data must show σ² far above 1: its expected counts miss every block.
    #[test]
    fn residuals_have_unit_variance_under_the_true_model_and_overdisperse_when_k_is_too_small() {
        let (k, v, n, len) = (3usize, 30usize, 600usize, 200usize);
        let block = v / k;
        let mut docs = Vec::new();
        let mut rows = Vec::new();
        for d in 0..n {
            let mut rng = stream(11, Purpose::Synthetic, 0, d as u64);
            let topic = d % k;
            docs.push(document(format!("d{d}"), (0..len).map(|_| format!("w{}", topic * block + rng.random_range(0..block)))));
            rows.extend((0..k).map(|t| if t == topic { 1.0 } else { 0.0 }));
        }
        let corpus = build_corpus(raw_options(), &[], docs).expect("corpus builds");
        // Exact zeros off the blocks are replaced by a tiny rate, as any fitted β has.
        let beta = Array2::from_shape_fn((k, v), |(t, w)| if w / block == t { 1.0 / block as f64 } else { 1e-12 });
        let beta = in_corpus_order(&corpus, &beta);
        let theta = DocumentProportions { documents: (0..n).collect(), rows };
        let right = residual_dispersion(&corpus, &theta, beta.view()).expect("enough expected counts");
        assert_eq!(right.above_tolerance, (n * block) as u64, "the in-block words only");
        let ratio = right.sum_of_squares / right.above_tolerance as f64;
        let se = (22.2 * n as f64).sqrt() / (n * block) as f64;
        assert!((ratio - 1.0).abs() < 5.0 * se, "D / N̂ = {ratio} (se {se})");
        let one = Array2::from_elem((1, v), 1.0 / v as f64);
        let merged = DocumentProportions { documents: (0..n).collect(), rows: vec![1.0; n] };
        let wrong = residual_dispersion(&corpus, &merged, one.view()).expect("enough expected counts");
        assert!(wrong.dispersion > 5.0, "one topic for three: σ² {}", wrong.dispersion);
    }

    /// Too few documents for the parameters: undefined, not a number.
    #[test]
    fn too_few_expected_counts_leave_it_undefined() {
        let corpus = build_corpus(raw_options(), &[], vec![document("a".into(), ["w0", "w1", "w2"].map(String::from))]).unwrap();
        let beta = Array2::from_elem((2, 3), 1.0 / 3.0);
        let theta = DocumentProportions { documents: vec![0], rows: vec![0.5, 0.5] };
        assert_eq!(residual_dispersion(&corpus, &theta, beta.view()), None);
    }
}
