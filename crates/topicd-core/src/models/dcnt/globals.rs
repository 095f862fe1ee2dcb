//! The global parameters of DCNT/SCNT and their conjugate Gibbs draws.
//!
//! Why it exists: given every document's u_d and v_d, the global parameters (A, λ_A,
//! λ_v, η, μ, λ_f) have standard conjugate conditionals (MODELS.md §3). Each draw is
//! a plain function of its sufficient statistics so that the scan, the initialisation
//! and the Geweke tests call the very same code.
//!
//! Layouts: U and V are D × K̄ row-major (row d is u_d or v_d), A is K̄ × K̄ row-major,
//! η is F × K̄ row-major (column k is η_k), Φ is D × F row-major.

use super::params::Priors;
use super::variant::Covariance;
use nalgebra::{Cholesky, DMatrix, DVector, Dyn};
use rand_distr::{Distribution, Gamma, Normal, StandardNormal};
use serde::{Deserialize, Serialize};

/// Everything shared by all documents (serialisable: a checkpoint carries it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Globals {
    /// K̄.
    pub num_topics: usize,
    /// F.
    pub num_features: usize,
    /// A, K̄ × K̄ row-major (off-diagonal entries stay 0 for SCNT).
    pub a: Vec<f64>,
    /// η, F × K̄ row-major.
    pub eta: Vec<f64>,
    /// μ, one per feature.
    pub mu: Vec<f64>,
    /// λ_f, one per feature.
    pub lambda_f: Vec<f64>,
    pub lambda_a: f64,
    pub lambda_v: f64,
}

// A numerical breakdown (parameters that overflowed, a precision that is no longer
// positive definite: a diverging chain, or a resumed checkpoint with absurd values)
// makes these draws NaN rather than panic; the chain's step finds the non-finite
// globals and fails the fit with a numerical error.

/// A draw from N(P⁻¹ b, P⁻¹) given the Cholesky factor of P: mean + L⁻ᵀ ε.
fn gaussian_with_precision<R: rand::Rng + ?Sized>(chol: &Cholesky<f64, Dyn>, b: &DVector<f64>, rng: &mut R) -> DVector<f64> {
    let mean = chol.solve(b);
    let eps = DVector::from_iterator(b.len(), (0..b.len()).map(|_| StandardNormal.sample(rng)));
    match chol.l().transpose().solve_upper_triangular(&eps) {
        Some(noise) => mean + noise,
        None => DVector::from_element(b.len(), f64::NAN),
    }
}

/// Gamma(shape, rate); NaN for parameters that are not positive and finite.
fn gamma<R: rand::Rng + ?Sized>(shape: f64, rate: f64, rng: &mut R) -> f64 {
    Gamma::new(shape, 1.0 / rate).map_or(f64::NAN, |g| g.sample(rng))
}

/// Normal(mean, sd); NaN for a standard deviation that is not finite.
fn normal<R: rand::Rng + ?Sized>(mean: f64, sd: f64, rng: &mut R) -> f64 {
    Normal::new(mean, sd).map_or(f64::NAN, |n| n.sample(rng))
}

impl Globals {
    /// The toy experiment's starting point: every precision at 1 (its prior mean), μ at
    /// its prior mean 0, η_k ~ N(μ, I) and A from its prior given λ_A = 1.
    ///
    /// μ deviates from "drawn from the prior": with γ_μ = 10⁶ a draw is of order 10³,
    /// every activation would start near ±10³ and every stick would be saturated, so no
    /// entry-wise proposal could ever be accepted.
    pub fn initial<R: rand::Rng + ?Sized>(num_topics: usize, num_features: usize, covariance: Covariance, rng: &mut R) -> Self {
        let k = num_topics;
        let mu = vec![0.0; num_features];
        let lambda_f = vec![1.0; num_features];
        let eta = (0..num_features * k).map(|i| normal(mu[i / k], 1.0, rng)).collect();
        let a = prior_a(k, 1.0, covariance, rng);
        Globals { num_topics: k, num_features, a, eta, mu, lambda_f, lambda_a: 1.0, lambda_v: 1.0 }
    }

