//! The collapsed log joint log p(w, z | α, β) of LDA.
//!
//! Why it exists: it is the trace every LDA fit reports (per token), the number
//! tomotopy reports as `ll_per_word`, and the `log p(w, z*)` term of the Chib-style
//! held-out estimator.

use statrs::function::gamma::ln_gamma;

/// `ln Γ(n + a) − ln Γ(a)` for integer n, tabulated for small n.
pub struct LgammaOffset {
    a: f64,
    table: Vec<f64>,
}

impl LgammaOffset {
    pub fn new(a: f64, size: usize) -> Self {
        let base = ln_gamma(a);
        let table = (0..size).map(|n| ln_gamma(n as f64 + a) - base).collect();
        LgammaOffset { a, table }
    }

    #[inline]
    pub fn at(&self, n: u64) -> f64 {
        match self.table.get(n as usize) {
            Some(&v) => v,
            None => ln_gamma(n as f64 + self.a) - ln_gamma(self.a),
        }
    }
}

/// Word half: Σ_k [Σ_w (lnΓ(n_kw+β) − lnΓ(β)) − (lnΓ(n_k+Vβ) − lnΓ(Vβ))].
/// `n_kw` is word-major (`V × K`).
pub fn log_p_words_given_topics(n_kw: &[u32], n_k: &[u64], num_terms: usize, beta: f64) -> f64 {
    let by_count = LgammaOffset::new(beta, 1024);
    let vbeta = num_terms as f64 * beta;
    let words: f64 = n_kw.iter().filter(|&&n| n > 0).map(|&n| by_count.at(n as u64)).sum();
    let topics: f64 = n_k.iter().map(|&n| ln_gamma(n as f64 + vbeta) - ln_gamma(vbeta)).sum();
    words - topics
}

/// The document half's prior, Dirichlet(α) with one α_k per topic: lnΓ(n + α_k) − lnΓ(α_k)
/// tabulated per topic (one shared table when α is symmetric) and α₀ = Σ_k α_k.
pub struct TopicPrior {
    tables: Vec<LgammaOffset>,
    total: f64,
}

impl TopicPrior {
    /// Tables of `size` entries per topic (larger counts are computed directly).
    pub fn new(alpha: &[f64], size: usize) -> Self {
        assert!(!alpha.is_empty(), "at least one topic");
        let symmetric = alpha.iter().all(|&a| a == alpha[0]);
        let tables = if symmetric { vec![LgammaOffset::new(alpha[0], size)] } else { alpha.iter().map(|&a| LgammaOffset::new(a, size)).collect() };
        TopicPrior { tables, total: alpha.iter().sum() }
    }

    /// One document's half: Σ_k (lnΓ(n_dk+α_k) − lnΓ(α_k)) − (lnΓ(L+α₀) − lnΓ(α₀)).
    pub fn log_p(&self, n_dk: &[u32]) -> f64 {
        let len: u64 = n_dk.iter().map(|&n| n as u64).sum();
        let last = self.tables.len() - 1;
        let topics: f64 = n_dk.iter().enumerate().filter(|(_, &n)| n > 0).map(|(k, &n)| self.tables[k.min(last)].at(n as u64)).sum();
        topics - (ln_gamma(len as f64 + self.total) - ln_gamma(self.total))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Brute force: the Dirichlet-multinomial probability of a specific sequence,
    /// p(z_1..z_n) = Π_i (n_{z_i}^{<i} + a) / (i - 1 + K a), for one document.
    #[test]
    fn document_term_equals_sequential_product() {
        let alpha = 0.3;
        let z = [0usize, 2, 2, 1, 2, 0];
        let k = 3;
        let mut counts = vec![0u32; k];
        let mut direct = 0.0;
        for (i, &t) in z.iter().enumerate() {
            direct += ((counts[t] as f64 + alpha) / (i as f64 + k as f64 * alpha)).ln();
            counts[t] += 1;
        }
        let got = TopicPrior::new(&[alpha; 3], 4).log_p(&counts);
        assert!((got - direct).abs() < 1e-12, "{got} vs {direct}");
    }

    /// The same with one α_k per topic: p(z_i = t | z_<i) = (n_t + α_t)/(i − 1 + α₀).
    #[test]
    fn asymmetric_document_term_equals_sequential_product() {
        let alpha = [0.3, 1.7, 0.05];
        let a0: f64 = alpha.iter().sum();
        let z = [0usize, 2, 2, 1, 2, 0, 1, 1];
        let mut counts = vec![0u32; 3];
        let mut direct = 0.0;
        for (i, &t) in z.iter().enumerate() {
            direct += ((counts[t] as f64 + alpha[t]) / (i as f64 + a0)).ln();
            counts[t] += 1;
        }
        // Tables shorter than the counts: the rest is computed directly.
        let got = TopicPrior::new(&alpha, 2).log_p(&counts);
        assert!((got - direct).abs() < 1e-12, "{got} vs {direct}");
    }

    #[test]
    fn word_term_equals_sequential_product() {
        // Two topics, three words; tokens (word, topic) in order.
        let beta = 0.05;
        let v = 3;
        let tokens = [(0usize, 0usize), (1, 0), (0, 0), (2, 1), (2, 1), (0, 1)];
        let mut n_kw = vec![0u32; v * 2];
        let mut n_k = vec![0u64; 2];
        let mut direct = 0.0;
        for &(w, t) in &tokens {
            direct += ((n_kw[w * 2 + t] as f64 + beta) / (n_k[t] as f64 + v as f64 * beta)).ln();
            n_kw[w * 2 + t] += 1;
            n_k[t] += 1;
        }
        let got = log_p_words_given_topics(&n_kw, &n_k, v, beta);
        assert!((got - direct).abs() < 1e-12, "{got} vs {direct}");
    }
}
