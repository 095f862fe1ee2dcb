//! The token layout LDA samples over.
//!
//! Why it exists: the sampler walks tokens document by document (to keep each document's
//! topic counts local) but recounts topic-word counts word by word (so every word's row
//! is written by exactly one thread, deterministically). This type holds both views of
//! the same tokens: a document-major word array and a word-major index into it.

use crate::corpus::DocTermMatrix;

/// Fewest documents in a sync block, so that even blocks of very long documents hold
/// enough independent work to keep several threads busy.
pub const MIN_BLOCK_DOCUMENTS: usize = 16;

/// The corpus' tokens in document order with a per-word index.
#[derive(Debug, Clone)]
pub struct Tokens {
    /// Token offsets of each document: document d owns `doc_ptr[d]..doc_ptr[d + 1]`.
    pub doc_ptr: Vec<usize>,
    /// The word of each token; within a document in increasing word order (the partitioned
    /// schedule relies on it to find a document's tokens of a word block).
    pub words: Vec<u32>,
    /// Offsets into `word_tokens` for each word.
    pub word_ptr: Vec<usize>,
    /// Token positions grouped by word.
    pub word_tokens: Vec<u32>,
    pub num_terms: usize,
    /// Documents grouped into blocks of about `sync_tokens` tokens (a document is never
    /// split); the sparse sampler synchronises counts between blocks.
    pub blocks: Vec<Vec<u32>>,
}

impl Tokens {
    /// Expand a document-term matrix into tokens (each term repeated by its count, terms in
    /// the row's increasing order).
    pub fn from_counts(counts: &DocTermMatrix, num_terms: usize) -> Self {
        let num_docs = counts.num_rows();
        let mut doc_ptr = Vec::with_capacity(num_docs + 1);
        let mut words = Vec::with_capacity(counts.total_tokens() as usize);
        doc_ptr.push(0);
        for d in 0..num_docs {
            let (terms, ns) = counts.row(d);
            for (&t, &n) in terms.iter().zip(ns) {
                words.extend(std::iter::repeat_n(t, n as usize));
            }
            doc_ptr.push(words.len());
        }
        assert!(words.len() < i32::MAX as usize, "corpus too large: more than 2^31 tokens");
        let mut word_ptr = vec![0usize; num_terms + 1];
        for &w in &words {
            word_ptr[w as usize + 1] += 1;
        }
        for w in 0..num_terms {
            word_ptr[w + 1] += word_ptr[w];
        }
        let mut fill = word_ptr.clone();
        let mut word_tokens = vec![0u32; words.len()];
        for (i, &w) in words.iter().enumerate() {
            word_tokens[fill[w as usize]] = i as u32;
            fill[w as usize] += 1;
        }
        let blocks = vec![(0..num_docs as u32).collect()];
        Tokens { doc_ptr, words, word_ptr, word_tokens, num_terms, blocks }
    }

    /// Regroup documents into blocks of at least `sync_tokens` tokens and
    /// [`MIN_BLOCK_DOCUMENTS`] documents (the last may be smaller), longest documents first, so each block holds documents of similar
    /// length and its work divides evenly among threads. Depends on the corpus only,
    /// never on the thread count; ties keep document order.
    pub fn set_blocks(&mut self, sync_tokens: usize) {
        self.set_blocks_with(sync_tokens, MIN_BLOCK_DOCUMENTS);
    }

    /// [`Tokens::set_blocks`] with an explicit minimum of documents per block.
    pub fn set_blocks_with(&mut self, sync_tokens: usize, min_documents: usize) {
        self.blocks = sync_blocks(&self.doc_ptr, sync_tokens, min_documents);
    }

    pub fn num_docs(&self) -> usize {
        self.doc_ptr.len() - 1
    }

    pub fn num_tokens(&self) -> usize {
        self.words.len()
    }

    /// Token positions of word `w`.
    pub fn positions_of(&self, w: usize) -> &[u32] {
        &self.word_tokens[self.word_ptr[w]..self.word_ptr[w + 1]]
    }
}

/// The sparse sampler's sync blocks of the documents whose token offsets are `doc_ptr`
/// ([`Tokens::set_blocks_with`]): from the lengths alone, so a distributed fit's rank 0
/// computes the corpus' blocks for every rank.
pub fn sync_blocks(doc_ptr: &[usize], sync_tokens: usize, min_documents: usize) -> Vec<Vec<u32>> {
    let len = |d: usize| doc_ptr[d + 1] - doc_ptr[d];
    let mut order: Vec<usize> = (0..doc_ptr.len() - 1).collect();
    order.sort_by(|&a, &b| len(b).cmp(&len(a)).then(a.cmp(&b)));
    let mut blocks = Vec::new();
    let mut current = Vec::new();
    let mut tokens = 0;
    for d in order {
        current.push(d as u32);
        tokens += len(d);
        if tokens >= sync_tokens.max(1) && current.len() >= min_documents {
            blocks.push(std::mem::take(&mut current));
            tokens = 0;
        }
    }
    if !current.is_empty() || blocks.is_empty() {
        blocks.push(current);
    }
    blocks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_views_agree() {
        let m = DocTermMatrix::from_rows(vec![vec![(0, 2), (2, 1)], vec![(1, 1), (2, 3)]]);
        let t = Tokens::from_counts(&m, 3);
        assert_eq!(t.doc_ptr, vec![0, 3, 7]);
        assert_eq!(t.words, vec![0, 0, 2, 1, 2, 2, 2]);
        assert_eq!(t.positions_of(2), &[2, 4, 5, 6]);
        let mut t = t;
        t.set_blocks(3);
        assert_eq!(t.blocks, vec![vec![1, 0]], "longest first, at least MIN_BLOCK_DOCUMENTS per block");
        t.set_blocks_with(3, 1);
        assert_eq!(t.blocks, vec![vec![1], vec![0]], "longest first, one block each");
        t.set_blocks(100);
        assert_eq!(t.blocks, vec![vec![1, 0]]);
        for w in 0..3 {
            assert!(t.positions_of(w).iter().all(|&p| t.words[p as usize] == w as u32));
        }
    }
}
