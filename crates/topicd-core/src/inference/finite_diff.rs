//! Finite-difference checks of analytic gradients and Hessians (tests only).
//!
//! Central differences with step h = 1e-5 have truncation error O(h²) (about 1e-10 times
//! the third derivative) and rounding error about 1e-16/h relative to |log p|; a
//! tolerance of 1e-6 relative is far above both and far below any real mistake.

use super::LogDensity;
use nalgebra::DMatrix;

const STEP: f64 = 1e-5;
const TOLERANCE: f64 = 1e-6;

/// Assert that `target`'s gradient and `hessian` agree with central differences of
/// log p (for the gradient) and of the gradient (for the Hessian) at `point`.
pub(crate) fn check_gradient_and_hessian<T: LogDensity + ?Sized>(target: &T, hessian: impl Fn(&[f64]) -> DMatrix<f64>, point: &[f64]) {
    let n = target.dim();
    let mut grad = vec![0.0; n];
    target.logp_grad(point, &mut grad);
    let h = hessian(point);
    for i in 0..n {
        let (mut up, mut down) = (point.to_vec(), point.to_vec());
        up[i] += STEP;
        down[i] -= STEP;
        let (mut gu, mut gd) = (vec![0.0; n], vec![0.0; n]);
        let fd = (target.logp_grad(&up, &mut gu) - target.logp_grad(&down, &mut gd)) / (2.0 * STEP);
        assert!((fd - grad[i]).abs() < TOLERANCE * (1.0 + grad[i].abs()), "gradient {i} at {point:?}: {fd} vs {}", grad[i]);
        for j in 0..n {
            let fdh = (gu[j] - gd[j]) / (2.0 * STEP);
            assert!((fdh - h[(j, i)]).abs() < TOLERANCE * (1.0 + h[(j, i)].abs()), "hessian {j},{i} at {point:?}: {fdh} vs {}", h[(j, i)]);
        }
    }
}
