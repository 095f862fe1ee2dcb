//! Monte Carlo covariance and correlation of DCNT/SCNT topic weights (paper 000, A.3).
//!
//! Why it exists: the logistic stick-breaking makes Cov[π_d] intractable in closed form,
//! yet the topic correlations are what DCNT is for. For each document, S draws of
//! (u, v) from the fitted prior given φ_d (u ~ N(ηᵀφ_d, I), v ~ N(A u, λ_v⁻¹ I)) are
//! mapped through the stick-breaking; the per-document covariances (eqs. 3–4, divided
//! by S as the paper writes) are averaged over documents (eq. 5).
//!
//! Documents with identical feature rows have the same distribution of π, hence the
//! same Cov[π_d]: each distinct row is simulated once (on the `Covariance` stream of its
//! first document) and weighted by its number of documents. Without metadata (φ_d = 1)
//! the whole corpus costs one document's S draws; the Monte Carlo error is then that of
//! S draws, so raise S for more precision.

use super::point::DcntPoint;
use super::stick::log_stick_weights;
use crate::rng::{stream, Purpose};
use rand_distr::{Distribution, StandardNormal};
use rayon::prelude::*;
use std::collections::HashMap;

/// One standard normal draw.
#[inline]
fn std_normal<R: rand::Rng + ?Sized>(rng: &mut R) -> f64 {
    StandardNormal.sample(rng)
}

/// Σ̂ (K̄ × K̄ row-major), its correlation matrix, and the mean topic weights.
#[derive(Debug, Clone, PartialEq)]
pub struct TopicCovariance {
    pub covariance: Vec<f64>,
    /// Σ̂_ij / sqrt(Σ̂_ii Σ̂_jj), 0 where a variance is 0.
    pub correlation: Vec<f64>,
    /// (1/D) Σ_d E[π_d].
    pub mean: Vec<f64>,
}

/// Σ̂ = (1/D) Σ_d Cov[π_d] with `draws` (S, at least 2 used) prior draws per distinct
/// feature row, in parallel over rows. An empty corpus gives zeros.
pub fn topic_covariance(point: &DcntPoint, features_per_doc: &[Vec<f64>], draws: usize, seed: u64) -> TopicCovariance {
    let k = point.num_topics;
    let draws = draws.max(2);
    // Distinct feature rows (bitwise), each with its first document and multiplicity.
    let mut groups: Vec<(usize, usize)> = Vec::new();
    let mut seen: HashMap<Vec<u64>, usize> = HashMap::new();
    for (d, row) in features_per_doc.iter().enumerate() {
        let key: Vec<u64> = row.iter().map(|x| x.to_bits()).collect();
        match seen.get(&key) {
            Some(&g) => groups[g].1 += 1,
            None => {
                seen.insert(key, groups.len());
                groups.push((d, 1));
            }
        }
    }
    // Per-row results in row order, then summed in that order: the same numbers
    // whatever the thread count.
    let per_row: Vec<(Vec<f64>, Vec<f64>)> = groups.par_iter().map(|&(d, _)| document_covariance(point, &features_per_doc[d], draws, seed, d as u64)).collect();
    let (mut covariance, mut mean) = (vec![0.0; k * k], vec![0.0; k]);
    for ((cov, m), &(_, multiplicity)) in per_row.iter().zip(&groups) {
        let w = multiplicity as f64;
        covariance.iter_mut().zip(cov).for_each(|(a, b)| *a += w * b);
        mean.iter_mut().zip(m).for_each(|(a, b)| *a += w * b);
    }
    let docs = features_per_doc.len().max(1) as f64;
    covariance.iter_mut().for_each(|x| *x /= docs);
    mean.iter_mut().for_each(|x| *x /= docs);
    let correlation = correlation_of(&covariance, k);
    TopicCovariance { covariance, correlation, mean }
}

