//! The rates a seeded PCM fit serves: the data's, without the seeds' pseudo-counts.
//!
//! Why it exists: a seed adds c_fk μ_fk to word f's log conditional for the whole fit
//! ([`super::data::HpcData::with_seeds`]), so at the conditional mode the rate of f in
//! its seeded topic k is about (n_fk + c_fk) / E_k, where n_fk is the word's expected
//! count allocated to the topic (Σ_d w_fd θ_dk β_fk / θ_dᵀβ_f) and E_k the topic's
//! exposure. The pseudo-counts steer which documents and words the topic takes; what it
//! shows should be what the data put there, as LDA's served φ counts the tokens
//! assigned and not the pseudo-counts (decision 0059). On corpora drawn from LDA the
//! tilted rates put the seeded topics twice as far from the truth as unseeded PCM's
//! (L1 0.41 against 0.18, bench/seeded_topics.py): the 4 seed words' rates, inflated by
//! c, outweigh the rest of the topic. A kept scan therefore adds β_fk n_fk / (n_fk + c_fk)
//! for every seeded entry (and its logarithm to μ's sums), the rate the allocated counts
//! alone give; every other entry, and the sampler, are unchanged.

use super::data::HpcData;

/// The data's rates of a kept scan: `beta` (= e^μ, word-major V × N) and `mu` with every
/// seeded entry scaled by n_fk / (n_fk + c_fk), given θ over each document's active
/// nodes (`theta`, aligned with `data.active.values`). `None` without seeds (the rates
/// are the data's as they are).
pub(super) fn data_rates(data: &HpcData, theta: &[f64], mu: &[f64], beta: &[f64]) -> Option<(Vec<f64>, Vec<f64>)> {
    if data.seed_counts.is_empty() {
        return None;
    }
    let n = data.num_nodes();
    let (mut mu, mut beta) = (mu.to_vec(), beta.to_vec());
    for f in 0..data.num_terms() {
        let seeded = data.seed_counts(f);
        if seeded.is_empty() {
            continue;
        }
        let row = &beta[f * n..(f + 1) * n];
        let mut allocated = vec![0.0; seeded.len()];
        for &(d, count) in data.word_docs.row(f) {
            let r = data.active.range(d as usize);
            let nodes = &data.active.values[r.clone()];
            let th = &theta[r];
            let s: f64 = nodes.iter().zip(th).map(|(&node, &t)| t * row[node as usize]).sum();
            for (a, &(node, _)) in allocated.iter_mut().zip(seeded) {
                if let Some(i) = nodes.iter().position(|&x| x == node) {
                    *a += count * th[i] * row[node as usize] / s;
                }
            }
        }
        for (&a, &(node, c)) in allocated.iter().zip(seeded) {
            let at = f * n + node as usize;
            let share = a / (a + c);
            beta[at] *= share;
            mu[at] += share.ln();
        }
    }
    Some((mu, beta))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::seeds::ResolvedSeeds;

    /// Two documents over two topics (nodes 1, 2): word 0 (3 + 1 tokens) is seeded in
    /// topic 0 with strength 1 (c = 4). Its allocated count to topic 0 is computed by
    /// hand from θ and β, and its served rate is β · n / (n + c); word 1 and the other
    /// topic's rate are untouched; μ moves by the logarithm of the same factor.
    #[test]
    fn seeded_rates_lose_their_pseudo_counts_share() {
        let data = HpcData::new(
            vec![None, Some(0), Some(0)],
            super::super::variant::Supervision::Unsupervised,
            vec![vec![1, 2], vec![1, 2]],
            vec![vec![(0, 3), (1, 2)], vec![(0, 1)]],
            2,
        )
        .with_seeds(&ResolvedSeeds { words: vec![vec![0]], missing: vec![] }, 1.0);
        assert_eq!(data.seed_counts(0), &[(1, 4.0)]);
        let theta = [0.6, 0.4, 0.2, 0.8];
        let beta = [1.0, 2.0, 0.5, 1.0, 1.5, 1.0];
        let mu: Vec<f64> = beta.iter().map(|b: &f64| b.ln()).collect();
        let (mu2, beta2) = data_rates(&data, &theta, &mu, &beta).expect("seeded");
        let n = 3.0 * 0.6 * 2.0 / (0.6 * 2.0 + 0.4 * 0.5) + 1.0 * 0.2 * 2.0 / (0.2 * 2.0 + 0.8 * 0.5);
        let share = n / (n + 4.0);
        assert!((beta2[1] - 2.0 * share).abs() < 1e-12, "{} against {}", beta2[1], 2.0 * share);
        assert!((mu2[1] - (2.0f64.ln() + share.ln())).abs() < 1e-12);
        assert_eq!((beta2[0], beta2[2], &beta2[3..]), (1.0, 0.5, &beta[3..]));
        let unseeded = HpcData::new(vec![None, Some(0), Some(0)], super::super::variant::Supervision::Unsupervised, vec![vec![1, 2]], vec![vec![(0, 1)]], 2);
        assert!(data_rates(&unseeded, &theta[..2], &mu, &beta).is_none());
    }
}
