//! Sufficient statistics of the HDP topic model: per batch, and for the whole corpus.
//!
//! Why it exists: memoized inference keeps one summary per batch and the whole-data
//! summary as their sum; visiting a batch replaces its summary in the total
//! (total − old + new), so the global step always sees every document's latest local
//! parameters.
//! Everything the exact objective needs is additive over documents:
//!
//! - N_kw (topic-word counts, Σ r·count) and N_k;
//! - H_k = −Σ_{d,n} count · r_dnk log r_dnk, the responsibilities' entropy per topic;
//! - S_k = Σ_d E[log π_dk] for k ≤ K + 1 (the stick's statistic, [`StickStats`]);
//! - the local scalar Σ_d [Σ_k (N_dk − θ_dk) E[log π_dk] − log Γ(Σθ_d) + Σ_k log Γ(θ_dk)];
//! - for the merge pairs tracked in a pass, the same three quantities for the merged
//!   topic (see [`PairStats`]), so a merge's objective is exact.

use crate::inference::stick_posterior::StickStats;
use serde::{Deserialize, Serialize};

/// For each tracked pair (j, k), the statistics the merged topic would have if every
/// document's responsibilities and θ of j and k were added: its entropy
/// −Σ count (r_j + r_k) log(r_j + r_k), its Σ_d E[log π_d,jk] (θ_j + θ_k, the total Σθ
/// unchanged), and the change of the local scalar.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PairStats {
    /// (j, k) with j < k, in current topic indices.
    pub pairs: Vec<(usize, usize)>,
    pub entropy: Vec<f64>,
    pub sum_log_pi: Vec<f64>,
    pub local: Vec<f64>,
}

impl PairStats {
    pub fn zeros(pairs: &[(usize, usize)]) -> Self {
        let p = pairs.len();
        PairStats { pairs: pairs.to_vec(), entropy: vec![0.0; p], sum_log_pi: vec![0.0; p], local: vec![0.0; p] }
    }

    pub fn find(&self, j: usize, k: usize) -> Option<usize> {
        self.pairs.iter().position(|&p| p == (j, k))
    }

    /// Add another set of statistics over the same pairs.
    pub fn add(&mut self, other: &PairStats) {
        assert_eq!(self.pairs, other.pairs, "pair statistics over different pairs");
        for i in 0..self.pairs.len() {
            self.entropy[i] += other.entropy[i];
            self.sum_log_pi[i] += other.sum_log_pi[i];
            self.local[i] += other.local[i];
        }
    }

    /// After merging `drop` into `keep`: pairs touching either are no longer valid and
    /// are removed; indices above `drop` shift down by one.
    pub fn after_merge(&mut self, keep: usize, drop: usize) {
        let shift = |x: usize| if x > drop { x - 1 } else { x };
        let mut out = PairStats::default();
        for i in 0..self.pairs.len() {
            let (a, b) = self.pairs[i];
            if a == keep || a == drop || b == keep || b == drop {
                continue;
            }
            out.pairs.push((shift(a), shift(b)));
            out.entropy.push(self.entropy[i]);
            out.sum_log_pi.push(self.sum_log_pi[i]);
            out.local.push(self.local[i]);
        }
        *self = out;
    }
}

/// Statistics of a set of documents. Rows of `word_topic` are the words in `words`
/// (a batch's own vocabulary, or every word for the whole-data summary), K entries each.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub num_topics: usize,
    pub num_docs: f64,
    /// Word ids of the rows, increasing.
    pub words: Vec<u32>,
    /// N_kw, word-major: `word_topic[row * K + k]`.
    pub word_topic: Vec<f64>,
    /// N_k.
    pub topic_counts: Vec<f64>,
    /// H_k.
    pub entropy: Vec<f64>,
    /// S_k, K + 1 entries (the remainder last).
    pub sum_log_pi: Vec<f64>,
    /// The local scalar (module doc).
    pub local: f64,
    /// Merge pairs tracked in the pass that produced this summary.
    pub pairs: PairStats,
}

