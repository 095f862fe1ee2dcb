//! The local step: one document's responsibilities and topic weights with the global
//! parameters held fixed, and a batch's summary from its documents.
//!
//! Why it exists: memoized VI alternates this step (per batch) with the global one. For a
//! document with counts c_w, q(π_d) = Dir(θ_d) over the K topics and the remainder, and
//! per-word responsibilities r_w; coordinate ascent alternates
//! θ_dk = N_dk + α E[β_k] (θ_d,K+1 = α E[β_K+1]) and r_wk ∝ exp(E[log π_dk] + E[log φ_kw]),
//! N_dk = Σ_w c_w r_wk, until no N_dk moves by more than the tolerance. Each update is the
//! exact maximiser of the objective in its block, so starting from the document's
//! previous counts (warm start: the first θ update is then the best θ for the previous
//! responsibilities) the document's part of the objective never decreases. The statistics
//! are taken at the last responsibilities and the θ computed from them, so they describe
//! one consistent local state.
//!
//! Documents are processed in parallel in fixed waves; a batch's topic-word counts are
//! summed exactly ([`super::exact_counts`]) and its other statistics chunk by chunk in
//! document order ([`CHUNK`]), so neither the thread count nor the ranks a batch is
//! spread over change a number.

use super::exact_counts::ExactCounts;
use super::summary::{PairStats, Summary};
use crate::corpus::DocTermMatrix;
use crate::ranks::Ranks;
use rayon::prelude::*;
use statrs::function::gamma::{digamma, ln_gamma};

/// Documents inferred in parallel before their statistics are reduced (bounds memory).
const WAVE: usize = 512;
/// Floor on α E[β_k] so that θ stays positive when a stick's weight underflows.
const MIN_PRIOR: f64 = 1e-300;

/// What the local step reads from the global parameters.
pub struct LocalGlobals<'a> {
    pub num_topics: usize,
    /// α E[β_k], K + 1 entries (the remainder last).
    pub prior: Vec<f64>,
    /// E[log φ_kw], word-major (`V × K`).
    pub elog_phi: &'a [f64],
    /// exp(E[log φ_kw]), word-major.
    pub exp_elog_phi: &'a [f64],
    pub tolerance: f64,
    pub max_iterations: usize,
}

impl<'a> LocalGlobals<'a> {
    pub fn new(alpha: f64, expected_beta: &[f64], elog_phi: &'a [f64], exp_elog_phi: &'a [f64], tolerance: f64, max_iterations: usize) -> Self {
        let prior = expected_beta.iter().map(|b| (alpha * b).max(MIN_PRIOR)).collect();
        LocalGlobals { num_topics: expected_beta.len() - 1, prior, elog_phi, exp_elog_phi, tolerance, max_iterations }
    }
}

/// One document's local state and its statistics.
#[derive(Debug, Clone)]
pub struct DocLocal {
    /// N_dk.
    pub doc_topic: Vec<f64>,
    /// c_w r_wk for the document's words in order, K each.
    pub word_topic: Vec<f64>,
    pub entropy: Vec<f64>,
    /// E[log π_dk], K + 1 entries.
    pub elog_pi: Vec<f64>,
    /// Σ_k (N_dk − θ_dk) E[log π_dk] − log Γ(Σθ) + Σ_k log Γ(θ_dk).
    pub local: f64,
    /// Statistics of the tracked pairs, for this document alone.
    pub pairs: PairStats,
    pub iterations: usize,
    /// The document's part of the objective with the globals fixed:
    /// Σ_w c_w Σ_k r_wk E[log φ_kw] + entropy + `local` + Σ_k α E[β_k] E[log π_dk].
    pub objective: f64,
}

/// Whether a word's normaliser Σ_k a_k exp(E[log φ_kw]) is usable. It underflows to 0
/// only when every topic gives the word a negligible rate (a word unseen in training
/// under a tiny λ, at prediction time): such a word is then left out of the document
/// rather than turning every weight into NaN. During a fit every word has counts.
fn explainable(z: f64) -> bool {
    z > 0.0 && z.is_finite()
}

