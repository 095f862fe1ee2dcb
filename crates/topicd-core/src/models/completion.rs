//! Document completion: the held-out likelihood that needs no marginalisation.
//!
//! Why it exists: comparing topic models across toolkits (gensim's `HdpModel`, bnpy)
//! needs one estimator every toolkit can compute. Document completion splits each
//! test document's tokens in two: the *observed* half fixes the document's topic
//! weights θ̂ (the model's own prediction), and the *held-out* half is scored by
//! log Σ_k θ̂_k β_kw per token. It is an estimate of a predictive density, not of
//! log p(w_d) (Chib-style estimators in `lda::heldout` and `dcnt::heldout` do that),
//! and it only needs [`TopicModel::predict`] and the topic table, so every topic model
//! has it.
//!
//! The split is reproducible outside Rust: token `j` (0-based) of word `w` in document
//! `id` is held out when the lowest bit of fmix64(FNV-1a-64(UTF-8 of
//! `"{id}\u{1f}{w}\u{1f}{j}"`)) is 1, fmix64 being MurmurHash3's 64-bit finaliser
//! (`bench/hdp_vs_gensim.py` does the same in Python). FNV alone is not enough: its
//! bits barely change with the last byte (bit 32 held out 54 % of a word's tokens in
//! the test below).
//! A bag of words has no order, so a pseudo-random split per token is the honest
//! reading of "first half, second half"; repeated words fall on both sides about
//! equally.

use super::{ModelError, PredictOptions, TableOptions, TopicModel};
use crate::corpus::lexicon::EncodedDoc;
use crate::corpus::Corpus;
use serde::{Deserialize, Serialize};

/// One test document, split.
#[derive(Debug, Clone, PartialEq)]
pub struct CompletionDoc {
    pub id: String,
    /// The half that fixes the topic weights.
    pub observed: EncodedDoc,
    /// The half that is scored: (term, count), terms increasing.
    pub heldout: Vec<(u32, u32)>,
}

/// What document completion reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompletionReport {
    /// Test documents with at least one token on each side.
    pub documents: usize,
    pub observed_tokens: u64,
    pub heldout_tokens: u64,
    /// Σ over held-out tokens of log Σ_k θ̂_k β_kw.
    pub total_log_likelihood: f64,
    /// `total_log_likelihood / heldout_tokens`.
    pub per_token: f64,
    pub perplexity: f64,
}

impl CompletionReport {
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "estimator": "document_completion",
            "split": "token j of word w in document id is held out when fmix64(fnv1a64(id + U+001F + w + U+001F + j)) is odd",
            "documents": self.documents,
            "observed_tokens": self.observed_tokens,
            "heldout_tokens": self.heldout_tokens,
            "total_log_likelihood": self.total_log_likelihood,
            "per_token": self.per_token,
            "perplexity": self.perplexity,
        })
    }
}

/// FNV-1a, 64 bits.
fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// MurmurHash3's 64-bit finaliser: every input bit affects every output bit.
fn fmix64(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// Is token `j` of `word` in document `id` held out?
pub fn is_heldout(id: &str, word: &str, j: u32) -> bool {
    let key = format!("{id}\u{1f}{word}\u{1f}{j}");
    fmix64(fnv1a64(key.as_bytes())) & 1 == 1
}

/// Split one document's counts (terms increasing) by [`is_heldout`], `word` naming
/// each term.
pub fn split_document<'a>(id: &str, terms: &[u32], counts: &[u32], word: impl Fn(u32) -> &'a str) -> CompletionDoc {
    let (mut obs_terms, mut obs_counts, mut heldout) = (Vec::new(), Vec::new(), Vec::new());
    for (&t, &c) in terms.iter().zip(counts) {
        let word = word(t);
        let held = (0..c).filter(|&j| is_heldout(id, word, j)).count() as u32;
        if c > held {
            obs_terms.push(t);
            obs_counts.push(c - held);
        }
        if held > 0 {
            heldout.push((t, held));
        }
    }
    CompletionDoc { id: id.to_string(), observed: EncodedDoc { terms: obs_terms, counts: obs_counts, oov_tokens: 0 }, heldout }
}

/// Split the corpus documents `mask` selects.
pub fn split_corpus_documents(corpus: &Corpus, mask: &[bool]) -> Vec<CompletionDoc> {
    (0..corpus.num_documents())
        .filter(|&d| mask[d])
        .map(|d| {
            let (terms, counts) = corpus.counts.row(d);
            split_document(&corpus.doc_ids[d], terms, counts, |t| corpus.lexicon.word(t))
        })
        .collect()
}

/// Score `docs` by document completion under `model`. Documents with an empty half
/// are skipped (and not counted).
pub fn document_completion(model: &dyn TopicModel, docs: &[CompletionDoc], options: &PredictOptions) -> Result<CompletionReport, ModelError> {
    Ok(document_completion_by_document(model, docs, options)?.0)
}

/// One scored document's share of a completion: Σ over its held-out tokens of
/// log Σ_k θ̂_k β_kw, and how many tokens that sums over.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DocumentCompletion {
    pub log_likelihood: f64,
    pub tokens: u64,
}

