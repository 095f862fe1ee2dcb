//! The rules a sweep suggests its number of topics by.
//!
//! Why it exists: a user wants one K to start from, and a rule they can check.
//!
//! - **With two chains or more per fit: stability.** The K whose topics recur most
//!   alike across chains (the highest mean [`crate::models::stability`] similarity; ties
//!   go to the smaller K), as Greene, O'Callaghan and Cunningham (2014) choose K. Too few
//!   topics merge true ones, and chains merge different pairs; too many split them, and
//!   chains split differently; at the K the data support, chains agree. On corpora drawn
//!   from LDA (bench/sweep_k.py) the peak sat on the true K where held-out likelihood did
//!   not: at topicd's default α = 50/K a fit with the true K smooths documents' sparse
//!   proportions more than one with more topics (α per topic falls as K grows), so
//!   held-out likelihood keeps rising past the truth.
//! - **With one chain: Breiman's one-standard-error rule on held-out likelihood.** The
//!   smallest K whose score is within one standard error of the best row's. The
//!   standard error is that of the paired difference: every fit of a sweep scores the
//!   same held-out documents, so the difference between two fits is a ratio estimate
//!   over those documents,
//!
//!   Δ = Σ_d (a_d − b_d) / T,   SE(Δ) = sqrt(n / (n − 1) · Σ_d (a_d − b_d − Δ t_d)²) / T,
//!
//!   with a_d, b_d the documents' held-out log-likelihoods under the best fit and the
//!   other, t_d their held-out tokens, T = Σ t_d and n the documents.

use crate::models::completion::DocumentCompletion;

/// The stability rule, as served beside the suggestion.
pub const RULE_STABILITY: &str = "every fit has two chains or more, so: the number of topics whose topics recur most alike across chains (the highest mean stability, ties to the smaller number), as Greene, O'Callaghan and Cunningham (2014) choose K";

/// The held-out rule, as served beside the suggestion.
pub const RULE_HELDOUT: &str = "one chain per fit, so: the smallest number of topics whose held-out log-likelihood per token (document completion on the held-out documents every fit shares) is within one standard error of the best row's; the standard error is that of the paired per-document difference from the best row (Breiman's one-standard-error rule)";

/// One scored row, as the rules read it.
#[derive(Debug, Clone, Copy)]
pub struct ScoredRow<'a> {
    pub topics: usize,
    /// Each held-out document's completion terms (empty: no held-out score).
    pub heldout: &'a [DocumentCompletion],
    /// The mean stability; `None` for a one-chain fit.
    pub stability: Option<f64>,
}

/// The suggested K, the rule that chose it, and how it compares with the row of the
/// best held-out score.
#[derive(Debug, Clone, PartialEq)]
pub struct Suggestion {
    pub topics: usize,
    pub rule: &'static str,
    /// The row with the best held-out score (`None`: no row has one).
    pub best_topics: Option<usize>,
    /// The suggested row's held-out score below the best's, per token, and the standard
    /// error of that difference (`None` without held-out scores on the same documents).
    pub gap: Option<f64>,
    pub standard_error: Option<f64>,
    /// Why the suggestion may be weak: it sits at an end of the rows' K (a K beyond it
    /// may do better), or, by stability, most topics are unmatched at every K.
    pub cautions: Vec<String>,
}

/// The mean stability under which most of a fit's topics have no match in the other
/// chains ([`crate::models::stability::MATCH_SIMILARITY`]).
pub const WEAK_STABILITY: f64 = crate::models::stability::MATCH_SIMILARITY;

