//! Unit tests of `corpus::builder`.

use super::*;
use crate::corpus::preprocess::StopWords;

fn text(id: &str, t: &str) -> RawDocument {
    RawDocument { id: Some(id.into()), text: Some(t.into()), ..Default::default() }
}

fn bow(id: &str, pairs: &[(&str, f64)]) -> RawDocument {
    RawDocument { id: Some(id.into()), counts: Some(pairs.iter().map(|(w, c)| (w.to_string(), *c)).collect()), ..Default::default() }
}

fn no_stop() -> PreprocessOptions {
    PreprocessOptions { stopwords: StopWords::None, ..Default::default() }
}

fn words(c: &Corpus) -> Vec<&str> {
    c.lexicon.words.iter().map(String::as_str).collect()
}

/// df: aa 4, bb 3, cc 2, dd 1, ee 1; tf: aa 4, bb 6, cc 2, dd 5, ee 1.
fn prune_docs() -> Vec<RawDocument> {
    vec![text("0", "aa bb bb cc"), text("1", "aa bb bb dd dd dd dd dd"), text("2", "aa bb bb cc"), text("3", "aa ee")]
}

fn build(opts: PreprocessOptions, docs: Vec<RawDocument>) -> Result<Corpus, CorpusError> {
    build_corpus(opts, &[], docs)
}

#[test]
fn basic_corpus() {
    let c = build(PreprocessOptions::default(), vec![text("a", "The cat sat on the mat. The cat!"), text("b", "A dog and a cat")]).unwrap();
    // tf: cat 3, dog 1, mat 1, sat 1 → frequency then word order.
    assert_eq!(words(&c), vec!["cat", "dog", "mat", "sat"]);
    assert_eq!(c.doc_ids, vec!["a", "b"]);
    assert_eq!(c.counts.row(0), (&[0u32, 2, 3][..], &[2u32, 1, 1][..]));
    assert_eq!(c.counts.row(1), (&[0u32, 1][..], &[1u32, 1][..]));
    assert_eq!(c.stats.num_documents, 2);
    assert_eq!(c.stats.num_terms, 4);
    assert_eq!(c.stats.num_tokens, 6);
    assert_eq!(c.stats.num_types_before_pruning, 4);
    assert_eq!(c.stats.num_labels, 0);
    assert_eq!(c.stats.tree_depth, 0);
    assert!(c.features.is_none() && c.splits.is_none());
    assert_eq!(c.doc_labels, vec![Vec::<u32>::new(), vec![]]);
    assert_eq!(c.num_documents(), 2);
    assert_eq!(c.num_terms(), 4);
    assert!(c.counts.check(Some(c.num_terms())).is_ok());
}

#[test]
fn ordering_by_frequency_then_word() {
    let c = build(no_stop(), prune_docs()).unwrap();
    assert_eq!(words(&c), vec!["bb", "dd", "aa", "cc", "ee"]);
}

#[test]
fn min_df_pruning() {
    let c = build(PreprocessOptions { min_df: 2, ..no_stop() }, prune_docs()).unwrap();
    assert_eq!(words(&c), vec!["bb", "aa", "cc"]);
    assert_eq!(c.stats.num_types_before_pruning, 5);
    let c = build(PreprocessOptions { min_df: 4, ..no_stop() }, prune_docs()).unwrap();
    assert_eq!(words(&c), vec!["aa"]);
}

#[test]
fn max_df_pruning() {
    // max 0.75 × 4 = 3 documents: aa (df 4) goes.
    let c = build(PreprocessOptions { max_df: 0.75, ..no_stop() }, prune_docs()).unwrap();
    assert_eq!(words(&c), vec!["bb", "dd", "cc", "ee"]);
    // max 0.5 × 4 = 2: bb (3) goes too; doc 3 keeps ee.
    let c = build(PreprocessOptions { max_df: 0.5, ..no_stop() }, prune_docs()).unwrap();
    assert_eq!(words(&c), vec!["dd", "cc", "ee"]);
    assert_eq!(c.stats.num_documents, 4);
}

