//! The reference chain of a multi-chain fit, chosen by consensus.
//!
//! Why it exists: a fit of several chains serves one chain's topics, the others'
//! matched onto them ([`super::chains::align_topics`]), and a topic pooled over only the
//! chains that hold it rests on the reference's version of it. Chain 0 is an arbitrary
//! choice: where it is the one chain that merged two topics, the topic it lost is
//! served by none. The chain the others agree with most outvotes one chain's odd mode
//! (decision 0071).

use super::chains::{align_topics_pinned, alignment_of, Alignment};
use super::stability::{is_match, similarity, MATCH_SIMILARITY};

/// The chains' topics matched to a consensus chain's: the chain whose topics the others
/// hold most often (the most matched topics, [`is_match`], summed over the other
/// chains; ties to the smaller summed L1 distance). Two chains always tie (each is the
/// other's match, at the same distances), and so may more: a tie goes to the chain with
/// the higher `log_joint` (its log joint per token at the end of the fit: the better
/// mode), then to the earlier chain. Returns that chain, every other chain's alignment
/// onto it (in chain order), and where each chain's topic a goes (`targets[c][a]`; the
/// reference's stay where they are).
pub fn match_to_consensus_pinned(word_rates: &[&[f64]], log_joint: &[f64], k: usize, v: usize, pinned: usize) -> (usize, Vec<Alignment>, Vec<Vec<usize>>) {
    let chains = word_rates.len();
    let onto =
        |r: usize| -> Vec<Alignment> { (0..chains).filter(|&c| c != r).map(|c| align_topics_pinned(word_rates[r], word_rates[c], k, v, pinned)).collect() };
    let score = |alignments: &[Alignment]| -> (usize, f64) {
        let matched = alignments.iter().flat_map(|a| &a.distances).filter(|&&l1| is_match(l1)).count();
        (matched, alignments.iter().flat_map(|a| &a.distances).sum())
    };
    // Summed distances equal but for rounding (the same assignment solved from either side).
    let same_distance = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0);
    let mut best: Option<(usize, (usize, f64), Vec<Alignment>)> = None;
    for r in 0..chains {
        let alignments = onto(r);
        let s = score(&alignments);
        let better = best.as_ref().is_none_or(|&(b, (matched, distance), _)| {
            s.0 > matched || (s.0 == matched && if same_distance(s.1, distance) { log_joint[r] > log_joint[b] } else { s.1 < distance })
        });
        if better {
            best = Some((r, s, alignments));
        }
    }
    let (reference, _, alignments) = best.expect("at least one chain");
    let targets = (0..chains).map(|c| alignment_of(&alignments, reference, c).map_or_else(|| (0..k).collect(), |a| a.permutation.clone())).collect();
    (reference, alignments, targets)
}

/// The least similarity (1 − L1/2) at which another chain's matched topic is averaged
/// into the reference's point estimates (its word distribution, share and the
/// documents' proportions of it): the same topic up to Monte Carlo error, where
/// stability's [`super::stability::MATCH_SIMILARITY`] (0.5) asks only that it be
/// recognisably the same topic. Averaging two topics that share 60 % of their mass
/// serves a blend of both: below the true K, where chains merge different pairs of
/// topics, that cost LDA 0.03–0.06 nats a token of held-out likelihood against one
/// chain's fit (decision 0072). Chains in one mode match at 0.95 and above.
pub const POOL_SIMILARITY: f64 = 0.8;

/// Whether chain `c` holds the reference's topic `t`: the reference chain always (its
/// topics are the model's), another chain where its matched topic is the same topic
/// ([`is_match`], as stability counts matches). A topic's effects rest on the draws of
/// the chains that hold it. `alignments` as [`match_to_consensus_pinned`] gives them.
pub fn chain_holds(alignments: &[Alignment], reference: usize, c: usize, t: usize) -> bool {
    matched_at(alignments, reference, c, t, MATCH_SIMILARITY)
}

/// Whether chain `c`'s version of the reference's topic `t` is averaged into the
/// model's point estimates of it: the reference chain always, another chain where its
/// matched topic is at least [`POOL_SIMILARITY`] similar.
pub fn chain_pools(alignments: &[Alignment], reference: usize, c: usize, t: usize) -> bool {
    matched_at(alignments, reference, c, t, POOL_SIMILARITY)
}

/// Per topic of the reference (`k` of them), whether chain `c` is pooled into it
/// ([`chain_pools`]).
pub fn pooled_topics(alignments: &[Alignment], reference: usize, c: usize, k: usize) -> Vec<bool> {
    (0..k).map(|t| chain_pools(alignments, reference, c, t)).collect()
}

