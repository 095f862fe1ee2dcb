//! The toy bars experiment of paper 001 §4.1 at reduced size, thread independence,
//! the encoding round trip and parameter errors of the `dcnt`/`scnt` families.
//!
//! Size: 500 documents of 100 tokens from the correlated variant (seed 5), 50 000
//! tokens, so each bar carries about 5 000 of them.
//!
//! Recovery bound: a fitted bar's Ω row is (up to β = 0.01 smoothing) the empirical
//! pixel frequencies of the ≈ 5 000 tokens assigned to it. With 5 pixels at 1/5 each,
//! the expected L1 distance of such an empirical distribution from the truth is
//! Σ_i sqrt(2 p_i (1 − p_i) / (π n)) = 5 · sqrt(2 · 0.16 / (π · 5 000)) ≈ 0.023. The
//! test asks for L1 < 0.1 (over four times that), which still fails if more than
//! about 4 % of a bar's mass sits on foreign pixels or two bars share a topic. Every
//! true bar must be matched by a *distinct* fitted topic.

use super::fit::fit_dcnt;
use super::model::DcntModel;
use super::params::DcntParams;
use super::variant::Covariance;
use crate::corpus::synthetic::{bars, BarsConfig, BarsCorpus, BarsVariant, NUM_BARS, NUM_PIXELS};
use crate::corpus::Corpus;
use crate::models::lda::{fit_lda, LdaParams};
use crate::models::registry::{lookup, Family};
use crate::models::{FitContext, PredictOptions, TopicModel};
use serde_json::json;

/// The registered topic-model family `name`.
fn family(name: &str) -> Option<&'static dyn crate::models::erased::TopicEntry> {
    lookup(name).and_then(Family::topics)
}

const L1_BOUND: f64 = 0.1;

fn corpus() -> (BarsCorpus, Corpus) {
    let b = bars(&BarsConfig { variant: BarsVariant::Correlated, documents: 500, tokens: 100, max_bars: 3, seed: 5 });
    let c = b.to_corpus();
    (b, c)
}

fn fit(corpus: &Corpus, params: serde_json::Value, covariance: Covariance, seed: u64) -> DcntModel {
    let p = DcntParams::from_json(&params).unwrap();
    FitContext::silent(|ctx| fit_dcnt(corpus, &p, covariance, seed, ctx)).expect("fit succeeds")
}

/// For each true bar, the fitted topic nearest in L1 and the distance.
fn best_matches(topic_word: &[f64], truth: &BarsCorpus) -> Vec<(usize, f64)> {
    let k = topic_word.len() / NUM_PIXELS;
    (0..NUM_BARS)
        .map(|b| {
            let bar = &truth.topics[b * NUM_PIXELS..(b + 1) * NUM_PIXELS];
            (0..k)
                .map(|t| (t, topic_word[t * NUM_PIXELS..(t + 1) * NUM_PIXELS].iter().zip(bar).map(|(x, y)| (x - y).abs()).sum::<f64>()))
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .expect("at least one topic")
        })
        .collect()
}

fn assert_recovers_all_bars(name: &str, topic_word: &[f64], truth: &BarsCorpus) {
    let matches = best_matches(topic_word, truth);
    let mut topics: Vec<usize> = matches.iter().map(|m| m.0).collect();
    topics.sort_unstable();
    topics.dedup();
    assert_eq!(topics.len(), NUM_BARS, "{name}: two bars share a topic: {matches:?}");
    for (b, (t, l1)) in matches.iter().enumerate() {
        assert!(*l1 < L1_BOUND, "{name}: bar {b} best matched by topic {t} at L1 {l1:.3}: {matches:?}");
    }
}