/// The cautions of suggesting `chosen` among `rows` (see [`Suggestion::cautions`]).
fn cautions(chosen: &ScoredRow, rows: &[ScoredRow], by_stability: bool) -> Vec<String> {
    let mut out = Vec::new();
    let (smallest, largest) = rows.iter().fold((usize::MAX, 0), |(lo, hi), r| (lo.min(r.topics), hi.max(r.topics)));
    if rows.len() > 1 && chosen.topics == smallest {
        out.push(format!("{} is the smallest number of topics swept: fewer may do better", chosen.topics));
    }
    if rows.len() > 1 && chosen.topics == largest {
        out.push(format!("{} is the largest number of topics swept: more may do better", chosen.topics));
    }
    if by_stability && chosen.stability.is_some_and(|s| s < WEAK_STABILITY) {
        out.push(format!(
            "the chains disagree on most topics at every number of topics (the best mean stability is {:.2}, below {WEAK_STABILITY}): longer chains, or the other measures, may say more",
            chosen.stability.unwrap_or(0.0)
        ));
    }
    out
}

fn per_token(docs: &[DocumentCompletion]) -> f64 {
    let (ll, t) = docs.iter().fold((0.0, 0u64), |(ll, t), d| (ll + d.log_likelihood, t + d.tokens));
    if t == 0 {
        f64::NEG_INFINITY
    } else {
        ll / t as f64
    }
}

/// Suggest a K from the scored rows (see the module docs): by stability when every row
/// has one, else by the held-out rule. `None` with no row to choose from.
pub fn suggest(rows: &[ScoredRow]) -> Option<Suggestion> {
    let best = rows.iter().filter(|r| !r.heldout.is_empty()).max_by(|a, b| per_token(a.heldout).total_cmp(&per_token(b.heldout)).then(b.topics.cmp(&a.topics)));
    let compared = |row: &ScoredRow, rule| {
        let (gap, standard_error) = best.and_then(|b| paired_gap(b.heldout, row.heldout)).map_or((None, None), |(g, s)| (Some(g), Some(s)));
        let cautions = cautions(row, rows, rule == RULE_STABILITY);
        Suggestion { topics: row.topics, rule, best_topics: best.map(|b| b.topics), gap, standard_error, cautions }
    };
    if !rows.is_empty() && rows.iter().all(|r| r.stability.is_some()) {
        let most_stable = rows.iter().max_by(|a, b| a.stability.unwrap_or(0.0).total_cmp(&b.stability.unwrap_or(0.0)).then(b.topics.cmp(&a.topics)))?;
        return Some(compared(most_stable, RULE_STABILITY));
    }
    let best = best?;
    let mut candidates: Vec<&ScoredRow> = rows.iter().filter(|r| !r.heldout.is_empty()).collect();
    candidates.sort_by_key(|r| r.topics);
    candidates.into_iter().find(|r| paired_gap(best.heldout, r.heldout).is_some_and(|(gap, se)| gap <= se)).map(|r| compared(r, RULE_HELDOUT))
}

