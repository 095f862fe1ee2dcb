//! One HMC transition with a dense mass matrix M (Neal 2011; paper 003, Algorithm 1).
//!
//! Momentum p ~ N(0, M), kinetic energy ½ pᵀM⁻¹p, `steps` leapfrog steps of size
//! `step_size`, then a Metropolis correction on the total energy. M is given by its
//! Cholesky factor; a Hessian that is not negative definite is repaired by a diagonal
//! shift before it becomes a mass matrix ([`MassMatrix::from_negative_hessian`]).

use nalgebra::{DMatrix, DVector};
use rand::RngExt;
use rand_distr::{Distribution, StandardNormal};

/// A differentiable log density (up to a constant).
pub trait LogDensity {
    fn dim(&self) -> usize;
    /// log p(x); writes ∇ log p(x) into `grad`.
    fn logp_grad(&self, x: &[f64], grad: &mut [f64]) -> f64;

    /// Writes ∇ log p(x) into `grad` and returns whether the point is usable (log p and
    /// its gradient finite). HMC needs log p only at a trajectory's two ends, so a
    /// density whose log p costs extra (logarithms) can skip it here.
    fn grad(&self, x: &[f64], grad: &mut [f64]) -> bool {
        self.logp_grad(x, grad).is_finite()
    }
}

/// How momenta are drawn and turned into velocities: a mass matrix M, with momentum
/// p ~ N(0, M), velocity M⁻¹p and kinetic energy ½ pᵀM⁻¹p.
pub trait Metric {
    fn dim(&self) -> usize;
    /// Draw p ~ N(0, M) into `p`.
    fn sample_momentum<R: rand::Rng + ?Sized>(&self, rng: &mut R, p: &mut [f64]);
    /// v = M⁻¹ p.
    fn velocity(&self, p: &[f64], v: &mut [f64]);
}

/// A dense positive-definite mass matrix held as its Cholesky factor M = L Lᵀ (for
/// small blocks such as a document's active labels).
#[derive(Debug, Clone)]
pub struct MassMatrix {
    l: DMatrix<f64>,
    /// Whether the matrix had to be repaired (diagonal shift) to be positive definite.
    pub repaired: bool,
}

impl MassMatrix {
    /// M = −H, shifted along the diagonal until positive definite if it is not (scale · I
    /// when no finite shift makes it so).
    pub fn from_negative_hessian(hessian: &DMatrix<f64>) -> MassMatrix {
        let m = -hessian;
        if let Some(c) = m.clone().cholesky() {
            return MassMatrix { l: c.l(), repaired: false };
        }
        // Diagonal shift: start from a small fraction of the largest diagonal entry and
        // grow until the factorisation succeeds.
        let scale = m.diagonal().iter().fold(1e-8f64, |a, &d| if d.is_finite() { a.max(d.abs()) } else { a });
        let mut shift = scale * 1e-6;
        let mut base = m;
        for i in 0..base.nrows() {
            if !base[(i, i)].is_finite() {
                base[(i, i)] = scale;
            }
        }
        loop {
            let mut shifted = base.clone();
            for i in 0..shifted.nrows() {
                shifted[(i, i)] += shift;
            }
            if let Some(c) = shifted.cholesky() {
                return MassMatrix { l: c.l(), repaired: true };
            }
            shift *= 10.0;
            if !shift.is_finite() {
                // No finite shift repairs a NaN or infinite off-diagonal entry (state a
                // corrupt checkpoint restored): scale · I instead of a search that never ends.
                let n = base.nrows();
                return MassMatrix { l: DMatrix::identity(n, n) * scale.sqrt(), repaired: true };
            }
        }
    }

    pub fn identity(dim: usize) -> MassMatrix {
        MassMatrix { l: DMatrix::identity(dim, dim), repaired: false }
    }

    /// M⁻¹ v.
    fn solve(&self, v: &DVector<f64>) -> DVector<f64> {
        let y = self.l.solve_lower_triangular(v).expect("Cholesky factor has a positive diagonal");
        self.l.transpose().solve_upper_triangular(&y).expect("Cholesky factor has a positive diagonal")
    }
}

impl Metric for MassMatrix {
    fn dim(&self) -> usize {
        self.l.nrows()
    }

    fn sample_momentum<R: rand::Rng + ?Sized>(&self, rng: &mut R, p: &mut [f64]) {
        let n = self.dim();
        let z = DVector::from_iterator(n, (0..n).map(|_| StandardNormal.sample(rng)));
        p.copy_from_slice((&self.l * z).as_slice());
    }

    fn velocity(&self, p: &[f64], v: &mut [f64]) {
        v.copy_from_slice(self.solve(&DVector::from_column_slice(p)).as_slice());
    }
}

/// What one transition did.
#[derive(Debug, Clone, PartialEq)]
pub struct HmcOutcome {
    pub accepted: bool,
    /// log of the Metropolis ratio (H_start − H_end); −∞ for a non-finite trajectory.
    pub log_ratio: f64,
}