/// θ (K + 1 entries, the remainder last) of counts `n` under `prior`.
fn theta_of(n: &[f64], prior: &[f64]) -> Vec<f64> {
    let k = n.len();
    (0..=k).map(|t| if t < k { n[t] + prior[t] } else { prior[k] }).collect()
}

/// The counts a new document starts from: responsibilities r_wk ∝ α E[β_k] E[φ_kw]
/// (bnpy's `setDocProbsToEGlobalProbs`), i.e. the document's topic weights set to
/// the global ones. Starting from zero counts instead makes the first weights
/// exp ψ(α E[β_k]) ≈ exp(−1 / (α E[β_k])): with α E[β_k] near 0.01 topics whose
/// global weights differ by 20 % differ by e^17 in the document, every word goes to
/// the topic with the largest β, and coordinate ascent stays in that one-topic
/// optimum (document completion on reuters395 lost about a nat per token by it).
pub(super) fn cold_start_counts(g: &LocalGlobals, terms: &[u32], counts: &[u32]) -> Vec<f64> {
    let k = g.num_topics;
    let mut n = vec![0.0; k];
    for (&w, &c) in terms.iter().zip(counts) {
        let b = &g.exp_elog_phi[w as usize * k..(w as usize + 1) * k];
        let z: f64 = g.prior[..k].iter().zip(b).map(|(x, y)| x * y).sum();
        if !explainable(z) {
            continue;
        }
        let scale = c as f64 / z;
        for t in 0..k {
            n[t] += scale * g.prior[t] * b[t];
        }
    }
    n
}

/// Coordinate ascent for one document (`terms`, `counts`), from `init` counts if given,
/// else from [`cold_start_counts`].
// kernel: coordinate ascent over words × topics for every document on every pass; the statistics reuse its last weights
pub fn infer_document(g: &LocalGlobals, terms: &[u32], counts: &[u32], init: Option<&[f64]>, pairs: &[(usize, usize)]) -> DocLocal {
    let k = g.num_topics;
    let mut n = match init {
        Some(init) => init.to_vec(),
        None => cold_start_counts(g, terms, counts),
    };
    let mut log_a = vec![0.0; k];
    let mut a = vec![0.0; k];
    let mut new_n = vec![0.0; k];
    let mut iterations = 0;
    while iterations < g.max_iterations {
        iterations += 1;
        // θ step (ψ(Σθ) cancels in r), then the r step.
        let mut max = f64::NEG_INFINITY;
        for t in 0..k {
            log_a[t] = digamma(n[t] + g.prior[t]);
            max = max.max(log_a[t]);
        }
        for t in 0..k {
            log_a[t] -= max;
            a[t] = log_a[t].exp();
        }
        new_n.iter_mut().for_each(|x| *x = 0.0);
        for (&w, &c) in terms.iter().zip(counts) {
            let b = &g.exp_elog_phi[w as usize * k..(w as usize + 1) * k];
            let z: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
            if !explainable(z) {
                continue;
            }
            let scale = c as f64 / z;
            for t in 0..k {
                new_n[t] += scale * a[t] * b[t];
            }
        }
        let delta = n.iter().zip(&new_n).fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
        std::mem::swap(&mut n, &mut new_n);
        if delta < g.tolerance {
            break;
        }
    }
    // Statistics of the last responsibilities (from `a`) and θ from their counts.
    let mut word_topic = vec![0.0; terms.len() * k];
    let mut entropy = vec![0.0; k];
    let mut pair_stats = PairStats::zeros(pairs);
    let mut r = vec![0.0; k];
    let mut data = 0.0;
    for (i, (&w, &c)) in terms.iter().zip(counts).enumerate() {
        let row = w as usize * k..(w as usize + 1) * k;
        let (b, lb) = (&g.exp_elog_phi[row.clone()], &g.elog_phi[row]);
        let z: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
        if !explainable(z) {
            continue;
        }
        let log_z = z.ln();
        let c = c as f64;
        for t in 0..k {
            r[t] = a[t] * b[t] / z;
            word_topic[i * k + t] = c * r[t];
            data += c * r[t] * lb[t];
            if r[t] > 0.0 {
                entropy[t] -= c * r[t] * (log_a[t] + lb[t] - log_z);
            }
        }
        for (p, &(j, l)) in pairs.iter().enumerate() {
            let s = r[j] + r[l];
            if s > 0.0 {
                pair_stats.entropy[p] -= c * s * s.ln();
            }
        }
    }
    let theta = theta_of(&n, &g.prior);
    let total: f64 = theta.iter().sum();
    let digamma_total = digamma(total);
    let elog_pi: Vec<f64> = theta.iter().map(|&x| digamma(x) - digamma_total).collect();
    let count = |t: usize| if t < k { n[t] } else { 0.0 };
    let mut local = -ln_gamma(total);
    for t in 0..=k {
        local += (count(t) - theta[t]) * elog_pi[t] + ln_gamma(theta[t]);
    }
    for (p, &(j, l)) in pairs.iter().enumerate() {
        let merged = theta[j] + theta[l];
        let e = digamma(merged) - digamma_total;
        pair_stats.sum_log_pi[p] = e;
        pair_stats.local[p] = (n[j] + n[l] - merged) * e - (n[j] - theta[j]) * elog_pi[j] - (n[l] - theta[l]) * elog_pi[l] + ln_gamma(merged)
            - ln_gamma(theta[j])
            - ln_gamma(theta[l]);
    }
    let objective = data + entropy.iter().sum::<f64>() + local + g.prior.iter().zip(&elog_pi).map(|(a, e)| a * e).sum::<f64>();
    DocLocal { doc_topic: n, word_topic, entropy, elog_pi, local, pairs: pair_stats, iterations, objective }
}

