//! The birth move: one topic split into fresh topics, proposed for a whole pass and
//! accepted only if the exact objective rises.
//!
//! Why it exists: merges and deletes only ever remove topics, so a fit that starts from
//! topics blending several themes (whole documents, bnpy's "randexamples") can only
//! blend them further; on reuters395 merges alone settled in optima about 0.05 nats per
//! held-out token below bnpy's, whose births add topics back where the data supports them
//! (Hughes, Kim & Sudderth 2015, section 4). A birth targets topic k (the largest topics
//! in turn): the documents holding most of k's tokens give each of their words' share
//! in k (x_dw = c_dw r_dwk under the current state), a short variational fit of
//! [`FRESH_TOPICS`] topics on those weighted counts (LDA's updates, started from as many
//! target documents drawn by the seed) splits them, and the proposal replaces k by the
//! fresh topics: their counts scaled to k's tokens, k's stick weight shared among them,
//! each document's count of k divided as its own words were (the global shares for
//! documents outside the target). The proposal then runs a whole pass beside the current
//! state ([`super::proposal`]) and [`REFINE_SWEEPS`] more global and local steps of its
//! own before it is decided; merges later recombine fresh topics the data does not
//! support. A birth pass thus costs up to five local steps instead of one. In an update a
//! parent topic's largest fresh part takes its place and id ([`Memo::protected`]). The proposal never takes the model above the truncation `topics`.
//! Births run in one process only: the target documents are spread over ranks otherwise.

use super::memo::Memo;
use super::params::HdpParams;
use super::proposal::Proposal;
use super::summary::Summary;
use crate::inference::stick_posterior::StickPosterior;
use crate::rng::{stream, Purpose};
use rand::RngExt;
use statrs::function::gamma::digamma;

/// Fresh topics a birth proposes in place of its target. On reuters395 (seeds 1–3, with
/// merges every pass) 2 gave −7.443 nats per held-out token, 3 gave −7.452 and 4 −7.479.
pub const FRESH_TOPICS: usize = 2;
/// Extra global and local steps the proposal takes over every batch before it is
/// decided: fresh topics start from a crude split, and judged after one local step under
/// it no birth was ever accepted on reuters395 (the proposals trailed by 40 to 1 400
/// nats); with 3 they are accepted where the data supports them.
pub const REFINE_SWEEPS: usize = 3;
/// The target documents: at most this many, those with the most of the target's tokens.
const MAX_TARGET_DOCUMENTS: usize = 400;
/// A document joins the target when it holds at least this many of the target's tokens.
const MIN_TARGET_TOKENS: f64 = 1.0;
/// Rounds of the restricted fit (local step, then the fresh topics' counts).
const RESTRICTED_ROUNDS: usize = 20;
/// Coordinate-ascent iterations per target document in each round.
const DOCUMENT_ITERATIONS: usize = 10;
/// A fresh topic with fewer expected tokens than this is dropped before proposing.
const MIN_FRESH_TOKENS: f64 = 1.0;

/// The topic to target: the `rank`-th largest by expected tokens (ranks cycle while
/// proposals are rejected); in an update (`grown_from`, the parent's expected tokens per
/// protected topic, [`Memo::birth_baseline`]), the `rank`-th by growth over the parent
/// instead (an added topic's growth is its tokens), so births go where the new
/// documents went.
pub fn choose_topic(total: &Summary, rank: usize, grown_from: Option<&[f64]>) -> usize {
    let k = total.num_topics;
    let n = &total.topic_counts;
    let mut order: Vec<usize> = (0..k).collect();
    match grown_from {
        None => order.sort_by(|&a, &b| n[b].total_cmp(&n[a]).then(a.cmp(&b))),
        Some(before) => {
            // An added topic grew from nothing: its tokens (an empty one comes last).
            let growth = |t: usize| n[t] / before.get(t).copied().unwrap_or(0.0).max(1.0);
            order.sort_by(|&a, &b| growth(b).total_cmp(&growth(a)).then(n[b].total_cmp(&n[a])).then(a.cmp(&b)));
        }
    }
    order[rank % k]
}

/// One target document: its words (distinct, in a compact vocabulary), their weights
/// x_dw, and where its counts are stored (batch, row).
pub(super) struct TargetDocument {
    pub(super) words: Vec<usize>,
    pub(super) weights: Vec<f64>,
    pub(super) at: (usize, usize),
}