/// One HMC transition from `x` (updated in place when the proposal is accepted).
pub fn hmc_step<T: LogDensity + ?Sized, M: Metric, R: rand::Rng + ?Sized>(
    target: &T,
    x: &mut [f64],
    mass: &M,
    step_size: f64,
    steps: usize,
    rng: &mut R,
) -> HmcOutcome {
    let n = target.dim();
    debug_assert_eq!(mass.dim(), n);
    let mut p = vec![0.0; n];
    mass.sample_momentum(rng, &mut p);
    let mut v = vec![0.0; n];
    let mut grad = vec![0.0; n];
    let logp0 = target.logp_grad(x, &mut grad);
    mass.velocity(&p, &mut v);
    let kinetic = |p: &[f64], v: &[f64]| 0.5 * p.iter().zip(v).map(|(a, b)| a * b).sum::<f64>();
    let h0 = kinetic(&p, &v) - logp0;
    let mut q = x.to_vec();
    let mut logp = logp0;
    for step in 0..steps {
        p.iter_mut().zip(&grad).for_each(|(pi, g)| *pi += 0.5 * step_size * g);
        mass.velocity(&p, &mut v);
        q.iter_mut().zip(&v).for_each(|(qi, vi)| *qi += step_size * vi);
        // log p only at the end point; the inner points need the gradient alone. A
        // trajectory through an unusable point is rejected (the reversed trajectory
        // meets the same point, so this keeps detailed balance).
        let usable = if step + 1 == steps {
            logp = target.logp_grad(&q, &mut grad);
            logp.is_finite()
        } else {
            target.grad(&q, &mut grad)
        };
        if !usable {
            return HmcOutcome { accepted: false, log_ratio: f64::NEG_INFINITY };
        }
        p.iter_mut().zip(&grad).for_each(|(pi, g)| *pi += 0.5 * step_size * g);
    }
    mass.velocity(&p, &mut v);
    let h1 = kinetic(&p, &v) - logp;
    let log_ratio = if h1.is_finite() { h0 - h1 } else { f64::NEG_INFINITY };
    let accepted = log_ratio >= 0.0 || rng.random::<f64>().ln() < log_ratio;
    if accepted {
        x.copy_from_slice(&q);
    }
    HmcOutcome { accepted, log_ratio }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{stream, Purpose};

    /// A correlated bivariate normal with known mean and covariance.
    struct Gaussian {
        mean: [f64; 2],
        precision: DMatrix<f64>,
    }

    impl LogDensity for Gaussian {
        fn dim(&self) -> usize {
            2
        }
        fn logp_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
            let d = DVector::from_vec(vec![x[0] - self.mean[0], x[1] - self.mean[1]]);
            let g = -(&self.precision * &d);
            grad.copy_from_slice(g.as_slice());
            -0.5 * d.dot(&(&self.precision * &d))
        }
    }

    fn target() -> Gaussian {
        // Covariance [[1, 0.8], [0.8, 1]]: precision = inverse.
        let cov = DMatrix::from_row_slice(2, 2, &[1.0, 0.8, 0.8, 1.0]);
        Gaussian { mean: [1.0, -2.0], precision: cov.try_inverse().unwrap() }
    }

    /// With M = the precision (−Hessian), draws have the target's mean and covariance.
    /// 20 000 draws; HMC with 3 leapfrog steps of 0.5 in the whitened space gives
    /// nearly independent draws, so the standard error of each mean is about
    /// sqrt(1/20000) = 0.007 and of each second moment about 0.01: a band of 0.05 is
    /// five standard errors.
    #[test]
    fn samples_a_correlated_gaussian() {
        let t = target();
        let mass = MassMatrix::from_negative_hessian(&(-t.precision.clone()));
        assert!(!mass.repaired);
        let mut rng = stream(1, Purpose::Estimate, 0, 0);
        let mut x = [0.0, 0.0];
        let n = 20_000;
        let (mut s0, mut s1, mut s00, mut s11, mut s01, mut acc) = (0.0, 0.0, 0.0, 0.0, 0.0, 0);
        for i in 0..n + 200 {
            let out = hmc_step(&t, &mut x, &mass, 0.5, 3, &mut rng);
            if i < 200 {
                continue;
            }
            acc += out.accepted as usize;
            let (a, b) = (x[0] - 1.0, x[1] + 2.0);
            s0 += a;
            s1 += b;
            s00 += a * a;
            s11 += b * b;
            s01 += a * b;
        }
        let nf = n as f64;
        for (got, want) in [(s0 / nf, 0.0), (s1 / nf, 0.0), (s00 / nf, 1.0), (s11 / nf, 1.0), (s01 / nf, 0.8)] {
            assert!((got - want).abs() < 0.05, "moment {got} vs {want}");
        }
        assert!(acc as f64 / nf > 0.9, "acceptance {}", acc as f64 / nf);
    }

    /// A Hessian with a positive eigenvalue is repaired into a usable mass matrix.
    #[test]
    fn indefinite_hessian_is_repaired() {
        let h = DMatrix::from_row_slice(2, 2, &[-1.0, 0.0, 0.0, 0.5]);
        let m = MassMatrix::from_negative_hessian(&h);
        assert!(m.repaired);
        let v = DVector::from_vec(vec![1.0, 1.0]);
        assert!(v.dot(&m.solve(&v)) > 0.0);
    }

    /// A diverging trajectory is rejected and leaves the state unchanged.
    #[test]
    fn non_finite_trajectories_are_rejected() {
        struct Cliff;
        impl LogDensity for Cliff {
            fn dim(&self) -> usize {
                1
            }
            fn logp_grad(&self, x: &[f64], g: &mut [f64]) -> f64 {
                g[0] = 1e300;
                if x[0] > 0.5 {
                    f64::NAN
                } else {
                    0.0
                }
            }
        }
        let mut x = [0.0];
        let mut rng = stream(2, Purpose::Estimate, 0, 0);
        let out = hmc_step(&Cliff, &mut x, &MassMatrix::identity(1), 1.0, 2, &mut rng);
        assert!(!out.accepted);
        assert_eq!(x, [0.0]);
    }
}
