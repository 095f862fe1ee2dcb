//! Which documents of a corpus a fit trains on, validates on and holds out for testing.
//!
//! Why it exists: every family that evaluates itself on held-out documents (LDA and
//! DCNT by held-out likelihood, HPC by label prediction) must agree on one rule, so a
//! corpus tagged for a benchmark splits the same way for every model. When any document
//! carries a `split` tag, documents tagged `test` are held out for testing, those
//! tagged `validation` (or `valid`, `dev`) for validation (case-insensitive), and every
//! other document trains. Without tags each document draws one uniform u from its own
//! stream of the seed (independent of the thread count) and is a test document if
//! u < `test_fraction`, a validation document if u < `test_fraction` +
//! `validation_fraction`, else a training one. [`assign`] is the rule; [`test_mask`]
//! is its two-way case for the families without a validation split.

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

/// A tag that names the validation split.
pub fn is_validation_tag(tag: &str) -> bool {
    ["validation", "valid", "dev"].iter().any(|name| tag.eq_ignore_ascii_case(name))
}

/// Which part of the corpus a document belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    Train,
    Validation,
    Test,
}

/// The split a tag names (untagged and other tags train).
fn split_of_tag(tag: Option<&str>) -> Split {
    match tag {
        Some(t) if is_test_tag(t) => Split::Test,
        Some(t) if is_validation_tag(t) => Split::Validation,
        _ => Split::Train,
    }
}

/// Every document's split (see the module docs for the rule).
pub fn assign(corpus: &Corpus, test_fraction: f64, validation_fraction: f64, seed: u64) -> Vec<Split> {
    let n = corpus.num_documents();
    if has_tags(corpus) {
        let tags = corpus.splits.as_ref().expect("checked by has_tags");
        return tags.iter().map(|t| split_of_tag(t.as_deref())).collect();
    }
    if test_fraction + validation_fraction <= 0.0 {
        // No draw can land below 0.
        return vec![Split::Train; n];
    }
    (0..n)
        .map(|d| {
            let u: f64 = stream(seed, Purpose::Split, 0, d as u64).random();
            if u < test_fraction {
                Split::Test
            } else if u < test_fraction + validation_fraction {
                Split::Validation
            } else {
                Split::Train
            }
        })
        .collect()
}

/// For every document, whether it is held out for testing: [`assign`] without a
/// validation split.
pub fn test_mask(corpus: &Corpus, test_fraction: f64, seed: u64) -> Vec<bool> {
    assign(corpus, test_fraction, 0.0, seed).into_iter().map(|s| s == Split::Test).collect()
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
    fn tags_name_all_three_splits() {
        let c = corpus(&[Some("train"), Some("TEST"), None, Some("validation"), Some("Dev"), Some("valid"), Some("holdout")]);
        use Split::*;
        assert_eq!(assign(&c, 0.3, 0.3, 1), vec![Train, Test, Train, Validation, Validation, Validation, Train]);
    }

    /// Without tags the test split is the same with or without a validation split (the
    /// same draw decides), and the validation documents are the next slice of draws.
    #[test]
    fn fractions_nest_the_validation_split_after_the_test_split() {
        let c = corpus(&vec![None; 2000]);
        let two_way = test_mask(&c, 0.2, 7);
        let three_way = assign(&c, 0.2, 0.15, 7);
        assert_eq!(three_way.iter().map(|&s| s == Split::Test).collect::<Vec<_>>(), two_way);
        for (d, &s) in three_way.iter().enumerate() {
            let u: f64 = stream(7, Purpose::Split, 0, d as u64).random();
            assert_eq!(s == Split::Validation, (0.2..0.2 + 0.15).contains(&u), "document {d}, u = {u}");
        }
        // Binomial(2000, 0.15): sd ≈ 16; 5 sd ≈ 80.
        let validation = three_way.iter().filter(|&&s| s == Split::Validation).count() as f64;
        assert!((validation - 300.0).abs() < 80.0, "{validation}");
        assert!(assign(&c, 0.0, 0.0, 7).iter().all(|&s| s == Split::Train));
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
