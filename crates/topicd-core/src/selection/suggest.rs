//! The rule a sweep suggests its number of topics by.
//!
//! Why it exists: held-out likelihood usually keeps creeping up past the K a corpus
//! supports (more topics fit noise a little better), so "the best score" overshoots;
//! Breiman's one-standard-error rule takes instead the simplest model whose score is
//! indistinguishable from the best's. The standard error is that of the paired
//! difference: every fit of a sweep scores the same held-out documents, so the
//! difference between two fits is a ratio estimate over those documents,
//!
//!   Δ = Σ_d (a_d − b_d) / T,   SE(Δ) = sqrt(n / (n − 1) · Σ_d (a_d − b_d − Δ t_d)²) / T,
//!
//! with a_d, b_d the documents' held-out log-likelihoods under the best fit and the
//! other, t_d their held-out tokens, T = Σ t_d and n the documents.

use crate::models::completion::DocumentCompletion;

/// The rule, as served beside the suggestion.
pub const RULE: &str = "the smallest number of topics whose held-out log-likelihood per token (document completion on the held-out documents every fit shares) is within one standard error of the best row's; the standard error is that of the paired per-document difference from the best row (Breiman's one-standard-error rule)";

/// The suggested K and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Suggestion {
    pub topics: usize,
    /// The row with the best held-out score.
    pub best_topics: usize,
    /// The suggested row's distance below the best, per token, and its standard error.
    pub gap: f64,
    pub standard_error: f64,
}

/// Apply [`RULE`] to the scored rows (`(K, per-document completion terms)`; rows
/// without a held-out score left out by the caller). `None` with no row; rows whose
/// documents do not match the best row's (another split) are passed over.
pub fn suggest_topics(rows: &[(usize, &[DocumentCompletion])]) -> Option<Suggestion> {
    let per_token = |docs: &[DocumentCompletion]| {
        let (ll, t) = docs.iter().fold((0.0, 0u64), |(ll, t), d| (ll + d.log_likelihood, t + d.tokens));
        if t == 0 {
            f64::NEG_INFINITY
        } else {
            ll / t as f64
        }
    };
    let (best_topics, best) = rows.iter().filter(|(_, d)| !d.is_empty()).max_by(|a, b| per_token(a.1).total_cmp(&per_token(b.1)).then(b.0.cmp(&a.0)))?;
    let mut candidates: Vec<&(usize, &[DocumentCompletion])> = rows.iter().collect();
    candidates.sort_by_key(|(k, _)| *k);
    candidates.into_iter().find_map(|(k, docs)| {
        let (gap, standard_error) = paired_gap(best, docs)?;
        (gap <= standard_error).then_some(Suggestion { topics: *k, best_topics: *best_topics, gap, standard_error })
    })
}

/// Δ and SE(Δ) of `other` below `best` (see the module docs); `None` when the two do
/// not score the same documents.
fn paired_gap(best: &[DocumentCompletion], other: &[DocumentCompletion]) -> Option<(f64, f64)> {
    if best.len() != other.len() || best.iter().zip(other).any(|(a, b)| a.tokens != b.tokens) || best.is_empty() {
        return None;
    }
    let n = best.len() as f64;
    let tokens: f64 = best.iter().map(|d| d.tokens as f64).sum();
    let gap = best.iter().zip(other).map(|(a, b)| a.log_likelihood - b.log_likelihood).sum::<f64>() / tokens;
    let squares: f64 = best.iter().zip(other).map(|(a, b)| (a.log_likelihood - b.log_likelihood - gap * a.tokens as f64).powi(2)).sum();
    let standard_error = if n > 1.0 { (n / (n - 1.0) * squares).sqrt() / tokens } else { 0.0 };
    Some((gap, standard_error))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docs(values: &[(f64, u64)]) -> Vec<DocumentCompletion> {
        values.iter().map(|&(log_likelihood, tokens)| DocumentCompletion { log_likelihood, tokens }).collect()
    }

    /// K = 10 is best; K = 15 trails it by 0.01 nats a token with a larger standard
    /// error, K = 5 by far more than its: the smallest within one SE is 15, not 5.
    #[test]
    fn the_smallest_k_within_one_standard_error_of_the_best() {
        let best = docs(&[(-100.0, 20), (-52.0, 10), (-148.0, 30)]);
        let close = docs(&[(-101.5, 20), (-51.0, 10), (-148.1, 30)]);
        let far = docs(&[(-120.0, 20), (-60.0, 10), (-170.0, 30)]);
        let rows = [(5, far.as_slice()), (15, close.as_slice()), (10, best.as_slice())];
        let s = suggest_topics(&rows).unwrap();
        assert_eq!((s.topics, s.best_topics), (10, 10), "K = 10 beats 15 only by noise, and is smaller: {s:?}");
        // Hand computation for K = 15 against 10: differences 1.5, −1.0, 0.1 over 60
        // tokens, Δ = 0.6 / 60 = 0.01; residuals 1.5 − 0.2, −1.0 − 0.1, 0.1 − 0.3.
        let (gap, se) = paired_gap(&best, &close).unwrap();
        assert!((gap - 0.01).abs() < 1e-12, "{gap}");
        let squares: f64 = 1.3f64.powi(2) + 1.1f64.powi(2) + 0.2f64.powi(2);
        assert!((se - (1.5 * squares).sqrt() / 60.0).abs() < 1e-12, "{se}");
        assert!(gap < se);
        // Make 15 the best and 10 trail within its error: 10 is suggested, 15 best.
        let rows = [(5, far.as_slice()), (10, close.as_slice()), (15, best.as_slice())];
        let s = suggest_topics(&rows).unwrap();
        assert_eq!((s.topics, s.best_topics), (10, 15));
    }

    /// Rows over other documents are passed over; no rows, no suggestion.
    #[test]
    fn rows_over_other_documents_are_passed_over() {
        let best = docs(&[(-10.0, 5), (-12.0, 6)]);
        let other = docs(&[(-9.0, 4)]);
        assert_eq!(suggest_topics(&[(3, other.as_slice()), (8, best.as_slice())]).unwrap().topics, 8);
        assert_eq!(suggest_topics(&[]), None);
    }
}