/// Cov[π_d] (eq. 4, K̄ × K̄) and E[π_d] (eq. 3) from S draws on document d's stream.
fn document_covariance(point: &DcntPoint, features: &[f64], draws: usize, seed: u64, doc: u64) -> (Vec<f64>, Vec<f64>) {
    let k = point.num_topics;
    let mut rng = stream(seed, Purpose::Covariance, 0, doc);
    let mean_u = point.u_mean(features);
    let sd = 1.0 / point.lambda_v.sqrt();
    let (mut u, mut v) = (vec![0.0; k], vec![0.0; k]);
    let mut pis = vec![0.0; draws * k];
    for pi in pis.chunks_exact_mut(k) {
        for (x, m) in u.iter_mut().zip(&mean_u) {
            *x = m + std_normal(&mut rng);
        }
        for (r, x) in v.iter_mut().enumerate() {
            let au: f64 = point.a[r * k..(r + 1) * k].iter().zip(&u).map(|(a, b)| a * b).sum();
            *x = au + sd * std_normal(&mut rng);
        }
        log_stick_weights(&v, pi);
        pi.iter_mut().for_each(|p| *p = p.exp());
    }
    // Two passes (mean, then centred products) for accuracy.
    let mut mean = vec![0.0; k];
    for pi in pis.chunks_exact(k) {
        mean.iter_mut().zip(pi).for_each(|(m, p)| *m += p);
    }
    mean.iter_mut().for_each(|m| *m /= draws as f64);
    let mut cov = vec![0.0; k * k];
    let mut centred = vec![0.0; k];
    for pi in pis.chunks_exact(k) {
        centred.iter_mut().zip(pi).zip(&mean).for_each(|((c, p), m)| *c = p - m);
        for i in 0..k {
            let ci = centred[i];
            for (out, cj) in cov[i * k + i..(i + 1) * k].iter_mut().zip(&centred[i..]) {
                *out += ci * cj;
            }
        }
    }
    for i in 0..k {
        for j in i..k {
            let x = cov[i * k + j] / draws as f64;
            cov[i * k + j] = x;
            cov[j * k + i] = x;
        }
    }
    (cov, mean)
}

/// The covariance of the activations v_d that the model itself parameterises: with u
/// ~ N(ηᵀφ_d, I) and v ~ N(A u, λ_v⁻¹ I), Cov[v_d] = A Aᵀ + λ_v⁻¹ I for every
/// document (A is the model's square-root correlation matrix), K̄ × K̄ row-major, and
/// its correlation matrix. Exact, no simulation. Unlike the topic-weight correlations
/// of A.3 it is not bent by the stick-breaking: on the correlated bars its entries are
/// positive within an orientation even where A.3's are not (see `bars_tests`).
pub fn activation_covariance(point: &DcntPoint) -> (Vec<f64>, Vec<f64>) {
    let k = point.num_topics;
    let noise = 1.0 / point.lambda_v;
    let row = |r: usize| &point.a[r * k..(r + 1) * k];
    let mut covariance = vec![0.0; k * k];
    for i in 0..k {
        for j in i..k {
            let mut c: f64 = row(i).iter().zip(row(j)).map(|(a, b)| a * b).sum();
            if i == j {
                c += noise;
            }
            covariance[i * k + j] = c;
            covariance[j * k + i] = c;
        }
    }
    let correlation = correlation_of(&covariance, k);
    (covariance, correlation)
}

