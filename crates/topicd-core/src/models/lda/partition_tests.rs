//! Checks of the partitioned schedule and its dense kernel: the grid covers every token
//! once, sweeps keep the counts equal to what the assignments imply, results do not
//! depend on the thread count or on the instruction set, and each draw follows the exact
//! collapsed conditional (alone, and along a run of one word) on cases small enough to
//! enumerate.

use super::*;
use crate::corpus::build_corpus;
use crate::models::lda::sampler::tests::{chi_square, lda_corpus, raw_options};
use crate::rng::{stream, Purpose};

/// 120 documents of 40 tokens from 4 topics over 40 words, and a K-topic initial state.
fn small_fit(k: usize) -> (Tokens, GibbsState) {
    let (_, docs) = lda_corpus(4, 40, 120, 40, 0.3, 3);
    let corpus = build_corpus(raw_options(), &[], docs).expect("corpus builds");
    let tokens = Tokens::from_counts(&corpus.counts, corpus.num_terms());
    let state = GibbsState::init(&tokens, k, 0.3, 0.05, 21);
    (tokens, state)
}

#[test]
fn the_grid_covers_every_token_once() {
    let (tokens, _) = small_fit(4);
    let part = Partition::new(&tokens, 4);
    let p = part.blocks;
    assert_eq!((part.doc_bounds.len(), part.word_bounds.len()), (p + 1, p + 1));
    assert!(part.doc_bounds.is_sorted() && part.word_bounds.is_sorted());
    assert_eq!((part.doc_bounds[p], part.word_bounds[p]), (tokens.num_docs(), tokens.num_terms));
    let mut seen = vec![0u32; tokens.num_tokens()];
    for i in 0..p {
        for d in part.doc_bounds[i]..part.doc_bounds[i + 1] {
            for j in 0..p {
                for pos in part.cell_range(d, j) {
                    seen[pos] += 1;
                    assert!((tokens.doc_ptr[d]..tokens.doc_ptr[d + 1]).contains(&pos));
                    let w = tokens.words[pos] as usize;
                    assert!((part.word_bounds[j]..part.word_bounds[j + 1]).contains(&w), "token {pos} (word {w}) in word block {j}");
                }
            }
        }
    }
    assert!(seen.iter().all(|&n| n == 1), "every token in exactly one cell");
    assert_eq!(part.cell_tokens.iter().sum::<usize>(), tokens.num_tokens());
    // Equal mass: every document block holds N/P tokens up to one document (40 tokens).
    let n = tokens.num_tokens() as f64 / p as f64;
    for i in 0..p {
        let mass: usize = part.cell_tokens[i * p..(i + 1) * p].iter().sum();
        assert!((mass as f64 - n).abs() <= 40.0, "document block {i}: {mass} tokens vs {n}");
    }
}

#[test]
fn the_block_count_depends_on_the_corpus_only() {
    let (tokens, _) = small_fit(4);
    // 4 800 tokens: a single block (cells of at least CELL_TOKENS).
    assert!(tokens.num_tokens() < 4 * CELL_TOKENS);
    assert_eq!(blocks_for(&tokens), 1);
    assert_eq!(Partition::new(&tokens, 1).cell_tokens, vec![tokens.num_tokens()]);
}

/// Recount n_kw, n_k and n_dk from the assignments.
fn assert_counts_match(state: &GibbsState, sampler: &PartitionedSampler, tokens: &Tokens) {
    let k = state.num_topics;
    let mut n_kw = vec![0u32; state.n_kw.len()];
    // n_dk rows are padded with zeros to whole blocks of the kernel's search.
    let stride = padded(k);
    let mut n_dk = vec![0u32; tokens.num_docs() * stride];
    let mut n_k = vec![0u64; k];
    for d in 0..tokens.num_docs() {
        for pos in tokens.doc_ptr[d]..tokens.doc_ptr[d + 1] {
            let t = state.z[pos] as usize;
            n_kw[tokens.words[pos] as usize * k + t] += 1;
            n_dk[d * stride + t] += 1;
            n_k[t] += 1;
        }
    }
    assert_eq!(n_kw, state.n_kw);
    assert_eq!(n_k, state.n_k);
    assert_eq!(n_dk, sampler.doc_topics);
}

/// Same seed at 1, 2 and 3 threads: identical assignments after every sweep, counts
/// consistent with them, and the sweeps do move tokens.
#[test]
fn partitioned_sweeps_do_not_depend_on_thread_count() {
    let (tokens, init) = small_fit(10);
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            let mut state = init.clone();
            let mut sampler = PartitionedSampler::with_blocks(&tokens, &state, 4);
            let mut history = Vec::new();
            for it in 1..=5 {
                let stats = sampler.sweep(&mut state, &tokens, 8, it);
                assert_eq!(stats.tokens, tokens.num_tokens() as u64);
                assert_counts_match(&state, &sampler, &tokens);
                history.push(state.z.clone());
            }
            history
        })
    };
    let one = run(1);
    assert_ne!(one[0], init.z, "a sweep moves tokens");
    assert_ne!(one[4], one[3]);
    assert_eq!(one, run(2));
    assert_eq!(one, run(3));
}

