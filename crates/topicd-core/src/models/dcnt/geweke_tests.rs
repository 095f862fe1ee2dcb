//! Geweke joint-distribution tests (Geweke 2004) of the DCNT/SCNT Gibbs blocks.
//!
//! Each test takes one block (u; v; A with λ_A and λ_v; η with μ and λ_f), holds the
//! rest of the model fixed, and runs two samplers of the joint p(block, data):
//! *marginal-conditional* draws the block from its prior and the data given it,
//! independently; *successive-conditional* alternates a fresh draw of the data given
//! the block with one update of the block by the code under test. If the update
//! leaves p(block | data) invariant, both give the block its prior distribution.
//! Test functions (first and second moments, log precisions, topic weights) are
//! compared by z-scores; the chain's standard error uses 50 batch means (it is
//! autocorrelated), the independent draws' the plain one.
//!
//! Priors: proper, moderately informative ones (every Gamma(3, 3), γ_μ = 1). Under the
//! service defaults Gamma(0.01, 0.01) and γ_μ = 10⁶ the prior has huge variance and
//! heavy tails, the moments the test compares barely exist at these chain lengths, and
//! the z-scores would be noise.
//!
//! Threshold: every |z| must stay below 4.5. The four tests compute about 100 z-scores
//! in all; with a two-sided normal tail of 7 · 10⁻⁶ per score, a correct sampler fails
//! with probability below 10⁻³ (Bonferroni). A wrong conditional (a dropped factor,
//! a wrong precision) shifts the moments by many standard errors at these lengths.
//!
//! Tiny configuration: K̄ = 3 topics, F = 2 features, D = 4 documents.

use super::activations::{update_activations, UConditional};
use super::globals::{prior_a, Globals};
use super::params::Priors;
use super::stick::stick_weights;
use super::swap::{swap_sweep_with, SwapTerms};
use super::variant::Covariance;
use crate::inference::geweke::z_score;
use crate::rng::{stream, Purpose, StreamRng};
use rand::RngExt;
use rand_distr::{Distribution, Gamma, Normal, StandardNormal};

const Z_LIMIT: f64 = 4.5;
const K: usize = 3;
const F: usize = 2;
const D: usize = 4;
/// Φ, D × F: an intercept and one covariate.
const PHI: [f64; D * F] = [1.0, -0.8, 1.0, 0.3, 1.0, 1.1, 1.0, -0.2];

fn priors() -> Priors {
    Priors { beta: 0.1, gamma_mu: 1.0, a_f: 3.0, b_f: 3.0, a_a: 3.0, b_a: 3.0, a_v: 3.0, b_v: 3.0 }
}

/// Runs both simulators and asserts every |z| < 4.5. `prior` draws a block, `data`
/// draws data given a block, `update` is the transition under test, `functions` the
/// test functions of a block. Returns the largest |z|.
fn geweke<B: Clone, Y>(
    name: &str,
    draws: usize,
    prior: impl FnMut(&mut StreamRng) -> B,
    data: impl FnMut(&B, &mut StreamRng) -> Y,
    update: impl FnMut(&mut B, &Y, &mut StreamRng),
    functions: impl Fn(&B, &Y) -> Vec<f64>,
) -> f64 {
    let scores = geweke_z_scores(draws, prior, data, update, functions);
    let mut worst = 0.0f64;
    for (i, z) in scores.into_iter().enumerate() {
        assert!(z.abs() < Z_LIMIT, "{name}: test function {i}: z = {z:.2}");
        worst = worst.max(z.abs());
    }
    worst
}

