//! The standard errors a sweep's rows show beside their scores, drawn as intervals on
//! the console's plots over K.
//!
//! Why it exists: a pooled model keeps no score per chain, so a row's uncertainty is that
//! of what its score averages over. The held-out score is a ratio over test documents,
//! Σ_d ℓ_d / Σ_d n_d; its standard error is the ratio estimator's (delta method) from the
//! documents' own terms, the form the one-SE rule ([`super::suggest`]) uses for paired
//! differences. Coherence, exclusivity and stability are means over topics; theirs is
//! the standard deviation over topics divided by √K.

use crate::models::completion::DocumentCompletion;

/// SE of Σ v_i / Σ n_i from the terms (v_i, n_i): √(m/(m−1) · Σ (v_i − r n_i)²) / Σ n_i
/// with r the ratio and m the number of terms; `None` for fewer than two terms or no
/// tokens.
pub fn ratio_standard_error(terms: &[(f64, f64)]) -> Option<f64> {
    let m = terms.len() as f64;
    let tokens: f64 = terms.iter().map(|t| t.1).sum();
    if terms.len() < 2 || tokens <= 0.0 {
        return None;
    }
    let ratio = terms.iter().map(|t| t.0).sum::<f64>() / tokens;
    let squares: f64 = terms.iter().map(|(v, n)| (v - ratio * n).powi(2)).sum();
    let se = (m / (m - 1.0) * squares).sqrt() / tokens;
    se.is_finite().then_some(se)
}

/// SE of the held-out log-likelihood per token over the scored test documents.
pub fn heldout_standard_error(documents: &[DocumentCompletion]) -> Option<f64> {
    let terms: Vec<(f64, f64)> = documents.iter().map(|d| (d.log_likelihood, d.tokens as f64)).collect();
    ratio_standard_error(&terms)
}

/// SE of the mean of `values` (its finite ones): their sample standard deviation over
/// √n; `None` for fewer than two.
pub fn mean_standard_error(values: &[f64]) -> Option<f64> {
    let finite: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    let n = finite.len() as f64;
    if finite.len() < 2 {
        return None;
    }
    let mean = finite.iter().sum::<f64>() / n;
    let variance = finite.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    Some((variance / n).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ratio_standard_error_is_the_mean_standard_error_when_every_document_has_one_token() {
        // With n_i = 1 the ratio is the mean of the v_i and the delta-method SE is exactly
        // the sample SD over √m.
        let values = [-7.0, -6.5, -8.25, -7.75, -6.0];
        let terms: Vec<(f64, f64)> = values.iter().map(|&v| (v, 1.0)).collect();
        let a = ratio_standard_error(&terms).unwrap();
        let b = mean_standard_error(&values).unwrap();
        assert!((a - b).abs() < 1e-12, "{a} {b}");
        // By hand: mean −7.1, squared deviations 0.01, 0.36, 1.3225, 0.4225, 1.21 (sum
        // 3.325), variance 0.83125, SE √(0.83125 / 5).
        assert!((b - (0.83125f64 / 5.0).sqrt()).abs() < 1e-12);
    }

    #[test]
    fn documents_proportional_to_the_ratio_give_no_error_and_one_document_gives_none() {
        let docs = [DocumentCompletion { log_likelihood: -70.0, tokens: 10 }, DocumentCompletion { log_likelihood: -140.0, tokens: 20 }];
        assert_eq!(heldout_standard_error(&docs), Some(0.0));
        assert_eq!(heldout_standard_error(&docs[..1]), None);
        assert_eq!(mean_standard_error(&[1.0, f64::NAN]), None);
    }
}