/// [`document_completion`], with each scored document's own terms (in the order of
/// `docs`, skipped ones left out): what a paired comparison of two models on the same
/// documents needs.
pub fn document_completion_by_document(
    model: &dyn TopicModel,
    docs: &[CompletionDoc],
    options: &PredictOptions,
) -> Result<(CompletionReport, Vec<DocumentCompletion>), ModelError> {
    let usable: Vec<&CompletionDoc> = docs.iter().filter(|d| !d.observed.terms.is_empty() && !d.heldout.is_empty()).collect();
    let observed: Vec<EncodedDoc> = usable.iter().map(|d| d.observed.clone()).collect();
    let predictions = model.predict(&observed, options)?;
    let table = model.topic_table(&TableOptions::default());
    let beta = &table.frequency;
    let (mut total, mut heldout_tokens, mut observed_tokens) = (0.0, 0u64, 0u64);
    let mut per_document = Vec::with_capacity(usable.len());
    for (doc, prediction) in usable.iter().zip(&predictions) {
        let theta = &prediction.topic_proportions;
        observed_tokens += doc.observed.counts.iter().map(|&c| c as u64).sum::<u64>();
        let mut one = DocumentCompletion { log_likelihood: 0.0, tokens: 0 };
        for &(t, c) in &doc.heldout {
            let p: f64 = theta.iter().enumerate().map(|(k, th)| th * beta[[k, t as usize]]).sum();
            let term = c as f64 * p.ln();
            // The total adds token by token, as it always has (a stored HDP model keeps
            // it: summing per document first would change its last bits).
            total += term;
            one.log_likelihood += term;
            one.tokens += c as u64;
        }
        heldout_tokens += one.tokens;
        per_document.push(one);
    }
    let per_token = if heldout_tokens > 0 { total / heldout_tokens as f64 } else { f64::NAN };
    let report =
        CompletionReport { documents: usable.len(), observed_tokens, heldout_tokens, total_log_likelihood: total, per_token, perplexity: (-per_token).exp() };
    Ok((report, per_document))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference values of FNV-1a-64 (from its specification's test vectors).
    #[test]
    fn fnv_matches_the_reference_vectors() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    /// About half the tokens are held out, and a word's tokens are split
    /// independently: over 20 000 tokens the held-out share is within 4 binomial
    /// standard errors (4 · sqrt(0.25 / 20 000) ≈ 0.014) of one half.
    #[test]
    fn split_holds_out_about_half() {
        let n = 20_000u32;
        let held = (0..n).filter(|&j| is_heldout("doc-7", "word", j)).count() as f64;
        let share = held / n as f64;
        assert!((share - 0.5).abs() < 4.0 * (0.25 / n as f64).sqrt(), "share {share}");
        let across_docs = (0..n).filter(|&d| is_heldout(&format!("d{d}"), "w", 0)).count() as f64 / n as f64;
        assert!((across_docs - 0.5).abs() < 4.0 * (0.25 / n as f64).sqrt(), "share across documents {across_docs}");
    }

    /// A model with fixed θ and β: the score must be Σ c · log Σ_k θ_k β_kw exactly,
    /// and documents with an empty half must be skipped.
    struct Fixed;
    impl TopicModel for Fixed {
        fn family(&self) -> &'static str {
            "fixed"
        }
        fn num_topics(&self) -> usize {
            2
        }
        fn topic_table(&self, _: &TableOptions) -> crate::models::TopicTable {
            let frequency = ndarray::array![[0.5, 0.5, 0.0], [0.1, 0.2, 0.7]];
            crate::models::TopicTable { exclusivity: frequency.clone(), frequency, topics: Vec::new() }
        }
        fn predict(&self, docs: &[EncodedDoc], _: &PredictOptions) -> Result<Vec<crate::models::DocPrediction>, ModelError> {
            Ok(docs
                .iter()
                .map(|_| crate::models::DocPrediction { topic_proportions: vec![0.25, 0.75], labels: Vec::new(), predicted_labels: Vec::new() })
                .collect())
        }
        fn diagnostics(&self) -> serde_json::Value {
            serde_json::Value::Null
        }
        fn encode(&self) -> Vec<u8> {
            Vec::new()
        }
        fn memory_bytes(&self) -> usize {
            0
        }
    }

    #[test]
    fn completion_scores_exactly_under_fixed_weights() {
        let doc = |observed: Vec<u32>, heldout: Vec<(u32, u32)>| CompletionDoc {
            id: "d".into(),
            observed: EncodedDoc { counts: vec![1; observed.len()], terms: observed, oov_tokens: 0 },
            heldout,
        };
        let docs = vec![doc(vec![0], vec![(1, 2), (2, 1)]), doc(vec![], vec![(0, 1)]), doc(vec![2], vec![])];
        let r = document_completion(&Fixed, &docs, &PredictOptions::default()).unwrap();
        // p(w=1) = 0.25·0.5 + 0.75·0.2 = 0.275; p(w=2) = 0.75·0.7 = 0.525.
        let expected = 2.0 * 0.275f64.ln() + 0.525f64.ln();
        assert_eq!((r.documents, r.observed_tokens, r.heldout_tokens), (1, 1, 3));
        assert!((r.total_log_likelihood - expected).abs() < 1e-12, "{} vs {expected}", r.total_log_likelihood);
        assert!((r.perplexity - (-expected / 3.0).exp()).abs() < 1e-12);
    }
}
