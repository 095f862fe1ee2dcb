//! Damped Newton ascent to the mode of a log density.
//!
//! Why it exists: HPC finds conditional modes (a word's rates on a sparse Hessian, a
//! document's small dense affinity block) by the same loop: a Newton direction, a
//! backtracking line search that never lets log p decrease, and a stop when the gain
//! is below a tolerance. Only the direction differs, so it is passed in.

use super::LogDensity;

/// Outcome of a mode search.
#[derive(Debug, Clone)]
pub struct Mode {
    pub point: Vec<f64>,
    /// Iterations whose direction needed a repaired (shifted) Hessian.
    pub repairs: usize,
    pub iterations: usize,
}

/// Ascend from `start`. `direction(x, grad)` returns the step (−H⁻¹ ∇ log p, with H
/// repaired if needed) and whether it was repaired. Each step is halved until log p is
/// finite and does not decrease; the search stops when an accepted step gains less
/// than `tolerance`, when the step shrinks below 1e-12, or after `max_iterations`.
pub fn newton_ascent<T: LogDensity + ?Sized>(
    target: &T,
    start: &[f64],
    max_iterations: usize,
    tolerance: f64,
    mut direction: impl FnMut(&[f64], &[f64]) -> (Vec<f64>, bool),
) -> Mode {
    let n = start.len();
    let mut x = start.to_vec();
    let mut grad = vec![0.0; n];
    let mut logp = target.logp_grad(&x, &mut grad);
    let mut repairs = 0;
    let mut next_grad = vec![0.0; n];
    for iteration in 1..=max_iterations {
        let (step, repaired) = direction(&x, &grad);
        repairs += repaired as usize;
        let mut t = 1.0;
        loop {
            let candidate: Vec<f64> = x.iter().zip(&step).map(|(a, s)| a + t * s).collect();
            let next = target.logp_grad(&candidate, &mut next_grad);
            if next.is_finite() && next >= logp {
                let gain = next - logp;
                x = candidate;
                logp = next;
                grad.copy_from_slice(&next_grad);
                if gain < tolerance {
                    return Mode { point: x, repairs, iterations: iteration };
                }
                break;
            }
            t *= 0.5;
            if t < 1e-12 {
                return Mode { point: x, repairs, iterations: iteration };
            }
        }
    }
    Mode { point: x, repairs, iterations: max_iterations }
}
