//! FREX: the harmonic mean of a word's within-topic ECDF ranks in exclusivity and
//! frequency (paper 003, section 2.3; shared MODELS.md §2):
//!
//! FREX_fk = ( w / ECDF_k(φ_fk) + (1 − w) / ECDF_k(β_fk) )⁻¹,
//!
//! with w the weight on exclusivity (default 0.5) and ECDF_k taken over the words of
//! topic k. This follows the HPC paper's convention (w weighs exclusivity); R's stm
//! `calcfrex` instead weighs frequency with w.

use crate::models::TopicTable;

/// What a topic's words are ordered by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rank {
    Frequency,
    Exclusivity,
    Frex,
}

impl Rank {
    pub fn parse(s: &str) -> Option<Rank> {
        match s {
            "frequency" => Some(Rank::Frequency),
            "exclusivity" => Some(Rank::Exclusivity),
            "frex" => Some(Rank::Frex),
            _ => None,
        }
    }
}

/// One word's scores in one topic.
#[derive(Debug, Clone, PartialEq)]
pub struct WordScore {
    pub term: u32,
    pub frequency: f64,
    pub exclusivity: f64,
    pub frex: f64,
}

/// ECDF of each value within `values`: the fraction of values ≤ it.
pub fn ecdf(values: &[f64]) -> Vec<f64> {
    let mut sorted: Vec<f64> = values.to_vec();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let n = values.len() as f64;
    values.iter().map(|&x| sorted.partition_point(|&y| y <= x) as f64 / n).collect()
}

/// FREX of one word from its two ECDF values.
#[inline]
pub fn frex_score(weight: f64, ecdf_exclusivity: f64, ecdf_frequency: f64) -> f64 {
    1.0 / (weight / ecdf_exclusivity + (1.0 - weight) / ecdf_frequency)
}

/// The top `n` words of `topic` under `rank` (all words when `n` is None). Ties are
/// broken by term id so the order is reproducible.
pub fn rank_topic(table: &TopicTable, topic: usize, rank: Rank, weight: f64, n: Option<usize>) -> Vec<WordScore> {
    let (freq, excl) = (table.frequency.row(topic), table.exclusivity.row(topic));
    let (ef, ee) = (ecdf(&freq.to_vec()), ecdf(&excl.to_vec()));
    rank_with_ecdfs(table, topic, rank, weight, n, &ef, &ee)
}

/// [`rank_topic`] given the topic's frequency and exclusivity ECDFs.
fn rank_with_ecdfs(table: &TopicTable, topic: usize, rank: Rank, weight: f64, n: Option<usize>, ef: &[f64], ee: &[f64]) -> Vec<WordScore> {
    let (freq, excl) = (table.frequency.row(topic), table.exclusivity.row(topic));
    let score = |f: usize| WordScore { term: f as u32, frequency: freq[f], exclusivity: excl[f], frex: frex_score(weight, ee[f], ef[f]) };
    let key = |s: &WordScore| match rank {
        Rank::Frequency => s.frequency,
        Rank::Exclusivity => s.exclusivity,
        Rank::Frex => s.frex,
    };
    let cmp = |a: &WordScore, b: &WordScore| key(b).total_cmp(&key(a)).then(a.term.cmp(&b.term));
    let scores: Vec<WordScore> = (0..freq.len()).map(score).collect();
    match n {
        Some(n) => super::select::first_n_by(scores, n, cmp),
        None => {
            let mut all = scores;
            all.sort_by(cmp);
            all
        }
    }
}

/// The term ids of `rank_topic(table, topic, rank, weight, Some(n))`, in its order, without
/// its ECDFs when the rank needs none (frequency, exclusivity: one partial selection).
pub fn top_terms(table: &TopicTable, topic: usize, rank: Rank, weight: f64, n: usize) -> Vec<u32> {
    let row = match rank {
        Rank::Frex => return rank_topic(table, topic, rank, weight, Some(n)).iter().map(|s| s.term).collect(),
        Rank::Frequency => table.frequency.row(topic),
        Rank::Exclusivity => table.exclusivity.row(topic),
    };
    let cmp = |a: &u32, b: &u32| row[*b as usize].total_cmp(&row[*a as usize]).then(a.cmp(b));
    super::select::first_n_by((0..row.len() as u32).collect(), n, cmp)
}

/// A topic table with every topic's frequency and exclusivity ECDFs computed once, so
/// that ranking a topic by FREX at any weight is one pass and a partial selection, not
/// two sorts of the vocabulary. A served model keeps one per comparison
/// (`api::model_cache`): the load test found the two sorts were 70 % of a topic read.
pub struct RankedTable {
    pub table: TopicTable,
    ecdf_frequency: Vec<Vec<f64>>,
    ecdf_exclusivity: Vec<Vec<f64>>,
}