impl Summary {
    /// Zero statistics over the rows `words`.
    pub fn zeros(words: Vec<u32>, num_topics: usize) -> Self {
        let k = num_topics;
        Summary {
            num_topics: k,
            num_docs: 0.0,
            word_topic: vec![0.0; words.len() * k],
            words,
            topic_counts: vec![0.0; k],
            entropy: vec![0.0; k],
            sum_log_pi: vec![0.0; k + 1],
            local: 0.0,
            pairs: PairStats::default(),
        }
    }

    /// Zero statistics over every word 0..V (the whole-data summary).
    pub fn dense(num_terms: usize, num_topics: usize) -> Self {
        Self::zeros((0..num_terms as u32).collect(), num_topics)
    }

    /// The stick's statistics.
    pub fn stick_stats(&self) -> StickStats {
        StickStats { num_groups: self.num_docs, sum_log_pi: self.sum_log_pi.clone() }
    }

    /// `self += sign · batch` for a batch summary (rows a subset of a dense summary's);
    /// pair statistics are not carried by the total.
    pub fn add_batch(&mut self, batch: &Summary, sign: f64) {
        let k = self.num_topics;
        assert_eq!(batch.num_topics, k, "summaries over different topics");
        assert_eq!(self.words.len(), self.word_topic.len() / k.max(1), "rows");
        for (row, &w) in batch.words.iter().enumerate() {
            let dst = &mut self.word_topic[w as usize * k..(w as usize + 1) * k];
            for (d, s) in dst.iter_mut().zip(&batch.word_topic[row * k..(row + 1) * k]) {
                *d += sign * s;
            }
        }
        self.num_docs += sign * batch.num_docs;
        for (d, s) in self.topic_counts.iter_mut().zip(&batch.topic_counts) {
            *d += sign * s;
        }
        for (d, s) in self.entropy.iter_mut().zip(&batch.entropy) {
            *d += sign * s;
        }
        for (d, s) in self.sum_log_pi.iter_mut().zip(&batch.sum_log_pi) {
            *d += sign * s;
        }
        self.local += sign * batch.local;
    }

    /// Merge topic `drop` into `keep` (`keep < drop`) with the merged topic's entropy,
    /// E[log π] sum and local-scalar change (from this summary's own pair statistics, or
    /// the whole-data sums of them).
    pub fn merge(&mut self, keep: usize, drop: usize, merged_entropy: f64, merged_sum_log_pi: f64, local_change: f64) {
        let k = self.num_topics;
        assert!(keep < drop && drop < k, "merge {keep} <- {drop} of {k}");
        let rows = self.words.len();
        let mut word_topic = Vec::with_capacity(rows * (k - 1));
        for row in self.word_topic.chunks(k) {
            for (t, &x) in row.iter().enumerate() {
                if t == drop {
                    continue;
                }
                word_topic.push(if t == keep { x + row[drop] } else { x });
            }
        }
        self.word_topic = word_topic;
        self.topic_counts[keep] += self.topic_counts[drop];
        self.topic_counts.remove(drop);
        self.entropy[keep] = merged_entropy;
        self.entropy.remove(drop);
        self.sum_log_pi[keep] = merged_sum_log_pi;
        self.sum_log_pi.remove(drop);
        self.local += local_change;
        self.num_topics = k - 1;
        self.pairs.after_merge(keep, drop);
    }

    /// Merge with this summary's own tracked statistics for the pair.
    pub fn merge_tracked(&mut self, keep: usize, drop: usize) {
        let i = self.pairs.find(keep, drop).expect("merge of a tracked pair");
        let (h, s, l) = (self.pairs.entropy[i], self.pairs.sum_log_pi[i], self.pairs.local[i]);
        self.merge(keep, drop, h, s, l);
    }