    /// A draw of every global parameter from the prior (for the Geweke tests).
    pub fn from_prior<R: rand::Rng + ?Sized>(num_topics: usize, num_features: usize, covariance: Covariance, priors: &Priors, rng: &mut R) -> Self {
        let k = num_topics;
        let lambda_f: Vec<f64> = (0..num_features).map(|_| gamma(priors.a_f, priors.b_f, rng)).collect();
        let mu: Vec<f64> = (0..num_features).map(|_| normal(0.0, priors.gamma_mu.sqrt(), rng)).collect();
        let lambda_a = gamma(priors.a_a, priors.b_a, rng);
        let lambda_v = gamma(priors.a_v, priors.b_v, rng);
        let eta = (0..num_features * k).map(|i| normal(mu[i / k], 1.0 / lambda_f[i / k].sqrt(), rng)).collect();
        let a = prior_a(k, lambda_a, covariance, rng);
        Globals { num_topics: k, num_features, a, eta, mu, lambda_f, lambda_a, lambda_v }
    }

    /// ηᵀ φ (a K̄-vector).
    pub fn u_mean(&self, phi: &[f64]) -> Vec<f64> {
        let k = self.num_topics;
        let mut m = vec![0.0; k];
        for (f, &x) in phi.iter().enumerate() {
            for (mk, &e) in m.iter_mut().zip(&self.eta[f * k..(f + 1) * k]) {
                *mk += e * x;
            }
        }
        m
    }

    /// A u (a K̄-vector).
    pub fn a_times(&self, u: &[f64]) -> Vec<f64> {
        let k = self.num_topics;
        (0..k).map(|r| self.a[r * k..(r + 1) * k].iter().zip(u).map(|(a, x)| a * x).sum()).collect()
    }

    /// One pass over the global blocks in the scan's order: A, λ_A, λ_v, η, μ, λ_f.
    pub fn update<R: rand::Rng + ?Sized>(&mut self, u: &[f64], v: &[f64], phi: &[f64], covariance: Covariance, priors: &Priors, rng: &mut R) {
        self.update_loadings(u, v, covariance, priors, rng);
        self.update_feature_regression(u, phi, priors, rng);
    }

    /// The A block: A | U, V, λ_A, λ_v, then λ_A | A and λ_v | U, V, A.
    pub fn update_loadings<R: rand::Rng + ?Sized>(&mut self, u: &[f64], v: &[f64], covariance: Covariance, priors: &Priors, rng: &mut R) {
        self.a = draw_a(u, v, self.num_topics, self.lambda_a, self.lambda_v, covariance, rng);
        self.lambda_a = draw_lambda_a(&self.a, self.num_topics, covariance, priors, rng);
        self.lambda_v = draw_lambda_v(u, v, self, priors, rng);
    }

    /// The η block: η | U, μ, λ_f, then μ | η, λ_f and λ_f | η, μ.
    pub fn update_feature_regression<R: rand::Rng + ?Sized>(&mut self, u: &[f64], phi: &[f64], priors: &Priors, rng: &mut R) {
        self.eta = draw_eta(u, phi, self.num_topics, self.num_features, &self.mu, &self.lambda_f, rng);
        self.mu = draw_mu(&self.eta, self.num_topics, &self.lambda_f, priors.gamma_mu, rng);
        self.lambda_f = draw_lambda_f(&self.eta, &self.mu, self.num_topics, priors, rng);
    }
}

