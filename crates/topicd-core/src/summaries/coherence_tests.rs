//! Coherence against gensim: `tests/data/coherence_fixture.json` holds real documents
//! (topicd's tokens of `tests/data/appstream_300.jsonl`), fixed top-word lists and the
//! values gensim's `CoherenceModel` computed for them (made by
//! `bench/make_coherence_fixture.sh`, which records the gensim version).

use super::*;
use crate::corpus::{DocTermMatrix, TokenOrder};
use serde_json::Value;
use std::collections::HashMap;

const FIXTURE: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/coherence_fixture.json"));

struct Fixture {
    order: TokenOrder,
    counts: DocTermMatrix,
    topics: Vec<Vec<u32>>,
    cases: Vec<Value>,
}

fn fixture() -> Fixture {
    let v: Value = serde_json::from_str(FIXTURE).expect("fixture parses");
    let mut ids: HashMap<String, u32> = HashMap::new();
    let mut id = |w: &str| {
        let n = ids.len() as u32;
        *ids.entry(w.to_string()).or_insert(n)
    };
    let mut order = TokenOrder::new();
    let mut rows = Vec::new();
    for doc in v["documents"].as_array().unwrap() {
        let tokens: Vec<u32> = doc.as_array().unwrap().iter().map(|w| id(w.as_str().unwrap())).collect();
        rows.push(tokens.iter().map(|&t| (t, 1)).collect::<Vec<_>>());
        order.push(&tokens);
    }
    let topics = v["topics"].as_array().unwrap().iter().map(|t| t.as_array().unwrap().iter().map(|w| id(w.as_str().unwrap())).collect()).collect();
    Fixture { order, counts: DocTermMatrix::from_rows(rows), topics, cases: v["cases"].as_array().unwrap().clone() }
}

#[test]
fn every_measure_agrees_with_gensim_to_1e_6() {
    let f = fixture();
    assert!(f.cases.len() >= 5, "the fixture covers every measure");
    let words: Vec<u32> = f.topics.iter().flatten().copied().collect();
    for case in &f.cases {
        let measure = Measure::parse(case["measure"].as_str().unwrap()).unwrap();
        let occ = match &case["window"] {
            Value::Null => Occurrences::from_documents(&f.counts, &words),
            w if w == "document" => Occurrences::from_documents(&f.counts, &words),
            w => Occurrences::from_windows(&f.order, &words, w.as_u64().unwrap() as usize),
        };
        let (per_topic, avg) = model_coherence(measure, &occ, &f.topics);
        let expected: Vec<f64> = case["per_topic"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        assert_eq!(per_topic.len(), expected.len());
        for (k, (got, want)) in per_topic.iter().zip(&expected).enumerate() {
            assert!((got - want).abs() <= 1e-6, "{case}: topic {k}: topicd {got}, gensim {want}");
        }
        let want = case["coherence"].as_f64().unwrap();
        assert!((avg - want).abs() <= 1e-6, "{case}: mean {avg}, gensim {want}");
    }
}

#[test]
fn document_window_is_gensims_sliding_window_over_whole_documents() {
    // gensim's "document" NPMI in the fixture was computed with window_size = the
    // longest document; the sliding-window counter at that width is the document one.
    let f = fixture();
    let words: Vec<u32> = f.topics.iter().flatten().copied().collect();
    let by_doc = Occurrences::from_documents(&f.counts, &words);
    let by_win = Occurrences::from_windows(&f.order, &words, f.order.max_len());
    for m in [Measure::CNpmi, Measure::CV, Measure::UMass] {
        assert_eq!(model_coherence(m, &by_doc, &f.topics), model_coherence(m, &by_win, &f.topics));
    }
}

#[test]
fn a_small_corpus_by_hand() {
    // Documents {1,2}, {1,2}, {1}, {3}: D(1) = 3, D(2) = 2, D(1,2) = 2, N = 4.
    let counts = DocTermMatrix::from_rows(vec![vec![(1, 1), (2, 1)], vec![(1, 1), (2, 1)], vec![(1, 1)], vec![(3, 1)]]);
    let occ = Occurrences::from_documents(&counts, &[1, 2, 3]);
    // u_mass of [2, 1]: the one pair (w' = 1, w* = 2): ln((2/4 + ε) / (2/4)).
    let u = topic_coherence(Measure::UMass, &occ, &[2, 1]);
    assert!((u - ((0.5 + EPSILON) / 0.5f64).ln()).abs() < 1e-15);
    // NPMI(1, 2) = ln(0.5 / (0.75 · 0.5)) / −ln 0.5; NPMI(1, 3) = ln(ε / (0.75 · 0.25)) / −ln ε.
    let npmi12 = (0.5f64 / 0.375).ln() / -(0.5f64).ln();
    assert!((topic_coherence(Measure::CNpmi, &occ, &[1, 2]) - npmi12).abs() < 1e-9);
    let npmi13 = (EPSILON / 0.1875).ln() / -EPSILON.ln();
    assert!((topic_coherence(Measure::CNpmi, &occ, &[1, 3]) - npmi13).abs() < 1e-9);
    assert!(npmi13 < 0.0 && npmi12 > 0.0);
    // Words that always co-occur have c_v = 1 (identical context vectors).
    let same = DocTermMatrix::from_rows(vec![vec![(1, 1), (2, 1)], vec![(3, 1)]]);
    let occ = Occurrences::from_documents(&same, &[1, 2]);
    assert!((topic_coherence(Measure::CV, &occ, &[1, 2]) - 1.0).abs() < 1e-12);
}