/// Both simulators; the z-score of every test function.
fn geweke_z_scores<B: Clone, Y>(
    draws: usize,
    mut prior: impl FnMut(&mut StreamRng) -> B,
    mut data: impl FnMut(&B, &mut StreamRng) -> Y,
    mut update: impl FnMut(&mut B, &Y, &mut StreamRng),
    functions: impl Fn(&B, &Y) -> Vec<f64>,
) -> Vec<f64> {
    let mut rng = stream(77, Purpose::Estimate, 0, 0);
    let mut independent: Vec<Vec<f64>> = Vec::new();
    for _ in 0..draws {
        let block = prior(&mut rng);
        let y = data(&block, &mut rng);
        for (i, g) in functions(&block, &y).into_iter().enumerate() {
            if independent.len() <= i {
                independent.push(Vec::with_capacity(draws));
            }
            independent[i].push(g);
        }
    }
    let mut block = prior(&mut rng);
    let mut chain: Vec<Vec<f64>> = vec![Vec::with_capacity(draws); independent.len()];
    for _ in 0..draws {
        let y = data(&block, &mut rng);
        update(&mut block, &y, &mut rng);
        for (i, g) in functions(&block, &y).into_iter().enumerate() {
            chain[i].push(g);
        }
    }
    independent.iter().zip(&chain).map(|(a, b)| z_score(a, b)).collect()
}

fn normal(rng: &mut StreamRng) -> f64 {
    StandardNormal.sample(rng)
}

/// Fixed global parameters for the per-document blocks (a draw from the test priors).
fn fixed_globals() -> Globals {
    Globals::from_prior(K, F, Covariance::Full, &priors(), &mut stream(5, Purpose::Estimate, 1, 0))
}

/// Moments of every entry and one cross moment.
fn moments(x: &[f64]) -> Vec<f64> {
    let mut g: Vec<f64> = x.to_vec();
    g.extend(x.iter().map(|a| a * a));
    g.push(x[0] * x[1]);
    g
}

/// u_d | v_d (000 eq. 12): with A, λ_v, η fixed, u_d from N(ηᵀφ_d, I) and v_d from
/// N(A u_d, λ_v⁻¹ I) must be kept by [`UConditional::draw`].
#[test]
fn u_update_keeps_the_joint_distribution() {
    let g = fixed_globals();
    let prior_mean = g.u_mean(&PHI[2..4]);
    let uc = UConditional::new(&g.a, K, g.lambda_v).unwrap();
    let worst = geweke(
        "u",
        100_000,
        |rng| prior_mean.iter().map(|m| m + normal(rng)).collect::<Vec<f64>>(),
        |u, rng| g.a_times(u).iter().map(|m| m + normal(rng) / g.lambda_v.sqrt()).collect::<Vec<f64>>(),
        |u, v, rng| *u = uc.draw(v, &prior_mean, rng),
        |u, _| moments(u),
    );
    eprintln!("u: worst |z| = {worst:.2}");
}

/// v_d | z_d (001 eq. 11, entry-wise): with u_d and the globals fixed, v_d from
/// N(A u_d, λ_v⁻¹ I) and 12 topic assignments from Mult(π(v_d)) must be kept by
/// [`update_activations`]. Test functions include π(v_d), which the sticks make
/// depend on every entry but the last.
#[test]
fn v_update_keeps_the_joint_distribution() {
    let g = fixed_globals();
    let u = [0.4, -0.7, 1.1];
    let mean = g.a_times(&u);
    let sd = 1.0 / g.lambda_v.sqrt();
    let tokens = 12;
    let worst = geweke(
        "v",
        100_000,
        |rng| mean.iter().map(|m| m + sd * normal(rng)).collect::<Vec<f64>>(),
        |v, rng| {
            let pi = stick_weights(v);
            let mut counts = vec![0u32; K];
            for _ in 0..tokens {
                let x: f64 = rng.random();
                let mut acc = 0.0;
                let k = pi.iter().position(|p| {
                    acc += p;
                    x < acc
                });
                counts[k.unwrap_or(K - 1)] += 1;
            }
            counts
        },
        |v, counts, rng| {
            update_activations(v, &mean, g.lambda_v, counts, rng);
        },
        |v, _| {
            let mut f = moments(v);
            f.extend(stick_weights(v));
            f
        },
    );
    eprintln!("v: worst |z| = {worst:.2}");
}

