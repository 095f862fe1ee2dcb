//! Held-out document completion: how well the fitted topics predict the unseen half of
//! a document once the other half has fixed its topic weights.
//!
//! Why it exists: a variational HDP has no Gibbs chain for a Chib-style estimate of
//! log p(w_d), but its predictive distribution is cheap: split each test document's tokens
//! into an observed and a scored half, run the local step on the observed half (topics and
//! sticks fixed) to get E[π_d] = θ_d / Σθ_d (the remainder included), and score every token
//! of the other half by log(Σ_k E[π_dk] E[φ_kw] + E[π_d,K+1] / V) (a topic beyond the
//! truncation has the prior mean φ = 1/V). The split is deterministic: the document's
//! tokens in word order, alternately observed and scored, so a word seen twice lands in
//! both halves and nothing depends on a random stream. This scores p(second half | first
//! half), not log p(w_d): it is comparable between HDP fits, not with the Chib estimates
//! other models report.

use super::local::{infer_document, LocalGlobals};
use super::model::HdpModel;
use crate::corpus::lexicon::EncodedDoc;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// The completion score of a set of documents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompletionScore {
    pub documents: usize,
    /// Tokens that fixed the topic weights.
    pub observed_tokens: u64,
    /// Tokens scored.
    pub scored_tokens: u64,
    /// Σ log p(scored token | observed half).
    pub log_likelihood: f64,
    pub log_likelihood_per_token: f64,
    /// exp(−log_likelihood / scored_tokens).
    pub perplexity: f64,
}

/// A bag of words: (terms, counts).
pub type Bag = (Vec<u32>, Vec<u32>);

/// Split a document's in-vocabulary tokens (word order) alternately into
/// (observed, scored) bags.
pub fn split_alternately(doc: &EncodedDoc, num_terms: usize) -> (Bag, Bag) {
    let (mut observed, mut scored) = ((Vec::new(), Vec::new()), (Vec::new(), Vec::new()));
    let mut position = 0u64;
    for (&w, &c) in doc.terms.iter().zip(&doc.counts) {
        if w as usize >= num_terms || c == 0 {
            continue;
        }
        // Of positions position..position + c, the even ones are observed.
        let even = (c as u64 + position.is_multiple_of(2) as u64) / 2;
        let odd = c as u64 - even;
        for (bag, n) in [(&mut observed, even), (&mut scored, odd)] {
            if n > 0 {
                bag.0.push(w);
                bag.1.push(n as u32);
            }
        }
        position += c as u64;
    }
    (observed, scored)
}

/// Score `docs` by document completion under `model`.
pub fn document_completion(model: &HdpModel, docs: &[EncodedDoc]) -> CompletionScore {
    let (k, v) = (model.num_topics, model.num_terms);
    let (elog, exp) = model.word_major_expectations();
    let means = model.topic_means();
    let beta = model.stick.expected_beta();
    let g = LocalGlobals::new(model.params.alpha, &beta, &elog, &exp, model.params.local_tolerance, model.params.local_iterations.max(200));
    let per_doc: Vec<(u64, u64, f64)> = docs
        .par_iter()
        .map(|doc| {
            let ((ot, oc), (st, sc)) = split_alternately(doc, v);
            let res = infer_document(&g, &ot, &oc, None, &[]);
            let theta: Vec<f64> = (0..=k).map(|t| if t < k { res.doc_topic[t] + g.prior[t] } else { g.prior[k] }).collect();
            let total: f64 = theta.iter().sum();
            let mut ll = 0.0;
            for (&w, &c) in st.iter().zip(&sc) {
                let p: f64 = (0..k).map(|t| theta[t] / total * means[t * v + w as usize]).sum::<f64>() + theta[k] / total / v as f64;
                ll += c as f64 * p.ln();
            }
            (oc.iter().map(|&c| c as u64).sum(), sc.iter().map(|&c| c as u64).sum(), ll)
        })
        .collect();
    let observed_tokens = per_doc.iter().map(|d| d.0).sum();
    let scored_tokens: u64 = per_doc.iter().map(|d| d.1).sum();
    let log_likelihood: f64 = per_doc.iter().map(|d| d.2).sum();
    let per_token = if scored_tokens > 0 { log_likelihood / scored_tokens as f64 } else { f64::NAN };
    CompletionScore { documents: docs.len(), observed_tokens, scored_tokens, log_likelihood, log_likelihood_per_token: per_token, perplexity: (-per_token).exp() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alternate_split_halves_every_word_in_order() {
        let doc = EncodedDoc { terms: vec![0, 2, 5, 9], counts: vec![3, 1, 2, 1], oov_tokens: 0 };
        // Tokens 0 0 0 2 5 5 9 at positions 0..7: even positions 0, 0, 5, 9 are observed.
        let ((ot, oc), (st, sc)) = split_alternately(&doc, 9);
        assert_eq!((ot, oc), (vec![0, 5], vec![2, 1]));
        assert_eq!((st, sc), (vec![0, 2, 5], vec![1, 1, 1]));
    }
}
