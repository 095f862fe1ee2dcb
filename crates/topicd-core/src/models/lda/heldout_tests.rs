//! Checks of the Chib-style estimator against exact enumeration and importance sampling,
//! and of its parts (the sweep operators T and T̃, the draw, the product accumulator).
//!
//! The reference estimators (exact enumeration over all K^N assignments, and importance
//! sampling with θ drawn from its Dirichlet prior) live here because only tests need them.

use super::*;
use rand_distr::{Distribution, Gamma};

/// log p(w | φ, α) by summing p(w, z) over all K^N assignments z.
pub(crate) fn exact_log_likelihood(words: &[u32], phi: &[f64], num_topics: usize, alpha: &[f64]) -> f64 {
    let table = TokenTopicTable::new(words, phi, num_topics, alpha);
    let joints: Vec<f64> = all_assignments(words.len(), num_topics).iter().map(|z| table.log_joint(z, &counts_of(z, num_topics))).collect();
    log_mean_exp(&joints) + (joints.len() as f64).ln()
}

/// log of the importance-sampling estimate (1/M) Σ_m Π_n Σ_k θ_k^(m) φ_{k,w_n} with
/// θ^(m) ~ Dirichlet(α) (the prior as proposal), and the estimate's relative standard
/// error sd(weights) / (mean(weights) √M).
pub(crate) fn importance_sampling_log_likelihood(words: &[u32], phi: &[f64], num_topics: usize, alpha: f64, samples: usize, rng: &mut StreamRng) -> (f64, f64) {
    let log_weights = importance_log_weights(words, phi, num_topics, alpha, samples, rng);
    let log_estimate = log_mean_exp(&log_weights);
    let (_, relative_se) = mean_and_se(&log_weights.iter().map(|w| (w - log_estimate).exp()).collect::<Vec<_>>());
    (log_estimate, relative_se)
}

/// The M log importance weights log Π_n Σ_k θ_k φ_{k,w_n}. θ is drawn in log space
/// (G = Gamma(1 + α) · U^{1/α} is Gamma(α)), so that small α cannot underflow every G_k.
fn importance_log_weights(words: &[u32], phi: &[f64], num_topics: usize, alpha: f64, samples: usize, rng: &mut StreamRng) -> Vec<f64> {
    let table = TokenTopicTable::new(words, phi, num_topics, &vec![alpha; num_topics]);
    let boosted = Gamma::new(1.0 + alpha, 1.0).unwrap();
    let mut log_g = vec![0.0; num_topics];
    let mut theta = vec![0.0; num_topics];
    (0..samples)
        .map(|_| {
            for lg in log_g.iter_mut() {
                let u: f64 = 1.0 - rng.random::<f64>();
                *lg = boosted.sample(rng).ln() + u.ln() / alpha;
            }
            let max = log_g.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            theta.iter_mut().zip(&log_g).for_each(|(t, &lg)| *t = (lg - max).exp());
            let norm: f64 = theta.iter().sum();
            theta.iter_mut().for_each(|t| *t /= norm);
            (0..table.len()).map(|n| weighted_total(&theta, table.row(n)).ln()).sum()
        })
        .collect()
}

fn all_assignments(len: usize, num_topics: usize) -> Vec<Vec<usize>> {
    let total = num_topics.pow(len as u32);
    (0..total)
        .map(|mut code| {
            (0..len)
                .map(|_| {
                    let t = code % num_topics;
                    code /= num_topics;
                    t
                })
                .collect()
        })
        .collect()
}

fn counts_of(z: &[usize], num_topics: usize) -> Vec<u32> {
    let mut counts = vec![0u32; num_topics];
    z.iter().for_each(|&t| counts[t] += 1);
    counts
}

/// K rows, each drawn from a symmetric Dirichlet(`concentration`) over `num_terms` words.
fn random_phi(num_topics: usize, num_terms: usize, concentration: f64, rng: &mut StreamRng) -> Vec<f64> {
    let gamma = Gamma::new(concentration, 1.0).unwrap();
    let mut phi: Vec<f64> = (0..num_topics * num_terms).map(|_| gamma.sample(rng).max(1e-300)).collect();
    for row in phi.chunks_mut(num_terms) {
        let norm: f64 = row.iter().sum();
        row.iter_mut().for_each(|p| *p /= norm);
    }
    phi
}