/// Propose splitting `topic` into at most `fresh` topics (`None` when its documents do
/// not support two, or the fit runs over ranks). `seed` and `pass` choose the fresh
/// topics' starting documents.
pub fn propose(memo: &Memo, topic: usize, fresh: usize, seed: u64, pass: usize) -> Option<Proposal> {
    if memo.ranks.size() > 1 || fresh < 2 {
        return None;
    }
    let (targets, vocabulary) = target_documents(memo, topic);
    if targets.len() < 2 {
        return None;
    }
    let (counts, shares) = restricted_fit(&targets, vocabulary.len(), (memo.params, memo.num_terms), fresh, &mut birth_stream(seed, pass), &[]);
    let kept: Vec<usize> = (0..counts.len()).filter(|&j| counts[j].iter().sum::<f64>() >= MIN_FRESH_TOKENS).collect();
    if kept.len() < 2 {
        return None;
    }
    let mass: Vec<f64> = kept.iter().map(|&j| counts[j].iter().sum::<f64>()).collect();
    let fresh_total: f64 = mass.iter().sum();
    let global_share: Vec<f64> = mass.iter().map(|m| m / fresh_total).collect();
    let k = memo.num_topics();
    let slots = layout(k, topic, &mass, memo.protected);
    let kk = slots.len();
    let scale = memo.total.topic_counts[topic].max(fresh_total) / fresh_total;
    let mut topics = Summary::dense(memo.num_terms, kk);
    for w in 0..memo.num_terms {
        for (s, slot) in slots.iter().enumerate() {
            if let Slot::Old(t) = *slot {
                topics.word_topic[w * kk + s] = memo.total.word_topic[w * k + t];
            }
        }
    }
    for (s, slot) in slots.iter().enumerate() {
        if let Slot::Fresh(i) = *slot {
            for (c, &w) in vocabulary.iter().enumerate() {
                topics.word_topic[w * kk + s] = scale * counts[kept[i]][c];
            }
        }
    }
    let beta = memo.stick.expected_beta();
    let pick = |old: &dyn Fn(usize) -> f64, fresh: &dyn Fn(usize) -> f64| -> Vec<f64> {
        slots
            .iter()
            .map(|slot| match *slot {
                Slot::Old(t) => old(t),
                Slot::Fresh(i) => fresh(i),
            })
            .collect()
    };
    let mut new_beta = pick(&|t| beta[t], &|i| beta[topic] * global_share[i]);
    new_beta.push(beta[k]);
    let omega = pick(&|t| memo.stick.omega[t], &|_| memo.stick.omega[topic]);
    let stick = StickPosterior::from_expected_beta(&new_beta, omega);
    let mut own_share: std::collections::HashMap<(usize, usize), Vec<f64>> = std::collections::HashMap::new();
    for (doc, s) in targets.iter().zip(&shares) {
        let sum: f64 = kept.iter().map(|&j| s[j]).sum();
        if sum > 0.0 {
            own_share.insert(doc.at, kept.iter().map(|&j| s[j] / sum).collect());
        }
    }
    let doc_topic = memo
        .doc_topic
        .iter()
        .enumerate()
        .map(|(b, store)| {
            store
                .chunks(k)
                .enumerate()
                .flat_map(|(row, n)| {
                    let share = own_share.get(&(b, row)).unwrap_or(&global_share);
                    pick(&|t| n[t], &|i| n[topic] * share[i])
                })
                .collect()
        })
        .collect();
    Some(Proposal::new(&topics, memo.params.lambda, stick, doc_topic))
}

/// The words target documents use, numbered in the order they first appear (the
/// restricted fit's vocabulary).
#[derive(Default)]
pub(super) struct CompactVocabulary {
    ids: std::collections::HashMap<usize, usize>,
    /// The corpus' word id of each compact id.
    pub(super) words: Vec<usize>,
}

impl CompactVocabulary {
    /// The compact id of corpus word `w`, if a target document uses it.
    pub(super) fn compact(&self, w: usize) -> Option<usize> {
        self.ids.get(&w).copied()
    }

