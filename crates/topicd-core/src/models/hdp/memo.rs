//! The memoized state: per-batch summaries, their total and the global parameters.
//!
//! Why it exists: every pass visits the batches in order; a visit runs the local step
//! on one batch (warm-started from its documents' previous topic counts), replaces that
//! batch's summary in the total (total − old + new) and runs the global step (q(φ) in
//! closed form, then the stick optimiser warm-started from the current sticks). Each of
//! the three steps is a block ascent step of the same objective, so the objective never
//! decreases from the end of the first pass on (when every batch is in the total); the
//! only slack is floating-point rounding in the running total.
//!
//! A delete proposal ([`super::delete`]) rides along a pass; merges and reorderings act on every batch summary, the stored document-topic counts,
//! the total and the sticks together, so the state stays one consistent variational
//! posterior.

use super::documents::HdpDocuments;
use super::globals::{objective, Objective, TopicWord};
use super::local::{batch_local_step, LocalGlobals, LocalTotals};
use super::params::HdpParams;
use super::summary::{PairStats, Summary};
use crate::corpus::DocTermMatrix;
use crate::inference::stick_posterior::{optimise_stick, StickPosterior};
use crate::ranks::{Ranks, Solo};
use crate::rng::{stream, Purpose};
use rand::RngExt;

pub struct Memo<'a> {
    /// The documents this process holds and the batches over them.
    pub docs: HdpDocuments<'a>,
    /// The ranks the documents are spread over ([`Solo`] in one process): every rank
    /// holds the same globals, summaries and sticks, and its own documents' counts.
    pub ranks: &'a dyn Ranks,
    pub num_terms: usize,
    pub params: &'a HdpParams,
    /// Each batch's latest summary (`None` before its first visit).
    pub batches: Vec<Option<Summary>>,
    /// N_dk of each batch's documents this process holds (`docs × K`), the local step's
    /// warm start.
    pub doc_topic: Vec<Vec<f64>>,
    pub total: Summary,
    pub stick: StickPosterior,
    pub topic_word: TopicWord,
    /// Global steps whose stick optimisation fell back (ρ only, or kept the start).
    pub stick_fallbacks: usize,
    /// The first topics, which keep their ids (an update's parent topics, [`super::update`];
    /// 0 in a fit): no merge or delete removes one, a birth leaves one of its fresh topics
    /// in its place, and the size reordering leaves them where they are.
    pub protected: usize,
    /// An update's parent's expected tokens per protected topic: births target the
    /// topics that grew most over them ([`super::birth::choose_topic`]); `None` in a fit.
    pub birth_baseline: Option<Vec<f64>>,
}

impl<'a> Memo<'a> {
    /// Batches of consecutive documents (sizes differ by at most one); topics initialised
    /// from K distinct random documents' counts ([`initial_counts`]), sticks with
    /// uniform expected weights.
    pub fn new(matrix: &'a DocTermMatrix, num_terms: usize, params: &'a HdpParams, seed: u64) -> Self {
        let init = initial_counts(matrix, num_terms, params.topics, seed);
        Self::over(HdpDocuments::whole(matrix, num_terms, params.batches), init, params, &Solo)
    }

    /// The starting point over `docs` held on `ranks`, from the initial topic-word
    /// counts `init` ([`initial_counts`] of the whole training corpus, or an update's
    /// parent topics): as many topics as `init` has.
    pub fn over(docs: HdpDocuments<'a>, init: Summary, params: &'a HdpParams, ranks: &'a dyn Ranks) -> Self {
        let k = init.num_topics;
        let num_terms = docs.num_terms;
        let topic_word = TopicWord::from_summary(&init, params.lambda);
        let doc_topic = docs.layouts.iter().map(|l| vec![0.0; l.docs.len() * k]).collect();
        Memo {
            batches: vec![None; docs.layouts.len()],
            docs,
            ranks,
            num_terms,
            params,
            doc_topic,
            total: Summary::dense(num_terms, k),
            stick: StickPosterior::new(k, params.gamma),
            topic_word,
            stick_fallbacks: 0,
            protected: 0,
            birth_baseline: None,
        }
    }

    pub fn num_topics(&self) -> usize {
        self.total.num_topics
    }

    /// Whether every batch is in the total.
    pub fn complete(&self) -> bool {
        self.batches.iter().all(Option::is_some)
    }

    /// Local step on batch `b` (tracking `pairs`), its summary replaced in the total,
    /// then the global step.
    pub fn visit(&mut self, b: usize, pairs: &[(usize, usize)]) -> LocalTotals {
        let p = self.params;
        let beta = self.stick.expected_beta();
        let g = LocalGlobals::new(p.alpha, &beta, &self.topic_word.elog_phi, &self.topic_word.exp_elog_phi, p.local_tolerance, p.local_iterations);
        let warm = self.batches[b].is_some();
        let (summary, totals) = batch_local_step(&g, self.docs.matrix, &self.docs.layouts[b], &mut self.doc_topic[b], warm, pairs, self.ranks);
        if let Some(old) = self.batches[b].take() {
            self.total.add_batch(&old, -1.0);
        }
        self.total.add_batch(&summary, 1.0);
        self.batches[b] = Some(summary);
        self.global_step();
        totals
    }

    /// q(φ) from the total, then the sticks (warm start; never a lower objective).
    pub fn global_step(&mut self) {
        self.topic_word = TopicWord::from_summary(&self.total, self.params.lambda);
        let fit = optimise_stick(&self.total.stick_stats(), self.params.alpha, self.params.gamma, &self.stick);
        if fit.fell_back {
            self.stick_fallbacks += 1;
        }
        self.stick = fit.posterior;
    }