/// A batch: its documents (rows of the training matrix) and its vocabulary.
#[derive(Debug, Clone)]
pub struct BatchLayout {
    pub docs: std::ops::Range<usize>,
    /// The batch's distinct words, increasing.
    pub words: Vec<u32>,
    /// For each non-zero of the batch's documents in order, its row in `words`.
    pub slots: Vec<u32>,
}

impl BatchLayout {
    /// The batch of rows `docs` of `matrix`, its words found from them.
    pub fn new(matrix: &DocTermMatrix, docs: std::ops::Range<usize>) -> Self {
        let mut words: Vec<u32> = docs.clone().flat_map(|d| matrix.row(d).0.iter().copied()).collect();
        words.sort_unstable();
        words.dedup();
        Self::share(matrix, docs, words)
    }

    /// A share of a batch: rows `docs` of `matrix` (this process' documents of it) over
    /// the whole batch's `words`, which hold every word of those rows.
    pub fn share(matrix: &DocTermMatrix, docs: std::ops::Range<usize>, words: Vec<u32>) -> Self {
        let slots =
            docs.clone().flat_map(|d| matrix.row(d).0.iter().map(|w| words.binary_search(w).expect("word of the batch") as u32).collect::<Vec<_>>()).collect();
        BatchLayout { docs, words, slots }
    }
}

/// Totals of the local step over a batch (for progress).
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalTotals {
    pub iterations: usize,
    pub documents: usize,
}

/// Documents whose small statistics (N_k, H_k, S_k, the local scalar, the pairs') are
/// summed in floating point in document order before joining the batch's, chunk after
/// chunk in order: fixed, so that no split of the documents (threads, waves, ranks)
/// changes a sum. A rank's share of a batch starts at a multiple of it.
pub const CHUNK: usize = 64;

/// What this process' documents of a batch add to its summary: their topic-word counts
/// (exact, so parts add in any order) and each chunk's small statistics (a summary
/// without word rows), in document order.
pub struct BatchPart {
    pub counts: ExactCounts,
    pub chunks: Vec<Summary>,
    pub totals: LocalTotals,
}