/// A document of `len` tokens drawn from LDA: θ ~ Dirichlet(α), z_n ~ θ, w_n ~ φ_{z_n}.
fn lda_document(len: usize, phi: &[f64], num_topics: usize, alpha: f64, rng: &mut StreamRng) -> Vec<u32> {
    let num_terms = phi.len() / num_topics;
    let gamma = Gamma::new(alpha, 1.0).unwrap();
    let theta: Vec<f64> = (0..num_topics).map(|_| gamma.sample(rng) + 1e-300).collect();
    let theta_total: f64 = theta.iter().sum();
    (0..len)
        .map(|_| {
            let k = draw_index(&theta, theta_total, rng.random::<f64>());
            let row = &phi[k * num_terms..(k + 1) * num_terms];
            draw_index(row, row.iter().sum(), rng.random::<f64>()) as u32
        })
        .collect()
}

/// Mean and standard error of the mean.
fn mean_and_se(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, (var / n).sqrt())
}

/// Tiny documents: (K, α, words, seed of φ, multiplier of the Monte Carlo test's run
/// counts). V = 4, φ rows from Dirichlet(0.5), so that the conditionals differ strongly
/// between topics; α from very small to large. With α = 0.02 the posterior has separated
/// modes and the estimate is heavy-tailed (sd of p̂/p(w) ≈ 9 at S = 1), so that case runs
/// three times as many replicates.
const TINY_CASES: [(usize, f64, &[u32], u64, usize); 5] =
    [(2, 0.05, &[0, 1, 2], 1, 1), (2, 0.5, &[0, 3, 0, 2], 2, 1), (3, 0.1, &[1, 2, 3, 1], 3, 1), (3, 1.5, &[0, 1, 2, 3], 4, 1), (3, 0.02, &[3, 3, 0], 5, 3)];

fn tiny_phi(num_topics: usize, seed: u64) -> Vec<f64> {
    random_phi(num_topics, 4, 0.5, &mut stream(seed, Purpose::Synthetic, 0, 0))
}

#[test]
fn forward_and_reverse_sweeps_are_time_reversals_of_each_other() {
    // Exact, on every pair of states: π(z) T(z' ← z) = π(z') T̃(z ← z'), rows of T sum
    // to 1, and T ≠ T̃ (so the direction conventions matter in these cases). Then the
    // S = 1 estimator's exact expectation, Σ_z T̃(z ← z*) p(w, z*) / T(z* ← z), equals p(w)
    // for every choice of z*, while the same estimator with z^(s) drawn from T instead of
    // T̃ is biased: at the mode z* (which ICM usually returns) by 0, 8.8, 19, 13 and 24%
    // in the five cases, so the Monte Carlo test below, whose 4-SE bands are below 8%,
    // would see a swapped convention.
    let mut worst_wrong_bias: f64 = 0.0;
    for &(k, alpha, words, seed, _) in &TINY_CASES {
        let phi = tiny_phi(k, seed);
        let table = TokenTopicTable::new(words, &phi, k, &vec![alpha; k]);
        let states = all_assignments(words.len(), k);
        let log_p = exact_log_likelihood(words, &phi, k, &vec![alpha; k]);
        let log_joint: Vec<f64> = states.iter().map(|z| table.log_joint(z, &counts_of(z, k))).collect();
        let mut scratch = TopicCounts::new(&vec![alpha; k]);
        let mut forward = vec![vec![0.0; states.len()]; states.len()];
        let mut reverse = vec![vec![0.0; states.len()]; states.len()];
        for (i, from) in states.iter().enumerate() {
            for (j, to) in states.iter().enumerate() {
                forward[i][j] = table.log_sweep_probability(from, to, Order::Forward, &mut scratch);
                reverse[i][j] = table.log_sweep_probability(from, to, Order::Reverse, &mut scratch);
            }
            let row_sum: f64 = forward[i].iter().map(|l| l.exp()).sum();
            assert!((row_sum - 1.0).abs() < 1e-12, "T row sums to {row_sum}");
        }
        let mut asymmetry: f64 = 0.0;
        for i in 0..states.len() {
            for j in 0..states.len() {
                let (lhs, rhs) = (log_joint[i] + forward[i][j], log_joint[j] + reverse[j][i]);
                assert!((lhs - rhs).abs() < 1e-10, "detailed balance of the sweep pair fails: {lhs} vs {rhs}");
                asymmetry = asymmetry.max((forward[i][j] - reverse[i][j]).abs());
            }
        }
        assert!(asymmetry > 0.1, "T and T̃ coincide on case K={k} α={alpha}: {asymmetry}");
        for star in 0..states.len() {
            let correct: f64 = (0..states.len()).map(|z| (reverse[star][z] + log_joint[star] - forward[z][star] - log_p).exp()).sum();
            assert!((correct - 1.0).abs() < 1e-9, "E[p̂]/p(w) = {correct} for z* = {:?}", states[star]);
            let wrong: f64 = (0..states.len()).map(|z| (forward[star][z] + log_joint[star] - forward[z][star] - log_p).exp()).sum();
            worst_wrong_bias = worst_wrong_bias.max((wrong - 1.0).abs());
        }
    }
    assert!(worst_wrong_bias > 0.05, "a swapped convention would be invisible: bias {worst_wrong_bias}");
}

