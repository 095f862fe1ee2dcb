//! The per-document activation updates shared by training, prediction and Chib.
//!
//! Why it exists: given the global parameters, a document's activations v_d and
//! metadata-driven means u_d are updated the same way whether the document is in the
//! training corpus (the Gibbs scan), a new document (fold-in) or a held-out document
//! (the Chib estimator's transition operator). Keeping one implementation keeps the
//! three consistent.
//!
//! - [`update_activations`]: the Metropolis independence sampler of paper 001 eq. 11,
//!   one entry at a time, proposing v*_k from its prior N((A u_d)_k, λ_v⁻¹).
//! - [`UConditional`]: the Gaussian conditional of u_d given v_d (paper 000 eq. 12),
//!   with its K̄ × K̄ precision I + λ_v AᵀA factored once per scan and shared by all
//!   documents.

use super::stick::log_sigmoid;
use nalgebra::{Cholesky, DMatrix, DVector, Dyn};
use rand::RngExt;
use rand_distr::{Distribution, StandardNormal};

/// Log Metropolis-Hastings ratio of moving entry `k` of `v` to `proposal` when the
/// proposal is drawn from the prior (independence sampler): Π_j (π*_j / π_j)^{n_j}.
///
/// Only π_k (through σ(v_k)) and the later sticks (through σ(−v_k)) change, so with
/// `later = Σ_{j>k} n_j` the ratio is n_k Δlog σ(v_k) + later · Δlog σ(−v_k). The last
/// entry does not enter π, so its ratio is 0.
#[inline]
pub fn entry_log_ratio(current: f64, proposal: f64, k: usize, num_topics: usize, count_k: u32, later: u32) -> f64 {
    if k + 1 >= num_topics {
        return 0.0;
    }
    count_k as f64 * (log_sigmoid(proposal) - log_sigmoid(current)) + later as f64 * (log_sigmoid(-proposal) - log_sigmoid(-current))
}

/// One sweep of entry-wise independence MH over v (k = 0..K̄ in order): entry k
/// proposes v*_k ~ N(mean_k, 1/λ_v) and accepts with min(1, ratio). `counts` are the
/// document's topic counts n_dk. Returns the number of accepted entries.
pub fn update_activations<R: rand::Rng + ?Sized>(v: &mut [f64], mean: &[f64], lambda_v: f64, counts: &[u32], rng: &mut R) -> usize {
    let k_bar = v.len();
    debug_assert_eq!(mean.len(), k_bar);
    debug_assert_eq!(counts.len(), k_bar);
    let sd = 1.0 / lambda_v.sqrt();
    let mut later: u32 = counts.iter().sum();
    let mut accepted = 0;
    for k in 0..k_bar {
        later -= counts[k];
        let z: f64 = StandardNormal.sample(rng);
        let proposal = mean[k] + sd * z;
        let log_ratio = entry_log_ratio(v[k], proposal, k, k_bar, counts[k], later);
        if log_ratio >= 0.0 || rng.random::<f64>().ln() < log_ratio {
            v[k] = proposal;
            accepted += 1;
        }
    }
    accepted
}

/// u_d | v_d ~ N(P⁻¹(λ_v Aᵀ v_d + ηᵀφ_d), P⁻¹) with P = I + λ_v AᵀA.
pub struct UConditional {
    k: usize,
    lambda_v: f64,
    /// A, row-major K̄ × K̄.
    a: Vec<f64>,
    chol: Cholesky<f64, Dyn>,
}

impl UConditional {
    /// Factor P for the given A (row-major K̄ × K̄) and λ_v. P is always positive
    /// definite (I plus a Gram matrix), so this fails only on non-finite input.
    pub fn new(a: &[f64], num_topics: usize, lambda_v: f64) -> Option<Self> {
        let k = num_topics;
        assert_eq!(a.len(), k * k, "A is K x K");
        let am = DMatrix::from_row_slice(k, k, a);
        let p = DMatrix::identity(k, k) + am.transpose() * &am * lambda_v;
        let chol = Cholesky::new(p)?;
        Some(UConditional { k, lambda_v, a: a.to_vec(), chol })
    }

    /// The conditional mean given v and the prior mean ηᵀφ_d.
    pub fn mean(&self, v: &[f64], prior_mean: &[f64]) -> Vec<f64> {
        let b = self.rhs(v, prior_mean);
        self.chol.solve(&b).iter().copied().collect()
    }