/// The AVX-512, AVX2 and portable builds of the kernel give bit-identical chains.
#[test]
fn every_instruction_set_gives_the_same_chain() {
    let (tokens, init) = small_fit(21);
    let chain = |isa: Isa| {
        let mut state = init.clone();
        let mut sampler = PartitionedSampler::with_isa(&tokens, &state, 3, isa);
        for it in 1..=3 {
            sampler.sweep(&mut state, &tokens, 5, it);
        }
        state.z
    };
    let isas = Isa::available();
    let reference = chain(Isa::Portable);
    for isa in isas {
        assert_eq!(chain(isa), reference, "{isa:?}");
    }
}

/// The exact collapsed conditional of token `i` of a document: weights
/// (n_dk + α_k)(n_kw + β)/(n_k + Vβ) with the token removed from all three counts.
#[allow(clippy::too_many_arguments)]
fn exact_conditional(doc_z: &[u32], i: usize, w: usize, n_kw: &[u32], n_k: &[u64], alpha: &[f64], beta: f64, v: usize) -> Vec<f64> {
    let k = n_k.len();
    let own = doc_z[i] as usize;
    let weights: Vec<f64> = (0..k)
        .map(|t| {
            let me = (t == own) as u32;
            let n_dt = doc_z.iter().enumerate().filter(|&(j, &z)| j != i && z as usize == t).count() as f64;
            (n_dt + alpha[t]) * ((n_kw[w * k + t] - me) as f64 + beta) / ((n_k[t] - me as u64) as f64 + v as f64 * beta)
        })
        .collect();
    let total: f64 = weights.iter().sum();
    weights.iter().map(|x| x / total).collect()
}

/// Topic-word counts, topic totals and the document's topic counts (padded with zeros
/// to whole blocks of the kernel's search) of a document (`words`, topics `doc_z`) plus
/// other (word, topic) tokens.
fn counts_of(words: &[u32], doc_z: &[u32], other: &[(u32, u32)], v: usize, k: usize) -> (Vec<u32>, Vec<u64>, Vec<u32>) {
    let mut n_kw = vec![0u32; v * k];
    let mut n_k = vec![0u64; k];
    for (&w, &t) in words.iter().zip(doc_z).chain(other.iter().map(|(w, t)| (w, t))) {
        n_kw[w as usize * k + t as usize] += 1;
        n_k[t as usize] += 1;
    }
    let mut doc = vec![0u32; padded(k)];
    for &t in doc_z {
        doc[t as usize] += 1;
    }
    (n_kw, n_k, doc)
}

/// Every draw of the dense kernel follows the exact conditional, for each token of an
/// enumerable document (K = 3; K = 11, one partial block of the search; K = 37, three
/// blocks, the last partial), including tokens whose topic is absent from the rest of
/// the document. 60 000 draws per token, each from the same counts (restored before
/// every draw). Under the null Pearson's statistic is chi-square with K − 1 degrees of
/// freedom; the bounds are the 0.9995 quantiles (15.2 for 2, 31.4 for 10, 70.6 for 36
/// degrees of freedom), twelve tokens in all, so the family-wise false-alarm rate is
/// below 0.006.
#[test]
fn dense_kernel_draws_from_the_exact_conditional() {
    for (k, bound) in [(3usize, 15.2), (11, 31.4), (37, 70.6)] {
        let v = 4;
        // An asymmetric α, as after optimisation.
        let (alpha, beta): (Vec<f64>, f64) = ((0..k).map(|t| 0.1 + 0.3 * (t % 4) as f64).collect(), 0.3);
        // Document 0: words [0, 0, 1, 3]; other tokens (a second document) fill the counts.
        let words = [0u32, 0, 1, 3];
        let doc_z: Vec<u32> = [0u32, 2, 1, 1].iter().map(|&t| t % k as u32).collect();
        let other: Vec<(u32, u32)> = (0..23u32).map(|n| (n % v as u32, (n * 7 + 1) % k as u32)).collect();
        let (n_kw, n_k, doc) = counts_of(&words, &doc_z, &other, v, k);
        let mut rng = stream(9, Purpose::Estimate, k as u64, 0);
        let mut stats = SweepStats::default();
        for i in 0..words.len() {
            let pi = exact_conditional(&doc_z, i, words[i] as usize, &n_kw, &n_k, &alpha, beta, v);
            let mut hist = vec![0u64; k];
            for _ in 0..60_000 {
                let (mut rows, mut doc_counts, mut z) = (n_kw.clone(), doc.clone(), [doc_z[i]]);
                let mut cell = CellCounts::new(k, &alpha, beta, v as f64 * beta, &mut rows, 0, n_k.clone());
                cell.resample(Isa::detect(), &mut z, &words[i..i + 1], &mut doc_counts, &mut rng, &mut stats);
                // The kernel leaves the counts consistent with the new topic.
                let mut expect_doc = doc.clone();
                expect_doc[doc_z[i] as usize] -= 1;
                expect_doc[z[0] as usize] += 1;
                assert_eq!(doc_counts, expect_doc);
                assert_eq!(cell.n_k.iter().sum::<u64>(), n_k.iter().sum::<u64>());
                hist[z[0] as usize] += 1;
            }
            let x2 = chi_square(&hist, &pi);
            assert!(x2 < bound, "K = {k}, token {i}: chi-square {x2}: hist {hist:?} vs {pi:?}");
        }
    }
}

