//! Checks of seeded LDA: the sweeps sample the seeded model's posterior exactly (on a
//! case small enough to enumerate), a seeded topic keeps its seed words where an
//! unseeded fit puts them anywhere, the served distributions are the data's, and a
//! seeded fit does not depend on the thread count.

use crate::corpus::{build_corpus, DocTermMatrix};
use crate::models::chain::Chain;
use crate::models::lda::chain::LdaChain;
use crate::models::lda::sampler::tests::{lda_corpus, raw_options};
use crate::models::lda::tokens::Tokens;
use crate::models::lda::{fit_lda, LdaModel, LdaParams};
use crate::models::seeds::{ResolvedSeeds, SeedPrior, SeedRamp};
use crate::models::FitContext;
use serde_json::json;
use statrs::function::gamma::ln_gamma;

/// log of the seeded model's joint p(w, z) up to a constant ([`crate::models::seeds`]),
/// for assignments `z` of the tokens `words` (document `docs[i]` for token i):
/// Dirichlet-multinomial documents (symmetric α), and per topic Π_w Γ(n_kw + c_kw + β)/
/// Γ(c_kw + β) · Γ(Vβ)/Γ(n_k + Vβ) with the pseudo-counts c = `prior(w, k)`.
#[allow(clippy::too_many_arguments)]
fn log_joint(z: &[usize], words: &[usize], docs: &[usize], k: usize, v: usize, alpha: f64, beta: f64, prior: &dyn Fn(usize, usize) -> f64) -> f64 {
    let num_docs = docs.iter().max().map_or(0, |d| d + 1);
    let mut lp = 0.0;
    for d in 0..num_docs {
        let mut n = vec![0.0; k];
        for (_, &t) in z.iter().enumerate().filter(|(i, _)| docs[*i] == d) {
            n[t] += 1.0;
        }
        lp += n.iter().map(|&c| ln_gamma(c + alpha) - ln_gamma(alpha)).sum::<f64>() - ln_gamma(n.iter().sum::<f64>() + k as f64 * alpha);
    }
    for t in 0..k {
        let mut total = 0.0;
        for w in 0..v {
            let a = beta + prior(w, t);
            let c = z.iter().zip(words).filter(|(&zt, &ww)| zt == t && ww == w).count() as f64;
            lp += ln_gamma(c + a) - ln_gamma(a);
            total += c;
        }
        lp += ln_gamma(v as f64 * beta) - ln_gamma(v as f64 * beta + total);
    }
    lp
}

