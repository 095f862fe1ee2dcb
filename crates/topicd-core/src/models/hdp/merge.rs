//! Merge moves and the size reordering, each accepted only when the exact whole-data
//! objective improves.
//!
//! Why it exists: the truncation K is an upper bound; merges let the data decide how many
//! topics it needs. A merge of topics j < k keeps every document's local parameters and
//! adds those of j and k (r_j + r_k, θ_j + θ_k): a valid variational posterior of the
//! K − 1 topic model. Its objective is computed exactly, not bounded: the merged topic's
//! entropy, Σ_d E[log π_d,jk] and local-scalar change were tracked for the candidate pairs
//! during the pass (bnpy's approach, see [`super::summary::PairStats`]); q(φ) is optimal in
//! closed form and the sticks are re-optimised from the merged expected weights. The merge
//! is kept only if that objective exceeds the current one. Candidate pairs are chosen
//! before a pass by the cosine similarity of the topics' word counts (the most similar
//! `merge_pairs`), plus every nearly empty topic paired with the largest; each topic takes
//! part in at most one accepted merge per pass (the others' tracked statistics stay exact).
//!
//! Reordering topics by decreasing size changes only the sticks' part of the objective
//! (the GEM prior is not exchangeable); it is likewise kept only if it improves it.

use super::globals::topic_data_term;
use super::memo::Memo;
use super::summary::Summary;
use crate::inference::stick_posterior::optimise_stick;

/// A topic with fewer expected tokens than this is always a merge candidate.
const NEARLY_EMPTY: f64 = 1.0;

/// The candidate pairs (j < k) for the next pass; k, the topic a merge removes, is never
/// one of the first `protected`.
pub fn candidate_pairs(total: &Summary, max_pairs: usize, protected: usize) -> Vec<(usize, usize)> {
    let k = total.num_topics;
    if k < 2 {
        return Vec::new();
    }
    // Gram matrix of the topics' word-count vectors, one word row at a time.
    let mut gram = vec![0.0; k * k];
    for row in total.word_topic.chunks(k) {
        for a in 0..k {
            if row[a] == 0.0 {
                continue;
            }
            for b in a..k {
                gram[a * k + b] += row[a] * row[b];
            }
        }
    }
    let mut scored: Vec<(f64, usize, usize)> = Vec::with_capacity(k * (k - 1) / 2);
    for a in 0..k {
        for b in (a + 1).max(protected)..k {
            let denom = (gram[a * k + a] * gram[b * k + b]).sqrt();
            let cosine = if denom > 0.0 { gram[a * k + b] / denom } else { 0.0 };
            scored.push((cosine, a, b));
        }
    }
    // Highest similarity first; ties by index so the order is total and fixed.
    scored.sort_by(|x, y| y.0.total_cmp(&x.0).then((x.1, x.2).cmp(&(y.1, y.2))));
    let mut pairs: Vec<(usize, usize)> = scored.iter().take(max_pairs).map(|&(_, a, b)| (a, b)).collect();
    let largest = (0..k).max_by(|&a, &b| total.topic_counts[a].total_cmp(&total.topic_counts[b]).then(b.cmp(&a))).expect("k ≥ 2");
    for t in 0..k {
        if t != largest && total.topic_counts[t] < NEARLY_EMPTY {
            let pair = (t.min(largest), t.max(largest));
            if pair.1 >= protected && !pairs.contains(&pair) {
                pairs.push(pair);
            }
        }
    }
    pairs
}

/// What one round of merges did.
#[derive(Debug, Clone, Copy, Default)]
pub struct MergeRound {
    pub proposed: usize,
    pub accepted: usize,
    /// The objective after the round, recomputed from the merged summary.
    pub objective: f64,
    /// The objective the acceptance decisions reached, from the tracked pair statistics
    /// (equal to `objective` up to rounding when the bookkeeping is exact).
    pub decided_objective: f64,
}

/// Try the tracked pairs in order; keep each merge that raises the exact objective.
pub fn merge_round(memo: &mut Memo, candidates: &[(usize, usize)]) -> MergeRound {
    let (alpha, gamma, lambda) = (memo.params.alpha, memo.params.gamma, memo.params.lambda);
    let mut current = memo.objective();
    let mut round = MergeRound { objective: current.total(), decided_objective: current.total(), ..Default::default() };
    let Some(mut pair_totals) = memo.pair_totals() else { return round };
    let mut queue: Vec<(usize, usize)> = candidates.to_vec();
    let v = memo.num_terms;
    while let Some(pos) = queue.iter().position(|&(a, b)| pair_totals.find(a, b).is_some()) {
        let (j, k) = queue.remove(pos);
        let i = pair_totals.find(j, k).expect("found above");
        round.proposed += 1;
        let kk = memo.num_topics();
        let total = &memo.total;
        let data_m = topic_data_term(total.word_topic.chunks(kk).map(|row| row[j] + row[k]), lambda, v);
        let td = &memo.topic_word.data_terms;
        let data = current.data - td[j] - td[k] + data_m;
        let entropy = current.entropy - total.entropy[j] - total.entropy[k] + pair_totals.entropy[i];
        let local = current.local + pair_totals.local[i];
        let mut stats = total.stick_stats();
        stats.sum_log_pi[j] = pair_totals.sum_log_pi[i];
        stats.sum_log_pi.remove(k);
        let fit = optimise_stick(&stats, alpha, gamma, &memo.stick.merged(j, k));
        let proposal = data + entropy + local + fit.objective;
        if proposal > current.total() {
            memo.apply_merge(j, k, &mut pair_totals, fit.posterior, data_m);
            current.data = data;
            current.entropy = entropy;
            current.local = local;
            current.stick = fit.objective;
            round.accepted += 1;
            // Remaining candidates in the new indices (pairs touching j or k are gone).
            let shift = |x: usize| if x > k { x - 1 } else { x };
            queue = queue.into_iter().filter(|&(a, b)| a != j && a != k && b != j && b != k).map(|(a, b)| (shift(a), shift(b))).collect();
        }
    }
    if round.accepted > 0 {
        memo.refresh_topic_word();
    }
    round.decided_objective = current.total();
    round.objective = memo.objective().total();
    round
}

/// Reorder topics by decreasing expected token count if that raises the objective (the
/// protected first topics stay where they are, the others are sorted after them).
/// Returns whether the order changed.
pub fn reorder_by_size(memo: &mut Memo) -> bool {
    let k = memo.num_topics();
    let counts = &memo.total.topic_counts;
    let mut order: Vec<usize> = (0..k).collect();
    order[memo.protected.min(k)..].sort_by(|&a, &b| counts[b].total_cmp(&counts[a]).then(a.cmp(&b)));
    if order.iter().enumerate().all(|(i, &t)| i == t) {
        return false;
    }
    let before = memo.objective();
    let mut permuted = memo.total.clone();
    permuted.permute(&order);
    let fit = optimise_stick(&permuted.stick_stats(), memo.params.alpha, memo.params.gamma, &memo.stick.permuted(&order));
    if fit.objective > before.stick {
        memo.apply_permutation(&order, fit.posterior);
        true
    } else {
        false
    }
}
