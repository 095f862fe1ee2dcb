//! Maximum-likelihood Dirichlet parameters of Dirichlet-multinomial counts, by Minka's
//! fixed point on count histograms.
//!
//! Why it exists: LDA's hyperparameter optimisation (MALLET's `--optimize-interval`,
//! tomotopy's `optim_interval`) maximises the Dirichlet-multinomial likelihood of the
//! current topic assignments, p(z | α) = Π_d Γ(α₀)/Γ(L_d + α₀) Π_k Γ(n_dk + α_k)/Γ(α_k),
//! over α. Minka (2000, "Estimating a Dirichlet distribution", eq. 55) gives the fixed
//! point
//!
//!   α_k ← α_k · Σ_d [ψ(n_dk + α_k) − ψ(α_k)] / Σ_d [ψ(L_d + α₀) − ψ(α₀)],
//!
//! each step of which maximises a lower bound that touches the likelihood at the current
//! α, so the likelihood never decreases. The sums only depend on how many groups have
//! each count, so they are computed from histograms (`h[n]` = groups with count n, as
//! MALLET's `Dirichlet.learnParameters`), with ψ(n + a) − ψ(a) = Σ_{i<n} 1/(a + i)
//! accumulated along the histogram: no digamma calls, and the cost per step is the
//! largest count, not the number of groups.
//!
//! Pure functions of integer histograms: the same histograms give the same bits.

use statrs::function::gamma::ln_gamma;

/// When to stop iterating the fixed point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FixedPointSettings {
    /// Most steps.
    pub max_iterations: usize,
    /// Stop when no parameter moved by more than this fraction of its value.
    pub tolerance: f64,
    /// Parameters are kept at or above this (a component no group uses has its maximum
    /// at 0, where the likelihood's terms are undefined).
    pub floor: f64,
}

impl Default for FixedPointSettings {
    /// 1e-5 is tomotopy's floor for α.
    fn default() -> Self {
        FixedPointSettings { max_iterations: 1000, tolerance: 1e-7, floor: 1e-5 }
    }
}

/// Σ_n h[n] (ψ(n + a) − ψ(a)) for a histogram `h` of counts (h[0] is ignored: a zero
/// count contributes nothing), by the recurrence ψ(n + 1 + a) = ψ(n + a) + 1/(n + a).
pub fn digamma_difference_sum(h: &[u64], a: f64) -> f64 {
    let mut running = 0.0; // ψ(n + a) − ψ(a)
    let mut total = 0.0;
    for (n, &groups) in h.iter().enumerate().skip(1) {
        running += 1.0 / (a + (n - 1) as f64);
        if groups > 0 {
            total += groups as f64 * running;
        }
    }
    total
}

/// Σ_n h[n] (lnΓ(n + a) − lnΓ(a)).
fn ln_gamma_difference_sum(h: &[u64], a: f64) -> f64 {
    let base = ln_gamma(a);
    h.iter().enumerate().skip(1).filter(|(_, &g)| g > 0).map(|(n, &g)| g as f64 * (ln_gamma(n as f64 + a) - base)).sum()
}

/// The Dirichlet-multinomial log-likelihood of groups of counts under `alpha`, from
/// histograms: `components[k][n]` groups have count n in component k, `lengths[L]`
/// groups have L counts in all. (Without the multinomial coefficients, which do not
/// depend on α: this is log p(z | α) of LDA's topic assignments.)
pub fn log_likelihood(alpha: &[f64], components: &[Vec<u64>], lengths: &[u64]) -> f64 {
    assert_eq!(alpha.len(), components.len(), "one histogram per component");
    let total: f64 = alpha.iter().sum();
    let parts: f64 = alpha.iter().zip(components).map(|(&a, h)| ln_gamma_difference_sum(h, a)).sum();
    parts - ln_gamma_difference_sum(lengths, total)
}

/// One step of Minka's fixed point for an asymmetric α (every component from the same
/// α₀, as MALLET's `learnParameters`), each α_k kept at or above `floor`.
pub fn asymmetric_step(alpha: &mut [f64], components: &[Vec<u64>], lengths: &[u64], floor: f64) {
    assert_eq!(alpha.len(), components.len(), "one histogram per component");
    let denominator = digamma_difference_sum(lengths, alpha.iter().sum());
    if denominator <= 0.0 {
        return; // no group has any count: nothing to learn from
    }
    for (a, h) in alpha.iter_mut().zip(components) {
        *a = (*a * digamma_difference_sum(h, *a) / denominator).max(floor);
    }
}

/// Iterate [`asymmetric_step`] from `alpha` until it settles; returns the steps taken.
pub fn optimize_asymmetric(alpha: &mut [f64], components: &[Vec<u64>], lengths: &[u64], settings: &FixedPointSettings) -> usize {
    let mut before = alpha.to_vec();
    for step in 1..=settings.max_iterations {
        asymmetric_step(alpha, components, lengths, settings.floor);
        let moved = alpha.iter().zip(&before).all(|(&a, &b)| (a - b).abs() <= settings.tolerance * b);
        if moved {
            return step;
        }
        before.copy_from_slice(alpha);
    }
    settings.max_iterations
}

/// One step of the fixed point for a symmetric Dirichlet over `dim` categories:
/// `entries[n]` is how many (group, category) cells have count n and `lengths[L]` how
/// many groups have L counts in all (for LDA's β: cells are (topic, word), groups are
/// topics, `dim` is V). a ← a Σ_cells [ψ(n + a) − ψ(a)] / (dim Σ_groups [ψ(L + dim a) − ψ(dim a)]).
pub fn symmetric_step(a: f64, dim: usize, entries: &[u64], lengths: &[u64], floor: f64) -> f64 {
    let denominator = dim as f64 * digamma_difference_sum(lengths, dim as f64 * a);
    if denominator <= 0.0 {
        return a;
    }
    (a * digamma_difference_sum(entries, a) / denominator).max(floor)
}

/// Iterate [`symmetric_step`] from `a` until it settles; returns the value and the steps.
pub fn optimize_symmetric(mut a: f64, dim: usize, entries: &[u64], lengths: &[u64], settings: &FixedPointSettings) -> (f64, usize) {
    for step in 1..=settings.max_iterations {
        let next = symmetric_step(a, dim, entries, lengths, settings.floor);
        let settled = (next - a).abs() <= settings.tolerance * a;
        a = next;
        if settled {
            return (a, step);
        }
    }
    (a, settings.max_iterations)
}

/// The symmetric Dirichlet-multinomial log-likelihood (see [`symmetric_step`] for the
/// histograms).
pub fn symmetric_log_likelihood(a: f64, dim: usize, entries: &[u64], lengths: &[u64]) -> f64 {
    ln_gamma_difference_sum(entries, a) - ln_gamma_difference_sum(lengths, dim as f64 * a)
}

/// Add `count` to histogram `h` (growing it as needed).
pub fn add_to_histogram(h: &mut Vec<u64>, count: usize) {
    if h.len() <= count {
        h.resize(count + 1, 0);
    }
    h[count] += 1;
}

#[cfg(test)]
#[path = "dirichlet_tests.rs"]
mod tests;