/// A from its prior: DCNT A_kl ~ N(0, (k λ_A)⁻¹) with k the 1-based row; SCNT only the
/// diagonal, A_kk ~ N(0, λ_A⁻¹).
pub fn prior_a<R: rand::Rng + ?Sized>(k: usize, lambda_a: f64, covariance: Covariance, rng: &mut R) -> Vec<f64> {
    let mut a = vec![0.0; k * k];
    for r in 0..k {
        match covariance {
            Covariance::Diagonal => a[r * k + r] = normal(0.0, 1.0 / lambda_a.sqrt(), rng),
            Covariance::Full => {
                let sd = 1.0 / ((r + 1) as f64 * lambda_a).sqrt();
                for c in 0..k {
                    a[r * k + c] = normal(0.0, sd, rng);
                }
            }
        }
    }
    a
}

/// A | U, V. DCNT: each row A_k by Bayesian linear regression of v_k· on U, precision
/// k λ_A I + λ_v Σ_d u_d u_dᵀ, mean = precision⁻¹ λ_v Σ_d u_d v_kd. SCNT (000 eq. 1):
/// A_kk with precision λ_A + λ_v Σ_d u_kd², mean = λ_v Σ_d u_kd v_kd / precision.
pub fn draw_a<R: rand::Rng + ?Sized>(u: &[f64], v: &[f64], k: usize, lambda_a: f64, lambda_v: f64, covariance: Covariance, rng: &mut R) -> Vec<f64> {
    match covariance {
        Covariance::Diagonal => draw_diagonal_a(u, v, k, lambda_a, lambda_v, rng),
        Covariance::Full => draw_full_a(u, v, k, lambda_a, lambda_v, rng),
    }
}

/// SCNT's A | U, V: each A_kk on its own ([`draw_a`]).
fn draw_diagonal_a<R: rand::Rng + ?Sized>(u: &[f64], v: &[f64], k: usize, lambda_a: f64, lambda_v: f64, rng: &mut R) -> Vec<f64> {
    let docs = u.len() / k;
    let mut a = vec![0.0; k * k];
    for r in 0..k {
        let (mut uu, mut uv) = (0.0, 0.0);
        for d in 0..docs {
            uu += u[d * k + r] * u[d * k + r];
            uv += u[d * k + r] * v[d * k + r];
        }
        let precision = lambda_a + lambda_v * uu;
        a[r * k + r] = normal(lambda_v * uv / precision, 1.0 / precision.sqrt(), rng);
    }
    a
}

/// DCNT's A | U, V: row by row, each a Bayesian linear regression ([`draw_a`]).
fn draw_full_a<R: rand::Rng + ?Sized>(u: &[f64], v: &[f64], k: usize, lambda_a: f64, lambda_v: f64, rng: &mut R) -> Vec<f64> {
    let docs = u.len() / k;
    let mut a = vec![0.0; k * k];
    let um = DMatrix::from_row_slice(docs, k, u);
    let vm = DMatrix::from_row_slice(docs, k, v);
    let gram = um.transpose() * &um * lambda_v; // λ_v Σ_d u_d u_dᵀ
    let cross = um.transpose() * vm * lambda_v; // column r: λ_v Σ_d u_d v_rd
    for r in 0..k {
        let mut precision = gram.clone();
        for i in 0..k {
            precision[(i, i)] += (r + 1) as f64 * lambda_a;
        }
        // A positive shift of a Gram matrix is positive definite unless it overflowed.
        let Some(chol) = Cholesky::new(precision) else {
            return vec![f64::NAN; k * k];
        };
        let row = gaussian_with_precision(&chol, &cross.column(r).into_owned(), rng);
        a[r * k..(r + 1) * k].copy_from_slice(row.as_slice());
    }
    a
}

/// λ_A | A. DCNT: Gamma(a_A + K̄²/2, b_A + ½ Σ_k k Σ_l A_kl²); SCNT (000 eq. 2):
/// Gamma(a_A + K̄/2, b_A + ½ Σ_k A_kk²).
pub fn draw_lambda_a<R: rand::Rng + ?Sized>(a: &[f64], k: usize, covariance: Covariance, priors: &Priors, rng: &mut R) -> f64 {
    match covariance {
        Covariance::Diagonal => {
            let ss: f64 = (0..k).map(|r| a[r * k + r].powi(2)).sum();
            gamma(priors.a_a + 0.5 * k as f64, priors.b_a + 0.5 * ss, rng)
        }
        Covariance::Full => {
            let ss: f64 = (0..k).map(|r| (r + 1) as f64 * a[r * k..(r + 1) * k].iter().map(|x| x * x).sum::<f64>()).sum();
            gamma(priors.a_a + 0.5 * (k * k) as f64, priors.b_a + 0.5 * ss, rng)
        }
    }
}

