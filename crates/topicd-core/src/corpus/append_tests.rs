//! Unit tests of `corpus::append`: the old corpus first and unchanged, the new one's
//! rows in the joined ids.

use super::*;
use crate::corpus::like::LikeBase;
use crate::corpus::preprocess::StopWords;
use crate::corpus::{build_corpus, CorpusBuilder, PreprocessOptions, RawDocument};
use serde_json::json;

fn doc(id: &str, text: &str, shop: &str) -> RawDocument {
    RawDocument {
        id: Some(id.into()),
        text: Some(text.into()),
        covariates: Some([("shop".to_string(), json!(shop))].into_iter().collect()),
        ..Default::default()
    }
}

fn options() -> PreprocessOptions {
    PreprocessOptions { stopwords: StopWords::None, min_df: 1, ..Default::default() }
}

fn like(base: &Corpus, docs: Vec<RawDocument>) -> Corpus {
    let mut b = CorpusBuilder::like(LikeBase::of(base, options())).unwrap();
    for (i, d) in docs.into_iter().enumerate() {
        b.add_document(d, i, None).unwrap();
    }
    b.finish().unwrap()
}

fn words_of(c: &Corpus, d: usize) -> Vec<(String, u32)> {
    let (terms, counts) = c.counts.row(d);
    let mut out: Vec<(String, u32)> = terms.iter().zip(counts).map(|(&t, &n)| (c.lexicon.word(t).to_string(), n)).collect();
    out.sort();
    out
}

#[test]
fn the_old_documents_come_first_unchanged_and_the_new_ones_keep_their_words() {
    let old = build_corpus(options(), &[], vec![doc("a", "apple banana apple", "north"), doc("b", "banana cherry", "south")]).unwrap();
    let middle = like(&old, vec![doc("c", "zebra apple", "south")]);
    // Made like the first corpus, not like `middle`: words are matched by name.
    let last = like(&old, vec![doc("d", "yak zebra zebra", "north")]);
    let joined = append(&append(&old, &middle).unwrap(), &last).unwrap();
    assert_eq!(joined.doc_ids, vec!["a", "b", "c", "d"]);
    assert_eq!(&joined.lexicon.words[..old.num_terms()], &old.lexicon.words[..]);
    for d in 0..2 {
        assert_eq!(joined.counts.row(d), old.counts.row(d), "an old document's row is unchanged");
    }
    assert_eq!(words_of(&joined, 2), words_of(&middle, 0));
    assert_eq!(words_of(&joined, 3), words_of(&last, 0));
    assert_eq!(joined.stats.num_tokens, old.stats.num_tokens + middle.stats.num_tokens + last.stats.num_tokens);
    let order = joined.token_order.as_ref().unwrap();
    let text: Vec<&str> = order.doc(3).iter().map(|&t| joined.lexicon.word(t)).collect();
    assert_eq!(text, vec!["yak", "zebra", "zebra"]);
    let shop = joined.covariates.as_ref().unwrap().column("shop").unwrap();
    let CovariateValues::Categorical { levels, codes } = &shop.values else { panic!("categorical") };
    let named: Vec<&str> = codes.iter().map(|&c| levels[c as usize].as_str()).collect();
    assert_eq!(named, vec!["north", "south", "south", "north"]);
    assert_eq!(joined.doc_excerpts.as_ref().unwrap().len(), 4);
}

#[test]
fn a_shared_id_or_other_preprocessing_is_refused_naming_the_corpus() {
    let old = build_corpus(options(), &[], vec![doc("a", "apple banana", "north")]).unwrap();
    let again = like(&old, vec![doc("a", "apple", "north")]);
    let e = append(&old, &again).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("corpus_id"));
    assert!(e.message.contains("'a'"), "{}", e.message);
    let stemmed = build_corpus(PreprocessOptions { stem: true, ..options() }, &[], vec![doc("z", "apples", "north")]).unwrap();
    assert_eq!(append(&old, &stemmed).unwrap_err().field.as_deref(), Some("corpus_id"));
}