/// With one α_k per topic (as after optimisation), exactly: the table's log p(w, z) is
/// the sequential product Π_n (n_{z_n}^{<n} + α_{z_n}) / (n − 1 + α₀) · φ_{z_n, w_n}, the
/// sweep pair is in detailed balance, and the S = 1 estimator's expectation is p(w) for
/// every z*.
#[test]
fn asymmetric_alpha_keeps_the_estimator_exact() {
    let (k, words): (usize, &[u32]) = (3, &[0, 3, 1, 0]);
    let alpha = [0.05, 0.8, 2.0];
    let a0: f64 = alpha.iter().sum();
    let phi = tiny_phi(k, 6);
    let table = TokenTopicTable::new(words, &phi, k, &alpha);
    let states = all_assignments(words.len(), k);
    let log_joint: Vec<f64> = states.iter().map(|z| table.log_joint(z, &counts_of(z, k))).collect();
    for (z, &joint) in states.iter().zip(&log_joint) {
        let mut n = [0.0; 3];
        let mut direct = 0.0;
        for (i, &t) in z.iter().enumerate() {
            direct += ((n[t] + alpha[t]) / (i as f64 + a0) * phi[t * 4 + words[i] as usize]).ln();
            n[t] += 1.0;
        }
        assert!((joint - direct).abs() < 1e-12, "{z:?}: {joint} vs {direct}");
    }
    let log_p = exact_log_likelihood(words, &phi, k, &alpha);
    let sweep = |order| -> Vec<Vec<f64>> {
        let mut scratch = TopicCounts::new(&alpha);
        states.iter().map(|from| states.iter().map(|to| table.log_sweep_probability(from, to, order, &mut scratch)).collect()).collect()
    };
    let (forward, reverse) = (sweep(Order::Forward), sweep(Order::Reverse));
    for i in 0..states.len() {
        for j in 0..states.len() {
            let (lhs, rhs) = (log_joint[i] + forward[i][j], log_joint[j] + reverse[j][i]);
            assert!((lhs - rhs).abs() < 1e-10, "detailed balance fails: {lhs} vs {rhs}");
        }
        let expectation: f64 = (0..states.len()).map(|z| (reverse[i][z] + log_joint[i] - forward[z][i] - log_p).exp()).sum();
        assert!((expectation - 1.0).abs() < 1e-9, "E[p̂]/p(w) = {expectation} for z* = {:?}", states[i]);
    }
}

