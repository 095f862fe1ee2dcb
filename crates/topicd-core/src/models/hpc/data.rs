//! The data HPC's sampler reads, in the shapes its two blocks need.
//!
//! Why it exists: the rate block runs per word and needs the documents holding that
//! word; the affinity block runs per document and needs its words and active labels.
//! Both are built once from a corpus (or its training split) as compressed rows, so a
//! scan never allocates per word or per document to find its data.
//!
//! Nodes: 0 is the implicit corpus root, label `k` of the corpus is node `k + 1`. For
//! PCM the tree is flat (K nodes under the root) and every topic is active in every
//! document.

use super::variant::Supervision;
use serde::{Deserialize, Serialize};

/// Compressed rows: row `r` is `values[ptr[r]..ptr[r + 1]]`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Rows<T> {
    pub ptr: Vec<usize>,
    pub values: Vec<T>,
}

impl<T: Clone> Rows<T> {
    pub fn from_rows(rows: impl IntoIterator<Item = Vec<T>>) -> Self {
        let mut out = Rows { ptr: vec![0], values: Vec::new() };
        for r in rows {
            out.values.extend(r);
            out.ptr.push(out.values.len());
        }
        out
    }

    pub fn len(&self) -> usize {
        self.ptr.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn row(&self, r: usize) -> &[T] {
        &self.values[self.ptr[r]..self.ptr[r + 1]]
    }

    pub fn range(&self, r: usize) -> std::ops::Range<usize> {
        self.ptr[r]..self.ptr[r + 1]
    }

    /// Rows `rows` as rows of their own.
    pub fn slice(&self, rows: std::ops::Range<usize>) -> Self {
        let start = self.ptr[rows.start];
        Rows { ptr: self.ptr[rows.start..=rows.end].iter().map(|p| p - start).collect(), values: self.values[start..self.ptr[rows.end]].to_vec() }
    }
}

/// Everything the sampler reads and never changes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HpcData {
    /// Parent of every node (`None` only for node 0).
    pub parent: Vec<Option<usize>>,
    /// Children of every node.
    pub children: Vec<Vec<usize>>,
    /// Nodes with at least one child (each has a τ² per word).
    pub parent_nodes: Vec<usize>,
    /// Whether labels are observed (HPC) or every topic is active (PCM).
    pub supervision: Supervision,
    /// Each document's active nodes (sorted).
    pub active: Rows<u32>,
    /// l_d = L_d / mean L.
    pub lengths: Vec<f64>,
    /// Each document's (word, count).
    pub doc_words: Rows<(u32, f64)>,
    /// Each word's (document, count).
    pub word_docs: Rows<(u32, f64)>,
    pub num_tokens: f64,
    /// Σ log w_fd! over every count: the constant of the Poisson log-likelihood,
    /// computed once instead of per scan.
    pub log_count_factorials: f64,
    /// PCM's seeded topics: each word's (node, pseudo-count) pairs, c_fk μ_fk added to
    /// its rates' log conditional ([`HpcData::with_seeds`]); empty without seeds.
    #[serde(default)]
    pub seed_counts: Vec<Vec<(u32, f64)>>,
}

impl HpcData {
    /// Build from documents' sparse counts and active nodes. `parent` is over nodes.
    pub fn new(parent: Vec<Option<usize>>, supervision: Supervision, active: Vec<Vec<u32>>, counts: Vec<Vec<(u32, u32)>>, num_terms: usize) -> Self {
        let n = parent.len();
        let mut children = vec![Vec::new(); n];
        for (c, p) in parent.iter().enumerate() {
            if let Some(p) = p {
                children[*p].push(c);
            }
        }
        let parent_nodes = (0..n).filter(|&p| !children[p].is_empty()).collect();
        let raw_lengths: Vec<f64> = counts.iter().map(|r| r.iter().map(|&(_, c)| c as f64).sum()).collect();
        let num_tokens: f64 = raw_lengths.iter().sum();
        let mean = num_tokens / raw_lengths.len().max(1) as f64;
        let lengths = raw_lengths.iter().map(|l| l / mean).collect();
        let mut per_word: Vec<Vec<(u32, f64)>> = vec![Vec::new(); num_terms];
        for (d, row) in counts.iter().enumerate() {
            for &(w, c) in row {
                per_word[w as usize].push((d as u32, c as f64));
            }
        }
        let log_count_factorials = counts.iter().flatten().map(|&(_, c)| statrs::function::gamma::ln_gamma(c as f64 + 1.0)).sum();
        let doc_words = Rows::from_rows(counts.into_iter().map(|r| r.into_iter().map(|(w, c)| (w, c as f64)).collect()));
        HpcData {
            parent,
            children,
            parent_nodes,
            supervision,
            active: Rows::from_rows(active),
            lengths,
            doc_words,
            word_docs: Rows::from_rows(per_word),
            num_tokens,
            log_count_factorials,
            seed_counts: Vec::new(),
        }
    }

