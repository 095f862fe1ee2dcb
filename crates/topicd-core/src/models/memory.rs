//! How much memory a fit holds at its peak, from the input's summary and the parameters.
//!
//! Why it exists: the service admits fits by memory (`--fit-memory-mb`): a job whose
//! estimate alone exceeds the budget is refused at submit, one that fits alone but not
//! beside the running fits waits. The estimate must be known before the corpus or graph
//! is decoded, so it reads only [`CorpusStats`] / [`crate::graph::GraphStats`] and the effective
//! parameters. This module holds what every family's formula shares (the sizes it reads,
//! the decoded input, a checkpoint's cost, the peak); each family's own formula is in
//! its folder (`lda/fit_memory.rs`, ...). Every formula is derived from the buffers the family's fit
//! allocates (named term by term), plus what the job runner holds beside it: the decoded
//! input, a checkpoint's bytes while they are stored, and the encoded model at the end.
//! The process' own base (code, runtime, database pool) is not part of a fit's estimate.
//! `bench/fit_memory.py` measures the server's resident memory during real fits and
//! compares it with these figures (`bench/README.md`, "Fit memory estimates").
//!
//! Quantities the summaries lack are approximated, and each approximation is named where
//! it is used: the CSR non-zeros by the token count (an upper bound: a repeated word in
//! a document is one non-zero), labels per document and the nodes a word touches in the
//! label tree by the tree depth, and DCNT's metadata features by none.

use crate::corpus::CorpusStats;

/// Bytes of an `f64`, `u64` or `usize`.
pub(crate) const W8: u64 = 8;
/// Bytes of a `u32` or `f32`.
pub(crate) const W4: u64 = 4;
/// The largest chunk of a checkpoint the store writes at once
/// (`CHECKPOINT_CHUNK_BYTES` in the service's `store::checkpoints`).
pub(crate) const CHUNK: u64 = 32 << 20;
/// Per rayon worker: its stack as far as a fit touches it, and the allocator's
/// per-thread arena that its first allocations open.
pub(crate) const PER_THREAD: u64 = 1 << 20;

/// The numbers of a corpus every formula reads, as `u64`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sizes {
    /// Documents.
    pub(crate) d: u64,
    /// Terms (vocabulary).
    pub(crate) v: u64,
    /// Tokens.
    pub(crate) n: u64,
    /// CSR non-zeros, estimated by the tokens (an upper bound; the summary has no
    /// non-zero count).
    pub(crate) nnz: u64,
    /// Label-tree nodes below the root, inner nodes included (`LabelTree::len`).
    pub(crate) labels: u64,
    /// Levels of the label tree.
    pub(crate) depth: u64,
}

impl Sizes {
    pub(crate) fn of(c: &CorpusStats) -> Self {
        let (d, v) = (c.num_documents as u64, c.num_terms as u64);
        Sizes { d, v, n: c.num_tokens, nnz: c.num_tokens.min(d.saturating_mul(v)), labels: c.num_labels as u64, depth: c.tree_depth as u64 }
    }
}

/// The decoded corpus ([`crate::corpus::Corpus`]) and the stored blob it was decoded
/// from, which the runner holds until the corpus is built:
/// - CSR: `indptr` 8 (D + 1), `terms` and `counts` 4 each per non-zero;
/// - the blob: about 3 bytes per non-zero (two varints) and each document id;
/// - document ids: a `String` (24) and its text (about 16) per document;
/// - the lexicon: per term its string, its entry in the index and its statistics
///   (about 96 bytes);
/// - labels: per label node a name, a parent and an index entry (about 96 bytes); per
///   document its label list (24) and about `depth` ids (4 each).
pub(crate) fn corpus_bytes(s: &Sizes) -> u64 {
    let csr = W8 * (s.d + 1) + 2 * W4 * s.nnz;
    let blob = 3 * s.nnz + 24 * s.d + 32 * s.v;
    let ids = 40 * s.d;
    let lexicon = 96 * s.v;
    let labels = 96 * s.labels + (24 + W4 * s.depth) * s.d;
    csr + blob + ids + lexicon + labels
}

/// What a checkpoint of `state` bytes costs while it is handed over and stored: the
/// encoded state; when it is written in several chunks, the copy of the chunk being
/// written; and the database driver's two copies of that chunk (SQLite copies a bound
/// blob, then builds its record from it). Chunks are at most 32 MiB.
pub(crate) fn checkpoint_bytes(state: u64) -> u64 {
    let copied_chunk = if state > CHUNK { CHUNK } else { 0 };
    state + copied_chunk + 2 * state.min(CHUNK)
}

/// The peak of a fit whose steady state holds `steady` bytes, whose checkpoints are
/// `checkpoint` bytes, and whose end (the model built from the chain and encoded)
/// holds `end` bytes, on `threads` workers.
pub(crate) fn peak(steady: u64, checkpoint: u64, end: u64, threads: usize) -> u64 {
    (steady + checkpoint_bytes(checkpoint)).max(end) + PER_THREAD * threads.max(1) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::GraphStats;
    use crate::models::registry::{self, InputStats};
    use serde_json::json;

    fn corpus(documents: usize, terms: usize, tokens: u64, labels: usize, depth: usize) -> CorpusStats {
        CorpusStats { num_documents: documents, num_terms: terms, num_tokens: tokens, num_labels: labels, tree_depth: depth, ..CorpusStats::default() }
    }

    fn estimate(family: &str, stats: InputStats<'_>, params: serde_json::Value) -> u64 {
        let f = registry::lookup(family).unwrap();
        f.fit_memory(stats, &f.parse_params(&params).unwrap(), 2)
    }

    /// Every family's estimate is positive and grows with the documents and with the
    /// topics (labels for HPC, communities and nodes for HDP-aMMSB).
    #[test]
    fn every_estimate_is_positive_and_grows_with_documents_and_topics() {
        let topics_key = |name: &str| match name {
            "hdp_ammsb" => "communities",
            _ => "topics",
        };
        for f in registry::REGISTRY {
            let name = f.name();
            let at = |docs: usize, k: usize| -> u64 {
                match f {
                    registry::Family::Topics(_) => {
                        let labels = if name == "hpc" { k } else { 12 };
                        let stats = corpus(docs, 3_000, 40 * docs as u64, labels, 2);
                        let params = if name == "hpc" { json!({}) } else { json!({ topics_key(name): k }) };
                        estimate(name, InputStats::Corpus(&stats), params)
                    }
                    registry::Family::Communities(_) => {
                        let stats = GraphStats { num_nodes: docs / 10, num_edges: docs, directed: false, self_loops_dropped: 0, duplicate_edges_dropped: 0 };
                        estimate(name, InputStats::Graph(&stats), json!({ topics_key(name): k }))
                    }
                }
            };
            let base = at(2_000, 20);
            assert!(base > 0, "{name}: {base}");
            assert!(at(20_000, 20) > base, "{name}: more documents");
            assert!(at(2_000, 60) > base, "{name}: more topics");
        }
    }
}