#[test]
fn chib_estimate_is_unbiased_for_the_exact_likelihood_on_enumerable_documents() {
    // R independent runs (streams (seed, Heldout, case·10 + S index, r)) of the estimator;
    // the estimate p̂ is unbiased for p(w) (module docs), so the ratios p̂/p(w) have mean 1
    // and, with R ≥ 400, a mean that is close to normal with standard error sd/√R. A 4-SE
    // band then fails a correct estimator with probability about 6e-5 per check. S = 1 and
    // S = 4 make the estimate noisy, so passing means unbiased, not merely close; S = 200
    // checks the regime that is used. Each check also requires SE < 0.02, so that the
    // 8.8-24% bias of a swapped T/T̃ convention at S = 1 (previous test) could not hide
    // inside the 4-SE band.
    let settings_for = |chain_length| ChibSettings { burn_in: 20, chain_length };
    let mut failures = Vec::new();
    for (case, &(k, alpha, words, seed, more_runs)) in TINY_CASES.iter().enumerate() {
        let phi = tiny_phi(k, seed);
        let log_p = exact_log_likelihood(words, &phi, k, &vec![alpha; k]);
        for (which, (chain_length, runs)) in [(1usize, 100_000usize), (4, 100_000), (200, 400)].into_iter().enumerate() {
            let runs = runs * more_runs;
            let settings = settings_for(chain_length);
            let ratios: Vec<f64> = (0..runs)
                .map(|r| {
                    let mut rng = stream(seed, Purpose::Heldout, (case * 10 + which) as u64, r as u64);
                    (chib_log_likelihood(words, &phi, k, &vec![alpha; k], &settings, &mut rng) - log_p).exp()
                })
                .collect();
            let (mean, se) = mean_and_se(&ratios);
            let z = (mean - 1.0) / se;
            let line = format!("K={k} α={alpha} N={} S={chain_length} R={runs}: log p = {log_p:.6}, E[p̂/p] = {mean:.5} ± {se:.5} (z = {z:.2})", words.len());
            eprintln!("{line}");
            if se >= 0.02 || z.abs() >= 4.0 {
                failures.push(line);
            }
        }
    }
    assert!(failures.is_empty(), "biased or too noisy to detect a bias: {failures:#?}");
}

#[test]
fn chib_agrees_with_long_importance_sampling_on_short_documents() {
    // Both estimators are unbiased for p(w). Against the IS estimate p̂_IS (M prior draws,
    // relative SE se_IS = sd(weights)/mean(weights)/√M), the mean of R Chib runs
    // m = mean(p̂_Chib/p̂_IS) has, by the delta method, SE² = se_Chib² + se_IS², where se_Chib
    // is the SE of the mean of those R ratios. |m − 1|/SE < 4 fails a correct pair with
    // probability about 6e-5. se_IS < 0.03 keeps the check meaningful.
    let cases: [(usize, usize, usize, f64, u64); 3] = [(5, 30, 12, 0.3, 21), (8, 40, 16, 0.5, 22), (10, 50, 20, 0.2, 23)];
    let settings = ChibSettings { burn_in: 50, chain_length: 1000 };
    for (k, num_terms, len, alpha, seed) in cases {
        let mut rng = stream(seed, Purpose::Synthetic, 0, 0);
        let phi = random_phi(k, num_terms, 0.3, &mut rng);
        let words = lda_document(len, &phi, k, alpha, &mut rng);
        let (log_is, se_is) = importance_sampling_log_likelihood(&words, &phi, k, alpha, 300_000, &mut stream(seed, Purpose::Estimate, 0, 0));
        let runs = 40;
        let ratios: Vec<f64> = (0..runs)
            .map(|r| (chib_log_likelihood(&words, &phi, k, &vec![alpha; k], &settings, &mut stream(seed, Purpose::Heldout, 0, r)) - log_is).exp())
            .collect();
        let (mean, se_chib) = mean_and_se(&ratios);
        let se = (se_chib * se_chib + se_is * se_is).sqrt();
        let z = (mean - 1.0) / se;
        eprintln!(
            "K={k} N={len} α={alpha}: log p̂_IS = {log_is:.5} (rel SE {se_is:.4}), Chib/IS = {mean:.5} (SE {se_chib:.5}), first Chib log p̂ = {:.5}, z = {z:.2}",
            log_is + ratios[0].ln()
        );
        assert!(se_is < 0.03, "importance sampling too noisy: relative SE {se_is}");
        assert!(z.abs() < 4.0, "Chib/IS = {mean} ± {se} (z = {z:.2})");
    }
}

