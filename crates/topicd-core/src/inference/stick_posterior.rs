//! The HDP's top-level stick q(u) and its optimiser, shared by every HDP model.
//!
//! Why it exists: the HDP topic model (groups = documents) and HDP-aMMSB (groups =
//! nodes) share the same top level. Global weights β ~ GEM(γ) come from sticks
//! u_k ~ Beta(1, γ), β_k = u_k Π_{l<k}(1 − u_l), with a remainder β_{K+1} = Π_{l≤K}(1 − u_l)
//! beyond the truncation K; every group g draws π_g ~ Dir(α β_1, …, α β_{K+1}). The
//! variational posterior is q(u_k) = Beta(ρ_k ω_k, (1 − ρ_k) ω_k), so E[u_k] = ρ_k.
//!
//! What a group contributes to the part of the ELBO that depends on (ρ, ω) is summarised
//! by [`StickStats`]: the number of groups G and S_k = Σ_g E[log π_gk] (k ≤ K + 1).
//! The Dirichlet normaliser E[log Γ(α) − Σ_k log Γ(α β_k)] has no closed form; as in
//! Hughes, Kim & Sudderth (AISTATS 2015, and bnpy's `HDPTopicModel`) it is replaced by
//! the lower bound c_Dir(αβ) ≥ K log α + Σ_{k=1}^{K+1} log β_k, so the objective stays a
//! lower bound on the marginal likelihood. With η1 = ρω, η0 = (1 − ρ)ω,
//! E[log u] = ψ(η1) − ψ(ω), E[log(1 − u)] = ψ(η0) − ψ(ω), and 1-based k:
//!
//! L(ρ, ω) = Σ_k [ log γ − log Γ(ω) + log Γ(η1_k) + log Γ(η0_k)
//!                 + (G + 1 − η1_k) E[log u_k] + (G (K + 1 − k) + γ − η0_k) E[log(1 − u_k)] ]
//!           + G K log α + α Σ_{k=1}^{K+1} E[β_k] S_k,
//!
//! i.e. E[log p(u)] − E[log q(u)] plus, summed over groups, the surrogate of the Dirichlet
//! normaliser and the α β_k part of E[log p(π_g | αβ)]. The rest of the ELBO depends only on
//! the groups' own parameters (θ_g, responsibilities). The gradient in ρ is paper 002
//! eq. 48 specialised to this bound:
//! ∂L/∂ρ_m = ω_m A_m ψ1(η1_m) − ω_m B_m ψ1(η0_m) + α P_m (S_m − T_m),
//! with A = G + 1 − η1, B = G(K + 1 − m) + γ − η0, P_m = Π_{l<m}(1 − ρ_l) and
//! T_m = Σ_{k>m} S_k E[β_k] / P_{m+1} (a suffix recursion T_{m−1} = ρ_m S_m + (1 − ρ_m) T_m,
//! T_K = S_{K+1}); in ω: ∂L/∂ω_m = A ρ ψ1(η1) + B (1 − ρ) ψ1(η0) − (A + B) ψ1(ω).
//!
//! [`optimise_stick`] maximises L by L-BFGS over the unconstrained (logit ρ, log ω)
//! (paper 002, B.2), falls back to ρ alone with ω fixed (as bnpy does), and never
//! returns a state with a lower objective than the one it started from.

use crate::inference::lbfgs::{minimize, LbfgsOptions};
use statrs::function::gamma::{digamma, ln_gamma};

/// ρ is kept in [RHO_EPS, 1 − RHO_EPS] so that both Beta parameters stay positive.
const RHO_EPS: f64 = 1e-12;

/// The variational posterior of the top-level sticks: q(u_k) = Beta(ρ_k ω_k, (1 − ρ_k) ω_k).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StickPosterior {
    /// E[u_k], in (0, 1).
    pub rho: Vec<f64>,
    /// Concentration of q(u_k), > 0.
    pub omega: Vec<f64>,
}

/// What the groups contribute to the stick objective.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct StickStats {
    /// G, the number of groups (documents, nodes).
    pub num_groups: f64,
    /// Σ_g E[log π_gk] for the K active topics, then the remainder (length K + 1).
    pub sum_log_pi: Vec<f64>,
}

