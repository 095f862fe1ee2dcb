//! The conjugate draw of a parent node's rate variance τ²_fp (paper 003, §3.1):
//! children μ_c ~ N(μ_p, τ²_p) and τ²_p ~ Scaled-Inv-χ²(ν, σ²) give
//! τ²_p | μ ~ Scaled-Inv-χ²(ν + n, (νσ² + Σ_c (μ_c − μ_p)²) / (ν + n)), n children.

use rand_distr::{ChiSquared, Distribution};

/// Draw τ² given the prior (ν, σ²) and the children's deviations from their parent.
pub fn draw_tau2<R: rand::Rng + ?Sized>(nu: f64, sigma2: f64, deviations: impl IntoIterator<Item = f64>, rng: &mut R) -> f64 {
    let (mut n, mut ss) = (0usize, 0.0);
    for d in deviations {
        n += 1;
        ss += d * d;
    }
    let dof = nu + n as f64;
    let chi2 = ChiSquared::new(dof).expect("positive degrees of freedom");
    (nu * sigma2 + ss) / chi2.sample(rng)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{stream, Purpose};

    /// The posterior is Scaled-Inv-χ²(ν', s²) with mean ν's²/(ν'−2) and variance
    /// 2ν'²s⁴/((ν'−2)²(ν'−4)). With ν = 3, σ² = 0.5 and three children, ν' = 6; from
    /// 200 000 draws the mean's standard error is sqrt(var/n); the test allows five.
    #[test]
    fn draws_have_the_conjugate_posterior_mean() {
        let (nu, sigma2) = (3.0, 0.5);
        let devs = [0.4, -1.1, 0.7];
        let nu_post = nu + 3.0;
        let s2 = (nu * sigma2 + devs.iter().map(|d| d * d).sum::<f64>()) / nu_post;
        let mean = nu_post * s2 / (nu_post - 2.0);
        let var = 2.0 * nu_post * nu_post * s2 * s2 / ((nu_post - 2.0).powi(2) * (nu_post - 4.0));
        let n = 200_000;
        let mut rng = stream(12, Purpose::Estimate, 0, 0);
        let got = (0..n).map(|_| draw_tau2(nu, sigma2, devs, &mut rng)).sum::<f64>() / n as f64;
        let se = (var / n as f64).sqrt();
        assert!((got - mean).abs() < 5.0 * se, "mean {got} vs {mean} (se {se})");
    }
}
