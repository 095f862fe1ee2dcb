//! Checks of seeded DCNT/SCNT: the z block samples the seeded model's conditional
//! posterior exactly given the sticks (on a case small enough to enumerate), a seeded
//! topic keeps its seed words where an unseeded fit puts them at any id, the served Ω is
//! the data's, and a seeded fit does not depend on the thread count.

use super::fit::fit_dcnt;
use super::params::{DcntParams, Priors};
use super::state::{DcntState, Documents};
use super::variant::Covariance;
use super::DcntModel;
use crate::corpus::{build_corpus, Corpus};
use crate::models::lda::sampler::tests::{lda_corpus, raw_options};
use crate::models::seeds::{ResolvedSeeds, SeedPrior};
use crate::models::{FitContext, TopicModel};
use crate::rng::{stream, Purpose};
use serde_json::json;
use statrs::function::gamma::ln_gamma;

/// Every token's marginal p(z_i = 0 | π, w) under the seeded prior, by enumerating all
/// 2^7 assignments of a 7-token corpus (K̄ = 2, each document's sticks fixed), against
/// the same marginals from 40 000 sweeps of the z block a scan runs
/// (`sample_assignments`). The tolerance is 4.5 standard errors from 100 batch means
/// (which carry the chain's autocorrelation): 7 comparisons fail by chance with
/// probability about 5 · 10⁻⁵. The seeds (words 0 and 2 in topic 0, 3 and 5
/// pseudo-counts) move the marginals away from the unseeded ones, which the test also
/// computes, so it tells the prior apart.
#[test]
fn the_seeded_z_block_samples_its_conditional_posterior() {
    let rows = vec![(vec![0u32, 1, 2], vec![2u32, 1, 1]), (vec![1u32, 2], vec![1u32, 2])];
    let docs = Documents::new(rows, vec![1.0; 2], 1, 3);
    let (k, v, beta) = (2usize, 3usize, 0.2);
    let priors = Priors { beta, ..Priors::default() };
    let seeds = ResolvedSeeds { words: vec![vec![0, 2]], missing: vec![] };
    // Word 0 has 2 tokens and word 2 three: strength 1.5 gives ⌈3⌉ = 3 and ⌈4.5⌉ = 5.
    let prior = SeedPrior::new(&seeds, 1.5, &[2, 2, 3], k);
    let pseudo = |w: usize, t: usize| match (w, t) {
        (0, 0) => 3.0,
        (2, 0) => 5.0,
        _ => 0.0,
    };
    let pis: [Vec<f64>; 2] = [vec![0.7, 0.3], vec![0.4, 0.6]];
    // Tokens in document order: document 0 holds words 0, 0, 1, 2; document 1 words 1, 2, 2.
    let words = [0usize, 0, 1, 2, 1, 2, 2];
    let doc_of = [0usize, 0, 0, 0, 1, 1, 1];
    let n = words.len();
    let marginals = |c: &dyn Fn(usize, usize) -> f64| {
        let mut exact = vec![0.0; n];
        let mut total = 0.0;
        for code in 0..(1usize << n) {
            let z: Vec<usize> = (0..n).map(|i| (code >> i) & 1).collect();
            let mut lp: f64 = (0..n).map(|i| pis[doc_of[i]][z[i]].ln()).sum();
            for t in 0..k {
                let mut size = 0.0;
                for w in 0..v {
                    let count = (0..n).filter(|&i| z[i] == t && words[i] == w).count() as f64;
                    lp += ln_gamma(count + c(w, t) + beta) - ln_gamma(c(w, t) + beta);
                    size += count;
                }
                lp -= ln_gamma(size + v as f64 * beta);
            }
            let p = lp.exp();
            total += p;
            for i in (0..n).filter(|&i| z[i] == 0) {
                exact[i] += p;
            }
        }
        exact.into_iter().map(|x| x / total).collect::<Vec<f64>>()
    };
    let (exact, unseeded) = (marginals(&pseudo), marginals(&|_, _| 0.0));
    let mut state = DcntState::init(&docs, k, Covariance::Diagonal, priors, 0, 0, prior, 5, &|| false);
    let (batches, per_batch) = (100usize, 400usize);
    let mut batch_means = vec![vec![0.0; n]; batches];
    for (b, means) in batch_means.iter_mut().enumerate() {
        for s in 0..per_batch {
            let sweep = (b * per_batch + s) as u64;
            for (d, pi) in pis.iter().enumerate() {
                let mut rng = stream(5, Purpose::DcntDocuments, sweep, d as u64);
                let drawn = state.sample_assignments(&docs, d, pi, &mut rng);
                state.apply_assignments(&docs, d, &drawn);
            }
            for (m, &t) in means.iter_mut().zip(&state.z) {
                *m += (t == 0) as u32 as f64 / per_batch as f64;
            }
        }
    }
    for i in 0..n {
        let mean = batch_means.iter().map(|m| m[i]).sum::<f64>() / batches as f64;
        let var = batch_means.iter().map(|m| (m[i] - mean).powi(2)).sum::<f64>() / (batches - 1) as f64;
        let se = (var / batches as f64).sqrt();
        assert!((mean - exact[i]).abs() < 4.5 * se.max(1e-3), "token {i}: sampled {mean:.4} ± {se:.4}, exact {:.4}", exact[i]);
    }
    assert!((exact[0] - unseeded[0]).abs() > 0.05, "the seeds move token 0's marginal ({:.3} against {:.3})", exact[0], unseeded[0]);
}