/// What [`optimise_stick`] returns.
#[derive(Debug, Clone, PartialEq)]
pub struct StickFit {
    pub posterior: StickPosterior,
    /// Whether L-BFGS met its tolerance (on the path whose result was kept).
    pub converged: bool,
    /// Whether the joint (ρ, ω) optimisation was abandoned for ρ alone or for the start.
    pub fell_back: bool,
    /// [`stick_objective`] at the returned posterior.
    pub objective: f64,
}

impl StickPosterior {
    /// K sticks whose expected weights are uniform over the K topics and the remainder
    /// (E[β_k] = 1/(K + 1)), each with the prior's concentration ω = 1 + γ.
    pub fn new(num_topics: usize, gamma: f64) -> Self {
        let k = num_topics;
        let rho = (0..k).map(|i| 1.0 / (k + 1 - i) as f64).collect();
        StickPosterior { rho, omega: vec![1.0 + gamma; k] }
    }

    /// The sticks that give the expected weights `beta` (K + 1 entries, the remainder last,
    /// positive), with concentrations `omega` (K entries).
    pub fn from_expected_beta(beta: &[f64], omega: Vec<f64>) -> Self {
        let k = omega.len();
        assert_eq!(beta.len(), k + 1, "K + 1 weights for K sticks");
        let total: f64 = beta.iter().sum();
        let mut left = 1.0;
        let mut rho = Vec::with_capacity(k);
        for &b in &beta[..k] {
            let b = b / total;
            rho.push((b / left).clamp(RHO_EPS, 1.0 - RHO_EPS));
            left = (left - b).max(0.0);
        }
        StickPosterior { rho, omega }
    }

    pub fn num_topics(&self) -> usize {
        self.rho.len()
    }

    /// E[β_k] for the K active topics, then the remainder E[β_{K+1}] (length K + 1).
    pub fn expected_beta(&self) -> Vec<f64> {
        expected_beta(&self.rho)
    }

    /// E[log β_k] for the K active topics, then the remainder (length K + 1).
    pub fn expected_log_beta(&self) -> Vec<f64> {
        let mut out = Vec::with_capacity(self.rho.len() + 1);
        let mut rest = 0.0; // Σ_{l<k} E[log(1 − u_l)]
        for (&r, &w) in self.rho.iter().zip(&self.omega) {
            let dw = digamma(w);
            out.push(rest + digamma(r * w) - dw);
            rest += digamma((1.0 - r) * w) - dw;
        }
        out.push(rest);
        out
    }

    /// The sticks after merging topic `drop` into topic `keep` (`keep < drop`): the merged
    /// topic's expected weight is the sum of both, every other expected weight is unchanged,
    /// and the surviving topics keep their concentrations.
    pub fn merged(&self, keep: usize, drop: usize) -> Self {
        assert!(keep < drop && drop < self.num_topics(), "merge {keep} <- {drop} out of range");
        let mut beta = self.expected_beta();
        beta[keep] += beta[drop];
        beta.remove(drop);
        let mut omega = self.omega.clone();
        omega.remove(drop);
        Self::from_expected_beta(&beta, omega)
    }

    /// The sticks with the topics in the order `order` (a permutation of 0..K): expected
    /// weights follow their topics, the remainder stays last.
    pub fn permuted(&self, order: &[usize]) -> Self {
        let beta = self.expected_beta();
        let mut new_beta: Vec<f64> = order.iter().map(|&k| beta[k]).collect();
        new_beta.push(beta[self.num_topics()]);
        Self::from_expected_beta(&new_beta, order.iter().map(|&k| self.omega[k]).collect())
    }
}

/// E[β] of sticks with means `rho`, K + 1 entries.
fn expected_beta(rho: &[f64]) -> Vec<f64> {
    let mut out = Vec::with_capacity(rho.len() + 1);
    let mut left = 1.0;
    for &r in rho {
        out.push(r * left);
        left *= 1.0 - r;
    }
    out.push(left);
    out
}

