//! Which documents of a corpus a fit holds out for testing.
//!
//! Why it exists: every family that evaluates itself on held-out documents (LDA and
//! DCNT by held-out likelihood, HPC by label prediction) must agree on one rule, so a
//! corpus tagged for a benchmark splits the same way for every model: documents tagged
//! `split: test` are held out (when any document carries a tag, untagged documents
//! train); without tags each document is held out with probability `test_fraction`,
//! decided by its own stream from the seed (independent of the thread count).

use crate::corpus::Corpus;
use crate::rng::{stream, Purpose};
use rand::RngExt;

/// Whether the corpus carries split tags at all.
pub fn has_tags(corpus: &Corpus) -> bool {
    corpus.splits.as_ref().is_some_and(|s| s.iter().any(Option::is_some))
}

/// A tag that names the test split.
pub fn is_test_tag(tag: &str) -> bool {
    tag.eq_ignore_ascii_case("test")
}

/// For every document, whether it is held out for testing.
pub fn test_mask(corpus: &Corpus, test_fraction: f64, seed: u64) -> Vec<bool> {
    let n = corpus.num_documents();
    if has_tags(corpus) {
        let tags = corpus.splits.as_ref().expect("checked by has_tags");
        return tags.iter().map(|t| t.as_deref().is_some_and(is_test_tag)).collect();
    }
    if test_fraction <= 0.0 {
        return vec![false; n];
    }
    (0..n).map(|d| stream(seed, Purpose::Split, 0, d as u64).random::<f64>() < test_fraction).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::{build_corpus, PreprocessOptions, RawDocument};

    fn corpus(tags: &[Option<&str>]) -> Corpus {
        let docs: Vec<RawDocument> = tags
            .iter()
            .enumerate()
            .map(|(i, t)| RawDocument { id: Some(format!("d{i}")), text: Some("alpha beta gamma".into()), split: t.map(str::to_string), ..Default::default() })
            .collect();
        let options = PreprocessOptions { stopwords: crate::corpus::StopWords::None, min_df: 1, ..Default::default() };
        build_corpus(options, &[], docs).unwrap()
    }

    #[test]
    fn tags_win_over_the_fraction() {
        let c = corpus(&[Some("train"), Some("TEST"), None, Some("validation")]);
        assert_eq!(test_mask(&c, 0.9, 1), vec![false, true, false, false]);
    }

    #[test]
    fn fraction_is_seeded_and_roughly_right() {
        let c = corpus(&vec![None; 2000]);
        let a = test_mask(&c, 0.25, 7);
        assert_eq!(a, test_mask(&c, 0.25, 7));
        assert_ne!(a, test_mask(&c, 0.25, 8));
        // Binomial(2000, 0.25): sd = sqrt(2000·0.25·0.75) ≈ 19.4; 5 sd ≈ 97.
        let held = a.iter().filter(|&&t| t).count() as f64;
        assert!((held - 500.0).abs() < 97.0, "{held}");
        assert!(test_mask(&c, 0.0, 7).iter().all(|&t| !t));
    }
}
