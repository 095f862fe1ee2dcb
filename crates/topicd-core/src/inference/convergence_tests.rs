//! Checks of the convergence diagnostics: against ArviZ on a committed fixture, and on
//! draws whose answer is known without ArviZ (independent chains, a shifted chain, an
//! AR(1) process).

use super::*;
use crate::rng::{stream, Purpose};
use rand_distr::{Distribution, StandardNormal};
use serde::Deserialize;

/// Written by `tests/fixtures/make_convergence_fixture.py` (its header names the ArviZ
/// version).
const FIXTURE: &str = include_str!("../../tests/fixtures/convergence_arviz.json");

/// Both sides compute the same deterministic formulas on the same doubles; only the
/// order of floating-point sums differs (NumPy's pairwise sums and ArviZ's FFT
/// autocovariance against sequential sums here), which moves results by a few units in
/// the last place, far inside this.
const ARVIZ_TOLERANCE: f64 = 1e-6;

#[derive(Deserialize)]
struct Fixture {
    arviz_version: String,
    cases: Vec<Case>,
}

/// One draw array and ArviZ's diagnostics of it (`None`: ArviZ gave NaN).
#[derive(Deserialize)]
struct Case {
    name: String,
    draws: Vec<Vec<f64>>,
    rhat: Option<f64>,
    rhat_bulk: Option<f64>,
    rhat_tail: Option<f64>,
    ess_bulk: Option<f64>,
    ess_tail: Option<f64>,
    ess_mean: Option<f64>,
    mcse_mean: Option<f64>,
}

/// Relative deviation of `ours` from ArviZ's `theirs`: 0 when both are NaN or equal,
/// infinite when only one is NaN.
fn deviation(ours: f64, theirs: Option<f64>) -> f64 {
    match theirs {
        None if ours.is_nan() => 0.0,
        Some(t) if ours == t => 0.0,
        Some(t) if !ours.is_nan() => (ours - t).abs() / t.abs(),
        _ => f64::INFINITY,
    }
}

#[test]
fn matches_arviz_fixture() {
    let fixture: Fixture = serde_json::from_str(FIXTURE).expect("fixture parses");
    assert!(!fixture.cases.is_empty());
    let mut largest = 0.0_f64;
    for case in &fixture.cases {
        let chains = Chains::new(&case.draws).expect("fixture chains have equal lengths");
        let checks = [
            ("rhat", chains.rhat(), case.rhat),
            ("rhat_bulk", chains.rhat_bulk(), case.rhat_bulk),
            ("rhat_tail", chains.rhat_tail(), case.rhat_tail),
            ("ess_bulk", chains.ess_bulk(), case.ess_bulk),
            ("ess_tail", chains.ess_tail(), case.ess_tail),
            ("ess_mean", chains.ess_mean(), case.ess_mean),
            ("mcse_mean", chains.mcse_mean(), case.mcse_mean),
        ];
        for (what, ours, theirs) in checks {
            let d = deviation(ours, theirs);
            assert!(d <= ARVIZ_TOLERANCE, "{} {what}: ours {ours}, ArviZ {} {theirs:?}", case.name, fixture.arviz_version);
            largest = largest.max(d);
        }
        let d = chains.diagnostics();
        assert_eq!((d.rhat.to_bits(), d.ess_bulk.to_bits()), (chains.rhat().to_bits(), chains.ess_bulk().to_bits()));
        assert_eq!((d.ess_tail.to_bits(), d.mcse_mean.to_bits()), (chains.ess_tail().to_bits(), chains.mcse_mean().to_bits()));
    }
    println!("largest relative deviation from ArviZ {}: {largest:e}", fixture.arviz_version);
}

/// `chains` × `draws` independent standard normal draws (fixed seed).
fn normal_draws(chains: usize, draws: usize, seed: u64) -> Vec<Vec<f64>> {
    (0..chains)
        .map(|c| {
            let mut rng = stream(seed, Purpose::Synthetic, 0, c as u64);
            (0..draws).map(|_| StandardNormal.sample(&mut rng)).collect()
        })
        .collect()
}

/// Stationary AR(1) chains x_t = φ x_{t−1} + √(1 − φ²) e_t with unit marginal variance.
fn ar1_draws(chains: usize, draws: usize, phi: f64, seed: u64) -> Vec<Vec<f64>> {
    let innovation = (1.0 - phi * phi).sqrt();
    (0..chains)
        .map(|c| {
            let mut rng = stream(seed, Purpose::Synthetic, 1, c as u64);
            let mut x: f64 = StandardNormal.sample(&mut rng);
            (0..draws)
                .map(|_| {
                    let current = x;
                    let e: f64 = StandardNormal.sample(&mut rng);
                    x = phi * x + innovation * e;
                    current
                })
                .collect()
        })
        .collect()
}