#[test]
fn top_n_and_top_fraction() {
    let c = build(PreprocessOptions { top_n: Some(2), ..no_stop() }, prune_docs()).unwrap();
    assert_eq!(words(&c), vec!["bb", "dd"]);
    // Doc 3 ("aa ee") is left empty and dropped.
    assert_eq!(c.doc_ids, vec!["0", "1", "2"]);
    assert_eq!(c.stats.num_dropped_empty, 1);
    assert_eq!(c.stats.dropped_ids, vec!["3"]);

    // ceil(0.5 × 5) = 3.
    let c = build(PreprocessOptions { top_fraction: Some(0.5), ..no_stop() }, prune_docs()).unwrap();
    assert_eq!(words(&c), vec!["bb", "dd", "aa"]);
    // Both: the smaller limit (top_n 4 vs ceil(0.5 × 5) = 3).
    let c = build(PreprocessOptions { top_n: Some(4), top_fraction: Some(0.5), ..no_stop() }, prune_docs()).unwrap();
    assert_eq!(words(&c), vec!["bb", "dd", "aa"]);
    // Applied after the df filters: min_df 2 leaves {aa, bb, cc}; ceil(0.4 × 3) = 2.
    let c = build(PreprocessOptions { min_df: 2, top_fraction: Some(0.4), ..no_stop() }, prune_docs()).unwrap();
    assert_eq!(words(&c), vec!["bb", "aa"]);
    // top_n larger than the vocabulary keeps everything.
    let c = build(PreprocessOptions { top_n: Some(100), ..no_stop() }, prune_docs()).unwrap();
    assert_eq!(c.num_terms(), 5);
}

#[test]
fn top_fraction_float_noise() {
    // 30 distinct terms each once; 0.1 × 30 must keep exactly 3.
    let t: Vec<String> = (0..30).map(|i| format!("w{i:02}x")).collect();
    let c = build(PreprocessOptions { top_fraction: Some(0.1), ..no_stop() }, vec![text("d", &t.join(" "))]).unwrap();
    assert_eq!(words(&c), vec!["w00x", "w01x", "w02x"]);
}

#[test]
fn rows_remapped_correctly() {
    let c = build(PreprocessOptions { min_df: 2, ..no_stop() }, prune_docs()).unwrap();
    // words: bb=0, aa=1, cc=2.
    assert_eq!(c.counts.row(0), (&[0u32, 1, 2][..], &[2u32, 1, 1][..]));
    assert_eq!(c.counts.row(1), (&[0u32, 1][..], &[2u32, 1][..]));
    assert_eq!(c.counts.row(3), (&[1u32][..], &[1u32][..]));
    assert_eq!(c.stats.num_tokens, 4 + 3 + 4 + 1);
}

#[test]
fn bag_of_words_documents() {
    let c = build(
        PreprocessOptions { stem: true, ..Default::default() },
        vec![bow("x", &[("Running", 2.0), ("runs", 1.0), ("the", 9.0), ("zero", 0.0)]), text("y", "connections run")],
    )
    .unwrap();
    assert_eq!(words(&c), vec!["run", "connect"]);
    assert_eq!(c.counts.row(0), (&[0u32][..], &[3u32][..]));
    assert_eq!(c.counts.row(1), (&[0u32, 1][..], &[1u32, 1][..]));
}

#[test]
fn empty_documents_dropped() {
    let c = build(PreprocessOptions::default(), vec![text("a", "the and of"), text("b", "real words here"), text("c", "")]).unwrap();
    assert_eq!(c.doc_ids, vec!["b"]);
    assert_eq!(c.stats.num_dropped_empty, 2);
    assert_eq!(c.stats.dropped_ids, vec!["a", "c"]);
    assert_eq!(c.counts.num_rows(), 1);
}

#[test]
fn dropped_ids_capped() {
    let mut docs: Vec<RawDocument> = (0..150).map(|i| text(&format!("e{i}"), "the")).collect();
    docs.push(text("keep", "word"));
    let c = build(PreprocessOptions::default(), docs).unwrap();
    assert_eq!(c.stats.num_dropped_empty, 150);
    assert_eq!(c.stats.dropped_ids.len(), 100);
    assert_eq!(c.stats.dropped_ids[99], "e99");
}