/// LDA with K = 10 recovers all ten bars: the best of five 300-sweep chains (seeds 1–5)
/// by final log joint.
///
/// Why five chains and α = 0.1 (this test used one chain at the default α = 50/K = 5,
/// and passed by luck): over seeds 1–30, one chain at α = 5 ends with every bar in its
/// own topic in only 16 of 30 chains (17 of 30 with the previous LDA kernel, so the
/// kernel is not the cause), and 6 of the 14 failed chains, which merge two bars, end
/// at a *higher* log joint than every successful one (−2.948 to −2.974 per token
/// against −2.977 to −2.990): a prior that spreads every document over all topics can
/// prefer the merge, while the generator gives each document 1–3 of the 10 bars. With
/// α = 0.1, a prior of that sparsity, the ten-bar state is the better one (−2.179 to
/// −2.186 per token in all 21 of 30 chains that reach it, −2.30 to −2.43 in the 9
/// stuck with a merged pair), so the usual remedy for local modes applies: restart and
/// keep the chain with the highest log joint.
/// With 9 of 30 chains stuck, all five are stuck with probability about 0.3⁵ ≈ 0.002.
#[test]
fn lda_k10_recovers_every_bar() {
    let (truth, corpus) = corpus();
    let lda_params = LdaParams::from_json(&json!({"topics": 10, "alpha": 0.1, "iterations": 300, "burn_in": 200})).unwrap();
    let best = (1..=5u64)
        .map(|seed| FitContext::silent(|ctx| fit_lda(&corpus, &lda_params, seed, ctx)).expect("lda fits"))
        .max_by(|a, b| a.final_loglik_per_token.total_cmp(&b.final_loglik_per_token))
        .expect("five chains");
    assert_recovers_all_bars("lda", &best.word_rates, &truth);
}

/// SCNT with K̄ = 10 and the paper's 10 000 scans recovers all ten bars.
///
/// What was wrong (a trace of seed 1 before the fix, state every 500 scans): the
/// chain was not stuck on an empty topic but in a pair of local modes. By scan 1 000
/// one topic held bars 1 and 4 together (≈ 8 800 tokens, L1 ≈ 1.0 to each) while bar 8
/// was split *by documents* over two topics (27 documents used one, 85 the other; each
/// document only one of them), and it stayed so to scan 10 000 (log joint −2.19 per
/// token against −2.086 for the ten bars). Freeing the twin needs every one of its
/// documents to move its bar to the other topic, token by token, through states where
/// the document's activation for the receiving topic is pushed down by every later
/// token (σ(−v_k)^{N_{>k}}); the chain never did. Two changes fixed it:
///
/// 1. the start now follows the paper (001 §4.1: "sample all other variables from
///    their prior"): z_dn ~ Mult(π(v_d)) instead of uniform, which made every topic
///    start as the same blend of all bars (test
///    `sampler::tests::initial_topics_are_drawn_from_the_stick_weights`);
/// 2. a within-document topic swap ([`super::swap`]), an exact Metropolis–Hastings
///    move (one proposal per document and scan, the default `topic_swaps = 1`) that
///    moves all of a document's tokens of one topic to another at once, with the
///    activations, so twins can exchange documents and an emptied topic can take a
///    bar from a merged one (checked by exact detailed balance on a small state and a
///    Geweke test; `geweke_tests`).
///
/// Seeds 1, 2, 3 (10 distinct topics, worst L1): each change alone leaves failures
/// (paper start only: seed 1 passes, 2 and 3 keep a merged pair; swaps only: seed 2
/// passes, 1 and 3 fail); with both, all three pass with worst L1 0.035, 0.034,
/// 0.035 and final log joint −2.087, −2.087, −2.085 per token. The swaps cost about
/// 12 % of a scan here; the test takes ≈ 33 s of CPU (31 s wall on a loaded 2-core
/// machine, about 20 s expected when idle).
#[test]
fn k10_scnt_recovers_every_bar() {
    let (truth, corpus) = corpus();
    let scnt = fit(&corpus, k10_params(), Covariance::Diagonal, 1);
    assert_recovers_all_bars("scnt", &scnt.topic_word, &truth);
}

/// The paper's 10 000 scans at K̄ = 10.
fn k10_params() -> serde_json::Value {
    json!({"topics": 10, "iterations": 10_000, "burn_in": 9_000, "thin": 10, "loglik_every": 1000})
}

