//! How much memory a fit holds at its peak, from the input's summary and the parameters.
//!
//! Why it exists: the service admits fits by memory (`--fit-memory-mb`): a job whose
//! estimate alone exceeds the budget is refused at submit, one that fits alone but not
//! beside the running fits waits. The estimate must be known before the corpus or graph
//! is decoded, so it reads only [`CorpusStats`] / [`GraphStats`] and the effective
//! parameters. Every formula here is derived from the buffers the family's fit
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

use super::hpc::rates::Curvature;
use crate::corpus::CorpusStats;
use crate::graph::GraphStats;

/// Bytes of an `f64`, `u64` or `usize`.
const W8: u64 = 8;
/// Bytes of a `u32` or `f32`.
const W4: u64 = 4;
/// The largest chunk of a checkpoint the store writes at once
/// (`CHECKPOINT_CHUNK_BYTES` in the service's `store::checkpoints`).
const CHUNK: u64 = 32 << 20;
/// Per rayon worker: its stack as far as a fit touches it, and the allocator's
/// per-thread arena that its first allocations open.
const PER_THREAD: u64 = 1 << 20;

/// The numbers of a corpus every formula reads, as `u64`.
#[derive(Debug, Clone, Copy)]
struct Sizes {
    /// Documents.
    d: u64,
    /// Terms (vocabulary).
    v: u64,
    /// Tokens.
    n: u64,
    /// CSR non-zeros, estimated by the tokens (an upper bound; the summary has no
    /// non-zero count).
    nnz: u64,
    /// Label-tree nodes below the root, inner nodes included (`LabelTree::len`).
    labels: u64,
    /// Levels of the label tree.
    depth: u64,
}

