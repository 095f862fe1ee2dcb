//! Exclusivity of flat topic models: P(topic | word).
//!
//! Why it exists: LDA, DCNT and SCNT all measure a word's exclusivity to a topic as
//! P(topic | word) = φ_kw p_k / Σ_j φ_jw p_j, with φ the topic-word rates and p the
//! topic shares (paper 003, eq. 1). One function serves them all.

use ndarray::Array2;

/// P(topic | word) from rates (rows = topics, columns = words) and topic shares; a
/// word no topic uses keeps a zero column.
pub fn topic_given_word(rates: &Array2<f64>, shares: &[f64]) -> Array2<f64> {
    let mut out = rates.clone();
    for (t, mut row) in out.rows_mut().into_iter().enumerate() {
        row *= shares[t];
    }
    for mut col in out.columns_mut() {
        let s = col.sum();
        if s > 0.0 {
            col /= s;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_bayes_posteriors() {
        let rates = ndarray::array![[0.5, 0.5, 0.0], [0.1, 0.9, 0.0]];
        let e = topic_given_word(&rates, &[0.25, 0.75]);
        // word 0: 0.125 vs 0.075 → 0.625, 0.375; word 2 unused.
        assert!((e[(0, 0)] - 0.625).abs() < 1e-12 && (e[(1, 0)] - 0.375).abs() < 1e-12);
        assert!((e[(0, 1)] + e[(1, 1)] - 1.0).abs() < 1e-12);
        assert_eq!((e[(0, 2)], e[(1, 2)]), (0.0, 0.0));
    }
}