#[test]
fn empty_corpus_errors() {
    let e = build(PreprocessOptions::default(), vec![]).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("documents"));
    assert_eq!(e.message, "corpus has no documents");

    let e = build(PreprocessOptions::default(), vec![text("a", "the of"), text("b", "")]).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("documents"));
    assert!(e.message.contains("empty after preprocessing"), "{}", e.message);

    // Terms exist but pruning removes them all.
    let e = build(PreprocessOptions { min_df: 2, ..Default::default() }, vec![text("a", "apple"), text("b", "banana")]).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("documents"));
    assert!(e.message.contains("min_df"), "{}", e.message);
}

#[test]
fn default_ids_and_duplicates() {
    let mut b = CorpusBuilder::new(PreprocessOptions::default(), &[]).unwrap();
    b.add_document(RawDocument { text: Some("hello".into()), ..Default::default() }, 0, None).unwrap();
    b.add_document(text("x", "world"), 1, None).unwrap();
    let e = b.add_document(text("x", "again"), 2, Some(3)).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("documents[2].id"));
    assert_eq!(e.line, Some(3));
    assert!(e.message.contains("'x'"));
    // A missing id becomes the index, which collides with an explicit "0".
    let e = b.add_document(text("0", "again"), 3, None).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("documents[3].id"));
    assert_eq!(e.line, Some(3));
    let e = b.add_document(text("", "again"), 4, None).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("documents[4].id"));
    let c = b.finish().unwrap();
    assert_eq!(c.doc_ids, vec!["0", "x"]);
}

#[test]
fn keep_first_skips_and_reports_repeated_ids() {
    let options = PreprocessOptions { duplicate_ids: crate::corpus::preprocess::DuplicateIds::KeepFirst, ..PreprocessOptions::default() };
    let mut b = CorpusBuilder::new(options, &[]).unwrap();
    b.add_document(text("x", "world"), 0, None).unwrap();
    let mut repeated = text("x", "zebra giraffe");
    repeated.labels = Some(vec!["only_here".into()]);
    b.add_document(repeated, 1, None).unwrap();
    b.add_document(text("y", "zebra"), 2, None).unwrap();
    let c = b.finish().unwrap();
    assert_eq!(c.doc_ids, vec!["x", "y"]);
    assert_eq!(c.stats.num_duplicates_skipped, 1);
    assert_eq!(c.stats.duplicate_ids, vec!["x"]);
    // The skipped document left nothing behind: not its label, not its words.
    assert!(c.labels.is_empty());
    assert_eq!(c.stats.num_tokens, 2);
}

#[test]
fn text_and_counts_exclusive() {
    let mut b = CorpusBuilder::new(PreprocessOptions::default(), &[]).unwrap();
    let e = b.add_document(RawDocument::default(), 5, Some(6)).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("documents[5]"));
    assert_eq!(e.line, Some(6));
    let mut both = bow("a", &[("x", 1.0)]);
    both.text = Some("x".into());
    let e = b.add_document(both, 0, None).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("documents[0]"));
    assert!(e.message.contains("not both"));
    assert_eq!(b.num_documents(), 0);
}

#[test]
fn bad_counts() {
    let mut b = CorpusBuilder::new(PreprocessOptions::default(), &[]).unwrap();
    for (v, why) in [(-1.0, "negative"), (1.5, "integer"), (f64::NAN, "finite")] {
        let e = b.add_document(bow("a", &[("fine", 1.0), ("word", v)]), 2, None).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("documents[2].counts.word"));
        assert!(e.message.contains(why), "{}", e.message);
    }
    // Failed documents leave no trace (no vocabulary, no id).
    assert_eq!(b.num_types(), 0);
    b.add_document(bow("a", &[("fine", 1.0)]), 0, None).unwrap();
    assert_eq!(b.num_documents(), 1);
}

#[test]
fn bad_features() {
    let mut b = CorpusBuilder::new(PreprocessOptions::default(), &[]).unwrap();
    let mut d = text("a", "hello");
    d.features = Some([("year".to_string(), f64::INFINITY)].into_iter().collect());
    let e = b.add_document(d, 1, None).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("documents[1].features.year"));
}