/// The local step over this process' documents of a batch: infers every document
/// (warm-started from `doc_topic` rows when `warm`), writes the new counts back and
/// returns their part of the batch summary.
pub fn batch_part(g: &LocalGlobals, matrix: &DocTermMatrix, layout: &BatchLayout, doc_topic: &mut [f64], warm: bool, pairs: &[(usize, usize)]) -> BatchPart {
    let k = g.num_topics;
    let mut counts = ExactCounts::zeros(layout.words.len(), k);
    let mut chunks: Vec<Summary> = Vec::with_capacity(layout.docs.len().div_ceil(CHUNK));
    let mut totals = LocalTotals::default();
    let first = layout.docs.start;
    let mut slot = 0usize;
    for wave_start in layout.docs.clone().step_by(WAVE) {
        let wave = wave_start..(wave_start + WAVE).min(layout.docs.end);
        let results: Vec<DocLocal> = wave
            .clone()
            .into_par_iter()
            .map(|d| {
                let (terms, counts) = matrix.row(d);
                let local = d - first;
                let init = warm.then(|| &doc_topic[local * k..(local + 1) * k]);
                infer_document(g, terms, counts, init, pairs)
            })
            .collect();
        // The topic-word counts: integer sums need no order, so the threads fill them
        // at once, each its own run of the batch's word rows, every one reading the
        // whole wave (the slots say which row each word of a document adds to).
        // Each document's first slot (its words' rows follow in order).
        let starts: Vec<usize> = results
            .iter()
            .map(|r| {
                let start = slot;
                slot += r.word_topic.len() / k.max(1);
                start
            })
            .collect();
        let slots = &layout.slots;
        counts.row_ranges_mut(rayon::current_num_threads()).into_par_iter().for_each(|(first_row, mut cells)| {
            let end_row = first_row + cells.rows();
            for (res, &start) in results.iter().zip(&starts) {
                for (i, row) in res.word_topic.chunks(k).enumerate() {
                    let s = slots[start + i] as usize;
                    if (first_row..end_row).contains(&s) {
                        cells.add_row(s - first_row, row);
                    }
                }
            }
        });
        for (d, res) in wave.zip(results) {
            let local = d - first;
            if local.is_multiple_of(CHUNK) {
                let mut chunk = Summary::zeros(Vec::new(), k);
                chunk.pairs = PairStats::zeros(pairs);
                chunks.push(chunk);
            }
            let chunk = chunks.last_mut().expect("a chunk was started");
            doc_topic[local * k..(local + 1) * k].copy_from_slice(&res.doc_topic);
            chunk.num_docs += 1.0;
            for t in 0..k {
                chunk.topic_counts[t] += res.doc_topic[t];
                chunk.entropy[t] += res.entropy[t];
            }
            for (s, e) in chunk.sum_log_pi.iter_mut().zip(&res.elog_pi) {
                *s += e;
            }
            chunk.local += res.local;
            chunk.pairs.add(&res.pairs);
            totals.iterations += res.iterations;
            totals.documents += 1;
        }
    }
    BatchPart { counts, chunks, totals }
}

