//! Convergence diagnostics of multi-chain MCMC draws of one scalar: rank-normalised
//! split-R̂, bulk and tail effective sample sizes (ESS), and the Monte Carlo standard
//! error (MCSE) of the mean.
//!
//! Why it exists: issue 42, item 4 — jobs and models report split-R̂ and bulk/tail ESS
//! per chain and pooled, so a reader can tell whether the chains of a fit agree and how
//! many independent draws its summaries are worth. The definitions are those of Vehtari,
//! Gelman, Simpson, Carpenter and Bürkner (2021), "Rank-normalization, folding, and
//! localization: an improved R̂ for assessing convergence of MCMC", Bayesian Analysis
//! 16(2), computed step for step as ArviZ computes them (`az.rhat(method="rank")`,
//! `az.ess(method="bulk" | "tail" | "mean")`, `az.mcse(method="mean")`); the tests hold
//! the results to ArviZ's within 1e-6 on a committed fixture.
//!
//! The steps, each a small function below:
//! - split: each chain's first and second halves become two chains (the middle draw of
//!   a chain of odd length is dropped), so a trend within a chain shows as disagreement
//!   between chains;
//! - rank-normalise: the pooled fractional ranks r (ties share their mean rank) of all S
//!   draws become normal scores Φ⁻¹((r − 3/8)/(S + 1/4)) (Blom's offset);
//! - fold: |x − median| over the pooled split draws, for the tails;
//! - R̂ of m chains of n draws: √((B/W + n − 1)/n), with B = n·var(chain means) and W the
//!   mean within-chain variance (both with n − 1 or m − 1 in the denominator); bulk R̂
//!   is that of the rank-normalised split draws, tail R̂ that of the rank-normalised
//!   folded split draws, and R̂ the larger of the two;
//! - ESS: m·n/τ̂, with τ̂ = −1 + 2 Σ ρ̂_t from the multi-chain autocorrelations
//!   ρ̂_t = 1 − (W − mean autocovariance at lag t)/var⁺ truncated by Geyer's initial
//!   positive sequence and made monotone by his initial monotone sequence; bulk ESS is
//!   that of the rank-normalised split draws, tail ESS the smaller ESS of the split
//!   indicators x ≤ q₀.₀₅ and x ≤ q₀.₉₅ (R's type-7 quantiles of the pooled draws), and
//!   the mean's ESS that of the split draws themselves;
//! - MCSE of the mean: the pooled standard deviation over √(ESS of the mean).
//!
//! Input: the draws of one scalar, one slice per chain, all of the same length
//! ([`Chains::new`]; ragged chains are a [`RaggedChains`] error), or an array of chains ×
//! draws ([`Chains::from_array`]). A per-chain report is a [`Chains`] of that one chain.
//!
//! Edge cases, as ArviZ has them:
//! - fewer than [`MIN_DRAWS`] draws per chain, no chains, or any NaN draw: every
//!   diagnostic is NaN;
//! - R̂ wants at least two chains: for one chain it is NaN (its ESS and MCSE are defined);
//! - constant draws: R̂ is NaN (between- and within-chain variance are both 0), each ESS
//!   is the number of split draws (ArviZ's convention for draws whose range is below
//!   1e-15), the MCSE is 0;
//! - chains each constant at different values: R̂ is +∞ (W = 0 < B);
//! - folded draws constant while the draws are not (say every draw is ±1): tail R̂ is
//!   NaN and R̂ is the bulk R̂;
//! - too few draws for Geyer's sequence to take a step (two draws per split chain) or a
//!   strongly antithetic chain (ρ̂₁ ≤ −1): τ̂ is floored at 1/log₁₀(m·n), so ESS is
//!   m·n·log₁₀(m·n);
//! - infinite draws: the ranks order them, so R̂ and bulk ESS stay finite; the tail ESS
//!   is finite unless a tail quantile lands on an infinite draw; the mean's ESS and the
//!   MCSE are NaN (∞ − ∞ in the autocovariance and the variance), as in ArviZ.
//!
//! Cost: autocovariances are summed directly, lag by lag, only up to the lag L where
//! Geyer's sequence stops, so an ESS costs O(m·n·L) multiply-adds (ArviZ's FFT computes
//! every lag in O(m·n·log n)). For chains that mix, L is a few times the
//! autocorrelation time; for chains that barely move L approaches n and the cost is
//! quadratic (4 chains × 10⁴ draws: at most about 10⁸ multiply-adds per ESS).
//!
//! Pure functions of the draws: the same draws give the same bits.