/// Δ and SE(Δ) of `other` below `best` (see the module docs); `None` when the two do
/// not score the same documents.
fn paired_gap(best: &[DocumentCompletion], other: &[DocumentCompletion]) -> Option<(f64, f64)> {
    if best.len() != other.len() || best.iter().zip(other).any(|(a, b)| a.tokens != b.tokens) || best.is_empty() {
        return None;
    }
    let tokens: f64 = best.iter().map(|d| d.tokens as f64).sum();
    let differences: Vec<(f64, f64)> = best.iter().zip(other).map(|(a, b)| (a.log_likelihood - b.log_likelihood, a.tokens as f64)).collect();
    let gap = differences.iter().map(|d| d.0).sum::<f64>() / tokens;
    let standard_error = super::intervals::ratio_standard_error(&differences).unwrap_or(0.0);
    Some((gap, standard_error))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docs(values: &[(f64, u64)]) -> Vec<DocumentCompletion> {
        values.iter().map(|&(log_likelihood, tokens)| DocumentCompletion { log_likelihood, tokens }).collect()
    }

    fn row(topics: usize, heldout: &[DocumentCompletion], stability: Option<f64>) -> ScoredRow<'_> {
        ScoredRow { topics, heldout, stability }
    }

    /// One chain. K = 10 is best; K = 15 trails it by 0.01 nats a token with a larger
    /// standard error, K = 5 by far more than its: the smallest within one SE is 10
    /// itself; with 15 best and 10 trailing within its error, 10.
    #[test]
    fn one_chain_takes_the_smallest_k_within_one_standard_error_of_the_best() {
        let best = docs(&[(-100.0, 20), (-52.0, 10), (-148.0, 30)]);
        let close = docs(&[(-101.5, 20), (-51.0, 10), (-148.1, 30)]);
        let far = docs(&[(-120.0, 20), (-60.0, 10), (-170.0, 30)]);
        let s = suggest(&[row(5, &far, None), row(15, &close, None), row(10, &best, None)]).unwrap();
        assert_eq!((s.topics, s.best_topics, s.rule), (10, Some(10), RULE_HELDOUT), "{s:?}");
        // Hand computation for K = 15 against 10: differences 1.5, −1.0, 0.1 over 60
        // tokens, Δ = 0.6 / 60 = 0.01; residuals 1.5 − 0.2, −1.0 − 0.1, 0.1 − 0.3.
        let (gap, se) = paired_gap(&best, &close).unwrap();
        assert!((gap - 0.01).abs() < 1e-12, "{gap}");
        let squares: f64 = 1.3f64.powi(2) + 1.1f64.powi(2) + 0.2f64.powi(2);
        assert!((se - (1.5 * squares).sqrt() / 60.0).abs() < 1e-12, "{se}");
        let s = suggest(&[row(5, &far, None), row(10, &close, None), row(15, &best, None)]).unwrap();
        assert_eq!((s.topics, s.best_topics), (10, Some(15)));
        assert_eq!((s.gap, s.standard_error), (Some(gap), Some(se)));
    }

    /// Two chains: the most stable K, whatever the held-out scores say; ties to the
    /// smaller K; a row without stability sends the sweep back to the held-out rule.
    #[test]
    fn several_chains_take_the_most_stable_k() {
        let best = docs(&[(-100.0, 20), (-52.0, 10)]);
        let worse = docs(&[(-130.0, 20), (-70.0, 10)]);
        let s = suggest(&[row(5, &worse, Some(0.71)), row(10, &worse, Some(0.93)), row(20, &best, Some(0.80))]).unwrap();
        assert_eq!((s.topics, s.best_topics, s.rule), (10, Some(20), RULE_STABILITY));
        assert!(s.gap.unwrap() > 0.0);
        assert_eq!(s.cautions, Vec::<String>::new(), "inside the grid, stable");
        let tie = suggest(&[row(12, &best, Some(0.9)), row(8, &worse, Some(0.9))]).unwrap();
        assert_eq!(tie.topics, 8);
        assert!(tie.cautions.len() == 1 && tie.cautions[0].contains("smallest"), "{:?}", tie.cautions);
        let weak = suggest(&[row(5, &worse, Some(0.44)), row(10, &worse, Some(0.30)), row(20, &best, Some(0.41))]).unwrap();
        assert_eq!(weak.topics, 5);
        assert!(weak.cautions.iter().any(|c| c.contains("disagree")) && weak.cautions.iter().any(|c| c.contains("smallest")), "{:?}", weak.cautions);
        let mixed = suggest(&[row(5, &worse, Some(0.99)), row(10, &best, None)]).unwrap();
        assert_eq!((mixed.topics, mixed.rule), (10, RULE_HELDOUT));
    }

    /// Rows over other documents are passed over; no rows, no suggestion.
    #[test]
    fn rows_over_other_documents_are_passed_over() {
        let best = docs(&[(-10.0, 5), (-12.0, 6)]);
        let other = docs(&[(-9.0, 4)]);
        assert_eq!(suggest(&[row(3, &other, None), row(8, &best, None)]).unwrap().topics, 8);
        assert_eq!(suggest(&[]), None);
    }
}
