//! The fitted mixture as stored and served.

use crate::corpus::lexicon::EncodedDoc;
use crate::models::{DocPrediction, ModelError, PredictOptions, TableOptions, TopicModel, TopicTable};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// A fitted mixture: each topic's word rates (rows of `terms`, summing to 1) and share
/// of the documents.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MixtureModel {
    pub(super) topics: usize,
    pub(super) terms: usize,
    pub(super) rates: Vec<f64>,
    pub(super) shares: Vec<f64>,
    pub(super) iterations: usize,
    pub(super) moved_last: usize,
}

impl MixtureModel {
    /// The rates and shares of `assignment`, smoothed by `beta`.
    pub(super) fn estimate(&mut self, docs: &[Vec<(usize, f64)>], assignment: &[usize], beta: f64) {
        let (k, v) = (self.topics, self.terms);
        self.rates = vec![beta; k * v];
        self.shares = vec![0.0; k];
        for (doc, &t) in docs.iter().zip(assignment) {
            self.shares[t] += 1.0;
            for &(w, c) in doc {
                self.rates[t * v + w] += c;
            }
        }
        for row in self.rates.chunks_mut(v) {
            let total: f64 = row.iter().sum();
            row.iter_mut().for_each(|x| *x /= total);
        }
        let n = docs.len() as f64;
        self.shares.iter_mut().for_each(|s| *s = (*s + 1.0) / (n + k as f64));
    }

    /// log p(topic) + log p(words | topic) for every topic.
    fn log_scores(&self, doc: &[(usize, f64)]) -> Vec<f64> {
        (0..self.topics)
            .map(|t| self.shares[t].ln() + doc.iter().filter(|(w, _)| *w < self.terms).map(|&(w, c)| c * self.rates[t * self.terms + w].ln()).sum::<f64>())
            .collect()
    }

    /// The likeliest topic of `doc` (the first on a tie).
    pub(super) fn best_topic(&self, doc: &[(usize, f64)]) -> usize {
        let scores = self.log_scores(doc);
        (0..self.topics).fold(0, |best, t| if scores[t] > scores[best] { t } else { best })
    }
}

impl TopicModel for MixtureModel {
    fn family(&self) -> &'static str {
        "mixture"
    }
    fn num_topics(&self) -> usize {
        self.topics
    }
    fn topic_table(&self, _options: &TableOptions) -> TopicTable {
        TopicTable::flat_rows(self.topics, self.terms, self.rates.clone(), &self.shares)
    }
    fn predict(&self, docs: &[EncodedDoc], _options: &PredictOptions) -> Result<Vec<DocPrediction>, ModelError> {
        let predict = |doc: &EncodedDoc| {
            let words: Vec<(usize, f64)> = doc.terms.iter().zip(&doc.counts).map(|(&w, &c)| (w as usize, c as f64)).collect();
            let scores = self.log_scores(&words);
            let top = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let weights: Vec<f64> = scores.iter().map(|s| (s - top).exp()).collect();
            let total: f64 = weights.iter().sum();
            DocPrediction::proportions(weights.iter().map(|w| w / total).collect())
        };
        Ok(docs.iter().map(predict).collect())
    }
    fn diagnostics(&self) -> Value {
        json!({"iterations": self.iterations, "moved_last_iteration": self.moved_last})
    }
    fn encode(&self) -> Vec<u8> {
        postcard::to_allocvec(self).expect("plain data encodes")
    }
    fn memory_bytes(&self) -> usize {
        8 * (self.rates.capacity() + self.shares.capacity())
    }
}