#[test]
fn estimate_is_finite_and_respects_the_bounds_of_p_w() {
    // p(w, z*) ≤ p(w) ≤ Π_n max_k φ_{k,w_n} (the latter because Σ_k θ_k φ_{k,w} ≤ max_k φ).
    // The lower bound holds for every estimate (each T ≤ 1); the upper bound is not
    // guaranteed for an estimate, but with S = 1000 on a 60-token document the estimate's
    // error is a small fraction of a nat while the bound sits tens of nats above p(w).
    let (k, num_terms, alpha) = (20, 200, 0.25);
    let mut rng = stream(31, Purpose::Synthetic, 0, 0);
    let phi = random_phi(k, num_terms, 0.1, &mut rng);
    let words = lda_document(60, &phi, k, alpha, &mut rng);
    let parts = chib_parts(&words, &phi, k, &vec![alpha; k], &ChibSettings::default(), &mut stream(31, Purpose::Heldout, 0, 0));
    let estimate = parts.log_likelihood();
    let upper: f64 = words.iter().map(|&w| (0..k).map(|t| phi[t * num_terms + w as usize]).fold(0.0, f64::max).ln()).sum();
    assert!(parts.log_joint_star.is_finite() && parts.log_mean_transition.is_finite(), "{parts:?}");
    assert!(parts.log_mean_transition <= 0.0, "{parts:?}");
    assert!(estimate >= parts.log_joint_star && estimate < upper, "{} ≤ {estimate} < {upper} fails", parts.log_joint_star);

    let mut rng = stream(1, Purpose::Heldout, 0, 0);
    assert_eq!(chib_log_likelihood(&[], &phi, k, &vec![alpha; k], &ChibSettings::default(), &mut rng), 0.0);
    // One topic: z is determined, T = 1, so the estimate is exactly Σ_n log φ_{0,w_n}.
    let single = &phi[..num_terms];
    let exact: f64 = words.iter().map(|&w| single[w as usize].ln()).sum();
    let one_topic = chib_log_likelihood(&words, single, 1, &[alpha], &ChibSettings::default(), &mut rng);
    assert!((one_topic - exact).abs() < 1e-9 * exact.abs(), "{one_topic} vs {exact}");
    // A word no topic can emit has probability zero.
    let mut impossible = phi.clone();
    (0..k).for_each(|t| impossible[t * num_terms + 3] = 0.0);
    assert_eq!(chib_log_likelihood(&[1, 3, 2], &impossible, k, &vec![alpha; k], &ChibSettings::default(), &mut rng), f64::NEG_INFINITY);
}

#[test]
fn batch_ignores_unknown_terms_and_does_not_depend_on_threads() {
    let (k, num_terms, alpha) = (10, 100, 0.3);
    let mut rng = stream(41, Purpose::Synthetic, 0, 0);
    let phi = random_phi(k, num_terms, 0.2, &mut rng);
    let encode = |words: &[u32], extra: &[(u32, u32)]| {
        let mut pairs: std::collections::BTreeMap<u32, u32> = extra.iter().copied().collect();
        words.iter().for_each(|&w| *pairs.entry(w).or_insert(0) += 1);
        EncodedDoc { terms: pairs.keys().copied().collect(), counts: pairs.values().copied().collect(), oov_tokens: 0 }
    };
    let docs: Vec<EncodedDoc> = (0..6).map(|d| encode(&lda_document(15 + 5 * d, &phi, k, alpha, &mut rng), &[])).collect();
    let mut with_empty = docs.clone();
    with_empty.push(EncodedDoc { terms: vec![], counts: vec![], oov_tokens: 4 });
    let settings = ChibSettings { burn_in: 20, chain_length: 200 };
    let cancel = CancelToken::new();
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| chib_batch(&with_empty, &phi, k, &vec![alpha; k], &settings, 5, &cancel)).unwrap()
    };
    let (one, two) = (run(1), run(2));
    assert_eq!(one.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), two.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
    assert!(one[..6].iter().all(|x| x.is_finite() && *x < 0.0) && one[6] == 0.0, "{one:?}");

    // Terms ≥ V (a vocabulary larger than the model's) are dropped before the chain runs.
    let mut words = Vec::new();
    for (&t, &n) in docs[0].terms.iter().zip(&docs[0].counts) {
        words.extend(std::iter::repeat_n(t, n as usize));
    }
    let with_unknown = encode(&words, &[(num_terms as u32, 3), (num_terms as u32 + 7, 1)]);
    let known = chib_batch(&docs[..1], &phi, k, &vec![alpha; k], &settings, 5, &cancel).unwrap();
    let unknown = chib_batch(&[with_unknown], &phi, k, &vec![alpha; k], &settings, 5, &cancel).unwrap();
    assert_eq!(known[0].to_bits(), unknown[0].to_bits());
    assert_eq!(known[0].to_bits(), one[0].to_bits());

    cancel.cancel();
    assert!(chib_batch(&docs, &phi, k, &vec![alpha; k], &settings, 5, &cancel).is_none());
}

