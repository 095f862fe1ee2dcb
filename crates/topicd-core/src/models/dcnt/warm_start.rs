//! A collapsed start for DCNT/SCNT: topic assignments from a few sweeps of collapsed
//! LDA Gibbs, then activations that reproduce them.
//!
//! Why it exists: DCNT samples z given the stick-breaking weights π(v_d), not collapsed
//! over them (paper 001 eq. 10), and v_d follows z only through a Metropolis step. A
//! topic that starts as a blend then has to separate through both at once, and on
//! corpora drawn from the model itself a 1 000-scan chain often ends with two planted
//! topics merged and another topic left as scraps, where tomotopy's DMR (collapsed over
//! its Dirichlet document prior) separates them (bench/README.md, covariate effects;
//! docs/decisions/0047). stm starts its logistic-normal fits the same way (`init.type =
//! "LDA"`). The start changes where the chain begins, not what it samples: burn-in
//! discards it. It is a job parameter (`warm_start`, sweeps), off by default: on the
//! bars data of paper 001 the collapsed sweeps keep LDA's own modes with two bars in
//! one topic, which the DCNT chain then does not split (decision 0047).
//!
//! The start: z from the prior start ([`super::sampler::DcntState::init`]), then
//! `sweeps` sweeps of collapsed Gibbs with a symmetric Dirichlet(`ALPHA`) document prior
//! and the model's β, in the documents' synchronised blocks as the scan itself (so the
//! thread count changes nothing: document d draws from `(seed, DcntWarmStart, sweep,
//! d)`). Topics are then relabelled by size, largest first (the sticks' order, as the
//! prior's later sticks are smaller), and each document's v_d is set so that π(v_d)
//! equals its smoothed proportions (n_dk + α)/(N_d + Kα) (the inverse of the
//! stick-breaking map); u_d is drawn by the scan's first update.

use super::state::Documents;
use crate::models::seeds::SeedPrior;
use crate::rng::{stream, Purpose, StreamRng};
use rand::RngExt;
use rayon::prelude::*;
use std::ops::Range;

/// The document prior's concentration during the start: sparse, as tomotopy's default
/// (0.1) and the Dirichlet the planted corpora are drawn from.
pub const ALPHA: f64 = 0.1;

/// One document's sweep: its new assignments and topic counts, and its (word, topic,
/// change) moves for the shared counts.
struct DocMoves {
    z: Vec<u16>,
    doc_topic: Vec<u32>,
    moves: Vec<(u32, u16, i32)>,
}

/// Counts of a topic assignment.
struct Counts {
    doc_topic: Vec<u32>,
    word_topic: Vec<u32>,
    topic_totals: Vec<u64>,
}

impl Counts {
    /// The counts of `z`, with the seeds' pseudo-counts in the word counts.
    fn seeded(docs: &Documents, z: &[u16], k: usize, prior: &SeedPrior) -> Self {
        let mut c = Self::of(docs, z, k);
        prior.add_to(&mut c.word_topic, k);
        c
    }

    fn of(docs: &Documents, z: &[u16], k: usize) -> Self {
        let mut c = Counts { doc_topic: vec![0; docs.num_docs() * k], word_topic: vec![0; docs.num_terms * k], topic_totals: vec![0; k] };
        for d in 0..docs.num_docs() {
            let mut t = docs.token_offsets[d];
            let (terms, counts) = &docs.rows[d];
            for (&w, &n) in terms.iter().zip(counts) {
                for _ in 0..n {
                    let topic = z[t] as usize;
                    c.doc_topic[d * k + topic] += 1;
                    c.word_topic[w as usize * k + topic] += 1;
                    c.topic_totals[topic] += 1;
                    t += 1;
                }
            }
        }
        c
    }
}

/// `sweeps` sweeps of collapsed LDA Gibbs from `z` (changed in place), then the topics
/// relabelled largest first. Returns each document's activations v (D × K̄) matching
/// its smoothed proportions. `stop` is asked before every sweep: a cancelled job ends
/// its start there (its fit then stops before the first scan, with nothing saved).
#[allow(clippy::too_many_arguments)]
pub fn warm_start(
    docs: &Documents,
    z: &mut [u16],
    num_topics: usize,
    (beta, prior): (f64, &SeedPrior),
    sweeps: usize,
    blocks: &[Range<usize>],
    seed: u64,
    stop: &(dyn Fn() -> bool + Sync),
) -> Vec<f64> {
    let k = num_topics;
    let mut counts = Counts::seeded(docs, z, k, prior);
    let w_beta = docs.num_terms as f64 * beta;
    for sweep in 1..=sweeps as u64 {
        if stop() {
            break;
        }
        for block in blocks {
            let updates: Vec<DocMoves> = block
                .clone()
                .into_par_iter()
                .map(|d| {
                    let mut rng = stream(seed, Purpose::DcntWarmStart, sweep, d as u64);
                    sweep_document(docs, z, &counts, d, beta, w_beta, &mut rng)
                })
                .collect();
            apply_block(docs, z, &mut counts, block.clone(), updates);
        }
    }
    relabel_by_size(z, &counts.topic_totals, prior.num_topics());
    smoothed_activations(docs, z, k)
}