#[test]
fn rhat_of_independent_chains_is_near_one() {
    // For 8 split chains of n = 500 i.i.d. draws, R̂² − 1 = (B/W − 1)/n with
    // B/W ≈ 1 ± √(2/7), so R̂ − 1 ≈ ±0.0005: over 300 seeds ArviZ gave 1.0003 ± 0.0005,
    // at most 1.0027.
    let chains = Chains::new(&normal_draws(4, 1000, 7)).expect("equal lengths");
    let rhat = chains.rhat();
    println!("R̂ of independent chains: {rhat}");
    assert!((rhat - 1.0).abs() < 0.01, "R̂ {rhat}");
}

#[test]
fn shifting_one_chain_raises_rhat() {
    // One chain of four moved by two standard deviations: over 200 seeds ArviZ gave
    // 1.320 ± 0.009 (a shift of one standard deviation gives 1.10 ± 0.007, too close to
    // the threshold for a test).
    let mut draws = normal_draws(4, 1000, 7);
    draws[3].iter_mut().for_each(|x| *x += 2.0);
    let rhat = Chains::new(&draws).expect("equal lengths").rhat();
    println!("R̂ with one chain shifted: {rhat}");
    assert!(rhat > 1.1, "R̂ {rhat}");
}

#[test]
fn ess_of_independent_draws_is_the_number_of_draws() {
    // For white noise each ρ̂_t has standard error ≈ 1/√N (N = 4000 draws) and Geyer's
    // sequence keeps a few lags L, so τ̂ = 1 + 2 Σ ρ̂_t has standard error ≈ 2√(L/N) ≈
    // 0.05 and ESS/N ≈ 1/τ̂ about the same: over 300 seeds ArviZ gave bulk ESS/N
    // 0.98 ± 0.043 and tail ESS/N 0.96 ± 0.041. 0.2 is more than four standard errors.
    let chains = Chains::new(&normal_draws(4, 1000, 11)).expect("equal lengths");
    let n = 4000.0;
    for (what, ess) in [("bulk", chains.ess_bulk()), ("tail", chains.ess_tail()), ("mean", chains.ess_mean())] {
        println!("{what} ESS of {n} independent draws: {ess}");
        assert!((ess / n - 1.0).abs() < 0.2, "{what} ESS {ess} of {n} independent draws");
    }
}

#[test]
fn ess_of_ar1_is_the_theoretical_value() {
    // An AR(1) with coefficient φ has τ = (1 + φ)/(1 − φ), so ESS = N(1 − φ)/(1 + φ)
    // (= 4210.5 here). The estimate sums the autocorrelations of some L ≈ 50 lags, and
    // by Bartlett's formula such a truncated sum has a relative standard error of about
    // √(2(2L + 1)/N) ≈ 0.05; over 60 seeds ArviZ gave ESS/theory 0.99 ± 0.043. 0.2 is
    // more than four standard errors.
    let (phi, chains, draws) = (0.9, 4, 20_000);
    let n = (chains * draws) as f64;
    let theory = n * (1.0 - phi) / (1.0 + phi);
    let chains = Chains::new(&ar1_draws(chains, draws, phi, 3)).expect("equal lengths");
    for (what, ess) in [("bulk", chains.ess_bulk()), ("mean", chains.ess_mean())] {
        println!("{what} ESS of AR(1): {ess}, theory {theory}");
        assert!((ess / theory - 1.0).abs() < 0.2, "{what} ESS {ess}, theory {theory}");
    }
}

#[test]
fn normal_quantile_matches_known_values() {
    // Φ⁻¹ of these doubles to 40 digits (mpmath), rounded to the nearest double.
    let known = [
        (0.5, 0.0),
        (0.975, 1.9599639845400538),
        (0.025, -1.9599639845400543),
        (0.001, -3.0902323061678136),
        (0.999, 3.090232306167813),
        (1e-10, -6.361340902404057),
        (0.3, -0.5244005127080408),
        (0.0625, -1.5341205443525463),
        (0.00025, -3.480756404346213),
        (0.99999, 4.264890793923841),
        (0.8, 0.8416212335729144),
    ];
    for (p, z) in known {
        let ours = normal_quantile(p);
        assert!((ours - z).abs() <= 1e-12 * z.abs().max(1.0), "Φ⁻¹({p}) = {ours}, want {z}");
    }
    assert!(normal_quantile(f64::NAN).is_nan());
}

#[test]
fn average_ranks_share_ties() {
    assert_eq!(average_ranks(&[3.0, 1.0, 3.0, 2.0, -0.0, 0.0]), vec![5.5, 3.0, 5.5, 4.0, 1.5, 1.5]);
    let ranks = average_ranks(&[2.0, f64::NAN, 1.0]);
    assert_eq!((ranks[0], ranks[2]), (2.0, 1.0));
    assert!(ranks[1].is_nan());
}