    fn rhs(&self, v: &[f64], prior_mean: &[f64]) -> DVector<f64> {
        let k = self.k;
        // λ_v Aᵀ v + ηᵀφ_d
        DVector::from_iterator(k, (0..k).map(|c| prior_mean[c] + self.lambda_v * (0..k).map(|r| self.a[r * k + c] * v[r]).sum::<f64>()))
    }

    /// A draw of u_d: mean + L⁻ᵀ z with P = L Lᵀ, z standard normal.
    pub fn draw<R: rand::Rng + ?Sized>(&self, v: &[f64], prior_mean: &[f64], rng: &mut R) -> Vec<f64> {
        let mean = self.chol.solve(&self.rhs(v, prior_mean));
        let z = DVector::from_iterator(self.k, (0..self.k).map(|_| StandardNormal.sample(rng)));
        let noise = self.chol.l().transpose().solve_upper_triangular(&z).expect("a Cholesky factor has a non-zero diagonal");
        (mean + noise).iter().copied().collect()
    }

    /// [`Self::draw`] without allocating: writes the draw into `out`, using `noise` (length
    /// K̄) as scratch. For inner loops (the Chib estimator's chains) that draw u millions
    /// of times.
    pub fn draw_into<R: rand::Rng + ?Sized>(&self, v: &[f64], prior_mean: &[f64], noise: &mut [f64], out: &mut [f64], rng: &mut R) {
        let k = self.k;
        for (c, o) in out.iter_mut().enumerate() {
            *o = prior_mean[c] + self.lambda_v * (0..k).map(|r| self.a[r * k + c] * v[r]).sum::<f64>();
        }
        let mut mean = nalgebra::DVectorViewMut::from_slice(out, k);
        self.chol.solve_mut(&mut mean);
        for z in noise.iter_mut() {
            *z = StandardNormal.sample(rng);
        }
        let mut noise_view = nalgebra::DVectorViewMut::from_slice(noise, k);
        // Lᵀ x = z using only the lower triangle of the stored factor.
        let solved = self.chol.l_dirty().tr_solve_lower_triangular_mut(&mut noise_view);
        debug_assert!(solved, "a Cholesky factor has a non-zero diagonal");
        for (o, z) in out.iter_mut().zip(noise.iter()) {
            *o += z;
        }
    }