/// The A block (A | U, V, then λ_A | A and λ_v | U, V, A): with U fixed, (λ_A, A, λ_v)
/// from the prior and V from N(A u_d, λ_v⁻¹ I) must be kept by
/// [`Globals::update_loadings`]; DCNT (full A, row precision k λ_A) and SCNT (diagonal).
#[test]
fn loadings_update_keeps_the_joint_distribution() {
    let p = priors();
    let mut urng = stream(6, Purpose::Estimate, 2, 0);
    let u: Vec<f64> = (0..D * K).map(|_| normal(&mut urng)).collect();
    for covariance in [Covariance::Full, Covariance::Diagonal] {
        let worst = geweke(
            &format!("{} loadings", covariance.family_name()),
            100_000,
            |rng| {
                let lambda_a = Gamma::new(p.a_a, 1.0 / p.b_a).unwrap().sample(rng);
                let lambda_v = Gamma::new(p.a_v, 1.0 / p.b_v).unwrap().sample(rng);
                let a = prior_a(K, lambda_a, covariance, rng);
                Globals { num_topics: K, num_features: F, a, eta: vec![0.0; F * K], mu: vec![0.0; F], lambda_f: vec![1.0; F], lambda_a, lambda_v }
            },
            |g, rng| {
                let mut v = Vec::with_capacity(D * K);
                for d in 0..D {
                    v.extend(g.a_times(&u[d * K..(d + 1) * K]).iter().map(|m| m + normal(rng) / g.lambda_v.sqrt()));
                }
                v
            },
            |g, v, rng| g.update_loadings(&u, v, covariance, &p, rng),
            |g, _| {
                let entries: Vec<f64> = match covariance {
                    Covariance::Diagonal => (0..K).map(|k| g.a[k * K + k]).collect(),
                    Covariance::Full => g.a.clone(),
                };
                let mut f = moments(&entries);
                f.push(g.lambda_a.ln());
                f.push(g.lambda_v.ln());
                f
            },
        );
        eprintln!("loadings ({covariance:?}): worst |z| = {worst:.2}");
    }
}

/// The η block (η | U, μ, λ_f, then μ | η, λ_f and λ_f | η, μ): with Φ fixed,
/// (λ_f, μ, η) from the prior and U from N(ηᵀφ_d, I) must be kept by
/// [`Globals::update_feature_regression`].
#[test]
fn feature_regression_update_keeps_the_joint_distribution() {
    let p = priors();
    let worst = geweke(
        "eta",
        100_000,
        |rng| {
            let mut g = Globals::from_prior(K, F, Covariance::Full, &p, rng);
            // Only η, μ, λ_f matter here; keep the rest fixed.
            g.a = vec![0.0; K * K];
            g.lambda_a = 1.0;
            g.lambda_v = 1.0;
            g
        },
        |g, rng| {
            let mut u = Vec::with_capacity(D * K);
            for d in 0..D {
                u.extend(g.u_mean(&PHI[d * F..(d + 1) * F]).iter().map(|m| m + normal(rng)));
            }
            u
        },
        |g, u, rng| g.update_feature_regression(u, &PHI, &p, rng),
        |g, _| {
            let mut f = moments(&g.eta);
            f.extend(g.mu.iter().copied());
            f.extend(g.mu.iter().map(|m| m * m));
            f.extend(g.lambda_f.iter().map(|l| l.ln()));
            f
        },
    );
    eprintln!("eta: worst |z| = {worst:.2}");
}

/// The prior draw the Geweke tests start from has the stated moments (so that a bug
/// in `from_prior` cannot hide one in the updates): E[λ] = a/b and E[μ²] = γ_μ.
#[test]
fn prior_draws_have_the_prior_moments() {
    let p = Priors { gamma_mu: 4.0, a_v: 2.0, b_v: 4.0, ..priors() };
    let n = 20_000;
    let mut rng = stream(9, Purpose::Estimate, 3, 0);
    let (mut lv, mut mu2) = (0.0, 0.0);
    for _ in 0..n {
        let g = Globals::from_prior(K, F, Covariance::Full, &p, &mut rng);
        lv += g.lambda_v / n as f64;
        mu2 += g.mu[0] * g.mu[0] / n as f64;
    }
    // sd of the mean of λ_v: sqrt(a)/b/sqrt(n) = 0.0025; of μ²: γ_μ sqrt(2/n) = 0.04.
    assert!((lv - 0.5).abs() < 4.5 * 0.0025, "E[λ_v] = {lv}");
    assert!((mu2 - 4.0).abs() < 4.5 * 0.04, "E[μ²] = {mu2}");
    let _ = Normal::new(0.0, 1.0).unwrap();
}