impl Sizes {
    fn of(c: &CorpusStats) -> Self {
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
fn corpus_bytes(s: &Sizes) -> u64 {
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
fn checkpoint_bytes(state: u64) -> u64 {
    let copied_chunk = if state > CHUNK { CHUNK } else { 0 };
    state + copied_chunk + 2 * state.min(CHUNK)
}

/// The peak of a fit whose steady state holds `steady` bytes, whose checkpoints are
/// `checkpoint` bytes, and whose end (the model built from the chain and encoded)
/// holds `end` bytes, on `threads` workers.
fn peak(steady: u64, checkpoint: u64, end: u64, threads: usize) -> u64 {
    (steady + checkpoint_bytes(checkpoint)).max(end) + PER_THREAD * threads.max(1) as u64
}

/// LDA ([`super::lda`]): collapsed Gibbs sampling over every token.
pub fn lda(c: &CorpusStats, p: &super::lda::LdaParams, threads: usize) -> u64 {
    let s = Sizes::of(c);
    let k = p.topics as u64;
    // The training documents' counts are copied when some documents are held out.
    let training = if p.test_fraction > 0.0 { W8 * (s.d + 1) + 2 * W4 * s.nnz } else { 0 };
    // `Tokens`: each token's word and its position in the word-major index (4 + 4),
    // `doc_ptr` (8 per document), the sync blocks (4 per document), `word_ptr` (8 per term).
    let tokens = 2 * W4 * s.n + (W8 + W4) * s.d + W8 * s.v;
    // `GibbsState`: z (4 per token) and the word-topic counts n_kw (V × K u32).
    let state = W4 * s.n + W4 * s.v * k;
    // The sweep schedule: the dense kernel (K ≤ 256) keeps document-topic counts padded
    // to 16 topics (D × K̃ u32) and the partition's cell offsets (8 per document and
    // block, at most 17); the sparse kernel a float snapshot of φ (V × K f32) and its
    // row totals.
    let sweeps = if super::lda::sampler::uses_dense_kernel(p.topics) { W4 * s.d * k.div_ceil(16) * 16 + W8 * s.d * 17 } else { W4 * s.v * k + W8 * s.v };
    // Posterior sums: φ (V × K f64) and θ (D × K f64).
    let sums = W8 * (s.v + s.d) * k;
    // A kept sample handed to the runner: the non-zero (word, topic) counts, at most one
    // per token, 6 bytes each.
    let sample = 6 * s.n.min(s.v * k);
    let steady = training + tokens + state + sweeps + sums + sample;
    // A checkpoint: z as varints (1 byte below 128 topics, else 2) and the sums.
    let z_bytes = if k <= 128 { 1 } else { 2 };
    let checkpoint = z_bytes * s.n + sums;
    // The end: the model (φ transposed and θ, f64) is built while the sums and state
    // live, then encoded (the same again) once the chain is gone.
    let model = W8 * (s.v + s.d) * k;
    let end = (training + tokens + state + sums + model).max(training + tokens + 2 * model);
    corpus_bytes(&s) + peak(steady, checkpoint, end, threads)
}

/// HPC and PCM ([`super::hpc`]): Hamiltonian Monte Carlo on the log rates μ (V × N,
/// N = K + 1 nodes with the root) and the document affinities ξ (D × K).
pub fn hpc(c: &CorpusStats, p: &super::hpc::params::HpcParams, supervised: bool, threads: usize) -> u64 {
    let s = Sizes::of(c);
    // HPC's topics are the label tree's nodes (inner ones included); PCM's are flat.
    let k = if supervised { s.labels.max(1) } else { p.topics as u64 };
    let nodes = k + 1;
    let (v, d) = (s.v, s.d);
    // Active nodes per document: every topic for PCM; for HPC about one label path
    // (the summary has no labels-per-document count: `depth` stands for it).
    let active = if supervised { (s.depth.max(1) + 1).min(k) } else { k };
    // Nodes a word's rate block touches (the union of its documents' active nodes and
    // their ancestors): every node for PCM; for HPC about `depth` new nodes per document
    // holding the word, at most all of them.
    let touched = if supervised { (1 + s.depth.max(1) * s.nnz.div_ceil(v.max(1))).min(nodes) } else { nodes };
    // `HpcData`: the word-major rows ((u32, f64), 16 per non-zero), the document rows
    // (the same again) and the active nodes (4 each). HPC shapes the training,
    // validation and test documents and, to refit, training and validation together:
    // about twice the corpus.
    let shaped = if supervised { 2 } else { 1 };
    let data = shaped * (2 * 16 * s.nnz + W4 * d * active + W8 * 2 * d);
    // `HpcState`: μ and τ² (V × N f64 each), ξ (D × K f64).
    let state = 2 * W8 * v * nodes + W8 * d * k;
    // Off-diagonal entries of a word's rate Hessian. With the tree-plus-diagonal
    // curvature (above 200 topics unless the params say otherwise) one per touched node.
    // With the full curvature, every pair of nodes active together in one of the word's
    // documents: all pairs for PCM (every topic is active everywhere); for HPC about
    // active² / 2 new pairs per document holding the word, at most all pairs.
    let all_pairs = touched * touched.saturating_sub(1) / 2;
    let curvature = p.curvature(k as usize);
    let off = match curvature {
        Curvature::TreeDiagonal => touched,
        Curvature::Full if supervised => (s.nnz.div_ceil(v.max(1)) * active * active.saturating_sub(1) / 2 + touched).min(all_pairs.max(touched)),
        Curvature::Full => all_pairs,
    };
    // The full curvature's sparse factor pattern per word: a row index (4) per entry of
    // the factor (its fill-in counted as none) and order, position and column pointers
    // (4 each per touched node).
    let pattern = match curvature {
        Curvature::TreeDiagonal => 0,
        Curvature::Full => W4 * off + 3 * W4 * touched + 96,
    };
    // `Caches`: β = e^μ (V × N f64); each word's block (4 per touched node), its rate
    // Hessian's diagonal (8 per touched node) and off-diagonal (8 per entry) in two
    // vectors (48) and its pattern; each document's affinity Hessian (active² f64).
    let caches = W8 * v * nodes + v * (W4 * touched + W8 * (touched + off) + 48 + pattern) + W8 * d * active * active;
    // `EstimandSums`: frequency, exclusivity against siblings and against all (V × K
    // f64 each), μ (V × N f64).
    let sums = 3 * W8 * v * k + W8 * v * nodes;
    let steady = data + state + caches + sums;
    // A checkpoint: μ, τ² at parent nodes (at most N per word), ξ, the Hessians and the
    // sums, as raw f64 sections.
    let checkpoint = W8 * v * nodes * 2 + W8 * d * k + W8 * v * (touched + off) + W8 * d * active * active + sums;
    // The end: the model's tables (frequency, exclusivity ×2 over V × K and μ over
    // V × N, f32) are built while the chain lives, then encoded once it is gone.
    let model = 3 * W4 * v * k + W4 * v * nodes;
    let end = (steady + model).max(data + 2 * model);
    corpus_bytes(&s) + peak(steady, checkpoint, end, threads)
}

/// DCNT and SCNT ([`super::dcnt`]): Gibbs sampling of token topics with correlated
/// activations u, v per document.
pub fn dcnt(c: &CorpusStats, p: &super::dcnt::DcntParams, threads: usize) -> u64 {
    let s = Sizes::of(c);
    let k = p.topics as u64;
    let (v, d) = (s.v, s.d);
    // `Documents`: each row's terms and counts (two `Vec<u32>`: 48 bytes and 8 per
    // non-zero), token offsets (8 per document); metadata features are not in the
    // summary and count as none.
    let docs = 48 * d + 2 * W4 * s.nnz + W8 * d;
    // The training counts copied when documents are held out.
    let training = if p.test_fraction > 0.0 { W8 * (d + 1) + 2 * W4 * s.nnz } else { 0 };
    // `DcntState`: z (u16 per token), n_dk (D × K u32), M_kw (V × K u32), u and v
    // (D × K f64 each), A (K × K f64).
    let state = 2 * s.n + W4 * (d + v) * k + 2 * W8 * d * k + W8 * k * k;
    // Posterior sums: ω (K × V f64), proportions (D × K f64), A (K × K).
    let sums = W8 * (v + d) * k + W8 * k * k;
    // A scan's per-document updates (moves and new u, v rows) collected before they are
    // applied: about the state's per-document part again.
    let updates = 2 * W8 * d * k + 8 * s.n;
    let steady = docs + training + state + sums + updates;
    // A checkpoint: z (2 per token, postcard), u and v, and the sums.
    let checkpoint = 2 * s.n + 2 * W8 * d * k + sums;
    // The end: the model (ω, proportions, f64) beside the chain, then encoded.
    let model = W8 * (v + d) * k;
    let end = (steady + model).max(docs + 2 * model);
    corpus_bytes(&s) + peak(steady, checkpoint, end, threads)
}

/// HDP ([`super::hdp`]): memoized variational inference over batches of documents.
pub fn hdp(c: &CorpusStats, p: &super::hdp::HdpParams, threads: usize) -> u64 {
    let s = Sizes::of(c);
    let k = p.topics as u64;
    let (v, d) = (s.v, s.d);
    let b = (p.batches as u64).clamp(1, d.max(1));
    // Distinct words summed over batches: each batch holds at most V words and at most
    // its non-zeros.
    let batch_words = b * v.min(s.nnz.div_ceil(b));
    // The training counts copied when documents are held out.
    let training = if p.test_fraction > 0.0 { W8 * (d + 1) + 2 * W4 * s.nnz } else { 0 };
    // `BatchLayout`s: each batch's distinct words (4 each) and each non-zero's slot (4).
    let layouts = W4 * batch_words + W4 * s.nnz;
    // The memo: each batch's summary (its words × K f64 and K-sized vectors), the total
    // (V × K f64), the batches' document-topic warm starts (D × K f64).
    let memo = W8 * batch_words * k + W8 * v * k + W8 * d * k;
    // `TopicWord`: E[log φ] and exp E[log φ] (V × K f64 each).
    let globals = 2 * W8 * v * k;
    // A batch's local step: the new summary of its words and its documents' rows
    // (one batch's share of the memo) while the old one is still held.
    let local = W8 * (batch_words.div_ceil(b) + d.div_ceil(b)) * k;
    let steady = training + layouts + memo + globals + local;
    // A checkpoint: the batch summaries, their document-topic rows and the total.
    let checkpoint = memo;
    // The end: topic-word (K × V f64) and the model's tables beside the memo, encoded.
    let model = 2 * W8 * v * k;
    let end = steady + model;
    corpus_bytes(&s) + peak(steady, checkpoint, end, threads)
}

/// HDP-aMMSB ([`super::hdp_ammsb`]): memoized variational inference over batches of
/// owner nodes of a graph.
pub fn ammsb(g: &GraphStats, p: &super::hdp_ammsb::AmmsbParams, threads: usize) -> u64 {
    let (n, e, k) = (g.num_nodes as u64, g.num_edges as u64, p.communities as u64);
    let b = p.num_batches(g.num_nodes) as u64;
    // The decoded graph: node names (a `String` and its text, about 40) and adjacency
    // lists (a `Vec` of 24 per node, 4 per neighbour; an undirected edge twice), and the
    // stored blob beside it while decoding.
    let arcs = if g.directed { e } else { 2 * e };
    let graph = 2 * (64 * n + W4 * arcs);
    // `GlobalState`: θ (N × (K + 1) f64).
    let state = W8 * n * (k + 1);
    // The memo: a summary per batch and their total, each with the usage U (N × K f64).
    let memo = W8 * (b + 1) * n * k;
    // A batch's local step: E[log π] and π̃ (N × K f64 each), the new usage (N × K) and
    // its owners' statistics.
    let local = 4 * W8 * n * k;
    let steady = graph + state + memo + local;
    // A checkpoint: the memo and θ.
    let checkpoint = memo + state;
    // The end: the model holds θ and the names; encoded beside it.
    let end = steady + 2 * (state + 40 * n);
    peak(steady, checkpoint, end, threads)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::registry::{self, InputStats};
    use serde_json::json;

    fn corpus(documents: usize, terms: usize, tokens: u64, labels: usize, depth: usize) -> CorpusStats {
        CorpusStats { num_documents: documents, num_terms: terms, num_tokens: tokens, num_labels: labels, tree_depth: depth, ..CorpusStats::default() }
    }

    fn estimate(family: &str, stats: InputStats<'_>, params: serde_json::Value) -> u64 {
        let f = registry::lookup(family).unwrap();
        let effective = f.effective_params(&params).unwrap();
        f.fit_memory(stats, &effective, 2)
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

    /// LDA's formula by hand for a tiny case: 10 documents, 100 terms, 1 000 tokens,
    /// 8 topics (dense kernel), no held-out documents, one thread.
    #[test]
    fn lda_matches_a_hand_computation() {
        let stats = corpus(10, 100, 1_000, 0, 0);
        let p = crate::models::lda::LdaParams::from_json(&json!({"topics": 8, "test_fraction": 0.0})).unwrap();
        let (d, v, n, k) = (10u64, 100u64, 1_000u64, 8u64);
        // Corpus: CSR 8·11 + 8·1000; blob 3·1000 + 24·10 + 32·100; ids 40·10; lexicon
        // 96·100; labels 24·10.
        let corpus = 88 + 8_000 + (3_000 + 240 + 3_200) + 400 + 9_600 + 240;
        let tokens = 8 * n + 12 * d + 8 * v;
        let state = 4 * n + 4 * v * k;
        let sweeps = 4 * d * 16 + 8 * d * 17;
        let sums = 8 * (v + d) * k;
        let sample = 6 * n.min(v * k);
        let steady = tokens + state + sweeps + sums + sample;
        let checkpoint = n + sums;
        let end = (tokens + state + sums + sums).max(tokens + 2 * sums);
        let expected = corpus + (steady + 3 * checkpoint).max(end) + (1 << 20);
        assert_eq!(lda(&stats, &p, 1), expected);
        assert_eq!(expected, 78_848 + (1 << 20));
    }
}