/// Trigamma ψ1(x) for x > 0: the recurrence ψ1(x) = ψ1(x + 1) + 1/x² up to x ≥ 10, then the
/// asymptotic series 1/x + 1/(2x²) + Σ B_{2j}/x^{2j+1} to x^-11 (next term 0.253/x^13 < 3e-14).
pub fn trigamma(mut x: f64) -> f64 {
    if x.is_nan() || x <= 0.0 || x.is_infinite() {
        return if x == f64::INFINITY { 0.0 } else { f64::NAN };
    }
    let mut acc = 0.0;
    while x < 10.0 {
        acc += 1.0 / (x * x);
        x += 1.0;
    }
    let z = 1.0 / (x * x);
    let series = z * (1.0 / 6.0 - z * (1.0 / 30.0 - z * (1.0 / 42.0 - z * (1.0 / 30.0 - z * 5.0 / 66.0))));
    acc + 1.0 / x + 0.5 * z + series / x
}

/// G (K − i) + γ for 0-based stick i: the prior's and the surrogate's weight on
/// E[log(1 − u_i)], shared by the value and the gradient.
fn off_coefficient(stats: &StickStats, gamma: f64, k: usize, i: usize) -> f64 {
    stats.num_groups * (k - i) as f64 + gamma
}

fn check_shapes(rho: &[f64], omega: &[f64], stats: &StickStats) {
    assert_eq!(rho.len(), omega.len(), "one ω per ρ");
    assert_eq!(stats.sum_log_pi.len(), rho.len() + 1, "sum_log_pi has K + 1 entries");
}

/// The part of the ELBO that depends on (ρ, ω) (see the module doc for the formula).
/// −∞ or NaN when a Beta parameter is not positive.
pub fn stick_objective(rho: &[f64], omega: &[f64], stats: &StickStats, alpha: f64, gamma: f64) -> f64 {
    check_shapes(rho, omega, stats);
    let k = rho.len();
    let g = stats.num_groups;
    let mut total = g * k as f64 * alpha.ln() + k as f64 * gamma.ln();
    for i in 0..k {
        let (r, w) = (rho[i], omega[i]);
        let (e1, e0) = (r * w, (1.0 - r) * w);
        let dw = digamma(w);
        let (elog_u, elog_1mu) = (digamma(e1) - dw, digamma(e0) - dw);
        total += -ln_gamma(w) + ln_gamma(e1) + ln_gamma(e0);
        total += (g + 1.0 - e1) * elog_u + (off_coefficient(stats, gamma, k, i) - e0) * elog_1mu;
    }
    let beta = expected_beta(rho);
    total + alpha * beta.iter().zip(&stats.sum_log_pi).map(|(b, s)| b * s).sum::<f64>()
}

/// ∂L/∂ρ and ∂L/∂ω of [`stick_objective`] (paper 002 eq. 48 for this bound).
pub fn stick_gradient(rho: &[f64], omega: &[f64], stats: &StickStats, alpha: f64, gamma: f64) -> (Vec<f64>, Vec<f64>) {
    check_shapes(rho, omega, stats);
    let k = rho.len();
    let g = stats.num_groups;
    let s = &stats.sum_log_pi;
    let (mut d_rho, mut d_omega) = (vec![0.0; k], vec![0.0; k]);
    // T_m = Σ_{k>m} S_k E[β_k] / P_{m+1}, by the suffix recursion from T_K = S_{K+1}.
    let mut t = vec![0.0; k];
    let mut tail = s[k];
    for i in (0..k).rev() {
        t[i] = tail;
        tail = rho[i] * s[i] + (1.0 - rho[i]) * tail;
    }
    let mut prefix = 1.0; // P_m = Π_{l<m}(1 − ρ_l)
    for i in 0..k {
        let (r, w) = (rho[i], omega[i]);
        let (e1, e0) = (r * w, (1.0 - r) * w);
        let (t1, t0, tw) = (trigamma(e1), trigamma(e0), trigamma(w));
        let a = g + 1.0 - e1;
        let b = off_coefficient(stats, gamma, k, i) - e0;
        d_rho[i] = w * (a * t1 - b * t0) + alpha * prefix * (s[i] - t[i]);
        d_omega[i] = a * r * t1 + b * (1.0 - r) * t0 - (a + b) * tw;
        prefix *= 1.0 - r;
    }
    (d_rho, d_omega)
}

