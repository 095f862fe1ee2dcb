//! Statistics of Geweke joint-distribution tests (tests only).
//!
//! A Geweke test compares a test function's mean under independent prior-then-data
//! draws (the marginal-conditional simulator) with its mean along a chain that
//! alternates the sampler's transition and fresh data (the successive-conditional
//! simulator). The independent side's variance of the mean is the sample variance over
//! n; the chain is autocorrelated, so its variance of the mean comes from 50 batch
//! means. Every sampler's Geweke tests share these two functions.

/// Mean and the variance of the mean by batch means (50 batches).
pub fn mean_and_variance_of_mean(xs: &[f64]) -> (f64, f64) {
    let batches = 50;
    let size = xs.len() / batches;
    let means: Vec<f64> = xs.chunks(size).take(batches).map(|c| c.iter().sum::<f64>() / c.len() as f64).collect();
    let m = means.iter().sum::<f64>() / batches as f64;
    let v = means.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (batches - 1) as f64;
    (xs.iter().sum::<f64>() / xs.len() as f64, v / batches as f64)
}

/// z-score of one test function between independent draws and a chain.
pub fn z_score(independent: &[f64], chain: &[f64]) -> f64 {
    let n = independent.len() as f64;
    let m1 = independent.iter().sum::<f64>() / n;
    let v1 = independent.iter().map(|x| (x - m1).powi(2)).sum::<f64>() / (n - 1.0) / n;
    let (m2, v2) = mean_and_variance_of_mean(chain);
    (m1 - m2) / (v1 + v2).sqrt()
}
