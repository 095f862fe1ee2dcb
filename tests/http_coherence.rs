//! Coherence over HTTP: the stored token order is the one gensim saw for the fixture,
//! `/coherence` and `/topics?with=coherence` compute gensim's measures over the model's
//! top words on its training corpus, bag-of-words corpora refuse sliding windows, and
//! bad options are 422s naming the parameter.

mod common;

use common::{appstream_docs, assert_problem, TestServer};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::Duration;
use topicd::corpus::{DocTermMatrix, TokenOrder};
use topicd::summaries::{model_coherence, Measure, Occurrences};

const FIXTURE: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/coherence_fixture.json"));

/// The fixture's documents as the library's inputs, with the word ↔ id map.
struct Tokens {
    order: TokenOrder,
    counts: DocTermMatrix,
    ids: HashMap<String, u32>,
}

fn tokens(docs: &[Value]) -> Tokens {
    let mut ids: HashMap<String, u32> = HashMap::new();
    let mut order = TokenOrder::new();
    let mut rows = Vec::new();
    for doc in docs {
        let t: Vec<u32> = doc
            .as_array()
            .unwrap()
            .iter()
            .map(|w| {
                let n = ids.len() as u32;
                *ids.entry(w.as_str().unwrap().to_string()).or_insert(n)
            })
            .collect();
        rows.push(t.iter().map(|&x| (x, 1)).collect::<Vec<_>>());
        order.push(&t);
    }
    Tokens { order, counts: DocTermMatrix::from_rows(rows), ids }
}