/// C_ij / sqrt(C_ii C_jj), 0 where either variance is 0.
fn correlation_of(cov: &[f64], k: usize) -> Vec<f64> {
    let sd: Vec<f64> = (0..k).map(|i| cov[i * k + i].max(0.0).sqrt()).collect();
    let mut out = vec![0.0; k * k];
    for i in 0..k {
        for j in 0..k {
            if sd[i] > 0.0 && sd[j] > 0.0 {
                out[i * k + j] = cov[i * k + j] / (sd[i] * sd[j]);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::dcnt::stick::stick_weights;

    /// E[f(v_0, v_1)] for (v_0, v_1) ~ N(mean, cov) by a tensor trapezoid rule on
    /// standardised coordinates over ±9 sd (error far below the Monte Carlo errors here).
    fn gaussian_expectation(mean: [f64; 2], cov: [[f64; 2]; 2], f: impl Fn(f64, f64) -> f64) -> f64 {
        let l00 = cov[0][0].sqrt();
        let l10 = cov[1][0] / l00;
        let l11 = (cov[1][1] - l10 * l10).max(0.0).sqrt();
        let (h, half) = (0.02, 450);
        let phi = |x: f64| (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt();
        let mut total = 0.0;
        for i in -half..=half {
            let x = i as f64 * h;
            for j in -half..=half {
                let y = j as f64 * h;
                total += phi(x) * phi(y) * f(mean[0] + l00 * x, mean[1] + l10 * x + l11 * y);
            }
        }
        total * h * h
    }

    /// The activation covariance A Aᵀ + λ_v⁻¹ I against the sample covariance of
    /// 200 000 simulated activations: each entry within 5 standard errors, SE =
    /// sqrt((C_ii C_jj + C_ij²) / n) for a Gaussian sample covariance.
    #[test]
    fn activation_covariance_matches_simulated_activations() {
        let k = 3;
        let point = DcntPoint {
            num_topics: k,
            num_features: 1,
            a: vec![1.0, 0.0, 0.0, 0.8, 0.6, 0.0, -0.5, 0.3, 0.4],
            eta: vec![0.2, -0.1, 0.3],
            lambda_v: 4.0,
            topic_word: vec![1.0; k],
        };
        let (cov, corr) = activation_covariance(&point);
        let n = 200_000;
        let mut rng = stream(7, Purpose::Covariance, 0, 0);
        let mut sums = vec![0.0; k * k];
        let mut means = vec![0.0; k];
        let mut draws = Vec::with_capacity(n);
        for _ in 0..n {
            let u: Vec<f64> = point.u_mean(&[1.0]).iter().map(|m| m + std_normal(&mut rng)).collect();
            let v: Vec<f64> = point.a_times(&u).iter().map(|x| x + 0.5 * std_normal(&mut rng)).collect();
            means.iter_mut().zip(&v).for_each(|(m, x)| *m += x / n as f64);
            draws.push(v);
        }
        for v in &draws {
            for i in 0..k {
                for j in 0..k {
                    sums[i * k + j] += (v[i] - means[i]) * (v[j] - means[j]) / n as f64;
                }
            }
        }
        for i in 0..k {
            for j in 0..k {
                let c = cov[i * k + j];
                let se = ((cov[i * k + i] * cov[j * k + j] + c * c) / n as f64).sqrt();
                assert!((sums[i * k + j] - c).abs() < 5.0 * se, "entry ({i}, {j}): simulated {} vs {c} (se {se})", sums[i * k + j]);
                assert!((corr[i * k + j] - c / (cov[i * k + i] * cov[j * k + j]).sqrt()).abs() < 1e-12);
            }
        }
        // Row 1 of A is (0.8, 0.6, 0): unit norm, so Var v_1 = 1 + 1/4.
        assert!((cov[k + 1] - 1.25).abs() < 1e-12);
    }

    /// Marginal law of (v_0, v_1): mean A ηᵀφ, covariance A Aᵀ + λ_v⁻¹ I (rows 0 and 1).
    fn activation_law(point: &DcntPoint, features: &[f64]) -> ([f64; 2], [[f64; 2]; 2]) {
        let k = point.num_topics;
        let m = point.a_times(&point.u_mean(features));
        let row = |r: usize| &point.a[r * k..(r + 1) * k];
        let dot = |x: &[f64], y: &[f64]| x.iter().zip(y).map(|(a, b)| a * b).sum::<f64>();
        let noise = 1.0 / point.lambda_v;
        let c = [[dot(row(0), row(0)) + noise, dot(row(0), row(1))], [dot(row(1), row(0)), dot(row(1), row(1)) + noise]];
        ([m[0], m[1]], c)
    }

    /// Exact (quadrature) E[π], E[Cov] of one document's S-draw estimate (factor
    /// (S − 1)/S of eq. 4's 1/S), and the standard error of each covariance entry,
    /// sqrt((E[(π_i − μ_i)²(π_j − μ_j)²] − c_ij²) / S).
    fn exact_document(point: &DcntPoint, features: &[f64], draws: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let k = point.num_topics;
        let (m, c) = activation_law(point, features);
        let pi = |a: f64, b: f64| {
            let mut v = vec![0.0; k];
            v[0] = a;
            if k > 1 {
                v[1] = b;
            }
            stick_weights(&v)
        };
        let mean: Vec<f64> = (0..k).map(|i| gaussian_expectation(m, c, |a, b| pi(a, b)[i])).collect();
        let mut cov = vec![0.0; k * k];
        let mut se = vec![0.0; k * k];
        let s = draws as f64;
        for i in 0..k {
            for j in 0..k {
                let cij = gaussian_expectation(m, c, |a, b| {
                    let p = pi(a, b);
                    (p[i] - mean[i]) * (p[j] - mean[j])
                });
                let fourth = gaussian_expectation(m, c, |a, b| {
                    let p = pi(a, b);
                    ((p[i] - mean[i]) * (p[j] - mean[j])).powi(2)
                });
                cov[i * k + j] = cij * (s - 1.0) / s;
                se[i * k + j] = ((fourth - cij * cij) / s).sqrt();
            }
        }
        (mean, cov, se)
    }

    fn assert_shape(c: &TopicCovariance, k: usize) {
        for i in 0..k {
            assert!(c.covariance[i * k + i] >= 0.0);
            for j in 0..k {
                assert_eq!(c.covariance[i * k + j], c.covariance[j * k + i], "symmetric");
                assert!(c.correlation[i * k + j].abs() <= 1.0 + 1e-12);
            }
        }
        let total: f64 = c.mean.iter().sum();
        assert!((total - 1.0).abs() < 1e-12, "mean weights sum to one");
    }

    #[test]
    fn two_topics_give_plus_minus_the_variance_of_a_sigmoid() {
        // K̄ = 2: π_0 = σ(v_0), π_1 = 1 − π_0, so Cov = [[s, −s], [−s, s]], s = Var σ(v_0).
        // Three documents, two with the same features (one simulation, weight 2).
        let point = DcntPoint {
            num_topics: 2,
            num_features: 2,
            a: vec![0.9, 0.4, 0.2, 1.1],
            eta: vec![0.2, -0.1, 0.8, 0.3],
            lambda_v: 2.0,
            topic_word: vec![0.5, 0.5, 0.5, 0.5],
        };
        let features = vec![vec![1.0, 0.0], vec![1.0, 1.0], vec![1.0, 0.0]];
        let draws = 40_000;
        let got = topic_covariance(&point, &features, draws, 5);
        assert_shape(&got, 2);
        let (mean_a, cov_a, se_a) = exact_document(&point, &features[0], draws);
        let (mean_b, cov_b, se_b) = exact_document(&point, &features[1], draws);
        // Independent simulations per distinct row: weights 2/3 and 1/3, SEs combine in
        // quadrature; |z| < 4.5.
        let expect = (2.0 * cov_a[0] + cov_b[0]) / 3.0;
        let se = (4.0 * se_a[0].powi(2) + se_b[0].powi(2)).sqrt() / 3.0;
        let z = (got.covariance[0] - expect) / se;
        eprintln!("K=2 variance: {:.6e} vs exact {expect:.6e} ± {se:.2e}, z = {z:.2}", got.covariance[0]);
        assert!(z.abs() < 4.5, "variance {} vs {expect} ± {se}: z = {z}", got.covariance[0]);
        let s = got.covariance[0];
        assert!((got.covariance[1] + s).abs() < 1e-12 && (got.covariance[3] - s).abs() < 1e-12, "{:?}", got.covariance);
        assert!((got.correlation[1] + 1.0).abs() < 1e-9 && (got.correlation[0] - 1.0).abs() < 1e-9);
        // The mean weight: SE sqrt(s / S) per simulation.
        let mean_expect = (2.0 * mean_a[0] + mean_b[0]) / 3.0;
        let mean_se = (4.0 * cov_a[0] + cov_b[0]).sqrt() / 3.0 / (draws as f64).sqrt();
        let z = (got.mean[0] - mean_expect) / mean_se;
        eprintln!("K=2 mean π_0: {:.6} vs exact {mean_expect:.6}, z = {z:.2}", got.mean[0]);
        assert!(z.abs() < 4.5, "mean {} vs {mean_expect}: z = {z}", got.mean[0]);
    }

    #[test]
    fn positive_off_diagonal_a_makes_the_first_two_topics_covary_positively() {
        // v_1 ≈ 3 v_0 (A_10 = 3, little noise). In the limit π_1 ≈ σ(−v_0) 1{v_0 > 0}: it
        // is non-zero only where π_0 = σ(v_0) > 1/2 = E π_0 (v_0 symmetric about 0), so
        // Cov(π_0, π_1) = E[(π_0 − ½) π_1] > 0. With A_10 = 0 instead the sticks only
        // compete: Cov(π_0, π_1) = −E[σ(v_1)] Var π_0 < 0.
        let k = 3;
        let mut point = DcntPoint {
            num_topics: k,
            num_features: 1,
            a: vec![1.0, 0.0, 0.0, 3.0, 0.0, 0.0, 0.0, 0.0, 1.0],
            eta: vec![0.0; k],
            lambda_v: 25.0,
            topic_word: vec![1.0; k],
        };
        let draws = 20_000;
        let got = topic_covariance(&point, &[vec![1.0]], draws, 8);
        assert_shape(&got, k);
        let (_, exact, se) = exact_document(&point, &[1.0], draws);
        for i in 0..k {
            for j in 0..k {
                let z = (got.covariance[i * k + j] - exact[i * k + j]) / se[i * k + j];
                eprintln!("K=3 ({i},{j}): {:.5e} vs exact {:.5e} ± {:.1e}, z = {z:.2}", got.covariance[i * k + j], exact[i * k + j], se[i * k + j]);
                assert!(z.abs() < 4.5, "entry ({i},{j}): {} vs {} ± {}: z = {z}", got.covariance[i * k + j], exact[i * k + j], se[i * k + j]);
            }
        }
        assert!(exact[1] > 4.5 * se[1] && got.covariance[1] > 0.0, "positive: {} ± {}", exact[1], se[1]);
        point.a[3] = 0.0;
        let independent = topic_covariance(&point, &[vec![1.0]], draws, 8);
        let (_, exact, se) = exact_document(&point, &[1.0], draws);
        eprintln!("A_10 = 0: Cov(π_0, π_1) {:.5e} vs exact {:.5e} ± {:.1e}", independent.covariance[1], exact[1], se[1]);
        assert!(exact[1] < -4.5 * se[1] && independent.covariance[1] < 0.0, "negative: {} ± {}", exact[1], se[1]);
    }

    #[test]
    fn same_seed_same_result_whatever_the_threads() {
        let point = DcntPoint {
            num_topics: 3,
            num_features: 1,
            a: vec![1.0, 0.0, 0.0, 0.5, 1.0, 0.0, 0.0, -0.5, 1.0],
            eta: vec![0.1, 0.2, 0.3],
            lambda_v: 1.0,
            topic_word: vec![1.0; 3],
        };
        let features: Vec<Vec<f64>> = (0..5).map(|d| vec![d as f64]).collect();
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| topic_covariance(&point, &features, 500, 3))
        };
        assert_eq!(run(1), run(2));
    }
}