/// The unconstrained coordinates: x = (logit ρ, log ω).
pub fn to_unconstrained(posterior: &StickPosterior) -> Vec<f64> {
    let logit = |r: f64| {
        let r = r.clamp(RHO_EPS, 1.0 - RHO_EPS);
        (r / (1.0 - r)).ln()
    };
    posterior.rho.iter().map(|&r| logit(r)).chain(posterior.omega.iter().map(|w| w.ln())).collect()
}

/// The sticks at unconstrained coordinates x = (logit ρ, log ω).
pub fn from_unconstrained(x: &[f64]) -> StickPosterior {
    let k = x.len() / 2;
    let sigmoid = |v: f64| (1.0 / (1.0 + (-v).exp())).clamp(RHO_EPS, 1.0 - RHO_EPS);
    StickPosterior { rho: x[..k].iter().map(|&v| sigmoid(v)).collect(), omega: x[k..].iter().map(|v| v.exp()).collect() }
}

/// L and its gradient in the unconstrained coordinates (chain rule: dρ/dx = ρ(1 − ρ),
/// dω/dy = ω). The clamp of ρ away from 0 and 1 only acts where |logit ρ| > 27.6.
pub fn stick_objective_unconstrained(x: &[f64], stats: &StickStats, alpha: f64, gamma: f64, grad: &mut [f64]) -> f64 {
    let p = from_unconstrained(x);
    let k = p.num_topics();
    let value = stick_objective(&p.rho, &p.omega, stats, alpha, gamma);
    let (dr, dw) = stick_gradient(&p.rho, &p.omega, stats, alpha, gamma);
    for i in 0..k {
        grad[i] = dr[i] * p.rho[i] * (1.0 - p.rho[i]);
        grad[k + i] = dw[i] * p.omega[i];
    }
    value
}

/// L-BFGS settings: the objective is divided by G + 1 so that the gradient tolerance is
/// per group; the function tolerance is off so the gradient decides convergence.
fn lbfgs_options() -> LbfgsOptions {
    LbfgsOptions { memory: 10, max_iterations: 500, gradient_tolerance: 1e-8, function_tolerance: 1e-14, first_step_scale: None }
}