    pub fn objective(&self) -> Objective {
        objective(&self.total, &self.topic_word, &self.stick, self.params.alpha, self.params.gamma)
    }

    /// The tracked pair statistics summed over the batches in order (every batch must
    /// have been visited with the same pairs).
    pub fn pair_totals(&self) -> Option<PairStats> {
        let mut it = self.batches.iter();
        let mut sum = it.next()?.as_ref()?.pairs.clone();
        for b in it {
            let b = b.as_ref()?;
            if b.pairs.pairs != sum.pairs {
                return None;
            }
            sum.add(&b.pairs);
        }
        Some(sum)
    }

    /// Merge topic `drop` into `keep` everywhere, with `pair_totals` the whole-data pair
    /// statistics (updated in place) and `stick`/`data_term` the merged model's sticks and
    /// the merged topic's data term. q(φ)'s expectations are left for the caller to refresh.
    pub fn apply_merge(&mut self, keep: usize, drop: usize, pair_totals: &mut PairStats, stick: StickPosterior, data_term: f64) {
        let i = pair_totals.find(keep, drop).expect("a tracked pair");
        self.total.merge(keep, drop, pair_totals.entropy[i], pair_totals.sum_log_pi[i], pair_totals.local[i]);
        pair_totals.after_merge(keep, drop);
        for b in self.batches.iter_mut().flatten() {
            b.merge_tracked(keep, drop);
        }
        let k = self.stick.num_topics();
        for store in &mut self.doc_topic {
            let merged: Vec<f64> =
                store.chunks(k).flat_map(|row| (0..k).filter(|&t| t != drop).map(move |t| if t == keep { row[keep] + row[drop] } else { row[t] })).collect();
            *store = merged;
        }
        self.stick = stick;
        self.topic_word.data_terms[keep] = data_term;
        self.topic_word.data_terms.remove(drop);
        self.topic_word.num_topics = k - 1;
    }

    /// Relabel topics: new topic i is old topic `order[i]`, with sticks `stick`.
    pub fn apply_permutation(&mut self, order: &[usize], stick: StickPosterior) {
        let k = self.num_topics();
        self.total.permute(order);
        for b in self.batches.iter_mut().flatten() {
            b.permute(order);
        }
        for store in &mut self.doc_topic {
            *store = store.chunks(k).flat_map(|row| order.iter().map(|&t| row[t])).collect();
        }
        self.stick = stick;
        self.topic_word = TopicWord::from_summary(&self.total, self.params.lambda);
    }

    /// Refresh q(φ)'s expectations after merges.
    pub fn refresh_topic_word(&mut self) {
        self.topic_word = TopicWord::from_summary(&self.total, self.params.lambda);
    }
}

/// The initial topic-word counts (`V × K`): topic t is the counts of one document, K
/// distinct documents drawn without replacement (bnpy's "randexamples"; q(φ_t) is then
/// Dir(λ + those counts)). When K exceeds D the documents are reused in a new random
/// order, and only then is a little uniform noise (below one count) added so that no
/// two topics are identical. (Noise on every topic, as before, put a mean pseudo-count
/// of 0.05 on every word, five times λ = 0.01: at gensim's priors on reuters395 it left the
/// converged objective 0.09 nats per token lower than this start.)
pub fn initial_counts(matrix: &DocTermMatrix, num_terms: usize, k: usize, seed: u64) -> Summary {
    let d = matrix.num_rows();
    let mut init = Summary::dense(num_terms, k);
    if d == 0 {
        return init;
    }
    let mut rng = stream(seed, Purpose::Init, 0, 0);
    let mut order: Vec<usize> = Vec::with_capacity(k);
    while order.len() < k {
        // A partial Fisher–Yates shuffle of the documents for each round of D topics.
        let mut docs: Vec<usize> = (0..d).collect();
        let take = (k - order.len()).min(d);
        for i in 0..take {
            let j = rng.random_range(i..d);
            docs.swap(i, j);
        }
        order.extend_from_slice(&docs[..take]);
    }
    for (t, &doc) in order.iter().enumerate() {
        let (terms, counts) = matrix.row(doc);
        for (&w, &c) in terms.iter().zip(counts) {
            init.word_topic[w as usize * k + t] += c as f64;
        }
        if t >= d {
            let mut noise = stream(seed, Purpose::Init, 1, t as u64);
            for w in 0..num_terms {
                init.word_topic[w * k + t] += 0.1 * noise.random::<f64>();
            }
        }
    }
    init
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every topic starts as one document's counts, and K ≤ D topics come from K
    /// distinct documents (drawing with replacement would repeat one of 8 documents
    /// among 6 topics in most seeds: 1 − 8!/(2! · 8⁶) ≈ 92 %).
    #[test]
    fn initial_topics_are_distinct_documents() {
        let d = 8;
        let m = DocTermMatrix::from_rows((0..d).map(|i| vec![(i as u32, 1 + i as u32), (d as u32, 1)]));
        for seed in 0..20 {
            let init = initial_counts(&m, d + 1, 6, seed);
            let mut docs: Vec<usize> = (0..6)
                .map(|t| {
                    let column: Vec<f64> = (0..=d).map(|w| init.word_topic[w * 6 + t]).collect();
                    let doc = (0..d).find(|&i| column[i] > 0.0).expect("a document's word");
                    let want: Vec<f64> = (0..=d)
                        .map(|w| {
                            if w == doc {
                                1.0 + doc as f64
                            } else if w == d {
                                1.0
                            } else {
                                0.0
                            }
                        })
                        .collect();
                    assert_eq!(column, want, "seed {seed}, topic {t}");
                    doc
                })
                .collect();
            docs.sort_unstable();
            docs.dedup();
            assert_eq!(docs.len(), 6, "seed {seed}");
        }
    }
}