    /// The topic-word counts without topic `drop` (the other statistics are dropped with
    /// it but mean nothing for a different model: use only `word_topic`/`topic_counts`).
    pub fn without_topic(&self, drop: usize) -> Self {
        let k = self.num_topics;
        let keep: Vec<usize> = (0..k).filter(|&t| t != drop).collect();
        let mut out = Summary::zeros(self.words.clone(), k - 1);
        for (dst, row) in out.word_topic.chunks_mut(k - 1).zip(self.word_topic.chunks(k)) {
            for (d, &t) in dst.iter_mut().zip(&keep) {
                *d = row[t];
            }
        }
        out.topic_counts = keep.iter().map(|&t| self.topic_counts[t]).collect();
        out
    }

    /// Topics reordered: new topic i is old topic `order[i]` (the remainder stays last).
    /// Pair statistics are dropped.
    pub fn permute(&mut self, order: &[usize]) {
        let k = self.num_topics;
        let mut word_topic = Vec::with_capacity(self.word_topic.len());
        for row in self.word_topic.chunks(k) {
            word_topic.extend(order.iter().map(|&t| row[t]));
        }
        self.word_topic = word_topic;
        self.topic_counts = order.iter().map(|&t| self.topic_counts[t]).collect();
        self.entropy = order.iter().map(|&t| self.entropy[t]).collect();
        let rem = self.sum_log_pi[k];
        self.sum_log_pi = order.iter().map(|&t| self.sum_log_pi[t]).chain(std::iter::once(rem)).collect();
        self.pairs = PairStats::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch() -> Summary {
        let mut s = Summary::zeros(vec![1, 3], 3);
        s.num_docs = 2.0;
        s.word_topic = vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        s.topic_counts = vec![5.0, 7.0, 9.0];
        s.entropy = vec![0.1, 0.2, 0.3];
        s.sum_log_pi = vec![-1.0, -2.0, -3.0, -4.0];
        s.local = 1.5;
        s.pairs =
            PairStats { pairs: vec![(0, 2), (1, 2), (0, 1)], entropy: vec![0.7, 0.8, 0.9], sum_log_pi: vec![-0.5, -0.6, -0.4], local: vec![0.01, 0.02, 0.03] };
        s
    }

    #[test]
    fn add_then_subtract_restores_the_total() {
        let mut total = Summary::dense(4, 3);
        let b = batch();
        total.add_batch(&b, 1.0);
        assert_eq!(&total.word_topic[3..6], &[1.0, 2.0, 3.0]);
        assert_eq!(&total.word_topic[9..12], &[4.0, 5.0, 6.0]);
        total.add_batch(&b, -1.0);
        assert!(total.word_topic.iter().all(|&x| x == 0.0) && total.local == 0.0 && total.num_docs == 0.0);
    }

    #[test]
    fn merge_adds_counts_takes_tracked_terms_and_remaps_pairs() {
        let mut s = batch();
        s.merge_tracked(0, 2);
        assert_eq!(s.num_topics, 2);
        assert_eq!(s.word_topic, vec![4.0, 2.0, 10.0, 5.0]);
        assert_eq!(s.topic_counts, vec![14.0, 7.0]);
        assert_eq!(s.entropy, vec![0.7, 0.2]);
        assert_eq!(s.sum_log_pi, vec![-0.5, -2.0, -4.0]);
        assert_eq!(s.local, 1.51);
        // (1, 2) and (0, 1) touch a merged topic: nothing is left.
        assert!(s.pairs.pairs.is_empty());
        let mut s = batch();
        s.pairs = PairStats { pairs: vec![(0, 1), (1, 2)], entropy: vec![1.0, 2.0], sum_log_pi: vec![0.0, 0.0], local: vec![0.0, 0.0] };
        s.num_topics = 3;
        s.merge_tracked(0, 1);
        assert_eq!(s.pairs.pairs, Vec::<(usize, usize)>::new());
    }
}