use ndarray::{Array2, ArrayView1, Axis};
use statrs::function::erf::erfc_inv;

/// Fewest draws per chain for which the diagnostics are defined (as in ArviZ): each
/// split chain then has at least two draws.
pub const MIN_DRAWS: usize = 4;

/// Draw ranges below this count as constant draws in the ESS (NumPy's
/// `finfo(float).resolution`, which ArviZ compares against).
const CONSTANT_RANGE: f64 = 1e-15;

/// Tail probabilities whose quantile indicators give the tail ESS.
const TAIL_PROBABILITIES: (f64, f64) = (0.05, 0.95);

/// Chains given to [`Chains::new`] whose lengths differ.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("chain {chain} has {len} draws but chain 0 has {expected}: every chain must have the same number of draws")]
pub struct RaggedChains {
    /// The first chain whose length differs from chain 0's.
    pub chain: usize,
    /// Its number of draws.
    pub len: usize,
    /// Chain 0's number of draws.
    pub expected: usize,
}

/// The diagnostics a job or model reports for one scalar (NaN where undefined; see the
/// module documentation).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Diagnostics {
    /// Rank-normalised split-R̂: the larger of bulk and tail R̂.
    pub rhat: f64,
    /// Effective sample size of the rank-normalised split draws.
    pub ess_bulk: f64,
    /// Effective sample size of the 5% and 95% quantile indicators, the smaller one.
    pub ess_tail: f64,
    /// Monte Carlo standard error of the mean.
    pub mcse_mean: f64,
}

/// MCMC draws of one scalar: chains × draws, every chain the same length.
#[derive(Debug, Clone, PartialEq)]
pub struct Chains {
    draws: Array2<f64>,
    has_nan: bool,
}

impl Chains {
    /// The draws, one slice per chain; an error when the chains differ in length.
    pub fn new<C: AsRef<[f64]>>(chains: &[C]) -> Result<Chains, RaggedChains> {
        let expected = chains.first().map_or(0, |c| c.as_ref().len());
        if let Some((chain, c)) = chains.iter().enumerate().find(|(_, c)| c.as_ref().len() != expected) {
            return Err(RaggedChains { chain, len: c.as_ref().len(), expected });
        }
        let draws = Array2::from_shape_fn((chains.len(), expected), |(i, j)| chains[i].as_ref()[j]);
        Ok(Chains::from_array(draws))
    }

    /// The draws as an array with one row per chain.
    pub fn from_array(draws: Array2<f64>) -> Chains {
        let has_nan = draws.iter().any(|x| x.is_nan());
        Chains { draws, has_nan }
    }

    /// Number of chains.
    pub fn n_chains(&self) -> usize {
        self.draws.nrows()
    }

    /// Number of draws in each chain.
    pub fn n_draws(&self) -> usize {
        self.draws.ncols()
    }

    /// R̂, bulk and tail ESS and the MCSE of the mean, together.
    pub fn diagnostics(&self) -> Diagnostics {
        Diagnostics { rhat: self.rhat(), ess_bulk: self.ess_bulk(), ess_tail: self.ess_tail(), mcse_mean: self.mcse_mean() }
    }

    /// Rank-normalised split-R̂ (ArviZ's `rhat(method="rank")`): the larger of
    /// [`rhat_bulk`](Self::rhat_bulk) and [`rhat_tail`](Self::rhat_tail). Near 1 when the
    /// chains agree; Vehtari et al. (2021) ask for below 1.01.
    pub fn rhat(&self) -> f64 {
        let (bulk, tail) = (self.rhat_bulk(), self.rhat_tail());
        // As Python's max(bulk, tail): a NaN tail R̂ leaves the bulk R̂.
        if tail > bulk {
            tail
        } else {
            bulk
        }
    }