/// DCNT with K̄ = 10 and the paper's 10 000 scans recovers all ten bars, and its topic
/// correlations separate the orientations (about 20 s optimised). Seed 1 (and 3);
/// seed 2 keeps a merged pair of bars, with the old start and no swaps as with the
/// paper's start and swaps (best L1 ≈ 0.83 to 0.87 for the merged bars), so DCNT's
/// recovery at this budget is seed-dependent too.
///
/// What "separate" can mean here. The correlated variant never mixes orientations, so
/// DCNT's topic correlations (supplement A.3) must show it: pairs of bars of one
/// orientation correlate more than pairs across, and pairs across negatively. They
/// are not positive within: (1) with one to three of five bars per document and
/// Dirichlet(1) shares, the true proportions of this corpus correlate negatively
/// within an orientation too (closed form in [`crate::corpus::synthetic`]; the test
/// checks the truth says so, so it cannot pass for the wrong reason); (2) even where
/// the truth is positive within (up to five bars), A.3 is not, for a reason of the
/// model, not of the sampler or the estimator (the traces in
/// `correlation_trace`): each document uses few topics, so its activations are
/// pushed to both extremes (an unused topic before a used one wants v ≪ 0, the last
/// used one v ≫ 0); the Gaussian prior fitted to them has a spread of ≈ 18 and draws
/// from it give nearly one-hot π, whose correlations sit near the value every pair
/// has under a Dirichlet with the same mean weights, −sqrt(p_a p_b / ((1 − p_a)(1 −
/// p_b))) ≈ −0.11 (what LDA's A.3 analogue gives for every pair).
///
/// The model's own correlation matrix, of the activations v (A Aᵀ + λ_v⁻¹ I), does
/// separate them by sign: positive within, negative across (asserted last).
///
/// So the test also asks for what the A.3 weights do show: within-orientation pairs
/// correlate *above* that Dirichlet baseline and pairs across *below* it (measured,
/// seed 1: within −0.083, baseline −0.110, across −0.132). The margins (≈ 0.025) are
/// many standard errors: the Monte Carlo SE of one correlation from S = 5 000 draws
/// is ≈ (1 − ρ²)/√S ≈ 0.014, of a mean over 20 or 25 pairs ≈ 0.003, and the
/// estimate from the last kept sample moved by less than 0.004 between scans 5 000
/// and 40 000 of the trace.
#[test]
fn k10_dcnt_recovers_every_bar_and_separates_orientations() {
    let (truth, corpus) = corpus();
    let dcnt = fit(&corpus, k10_params(), Covariance::Full, 1);
    assert_recovers_all_bars("dcnt", &dcnt.topic_word, &truth);
    let k = dcnt.params.topics;
    let estimate = super::scoring::correlations(&dcnt, 5_000, 3);
    let fitted = &estimate.correlation;
    let m = best_matches(&dcnt.topic_word, &truth);
    let (within, across) = orientation_means(&truth, |a, b| fitted[m[a].0 * k + m[b].0]);
    let (base_within, base_across) = orientation_means(&truth, |a, b| dirichlet_baseline(estimate.mean[m[a].0], estimate.mean[m[b].0]));
    let true_correlation = crate::corpus::synthetic::share_correlation(&truth.doc_bars);
    let (true_within, true_across) = orientation_means(&truth, |a, b| true_correlation[a * NUM_BARS + b]);
    println!(
        "dcnt correlations: within {within:.3}, across {across:.3} (Dirichlet baseline {base_within:.3}, {base_across:.3}); true proportions: within {true_within:.3}, across {true_across:.3}"
    );
    assert!(true_within > true_across && true_across < 0.0, "the generator's own correlations: {true_within}, {true_across}");
    assert!(within > across && across < 0.0, "fitted: within {within}, across {across}");
    assert!(within > base_within && across < base_across, "fitted within {within}, across {across}; Dirichlet baseline {base_within}, {base_across}");
    // The model's own correlation matrix, that of the activations (A Aᵀ + λ_v⁻¹ I, A the
    // square-root correlation matrix), is positive within an orientation and negative
    // across, by the sign of the mean: a horizontal document pushes every vertical
    // activation down and a vertical one every horizontal activation. Exact given the
    // sample (no Monte Carlo error). Measured, seed 1: within +0.515, across −0.458;
    // in the 40 000-scan trace the within mean stayed in [+0.39, +0.52] from scan
    // 1 000 on, so the sign cannot flip by chance between scans.
    let (activation_covariance, activation_correlation) = estimate.activation.expect("DCNT parameterises its activations");
    assert_eq!(activation_covariance.len(), k * k);
    let (a_within, a_across) = orientation_means(&truth, |a, b| activation_correlation[m[a].0 * k + m[b].0]);
    println!("dcnt activation correlations: within {a_within:.3}, across {a_across:.3}");
    assert!(a_within > 0.0 && a_across < 0.0, "activation correlations: within {a_within}, across {a_across}");
}

