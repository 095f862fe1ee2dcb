//! The delete move: topic k removed, every document inferred without it for a pass and
//! up to [`REFINE_SWEEPS`] more global and local steps, accepted as soon as the exact
//! objective beats the current one.
//!
//! Why it exists: it is what lets the HDP infer its number of topics at the defaults.
//! Merges only combine topics (and blend them: on reuters395 they cost 0.09 nats per
//! held-out token), so a topic the data do not support has to go by being deleted, its
//! tokens going wherever the other topics explain them best. A delete proposal
//! ([`super::proposal`]) removes k from a copy of the model at the start of a pass: the
//! other topics' q(φ) and sticks, k's expected weight spread over the rest. As bnpy's
//! delete does, two things give k's tokens a fair chance to find their new topics:
//! - the topics whose document counts correlate positively with k's start the pass with
//!   k's word counts added to theirs ("bycorr"), so that they can take k's words in the
//!   first local step (the proposal's own global steps then drop that start);
//! - a document with at least [`COLD_START_SHARE`] of its tokens in k restarts from the
//!   proposal's global weights; the others are warm-started from their counts without
//!   k. Warm-started without k, a document whose tokens were mostly k's has almost no
//!   weight left on the topic that should take them, and its local step stays in the
//!   optimum where they go elsewhere (decision 0035's one-topic optimum): on a planted
//!   corpus 8 duplicate fragments of the 6 topics survived every delete proposal.
//!
//! The first version of this move (none of the above, judged after the one local step)
//! was accepted 0–2 times in 50 passes on reuters395, where K stayed at 48–50; this one
//! lets the defaults infer K (decision 0070).

use super::memo::Memo;
use super::proposal::Proposal;
use super::summary::Summary;
use crate::inference::stick_posterior::StickPosterior;
use crate::ranks::collectives::{bytes_to_f64s, f64s_to_bytes};

/// Extra global and local steps a delete proposal may take before it is rejected (it is
/// accepted after the first that puts it above the current state). On reuters395 (seeds
/// 1–3, a delete every pass, 50 passes, before the cold starts): 3 left K 13–15 at
/// −7.418 nats per held-out token, 5 left 11–14 at −7.425 and 8 left 11–14 at −7.433;
/// with none too few deletes were accepted to infer K.
pub const REFINE_SWEEPS: usize = 3;

/// A document holding at least this share of its tokens in the target restarts from the
/// proposal's global weights rather than from its counts without the target (bnpy's
/// rule for its delete proposals).
const COLD_START_SHARE: f64 = 0.05;

/// A topic whose document counts correlate with the target's at least this much (Pearson,
/// over the training documents) starts the proposal's pass with the target's word counts
/// added to its own: bnpy's threshold for its "bycorr" start.
const ABSORB_MIN_CORRELATION: f64 = 0.001;

/// Propose deleting `topic` (K ≥ 2) from the current state.
pub fn propose(memo: &Memo, topic: usize) -> Proposal {
    let k = memo.num_topics();
    assert!(k >= 2 && topic < k, "delete {topic} of {k}");
    let mut beta = memo.stick.expected_beta();
    beta.remove(topic);
    let mut omega = memo.stick.omega.clone();
    omega.remove(topic);
    let stick = StickPosterior::from_expected_beta(&beta, omega);
    let doc_topic = memo
        .doc_topic
        .iter()
        .map(|store| store.chunks(k).flat_map(|row| row.iter().enumerate().filter(|&(t, _)| t != topic).map(|(_, &x)| x)).collect())
        .collect();
    let absorbing: Vec<bool> = usage_correlation(memo, topic).iter().map(|&r| r >= ABSORB_MIN_CORRELATION).collect();
    let mut proposal = Proposal::new(&absorbing_start(&memo.total, topic, &absorbing), memo.params.lambda, stick, doc_topic);
    proposal.cold_start_where(memo, |b, i| {
        let row = &memo.doc_topic[b][i * k..(i + 1) * k];
        let tokens: f64 = row.iter().sum();
        tokens > 0.0 && row[topic] >= COLD_START_SHARE * tokens
    });
    proposal
}

/// The proposal's starting topic-word counts: `total` without `topic`, with `topic`'s
/// counts added to every other topic `t` where `absorbing[t]`.
fn absorbing_start(total: &Summary, topic: usize, absorbing: &[bool]) -> Summary {
    let k = total.num_topics;
    let mut start = total.without_topic(topic);
    let kept = (0..k).filter(|&t| t != topic);
    for (slot, _) in kept.enumerate().filter(|&(_, t)| absorbing[t]) {
        for (dst, row) in start.word_topic.chunks_mut(k - 1).zip(total.word_topic.chunks(k)) {
            dst[slot] += row[topic];
        }
    }
    start
}

