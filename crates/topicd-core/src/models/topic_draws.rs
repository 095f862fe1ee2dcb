//! Draws of a topic table from a fit's kept samples of topic-word counts.
//!
//! Why it exists: LDA and DCNT/SCNT store, at every kept iteration, the topic-word
//! counts n_kw of that iteration (a thinned sample). Given the counts, the topics' word
//! distributions are Dirichlet(n_k· + β); each sample is turned into one table at that
//! Dirichlet's mean, φ_kw = (n_kw + β) / (n_k + Vβ), with the sample's token shares
//! n_k / N, and exclusivity P(topic | word) from them ([`super::exclusivity`]), the same
//! way the posterior-mean table is built. The spread over samples is the posterior
//! spread of the table that [`crate::summaries::intervals`] summarises. A sample of
//! another chain of a multi-chain fit is relabelled onto the reference chain's topics
//! first, and stands only for the topics its chain is pooled into ([`pooled_draw`]).

use super::chains::{sample_chain, sample_relabel_to, Alignment};
use super::consensus::pooled_topics;
use super::{ModelError, TopicDraw, TopicTable};
use ndarray::Array2;

/// How a multi-chain fit's chains were pooled: the reference chain whose topics the
/// model serves, the other chains' alignments to it, and the sweeps of each chain.
pub struct PooledChains<'a> {
    pub alignments: &'a [Alignment],
    pub reference: usize,
    pub iterations: usize,
    pub chains: usize,
}

/// The kept sample stored at job iteration `iteration` as a draw of the pooled model's
/// topics: its counts relabelled onto the reference chain's topics, read as a table
/// ([`table_from_counts`]), standing for the topics its chain is pooled into
/// ([`super::consensus::chain_pools`]). An error names a sample that does not fit.
pub fn pooled_draw(counts: &SparseCounts, num_terms: usize, beta: f64, iteration: u64, pooling: &PooledChains) -> Result<TopicDraw, ModelError> {
    let relabel = sample_relabel_to(pooling.alignments, pooling.reference, iteration, pooling.iterations, pooling.chains)?;
    let table = table_from_counts(counts, num_terms, beta, relabel).map_err(ModelError::Invalid)?;
    let pooled = pooled_topics(pooling.alignments, pooling.reference, sample_chain(iteration, pooling.iterations), counts.num_topics);
    Ok(TopicDraw { table, pooled })
}

/// Word-major sparse topic-word counts, as samples store them: for word w, the pairs
/// (`topics[i]`, `counts[i]`) with `i` in `word_ptr[w]..word_ptr[w + 1]`.
pub struct SparseCounts<'a> {
    pub num_topics: usize,
    pub word_ptr: &'a [u32],
    pub topics: &'a [u16],
    pub counts: &'a [u32],
}

/// The table of `counts` over `num_terms` words with prior β; `relabel[a]`, when given,
/// is the topic sample topic `a` becomes. An error names what does not fit.
pub fn table_from_counts(counts: &SparseCounts, num_terms: usize, beta: f64, relabel: Option<&[usize]>) -> Result<TopicTable, String> {
    let k = counts.num_topics;
    let ptr = counts.word_ptr;
    let fits = ptr.len() == num_terms + 1
        && ptr.first() == Some(&0)
        && ptr.windows(2).all(|w| w[0] <= w[1])
        && ptr.last().map(|&e| e as usize) == Some(counts.topics.len())
        && counts.counts.len() == counts.topics.len()
        && counts.topics.iter().all(|&t| (t as usize) < k)
        && relabel.is_none_or(|r| r.len() == k && r.iter().all(|&t| t < k));
    if !fits {
        return Err(format!("a kept sample does not fit {k} topics and {num_terms} words"));
    }
    let to = |a: usize| relabel.map_or(a, |r| r[a]);
    let mut n_kw = Array2::<f64>::zeros((k, num_terms));
    for w in 0..num_terms {
        for i in ptr[w] as usize..ptr[w + 1] as usize {
            n_kw[(to(counts.topics[i] as usize), w)] += f64::from(counts.counts[i]);
        }
    }
    let totals: Vec<f64> = n_kw.rows().into_iter().map(|r| r.sum()).collect();
    let tokens = totals.iter().sum::<f64>().max(1.0);
    for (t, mut row) in n_kw.rows_mut().into_iter().enumerate() {
        let denominator = totals[t] + num_terms as f64 * beta;
        row.mapv_inplace(|n| (n + beta) / denominator);
    }
    let shares: Vec<f64> = totals.iter().map(|n| n / tokens).collect();
    Ok(TopicTable::flat(n_kw, &shares))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_become_dirichlet_means_and_relabel() {
        // Two topics, three words: word 0 → (t0: 3), word 1 → (t0: 1, t1: 2), word 2 → (t1: 4).
        let c = SparseCounts { num_topics: 2, word_ptr: &[0, 1, 3, 4], topics: &[0, 0, 1, 1], counts: &[3, 1, 2, 4] };
        let t = table_from_counts(&c, 3, 0.5, None).unwrap();
        assert_eq!(t.frequency.row(0).to_vec(), vec![3.5 / 5.5, 1.5 / 5.5, 0.5 / 5.5]);
        assert_eq!(t.frequency.row(1).to_vec(), vec![0.5 / 7.5, 2.5 / 7.5, 4.5 / 7.5]);
        assert_eq!((t.topics[0].proportion, t.topics[1].proportion), (0.4, 0.6));
        let swapped = table_from_counts(&c, 3, 0.5, Some(&[1, 0])).unwrap();
        assert_eq!(swapped.frequency.row(1), t.frequency.row(0));
        assert_eq!(swapped.exclusivity.row(0), t.exclusivity.row(1));
        for bad in [SparseCounts { num_topics: 1, ..c }, SparseCounts { word_ptr: &[0, 1, 3], ..c }, SparseCounts { counts: &[1], ..c }] {
            assert!(table_from_counts(&bad, 3, 0.5, None).is_err());
        }
        assert!(table_from_counts(&c, 3, 0.5, Some(&[0, 2])).is_err());
    }
}
