//! Topic coherence: UMass, UCI, NPMI and C_v, exactly as gensim 4.4's `CoherenceModel`.
//!
//! Why it exists: users judge topics by the coherence of their top words, and compare
//! topicd's numbers with gensim's; so every measure follows gensim's pipeline step for
//! step (segmentation, confirmation, arithmetic mean), with its constants and guards:
//!
//! - `u_mass`: pairs (w_i, w_j), i > j (`s_one_pre`), on document counts (the caller
//!   builds [`Occurrences::from_documents`]); m = ln((D(w_i, w_j)/N + ε) / (D(w_j)/N)),
//!   0 when D(w_j) = 0.
//! - `c_uci`: ordered pairs i ≠ j (`s_one_one`); m = ln((D(w_i, w_j)/N + ε) / (D(w_i)/N ·
//!   D(w_j)/N)).
//! - `c_npmi`: the same pairs; m = (that logarithm) / −ln(D(w_i, w_j)/N + ε).
//! - `c_v`: each word's context vector v_i = (NPMI(w_i, w_j))_j over the topic's words
//!   (NPMI(w, w) from D(w)), the topic's vector V = Σ_i v_i (`s_one_set`, γ = 1), and the
//!   mean of cos(v_i, V).
//!
//! ε = 1e-12. N is the number of virtual documents of the [`Occurrences`] (documents or
//! windows). A top word that never occurs makes gensim divide by zero (∞ or NaN); here
//! the topic's value is then not finite, and callers report it as absent. It cannot
//! happen for a model's own corpus, whose every word occurs. Pure functions, no I/O.

use super::cooccurrence::Occurrences;

/// gensim's `direct_confirmation_measure.EPSILON`.
pub const EPSILON: f64 = 1e-12;

/// A coherence measure, named as gensim names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    UMass,
    CUci,
    CNpmi,
    CV,
}

impl Measure {
    pub fn parse(s: &str) -> Option<Measure> {
        match s {
            "u_mass" => Some(Measure::UMass),
            "c_uci" => Some(Measure::CUci),
            "c_npmi" => Some(Measure::CNpmi),
            "c_v" => Some(Measure::CV),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Measure::UMass => "u_mass",
            Measure::CUci => "c_uci",
            Measure::CNpmi => "c_npmi",
            Measure::CV => "c_v",
        }
    }

    /// gensim's default sliding window (`SLIDING_WINDOW_SIZES`); `None` for `u_mass`,
    /// which always counts documents.
    pub fn default_window(self) -> Option<usize> {
        match self {
            Measure::UMass => None,
            Measure::CUci | Measure::CNpmi => Some(10),
            Measure::CV => Some(110),
        }
    }
}

/// The counts of one topic's words: n × n co-occurrences (the diagonal holds each
/// word's own count, as gensim's symmetrised accumulator does) over N.
struct TopicCounts {
    n: usize,
    num_docs: f64,
    co: Vec<f64>,
}

impl TopicCounts {
    fn new(occ: &Occurrences, words: &[u32]) -> Self {
        let n = words.len();
        let mut co = vec![0.0; n * n];
        for i in 0..n {
            co[i * n + i] = occ.count(words[i]) as f64;
            for j in 0..i {
                let c = occ.co_count(words[i], words[j]) as f64;
                co[i * n + j] = c;
                co[j * n + i] = c;
            }
        }
        TopicCounts { n, num_docs: occ.num_docs as f64, co }
    }

    fn co(&self, i: usize, j: usize) -> f64 {
        self.co[i * self.n + j]
    }

    /// gensim's `log_ratio_measure` of (w_i, w_j), normalised (NPMI) or not (PMI).
    fn log_ratio(&self, i: usize, j: usize, normalize: bool) -> f64 {
        let nd = self.num_docs;
        let numerator = self.co(i, j) / nd + EPSILON;
        let denominator = self.co(i, i) / nd * (self.co(j, j) / nd);
        let pmi = (numerator / denominator).ln();
        if normalize {
            pmi / -(self.co(i, j) / nd + EPSILON).ln()
        } else {
            pmi
        }
    }

    /// gensim's `log_conditional_probability` of (w_prime = w_i, w_star = w_j).
    fn log_conditional(&self, i: usize, j: usize) -> f64 {
        let nd = self.num_docs;
        if self.co(j, j) == 0.0 {
            return 0.0;
        }
        ((self.co(i, j) / nd + EPSILON) / (self.co(j, j) / nd)).ln()
    }
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

fn cosine(a: &[f64], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    dot / (norm(a) * norm(b))
}

/// The coherence of one topic's top `words` (distinct term ids, best first; at least
/// two), all of them counted in `occ`.
pub fn topic_coherence(measure: Measure, occ: &Occurrences, words: &[u32]) -> f64 {
    let t = TopicCounts::new(occ, words);
    let n = words.len();
    match measure {
        Measure::UMass => {
            let sims: Vec<f64> = (1..n).flat_map(|i| (0..i).map(move |j| (i, j))).map(|(i, j)| t.log_conditional(i, j)).collect();
            mean(&sims)
        }
        Measure::CUci | Measure::CNpmi => {
            let normalize = measure == Measure::CNpmi;
            let sims: Vec<f64> = (0..n).flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j))).map(|(i, j)| t.log_ratio(i, j, normalize)).collect();
            mean(&sims)
        }
        Measure::CV => {
            let vectors: Vec<Vec<f64>> = (0..n).map(|i| (0..n).map(|j| t.log_ratio(i, j, true)).collect()).collect();
            let set: Vec<f64> = (0..n).map(|j| vectors.iter().map(|v| v[j]).sum()).collect();
            let sims: Vec<f64> = vectors.iter().map(|v| cosine(v, &set)).collect();
            mean(&sims)
        }
    }
}

/// Every topic's coherence and their mean (gensim's `get_coherence`: the arithmetic
/// mean of the per-topic values). Topics are computed in parallel (rayon).
pub fn model_coherence(measure: Measure, occ: &Occurrences, topics: &[Vec<u32>]) -> (Vec<f64>, f64) {
    use rayon::prelude::*;
    let per_topic: Vec<f64> = topics.par_iter().map(|words| topic_coherence(measure, occ, words)).collect();
    let avg = mean(&per_topic);
    (per_topic, avg)
}

#[cfg(test)]
#[path = "coherence_tests.rs"]
mod tests;