/// The per-document block (z by 001 eq. 10 with Ω collapsed, then v, then u) with
/// blocks of one document (exact sequential Gibbs): with the globals fixed, u_d, v_d
/// and z_d from the model and the words from the collapsed Dirichlet-multinomial
/// (a Pólya urn over all tokens of a topic) must be kept by
/// [`DcntState::sample_documents`]. Three documents of four tokens, four words,
/// β = 0.5 so that the word term matters. Test functions: topic counts of document 0,
/// its v and π, document 1's u, and the number of token pairs with the same word and
/// the same topic (which depends on the words as well).
#[test]
fn document_block_keeps_the_joint_distribution() {
    let worst = max_abs(&document_block_z_scores(Covariance::Full, None));
    assert!(worst < Z_LIMIT, "document block: worst |z| = {worst:.2}");
    eprintln!("document block: worst |z| = {worst:.2}");
}

/// The per-document block followed by two within-document topic swaps per document
/// ([`swap_sweep_with`] by the posterior ratio), for SCNT (diagonal A) and DCNT: the
/// swaps must keep the joint distribution too. (The swaps alone are not ergodic, so
/// the Geweke chain needs the block with them.)
#[test]
fn document_block_with_topic_swaps_keeps_the_joint_distribution() {
    for covariance in [Covariance::Diagonal, Covariance::Full] {
        let scores = document_block_z_scores(covariance, Some(SwapTerms::total));
        let worst = max_abs(&scores);
        eprintln!("document block with swaps ({covariance:?}): worst |z| = {worst:.2}");
        assert!(worst < Z_LIMIT, "{covariance:?}: {scores:?}");
    }
}

/// The test above can fail: an acceptance rule that forgets the prior of u_d (the
/// one factor the swap's u map changes besides the counts) or the stick likelihood
/// gives some |z| far above 4.5.
#[test]
fn geweke_notices_a_wrong_swap_rule() {
    let without_u_prior: fn(&SwapTerms) -> f64 = |t| t.words + t.sticks;
    let without_sticks: fn(&SwapTerms) -> f64 = |t| t.words + t.u_prior;
    for (name, rule) in [("without the u prior", without_u_prior), ("without the sticks", without_sticks)] {
        let worst = max_abs(&document_block_z_scores(Covariance::Diagonal, Some(rule)));
        eprintln!("swap rule {name}: worst |z| = {worst:.2}");
        assert!(worst > Z_LIMIT, "{name}: worst |z| = {worst:.2}");
    }
}

fn max_abs(x: &[f64]) -> f64 {
    x.iter().fold(0.0f64, |m, z| m.max(z.abs()))
}

