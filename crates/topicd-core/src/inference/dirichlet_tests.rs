//! Checks of the Dirichlet fixed points against brute-force maximisation of the
//! Dirichlet-multinomial likelihood, computed group by group without histograms.

use super::*;
use crate::rng::{stream, Purpose};
use rand::RngExt;
use rand_distr::{Distribution, Gamma};
use statrs::function::gamma::digamma;

/// `groups` groups of `len` counts over `alpha.len()` components, each group's
/// proportions drawn from Dirichlet(alpha) (fixed seed).
fn draw_groups(alpha: &[f64], groups: usize, len: usize, seed: u64) -> Vec<Vec<u64>> {
    let mut rng = stream(seed, Purpose::Estimate, 0, 0);
    (0..groups)
        .map(|g| {
            // Lengths vary from group to group (len/2..=len), as documents do.
            let n = len / 2 + g % (len / 2 + 1);
            let w: Vec<f64> = alpha.iter().map(|&a| Gamma::new(a, 1.0).unwrap().sample(&mut rng)).collect();
            let total: f64 = w.iter().sum();
            let mut counts = vec![0u64; alpha.len()];
            for _ in 0..n {
                let mut u = rng.random::<f64>() * total;
                let mut k = 0;
                while k + 1 < w.len() && u >= w[k] {
                    u -= w[k];
                    k += 1;
                }
                counts[k] += 1;
            }
            counts
        })
        .collect()
}

/// The histograms the fixed point reads.
fn histograms(groups: &[Vec<u64>]) -> (Vec<Vec<u64>>, Vec<u64>) {
    let k = groups[0].len();
    let mut components = vec![Vec::new(); k];
    let mut lengths = Vec::new();
    for g in groups {
        for (h, &n) in components.iter_mut().zip(g) {
            add_to_histogram(h, n as usize);
        }
        add_to_histogram(&mut lengths, g.iter().sum::<u64>() as usize);
    }
    (components, lengths)
}

/// log p(counts | α) summed group by group with lnΓ, independent of the histograms.
fn direct_log_likelihood(alpha: &[f64], groups: &[Vec<u64>]) -> f64 {
    let a0: f64 = alpha.iter().sum();
    groups
        .iter()
        .map(|g| {
            let len: u64 = g.iter().sum();
            let parts: f64 = g.iter().zip(alpha).map(|(&n, &a)| ln_gamma(n as f64 + a) - ln_gamma(a)).sum();
            parts - (ln_gamma(len as f64 + a0) - ln_gamma(a0))
        })
        .sum()
}

/// Maximise `f` over log-parameters by a zooming grid: 15 points per axis around the
/// best point, the half-width shrinking to two grid steps each round. 10 rounds from a
/// half-width of 4 end at a spacing of about 2e-6 in log α.
fn grid_maximise(dims: usize, f: impl Fn(&[f64]) -> f64) -> Vec<f64> {
    let mut centre = vec![0.0; dims];
    let mut half = 4.0;
    for _ in 0..10 {
        let mut best = (f64::NEG_INFINITY, centre.clone());
        let points = 15usize.pow(dims as u32);
        for index in 0..points {
            let mut at = index;
            let log_a: Vec<f64> = centre
                .iter()
                .map(|&c| {
                    let i = at % 15;
                    at /= 15;
                    c + half * (i as f64 - 7.0) / 7.0
                })
                .collect();
            let alpha: Vec<f64> = log_a.iter().map(|x| x.exp()).collect();
            let value = f(&alpha);
            if value > best.0 {
                best = (value, log_a);
            }
        }
        centre = best.1;
        half *= 2.0 / 7.0;
    }
    centre.iter().map(|x| x.exp()).collect()
}

#[test]
fn digamma_differences_match_digamma() {
    let h = [7u64, 3, 0, 2, 5, 0, 1];
    for a in [0.01, 0.3, 2.5, 40.0] {
        let direct: f64 = h.iter().enumerate().skip(1).map(|(n, &g)| g as f64 * (digamma(n as f64 + a) - digamma(a))).sum();
        let got = digamma_difference_sum(&h, a);
        assert!((got - direct).abs() <= 1e-10 * direct.abs(), "a = {a}: {got} vs {direct}");
    }
}

/// The histogram form of the likelihood is the group-by-group sum.
#[test]
fn histogram_likelihood_is_the_direct_sum() {
    let groups = draw_groups(&[0.4, 1.5, 0.9], 40, 16, 3);
    let (components, lengths) = histograms(&groups);
    for alpha in [[0.4, 1.5, 0.9], [0.02, 3.0, 7.0]] {
        let (a, b) = (log_likelihood(&alpha, &components, &lengths), direct_log_likelihood(&alpha, &groups));
        assert!((a - b).abs() <= 1e-9 * b.abs(), "{a} vs {b}");
    }
}