impl RankedTable {
    /// The ECDFs of every topic, in parallel on the current rayon pool.
    pub fn new(table: TopicTable) -> RankedTable {
        use rayon::prelude::*;
        let k = table.topics.len();
        let (ecdf_frequency, ecdf_exclusivity) =
            (0..k).into_par_iter().map(|t| (ecdf(&table.frequency.row(t).to_vec()), ecdf(&table.exclusivity.row(t).to_vec()))).unzip();
        RankedTable { table, ecdf_frequency, ecdf_exclusivity }
    }

    /// Bytes the table and its ECDFs hold on the heap.
    pub fn memory_bytes(&self) -> usize {
        use crate::heap_size::{nested, string, vec};
        let array = |a: &ndarray::Array2<f64>| a.len() * std::mem::size_of::<f64>();
        let topics = nested(&self.table.topics, |t| t.label.as_deref().map_or(0, string) + vec(&t.children));
        array(&self.table.frequency) + array(&self.table.exclusivity) + topics + nested(&self.ecdf_frequency, vec) + nested(&self.ecdf_exclusivity, vec)
    }

    /// Exactly [`rank_topic`] on the table.
    pub fn rank(&self, topic: usize, rank: Rank, weight: f64, n: Option<usize>) -> Vec<WordScore> {
        rank_with_ecdfs(&self.table, topic, rank, weight, n, &self.ecdf_frequency[topic], &self.ecdf_exclusivity[topic])
    }

    /// Exactly [`top_terms`] on the table.
    pub fn top_terms(&self, topic: usize, rank: Rank, weight: f64, n: usize) -> Vec<u32> {
        match rank {
            Rank::Frex => self.rank(topic, rank, weight, Some(n)).iter().map(|s| s.term).collect(),
            _ => top_terms(&self.table, topic, rank, weight, n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::TopicInfo;
    use ndarray::array;

    #[test]
    fn ecdf_counts_ties_as_less_or_equal() {
        assert_eq!(ecdf(&[3.0, 1.0, 2.0, 2.0]), vec![1.0, 0.25, 0.75, 0.75]);
    }

    #[test]
    fn frex_is_the_weighted_harmonic_mean_of_ranks() {
        assert!((frex_score(0.5, 1.0, 0.5) - 2.0 / 3.0).abs() < 1e-12);
        assert!((frex_score(1.0, 0.2, 0.9) - 0.2).abs() < 1e-12);
        assert!((frex_score(0.0, 0.2, 0.9) - 0.9).abs() < 1e-12);
    }

    #[test]
    fn frequent_but_shared_words_lose_to_frequent_exclusive_ones() {
        // Word 0 is the most frequent in topic 0 but shared equally; word 1 is nearly as
        // frequent and exclusive; word 2 is exclusive but rare.
        let table = TopicTable {
            frequency: array![[0.5, 0.4, 0.01, 0.09], [0.5, 0.01, 0.3, 0.19]],
            exclusivity: array![[0.5, 0.97, 0.9, 0.3], [0.5, 0.03, 0.1, 0.7]],
            topics: vec![TopicInfo { label: None, parent: None, children: vec![], proportion: 0.5 }; 2],
        };
        let by_freq: Vec<u32> = rank_topic(&table, 0, Rank::Frequency, 0.5, Some(2)).iter().map(|s| s.term).collect();
        assert_eq!(by_freq, vec![0, 1]);
        let by_frex: Vec<u32> = rank_topic(&table, 0, Rank::Frex, 0.5, None).iter().map(|s| s.term).collect();
        assert_eq!(by_frex[0], 1);
        let by_excl: Vec<u32> = rank_topic(&table, 0, Rank::Exclusivity, 0.5, Some(1)).iter().map(|s| s.term).collect();
        assert_eq!(by_excl, vec![1]);
        for rank in [Rank::Frequency, Rank::Exclusivity, Rank::Frex] {
            for n in 1..=5 {
                let full: Vec<u32> = rank_topic(&table, 1, rank, 0.3, Some(n)).iter().map(|s| s.term).collect();
                assert_eq!(top_terms(&table, 1, rank, 0.3, n), full, "{rank:?} {n}");
            }
        }
        // The table with its ECDFs kept ranks exactly as the per-call ranking does.
        let kept = RankedTable::new(table.clone());
        for (topic, rank, weight, n) in
            [(0, Rank::Frex, 0.5, None), (1, Rank::Frex, 0.9, Some(2)), (0, Rank::Frequency, 0.1, Some(3)), (1, Rank::Exclusivity, 0.5, None)]
        {
            assert_eq!(kept.rank(topic, rank, weight, n), rank_topic(&table, topic, rank, weight, n), "{topic} {rank:?} {weight} {n:?}");
            assert_eq!(kept.top_terms(topic, rank, weight, 2), top_terms(&table, topic, rank, weight, 2));
        }
    }
}
