//! Topic stability: does a served topic recur in every chain of its fit?
//!
//! Why it exists: chains of a topic model started apart may settle in different modes,
//! and pooling them averages different topics. A multi-chain fit matches every later
//! chain's topics to chain 0's (the permutation minimising the summed L1 distance of
//! their word distributions, [`super::chains::align_topics`]); the distances of those
//! matches, kept in the model, say per topic how many of the other chains found it and
//! how closely.
//!
//! Definitions (served as `stability` on a topic, and documented in the API):
//! - the similarity of two matched topics is 1 − L1/2, one minus the total variation
//!   distance between their word distributions: 1 for the same distribution, 0 for
//!   distributions with no word in common;
//! - a chain *matches* a topic when its matched topic's similarity is at least
//!   [`MATCH_SIMILARITY`] (L1 at most 1: the two distributions share more than half
//!   their mass; the console's earlier "unmatched across chains" caution used the same
//!   line);
//! - `similarity` is the mean similarity over the other chains, `matched` how many of
//!   them match, `chains` the fit's chains.
//!
//! A one-chain model has no stability (`None`, served as null), never 1: nothing was
//! compared.

use super::chains::Alignment;
use serde::Serialize;

/// The least similarity (1 − L1/2) at which another chain's matched topic counts as
/// the same topic.
pub const MATCH_SIMILARITY: f64 = 0.5;

/// One served topic's stability across the chains of its fit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TopicStability {
    /// The fit's chains (at least 2).
    pub chains: usize,
    /// How many of the other `chains − 1` chains hold a topic matching this one.
    pub matched: usize,
    /// Mean over the other chains of 1 − L1/2 between this topic's word distribution
    /// in the reference chain and its match's.
    pub similarity: f64,
}

impl TopicStability {
    /// Whether every other chain holds a matching topic.
    pub fn in_every_chain(&self) -> bool {
        self.matched + 1 == self.chains
    }
}

/// Each of `topics` topics' stability from the alignments of the other chains to the
/// reference chain (`alignments[c].distances[k]`: the L1 distance of that chain's match
/// to topic k);
/// `None` with no alignment (one chain), or alignments that do not cover the topics.
pub fn from_alignments(alignments: &[Alignment], topics: usize) -> Option<Vec<TopicStability>> {
    if alignments.is_empty() || alignments.iter().any(|a| a.distances.len() != topics) {
        return None;
    }
    let others = alignments.len();
    Some(
        (0..topics)
            .map(|k| {
                let similarities = alignments.iter().map(|a| similarity(a.distances[k]));
                let matched = alignments.iter().filter(|a| is_match(a.distances[k])).count();
                TopicStability { chains: others + 1, matched, similarity: similarities.sum::<f64>() / others as f64 }
            })
            .collect(),
    )
}

/// Whether a matched topic at L1 distance `l1` is the same topic (similarity at least
/// [`MATCH_SIMILARITY`]).
pub fn is_match(l1: f64) -> bool {
    similarity(l1) >= MATCH_SIMILARITY
}

/// 1 − L1/2, clamped to [0, 1] against rounding.
pub fn similarity(l1: f64) -> f64 {
    (1.0 - l1 / 2.0).clamp(0.0, 1.0)
}

/// The mean similarity over topics (`None`: no stability).
pub fn mean_similarity(stability: &[TopicStability]) -> Option<f64> {
    (!stability.is_empty()).then(|| stability.iter().map(|s| s.similarity).sum::<f64>() / stability.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alignment(distances: Vec<f64>) -> Alignment {
        Alignment { permutation: (0..distances.len()).collect(), distances }
    }

    /// Three chains: topic 0 found by both others (L1 0.2 and 0.4), topic 1 by one of
    /// them (L1 0.6 and 1.6), topic 2 by none (L1 1.2 and 2.0, the latter disjoint).
    #[test]
    fn stability_counts_matches_and_averages_similarity() {
        let s = from_alignments(&[alignment(vec![0.2, 0.6, 1.2]), alignment(vec![0.4, 1.6, 2.0])], 3).unwrap();
        assert_eq!(s.iter().map(|t| (t.chains, t.matched)).collect::<Vec<_>>(), [(3, 2), (3, 1), (3, 0)]);
        let expected = [(0.9 + 0.8) / 2.0, (0.7 + 0.2) / 2.0, (0.4 + 0.0) / 2.0];
        for (t, e) in s.iter().zip(expected) {
            assert!((t.similarity - e).abs() < 1e-12, "{} against {e}", t.similarity);
        }
        assert_eq!(s.iter().map(TopicStability::in_every_chain).collect::<Vec<_>>(), [true, false, false]);
        assert!((mean_similarity(&s).unwrap() - expected.iter().sum::<f64>() / 3.0).abs() < 1e-12);
    }

    /// The line is inclusive (L1 exactly 1 matches) and a one-chain fit has none.
    #[test]
    fn the_match_line_is_inclusive_and_one_chain_is_unknown() {
        let s = from_alignments(&[alignment(vec![1.0, 1.0 + 1e-9])], 2).unwrap();
        assert_eq!((s[0].matched, s[1].matched), (1, 0));
        assert_eq!(from_alignments(&[], 4), None);
        assert_eq!(from_alignments(&[alignment(vec![0.1])], 2), None, "alignments that do not cover the topics");
        assert_eq!(mean_similarity(&[]), None);
    }
}
