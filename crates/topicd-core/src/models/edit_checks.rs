//! What the families' edit tests share: distances between topics' word distributions,
//! and the planted blocks of the corpora they refit.
//!
//! Why it exists: LDA's and PCM's edits are held to the same bounds (an untouched topic
//! within a tenth of the nearest distinct topic's distance, a split that separates two
//! planted blocks), and each family's test read them off its own model the same way.

use crate::corpus::lexicon::EncodedDoc;
use crate::corpus::Corpus;
use serde_json::{json, Value};

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

/// The merge check every family's edit is held to, after topics 0 and 1 of five were
/// merged: topics 2 to 4 stay within a tenth of the nearest distinct parent topic's
/// distance of where they were, and the merged topic 0 within a quarter of it of the
/// mixture of the parent's topics 0 and 1 weighted by `weights` (their shares of the
/// tokens). `parent` and `child` give a topic's word distribution.
pub(crate) fn assert_merge_of_first_two(parent: impl Fn(usize) -> Vec<f64>, child: impl Fn(usize) -> Vec<f64>, weights: (f64, f64)) {
    let scale = nearest_other(&parent, &[0, 1, 2, 3, 4]);
    for k in [2, 3, 4] {
        let moved = l1(&child(k), &parent(k));
        assert!(moved < 0.1 * scale, "topic {k} moved {moved:.3} (nearest other topic {scale:.3})");
    }
    let (s0, s1) = weights;
    let mixture: Vec<f64> = parent(0).iter().zip(parent(1)).map(|(a, b)| (s0 * a + s1 * b) / (s0 + s1)).collect();
    let merged = l1(&child(0), &mixture);
    assert!(merged < 0.25 * scale, "the merged topic is {merged:.3} from the mixture (scale {scale:.3})");
}

/// The first `n` documents of `corpus`, as a prediction request carries them.
pub(crate) fn documents(corpus: &Corpus, n: usize) -> Vec<EncodedDoc> {
    (0..n)
        .map(|d| {
            let (terms, counts) = corpus.counts.row(d);
            EncodedDoc { terms: terms.to_vec(), counts: counts.to_vec(), oov_tokens: 0 }
        })
        .collect()
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

/// A child model's topic rows, as a refit in a split check returns them.
pub(crate) type ChildRows = Box<dyn Fn(usize) -> Vec<f64>>;

/// The split check every family's edit is held to, on a corpus of four planted blocks of
/// 15 words fitted with three topics, so that one topic holds two blocks (`parent` gives
/// a parent topic's word distribution; `refit` refits the parent with the operations it
/// is given and returns the child's rows). Split into two parts seeded with two words of
/// each block, each part puts most of its mass (> 0.6; the parent topic held about 0.45
/// on each) on its seeds' block; split without seeds, the restricted run alone
/// separates the blocks too (each part's larger block above 0.6, the parts on different
/// blocks). The new part is topic 3. Returns the split topic and its two blocks.
pub(crate) fn assert_split_separates_two_blocks(
    corpus: &Corpus,
    parent: impl Fn(usize) -> Vec<f64>,
    refit: impl Fn(Value) -> ChildRows,
) -> (usize, [usize; 2]) {
    let size = 15;
    let (topic, blocks) = two_block_topic(3, 4, |k, b| block_mass(&parent(k), corpus, b, size));
    let seed_of = |b: usize| json!({"name": format!("block {b}"), "words": [format!("w{:03}", b * size), format!("w{:03}", b * size + 1)]});
    let child = refit(json!([{"op": "split", "topic": topic, "into": 2, "seed_words": [seed_of(blocks[0]), seed_of(blocks[1])]}]));
    for (part, k) in [topic, 3].into_iter().enumerate() {
        let mass = block_mass(&child(k), corpus, blocks[part], size);
        assert!(mass > 0.6, "part {part} (topic {k}) puts {mass:.2} on block {}", blocks[part]);
    }
    let child = refit(json!([{"op": "split", "topic": topic, "into": 2}]));
    let main = |k: usize| main_block(4, |b| block_mass(&child(k), corpus, b, size));
    let (a, b) = (main(topic), main(3));
    assert!(a.0 > 0.6 && b.0 > 0.6 && a.1 != b.1, "unseeded split: parts on {a:?} and {b:?}");
    (topic, blocks)
}