async fn fit_lda(s: &TestServer, cid: &str) -> String {
    let job = s.submit(cid, "lda", json!({"topics": 4, "iterations": 20}), 3).await;
    let done = s.wait(job["id"].as_str().unwrap(), Duration::from_secs(120)).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    done["model_id"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coherence_of_a_text_corpus_model_is_gensims() {
    let s = TestServer::start().await;
    let fixture: Value = serde_json::from_str(FIXTURE).unwrap();
    let docs = fixture["documents"].as_array().unwrap();
    // The fixture's documents are topicd's tokens of the first documents of the slice,
    // uploaded with default preprocessing as NDJSON (no labels needed).
    let corpus = s.upload(json!({"documents": appstream_docs(docs.len())})).await;
    let cid = corpus["id"].as_str().unwrap().to_string();
    let (st, _, text) = s.get_text(&format!("/v1/corpora/{cid}/tokens")).await;
    assert_eq!(st, 200);
    let stored: Vec<Value> = text.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()["tokens"].clone()).collect();
    assert_eq!(&stored, docs, "the stored token order is what gensim counted for the fixture");

    let mid = fit_lda(&s, &cid).await;
    let t = tokens(docs);
    for (query, measure, window) in [
        ("measure=c_v", Measure::CV, Some(110)),
        ("measure=u_mass&top_n=7", Measure::UMass, None),
        ("", Measure::CNpmi, Some(10)),
        ("measure=c_npmi&window=document", Measure::CNpmi, None),
        ("measure=c_uci&window=4&rank=frex", Measure::CUci, Some(4)),
    ] {
        let (st, v) = s.get(&format!("/v1/models/{mid}/coherence?{query}")).await;
        assert_eq!(st, 200, "{query}: {v}");
        assert_eq!(v["measure"], measure.name(), "{query}");
        assert_eq!(v["window"], window.map_or(json!("document"), |w| json!(w)), "{query}");
        let topics = v["topics"].as_array().unwrap();
        assert_eq!(topics.len(), 4);
        let top: Vec<Vec<u32>> = topics.iter().map(|tp| tp["words"].as_array().unwrap().iter().map(|w| t.ids[w.as_str().unwrap()]).collect()).collect();
        assert_eq!(top[0].len(), v["top_n"].as_u64().unwrap() as usize);
        let words: Vec<u32> = top.iter().flatten().copied().collect();
        let occ = match window {
            Some(w) => Occurrences::from_windows(&t.order, &words, w),
            None => Occurrences::from_documents(&t.counts, &words),
        };
        assert_eq!(v["num_virtual_documents"], occ.num_docs, "{query}");
        let (per_topic, mean) = model_coherence(measure, &occ, &top);
        for (k, tp) in topics.iter().enumerate() {
            assert!((tp["coherence"].as_f64().unwrap() - per_topic[k]).abs() < 1e-12, "{query} topic {k}");
        }
        assert!((v["mean"].as_f64().unwrap() - mean).abs() < 1e-12);
    }

    // The topic table with coherence: the same values for its top words.
    let (_, direct) = s.get(&format!("/v1/models/{mid}/coherence?measure=u_mass&top_n=5")).await;
    let (st, table) = s.get(&format!("/v1/models/{mid}/topics?n=8&with=coherence&measure=u_mass&top_n=5")).await;
    assert_eq!(st, 200, "{table}");
    assert_eq!(table["coherence"]["measure"], "u_mass");
    assert_eq!(table["coherence"]["mean"], direct["mean"]);
    for k in 0..4 {
        assert_eq!(table["topics"][k]["coherence"], direct["topics"][k]["coherence"]);
        assert_eq!(table["topics"][k]["words"].as_array().unwrap().len(), 8);
    }
    let (st, _, csv) = s.get_text(&format!("/v1/models/{mid}/topics?n=3&with=coherence&measure=u_mass&top_n=5&format=csv")).await;
    assert_eq!(st, 200);
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "topic,label,name,rank,word,frequency,exclusivity,frex,stability_chains,stability_matched,stability_similarity,coherence"
    );
    let first: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(first[11].parse::<f64>().unwrap(), direct["topics"][0]["coherence"].as_f64().unwrap());
    let (st, one) = s.get(&format!("/v1/models/{mid}/topics/2/frex?with=coherence&measure=u_mass&top_n=5&rank=frequency")).await;
    assert_eq!(st, 200, "{one}");
    assert_eq!(one["topic"]["coherence"], direct["topics"][2]["coherence"]);

    // Bad options name their parameter.
    for (query, field) in [
        ("measure=c_w2v", "query.measure"),
        ("top_n=1", "query.top_n"),
        ("top_n=101", "query.top_n"),
        ("window=0", "query.window"),
        ("window=wide", "query.window"),
        ("measure=u_mass&window=10", "query.window"),
        ("rank=alphabetical", "query.rank"),
        ("colour=red", "query"),
    ] {
        let (st, v) = s.get(&format!("/v1/models/{mid}/coherence?{query}")).await;
        assert_eq!(st, 422, "{query}: {v}");
        if field != "query" {
            assert_problem(st, &v, 422, Some(field));
        }
    }
    // A coherence option on the topic listing asks for coherence, as with=coherence does.
    let (st, implied) = s.get(&format!("/v1/models/{mid}/topics?measure=c_v")).await;
    assert_eq!(st, 200, "{implied}");
    let (_, explicit) = s.get(&format!("/v1/models/{mid}/topics?with=coherence&measure=c_v")).await;
    assert_eq!(implied["coherence"], explicit["coherence"]);
    assert_eq!(implied["coherence"]["measure"], "c_v");
    for empty in ["with=", "with=coherence,"] {
        let (st, v) = s.get(&format!("/v1/models/{mid}/topics?{empty}")).await;
        assert_problem(st, &v, 422, Some("query.with"));
    }
    let (st, v) = s.get(&format!("/v1/models/{mid}/topics?with=colour")).await;
    assert_problem(st, &v, 422, Some("query.with"));

    // Without its training corpus a model has no coherence (but keeps its topics).
    assert_eq!(s.delete(&format!("/v1/corpora/{cid}")).await, 204);
    let (st, v) = s.get(&format!("/v1/models/{mid}/coherence")).await;
    assert_problem(st, &v, 409, None);
    let (st, _) = s.get(&format!("/v1/models/{mid}/topics")).await;
    assert_eq!(st, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bags_of_words_have_document_coherence_only() {
    let s = TestServer::start().await;
    let docs: Vec<Value> = (0..40)
        .map(|d| {
            let (a, b) = if d % 2 == 0 { ("apple", "pear") } else { ("train", "rail") };
            json!({"id": format!("d{d}"), "counts": {a: 3, b: 2, "common": 1, format!("w{}", d % 5): 1}})
        })
        .collect();
    let corpus = s.upload(json!({"documents": docs, "preprocess": {"stopwords": "none", "min_df": 1}})).await;
    let cid = corpus["id"].as_str().unwrap().to_string();
    let (st, _, text) = s.get_text(&format!("/v1/corpora/{cid}/tokens")).await;
    assert_eq!(st, 200);
    let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(first["counts"]["apple"], 3, "{first}");
    let mid = fit_lda(&s, &cid).await;

    let (st, v) = s.get(&format!("/v1/models/{mid}/coherence?measure=c_v")).await;
    assert_problem(st, &v, 422, Some("query.measure"));
    let (st, v) = s.get(&format!("/v1/models/{mid}/coherence?measure=c_npmi&window=10")).await;
    assert_problem(st, &v, 422, Some("query.window"));
    let (st, v) = s.get(&format!("/v1/models/{mid}/coherence?measure=c_npmi&top_n=3")).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["window"], "document");
    assert_eq!(v["num_virtual_documents"], 40);
    let (st, v) = s.get(&format!("/v1/models/{mid}/coherence?measure=c_v&window=document&top_n=3")).await;
    assert_eq!(st, 200, "{v}");
    for tp in v["topics"].as_array().unwrap() {
        let c = tp["coherence"].as_f64().unwrap();
        assert!((-1.0..=1.0 + 1e-12).contains(&c), "{tp}");
    }
}
