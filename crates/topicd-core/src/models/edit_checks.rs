//! What the families' edit tests share: distances between topics' word distributions,
//! and the planted blocks of the corpora they refit.
//!
//! Why it exists: LDA's and PCM's edits are held to the same bounds (an untouched topic
//! within a tenth of the nearest distinct topic's distance, a split that separates two
//! planted blocks), and each family's test read them off its own model the same way.

use crate::corpus::Corpus;

/// The L1 distance between two word distributions (0: the same, 2: disjoint).
pub(crate) fn l1(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).sum()
}

/// The smallest L1 distance between two different topics of `live`, whose word
/// distributions `row` gives: how far apart "another topic" is, the scale an untouched
/// topic's drift is judged on.
pub(crate) fn nearest_other(row: impl Fn(usize) -> Vec<f64>, live: &[usize]) -> f64 {
    let mut best = f64::INFINITY;
    for (i, &a) in live.iter().enumerate() {
        for &b in &live[i + 1..] {
            best = best.min(l1(&row(a), &row(b)));
        }
    }
    best
}

/// The mass a word distribution puts on planted block `block` of `corpus` (the words
/// `w{block·size}` to `w{block·size + size − 1}`).
pub(crate) fn block_mass(row: &[f64], corpus: &Corpus, block: usize, size: usize) -> f64 {
    (0..row.len()).filter(|&w| corpus.lexicon.word(w as u32)[1..].parse::<usize>().unwrap() / size == block).map(|w| row[w]).sum()
}

/// The block holding most of a topic's mass among `blocks` (`mass(b)`), with that mass.
pub(crate) fn main_block(blocks: usize, mass: impl Fn(usize) -> f64) -> (f64, usize) {
    (0..blocks).map(|b| (mass(b), b)).max_by(|a, b| a.0.total_cmp(&b.0)).expect("at least one block")
}

/// Of `topics` topics over `blocks` planted blocks (`mass(k, b)`), the one that holds
/// most on its second-largest block, and its two largest blocks: the topic a fit with
/// too few topics made of two planted ones.
pub(crate) fn two_block_topic(topics: usize, blocks: usize, mass: impl Fn(usize, usize) -> f64) -> (usize, [usize; 2]) {
    (0..topics)
        .map(|k| {
            let mut masses: Vec<(f64, usize)> = (0..blocks).map(|b| (mass(k, b), b)).collect();
            masses.sort_by(|a, b| b.0.total_cmp(&a.0));
            (k, (masses[0], masses[1]))
        })
        .max_by(|a, b| a.1 .1 .0.total_cmp(&b.1 .1 .0))
        .map(|(k, ((_, a), (_, b)))| (k, [a, b]))
        .expect("at least one topic")
}