/// One collapsed Gibbs sweep over document `d`'s tokens, against the block-start counts
/// with exact live corrections for the document's own moves; `w_beta` is Wβ.
fn sweep_document(docs: &Documents, z: &[u16], counts: &Counts, d: usize, beta: f64, w_beta: f64, rng: &mut StreamRng) -> DocMoves {
    let k = counts.topic_totals.len();
    let (start, end) = (docs.token_offsets[d], docs.token_offsets[d + 1]);
    let mut zd = z[start..end].to_vec();
    let mut n_dk: Vec<i64> = counts.doc_topic[d * k..(d + 1) * k].iter().map(|&c| c as i64).collect();
    // This document's own moves, against the block-start word counts.
    let (terms, term_counts) = &docs.rows[d];
    let mut term_delta = vec![0i32; terms.len() * k];
    let mut total_delta = vec![0i64; k];
    let mut weights = vec![0.0; k];
    let mut t = 0;
    for (j, (&w, &c)) in terms.iter().zip(term_counts).enumerate() {
        let row = &counts.word_topic[w as usize * k..(w as usize + 1) * k];
        for _ in 0..c {
            let old = zd[t] as usize;
            let mut sum = 0.0;
            for topic in 0..k {
                let own = (topic == old) as i64;
                let m_kw = row[topic] as i64 + term_delta[j * k + topic] as i64 - own;
                let m_k = counts.topic_totals[topic] as i64 + total_delta[topic] - own;
                sum += ((n_dk[topic] - own) as f64 + ALPHA) * (m_kw as f64 + beta) / (m_k as f64 + w_beta);
                weights[topic] = sum;
            }
            let target = rng.random::<f64>() * sum;
            let new = weights.iter().position(|&c| target < c).unwrap_or(k - 1);
            if new != old {
                zd[t] = new as u16;
                n_dk[old] -= 1;
                n_dk[new] += 1;
                term_delta[j * k + old] -= 1;
                term_delta[j * k + new] += 1;
                total_delta[old] -= 1;
                total_delta[new] += 1;
            }
            t += 1;
        }
    }
    let delta = &term_delta;
    let moves = terms
        .iter()
        .enumerate()
        .flat_map(|(j, &w)| (0..k).filter(move |&topic| delta[j * k + topic] != 0).map(move |topic| (w, topic as u16, delta[j * k + topic])))
        .collect();
    DocMoves { z: zd, doc_topic: n_dk.iter().map(|&n| n as u32).collect(), moves }
}

/// A block's sweeps applied in document order: assignments, document counts, then each
/// document's moves of the shared word and topic counts.
fn apply_block(docs: &Documents, z: &mut [u16], counts: &mut Counts, block: Range<usize>, updates: Vec<DocMoves>) {
    let k = counts.topic_totals.len();
    for (d, up) in block.zip(updates) {
        let start = docs.token_offsets[d];
        z[start..start + up.z.len()].copy_from_slice(&up.z);
        counts.doc_topic[d * k..(d + 1) * k].copy_from_slice(&up.doc_topic);
        for (w, topic, change) in up.moves {
            let cell = &mut counts.word_topic[w as usize * k + topic as usize];
            *cell = (*cell as i64 + change as i64) as u32;
            let total = &mut counts.topic_totals[topic as usize];
            *total = (*total as i64 + change as i64) as u64;
        }
    }
}

/// Each document's activations (D × K̄) whose stick weights are its smoothed
/// proportions (n_dk + α)/(N_d + Kα) under the assignment `z`.
pub(super) fn smoothed_activations(docs: &Documents, z: &[u16], k: usize) -> Vec<f64> {
    let counts = Counts::of(docs, z, k);
    (0..docs.num_docs())
        .flat_map(|d| {
            let n_d: u32 = counts.doc_topic[d * k..(d + 1) * k].iter().sum();
            let p: Vec<f64> = counts.doc_topic[d * k..(d + 1) * k].iter().map(|&n| (n as f64 + ALPHA) / (n_d as f64 + k as f64 * ALPHA)).collect();
            inverse_stick(&p)
        })
        .collect()
}

