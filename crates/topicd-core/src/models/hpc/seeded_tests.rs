//! Checks of seeded PCM: a seeded topic is built around its seed words (where an
//! unseeded fit puts that planted topic at any id), a seeded fit does not depend on the
//! thread count and reports its seeds, and HPC refuses seeds. The seeds' term in the
//! rate conditional is checked by finite differences in [`super::rates`].

use super::fit::fit_hpc;
use super::model::HpcModel;
use super::params::HpcParams;
use super::variant::Supervision;
use crate::corpus::{build_corpus, Corpus};
use crate::models::lda::sampler::tests::{lda_corpus, raw_options};
use crate::models::{FitContext, TopicModel};
use serde_json::json;

/// The top `n` words of topic `t` by the served frequency E[β_tw], as corpus words.
fn top_words(model: &HpcModel, corpus: &Corpus, t: usize, n: usize) -> Vec<String> {
    let v = model.num_terms;
    let row = &model.frequency[t * v..(t + 1) * v];
    let mut order: Vec<usize> = (0..v).collect();
    order.sort_by(|&a, &b| row[b].total_cmp(&row[a]));
    order.into_iter().take(n).map(|w| corpus.lexicon.word(w as u32).to_string()).collect()
}

fn pcm(v: serde_json::Value) -> HpcParams {
    HpcParams::from_json(&v, Supervision::Unsupervised).unwrap()
}

/// Seeds that persist in PCM: topic 0 is seeded with three words of planted topic 2's
/// block (w020–w029), and in each of four fits (seeds 1–4) topic 0 is that planted
/// topic: the three seeds and at least 8 of its top 10 words come from the block, so
/// the seeds steer the whole topic, not only their own rates. An unseeded fit puts the
/// planted topic at any of its 4 ids, so topic 0 is it in about a quarter of fits; the
/// test asks that it is not in all four (by chance about 0.4 %), so it tells seeds apart.
#[test]
fn a_seeded_pcm_topic_is_built_around_its_seed_words() {
    let (_, docs) = lda_corpus(4, 40, 200, 40, 0.3, 21);
    let corpus = build_corpus(raw_options(), &[], docs).expect("corpus builds");
    let seeds = ["w020", "w023", "w027"];
    let seeded = pcm(json!({"topics": 4, "iterations": 60, "seed_words": [{"name": "third", "words": seeds}]}));
    let unseeded = pcm(json!({"topics": 4, "iterations": 60}));
    let is_planted_topic =
        |top: &[String]| top.iter().filter(|w| ("w020".."w030").contains(&w.as_str())).count() >= 8 && seeds.iter().all(|s| top.iter().any(|w| w == s));
    let mut unseeded_there = 0;
    for seed in 1..=4 {
        let model = FitContext::silent(|ctx| fit_hpc(&corpus, &seeded, Supervision::Unsupervised, seed, ctx).unwrap());
        let top = top_words(&model, &corpus, 0, 10);
        assert!(is_planted_topic(&top), "seed {seed}: topic 0's top words {top:?}");
        let plain = FitContext::silent(|ctx| fit_hpc(&corpus, &unseeded, Supervision::Unsupervised, seed, ctx).unwrap());
        unseeded_there += is_planted_topic(&top_words(&plain, &corpus, 0, 10)) as usize;
    }
    assert!(unseeded_there < 4, "unseeded fits put planted topic 2 at topic 0 every time: the test would not tell seeds apart");
}

/// A seeded PCM fit with two chains gives the same model on 1 and 2 threads, keeps the
/// seeded topics in place when pooling (their alignment is the identity there), reports
/// its seeds and the word it left out, survives the encoding; a strict one names the
/// missing word.
#[test]
fn seeded_pcm_fits_do_not_depend_on_thread_count_and_report_their_seeds() {
    let (_, docs) = lda_corpus(4, 40, 80, 30, 0.3, 5);
    let corpus = build_corpus(raw_options(), &[], docs).expect("corpus builds");
    let params = pcm(json!({
        "topics": 4, "iterations": 20, "chains": 2, "missing_seed_words": "ignore",
        "seed_words": [{"name": "a", "words": ["w001", "nowhere"]}, {"name": "b", "words": ["w015"]}]
    }));
    let fit = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| FitContext::silent(|ctx| fit_hpc(&corpus, &params, Supervision::Unsupervised, 3, ctx).unwrap()))
    };
    let (a, b) = (fit(1), fit(2));
    assert_eq!(a.encode(), b.encode());
    assert_eq!(&a.alignments[0].permutation[..2], &[0, 1], "seeded topics pooled in place");
    let d = a.diagnostics();
    assert_eq!(d["seeds"]["topics"][0], json!({"topic": 0, "name": "a", "words": ["w001"]}));
    assert_eq!(d["seeds"]["missing_words"], json!([{"topic": 0, "word": "nowhere"}]));
    let decoded = HpcModel::decode(&a.encode()).unwrap();
    assert_eq!((decoded.encode(), decoded.params.seeds.clone()), (a.encode(), params.seeds.clone()), "seeds survive the encoding");
    let mut strict = params.clone();
    strict.seeds.missing = crate::models::seeds::MissingSeedWords::Reject;
    let err = FitContext::silent(|ctx| fit_hpc(&corpus, &strict, Supervision::Unsupervised, 3, ctx).unwrap_err());
    assert!(err.to_string().contains("seed_words[0].words[1]"), "{err}");
}

/// HPC's topics are its labels: any seed key is refused by name; PCM refuses more seeds
/// than topics; the stored params give the seeds back.
#[test]
fn seeds_are_pcm_params() {
    for key in ["seed_words", "seed_strength", "missing_seed_words"] {
        let value = match key {
            "seed_words" => json!([{"name": "a", "words": ["x"]}]),
            "seed_strength" => json!(1.0),
            _ => json!("ignore"),
        };
        let err = HpcParams::from_json(&json!({ key: value }), Supervision::Labelled).unwrap_err();
        assert!(err.field == key && err.message.contains("labels"), "{err:?}");
    }
    let too_many = json!({"topics": 2, "seed_words": [{"name": "a", "words": ["x"]}, {"name": "b", "words": ["y"]}, {"name": "c", "words": ["z"]}]});
    assert_eq!(HpcParams::from_json(&too_many, Supervision::Unsupervised).unwrap_err().field, "seed_words");
    let p = pcm(json!({"topics": 3, "seed_strength": 1.5, "seed_words": [{"name": "a", "words": ["x"]}]}));
    assert_eq!(pcm(p.to_json(Supervision::Unsupervised)), p);
}