#[test]
fn draw_index_follows_the_weights_and_never_picks_a_zero() {
    // A stratified grid of M uniforms puts M·w_k/total ± 1 draws on topic k.
    for weights in [vec![1.0, 2.0, 0.0, 3.0, 4.0, 0.5, 0.0], vec![0.0, 0.0, 0.0, 0.0, 2.0, 1.0, 0.25, 0.0, 3.0], vec![5.0]] {
        let total: f64 = weights.iter().sum();
        let m = 100_000;
        let mut hits = vec![0usize; weights.len()];
        for i in 0..m {
            hits[draw_index(&weights, total, (i as f64 + 0.5) / m as f64)] += 1;
        }
        for (w, h) in weights.iter().zip(&hits) {
            assert!((*h as f64 - m as f64 * w / total).abs() <= 1.0, "{hits:?} for {weights:?}");
        }
    }
}

#[test]
fn probability_product_matches_the_sum_of_logs() {
    let factors = [0.5, 1e-300, 0.9999, 1e-310, 3e-5, 1.0, 0.25, 1e-200, 0.7];
    let mut product = ProbabilityProduct::new();
    factors.iter().for_each(|&p| product.push(p));
    let expected: f64 = factors.iter().map(|p| p.ln()).sum();
    assert!((product.ln() - expected).abs() < 1e-12 * expected.abs(), "{} vs {expected}", product.ln());
    product.push(0.0);
    assert_eq!(product.ln(), f64::NEG_INFINITY);
}