/// λ_v | U, V, A ~ Gamma(a_V + K̄D/2, b_V + ½ Σ_d ||v_d − A u_d||²).
pub fn draw_lambda_v<R: rand::Rng + ?Sized>(u: &[f64], v: &[f64], g: &Globals, priors: &Priors, rng: &mut R) -> f64 {
    let k = g.num_topics;
    let docs = u.len() / k;
    let mut ss = 0.0;
    for d in 0..docs {
        let au = g.a_times(&u[d * k..(d + 1) * k]);
        ss += v[d * k..(d + 1) * k].iter().zip(&au).map(|(x, m)| (x - m).powi(2)).sum::<f64>();
    }
    gamma(priors.a_v + 0.5 * (k * docs) as f64, priors.b_v + 0.5 * ss, rng)
}

/// Each column η_k | U, μ, λ_f: precision diag(λ_f) + Σ_d φ_d φ_dᵀ (the same for every
/// k), mean = precision⁻¹ (diag(λ_f) μ + Σ_d φ_d u_kd).
pub fn draw_eta<R: rand::Rng + ?Sized>(u: &[f64], phi: &[f64], k: usize, f: usize, mu: &[f64], lambda_f: &[f64], rng: &mut R) -> Vec<f64> {
    let docs = u.len() / k;
    let pm = DMatrix::from_row_slice(docs, f, phi);
    let um = DMatrix::from_row_slice(docs, k, u);
    let mut precision = pm.transpose() * &pm;
    for i in 0..f {
        precision[(i, i)] += lambda_f[i];
    }
    let Some(chol) = Cholesky::new(precision) else {
        return vec![f64::NAN; f * k];
    };
    let cross = pm.transpose() * um; // F × K: column k is Σ_d φ_d u_kd
    let mut eta = vec![0.0; f * k];
    for c in 0..k {
        let b = DVector::from_iterator(f, (0..f).map(|i| lambda_f[i] * mu[i] + cross[(i, c)]));
        let col = gaussian_with_precision(&chol, &b, rng);
        for i in 0..f {
            eta[i * k + c] = col[i];
        }
    }
    eta
}

/// μ_f | η, λ_f: precision 1/γ_μ + K̄ λ_f, mean = λ_f Σ_k η_fk / precision.
pub fn draw_mu<R: rand::Rng + ?Sized>(eta: &[f64], k: usize, lambda_f: &[f64], gamma_mu: f64, rng: &mut R) -> Vec<f64> {
    lambda_f
        .iter()
        .enumerate()
        .map(|(i, &l)| {
            let precision = 1.0 / gamma_mu + k as f64 * l;
            let sum: f64 = eta[i * k..(i + 1) * k].iter().sum();
            normal(l * sum / precision, 1.0 / precision.sqrt(), rng)
        })
        .collect()
}

/// λ_f | η, μ ~ Gamma(a_f + K̄/2, b_f + ½ Σ_k (η_fk − μ_f)²).
pub fn draw_lambda_f<R: rand::Rng + ?Sized>(eta: &[f64], mu: &[f64], k: usize, priors: &Priors, rng: &mut R) -> Vec<f64> {
    mu.iter()
        .enumerate()
        .map(|(i, &m)| {
            let ss: f64 = eta[i * k..(i + 1) * k].iter().map(|e| (e - m).powi(2)).sum();
            gamma(priors.a_f + 0.5 * k as f64, priors.b_f + 0.5 * ss, rng)
        })
        .collect()
}
