//! Limited-memory BFGS minimisation (Nocedal & Wright 2006, Algorithms 7.4 and 7.5).
//!
//! Why it exists: HPC prediction needs conditional modes (a document's topic affinities,
//! dimension up to about 600) and later models need a general smooth optimiser; both
//! have analytic gradients. It is written here rather than taken from a crate to keep the
//! dependency tree small and to make the line search safe on non-finite values: a trial
//! point whose value or gradient is not finite is a failed step, never a panic.

/// Armijo sufficient-decrease constant.
const ARMIJO_C1: f64 = 1e-4;
/// Halvings before a line search gives up (the step is then below 1e-18 of its start).
const MAX_HALVINGS: i32 = 60;
/// A pair is skipped when sᵀy <= CURVATURE_EPS·|s||y|.
const CURVATURE_EPS: f64 = 1e-10;

/// Settings for [`minimize`].
#[derive(Debug, Clone)]
pub struct LbfgsOptions {
    /// Number of correction pairs (s, y) kept (default 8).
    pub memory: usize,
    /// Maximum number of accepted steps (default 200).
    pub max_iterations: usize,
    /// Stop when max|g| <= gradient_tolerance · max(1, max|x|) (default 1e-6).
    pub gradient_tolerance: f64,
    /// Stop when a step lowers f by at most function_tolerance · max(1, |f|) (default 1e-10).
    /// This pins x only to about its square root (1e-5); 0 stops on the gradient alone.
    pub function_tolerance: f64,
    /// The inverse Hessian's scale h for the first step, x₁ = x₀ − h·∇f(x₀) before
    /// backtracking, when the caller knows the curvature's order (a Gaussian prior's
    /// variance, say). `None` (the default): a first step of unit length along −∇f.
    pub first_step_scale: Option<f64>,
}

impl Default for LbfgsOptions {
    fn default() -> Self {
        LbfgsOptions { memory: 8, max_iterations: 200, gradient_tolerance: 1e-6, function_tolerance: 1e-10, first_step_scale: None }
    }
}

/// What [`minimize`] found.
#[derive(Debug, Clone)]
pub struct LbfgsResult {
    /// The best point found (the last accepted one).
    pub x: Vec<f64>,
    /// f at `x`.
    pub value: f64,
    /// Number of accepted steps.
    pub iterations: usize,
    /// Whether the gradient or function tolerance was met (false after the iteration
    /// limit, a failed line search, or a non-finite value at the start).
    pub converged: bool,
    /// Number of calls to f, including the one at the start.
    pub function_evaluations: usize,
}

/// The ring of correction pairs and the two-loop recursion over it.
struct Memory {
    s: Vec<Vec<f64>>,
    y: Vec<Vec<f64>>,
    rho: Vec<f64>,
    alpha: Vec<f64>,
    /// Slot the next pair goes into, and how many pairs are held.
    next: usize,
    len: usize,
}

impl Memory {
    fn new(m: usize, n: usize) -> Self {
        Memory { s: vec![vec![0.0; n]; m], y: vec![vec![0.0; n]; m], rho: vec![0.0; m], alpha: vec![0.0; m], next: 0, len: 0 }
    }

    /// Ring slot of the k-th oldest pair.
    fn slot(&self, k: usize) -> usize {
        let m = self.s.len();
        (self.next + m - self.len + k) % m
    }

    /// Store s = step·d, y = g_new − g unless the curvature sᵀy is too small (or not finite).
    fn push(&mut self, step: f64, d: &[f64], g: &[f64], g_new: &[f64]) {
        let (mut sy, mut ss, mut yy) = (0.0, 0.0, 0.0);
        for ((&di, &gi), &hi) in d.iter().zip(g).zip(g_new) {
            let (s, y) = (step * di, hi - gi);
            (sy, ss, yy) = (sy + s * y, ss + s * s, yy + y * y);
        }
        let curved = sy > CURVATURE_EPS * (ss * yy).sqrt(); // false when NaN
        if self.s.is_empty() || !curved {
            return;
        }
        let k = self.next;
        for (((s, y), &di), (&gi, &hi)) in self.s[k].iter_mut().zip(&mut self.y[k]).zip(d).zip(g.iter().zip(g_new)) {
            (*s, *y) = (step * di, hi - gi);
        }
        self.rho[k] = 1.0 / sy;
        self.next = (k + 1) % self.s.len();
        self.len = (self.len + 1).min(self.s.len());
    }