    /// log N(u | mean(v, prior_mean), P⁻¹), for transition densities (Chib).
    pub fn log_density(&self, u: &[f64], v: &[f64], prior_mean: &[f64]) -> f64 {
        let mean = self.chol.solve(&self.rhs(v, prior_mean));
        let diff = DVector::from_iterator(self.k, u.iter().zip(mean.iter()).map(|(a, b)| a - b));
        // (u − m)ᵀ P (u − m) = ||Lᵀ (u − m)||²; log det P = 2 Σ log L_ii.
        let lt = self.chol.l().transpose() * diff;
        let log_det: f64 = self.chol.l().diagonal().iter().map(|x| x.ln()).sum::<f64>() * 2.0;
        -0.5 * lt.norm_squared() + 0.5 * log_det - 0.5 * self.k as f64 * (2.0 * std::f64::consts::PI).ln()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::dcnt::stick::log_stick_weights;
    use crate::rng::{stream, Purpose};

    #[test]
    fn entry_ratio_matches_the_full_stick_computation() {
        let v = [0.4, -0.9, 1.3, 0.2];
        let counts = [3u32, 0, 5, 2];
        let mut before = [0.0; 4];
        log_stick_weights(&v, &mut before);
        for k in 0..4 {
            let mut w = v;
            w[k] = -0.35 + k as f64;
            let mut after = [0.0; 4];
            log_stick_weights(&w, &mut after);
            let full: f64 = (0..4).map(|j| counts[j] as f64 * (after[j] - before[j])).sum();
            let later: u32 = counts[k + 1..].iter().sum();
            let fast = entry_log_ratio(v[k], w[k], k, 4, counts[k], later);
            assert!((full - fast).abs() < 1e-12, "entry {k}: {full} vs {fast}");
        }
    }

    #[test]
    fn independence_sampler_targets_prior_times_stick_likelihood() {
        // One entry (K̄ = 2, only v_0 matters): the target is N(v_0 | m, 1/λ) σ(v_0)^{n0} σ(−v_0)^{n1}.
        // Its mean by quadrature vs the chain's mean. The chain is autocorrelated, so the
        // tolerance uses the batch-means standard error: |z| < 4.5.
        let (m, lambda, counts) = (0.3, 2.0, [4u32, 1]);
        let target = |x: f64| -0.5 * lambda * (x - m).powi(2) + counts[0] as f64 * log_sigmoid(x) + counts[1] as f64 * log_sigmoid(-x);
        let (mut num, mut den) = (0.0, 0.0);
        let mut x = -8.0;
        while x < 8.0 {
            let p = target(x).exp();
            num += x * p;
            den += p;
            x += 1e-3;
        }
        let exact = num / den;
        let mut rng = stream(11, Purpose::DcntDocuments, 0, 0);
        let mut v = [0.0, 0.0];
        let (n, batches) = (200_000, 100);
        let mut batch_means = vec![0.0; batches];
        for i in 0..n {
            update_activations(&mut v, &[m, 0.0], lambda, &counts, &mut rng);
            batch_means[i * batches / n] += v[0] / (n / batches) as f64;
        }
        let mean = batch_means.iter().sum::<f64>() / batches as f64;
        let var = batch_means.iter().map(|b| (b - mean).powi(2)).sum::<f64>() / (batches - 1) as f64;
        let z = (mean - exact) / (var / batches as f64).sqrt();
        assert!(z.abs() < 4.5, "chain mean {mean}, exact {exact}, z = {z}");
    }

    #[test]
    fn draw_into_equals_draw() {
        let a = [1.0, 0.5, 0.0, -0.3, 0.8, 0.2, 0.1, 0.0, 1.2];
        let uc = UConditional::new(&a, 3, 1.7).unwrap();
        let (v, prior) = ([0.5, -1.0, 2.0], [0.1, 0.2, -0.3]);
        let expect = uc.draw(&v, &prior, &mut stream(5, Purpose::DcntDocuments, 0, 2));
        let (mut noise, mut out) = ([0.0; 3], [0.0; 3]);
        uc.draw_into(&v, &prior, &mut noise, &mut out, &mut stream(5, Purpose::DcntDocuments, 0, 2));
        for j in 0..3 {
            assert!((expect[j] - out[j]).abs() < 1e-12, "{expect:?} vs {out:?}");
        }
    }

    #[test]
    fn u_draws_have_the_conditional_moments() {
        let k = 3;
        let a = [1.0, 0.5, 0.0, -0.3, 0.8, 0.2, 0.1, 0.0, 1.2];
        let lambda = 1.7;
        let uc = UConditional::new(&a, k, lambda).unwrap();
        let (v, prior) = ([0.5, -1.0, 2.0], [0.1, 0.2, -0.3]);
        // Covariance P⁻¹ computed directly.
        let am = DMatrix::from_row_slice(k, k, &a);
        let p = DMatrix::identity(k, k) + am.transpose() * &am * lambda;
        let cov = p.clone().try_inverse().unwrap();
        let mean = uc.mean(&v, &prior);
        let pm = p * DVector::from_column_slice(&mean);
        let rhs = uc.rhs(&v, &prior);
        assert!((pm - rhs).norm() < 1e-10, "mean solves P m = b");
        let n = 40_000;
        let mut rng = stream(3, Purpose::DcntDocuments, 0, 1);
        let mut sum = vec![0.0; k];
        let mut sq = vec![0.0; k];
        for _ in 0..n {
            let u = uc.draw(&v, &prior, &mut rng);
            for j in 0..k {
                sum[j] += u[j];
                sq[j] += (u[j] - mean[j]).powi(2);
            }
        }
        for j in 0..k {
            // Independent draws: SE of the mean sqrt(var/n); of the variance var·sqrt(2/n).
            let sd = cov[(j, j)].sqrt();
            let m = sum[j] / n as f64;
            assert!((m - mean[j]).abs() < 4.5 * sd / (n as f64).sqrt(), "mean {j}");
            let var = sq[j] / n as f64;
            assert!((var - cov[(j, j)]).abs() < 4.5 * cov[(j, j)] * (2.0 / n as f64).sqrt(), "var {j}");
        }
        // The log density integrates the right normaliser: at the mean it is −½ log det(2π P⁻¹).
        let at_mean = uc.log_density(&mean, &v, &prior);
        let expect = -0.5 * (cov.determinant().ln() + k as f64 * (2.0 * std::f64::consts::PI).ln());
        assert!((at_mean - expect).abs() < 1e-9);
    }
}
