//! Unit tests of `corpus::like`: old words keep their ids, new ones follow, and what
//! the base lacks is refused by name.

use super::*;
use crate::corpus::preprocess::StopWords;
use crate::corpus::{build_corpus, CorpusBuilder, RawDocument};
use serde_json::json;

fn doc(id: &str, text: &str) -> RawDocument {
    RawDocument { id: Some(id.into()), text: Some(text.into()), ..Default::default() }
}

fn with_labels(mut d: RawDocument, labels: &[&str]) -> RawDocument {
    d.labels = Some(labels.iter().map(|l| l.to_string()).collect());
    d
}

fn with_covariate(mut d: RawDocument, name: &str, value: serde_json::Value) -> RawDocument {
    d.covariates = Some([(name.to_string(), value)].into_iter().collect());
    d
}

fn options() -> PreprocessOptions {
    PreprocessOptions { stopwords: StopWords::None, min_df: 1, ..Default::default() }
}

fn base() -> Corpus {
    let docs = vec![
        with_covariate(with_labels(doc("a", "apple banana apple cherry"), &["fruit"]), "shop", json!("north")),
        with_covariate(with_labels(doc("b", "banana cherry date"), &["food"]), "shop", json!("south")),
    ];
    build_corpus(options(), &[], docs).unwrap()
}

fn like(base: &Corpus, docs: Vec<RawDocument>) -> Result<Corpus, CorpusError> {
    let mut b = CorpusBuilder::like(LikeBase::of(base, options()))?;
    for (i, d) in docs.into_iter().enumerate() {
        b.add_document(d, i, None)?;
    }
    b.finish()
}

#[test]
fn old_words_keep_their_ids_and_new_words_follow_most_frequent_first() {
    let base = base();
    let new = like(&base, vec![doc("c", "zebra apple yak zebra"), doc("d", "zebra")]).unwrap();
    let old = base.lexicon.words.len();
    assert_eq!(&new.lexicon.words[..old], &base.lexicon.words[..], "every old word at its id, used or not");
    assert_eq!(&new.lexicon.words[old..], &["zebra".to_string(), "yak".to_string()]);
    let apple = base.lexicon.id("apple").unwrap();
    assert!(new.counts.row(0).0.contains(&apple), "an old word is counted at its old id");
    assert_eq!(new.labels, base.labels);
}

#[test]
fn a_new_word_enters_only_where_the_new_documents_alone_would_keep_it() {
    let base = base();
    let strict = PreprocessOptions { min_df: 2, ..options() };
    let base = {
        let docs = vec![doc("a", "apple banana"), doc("b", "apple banana cherry")];
        let _ = &base;
        build_corpus(strict.clone(), &[], docs).unwrap()
    };
    let mut b = CorpusBuilder::like(LikeBase::of(&base, strict)).unwrap();
    for (i, d) in [doc("c", "kiwi lime cherry"), doc("d", "kiwi apple")].into_iter().enumerate() {
        b.add_document(d, i, None).unwrap();
    }
    let new = b.finish().unwrap();
    // kiwi is in both new documents (df 2); lime and cherry in one. apple is old.
    assert_eq!(new.lexicon.words, vec!["apple", "banana", "kiwi"]);
}

#[test]
fn a_label_the_tree_lacks_is_refused_naming_it_and_its_document() {
    let base = base();
    let e = like(&base, vec![with_labels(doc("c", "apple"), &["fruit"]), with_labels(doc("d", "banana"), &["drink"])]).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("documents[1].labels"));
    assert_eq!(e.label.as_deref(), Some("drink"));
    assert!(like(&base, vec![with_labels(doc("c", "apple"), &["food"])]).is_ok());
}

#[test]
fn a_new_level_a_new_covariate_and_another_kind_are_refused_naming_them() {
    let base = base();
    let e = like(&base, vec![with_covariate(doc("c", "apple"), "shop", json!("north")), with_covariate(doc("d", "apple"), "shop", json!("east"))]).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("documents[1].covariates.shop"));
    assert!(e.message.contains("east"), "{}", e.message);
    let e = like(&base, vec![with_covariate(doc("c", "apple"), "year", json!(2020))]).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("documents[0].covariates.year"));
    let e = like(&base, vec![with_covariate(doc("c", "apple"), "shop", json!(3))]).unwrap_err();
    assert!(e.message.contains("category names"), "{}", e.message);
    assert!(like(&base, vec![with_covariate(doc("c", "apple"), "shop", json!("south"))]).is_ok());
}

/// With `Unknown::Drop`, a label the tree lacks leaves its document (the document
/// stays, with its known labels), a level the base never had becomes a missing value,
/// the tree and the levels are the base's, and what was dropped is counted; a covariate
/// the base lacks is still refused.
#[test]
fn dropped_labels_and_levels_are_left_out_and_counted() {
    let base = base();
    let docs = vec![
        with_covariate(with_labels(doc("c", "apple kiwi"), &["fruit", "drink"]), "shop", json!("east")),
        with_covariate(with_labels(doc("d", "kiwi banana"), &["drink"]), "shop", json!("north")),
        with_covariate(with_labels(doc("e", "cherry"), &["snack"]), "shop", json!("east")),
    ];
    let mut b = CorpusBuilder::like(LikeBase::of(&base, options()).with_unknown(Unknown::Drop)).unwrap();
    for (i, d) in docs.into_iter().enumerate() {
        b.add_document(d, i, None).unwrap();
    }
    let new = b.finish().unwrap();
    assert_eq!(new.num_documents(), 3, "every document stays");
    assert_eq!(new.labels, base.labels);
    let fruit = base.labels.id("fruit").unwrap();
    assert_eq!(new.doc_labels, vec![vec![fruit], vec![], vec![]]);
    let dropped = new.stats.unknown_dropped.clone().unwrap();
    assert_eq!(dropped.labels.into_iter().collect::<Vec<_>>(), vec![("drink".to_string(), 2), ("snack".to_string(), 1)]);
    assert_eq!(dropped.levels["shop"].iter().map(|(l, n)| (l.as_str(), *n)).collect::<Vec<_>>(), vec![("east", 2)]);
    let shop = new.covariates.as_ref().unwrap().column("shop").unwrap();
    assert!(shop.is_missing(0) && !shop.is_missing(1) && shop.is_missing(2), "east became missing, north stayed");
    let CovariateValues::Categorical { levels, codes } = &shop.values else { panic!("categorical") };
    assert_eq!(levels[codes[1] as usize], "north");
    assert!(levels.iter().all(|l| l != "east"));
    assert_eq!((new.stats.num_labels, new.stats.tree_depth), (base.stats.num_labels, base.stats.tree_depth));

    let mut b = CorpusBuilder::like(LikeBase::of(&base, options()).with_unknown(Unknown::Drop)).unwrap();
    b.add_document(with_covariate(doc("f", "apple"), "price", json!(3.0)), 0, None).unwrap();
    let e = b.finish().unwrap_err();
    assert!(e.to_string().contains("price"), "{e}");
}