/// The top `n` words of topic `t` (by the served Ω), as corpus word strings.
fn top_words(model: &DcntModel, corpus: &Corpus, t: usize, n: usize) -> Vec<String> {
    let v = model.num_terms;
    let row = &model.topic_word[t * v..(t + 1) * v];
    let mut order: Vec<usize> = (0..v).collect();
    order.sort_by(|&a, &b| row[b].total_cmp(&row[a]));
    order.into_iter().take(n).map(|w| corpus.lexicon.word(w as u32).to_string()).collect()
}

/// Seeds that persist in DCNT: topic 0 is seeded with three words of planted topic 2's
/// block, and in each of four fits (seeds 1–4) those words are among its top 10; each
/// served topic sums to 1 (the data's Ω, without the pseudo-counts). Unseeded fits (with
/// the same collapsed start a seeded fit takes by default) put planted topic 2 at some
/// other id in at least one of the four, so the check tells seeds apart.
#[test]
fn a_seeded_dcnt_topic_keeps_its_seed_words() {
    let (_, docs) = lda_corpus(4, 40, 200, 40, 0.3, 21);
    let corpus = build_corpus(raw_options(), &[], docs).expect("corpus builds");
    let seeds = ["w020", "w023", "w027"];
    let seeded = DcntParams::from_json(&json!({"topics": 4, "iterations": 60, "seed_words": [{"name": "third", "words": seeds}]})).unwrap();
    assert_eq!(seeded.warm_start, super::params::DEFAULT_WARM_START_WITH_COVARIATES, "seeds start collapsed by default");
    let unseeded = DcntParams::from_json(&json!({"topics": 4, "iterations": 60, "warm_start": seeded.warm_start})).unwrap();
    let mut unseeded_kept = 0;
    for seed in 1..=4 {
        let model = FitContext::silent(|ctx| fit_dcnt(&corpus, &seeded, Covariance::Full, seed, ctx).unwrap());
        let top = top_words(&model, &corpus, 0, 10);
        assert!(seeds.iter().all(|s| top.iter().any(|w| w == s)), "seed {seed}: topic 0's top words {top:?}");
        let v = model.num_terms;
        for t in 0..4 {
            let sum: f64 = model.topic_word[t * v..(t + 1) * v].iter().sum();
            assert!((sum - 1.0).abs() < 1e-9, "topic {t} sums to {sum}");
        }
        let plain = FitContext::silent(|ctx| fit_dcnt(&corpus, &unseeded, Covariance::Full, seed, ctx).unwrap());
        let top = top_words(&plain, &corpus, 0, 10);
        unseeded_kept += seeds.iter().all(|s| top.iter().any(|w| w == s)) as usize;
    }
    assert!(unseeded_kept < 4, "unseeded fits put planted topic 2 at topic 0 every time: the test would not tell seeds apart");
}

/// A seeded SCNT fit gives the same model on 1 and 2 threads, reports its seeds and the
/// seed word it left out, and a strict one names the missing word.
#[test]
fn seeded_fits_do_not_depend_on_thread_count_and_report_their_seeds() {
    let (_, docs) = lda_corpus(4, 40, 80, 30, 0.3, 5);
    let corpus = build_corpus(raw_options(), &[], docs).expect("corpus builds");
    let params = DcntParams::from_json(&json!({
        "topics": 4, "iterations": 20, "missing_seed_words": "ignore",
        "seed_words": [{"name": "a", "words": ["w001", "nowhere"]}, {"name": "b", "words": ["w015"]}]
    }))
    .unwrap();
    let fit = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| FitContext::silent(|ctx| fit_dcnt(&corpus, &params, Covariance::Diagonal, 3, ctx).unwrap()))
    };
    let (a, b) = (fit(1), fit(2));
    assert_eq!(a.encode(), b.encode());
    let d = a.diagnostics();
    assert_eq!(d["seeds"]["topics"][0], json!({"topic": 0, "name": "a", "words": ["w001"]}));
    assert_eq!(d["seeds"]["missing_words"], json!([{"topic": 0, "word": "nowhere"}]));
    let decoded = DcntModel::decode(&a.encode()).unwrap();
    assert_eq!(decoded, a, "seeds and missing words survive the encoding");
    let mut strict = params.clone();
    strict.seeds.missing = crate::models::seeds::MissingSeedWords::Reject;
    let err = FitContext::silent(|ctx| fit_dcnt(&corpus, &strict, Covariance::Diagonal, 3, ctx).unwrap_err());
    assert!(err.to_string().contains("seed_words[0].words[1]"), "{err}");
}

/// An unseeded model stored in version 7's layout (before seeds) decodes to the model
/// the current encoding holds, with no seeds and no missing seed words.
#[test]
fn a_version7_model_decodes_without_seeds() {
    let (_, docs) = lda_corpus(4, 40, 40, 20, 0.3, 9);
    let corpus = build_corpus(raw_options(), &[], docs).expect("corpus builds");
    let params = DcntParams::from_json(&json!({"topics": 3, "iterations": 6, "burn_in": 3})).unwrap();
    let model = FitContext::silent(|ctx| fit_dcnt(&corpus, &params, Covariance::Full, 2, ctx).unwrap());
    let old = super::model::as_version7(&model.encode());
    assert_eq!(old[0], 7, "the version 7 header");
    assert_eq!(DcntModel::decode(&old).unwrap(), model);
}