    /// Add weight `x` of corpus word `w` to `doc`, numbering `w` on its first use.
    pub(super) fn push(&mut self, doc: &mut TargetDocument, w: usize, x: f64) {
        let next = self.words.len();
        let id = *self.ids.entry(w).or_insert(next);
        if id == next {
            self.words.push(w);
        }
        doc.words.push(id);
        doc.weights.push(x);
    }
}

/// Where a proposed topic comes from: a current topic, or the i-th fresh one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Slot {
    Old(usize),
    Fresh(usize),
}

/// The proposal's topics in order, replacing `topic` of `k` by fresh topics of
/// expected tokens `mass`: every other topic in its order, then the fresh ones; but a
/// protected target ([`Memo::protected`]) keeps its place and id for its largest fresh
/// topic, the others following every current topic.
pub(super) fn layout(k: usize, topic: usize, mass: &[f64], protected: usize) -> Vec<Slot> {
    let fresh = mass.len();
    if topic >= protected {
        return (0..k).filter(|&t| t != topic).map(Slot::Old).chain((0..fresh).map(Slot::Fresh)).collect();
    }
    let largest = (0..fresh).max_by(|&a, &b| mass[a].total_cmp(&mass[b]).then(b.cmp(&a))).expect("at least two fresh topics");
    let in_place = (0..k).map(|t| if t == topic { Slot::Fresh(largest) } else { Slot::Old(t) });
    in_place.chain((0..fresh).filter(|&i| i != largest).map(Slot::Fresh)).collect()
}

/// The documents with the most of `topic`'s tokens and each word's share in it,
/// x_dw = c_dw r_dwk with r_dwk ∝ exp(E[log π_dk] + E[log φ_kw]) under the current state;
/// and the compact vocabulary (word ids) their words index.
fn target_documents(memo: &Memo, topic: usize) -> (Vec<TargetDocument>, Vec<usize>) {
    let k = memo.num_topics();
    let mut candidates: Vec<(f64, usize, usize)> = Vec::new();
    for (b, store) in memo.doc_topic.iter().enumerate() {
        for (row, n) in store.chunks(k).enumerate() {
            if n[topic] >= MIN_TARGET_TOKENS {
                candidates.push((n[topic], b, row));
            }
        }
    }
    candidates.sort_by(|x, y| y.0.total_cmp(&x.0).then((x.1, x.2).cmp(&(y.1, y.2))));
    candidates.truncate(MAX_TARGET_DOCUMENTS);
    let prior: Vec<f64> = memo.stick.expected_beta().iter().map(|b| memo.params.alpha * b).collect();
    let exp_elog_phi = &memo.topic_word.exp_elog_phi;
    let mut vocabulary = CompactVocabulary::default();
    let targets = candidates
        .iter()
        .map(|&(_, b, row)| {
            let n = &memo.doc_topic[b][row * k..(row + 1) * k];
            let a: Vec<f64> = (0..k).map(|t| digamma(n[t] + prior[t]).exp()).collect();
            let d = memo.docs.layouts[b].docs.start + row;
            let (terms, counts) = memo.docs.matrix.row(d);
            let mut doc = TargetDocument { words: Vec::new(), weights: Vec::new(), at: (b, row) };
            for (&w, &c) in terms.iter().zip(counts) {
                let e = &exp_elog_phi[w as usize * k..(w as usize + 1) * k];
                let z: f64 = a.iter().zip(e).map(|(x, y)| x * y).sum();
                let x = c as f64 * a[topic] * e[topic] / z;
                if z > 0.0 && x.is_finite() && x > 0.0 {
                    vocabulary.push(&mut doc, w as usize, x);
                }
            }
            doc
        })
        .filter(|doc| !doc.words.is_empty())
        .collect();
    (targets, vocabulary.words)
}

/// The stream a birth's restricted fit in pass `pass` draws its starting documents from
/// (an update's added topics use pass 0, which no birth has).
pub(super) fn birth_stream(seed: u64, pass: usize) -> crate::rng::StreamRng {
    stream(seed, Purpose::HdpBirth, pass as u64, 0)
}