    /// R̂ of the rank-normalised split draws (ArviZ's `rhat(method="z_scale")`): do the
    /// chains agree on location?
    pub fn rhat_bulk(&self) -> f64 {
        if !self.valid(2) {
            return f64::NAN;
        }
        rhat_of(&z_scale(&split_chains(&self.draws)))
    }

    /// R̂ of the rank-normalised folded split draws (ArviZ's `rhat(method="folded")`): do
    /// the chains agree on scale and tails?
    pub fn rhat_tail(&self) -> f64 {
        if !self.valid(2) {
            return f64::NAN;
        }
        rhat_of(&z_scale(&fold(&split_chains(&self.draws))))
    }

    /// Bulk effective sample size (ArviZ's `ess(method="bulk")`), for the reliability of
    /// means and medians.
    pub fn ess_bulk(&self) -> f64 {
        if !self.valid(1) {
            return f64::NAN;
        }
        ess_of(&z_scale(&split_chains(&self.draws)))
    }

    /// Tail effective sample size (ArviZ's `ess(method="tail")`): the smaller ESS of the
    /// indicators of the 5% and 95% quantiles, for the reliability of interval ends.
    pub fn ess_tail(&self) -> f64 {
        if !self.valid(1) {
            return f64::NAN;
        }
        let (low, high) = TAIL_PROBABILITIES;
        let (low, high) = (self.quantile_ess(low), self.quantile_ess(high));
        // As Python's min(low, high).
        if high < low {
            high
        } else {
            low
        }
    }

    /// Effective sample size of the mean (ArviZ's `ess(method="mean")`): that of the
    /// split draws as they are, without rank normalisation.
    pub fn ess_mean(&self) -> f64 {
        if !self.valid(1) {
            return f64::NAN;
        }
        ess_of(&split_chains(&self.draws))
    }

    /// Monte Carlo standard error of the mean (ArviZ's `mcse(method="mean")`): the
    /// standard deviation of all draws over √[`ess_mean`](Self::ess_mean).
    pub fn mcse_mean(&self) -> f64 {
        if !self.valid(1) {
            return f64::NAN;
        }
        let pooled = self.draws.iter().copied().collect::<Vec<f64>>();
        sample_variance(ArrayView1::from(&pooled)).sqrt() / self.ess_mean().sqrt()
    }

    /// Whether ArviZ computes a diagnostic wanting `min_chains` chains of these draws.
    fn valid(&self, min_chains: usize) -> bool {
        self.n_chains() >= min_chains && self.n_draws() >= MIN_DRAWS && !self.has_nan
    }

    /// ESS of the split indicator draws x ≤ q_p, q_p the type-7 quantile of all draws.
    fn quantile_ess(&self, p: f64) -> f64 {
        let q = quantile_type7(self.draws.iter().copied().collect(), p);
        let below = self.draws.mapv(|x| if x <= q { 1.0 } else { 0.0 });
        ess_of(&split_chains(&below))
    }
}

/// The first and the last ⌊n/2⌋ draws of every chain as separate chains: the first
/// halves of all chains, then the second halves (the middle draw of an odd n is left
/// out).
fn split_chains(draws: &Array2<f64>) -> Array2<f64> {
    let (chains, n) = draws.dim();
    let half = n / 2;
    Array2::from_shape_fn((2 * chains, half), |(i, j)| if i < chains { draws[[i, j]] } else { draws[[i - chains, n - half + j]] })
}

/// |x − median| of every draw, the median over all chains.
fn fold(draws: &Array2<f64>) -> Array2<f64> {
    let median = median(draws.iter().copied().collect());
    draws.mapv(|x| (x - median).abs())
}

/// Normal scores of the pooled fractional ranks, Φ⁻¹((r − 3/8)/(S + 1/4)) for S draws
/// (Blom 1958), in the draws' shape. A NaN draw gets a NaN score but counts in S, as
/// with SciPy's `rankdata(nan_policy="omit")` in ArviZ.
fn z_scale(draws: &Array2<f64>) -> Array2<f64> {
    let ranks = average_ranks(&draws.iter().copied().collect::<Vec<f64>>());
    let size = ranks.len() as f64;
    let mut scores = draws.clone();
    for (score, rank) in scores.iter_mut().zip(ranks) {
        *score = normal_quantile((rank - 0.375) / (size + 0.25));
    }
    scores
}