/// Each topic's Pearson correlation with `target` over the training documents' expected
/// topic counts. Over ranks the sums run batch by batch in rank order, so every rank
/// (and one process) adds the documents in the same order and gets the same bits.
fn usage_correlation(memo: &Memo, target: usize) -> Vec<f64> {
    let k = memo.num_topics();
    let mut sums = vec![0.0; 1 + 3 * k];
    for store in &memo.doc_topic {
        let mut add_mine = |running: Vec<u8>| f64s_to_bytes(&add_rows(bytes_to_f64s(&running), store, k, target));
        sums = bytes_to_f64s(&memo.ranks.fold_bytes_in_rank_order(f64s_to_bytes(&sums), &mut add_mine));
    }
    correlations(&sums, k, target)
}

/// `sums` ([documents, Σ n_t, Σ n_t², Σ n_t n_target], K each but the first) with the
/// rows of `store` (documents × `k` counts) added in order.
fn add_rows(mut sums: Vec<f64>, store: &[f64], k: usize, target: usize) -> Vec<f64> {
    for row in store.chunks(k) {
        sums[0] += 1.0;
        for (t, &n) in row.iter().enumerate() {
            sums[1 + t] += n;
            sums[1 + k + t] += n * n;
            sums[1 + 2 * k + t] += n * row[target];
        }
    }
    sums
}

/// Each topic's correlation with `target` from [`add_rows`]' sums (0 where either side
/// does not vary over the documents).
fn correlations(sums: &[f64], k: usize, target: usize) -> Vec<f64> {
    let d = sums[0].max(1.0);
    let mean = |t: usize| sums[1 + t] / d;
    let sd = |t: usize| (sums[1 + k + t] / d - mean(t) * mean(t)).max(0.0).sqrt();
    (0..k)
        .map(|t| {
            let denominator = sd(t) * sd(target);
            if denominator > 0.0 {
                (sums[1 + 2 * k + t] / d - mean(t) * mean(target)) / denominator
            } else {
                0.0
            }
        })
        .collect()
}

/// The topic to propose deleting: the `rank`-th smallest by expected tokens among the
/// topics from `protected` on (ranks cycle while proposals are rejected, so every such
/// topic gets its turn); `None` when every topic is protected.
pub fn choose_topic(total: &Summary, rank: usize, protected: usize) -> Option<usize> {
    let k = total.num_topics;
    let mut order: Vec<usize> = (protected..k).collect();
    order.sort_by(|&a, &b| total.topic_counts[a].total_cmp(&total.topic_counts[b]).then(a.cmp(&b)));
    (!order.is_empty()).then(|| order[rank % order.len()])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn correlations_are_pearsons_over_the_documents_in_any_split_of_the_rows() {
        // 5 documents over 3 topics; the target is topic 0.
        let rows = [[4.0, 8.0, 1.0], [1.0, 2.0, 3.0], [0.0, 0.0, 5.0], [3.0, 6.5, 0.0], [2.0, 4.0, 2.0]];
        let flat: Vec<f64> = rows.iter().flatten().copied().collect();
        let whole = correlations(&add_rows(vec![0.0; 10], &flat, 3, 0), 3, 0);
        let split = correlations(&add_rows(add_rows(vec![0.0; 10], &flat[..6], 3, 0), &flat[6..], 3, 0), 3, 0);
        let pearson = |t: usize| {
            let (x, y): (Vec<f64>, Vec<f64>) = rows.iter().map(|r| (r[t], r[0])).unzip();
            let (mx, my) = (x.iter().sum::<f64>() / 5.0, y.iter().sum::<f64>() / 5.0);
            let cov: f64 = x.iter().zip(&y).map(|(a, b)| (a - mx) * (b - my)).sum();
            let (vx, vy): (f64, f64) = (x.iter().map(|a| (a - mx).powi(2)).sum(), y.iter().map(|b| (b - my).powi(2)).sum());
            cov / (vx * vy).sqrt()
        };
        for t in 0..3 {
            assert!((whole[t] - pearson(t)).abs() < 1e-12, "topic {t}: {} against {}", whole[t], pearson(t));
            assert_eq!(whole[t], split[t], "topic {t}: the same sums in the same order");
        }
        assert!(whole[1] > 0.99 && whole[2] < -0.5, "{whole:?}");
        let constant = correlations(&add_rows(vec![0.0; 7], &[1.0, 3.0, 1.0, 5.0], 2, 1), 2, 1);
        assert_eq!(constant[0], 0.0, "a topic that does not vary correlates with nothing");
    }

    #[test]
    fn the_absorbing_topics_start_with_the_targets_counts_and_the_others_without() {
        let words: Vec<u32> = (0..3).collect();
        let mut total = Summary::zeros(words, 3);
        // word w, topic t: 10 w + t
        for w in 0..3 {
            for t in 0..3 {
                total.word_topic[w * 3 + t] = (10 * w + t) as f64;
            }
        }
        let start = absorbing_start(&total, 1, &[true, false, false]);
        assert_eq!(start.num_topics, 2);
        for w in 0..3 {
            let (own0, target, own2) = ((10 * w) as f64, (10 * w + 1) as f64, (10 * w + 2) as f64);
            assert_eq!(start.word_topic[w * 2], own0 + target, "topic 0 absorbs word {w}");
            assert_eq!(start.word_topic[w * 2 + 1], own2, "topic 2 keeps its own counts of word {w}");
        }
    }
}