#[test]
fn features_and_splits() {
    let mut d0 = text("a", "alpha");
    d0.features = Some([("z".to_string(), 1.0), ("b".to_string(), 2.0)].into_iter().collect());
    d0.split = Some("train".into());
    let d1 = text("b", "the");
    let mut d2 = text("c", "gamma");
    d2.features = Some([("m".to_string(), 3.0)].into_iter().collect());
    let d3 = text("d", "delta");
    let c = build(PreprocessOptions::default(), vec![d0, d1, d2, d3]).unwrap();
    // d1 dropped as empty.
    assert_eq!(c.doc_ids, vec!["a", "c", "d"]);
    let f = c.features.unwrap();
    assert_eq!(f.names, vec!["b", "m", "z"]);
    assert_eq!(f.values, vec![2.0, 0.0, 1.0, 0.0, 3.0, 0.0, 0.0, 0.0, 0.0]);
    assert_eq!(c.splits.unwrap(), vec![Some("train".to_string()), None, None]);
}

#[test]
fn labels_aligned_to_kept_docs() {
    let mut d0 = text("a", "alpha");
    d0.labels = Some(vec!["x/y".into()]);
    let mut d1 = text("b", "the");
    d1.labels = Some(vec!["dropped".into()]);
    let mut d2 = text("c", "beta");
    d2.paths = Some(vec![vec!["x".into()], vec!["x".into(), "z".into()]]);
    let c = build(PreprocessOptions::default(), vec![d0, d1, d2]).unwrap();
    assert_eq!(c.labels.names, vec!["x", "y", "dropped", "z"]);
    assert_eq!(c.doc_labels, vec![vec![1], vec![0, 3]]);
    assert_eq!(c.stats.num_labels, 4);
    assert_eq!(c.stats.tree_depth, 2);
}

#[test]
fn label_errors_carry_line() {
    let tree = [TreeEntry { label: "known".into(), parent: None }];
    let mut b = CorpusBuilder::new(PreprocessOptions::default(), &tree).unwrap();
    let mut d = text("a", "alpha");
    d.labels = Some(vec!["unknown".into()]);
    let e = b.add_document(d, 4, Some(5)).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("documents[4].labels"));
    assert_eq!(e.label.as_deref(), Some("unknown"));
    assert_eq!(e.line, Some(5));
    assert_eq!(b.num_documents(), 0);
    assert_eq!(b.num_types(), 0);
}

#[test]
fn explicit_tree_and_options_validated() {
    let bad_tree = [TreeEntry { label: "a".into(), parent: Some("b".into()) }];
    let e = CorpusBuilder::new(PreprocessOptions::default(), &bad_tree).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("tree[0].parent"));
    let e = CorpusBuilder::new(PreprocessOptions { max_df: 0.0, ..Default::default() }, &[]).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("preprocess.max_df"));
    // The explicit tree's labels count even if no document uses them.
    let tree = [TreeEntry { label: "r".into(), parent: None }, TreeEntry { label: "s".into(), parent: Some("r".into()) }];
    let mut d = text("a", "alpha");
    d.labels = Some(vec!["s".into()]);
    let c = build_corpus(PreprocessOptions::default(), &tree, vec![d]).unwrap();
    assert_eq!(c.stats.num_labels, 2);
    assert_eq!(c.stats.tree_depth, 2);
    assert_eq!(c.doc_labels, vec![vec![1]]);
}

#[test]
fn serde_roundtrip_of_corpus() {
    let mut d0 = text("a", "Cats chase mice. Cats sleep.");
    d0.labels = Some(vec!["pets/cats".into()]);
    d0.features = Some([("len".to_string(), 5.0)].into_iter().collect());
    let mut d1 = text("b", "Dogs chase cats");
    d1.labels = Some(vec!["pets/dogs".into()]);
    d1.split = Some("test".into());
    let c = build(PreprocessOptions { stem: true, ..Default::default() }, vec![d0, d1]).unwrap();
    let json = serde_json::to_string(&c).unwrap();
    let back: Corpus = serde_json::from_str(&json).unwrap();
    assert_eq!(back.lexicon, c.lexicon);
    assert_eq!(back.counts, c.counts);
    assert_eq!(back.labels, c.labels);
    assert_eq!(back.doc_ids, c.doc_ids);
    assert_eq!(back.doc_labels, c.doc_labels);
    assert_eq!(back.features, c.features);
    assert_eq!(back.splits, c.splits);
    // Covariates, and their summaries in the stats, travel in the blob's trailer only.
    assert_eq!(back.stats, CorpusStats { covariates: Vec::new(), ..c.stats.clone() });
    assert_eq!(c.stats.covariates.len(), 1, "the feature is a covariate");
    // Indexes are rebuilt and usable.
    assert_eq!(back.lexicon.id("cat"), Some(0));
    assert_eq!(back.labels.id("dogs"), c.labels.id("dogs"));
    assert!(back.labels.id("dogs").is_some());
    let p = back.lexicon.pipeline();
    let e = back.lexicon.encode_text(&p, "A cat chasing birds");
    assert_eq!(e.terms, vec![back.lexicon.id("cat").unwrap(), back.lexicon.id("chase").unwrap()]);
    assert_eq!(e.oov_tokens, 1);
}