#[test]
fn law_of_the_estimate_matches_enumeration_with_three_states() {
    // The unbiasedness test cannot see every wrong chain structure: restarting the
    // backward half with T instead of T̃ moves E[p̂] by under 2% at S = 2 on these cases
    // (enumerated while writing this test), far below its noise. The law of the estimate
    // itself does see it. With S = 3 and z* fixed, the chain (s, z¹, z², z³) has law
    //   Q = ⅓ T̃(z¹ ← z*) T(z² ← z¹) T(z³ ← z²)     (s = 1)
    //     + ⅓ T̃(z² ← z*) T(z³ ← z²) T̃(z¹ ← z²)    (s = 2: the backward half restarts at z²)
    //     + ⅓ T̃(z³ ← z*) T̃(z² ← z³) T̃(z¹ ← z²)   (s = 3),
    // and the estimate log p(w, z*) − log ⅓ Σ_i T(z* ← z^i) is a function of the states,
    // so its law is enumerable (81³ chains). Runs are conditioned on their z* (identified
    // by log p(w, z*), unique among the states here); every estimate must be a value of
    // the law (to 1e-9), and each value with expected count ≥ 20 must get its count within
    // 4.5 binomial SEs (Bonferroni: 4.5 SE has two-sided tail 7e-6, so even a hundred
    // cells fail a correct sampler with probability under 1e-3; the seed is fixed).
    let (k, alpha, words): (usize, f64, &[u32]) = (3, 0.1, &[0, 1, 2, 3]);
    let phi = tiny_phi(k, 3);
    let table = TokenTopicTable::new(words, &phi, k, &vec![alpha; k]);
    let states = all_assignments(words.len(), k);
    let m = states.len();
    let log_joint: Vec<f64> = states.iter().map(|z| table.log_joint(z, &counts_of(z, k))).collect();
    let mut scratch = TopicCounts::new(&vec![alpha; k]);
    let mut forward = vec![vec![0.0; m]; m];
    let mut reverse = vec![vec![0.0; m]; m];
    for i in 0..m {
        for j in 0..m {
            forward[i][j] = table.log_sweep_probability(&states[i], &states[j], Order::Forward, &mut scratch).exp();
            reverse[i][j] = table.log_sweep_probability(&states[i], &states[j], Order::Reverse, &mut scratch).exp();
        }
    }
    let settings = ChibSettings { burn_in: 20, chain_length: 3 };
    let runs = 120_000;
    let parts: Vec<ChibParts> = (0..runs).map(|r| chib_parts(words, &phi, k, &vec![alpha; k], &settings, &mut stream(61, Purpose::Heldout, 0, r))).collect();
    let star_of = |log_joint_star: f64| {
        let matches: Vec<usize> = (0..m).filter(|&i| (log_joint[i] - log_joint_star).abs() < 1e-9).collect();
        assert_eq!(matches.len(), 1, "z* not identified by log p(w, z*) = {log_joint_star}");
        matches[0]
    };
    let mut by_star = vec![0usize; m];
    parts.iter().for_each(|p| by_star[star_of(p.log_joint_star)] += 1);
    let star = (0..m).max_by_key(|&i| by_star[i]).unwrap();
    let n = by_star[star] as f64;
    assert!(n > 0.5 * runs as f64, "ICM's z* varies too much to test: {by_star:?}");

    // The exact law, values merged when within 1e-9.
    let mut law: Vec<(f64, f64)> = Vec::with_capacity(m * m * m);
    for a in 0..m {
        for b in 0..m {
            for c in 0..m {
                let q = (reverse[star][a] * forward[a][b] * forward[b][c]
                    + reverse[star][b] * forward[b][c] * reverse[b][a]
                    + reverse[star][c] * reverse[c][b] * reverse[b][a])
                    / 3.0;
                let mean_transition = (forward[a][star] + forward[b][star] + forward[c][star]) / 3.0;
                law.push((log_joint[star] - mean_transition.ln(), q));
            }
        }
    }
    law.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut cells: Vec<(f64, f64)> = Vec::new();
    for (value, q) in law {
        match cells.last_mut() {
            Some(last) if value - last.0 < 1e-9 => last.1 += q,
            _ => cells.push((value, q)),
        }
    }
    assert!((cells.iter().map(|c| c.1).sum::<f64>() - 1.0).abs() < 1e-12);
    let mut observed = vec![0usize; cells.len()];
    for p in parts.iter().filter(|p| star_of(p.log_joint_star) == star) {
        let estimate = p.log_likelihood();
        let i = cells.partition_point(|c| c.0 < estimate - 1e-9);
        assert!(i < cells.len() && (cells[i].0 - estimate).abs() < 1e-9, "estimate {estimate} is not a value of the law");
        observed[i] += 1;
    }
    let mut worst: f64 = 0.0;
    let mut tested = 0;
    for (cell, &count) in cells.iter().zip(&observed) {
        let expected = n * cell.1;
        if expected >= 20.0 {
            tested += 1;
            worst = worst.max((count as f64 - expected).abs() / (expected * (1.0 - cell.1)).sqrt());
        }
    }
    eprintln!("z* = {:?} in {n} of {runs} runs; {} values, {tested} tested; worst |z| = {worst:.2}", states[star], cells.len());
    assert!(tested >= 10 && worst < 4.5, "law of the estimate departs from enumeration: worst |z| = {worst} over {tested} values");
}

/// A topic with α_k = 0 (an edit's retired slot) is never in the chain's start, and a
/// document's estimate stays finite: before the start skipped such topics, two tokens
/// placed there could keep each other there and log p(z | α) was -∞.
#[test]
fn a_topic_with_zero_alpha_starts_empty_and_the_estimate_stays_finite() {
    let (k, words) = (3, (0..40).map(|n| n % 4).collect::<Vec<u32>>());
    // Topic 1 is the prior's (uniform): its tokens would have no reason to leave.
    let phi: Vec<f64> = vec![0.4, 0.4, 0.1, 0.1, 0.25, 0.25, 0.25, 0.25, 0.1, 0.1, 0.4, 0.4];
    let alpha = [0.5, 0.0, 0.5];
    for seed in 0..50 {
        let mut chain = DocumentChain::new(TokenTopicTable::new(&words, &phi, k, &alpha));
        chain.randomize(&mut stream(seed, Purpose::Heldout, 0, 0));
        assert!(chain.z.iter().all(|&t| t != 1), "seed {seed}: a token started in the retired topic");
        let estimate = chib_log_likelihood(&words, &phi, k, &alpha, &ChibSettings::default(), &mut stream(seed, Purpose::Heldout, 1, 0));
        assert!(estimate.is_finite(), "seed {seed}: {estimate}");
    }
}
