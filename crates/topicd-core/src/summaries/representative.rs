//! Representative documents of a topic: the documents with the highest share of it.
//!
//! Why it exists: people read a topic through its words and then through the documents
//! that are most about it (stm's `findThoughts`, LDAvis users' first request). Given
//! every document's topic proportions (the fit's posterior means, or proportions
//! folded in), this ranks them for one topic. Pure numerics; the API caches the
//! proportions per loaded model and adds ids and text.

use crate::models::DocumentProportions;

/// Where a model's document proportions came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProportionSource {
    /// The fit's posterior means over the training documents.
    Fit,
    /// Folded in after the fit (`predict`) for every corpus document: the model keeps no
    /// per-document proportions.
    FoldIn,
}

impl ProportionSource {
    pub fn name(self) -> &'static str {
        match self {
            ProportionSource::Fit => "fit",
            ProportionSource::FoldIn => "fold_in",
        }
    }
}

/// Documents' topic proportions, ready to rank.
#[derive(Debug, Clone)]
pub struct DocumentTopics {
    pub source: ProportionSource,
    pub proportions: DocumentProportions,
    pub num_topics: usize,
}

impl DocumentTopics {
    /// Row `r`'s proportions.
    pub fn row(&self, r: usize) -> &[f64] {
        &self.proportions.rows[r * self.num_topics..(r + 1) * self.num_topics]
    }

    /// The `n` rows with the highest share of `topic`, highest first (ties: the lower
    /// corpus index first), as (row, share).
    pub fn top(&self, topic: usize, n: usize) -> Vec<(usize, f64)> {
        let k = self.num_topics;
        let docs = &self.proportions.documents;
        let ranked: Vec<(usize, f64)> = (0..docs.len()).map(|r| (r, self.proportions.rows[r * k + topic])).collect();
        let by_share = |a: &(usize, f64), b: &(usize, f64)| b.1.total_cmp(&a.1).then(docs[a.0].cmp(&docs[b.0]));
        super::select::first_n_by(ranked, n, by_share)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topics(rows: Vec<f64>, documents: Vec<usize>) -> DocumentTopics {
        DocumentTopics { source: ProportionSource::Fit, proportions: DocumentProportions { documents, rows }, num_topics: 2 }
    }

    #[test]
    fn the_top_documents_are_the_highest_shares_in_order() {
        // Shares of topic 1: 0.1, 0.9, 0.5, 0.9, 0.3 (documents 10, 8, 6, 4, 2).
        let t = topics(vec![0.9, 0.1, 0.1, 0.9, 0.5, 0.5, 0.1, 0.9, 0.7, 0.3], vec![10, 8, 6, 4, 2]);
        // The tie at 0.9 goes to the lower corpus index (document 4, row 3).
        assert_eq!(t.top(1, 3), vec![(3, 0.9), (1, 0.9), (2, 0.5)]);
        assert_eq!(t.top(0, 10).iter().map(|r| r.0).collect::<Vec<_>>(), vec![0, 4, 2, 3, 1]);
        assert_eq!(t.top(0, 0), vec![]);
        assert_eq!(t.row(2), &[0.5, 0.5]);
    }
}