    /// Write the search direction d = −H·g (H the L-BFGS inverse-Hessian estimate).
    fn direction(&mut self, g: &[f64], d: &mut [f64]) {
        d.iter_mut().zip(g).for_each(|(di, gi)| *di = -gi);
        for k in (0..self.len).rev() {
            let j = self.slot(k);
            self.alpha[j] = self.rho[j] * dot(&self.s[j], d);
            axpy(-self.alpha[j], &self.y[j], d);
        }
        if self.len > 0 {
            // Initial Hessian γI with γ = sᵀy / yᵀy from the newest pair.
            let j = self.slot(self.len - 1);
            let gamma = 1.0 / (self.rho[j] * dot(&self.y[j], &self.y[j]));
            d.iter_mut().for_each(|di| *di *= gamma);
        }
        for k in 0..self.len {
            let j = self.slot(k);
            let beta = self.rho[j] * dot(&self.y[j], d);
            axpy(self.alpha[j] - beta, &self.s[j], d);
        }
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn axpy(a: f64, x: &[f64], y: &mut [f64]) {
    y.iter_mut().zip(x).for_each(|(yi, xi)| *yi += a * xi);
}

fn max_abs(v: &[f64]) -> f64 {
    v.iter().fold(0.0, |m, x| m.max(x.abs()))
}

/// Minimise f. `f(x, grad)` returns f(x) and writes ∇f(x) into grad. Never panics on a
/// non-finite value: a trial point whose value (or gradient) is not finite is treated as a
/// failed line-search step (halve the step); if the line search fails completely, reset the
/// memory and try a steepest-descent step once, then stop with converged=false and the best
/// point found. A non-finite value at `x0` returns `x0` at once with converged=false.
pub fn minimize<F: FnMut(&[f64], &mut [f64]) -> f64>(mut f: F, x0: &[f64], options: &LbfgsOptions) -> LbfgsResult {
    let n = x0.len();
    let mut x = x0.to_vec();
    let mut g = vec![0.0; n];
    let mut value = f(&x, &mut g);
    if !value.is_finite() || g.iter().any(|v| !v.is_finite()) {
        return LbfgsResult { x, value, iterations: 0, converged: false, function_evaluations: 1 };
    }
    let (mut x_trial, mut g_trial, mut d) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
    let mut memory = Memory::new(options.memory, n);
    let (mut iterations, mut evaluations, mut converged) = (0, 1, false);
    loop {
        if max_abs(&g) <= options.gradient_tolerance * max_abs(&x).max(1.0) {
            converged = true;
            break;
        }
        if iterations >= options.max_iterations {
            break;
        }
        memory.direction(&g, &mut d);
        let descent = dot(&d, &g) < 0.0; // false when NaN
        if !descent {
            memory.len = 0;
            memory.direction(&g, &mut d);
        }
        // Backtracking Armijo search; on failure retry once along −g with an empty memory.
        let accepted = loop {
            let slope = dot(&d, &g);
            let first = match (memory.len, options.first_step_scale) {
                (0, Some(scale)) if iterations == 0 => scale,
                (0, _) => 1.0 / dot(&g, &g).sqrt().max(1.0),
                _ => 1.0,
            };
            let found = (0..MAX_HALVINGS).map(|i| first * 0.5f64.powi(i)).find_map(|step| {
                x_trial.iter_mut().zip(&x).zip(&d).for_each(|((t, xi), di)| *t = xi + step * di);
                let trial = f(&x_trial, &mut g_trial);
                evaluations += 1;
                let ok = trial.is_finite() && trial <= value + ARMIJO_C1 * step * slope && g_trial.iter().all(|v| v.is_finite());
                ok.then_some((step, trial))
            });
            if found.is_some() || memory.len == 0 {
                break found;
            }
            memory.len = 0;
            memory.direction(&g, &mut d);
        };
        let Some((step, trial)) = accepted else { break };
        memory.push(step, &d, &g, &g_trial);
        std::mem::swap(&mut x, &mut x_trial);
        std::mem::swap(&mut g, &mut g_trial);
        let decrease = value - trial;
        value = trial;
        iterations += 1;
        if decrease <= options.function_tolerance * value.abs().max(1.0) {
            converged = true;
            break;
        }
    }
    LbfgsResult { x, value, iterations, converged, function_evaluations: evaluations }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::{DMatrix, DVector};

    /// Default options without the function-tolerance stop: a relative decrease of 1e-10
    /// pins x only to about √1e-10 = 1e-5, coarser than the bounds asserted below.
    fn gradient_only() -> LbfgsOptions {
        LbfgsOptions { function_tolerance: 0.0, ..LbfgsOptions::default() }
    }

    /// Extended Rosenbrock, independent pairs 100(x₂ᵢ₊₁ − x₂ᵢ²)² + (1 − x₂ᵢ)²: minimum at all ones.
    #[test]
    fn rosenbrock_converges_to_all_ones() {
        let rosenbrock = |x: &[f64], g: &mut [f64]| {
            let mut value = 0.0;
            for i in (0..x.len()).step_by(2) {
                let (a, b) = (x[i + 1] - x[i] * x[i], 1.0 - x[i]);
                (g[i], g[i + 1]) = (-400.0 * a * x[i] - 2.0 * b, 200.0 * a);
                value += 100.0 * a * a + b * b;
            }
            value
        };
        for n in [2, 10] {
            let x0: Vec<f64> = (0..n).map(|i| if i % 2 == 0 { -1.2 } else { 1.0 }).collect();
            let r = minimize(rosenbrock, &x0, &LbfgsOptions::default());
            assert!(r.converged && r.x.iter().all(|v| (v - 1.0).abs() < 1e-5), "n = {n}: {r:?}");
        }
    }

    /// On ½c|x − m|², a first step scaled by the exact inverse curvature 1/c lands on the
    /// minimum: one accepted step and two evaluations, where the default unit-length first
    /// step from |x₀ − m| = 10 needs more (it moves 1, then the secant scale finishes).
    #[test]
    fn first_step_scale_is_the_first_inverse_hessian() {
        let (c, m) = (4.0, [3.0, -2.0, 5.0, 1.0]);
        let bowl = |x: &[f64], g: &mut [f64]| {
            g.iter_mut().zip(x).zip(&m).for_each(|((gi, xi), mi)| *gi = c * (xi - mi));
            x.iter().zip(&m).map(|(xi, mi)| 0.5 * c * (xi - mi).powi(2)).sum()
        };
        let x0 = [3.0 + 5.0, -2.0 - 5.0, 5.0 + 5.0, 1.0 - 5.0];
        let scaled = minimize(bowl, &x0, &LbfgsOptions { first_step_scale: Some(1.0 / c), ..gradient_only() });
        assert!(scaled.converged && scaled.iterations == 1 && scaled.function_evaluations == 2, "{scaled:?}");
        assert!(scaled.x.iter().zip(&m).all(|(x, m)| (x - m).abs() < 1e-12), "{scaled:?}");
        let plain = minimize(bowl, &x0, &gradient_only());
        assert!(plain.converged && plain.iterations > 1, "{plain:?}");
    }

    /// ½xᵀAx − bᵀx with A tridiagonal (diagonal 3 + i/10, off-diagonal −1): strictly
    /// diagonally dominant, hence SPD; the minimiser is A⁻¹b.
    #[test]
    fn quadratic_converges_to_the_linear_solve() {
        let n = 20;
        let a = DMatrix::from_fn(n, n, |i, j| [3.0 + i as f64 / 10.0, -1.0, 0.0][i.abs_diff(j).min(2)]);
        let b = DVector::from_fn(n, |i, _| (i as f64 + 1.0).sin());
        let quadratic = |x: &[f64], g: &mut [f64]| {
            let x = DVector::from_column_slice(x);
            g.copy_from_slice((&a * &x - &b).as_slice());
            0.5 * x.dot(&(&a * &x)) - b.dot(&x)
        };
        let r = minimize(quadratic, &vec![0.0; n], &gradient_only());
        let err = (DVector::from_vec(r.x) - a.clone().lu().solve(&b).unwrap()).amax();
        assert!(r.converged && err < 1e-6, "max error {err}");
        // Condition number at most 7 (Gershgorin): steepest descent needs ~100 steps, this ~15.
        assert!(r.function_evaluations <= 30, "{} evaluations", r.function_evaluations);
    }

    /// Pseudo-Huber terms Σ √(1 + (xᵢ − cᵢ)²) have small curvature far from c, so the
    /// secant steps overshoot into the region x₀ > 2 where f is NaN; the search backs off.
    #[test]
    fn line_search_backs_off_from_nan() {
        let (c, mut nans) = ([1.5, -0.5, 2.0], 0);
        let huber = |x: &[f64], g: &mut [f64]| {
            if x[0] > 2.0 {
                nans += 1;
                return f64::NAN;
            }
            let mut value = 0.0;
            for i in 0..3 {
                let root = (1.0 + (x[i] - c[i]).powi(2)).sqrt();
                (g[i], value) = ((x[i] - c[i]) / root, value + root);
            }
            value
        };
        let r = minimize(huber, &[-20.0, 3.0, 0.0], &LbfgsOptions::default());
        assert!(nans > 0, "the NaN region was never tried");
        assert!(r.converged && r.x.iter().zip(&c).all(|(x, c)| (x - c).abs() < 1e-5), "{r:?}");
    }

    /// N·logsumexp(x) − nᵀx + ½λ|x|², the negative log posterior of topic affinities
    /// under a multinomial likelihood and a Gaussian prior; some counts are zero.
    #[test]
    fn softmax_objective_meets_gradient_tolerance() {
        let (k, lambda) = (50, 0.5);
        let counts: Vec<f64> = (0..k).map(|i| ((i * 37) % 11) as f64).collect();
        let total: f64 = counts.iter().sum();
        let objective = |x: &[f64], g: &mut [f64]| {
            let m = x.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
            let lse = m + x.iter().map(|v| (v - m).exp()).sum::<f64>().ln();
            for i in 0..k {
                g[i] = total * (x[i] - lse).exp() - counts[i] + lambda * x[i];
            }
            total * lse - dot(&counts, x) + 0.5 * lambda * dot(x, x)
        };
        let options = gradient_only();
        let r = minimize(objective, &vec![0.0; k], &options);
        let mut g = vec![0.0; k];
        objective(&r.x, &mut g);
        let bound = options.gradient_tolerance * max_abs(&r.x).max(1.0);
        assert!(r.converged && max_abs(&g) <= bound, "max|g| = {} > {bound}: {r:?}", max_abs(&g));
    }
}