/// The local step over a batch whose documents are spread over `ranks` (each holding
/// `layout`'s share; one process holds them all): every rank infers its documents,
/// the ranks' exact counts are summed as integers and their chunks' statistics added
/// chunk by chunk in document order (a running sum passed from rank to rank). Every
/// rank returns the same batch summary, the one a single process computes.
pub fn batch_local_step(
    g: &LocalGlobals,
    matrix: &DocTermMatrix,
    layout: &BatchLayout,
    doc_topic: &mut [f64],
    warm: bool,
    pairs: &[(usize, usize)],
    ranks: &dyn Ranks,
) -> (Summary, LocalTotals) {
    let k = g.num_topics;
    let BatchPart { mut counts, chunks, mut totals } = batch_part(g, matrix, layout, doc_topic, warm, pairs);
    // The small statistics: the chunks' sums added chunk after chunk from zero, rank 0's
    // chunks first, the running sum passed on from rank to rank (chunk order is rank
    // order), so the total is one process' whatever the ranks.
    let add_chunks = |mut small: Summary| {
        for chunk in &chunks {
            small.add_batch(chunk, 1.0);
            small.pairs.add(&chunk.pairs);
        }
        small
    };
    let mut start = Summary::zeros(Vec::new(), k);
    start.pairs = PairStats::zeros(pairs);
    let small = if ranks.size() > 1 {
        let mut words = counts.to_words();
        ranks.sum_u64(&mut words);
        counts = ExactCounts::from_words(&words, k);
        let mut sums = [totals.iterations as u64, totals.documents as u64];
        ranks.sum_u64(&mut sums);
        totals = LocalTotals { iterations: sums[0] as usize, documents: sums[1] as usize };
        let encode = |s: &Summary| postcard::to_allocvec(s).expect("plain data encodes");
        let folded = ranks
            .fold_bytes_in_rank_order(encode(&start), &mut |running| encode(&add_chunks(postcard::from_bytes(&running).expect("the running sums decode"))));
        postcard::from_bytes(&folded).expect("the summed statistics decode")
    } else {
        add_chunks(start)
    };
    let summary = Summary { words: layout.words.clone(), word_topic: counts.to_f64(), ..small };
    (summary, totals)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::hdp::globals::TopicWord;

    /// Two topics over three words, a document of words 0 and 2.
    fn setup() -> (TopicWord, Vec<f64>) {
        let mut total = Summary::dense(3, 2);
        total.word_topic = vec![5.0, 0.5, 1.0, 1.0, 0.2, 6.0];
        (TopicWord::from_summary(&total, 0.1), vec![0.3, 0.4, 0.3])
    }

    /// The document's part of the objective: E[log p(w, z, π | φ, β)] − E[log q(z, π)]
    /// minus the (constant) surrogate of the Dirichlet normaliser, from its statistics.
    fn doc_objective(res: &DocLocal, alpha_beta: &[f64]) -> f64 {
        let ent: f64 = res.entropy.iter().sum();
        let prior: f64 = alpha_beta.iter().zip(&res.elog_pi).map(|(a, e)| a * e).sum();
        ent + prior + res.local
    }

    #[test]
    fn warm_started_ascent_never_lowers_the_document_objective() {
        let (tw, beta) = setup();
        let g = LocalGlobals::new(1.0, &beta, &tw.elog_phi, &tw.exp_elog_phi, 1e-12, 1);
        let (terms, counts) = (vec![0u32, 2], vec![3u32, 4]);
        let data = |res: &DocLocal| -> f64 {
            // E[log p(w | z, φ)] = Σ_w Σ_k c r E[log φ_kw].
            terms.iter().enumerate().map(|(i, &w)| (0..2).map(|t| res.word_topic[i * 2 + t] * tw.elog_phi[w as usize * 2 + t]).sum::<f64>()).sum()
        };
        let mut res = infer_document(&g, &terms, &counts, Some(&[6.0, 1.0]), &[]);
        let mut last = doc_objective(&res, &g.prior) + data(&res);
        for _ in 0..20 {
            res = infer_document(&g, &terms, &counts, Some(&res.doc_topic.clone()), &[]);
            let now = doc_objective(&res, &g.prior) + data(&res);
            assert!(now >= last - 1e-12, "{now} < {last}");
            last = now;
        }
        let sum: f64 = res.doc_topic.iter().sum();
        assert!((sum - 7.0).abs() < 1e-12);
    }

    /// A new document made of two topics' words, under small and unequal global weights
    /// (α E[β] = 0.012 and 0.010, as after a fit with α = 0.5 and 50 topics). From zero
    /// counts the first weights are exp ψ(α E[β_k]), a factor e^16.7 for topic 0, which
    /// the likelihood ratio of topic 1's words (ψ(1000) − ψ(1.01) ≈ 7.5 nats here) cannot
    /// overcome: the whole document goes to topic 0 and stays there. The cold start (responsibilities
    /// ∝ α E[β_k] E[φ_kw]) must give each topic its own words and a higher objective.
    #[test]
    fn cold_start_gives_each_topic_its_words() {
        let mut total = Summary::dense(4, 2);
        total.word_topic = vec![1000.0, 0.0, 1000.0, 0.0, 1.0, 1000.0, 1.0, 1000.0];
        let tw = TopicWord::from_summary(&total, 0.01);
        let beta = [0.024, 0.020, 0.956];
        let g = LocalGlobals::new(0.5, &beta, &tw.elog_phi, &tw.exp_elog_phi, 1e-6, 200);
        let (terms, counts) = ([0u32, 1, 2, 3], [3u32, 2, 2, 3]);
        let cold = infer_document(&g, &terms, &counts, None, &[]);
        // Each of topic 1's five tokens keeps a share of about e^−7.5 ≈ 6e−4 on topic 0.
        assert!((cold.doc_topic[0] - 5.0).abs() < 0.01 && (cold.doc_topic[1] - 5.0).abs() < 0.01, "{:?}", cold.doc_topic);
        let from_zero = infer_document(&g, &terms, &counts, Some(&[0.0, 0.0]), &[]);
        assert!(from_zero.doc_topic[0] > 9.9, "the zero start no longer collapses: {:?}", from_zero.doc_topic);
        assert!(cold.objective > from_zero.objective, "{} ≤ {}", cold.objective, from_zero.objective);
        // `objective` is the document's part of the objective, as the statistics give it.
        let data: f64 = terms.iter().enumerate().map(|(i, &w)| (0..2).map(|t| cold.word_topic[i * 2 + t] * tw.elog_phi[w as usize * 2 + t]).sum::<f64>()).sum();
        assert!((cold.objective - (doc_objective(&cold, &g.prior) + data)).abs() < 1e-9);
    }

    #[test]
    fn pair_statistics_equal_a_merged_model_computed_directly() {
        // The merged pair's statistics from a three-topic document must equal what the
        // two-topic document (topics 0 and 2 added) gives for the same r and θ.
        let mut total = Summary::dense(3, 3);
        total.word_topic = vec![5.0, 0.5, 2.0, 1.0, 1.0, 0.3, 0.2, 6.0, 1.0];
        let tw = TopicWord::from_summary(&total, 0.1);
        let beta = [0.3, 0.3, 0.2, 0.2];
        let g = LocalGlobals::new(0.8, &beta, &tw.elog_phi, &tw.exp_elog_phi, 1e-10, 50);
        let (terms, counts) = ([0u32, 1, 2], [2u32, 1, 5]);
        let res = infer_document(&g, &terms, &counts, None, &[(0, 2), (1, 2)]);
        // Direct: merged r = r0 + r2 and θ = θ0 + θ2.
        let theta: Vec<f64> = (0..4).map(|t| if t < 3 { res.doc_topic[t] + g.prior[t] } else { g.prior[3] }).collect();
        let total_theta: f64 = theta.iter().sum();
        let mt = [theta[0] + theta[2], theta[1], theta[3]];
        let mn = [res.doc_topic[0] + res.doc_topic[2], res.doc_topic[1], 0.0];
        let e: Vec<f64> = mt.iter().map(|&x| digamma(x) - digamma(total_theta)).collect();
        let mut local = -ln_gamma(total_theta);
        for t in 0..3 {
            local += (mn[t] - mt[t]) * e[t] + ln_gamma(mt[t]);
        }
        assert!((res.pairs.sum_log_pi[0] - e[0]).abs() < 1e-12);
        assert!((res.local + res.pairs.local[0] - local).abs() < 1e-10, "{} vs {local}", res.local + res.pairs.local[0]);
        let mut h = 0.0;
        for (i, &c) in counts.iter().enumerate() {
            let r = (res.word_topic[i * 3] + res.word_topic[i * 3 + 2]) / c as f64;
            h -= c as f64 * r * r.ln();
        }
        assert!((res.pairs.entropy[0] - h).abs() < 1e-12);
    }
}