/// 1-based ranks of the values, tied values sharing the mean of their ranks; NaN values
/// are left out of the ranking and get NaN.
fn average_ranks(values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).filter(|&i| !values[i].is_nan()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut ranks = vec![f64::NAN; values.len()];
    let mut start = 0;
    while start < order.len() {
        let value = values[order[start]];
        // total_cmp puts -0.0 just before 0.0, so equal values are adjacent.
        let end = start + order[start..].iter().take_while(|&&i| values[i] == value).count();
        // Sorted positions start..end hold ranks start + 1 ..= end.
        let rank = (start + 1 + end) as f64 / 2.0;
        for &i in &order[start..end] {
            ranks[i] = rank;
        }
        start = end;
    }
    ranks
}

/// The standard normal quantile Φ⁻¹(p) = −√2·erfc⁻¹(2p); NaN for NaN.
fn normal_quantile(p: f64) -> f64 {
    if p.is_nan() {
        return f64::NAN;
    }
    -std::f64::consts::SQRT_2 * erfc_inv(2.0 * p)
}

/// The median, the mean of the two middle values for an even count; NaN when empty.
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => values[n / 2],
        _ => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// R's type-7 quantile (linear between order statistics), in the arithmetic of SciPy's
/// `mquantiles(alphap=1, betap=1)` that ArviZ calls, so that a quantile falling on tied
/// draws compares equal to them exactly as there.
fn quantile_type7(mut values: Vec<f64>, p: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => return f64::NAN,
        1 => return values[0],
        _ => {}
    }
    // mquantiles' m = alphap + p·(1 − alphap − betap) with alphap = betap = 1.
    let aleph = n as f64 * p + (1.0 - p);
    let k = aleph.clamp(1.0, (n - 1) as f64).floor();
    let gamma = (aleph - k).clamp(0.0, 1.0);
    let k = k as usize;
    (1.0 - gamma) * values[k - 1] + gamma * values[k]
}

/// Mean of a row.
fn mean(values: ArrayView1<f64>) -> f64 {
    values.sum() / values.len() as f64
}

/// Variance with n − 1 in the denominator.
fn sample_variance(values: ArrayView1<f64>) -> f64 {
    let m = mean(values);
    values.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (values.len() as f64 - 1.0)
}

/// Each chain's mean.
fn chain_means(chains: &Array2<f64>) -> Vec<f64> {
    chains.axis_iter(Axis(0)).map(mean).collect()
}

/// Gelman–Rubin R̂ of chains as they are: √((B/W + n − 1)/n).
fn rhat_of(chains: &Array2<f64>) -> f64 {
    let n = chains.ncols() as f64;
    let means = chain_means(chains);
    let between = n * sample_variance(ArrayView1::from(&means));
    let within = chains.axis_iter(Axis(0)).map(sample_variance).sum::<f64>() / chains.nrows() as f64;
    ((between / within + n - 1.0) / n).sqrt()
}

/// Autocovariances of chains about their own means, summed on demand lag by lag.
struct Autocovariance {
    centred: Array2<f64>,
}

impl Autocovariance {
    fn new(chains: &Array2<f64>) -> Autocovariance {
        let mut centred = chains.clone();
        for mut row in centred.axis_iter_mut(Axis(0)) {
            let m = mean(row.view());
            row.mapv_inplace(|x| x - m);
        }
        Autocovariance { centred }
    }

    /// The chains' mean biased autocovariance at `lag`: (1/n) Σ_{i<n−lag} c_i c_{i+lag}.
    /// ArviZ gets the same numbers from a zero-padded FFT.
    fn mean_at(&self, lag: usize) -> f64 {
        let (chains, n) = self.centred.dim();
        let total: f64 = self.centred.axis_iter(Axis(0)).map(|c| c.iter().zip(c.iter().skip(lag)).map(|(a, b)| a * b).sum::<f64>() / n as f64).sum();
        total / chains as f64
    }
}