/// Test support, for a two-chain fit pooled with equal kept sweeps: chain 0's topic
/// matched to the model's topic `t`, and the L1 distance the pooled topic lies from it:
/// half the matched distance where both chains are pooled, none where chain 0 is the
/// reference and alone, the whole distance where chain 1 is the reference and alone.
#[cfg(test)]
pub(crate) fn two_chain_pooled_distance(alignment: &Alignment, reference: usize, t: usize) -> (usize, f64) {
    let distance = alignment.distances[t];
    let chain_0_topic = if reference == 0 { t } else { alignment.permutation.iter().position(|&b| b == t).expect("a permutation") };
    let pooled = similarity(distance) >= POOL_SIMILARITY;
    (
        chain_0_topic,
        if pooled {
            distance / 2.0
        } else if reference == 0 {
            0.0
        } else {
            distance
        },
    )
}

fn matched_at(alignments: &[Alignment], reference: usize, c: usize, t: usize, least: f64) -> bool {
    c == reference || alignment_of(alignments, reference, c).is_some_and(|a| a.distances.get(t).is_some_and(|&l1| similarity(l1) >= least))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three chains of 3 topics over 3 words: chains 1 and 2 hold the same three
    /// topics (in other orders); chain 0 merged two of them and holds a stray topic.
    #[test]
    fn the_chain_the_others_agree_with_is_the_reference() {
        let (k, v) = (3, 3);
        let a = [0.9, 0.05, 0.05];
        let b = [0.05, 0.9, 0.05];
        let c = [0.05, 0.05, 0.9];
        let merged = [0.475, 0.475, 0.05];
        let stray = [0.34, 0.33, 0.33];
        let chain = |topics: [&[f64; 3]; 3]| topics.iter().flat_map(|t| t.iter().copied()).collect::<Vec<f64>>();
        let chain0 = chain([&merged, &c, &stray]);
        let chain1 = chain([&c, &a, &b]);
        let chain2 = chain([&b, &c, &a]);
        let (reference, alignments, targets) = match_to_consensus_pinned(&[&chain0, &chain1, &chain2], &[-1.0, -1.0, -1.0], k, v, 0);
        assert_eq!(reference, 1, "chains 1 and 2 agree on every topic, chain 0 on two of three: a tie between 1 and 2 goes to the earlier");
        assert_eq!(alignments.len(), 2);
        assert_eq!(targets[1], vec![0, 1, 2], "the reference's topics stay");
        assert_eq!(targets[2], vec![2, 0, 1], "chain 2's b, c, a onto chain 1's c, a, b");
        assert!(alignments[1].distances.iter().all(|&d| d < 1e-12), "chain 2 matches chain 1 exactly");
        // Chain 0's alignment is the first listed (chain order, the reference left out).
        assert_eq!(alignment_of(&alignments, reference, 0), Some(&alignments[0]));
        assert_eq!(alignment_of(&alignments, reference, 1), None);
        assert_eq!(alignment_of(&alignments, reference, 2), Some(&alignments[1]));
        // Chain 2 holds every topic. Chain 0 holds c (the reference's topic 0) and, at
        // the 0.5 rule, one of a and b: its half-a, half-b topic is 1 − 0.85/2 = 0.575
        // similar to either; its stray topic is not (1 − 1.14/2 = 0.43 or less).
        assert!((0..k).all(|t| chain_holds(&alignments, reference, 1, t) && chain_holds(&alignments, reference, 2, t)));
        let held: Vec<bool> = (0..k).map(|t| chain_holds(&alignments, reference, 0, t)).collect();
        assert!(held[0] && held.iter().filter(|&&h| h).count() == 2, "{held:?}");
    }

    #[test]
    fn two_chains_tie_to_the_higher_log_joint_then_the_earlier() {
        let (k, v) = (2, 2);
        let first = [0.9, 0.1, 0.1, 0.9];
        let second = [0.1, 0.9, 0.9, 0.1];
        let (reference, alignments, targets) = match_to_consensus_pinned(&[&first, &second], &[-2.0, -2.0], k, v, 0);
        assert_eq!(reference, 0, "a tie goes to the earlier chain");
        assert_eq!((alignments[0].permutation.clone(), targets[0].clone()), (vec![1, 0], vec![0, 1]));
        let (reference, alignments, targets) = match_to_consensus_pinned(&[&first, &second], &[-2.0, -1.9], k, v, 0);
        assert_eq!(reference, 1, "two chains agree with each other alike: the higher log joint breaks the tie");
        assert_eq!((alignments[0].permutation.clone(), targets[1].clone()), (vec![1, 0], vec![0, 1]));
    }
}