/// Every token's marginal p(z_i = 0) under the seeded prior, by enumerating all K^N
/// assignments of a 7-token corpus (K = 2), against the same marginals estimated from
/// 40 000 sweeps of the sampler a seeded fit runs. The tolerance is 4.5 standard errors
/// of the estimate, the standard error taken from 100 batch means (which carry the
/// chain's autocorrelation); 7 comparisons at 4.5 SE fail by chance with probability
/// about 5 · 10⁻⁵. Without the seeds every marginal is 0.5 by symmetry; with them token
/// 0 (seed word 0, 3 pseudo-counts in topic 0) sits well above.
#[test]
fn seeded_sweeps_sample_the_seeded_posterior() {
    let rows = vec![vec![(0u32, 2u32), (1, 1), (2, 1)], vec![(1, 1), (2, 2)]];
    let counts = DocTermMatrix::from_rows(rows);
    let tokens = Tokens::from_counts(&counts, 3);
    let (k, v, alpha, beta) = (2usize, 3usize, 0.5, 0.2);
    let params = LdaParams::from_json(&json!({"topics": k, "alpha": alpha, "beta": beta, "iterations": 10})).unwrap();
    let seeds = ResolvedSeeds { words: vec![vec![0, 2]], missing: vec![] };
    // Word 0 has 2 tokens and word 2 three: strength 1.5 gives ⌈3⌉ = 3 and ⌈4.5⌉ = 5.
    let prior = SeedPrior::new(&seeds, 1.5, &[2, 2, 3], k);
    let pseudo = |w: usize, t: usize| match (w, t) {
        (0, 0) => 3.0,
        (2, 0) => 5.0,
        _ => 0.0,
    };
    let words: Vec<usize> = tokens.words.iter().map(|&w| w as usize).collect();
    let docs: Vec<usize> = (0..tokens.num_docs()).flat_map(|d| std::iter::repeat_n(d, tokens.doc_ptr[d + 1] - tokens.doc_ptr[d])).collect();
    let n = words.len();
    let marginals = |prior: &dyn Fn(usize, usize) -> f64| {
        let mut exact = vec![0.0; n];
        let mut total = 0.0;
        for code in 0..(1usize << n) {
            let z: Vec<usize> = (0..n).map(|i| (code >> i) & 1).collect();
            let p = log_joint(&z, &words, &docs, k, v, alpha, beta, prior).exp();
            total += p;
            for i in 0..n {
                if z[i] == 0 {
                    exact[i] += p;
                }
            }
        }
        exact.into_iter().map(|x| x / total).collect::<Vec<f64>>()
    };
    let exact = marginals(&pseudo);
    let unseeded = marginals(&|_, _| 0.0);
    let mut chain = LdaChain::seeded(&params, &tokens, 5, SeedRamp::none(prior));
    let (batches, per_batch) = (100usize, 400usize);
    let mut batch_means = vec![vec![0.0; n]; batches];
    for (b, means) in batch_means.iter_mut().enumerate() {
        for s in 0..per_batch {
            chain.step(5, 1 + b * per_batch + s).unwrap();
            for (m, &t) in means.iter_mut().zip(&chain.state.z) {
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
    // The case tells the prior apart: without it every marginal is 0.5 by symmetry.
    assert!(unseeded.iter().all(|p| (p - 0.5).abs() < 1e-12), "{unseeded:?}");
    assert!(exact[0] > 0.6, "the seeds pull token 0 to topic 0 ({:.3})", exact[0]);
}

/// The top `n` words of topic `t` (by the served φ), as corpus word strings.
fn top_words(model: &LdaModel, corpus: &crate::corpus::Corpus, t: usize, n: usize) -> Vec<String> {
    let v = model.num_terms;
    let row = &model.word_rates[t * v..(t + 1) * v];
    let mut order: Vec<usize> = (0..v).collect();
    order.sort_by(|&a, &b| row[b].total_cmp(&row[a]));
    order.into_iter().take(n).map(|w| corpus.lexicon.word(w as u32).to_string()).collect()
}

/// Seeds that persist: topic 0 is seeded with three words of the planted topic 2's
/// block, and in every one of four fits (seeds 1–4) those words are among topic 0's top
/// 10. An unseeded fit puts planted topic 2 at any of its 4 topic ids, so topic 0 holds
/// those words in about a quarter of fits; all four by chance: about 0.4 %. The served
/// distributions are the data's (each row sums to 1 without the pseudo-counts).
#[test]
fn a_seeded_topic_keeps_its_seed_words_where_an_unseeded_one_wanders() {
    let (_, docs) = lda_corpus(4, 40, 200, 40, 0.3, 21);
    let corpus = build_corpus(raw_options(), &[], docs).expect("corpus builds");
    let seeds = ["w020", "w023", "w027"];
    let seeded = LdaParams::from_json(&json!({"topics": 4, "iterations": 60, "seed_words": [{"name": "third", "words": seeds}]})).unwrap();
    let unseeded = LdaParams::from_json(&json!({"topics": 4, "iterations": 60})).unwrap();
    let mut unseeded_kept = 0;
    for seed in 1..=4 {
        let model = FitContext::silent(|ctx| fit_lda(&corpus, &seeded, seed, ctx).unwrap());
        let top = top_words(&model, &corpus, 0, 10);
        assert!(seeds.iter().all(|s| top.iter().any(|w| w == s)), "seed {seed}: topic 0's top words {top:?}");
        let v = model.num_terms;
        for t in 0..4 {
            let sum: f64 = model.word_rates[t * v..(t + 1) * v].iter().sum();
            assert!((sum - 1.0).abs() < 1e-9, "topic {t} sums to {sum}");
        }
        let plain = FitContext::silent(|ctx| fit_lda(&corpus, &unseeded, seed, ctx).unwrap());
        let top = top_words(&plain, &corpus, 0, 10);
        unseeded_kept += seeds.iter().all(|s| top.iter().any(|w| w == s)) as usize;
    }
    assert!(unseeded_kept < 4, "the unseeded fits put planted topic 2 at topic 0 every time: the test would not tell seeds apart");
}

/// A seeded fit gives the same model on 1 and 2 threads, and reports its seeds and the
/// seed words it left out.
#[test]
fn seeded_fits_do_not_depend_on_thread_count_and_report_their_seeds() {
    let (_, docs) = lda_corpus(4, 40, 80, 30, 0.3, 5);
    let corpus = build_corpus(raw_options(), &[], docs).expect("corpus builds");
    let params = LdaParams::from_json(&json!({
        "topics": 4, "iterations": 20, "missing_seed_words": "ignore",
        "seed_words": [{"name": "a", "words": ["w001", "nowhere"]}, {"name": "b", "words": ["w015"]}]
    }))
    .unwrap();
    let fit = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| FitContext::silent(|ctx| fit_lda(&corpus, &params, 3, ctx).unwrap()))
    };
    let (a, b) = (fit(1), fit(2));
    assert_eq!(a.word_rates, b.word_rates);
    assert_eq!(a.final_loglik_per_token, b.final_loglik_per_token);
    use crate::models::TopicModel;
    let d = a.diagnostics();
    assert_eq!(d["seeds"]["topics"][0], json!({"topic": 0, "name": "a", "words": ["w001"]}));
    assert_eq!(d["seeds"]["missing_words"], json!([{"topic": 0, "word": "nowhere"}]));
    let strict = LdaParams { missing_seed_words: crate::models::seeds::MissingSeedWords::Reject, ..params.clone() };
    let err = FitContext::silent(|ctx| fit_lda(&corpus, &strict, 3, ctx).unwrap_err());
    assert!(err.to_string().contains("seed_words[0].words[1]"), "{err}");
}

/// A fresh seeded chain ramps its pseudo-counts up over a third of its burn-in (none
/// before the first sweep, ⌈(i/R) c⌉ at sweep i, the full prior from sweep R on), and a
/// seeded fit checkpointed inside the ramp and after it and resumed on 2 threads ends
/// in the uninterrupted fit's bytes (each sweep of the ramp sets its own prior).
#[test]
fn the_seeds_ramp_up_and_a_fit_resumed_inside_the_ramp_is_the_same_fit() {
    let seeds = ResolvedSeeds { words: vec![vec![0, 2]], missing: vec![] };
    let full = SeedPrior::new(&seeds, 1.0, &[30, 1, 12], 2);
    let ramp = SeedRamp::fresh(full.clone(), 30);
    assert_eq!(ramp.after(0).entries(), &[(0, 0, 0), (2, 0, 0)], "no pseudo-count before the first sweep");
    assert_eq!(ramp.at(1).unwrap().entries(), &[(0, 0, 3), (2, 0, 2)], "⌈30/10⌉ and ⌈12/10⌉");
    assert_eq!(ramp.at(5).unwrap().entries(), &[(0, 0, 15), (2, 0, 6)]);
    assert_eq!(ramp.at(10).unwrap(), full, "full at the ramp's last sweep");
    assert_eq!(ramp.at(11), None, "nothing changes after it");
    assert_eq!(ramp.after(12), full, "the full prior after the ramp");
    assert_eq!(SeedRamp::none(full.clone()).after(0), full);
    assert_eq!(SeedRamp::none(full).at(1), None);

    let (_, docs) = lda_corpus(4, 40, 80, 30, 0.3, 5);
    let corpus = build_corpus(raw_options(), &[], docs).expect("corpus builds");
    let params =
        LdaParams::from_json(&json!({"topics": 4, "iterations": 24, "burn_in": 12, "seed_words": [{"name": "a", "words": ["w001", "w002"]}]})).unwrap();
    use crate::models::TopicModel;
    let run = |threads, resume| crate::models::test_kit::recorded_run(threads, resume, |ctx| fit_lda(&corpus, &params, 3, ctx).unwrap());
    let uninterrupted = run(1, None);
    let bytes = uninterrupted.model.encode();
    // The ramp is 4 sweeps: resumed after sweep 2 (inside it), 4 (its end) and 9.
    for it in [2usize, 4, 9] {
        let (saved_at, checkpoint) = &uninterrupted.checkpoints[it - 1];
        assert_eq!(*saved_at as usize, it);
        assert_eq!(run(2, Some(checkpoint)).model.encode(), bytes, "resumed after sweep {it}");
    }
}