/// Topic labels renumbered so that label 0 has the most tokens (ties by old label),
/// the first `pinned` (seeded topics: topic i is seed i) left where they are and the
/// others ordered after them.
fn relabel_by_size(z: &mut [u16], totals: &[u64], pinned: usize) {
    let pinned = pinned.min(totals.len());
    let mut order: Vec<usize> = (pinned..totals.len()).collect();
    order.sort_by(|&a, &b| totals[b].cmp(&totals[a]).then(a.cmp(&b)));
    let order: Vec<usize> = (0..pinned).chain(order).collect();
    let mut new_label = vec![0u16; totals.len()];
    for (rank, &old) in order.iter().enumerate() {
        new_label[old] = rank as u16;
    }
    z.iter_mut().for_each(|t| *t = new_label[*t as usize]);
}

/// The v whose stick-breaking weights are `p` (positive, summing to 1): v_k =
/// logit(p_k / (1 − Σ_{l<k} p_l)); the last entry, which π does not read, is 0.
pub fn inverse_stick(p: &[f64]) -> Vec<f64> {
    let mut rest = 1.0;
    let mut v = vec![0.0; p.len()];
    for (k, &pk) in p.iter().enumerate().take(p.len().saturating_sub(1)) {
        let share = (pk / rest).clamp(1e-12, 1.0 - 1e-12);
        v[k] = (share / (1.0 - share)).ln();
        rest -= pk;
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::dcnt::stick::stick_weights;

    #[test]
    fn inverse_stick_gives_back_the_weights() {
        for p in [vec![0.5, 0.3, 0.2], vec![0.01, 0.01, 0.97, 0.01], vec![0.25; 4]] {
            let back = stick_weights(&inverse_stick(&p));
            assert!(p.iter().zip(&back).all(|(a, b)| (a - b).abs() < 1e-12), "{p:?} → {back:?}");
        }
    }

    /// A start told to stop runs no sweep: the assignments are only relabelled.
    #[test]
    fn a_stopped_start_runs_no_sweep() {
        let rows = vec![(vec![0u32, 1, 2], vec![2u32, 1, 3]); 6];
        let docs = Documents::new(rows, vec![1.0; 6], 1, 3);
        let blocks = docs.blocks(8);
        let start: Vec<u16> = (0..docs.num_tokens()).map(|t| (t % 3) as u16).collect();
        let (mut stopped, mut none) = (start.clone(), start.clone());
        let v_stopped = warm_start(&docs, &mut stopped, 3, (0.01, &SeedPrior::default()), 50, &blocks, 1, &|| true);
        let v_none = warm_start(&docs, &mut none, 3, (0.01, &SeedPrior::default()), 0, &blocks, 1, &|| false);
        assert_eq!((stopped, v_stopped), (none, v_none));
    }

    #[test]
    fn topics_are_relabelled_largest_first() {
        let mut z = vec![0u16, 1, 1, 2, 2, 2, 0];
        relabel_by_size(&mut z, &[2, 2, 3], 0);
        assert_eq!(z, vec![1, 2, 2, 0, 0, 0, 1], "2 (3 tokens) first, then 0 and 1 (2 each) in order");
    }

    /// Forty documents, each written from one of two disjoint halves of the vocabulary,
    /// start with every token's topic drawn at random; after the start each topic holds
    /// the words of one half (more than 95 % of its tokens), documents' activations give
    /// their own topic most weight, and the result is the same on one and two threads.
    #[test]
    fn the_start_separates_disjoint_vocabularies() {
        let (v, k) = (20u32, 2usize);
        let rows: Vec<(Vec<u32>, Vec<u32>)> =
            (0..40).map(|d| if d % 2 == 0 { ((0..v / 2).collect(), vec![3; 10]) } else { ((v / 2..v).collect(), vec![3; 10]) }).collect();
        let docs = Documents::new(rows, vec![1.0; 40], 1, v as usize);
        let blocks = docs.blocks(64);
        let run = || {
            let mut rng = stream(1, Purpose::Estimate, 0, 0);
            let mut z: Vec<u16> = (0..docs.num_tokens()).map(|_| rng.random_range(0..k as u16)).collect();
            let v = warm_start(&docs, &mut z, k, (0.01, &SeedPrior::default()), 30, &blocks, 5, &|| false);
            (z, v)
        };
        let (z, act) = run();
        let two = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap().install(run);
        assert_eq!((z.clone(), act.clone()), two);
        let counts = Counts::of(&docs, &z, k);
        for topic in 0..k {
            let low: u32 = (0..v as usize / 2).map(|w| counts.word_topic[w * k + topic]).sum();
            let purity = low.max(counts.topic_totals[topic] as u32 - low) as f64 / counts.topic_totals[topic] as f64;
            assert!(purity > 0.95, "topic {topic}: {purity}");
        }
        for d in 0..40 {
            let pi = stick_weights(&act[d * k..(d + 1) * k]);
            let own = (0..k).max_by_key(|&t| counts.doc_topic[d * k + t]).unwrap();
            assert!(pi[own] > 0.9, "document {d}: {pi:?}");
        }
    }
}