/// The kernel's shortcut for repeated words (only the weights of the two topics whose
/// counts moved are recomputed) must leave the draws exact: resample a run of two tokens
/// of one word and compare the joint law of their two new topics with sequential exact
/// Gibbs, p(t1 | z_-1) p(t2 | t1, z_-2), over all K² pairs. K = 17 puts the second
/// token's old topic (16) in another block of the search than most first draws. 80 000
/// runs (200 000 for K = 17, so that every pair is expected at least 5 times); under the
/// null Pearson's statistic is chi-square with K² − 1 degrees of freedom; bounds are the
/// 0.9995 quantiles (27.9 for K = 3, 53.5 for K = 5, 373.6 for K = 17), three cases,
/// family-wise false-alarm rate below 0.0015.
#[test]
fn repeated_words_draw_from_the_exact_sequential_conditionals() {
    for (k, bound, runs) in [(3usize, 27.9, 80_000), (5, 53.5, 80_000), (17, 373.6, 200_000)] {
        let v = 3;
        // An asymmetric α no smaller than 0.3, so that every pair stays likely enough.
        let (alpha, beta): (Vec<f64>, f64) = ((0..k).map(|t| 0.3 + 0.25 * (t % 3) as f64).collect(), 0.2);
        // Document: words [1, 1, 2] with topics [0, K − 1, 2 % K]; a second document's
        // 17 tokens fill the counts. Tokens 0 and 1 form the run.
        let words = [1u32, 1, 2];
        let doc_z: Vec<u32> = vec![0, k as u32 - 1, 2 % k as u32];
        let other: Vec<(u32, u32)> = (0..17u32).map(|n| (n % v as u32, (n * 3 + 2) % k as u32)).collect();
        let (n_kw, n_k, doc) = counts_of(&words, &doc_z, &other, v, k);
        // Exact joint law of the run's new topics.
        let mut joint = vec![0.0; k * k];
        let first = exact_conditional(&doc_z, 0, 1, &n_kw, &n_k, &alpha, beta, v);
        for t1 in 0..k {
            let mut z1 = doc_z.clone();
            let (mut kw1, mut k1) = (n_kw.clone(), n_k.clone());
            kw1[k + doc_z[0] as usize] -= 1;
            k1[doc_z[0] as usize] -= 1;
            kw1[k + t1] += 1;
            k1[t1] += 1;
            z1[0] = t1 as u32;
            let second = exact_conditional(&z1, 1, 1, &kw1, &k1, &alpha, beta, v);
            for t2 in 0..k {
                joint[t1 * k + t2] = first[t1] * second[t2];
            }
        }
        let mut rng = stream(13, Purpose::Estimate, k as u64, 1);
        let mut stats = SweepStats::default();
        let mut hist = vec![0u64; k * k];
        assert!(joint.iter().all(|&p| p * runs as f64 >= 5.0), "K = {k}: every pair expected at least 5 times");
        for _ in 0..runs {
            let (mut rows, mut doc_counts, mut z) = (n_kw.clone(), doc.clone(), [doc_z[0], doc_z[1]]);
            let mut cell = CellCounts::new(k, &alpha, beta, v as f64 * beta, &mut rows, 0, n_k.clone());
            cell.resample(Isa::detect(), &mut z, &words[..2], &mut doc_counts, &mut rng, &mut stats);
            hist[z[0] as usize * k + z[1] as usize] += 1;
        }
        let x2 = chi_square(&hist, &joint);
        assert!(x2 < bound, "K = {k}: chi-square {x2}: hist {hist:?} vs {joint:?}");
    }
}