/// Correlation of two components of any Dirichlet with mean weights p_a, p_b (and of
/// one-hot draws with those probabilities): −sqrt(p_a p_b / ((1 − p_a)(1 − p_b))).
fn dirichlet_baseline(p_a: f64, p_b: f64) -> f64 {
    -(p_a * p_b / ((1.0 - p_a) * (1.0 - p_b))).sqrt()
}

/// Mean of `corr(a, b)` over pairs of bars of one orientation, and over pairs across.
fn orientation_means(truth: &BarsCorpus, corr: impl Fn(usize, usize) -> f64) -> (f64, f64) {
    let (mut within, mut across) = (Vec::new(), Vec::new());
    for a in 0..NUM_BARS {
        for b in a + 1..NUM_BARS {
            if truth.orientations[a] == truth.orientations[b] {
                within.push(corr(a, b))
            } else {
                across.push(corr(a, b))
            }
        }
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    (mean(&within), mean(&across))
}

/// DCNT with K̄ = 20 leaves the other ten topics nearly empty: the ten largest topics
/// hold at least 95 % of the tokens. The data have exactly ten topics; a duplicated
/// or split bar (the failure the stick-breaking prior should prevent) would move
/// thousands of tokens (a bar carries ≈ 5 000, 10 %), and 5 % is half a bar spread
/// over the ten spare topics. (Which ten topics they are, and whether they are the
/// bars yet, is the ignored recovery test's question.)
#[test]
fn k20_dcnt_puts_nearly_all_tokens_on_ten_topics() {
    let (_, corpus) = corpus();
    let model = fit(&corpus, json!({"topics": 20, "iterations": 300, "burn_in": 200, "thin": 10}), Covariance::Full, 2);
    let mut shares = model.topic_shares.clone();
    shares.sort_by(|a, b| b.total_cmp(a));
    let top_ten: f64 = shares[..10].iter().sum();
    assert!(top_ten >= 0.95, "ten largest topics hold {top_ten:.3}: {shares:?}");
    assert!(model.active_topics <= 12, "{} active topics: {shares:?}", model.active_topics);
}

/// The same seed gives the same model on one and on two threads; the encoding round
/// trips and prediction is a distribution per document.
#[test]
fn same_model_at_any_thread_count_and_encoding_round_trips() {
    let (_, corpus) = corpus();
    let params = json!({"topics": 6, "iterations": 6, "burn_in": 2, "thin": 2, "test_fraction": 0.2});
    let run =
        |threads: usize| rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(|| fit(&corpus, params.clone(), Covariance::Full, 8));
    let (a, b) = (run(1), run(2));
    assert_eq!(a, b);
    assert!(!a.heldout_documents.is_empty() && a.heldout_documents.len() + a.train_documents.len() == 500);
    let dcnt_family = family("dcnt").expect("registered");
    let decoded = dcnt_family.decode(&a.encode()).expect("decodes");
    assert_eq!(decoded.encode(), a.encode());
    assert!(family("scnt").unwrap().decode(&a.encode()).is_err(), "a dcnt model is not an scnt model");
    // A model stored by version 1 (parameters without topic_swaps) still decodes, as a
    // model fitted without swaps. Its bytes: version 1, the flag, the old parameters,
    // then everything after the parameters exactly as the current version lays it out.
    // Versions 1 to 3 end before `design`, `draws`, `convergence` and the chains'
    // alignments and draws per chain (here none: five zero bytes).
    let a = DcntModel { draws: Vec::new(), convergence: None, ..a };
    let current = a.encode();
    let (_, after_params) = postcard::take_from_bytes::<(u32, bool, DcntParams)>(&current).unwrap();
    let after_params = after_params.strip_suffix(&[0; 5]).expect("no design, draws, report, alignments or draws per chain");
    let p = &a.params;
    let old = super::model::DcntParamsV1 {
        topics: p.topics,
        priors: p.priors,
        iterations: p.iterations,
        burn_in: p.burn_in,
        thin: p.thin,
        loglik_every: p.loglik_every,
        test_fraction: p.test_fraction,
        heldout_burn_in: p.heldout_burn_in,
        heldout_chain_length: p.heldout_chain_length,
        heldout_acceptance_samples: p.heldout_acceptance_samples,
        threads: 0,
    };
    let mut v1 = postcard::to_allocvec(&(1u32, false, old)).unwrap();
    v1.extend_from_slice(after_params);
    let upgraded = DcntModel::decode(&v1).expect("a version-1 model decodes");
    assert_eq!(upgraded.params.topic_swaps, 0);
    assert_eq!(DcntModel { params: a.params.clone(), version: a.version, ..upgraded }, a);
    // Version 2: the current parameters with the job's `threads` after them.
    let v2_params = super::model::DcntParamsV2::from(p);
    let mut v2 = postcard::to_allocvec(&(2u32, false, v2_params)).unwrap();
    v2.extend_from_slice(after_params);
    let upgraded = DcntModel::decode(&v2).expect("a version-2 model decodes");
    assert_eq!(upgraded.params.keep_draws, 0, "models before kept draws kept none");
    assert_eq!(DcntModel { params: a.params.clone(), ..upgraded }, a);
    // Version 6: the parameters without `chains`, everything after them as now but for
    // the chains' alignments and draws per chain; version 5 also without `warm_start`;
    // version 4 also without the trailing convergence report.
    let (_, after_current_params) = postcard::take_from_bytes::<(u32, bool, DcntParams)>(&current).unwrap();
    let mut after_v6_params = after_current_params.to_vec();
    assert_eq!(after_v6_params.split_off(after_v6_params.len() - 2), [0, 0], "one chain: no alignments, no draws per chain");
    let mut v6 = postcard::to_allocvec(&(6u32, false, super::model::DcntParamsV6::from(p))).unwrap();
    v6.extend_from_slice(&after_v6_params);
    let upgraded = DcntModel::decode(&v6).expect("a version-6 model decodes");
    assert_eq!(upgraded.params.chains, 1, "models before several chains ran one");
    assert_eq!(DcntModel { params: a.params.clone(), ..upgraded }, a);
    let v5_params = super::model::DcntParamsV5::from(p);
    for version in [5u32, 4] {
        let mut old = postcard::to_allocvec(&(version, false, &v5_params)).unwrap();
        old.extend_from_slice(&after_v6_params);
        if version == 4 {
            assert_eq!(old.pop(), Some(0), "no convergence report");
        }
        let upgraded = DcntModel::decode(&old).unwrap_or_else(|e| panic!("a version-{version} model decodes: {e}"));
        assert_eq!(upgraded.params.warm_start, 0, "models before the collapsed start had none");
        assert_eq!(DcntModel { params: a.params.clone(), ..upgraded }, a);
    }
    let docs: Vec<_> = a
        .heldout_documents
        .iter()
        .take(3)
        .map(|&d| {
            let (terms, counts) = corpus.counts.row(d);
            crate::corpus::lexicon::EncodedDoc { terms: terms.to_vec(), counts: counts.to_vec(), oov_tokens: 0 }
        })
        .collect();
    let predictions = a.predict(&docs, &PredictOptions { iterations: 20, burn_in: 10, seed: 3 }).unwrap();
    for p in predictions {
        assert!((p.topic_proportions.iter().sum::<f64>() - 1.0).abs() < 1e-9);
    }
    assert_eq!(a.point().num_features, 1);
    assert_eq!(a.document_features(a.heldout_documents[0]), &[1.0]);
}

#[test]
fn families_name_bad_params() {
    let (_, corpus) = corpus();
    for name in ["dcnt", "scnt"] {
        let f = family(name).expect("registered");
        for (body, field) in [(json!({"topics": 0}), "topics"), (json!({"a_a": -1}), "a_a"), (json!({"gamma": 1}), "gamma")] {
            assert_eq!(f.parse_params(&body).unwrap_err().field, field, "{name} {body}");
        }
        assert!(f.check_params(&f.parse_params(&json!({"topics": 10})).unwrap(), &corpus.stats).is_ok());
    }
}

/// Time per scan on the paper's bars size (1 500 × 300, K̄ = 20), release build:
/// `cargo test --release --lib models::dcnt::bars_tests::scan_time -- --ignored --nocapture`.
#[test]
#[ignore]
fn scan_time_on_paper_sized_bars() {
    let corpus = bars(&BarsConfig { variant: BarsVariant::Correlated, ..BarsConfig::default() }).to_corpus();
    let p = DcntParams::from_json(&json!({"topics": 20, "iterations": 50, "loglik_every": 1000})).unwrap();
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let t = std::time::Instant::now();
        pool.install(|| FitContext::silent(|ctx| fit_dcnt(&corpus, &p, Covariance::Full, 1, ctx))).unwrap();
        eprintln!("{threads} thread(s): {:.1} ms per scan", t.elapsed().as_secs_f64() * 1e3 / 50.0);
    }
}
