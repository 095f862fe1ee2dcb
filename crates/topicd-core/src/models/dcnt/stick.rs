//! Logistic stick-breaking: topic weights π(v) from a document's activations v.
//!
//! Why it exists: DCNT and SCNT map each document's Gaussian activations v_d to topic
//! weights by π_k = σ(v_k) Π_{l<k} σ(−v_l), the last stick taking the remainder
//! Π_{l<K−1} σ(−v_l) (so v_{K−1} does not enter π). The sampler, the Chib estimator and
//! the covariance estimator all need the same map, computed in log space so that
//! very negative or positive activations lose no precision.

/// log σ(x), stable for large |x|.
#[inline]
pub fn log_sigmoid(x: f64) -> f64 {
    if x >= 0.0 {
        -(-x).exp().ln_1p()
    } else {
        x - x.exp().ln_1p()
    }
}

/// Writes log π_k(v) for every k into `out` (same length as `v`, at least 1).
pub fn log_stick_weights(v: &[f64], out: &mut [f64]) {
    let k = v.len();
    assert_eq!(out.len(), k, "one weight per activation");
    let mut rest = 0.0; // log Π_{l<k} σ(−v_l)
    for j in 0..k.saturating_sub(1) {
        out[j] = log_sigmoid(v[j]) + rest;
        rest += log_sigmoid(-v[j]);
    }
    if k > 0 {
        out[k - 1] = rest;
    }
}

/// π(v) in linear space, written into `pi`, without logarithms: one exponential per
/// topic, for the Monte Carlo integrals that evaluate π many times per point
/// (covariate effects), where the weights' tiniest values do not matter.
pub fn stick_weights_into(v: &[f64], pi: &mut [f64]) {
    let last = v.len() - 1;
    let mut rest = 1.0;
    for (t, &x) in v.iter().enumerate().take(last) {
        let s = 1.0 / (1.0 + (-x).exp());
        pi[t] = rest * s;
        rest *= 1.0 - s;
    }
    pi[last] = rest;
}

/// π(v) in linear space (sums to one).
pub fn stick_weights(v: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; v.len()];
    log_stick_weights(v, &mut out);
    out.iter_mut().for_each(|x| *x = x.exp());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_direct_weights_equal_the_log_space_ones() {
        let v = [0.3, -1.2, 2.5, 0.0];
        let mut pi = [0.0; 4];
        stick_weights_into(&v, &mut pi);
        let expected = stick_weights(&v);
        for (a, b) in pi.iter().zip(&expected) {
            assert!((a - b).abs() < 1e-12, "{pi:?} against {expected:?}");
        }
    }

    #[test]
    fn weights_sum_to_one_and_follow_the_definition() {
        let v = [0.3, -1.2, 2.5, 0.0, -0.7];
        let pi = stick_weights(&v);
        let s: f64 = pi.iter().sum();
        assert!((s - 1.0).abs() < 1e-12, "sum {s}");
        let sig = |x: f64| 1.0 / (1.0 + (-x).exp());
        assert!((pi[0] - sig(0.3)).abs() < 1e-12);
        assert!((pi[1] - sig(-1.2) * sig(-0.3)).abs() < 1e-12);
        // The last stick ignores v[K-1].
        let mut w = v;
        w[4] = 9.0;
        assert_eq!(stick_weights(&w)[4], pi[4]);
    }

    #[test]
    fn log_sigmoid_is_stable() {
        assert!((log_sigmoid(-800.0) + 800.0).abs() < 1e-9);
        assert!(log_sigmoid(800.0).abs() < 1e-300);
        assert!((log_sigmoid(0.0) + std::f64::consts::LN_2).abs() < 1e-15);
    }
}