/// On 120 groups of 10–20 counts over three components, the asymmetric fixed point
/// lands on the maximiser found by a brute-force grid search of the direct likelihood
/// (both to well below the grid's final spacing), from starts on either side, and the
/// likelihood never decreases along the way.
#[test]
fn asymmetric_fixed_point_is_the_brute_force_maximum() {
    let groups = draw_groups(&[0.3, 1.2, 2.5], 120, 20, 7);
    let (components, lengths) = histograms(&groups);
    let brute = grid_maximise(3, |alpha| direct_log_likelihood(alpha, &groups));
    let settings = FixedPointSettings { max_iterations: 100_000, tolerance: 1e-12, floor: 1e-5 };
    for start in [[0.05, 0.05, 0.05], [1.0, 1.0, 1.0], [20.0, 0.5, 3.0]] {
        let mut alpha = start.to_vec();
        let mut previous = log_likelihood(&alpha, &components, &lengths);
        let mut steps = 0;
        while steps < settings.max_iterations {
            let before = alpha.clone();
            asymmetric_step(&mut alpha, &components, &lengths, settings.floor);
            steps += 1;
            let now = log_likelihood(&alpha, &components, &lengths);
            // Rounding of the two sums is ~1e-12 of their size.
            assert!(now >= previous - 1e-9 * previous.abs(), "step {steps} from {start:?}: {previous} → {now}");
            previous = now;
            if alpha.iter().zip(&before).all(|(a, b)| (a - b).abs() <= 1e-12 * b) {
                break;
            }
        }
        for (a, b) in alpha.iter().zip(&brute) {
            assert!((a.ln() - b.ln()).abs() < 1e-4, "from {start:?}: fixed point {alpha:?}, brute force {brute:?}");
        }
        // optimize_asymmetric reaches the same point.
        let mut again = start.to_vec();
        optimize_asymmetric(&mut again, &components, &lengths, &settings);
        for (a, b) in again.iter().zip(&alpha) {
            assert!((a - b).abs() <= 1e-9 * b, "{again:?} vs {alpha:?}");
        }
    }
}

/// The symmetric fixed point on 60 groups of 6–12 counts over five categories equals
/// the one-dimensional brute-force maximum, and never decreases the likelihood.
#[test]
fn symmetric_fixed_point_is_the_brute_force_maximum() {
    let dim = 5;
    let groups = draw_groups(&[0.7; 5], 60, 12, 11);
    let mut entries = Vec::new();
    let mut lengths = Vec::new();
    for g in &groups {
        for &n in g {
            add_to_histogram(&mut entries, n as usize);
        }
        add_to_histogram(&mut lengths, g.iter().sum::<u64>() as usize);
    }
    let brute = grid_maximise(1, |a| direct_log_likelihood(&vec![a[0]; dim], &groups))[0];
    for start in [0.01, 5.0] {
        let mut a = start;
        let mut previous = symmetric_log_likelihood(a, dim, &entries, &lengths);
        for _ in 0..100_000 {
            let next = symmetric_step(a, dim, &entries, &lengths, 1e-5);
            let now = symmetric_log_likelihood(next, dim, &entries, &lengths);
            assert!(now >= previous - 1e-9 * previous.abs(), "{previous} → {now}");
            previous = now;
            let settled = (next - a).abs() <= 1e-12 * a;
            a = next;
            if settled {
                break;
            }
        }
        assert!((a.ln() - brute.ln()).abs() < 1e-4, "from {start}: fixed point {a}, brute force {brute}");
        let (b, _) =
            optimize_symmetric(start, dim, &entries, &lengths, &FixedPointSettings { tolerance: 1e-12, max_iterations: 100_000, ..Default::default() });
        assert!((a - b).abs() <= 1e-9 * a);
        // The symmetric likelihood is the asymmetric one at equal parameters.
        let (components, lens) = histograms(&groups);
        let asym = log_likelihood(&vec![a; dim], &components, &lens);
        assert!((asym - symmetric_log_likelihood(a, dim, &entries, &lengths)).abs() <= 1e-9 * asym.abs());
    }
}

/// A component no group uses goes to the floor, not to 0 or below.
#[test]
fn unused_components_stop_at_the_floor() {
    let groups = vec![vec![3, 0, 1], vec![2, 0, 4], vec![5, 0, 0]];
    let (components, lengths) = histograms(&groups);
    let mut alpha = vec![1.0; 3];
    optimize_asymmetric(&mut alpha, &components, &lengths, &FixedPointSettings::default());
    assert_eq!(alpha[1], 1e-5);
    assert!(alpha[0] > 1e-5 && alpha[2] > 1e-5);
}
