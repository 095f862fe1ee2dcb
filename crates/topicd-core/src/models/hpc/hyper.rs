//! Closed-form draws of the hyperparameters with flat priors (paper 003, §3.1).
//!
//! - (ψ, γ²) from the words' root log rates μ_f0 (one Gibbs pass of each):
//!   ψ | γ² ~ N(mean μ_f0, γ²/V) and γ² | ψ ~ Scaled-Inv-χ²(V, Σ (μ_f0 − ψ)²/V).
//! - (η, λ²) from the documents' affinities ξ_d (D × K), flat on (η, log λ²), with η
//!   marginalised out of λ²'s conditional:
//!   λ² ~ Scaled-Inv-χ²(DK − K, SS/(DK − K)), SS = Σ_d Σ_k (ξ_dk − ξ̄_k)², then
//!   η | λ² ~ N(ξ̄, λ²/D I). The paper prints DK − 1 degrees of freedom; integrating a
//!   K-dimensional mean removes K of them, which is what is used here.

use rand_distr::{ChiSquared, Distribution, StandardNormal};

/// Scaled-Inv-χ²(dof, scale) draw.
fn scaled_inv_chi2<R: rand::Rng + ?Sized>(dof: f64, scale: f64, rng: &mut R) -> f64 {
    dof * scale / ChiSquared::new(dof).expect("positive degrees of freedom").sample(rng)
}

/// One Gibbs pass over (ψ, γ²): returns the new (ψ, γ²).
pub fn draw_psi_gamma2<R: rand::Rng + ?Sized>(root_rates: &[f64], gamma2: f64, rng: &mut R) -> (f64, f64) {
    let v = root_rates.len() as f64;
    let mean = root_rates.iter().sum::<f64>() / v;
    let z: f64 = StandardNormal.sample(rng);
    let psi = mean + (gamma2 / v).sqrt() * z;
    let ss: f64 = root_rates.iter().map(|m| (m - psi) * (m - psi)).sum();
    (psi, scaled_inv_chi2(v, ss / v, rng))
}

/// Draw (η, λ²) from the affinities, `xi` row-major D × K. Needs D ≥ 2.
pub fn draw_eta_lambda2<R: rand::Rng + ?Sized>(xi: &[f64], num_topics: usize, rng: &mut R) -> (Vec<f64>, f64) {
    let k = num_topics;
    let d = xi.len() / k;
    assert!(d >= 2, "the affinity hyperparameters need at least two documents");
    let mean = affinity_mean(vec![0.0; k], xi, k, d);
    let ss = affinity_squares(-0.0, xi, &mean);
    draw_eta_lambda2_from(mean, ss, d, k, rng)
}

/// The sufficient statistics of (η, λ²): ξ̄ over the `docs` documents and
/// SS = Σ_d Σ_k (ξ_dk − ξ̄_k)².
#[derive(Debug, Clone)]
pub struct AffinitySpread {
    pub mean: Vec<f64>,
    pub squares: f64,
    pub docs: usize,
}

/// The running mean ξ̄ continued over the rows of `xi` (K = `num_topics` columns) of a
/// corpus of `docs` documents: each row adds ξ_dk / D, in row order, so ranks passing
/// it on in document order add what one process adds.
pub fn affinity_mean(mut mean: Vec<f64>, xi: &[f64], num_topics: usize, docs: usize) -> Vec<f64> {
    for row in xi.chunks(num_topics) {
        for (m, x) in mean.iter_mut().zip(row) {
            *m += x / docs as f64;
        }
    }
    mean
}

/// The running SS continued over the rows of `xi` about `mean`, a row's squares summed
/// first, then added in row order.
pub fn affinity_squares(running: f64, xi: &[f64], mean: &[f64]) -> f64 {
    xi.chunks(mean.len()).fold(running, |ss, row| ss + row.iter().zip(mean).map(|(x, m)| (x - m) * (x - m)).sum::<f64>())
}