/// Effective sample size of chains as they are (ArviZ's `_ess`): chains × draws over
/// the integrated autocorrelation time from Geyer's initial monotone sequence.
fn ess_of(chains: &Array2<f64>) -> f64 {
    let (m, n) = chains.dim();
    let total = (m * n) as f64;
    if n < 2 || chains.iter().any(|x| x.is_nan()) {
        return f64::NAN;
    }
    let (low, high) = chains.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| (lo.min(x), hi.max(x)));
    if high - low < CONSTANT_RANGE {
        return total;
    }
    let rho_at = autocorrelation(chains);
    let (mut rho, unpaired) = initial_positive_sequence(rho_at, n);
    make_monotone(&mut rho, unpaired);
    if rho.iter().any(|r| r.is_nan()) {
        return f64::NAN;
    }
    total / integrated_time(&rho, unpaired, total)
}

/// ρ̂_t = 1 − (W − mean autocovariance at t)/var⁺, the multi-chain autocorrelation of
/// Vehtari et al. (2021), with var⁺ = W·(n − 1)/n + var(chain means) (the last
/// term only for more than one chain).
fn autocorrelation(chains: &Array2<f64>) -> impl Fn(usize) -> f64 {
    let (m, n) = chains.dim();
    let n_f = n as f64;
    let acov = Autocovariance::new(chains);
    let within = acov.mean_at(0) * n_f / (n_f - 1.0);
    let mut var_plus = within * (n_f - 1.0) / n_f;
    if m > 1 {
        var_plus += sample_variance(ArrayView1::from(&chain_means(chains)));
    }
    move |lag| 1.0 - (within - acov.mean_at(lag)) / var_plus
}

/// Geyer's initial positive sequence: ρ̂ at lags 0, 1, 2, … (0 beyond where it stops),
/// taken in pairs (ρ̂_{2k}, ρ̂_{2k+1}) while their sums are positive; and the index of the
/// first autocorrelation past the kept pairs, which [`integrated_time`] counts once.
/// Each autocovariance is summed when first needed.
fn initial_positive_sequence(rho_at: impl Fn(usize) -> f64, n: usize) -> (Vec<f64>, usize) {
    let mut rho = vec![0.0; n];
    rho[0] = 1.0;
    let mut even = 1.0;
    let mut odd = rho_at(1);
    rho[1] = odd;
    let mut t = 1;
    while t + 3 < n && even + odd > 0.0 {
        even = rho_at(t + 1);
        odd = rho_at(t + 2);
        if even + odd >= 0.0 {
            rho[t + 1] = even;
            rho[t + 2] = odd;
        }
        t += 2;
    }
    // The pairs before index t − 1 are kept; the even autocorrelation there (the last
    // one read) stands alone if positive. If no step was taken that is ρ̂_0 = 1.
    let unpaired = t - 1;
    if even > 0.0 {
        rho[unpaired] = even;
    }
    (rho, unpaired)
}

/// Geyer's initial monotone sequence: a pair whose sum exceeds the previous pair's takes
/// the previous pair's mean, up to the last kept pair before `unpaired`.
fn make_monotone(rho: &mut [f64], unpaired: usize) {
    let mut t = 1;
    while t + 3 <= unpaired {
        let previous = rho[t - 1] + rho[t];
        if rho[t + 1] + rho[t + 2] > previous {
            rho[t + 1] = previous / 2.0;
            rho[t + 2] = previous / 2.0;
        }
        t += 2;
    }
}

/// τ̂ = −1 + 2 Σ_{t<unpaired} ρ̂_t + ρ̂_unpaired, floored at 1/log₁₀(total draws) as in
/// ArviZ (which bounds the ESS of antithetic chains).
fn integrated_time(rho: &[f64], unpaired: usize, total: f64) -> f64 {
    let tau = -1.0 + 2.0 * rho[..unpaired].iter().sum::<f64>() + rho.get(unpaired).copied().unwrap_or(0.0);
    let floor = 1.0 / total.log10();
    // As Python's max(tau, floor).
    if floor > tau {
        floor
    } else {
        tau
    }
}

#[cfg(test)]
#[path = "convergence_tests.rs"]
mod tests;