/// A short variational fit of `fresh` topics to the target documents' weighted counts
/// (LDA's updates under the model's λ and α / `fresh`, over its `num_terms` words).
/// Without `pinned` words it starts from `fresh` distinct target documents drawn from
/// `rng`; with them (an edit's seeded split: `pinned[j]`, compact word ids, for each
/// fresh topic j) topic j starts from its pinned words' weighted counts alone and no
/// other topic takes them. Returns each fresh topic's counts over the compact
/// vocabulary and each target document's counts per fresh topic.
pub(super) fn restricted_fit(
    targets: &[TargetDocument],
    words: usize,
    (params, num_terms): (&HdpParams, usize),
    fresh: usize,
    rng: &mut crate::rng::StreamRng,
    pinned: &[Vec<usize>],
) -> (Vec<Vec<f64>>, Vec<Vec<f64>>) {
    let j = if pinned.is_empty() { fresh.min(targets.len()) } else { fresh };
    let lambda = params.lambda;
    let v = num_terms as f64;
    let doc_prior = params.alpha / j as f64;
    let mut counts = if pinned.is_empty() { counts_of_drawn_documents(targets, words, j, rng) } else { counts_of_pinned_words(targets, words, pinned) };
    // Topic t may not take word w when w is pinned to another topic.
    let mut barred = vec![vec![false; words]; j];
    for (t, own) in pinned.iter().enumerate() {
        for &w in own {
            (0..j).filter(|&u| u != t).for_each(|u| barred[u][w] = true);
        }
    }
    let mut shares = vec![vec![0.0; j]; targets.len()];
    for _ in 0..RESTRICTED_ROUNDS {
        let exp_elog: Vec<Vec<f64>> = counts
            .iter()
            .zip(&barred)
            .map(|(c, barred)| {
                let norm = digamma(v * lambda + c.iter().sum::<f64>());
                c.iter().zip(barred).map(|(&n, &no)| if no { 0.0 } else { (digamma(lambda + n) - norm).exp() }).collect()
            })
            .collect();
        let mut next = vec![vec![0.0; words]; j];
        for (doc, share) in targets.iter().zip(shares.iter_mut()) {
            let total: f64 = doc.weights.iter().sum();
            let mut n = vec![total / j as f64; j];
            for _ in 0..DOCUMENT_ITERATIONS {
                let a: Vec<f64> = n.iter().map(|&x| digamma(x + doc_prior).exp()).collect();
                let mut updated = vec![0.0; j];
                for (&w, &x) in doc.words.iter().zip(&doc.weights) {
                    let z: f64 = (0..j).map(|t| a[t] * exp_elog[t][w]).sum();
                    if z > 0.0 {
                        for t in 0..j {
                            updated[t] += x * a[t] * exp_elog[t][w] / z;
                        }
                    }
                }
                n = updated;
            }
            let a: Vec<f64> = n.iter().map(|&x| digamma(x + doc_prior).exp()).collect();
            for (&w, &x) in doc.words.iter().zip(&doc.weights) {
                let z: f64 = (0..j).map(|t| a[t] * exp_elog[t][w]).sum();
                if z > 0.0 {
                    for (t, topic) in next.iter_mut().enumerate() {
                        topic[w] += x * a[t] * exp_elog[t][w] / z;
                    }
                }
            }
            *share = n;
        }
        counts = next;
    }
    (counts, shares)
}

/// `j` topics' starting counts: each one distinct target document's weighted counts,
/// the documents drawn from `rng`.
fn counts_of_drawn_documents(targets: &[TargetDocument], words: usize, j: usize, rng: &mut crate::rng::StreamRng) -> Vec<Vec<f64>> {
    let mut order: Vec<usize> = (0..targets.len()).collect();
    for i in 0..j {
        let pick = rng.random_range(i..order.len());
        order.swap(i, pick);
    }
    let mut counts = vec![vec![0.0; words]; j];
    for (topic, &d) in counts.iter_mut().zip(&order[..j]) {
        for (&w, &x) in targets[d].words.iter().zip(&targets[d].weights) {
            topic[w] += x;
        }
    }
    counts
}

/// Each topic's starting counts: its pinned words' weighted counts over the targets.
fn counts_of_pinned_words(targets: &[TargetDocument], words: usize, pinned: &[Vec<usize>]) -> Vec<Vec<f64>> {
    let mut total = vec![0.0; words];
    for doc in targets {
        for (&w, &x) in doc.words.iter().zip(&doc.weights) {
            total[w] += x;
        }
    }
    pinned.iter().map(|own| (0..words).map(|w| if own.contains(&w) { total[w] } else { 0.0 }).collect()).collect()
}