/// Maximise [`stick_objective`] over (ρ, ω) from `init`: L-BFGS over (logit ρ, log ω);
/// if that fails to improve on the start, L-BFGS over logit ρ with ω fixed at the start;
/// if that also fails, `init` itself. The returned objective is never below init's.
pub fn optimise_stick(stats: &StickStats, alpha: f64, gamma: f64, init: &StickPosterior) -> StickFit {
    let k = init.num_topics();
    let start = StickPosterior { rho: init.rho.iter().map(|r| r.clamp(RHO_EPS, 1.0 - RHO_EPS)).collect(), omega: init.omega.clone() };
    let init_value = stick_objective(&start.rho, &start.omega, stats, alpha, gamma);
    if k == 0 {
        return StickFit { posterior: start, converged: true, fell_back: false, objective: init_value };
    }
    let scale = 1.0 / (stats.num_groups + 1.0);
    let options = lbfgs_options();
    let x0 = to_unconstrained(&start);

    // Joint (logit ρ, log ω).
    let joint = minimize(
        |x, grad| {
            let v = stick_objective_unconstrained(x, stats, alpha, gamma, grad);
            grad.iter_mut().for_each(|g| *g *= -scale);
            -v * scale
        },
        &x0,
        &options,
    );
    let candidate = from_unconstrained(&joint.x);
    let value = stick_objective(&candidate.rho, &candidate.omega, stats, alpha, gamma);
    if value.is_finite() && value >= init_value {
        return StickFit { posterior: candidate, converged: joint.converged, fell_back: false, objective: value };
    }

    // ρ alone, ω fixed at the start.
    let omega_logs: Vec<f64> = x0[k..].to_vec();
    let mut full = x0.clone();
    let mut full_grad = vec![0.0; 2 * k];
    let rho_only = minimize(
        |x, grad| {
            full[..k].copy_from_slice(x);
            full[k..].copy_from_slice(&omega_logs);
            let v = stick_objective_unconstrained(&full, stats, alpha, gamma, &mut full_grad);
            grad.iter_mut().zip(&full_grad[..k]).for_each(|(g, fg)| *g = -fg * scale);
            -v * scale
        },
        &x0[..k],
        &options,
    );
    let mut x = rho_only.x.clone();
    x.extend_from_slice(&omega_logs);
    let candidate = from_unconstrained(&x);
    let value = stick_objective(&candidate.rho, &candidate.omega, stats, alpha, gamma);
    if value.is_finite() && value >= init_value {
        return StickFit { posterior: candidate, converged: rho_only.converged, fell_back: true, objective: value };
    }
    StickFit { posterior: start, converged: false, fell_back: true, objective: init_value }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{stream, Purpose};
    use rand::RngExt;

    /// A random state: K sticks, G groups, S_k like Σ_g E[log π_gk] (negative, O(G)).
    fn random_state(seed: u64, k: usize) -> (StickPosterior, StickStats) {
        let mut r = stream(seed, Purpose::Init, 0, 0);
        let rho = (0..k).map(|_| r.random_range(0.05..0.95)).collect();
        let omega = (0..k).map(|_| r.random_range(0.5..300.0)).collect();
        let g = r.random_range(5.0..200.0_f64).round();
        let sum_log_pi = (0..=k).map(|_| -g * r.random_range(0.5..8.0)).collect();
        (StickPosterior { rho, omega }, StickStats { num_groups: g, sum_log_pi })
    }

    #[test]
    fn trigamma_matches_known_values_and_the_digamma_derivative() {
        // ψ1(1) = π²/6, ψ1(1/2) = π²/2.
        let pi2 = std::f64::consts::PI.powi(2);
        assert!((trigamma(1.0) - pi2 / 6.0).abs() < 1e-13);
        assert!((trigamma(0.5) - pi2 / 2.0).abs() < 1e-12);
        for x in [0.01, 0.3, 2.5, 7.0, 40.0, 1e4] {
            let h = 1e-5 * x;
            let fd = (digamma(x + h) - digamma(x - h)) / (2.0 * h);
            assert!((fd - trigamma(x)).abs() < 1e-6 * trigamma(x), "x={x}: {fd} vs {}", trigamma(x));
        }
    }

    /// Central differences with a relative step h = 1e-6·|x|: truncation error h²|f'''|/6
    /// is about 1e-12 relative, rounding error about ε|f|/h. The bound
    /// 1e-6·(1 + |g|) + 1e3·ε·|f|/h is far above both and far below a wrong term (a wrong
    /// coefficient or a dropped factor changes g by O(|g|)).
    fn check_fd(name: &str, f: &dyn Fn(&[f64]) -> f64, x: &[f64], grad: &[f64]) {
        let f0 = f(x).abs();
        for i in 0..x.len() {
            let h = 1e-6 * x[i].abs().max(1e-2);
            let (mut up, mut down) = (x.to_vec(), x.to_vec());
            up[i] += h;
            down[i] -= h;
            let fd = (f(&up) - f(&down)) / (2.0 * h);
            let tol = 1e-6 * (1.0 + grad[i].abs()) + 1e3 * f64::EPSILON * f0 / h;
            assert!((fd - grad[i]).abs() < tol, "{name} coordinate {i}: analytic {} vs finite difference {fd} (tol {tol})", grad[i]);
        }
    }

    #[test]
    fn gradient_matches_finite_differences_in_rho_omega_and_unconstrained() {
        let (alpha, gamma) = (0.7, 2.5);
        for seed in 0..20 {
            let k = 1 + (seed as usize % 7);
            let (p, stats) = random_state(seed, k);
            let (dr, dw) = stick_gradient(&p.rho, &p.omega, &stats, alpha, gamma);
            let omega = p.omega.clone();
            check_fd("rho", &|rho: &[f64]| stick_objective(rho, &omega, &stats, alpha, gamma), &p.rho, &dr);
            let rho = p.rho.clone();
            check_fd("omega", &|omega: &[f64]| stick_objective(&rho, omega, &stats, alpha, gamma), &p.omega, &dw);
            let x = to_unconstrained(&p);
            let mut gx = vec![0.0; 2 * k];
            stick_objective_unconstrained(&x, &stats, alpha, gamma, &mut gx);
            check_fd("unconstrained", &|x: &[f64]| stick_objective_unconstrained(x, &stats, alpha, gamma, &mut vec![0.0; 2 * k]), &x, &gx);
        }
    }

    #[test]
    fn without_groups_the_optimum_is_the_prior() {
        // G = 0 and S = 0: L = −KL(q(u) ‖ Beta(1, γ)), maximised (at 0) by ρ = 1/(1 + γ),
        // ω = 1 + γ.
        let gamma = 3.0;
        let stats = StickStats { num_groups: 0.0, sum_log_pi: vec![0.0; 4] };
        let fit = optimise_stick(&stats, 1.0, gamma, &StickPosterior { rho: vec![0.9, 0.2, 0.5], omega: vec![50.0, 0.3, 2.0] });
        for (&r, &w) in fit.posterior.rho.iter().zip(&fit.posterior.omega) {
            assert!((r - 0.25).abs() < 1e-5 && (w - 4.0).abs() < 1e-3, "rho {r} omega {w}");
        }
        assert!(fit.objective.abs() < 1e-9, "KL at the optimum is {}", fit.objective);
    }

    #[test]
    fn optimiser_improves_and_reaches_a_stationary_point() {
        let (alpha, gamma) = (0.5, 1.5);
        for seed in 100..115 {
            let k = 2 + (seed as usize % 12);
            let (p, stats) = random_state(seed, k);
            let before = stick_objective(&p.rho, &p.omega, &stats, alpha, gamma);
            let fit = optimise_stick(&stats, alpha, gamma, &p);
            let after = stick_objective(&fit.posterior.rho, &fit.posterior.omega, &stats, alpha, gamma);
            assert!(after >= before, "seed {seed}: {after} < {before}");
            assert_eq!(after, fit.objective);
            // Stationary: the unconstrained gradient per group (the scale L-BFGS works in)
            // is below 1e-5 relative to max(1, |x|), the optimiser's own 1e-8 tolerance
            // with room for the rescaling.
            let x = to_unconstrained(&fit.posterior);
            let mut g = vec![0.0; 2 * k];
            stick_objective_unconstrained(&x, &stats, alpha, gamma, &mut g);
            let xmax = x.iter().fold(1.0f64, |m, v| m.max(v.abs()));
            let gmax = g.iter().fold(0.0f64, |m, v| m.max(v.abs())) / (stats.num_groups + 1.0);
            assert!(fit.converged && !fit.fell_back, "seed {seed}: converged {} fell back {}", fit.converged, fit.fell_back);
            assert!(gmax < 1e-5 * xmax, "seed {seed}: gradient {gmax}");
        }
    }

    #[test]
    fn a_non_finite_start_is_kept_not_worsened() {
        // ω = 0 makes every term NaN: the optimiser must return the start, flagged.
        let stats = StickStats { num_groups: 10.0, sum_log_pi: vec![-20.0, -30.0] };
        let init = StickPosterior { rho: vec![0.5], omega: vec![0.0] };
        let fit = optimise_stick(&stats, 1.0, 1.0, &init);
        assert!(fit.fell_back && !fit.converged);
        assert_eq!(fit.posterior, init);
    }

    #[test]
    fn merged_and_permuted_sticks_keep_expected_weights() {
        let p = StickPosterior { rho: vec![0.3, 0.5, 0.2, 0.6], omega: vec![10.0, 20.0, 30.0, 40.0] };
        let b = p.expected_beta();
        assert!((b.iter().sum::<f64>() - 1.0).abs() < 1e-15);
        let m = p.merged(1, 3);
        let mb = m.expected_beta();
        let want = [b[0], b[1] + b[3], b[2], b[4]];
        for (x, y) in mb.iter().zip(want) {
            assert!((x - y).abs() < 1e-14, "{mb:?} vs {want:?}");
        }
        assert_eq!(m.omega, vec![10.0, 20.0, 30.0]);
        let q = p.permuted(&[2, 0, 3, 1]);
        let qb = q.expected_beta();
        for (x, y) in qb.iter().zip([b[2], b[0], b[3], b[1], b[4]]) {
            assert!((x - y).abs() < 1e-14);
        }
        // E[log β] agrees with its definition for one stick.
        let one = StickPosterior { rho: vec![0.25], omega: vec![8.0] };
        let lb = one.expected_log_beta();
        assert!((lb[0] - (digamma(2.0) - digamma(8.0))).abs() < 1e-14);
        assert!((lb[1] - (digamma(6.0) - digamma(8.0))).abs() < 1e-14);
    }
}