/// The z-scores of the per-document block's Geweke test (see above), optionally
/// followed by two topic swaps per document accepted by `swap_rule`.
fn document_block_z_scores(covariance: Covariance, swap_rule: Option<fn(&SwapTerms) -> f64>) -> Vec<f64> {
    use super::state::{DcntState, Documents};
    let (docs_n, tokens, words) = (3usize, 4usize, 4usize);
    let mut g = match covariance {
        Covariance::Diagonal => Globals::from_prior(K, F, Covariance::Diagonal, &priors(), &mut stream(5, Purpose::Estimate, 1, 0)),
        Covariance::Full => fixed_globals(),
    };
    g.lambda_v = 1.0;
    let p = Priors { beta: 0.5, ..priors() };
    let phi: Vec<f64> = PHI[..docs_n * F].to_vec();
    // A block: per document (u, v, z as a topic per token); data: the word per token.
    type Block = Vec<(Vec<f64>, Vec<f64>, Vec<u16>)>;
    let prior = |rng: &mut StreamRng| -> Block {
        (0..docs_n)
            .map(|d| {
                let u: Vec<f64> = g.u_mean(&phi[d * F..(d + 1) * F]).iter().map(|m| m + normal(rng)).collect();
                let v: Vec<f64> = g.a_times(&u).iter().map(|m| m + normal(rng) / g.lambda_v.sqrt()).collect();
                let pi = stick_weights(&v);
                let z = (0..tokens).map(|_| super::sampler::draw_topic(&pi, rng.random())).collect();
                (u, v, z)
            })
            .collect()
    };
    // Pólya urn: token by token, p(w) ∝ M_kw + β over the tokens drawn so far.
    let data = |b: &Block, rng: &mut StreamRng| -> Vec<Vec<u32>> {
        let mut m = vec![0u32; K * words];
        b.iter()
            .map(|(_, _, z)| {
                z.iter()
                    .map(|&k| {
                        let k = k as usize;
                        let weights: Vec<f64> = (0..words).map(|w| m[k * words + w] as f64 + p.beta).collect();
                        let x = rng.random::<f64>() * weights.iter().sum::<f64>();
                        let mut acc = 0.0;
                        let w = weights
                            .iter()
                            .position(|q| {
                                acc += q;
                                x < acc
                            })
                            .unwrap_or(words - 1);
                        m[k * words + w] += 1;
                        w as u32
                    })
                    .collect()
            })
            .collect()
    };
    let mut scan = 0u64;
    let update = |b: &mut Block, w: &Vec<Vec<u32>>, rng: &mut StreamRng| {
        // Sort each document's tokens by word (the sampler's token order), topics along.
        let mut rows = Vec::new();
        let mut z_all = Vec::new();
        // orders[d][j]: the original position of the j-th token in word order.
        let mut orders: Vec<Vec<usize>> = Vec::new();
        for (d, (_, _, z)) in b.iter().enumerate() {
            let mut pairs: Vec<(u32, usize, u16)> =
                w[d].iter().copied().zip(z.iter().copied()).enumerate().map(|(i, (word, topic))| (word, i, topic)).collect();
            pairs.sort_unstable();
            orders.push(pairs.iter().map(|x| x.1).collect::<Vec<usize>>());
            let mut terms: Vec<u32> = Vec::new();
            let mut counts: Vec<u32> = Vec::new();
            for &(word, _, topic) in &pairs {
                if terms.last() == Some(&word) {
                    *counts.last_mut().unwrap() += 1;
                } else {
                    terms.push(word);
                    counts.push(1);
                }
                z_all.push(topic);
            }
            rows.push((terms, counts));
        }
        let docs = Documents::new(rows, phi.clone(), F, words);
        let mut state = DcntState {
            num_topics: K,
            covariance,
            priors: p,
            z: z_all,
            doc_topic: vec![0; docs_n * K],
            word_topic: vec![0; words * K],
            topic_totals: vec![0; K],
            u: b.iter().flat_map(|x| x.0.clone()).collect(),
            v: b.iter().flat_map(|x| x.1.clone()).collect(),
            globals: g.clone(),
            topic_swaps: 0,
            seed_prior: crate::models::seeds::SeedPrior::default(),
        };
        state.recount(&docs);
        scan += 1;
        let blocks: Vec<_> = (0..docs_n).map(|d| d..d + 1).collect();
        let seed: u64 = rng.random();
        state.sample_documents(&docs, &blocks, seed, scan).expect("finite globals");
        if let Some(rule) = swap_rule {
            swap_sweep_with(&mut state, &docs, &blocks, (seed, scan), 2, rule);
        }
        for (d, x) in b.iter_mut().enumerate() {
            x.0 = state.u[d * K..(d + 1) * K].to_vec();
            x.1 = state.v[d * K..(d + 1) * K].to_vec();
            for (j, &i) in orders[d].iter().enumerate() {
                x.2[i] = state.z[d * tokens + j];
            }
        }
    };
    let functions = |b: &Block, w: &Vec<Vec<u32>>| -> Vec<f64> {
        let (_, v, z) = &b[0];
        let mut f: Vec<f64> = (0..K).map(|k| z.iter().filter(|&&t| t as usize == k).count() as f64).collect();
        f.extend(v.iter().copied());
        f.extend(stick_weights(v));
        f.extend(b[1].0.iter().copied());
        let tokens: Vec<(u32, u16)> = b.iter().zip(w).flat_map(|((_, _, z), w)| w.iter().copied().zip(z.iter().copied())).collect();
        let same = (0..tokens.len()).flat_map(|i| (i + 1..tokens.len()).map(move |j| (i, j))).filter(|&(i, j)| tokens[i] == tokens[j]).count();
        f.push(same as f64);
        f
    };
    geweke_z_scores(60_000, prior, data, update, functions)
}