    /// The data with the seeds' pseudo-counts ([`crate::models::seeds`]): seed word w
    /// of seeded topic k carries c = ⌈strength · n_w⌉ (n_w: its count in these
    /// documents), which the rate block adds to μ_w's log conditional as c μ_wk (a
    /// Poisson likelihood of c tokens of w in topic k with no exposure), and the start
    /// puts the word's counts in its seeded topics.
    pub fn with_seeds(mut self, seeds: &crate::models::seeds::ResolvedSeeds, strength: f64) -> Self {
        if seeds.words.is_empty() {
            return self;
        }
        let word_counts: Vec<u64> = (0..self.num_terms()).map(|f| self.word_docs.row(f).iter().map(|&(_, c)| c as u64).sum()).collect();
        let prior = crate::models::seeds::SeedPrior::new(seeds, strength, &word_counts, self.num_topics());
        self.seed_counts = vec![Vec::new(); self.num_terms()];
        for &(w, k, c) in prior.entries() {
            self.seed_counts[w as usize].push((k + 1, c as f64));
        }
        self
    }

    /// Word f's seeded (node, pseudo-count) pairs (none without seeds).
    pub fn seed_counts(&self, f: usize) -> &[(u32, f64)] {
        self.seed_counts.get(f).map_or(&[], Vec::as_slice)
    }

    pub fn num_nodes(&self) -> usize {
        self.parent.len()
    }

    /// Labels (or latent topics): every node but the root.
    pub fn num_topics(&self) -> usize {
        self.parent.len() - 1
    }

    pub fn num_docs(&self) -> usize {
        self.lengths.len()
    }

    pub fn num_terms(&self) -> usize {
        self.word_docs.len()
    }

    /// The node pairs a word's Hessian can couple: the tree edges plus every pair of
    /// labels active together in a document holding the word.
    pub fn word_hessian_edges(&self, word: usize) -> Vec<(usize, usize)> {
        let mut edges: Vec<(usize, usize)> = self.parent.iter().enumerate().filter_map(|(c, p)| p.map(|p| (c, p))).collect();
        for &(d, _) in self.word_docs.row(word) {
            let act = self.active.row(d as usize);
            for (i, &a) in act.iter().enumerate() {
                for &b in &act[i + 1..] {
                    edges.push((a as usize, b as usize));
                }
            }
        }
        edges
    }
}

/// Drop every label that is an ancestor of another label of the same document (the
/// paper's treatment of Reuters: a document labelled to a child and its parent keeps
/// only the child). `parent` is over labels (`None` = top level).
pub fn strip_redundant_ancestors(labels: &[u32], parent: &[Option<u32>]) -> Vec<u32> {
    let mut redundant = std::collections::HashSet::new();
    for &l in labels {
        let mut p = parent[l as usize];
        while let Some(a) = p {
            redundant.insert(a);
            p = parent[a as usize];
        }
    }
    labels.iter().copied().filter(|l| !redundant.contains(l)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ancestors_of_other_labels_are_stripped() {
        // 0 → 1 → 2, and 3 at the top level.
        let parent = [None, Some(0), Some(1), None];
        assert_eq!(strip_redundant_ancestors(&[0, 2, 3], &parent), vec![2, 3]);
        assert_eq!(strip_redundant_ancestors(&[0, 1], &parent), vec![1]);
        assert_eq!(strip_redundant_ancestors(&[0, 3], &parent), vec![0, 3]);
    }

    #[test]
    fn word_and_document_views_agree() {
        let data = HpcData::new(
            vec![None, Some(0), Some(0), Some(1)],
            Supervision::Labelled,
            vec![vec![1, 2], vec![3], vec![2, 3]],
            vec![vec![(0, 2), (1, 1)], vec![(1, 4)], vec![(0, 1), (2, 3)]],
            3,
        );
        assert_eq!(data.word_docs.row(1), &[(0, 1.0), (1, 4.0)]);
        assert_eq!(data.parent_nodes, vec![0, 1]);
        let mean = 11.0 / 3.0;
        assert!((data.lengths[1] - 4.0 / mean).abs() < 1e-12);
        // Word 0 is in documents 0 (labels 1, 2) and 2 (labels 2, 3).
        let edges = data.word_hessian_edges(0);
        assert!(edges.contains(&(1, 2)) && edges.contains(&(2, 3)));
        assert!(!edges.contains(&(1, 3)));
    }
}