#[test]
fn type7_quantile_interpolates_order_statistics() {
    // R: quantile(c(1, 2, 3, 4, 10), c(0.05, 0.5, 0.95)) = 1.2, 3, 8.8.
    let values = vec![10.0, 1.0, 3.0, 2.0, 4.0];
    for (p, q) in [(0.05, 1.2), (0.5, 3.0), (0.95, 8.8)] {
        assert!((quantile_type7(values.clone(), p) - q).abs() < 1e-12, "q({p})");
    }
}

#[test]
fn split_drops_the_middle_draw_of_odd_chains() {
    let chains = Array2::from_shape_vec((2, 5), (0..10).map(f64::from).collect()).expect("2 × 5");
    let split = split_chains(&chains);
    assert_eq!(split, Array2::from_shape_vec((4, 2), vec![0.0, 1.0, 5.0, 6.0, 3.0, 4.0, 8.0, 9.0]).expect("4 × 2"));
}

#[test]
fn ragged_chains_are_an_error() {
    let err = Chains::new(&[vec![1.0, 2.0, 3.0, 4.0], vec![1.0, 2.0, 3.0]]).expect_err("ragged");
    assert_eq!(err, RaggedChains { chain: 1, len: 3, expected: 4 });
}

#[test]
fn undefined_inputs_give_nan() {
    let no_chains = Chains::new::<Vec<f64>>(&[]).expect("no chains is not ragged");
    let mut with_nan = normal_draws(2, 20, 5);
    with_nan[1][7] = f64::NAN;
    let with_nan = Chains::new(&with_nan).expect("equal lengths");
    let one_chain = Chains::new(&normal_draws(1, 20, 5)).expect("one chain");
    for chains in [&no_chains, &with_nan] {
        let d = chains.diagnostics();
        assert!(d.rhat.is_nan() && d.ess_bulk.is_nan() && d.ess_tail.is_nan() && d.mcse_mean.is_nan(), "{d:?}");
    }
    assert!(one_chain.rhat().is_nan());
    assert!(one_chain.ess_bulk().is_finite() && one_chain.mcse_mean().is_finite());
}

#[test]
fn chains_stuck_at_different_values_have_infinite_rhat() {
    let chains = Chains::new(&[vec![1.0; 8], vec![2.0; 8]]).expect("equal lengths");
    assert_eq!(chains.rhat(), f64::INFINITY);
}

#[test]
fn from_array_is_new() {
    let draws = ar1_draws(3, 50, 0.5, 9);
    let array = Array2::from_shape_fn((3, 50), |(i, j)| draws[i][j]);
    assert_eq!(Chains::from_array(array), Chains::new(&draws).expect("equal lengths"));
}

#[test]
fn infinite_draws_are_ranked_as_arviz_ranks_them() {
    // Values from ArviZ 0.23.4 on these draws (the fixture's JSON cannot hold ∞).
    let mut draws = vec![
        vec![
            -0.802, -1.324, -0.248, 0.42, 1.136, 0.11, -0.553, -0.785, 0.749, 1.635, 0.273, -1.233, -0.958, 1.6, 0.203, -1.732, -0.084, -1.163, -0.629, -0.488,
        ],
        vec![
            -0.713, 0.553, -0.063, -0.589, 0.41, 0.83, -1.643, 0.0, -0.981, -0.173, -1.289, 0.021, -0.038, -0.304, -1.048, -0.396, -1.091, -1.355, 0.225,
            -1.109,
        ],
    ];
    draws[1][7] = f64::INFINITY;
    let chains = Chains::new(&draws).expect("equal lengths");
    for (what, ours, theirs) in [
        ("rhat_bulk", chains.rhat_bulk(), 1.0131392814264288),
        ("rhat_tail", chains.rhat_tail(), 0.9756325892396882),
        ("ess_bulk", chains.ess_bulk(), 63.46152029821154),
        ("ess_tail", chains.ess_tail(), 49.572649572649595),
    ] {
        assert!(deviation(ours, Some(theirs)) <= ARVIZ_TOLERANCE, "{what}: ours {ours}, ArviZ {theirs}");
    }
    assert!(chains.ess_mean().is_nan() && chains.mcse_mean().is_nan());
    draws[0][3] = f64::NEG_INFINITY;
    let chains = Chains::new(&draws).expect("equal lengths");
    assert!(deviation(chains.rhat(), Some(0.9844853784577838)) <= ARVIZ_TOLERANCE, "R̂ {}", chains.rhat());
    assert!(deviation(chains.ess_bulk(), Some(64.08239965311849)) <= ARVIZ_TOLERANCE, "bulk ESS {}", chains.ess_bulk());
}