#[test]
fn prediction_encoding_matches_corpus() {
    let docs = vec![text("a", "Running dogs and running cats; the dog's ball."), bow("b", &[("Dogs", 2.0), ("BALLS", 1.0)])];
    let opts = PreprocessOptions { stem: true, ..Default::default() };
    let c = build(opts, docs.clone()).unwrap();
    let lex = &c.lexicon;
    let p = lex.pipeline();
    for (d, raw) in docs.iter().enumerate() {
        let e = match (&raw.text, &raw.counts) {
            (Some(t), None) => lex.encode_text(&p, t),
            (None, Some(b)) => lex.encode_counts(&p, b).unwrap(),
            _ => unreachable!(),
        };
        assert_eq!(e.oov_tokens, 0);
        let (terms, counts) = c.counts.row(d);
        assert_eq!((&e.terms[..], &e.counts[..]), (terms, counts), "doc {d}");
    }
}

/// A synthetic corpus of ~600k tokens; checks the shape and a loose time bound.
#[test]
fn larger_corpus_builds_quickly() {
    let vocab: Vec<String> = (0..5000).map(|i| format!("word{i}x")).collect();
    let mut state = 12345u64;
    let mut next = || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 33) as usize
    };
    let docs: Vec<RawDocument> = (0..1000)
        .map(|d| {
            let t: Vec<&str> = (0..600).map(|_| vocab[next() % 5000].as_str()).collect();
            text(&format!("d{d}"), &t.join(" "))
        })
        .collect();
    let start = std::time::Instant::now();
    let c = build(PreprocessOptions { stem: true, min_df: 2, ..Default::default() }, docs).unwrap();
    let elapsed = start.elapsed();
    assert_eq!(c.stats.num_tokens, 600_000);
    assert_eq!(c.num_documents(), 1000);
    assert!(c.num_terms() > 4000 && c.num_terms() <= 5000);
    assert!(c.counts.check(Some(c.num_terms())).is_ok());
    assert!(elapsed.as_secs() < 20, "took {elapsed:?}");
}

#[test]
fn meta_is_kept_for_kept_documents_and_bounded() {
    let with_meta = |id: &str, t: &str, meta: serde_json::Value| RawDocument { meta: meta.as_object().cloned(), ..text(id, t) };
    let docs = vec![
        with_meta("a", "alpha beta", serde_json::json!({"title": "A"})),
        text("b", "the"),
        text("c", "beta gamma"),
        with_meta("d", "alpha", serde_json::json!({"url": "u"})),
    ];
    let c = build(PreprocessOptions { stopwords: StopWords::English, ..no_stop() }, docs).unwrap();
    assert_eq!(c.doc_ids, ["a", "c", "d"], "b is empty after stop words");
    assert_eq!(c.doc_meta, Some(vec![Some(r#"{"title":"A"}"#.to_string()), None, Some(r#"{"url":"u"}"#.to_string())]));
    assert_eq!(build(no_stop(), vec![text("a", "alpha")]).unwrap().doc_meta, None, "no meta, no column");

    let mut b = CorpusBuilder::new(no_stop(), &[]).unwrap();
    let big = serde_json::json!({"x": "y".repeat(crate::corpus::meta::MAX_META_BYTES)});
    let e = b.add_document(with_meta("a", "alpha", big), 5, Some(6)).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("documents[5].meta"));
    assert_eq!(e.line, Some(6));
    assert_eq!(b.num_documents(), 0, "nothing of the refused document is kept");
}