/// Draw (η, λ²) from ξ̄ (`mean`) and SS over `d` ≥ 2 documents and `k` labels.
pub fn draw_eta_lambda2_from<R: rand::Rng + ?Sized>(mean: Vec<f64>, ss: f64, d: usize, k: usize, rng: &mut R) -> (Vec<f64>, f64) {
    let dof = (d * k - k) as f64;
    let lambda2 = scaled_inv_chi2(dof, ss / dof, rng);
    let sd = (lambda2 / d as f64).sqrt();
    let eta = mean
        .iter()
        .map(|m| {
            let z: f64 = StandardNormal.sample(rng);
            m + sd * z
        })
        .collect();
    (eta, lambda2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{stream, Purpose};

    /// λ²'s draws have the posterior mean SS/(DK − K − 2) (a Scaled-Inv-χ² mean), and η's
    /// draws centre on ξ̄ with variance E[λ²]/D. 100 000 draws; each band is five
    /// standard errors of the Monte Carlo mean.
    #[test]
    fn affinity_hyperparameters_have_their_conditional_moments() {
        let (d, k) = (6usize, 3usize);
        let mut rng = stream(14, Purpose::Estimate, 0, 0);
        let xi: Vec<f64> = (0..d * k).map(|i| (i as f64 * 0.37).sin() * 1.5).collect();
        let mut mean = vec![0.0; k];
        for row in xi.chunks(k) {
            for (m, x) in mean.iter_mut().zip(row) {
                *m += x / d as f64;
            }
        }
        let ss: f64 = xi.chunks(k).map(|r| r.iter().zip(&mean).map(|(x, m)| (x - m).powi(2)).sum::<f64>()).sum();
        let dof = (d * k - k) as f64;
        let want = ss / (dof - 2.0);
        let var = 2.0 * ss * ss / ((dof - 2.0).powi(2) * (dof - 4.0));
        let n = 100_000;
        let (mut l_sum, mut eta0_sum) = (0.0, 0.0);
        for _ in 0..n {
            let (eta, l) = draw_eta_lambda2(&xi, k, &mut rng);
            l_sum += l;
            eta0_sum += eta[0];
        }
        let se = (var / n as f64).sqrt();
        assert!((l_sum / n as f64 - want).abs() < 5.0 * se, "lambda2 mean {} vs {want}", l_sum / n as f64);
        let eta_se = (want / d as f64 / n as f64).sqrt();
        assert!((eta0_sum / n as f64 - mean[0]).abs() < 5.0 * eta_se);
    }

    /// Iterating the (ψ, γ²) pass on 400 root rates from N(−3, 0.5²) settles near the
    /// truth: the posterior sd of ψ is about 0.5/20 = 0.025 and of γ² about
    /// 0.25·sqrt(2/400) ≈ 0.018; after burn-in the chain's averages must lie within 0.1
    /// and 0.08 of the truth (four standard deviations plus sampling error).
    #[test]
    fn root_rate_hyperparameters_settle_on_the_truth() {
        let mut rng = stream(15, Purpose::Estimate, 0, 0);
        let rates: Vec<f64> = (0..400)
            .map(|_| {
                let z: f64 = StandardNormal.sample(&mut rng);
                -3.0 + 0.5 * z
            })
            .collect();
        let mut gamma2 = 10.0;
        let (mut psi_sum, mut g_sum) = (0.0, 0.0);
        for it in 0..2_000 {
            let (psi, g) = draw_psi_gamma2(&rates, gamma2, &mut rng);
            gamma2 = g;
            if it >= 100 {
                psi_sum += psi;
                g_sum += g;
            }
        }
        assert!((psi_sum / 1900.0 + 3.0).abs() < 0.1, "psi {}", psi_sum / 1900.0);
        assert!((g_sum / 1900.0 - 0.25).abs() < 0.08, "gamma2 {}", g_sum / 1900.0);
    }
}
