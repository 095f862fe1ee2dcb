//! The global step's topic-word part and the exact whole-data objective.
//!
//! Why it exists: given the whole-data summary, the optimal q(φ_k) is Dir(λ + N_k·), and
//! at that optimum the topic-word part of the ELBO is c(λ1) − c(λ + N_k·) per topic, with
//! c(a) = log Γ(Σ a) − Σ log Γ(a_w). The objective is then
//! L = Σ_k [c(λ1) − c(λ + N_k·)] + Σ_k H_k + local + stick_objective(ρ, ω, S),
//! exact for the stored local parameters (with the stick's surrogate for the Dirichlet
//! normaliser, see [`crate::inference::stick_posterior`]).

use super::summary::Summary;
use crate::inference::stick_posterior::{stick_objective, StickPosterior};
use rayon::prelude::*;
use statrs::function::gamma::{digamma, ln_gamma};

/// q(φ) at its optimum for a summary, in the forms the local step and the objective need.
#[derive(Debug, Clone)]
pub struct TopicWord {
    pub num_topics: usize,
    /// E[log φ_kw], word-major (`V × K`).
    pub elog_phi: Vec<f64>,
    /// exp(E[log φ_kw]), word-major.
    pub exp_elog_phi: Vec<f64>,
    /// c(λ1) − c(λ + N_k·) per topic.
    pub data_terms: Vec<f64>,
}

/// c(λ1) − c(λ + column), for one topic's counts.
pub fn topic_data_term(counts: impl Iterator<Item = f64>, lambda: f64, num_terms: usize) -> f64 {
    let v = num_terms as f64;
    let (mut total, mut sum_ln_gamma) = (0.0, 0.0);
    for n in counts {
        total += n;
        sum_ln_gamma += ln_gamma(lambda + n);
    }
    (ln_gamma(v * lambda) - v * ln_gamma(lambda)) - (ln_gamma(v * lambda + total) - sum_ln_gamma)
}

/// E[log φ_kw] = ψ(λ_kw) − ψ(Σ_w λ_kw) and its exponential, word-major (`V × K`), from
/// each topic's ψ(Σ_w λ_kw) and the pseudo-counts `pseudo(w, k)`: what the local step
/// reads, for fitting and for prediction alike.
pub fn expected_log_phi(num_terms: usize, digamma_total: &[f64], pseudo: impl Fn(usize, usize) -> f64 + Sync) -> (Vec<f64>, Vec<f64>) {
    let k = digamma_total.len();
    let mut elog_phi = vec![0.0; num_terms * k];
    elog_phi.par_chunks_mut(k.max(1)).enumerate().for_each(|(w, out)| {
        for t in 0..k {
            out[t] = digamma(pseudo(w, t)) - digamma_total[t];
        }
    });
    let exp_elog_phi = elog_phi.par_iter().map(|x| x.exp()).collect();
    (elog_phi, exp_elog_phi)
}

impl TopicWord {
    /// From a dense (whole-data) summary and the topic-word prior λ.
    pub fn from_summary(total: &Summary, lambda: f64) -> Self {
        let k = total.num_topics;
        let v = total.words.len();
        assert_eq!(total.word_topic.len(), v * k, "a dense summary");
        let column_total: Vec<f64> = (0..k).map(|t| (0..v).map(|w| total.word_topic[w * k + t]).sum::<f64>()).collect();
        let digamma_total: Vec<f64> = column_total.iter().map(|&n| digamma(v as f64 * lambda + n)).collect();
        let (elog_phi, exp_elog_phi) = expected_log_phi(v, &digamma_total, |w, t| lambda + total.word_topic[w * k + t]);
        let data_terms = (0..k).into_par_iter().map(|t| topic_data_term((0..v).map(|w| total.word_topic[w * k + t]), lambda, v)).collect();
        TopicWord { num_topics: k, elog_phi, exp_elog_phi, data_terms }
    }
}

/// The objective's parts, for progress and for merge decisions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Objective {
    pub data: f64,
    pub entropy: f64,
    pub local: f64,
    pub stick: f64,
}

impl Objective {
    pub fn total(&self) -> f64 {
        self.data + self.entropy + self.local + self.stick
    }
}

/// The whole-data objective at the optimal q(φ) and the given sticks.
pub fn objective(total: &Summary, topic_word: &TopicWord, stick: &StickPosterior, alpha: f64, gamma: f64) -> Objective {
    Objective {
        data: topic_word.data_terms.iter().sum(),
        entropy: total.entropy.iter().sum(),
        local: total.local,
        stick: stick_objective(&stick.rho, &stick.omega, &total.stick_stats(), alpha, gamma),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_term_is_the_log_marginal_likelihood_of_a_sequence() {
        // One topic, words with counts (2, 1) under Dir(λ, λ): the probability of one
        // particular sequence is Γ(2λ)/Γ(2λ+3) · Γ(λ+2)Γ(λ+1)/Γ(λ)² (Pólya urn).
        let l: f64 = 0.5;
        let want = ln_gamma(2.0 * l) - ln_gamma(2.0 * l + 3.0) + ln_gamma(l + 2.0) + ln_gamma(l + 1.0) - 2.0 * ln_gamma(l);
        // By the urn: (l/2l)·((l+1)/(2l+1))·(l/(2l+2)) for the sequence a, a, b.
        let urn = (l / (2.0 * l) * ((l + 1.0) / (2.0 * l + 1.0)) * (l / (2.0 * l + 2.0))).ln();
        assert!((want - urn).abs() < 1e-12);
        assert!((topic_data_term([2.0, 1.0].into_iter(), l, 2) - want).abs() < 1e-12);
    }
}
