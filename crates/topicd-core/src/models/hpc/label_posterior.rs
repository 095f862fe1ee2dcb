//! P(label) for a new document in the label space the user uploaded.
//!
//! Why it exists: the paper's predictor (§3.3, [`super::predict`]) reads P(label k) as
//! logistic(ξ*_k) at the mode of a simplified model where θ = softmax(ξ) spreads over
//! *every* label. On AppStream that scores far below a linear classifier, and it never
//! predicts the parents that a user's label sets carry. This module holds the
//! alternatives and the label-space rules:
//!
//! * **Single-label posterior** ([`Predictor::SingleLabel`]): the posterior over which
//!   label is the document's deepest one, each explaining the words alone. Under HPC's
//!   likelihood with the posterior-mean rates β* = exp(E[μ]), a document whose only
//!   active label is j has θ = e_j and log p(w | j) = Σ_f w_f μ*_fj − l B_j (up to
//!   terms shared by all j); with the frequency π_j of label j among the labelled
//!   documents' (stripped) labels (training and validation documents: see
//!   `fit::prediction_settings`), P(j | w) ∝ π_j p(w | j)^{1/T}. The temperature T ≥ 1
//!   tempers the Poisson likelihood, whose independent-word assumption makes it
//!   over-confident (bursty words count many times); it is chosen on the validation
//!   split with the thresholds. Cost: O(words · K) per document, no optimisation.
//! * **Label-set posterior** ([`Predictor::LabelSets`], the default): the posterior over
//!   which *set* of labels the document carries, among the sets labelled documents
//!   carried (as trained) and every single label. A set S explains the words with θ
//!   spread evenly over its labels, so log p(w | S) = Σ_f w_f log(Σ_{k∈S} β*_fk / |S|)
//!   − l Σ_{k∈S} B_k / |S|, and P(S | w) ∝ π_S p(w | S)^{1/T} with π_S the share of
//!   labelled documents whose set is S (half a document added, so every single label
//!   keeps a finite prior). P(label k) = Σ of P(S) over the sets containing k. Unlike the
//!   single-label posterior it can put two labels of different branches together (on
//!   AppStream a third of the training sets do, e.g. Education with Science's Math), and
//!   the co-occurrence of labels comes from the corpus rather than from independence.
//!   Cost: O(words · K) for the rates plus O(words · Σ|S|) over the multi-label sets.
//! * **Ancestor closure**: when the uploaded label sets carry their labels' ancestors
//!   (decided from the corpus, [`ancestors_are_uploaded`]), label k is in the
//!   document's set iff its deepest label lies in k's subtree, so
//!   P(k) = Σ_{j ∈ subtree(k)} P(j | w); under the mode predictor a parent gets the
//!   largest probability in its subtree. Predicted sets are then closed under ancestors.

use super::affinity::sigmoid;
use super::calibration::Thresholds;
use super::model::HpcModel;
// The prediction settings a model stores are defined with the model, the predictor and
// closure choices with the job's parameters (so neither names this module); they are
// re-exported here, where they are read.
pub use super::model::{deepest_first, LabelPrediction, LabelSet};
pub use super::params::{Closure, Predictor};

/// Temperatures tried on the validation split (single-label and label-set predictors).
pub const TEMPERATURES: [f64; 7] = [1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0];

/// Whether the corpus' label sets carry ancestors: of the training documents' labels
/// that have a parent label, at least half come with that parent.
pub fn ancestors_are_uploaded(doc_labels: &[Vec<usize>], parent: &[Option<usize>]) -> bool {
    let (mut with_parent, mut has_parent) = (0usize, 0usize);
    for labels in doc_labels {
        for &l in labels {
            if let Some(p) = parent[l] {
                has_parent += 1;
                with_parent += labels.contains(&p) as usize;
            }
        }
    }
    has_parent > 0 && 2 * with_parent >= has_parent
}

/// log p(w | j) + const for every label j: Σ_f w_f μ*_fj − l B_j, with l the length
/// over the mean training length.
pub fn single_label_log_likelihoods(model: &HpcModel, words: &[(usize, f64)]) -> Vec<f64> {
    let n = model.labels.len() + 1;
    let length = words.iter().map(|w| w.1).sum::<f64>() / model.mean_length;
    let mut out: Vec<f64> = model.rate_totals().iter().map(|b| -length * b).collect();
    for &(w, c) in words {
        for (o, &m) in out.iter_mut().zip(&model.mu[w * n + 1..(w + 1) * n]) {
            *o += c * m as f64;
        }
    }
    out
}

/// The candidate sets of [`Predictor::LabelSets`] from the labelled documents' label
/// sets as trained (`doc_labels`; empty sets are skipped): every single label, and the
/// `max_multi` most frequent sets of two or more labels (prediction costs
/// O(words · Σ|S|), so a corpus with very many distinct sets keeps its common ones;
/// AppStream has 241). π_S = (documents whose set is S + ½) / (documents + 1).
/// `ancestors`: whether a set's members are closed under ancestors. Ordered by their
/// labels, so the same corpus gives the same list.
pub fn candidate_sets<'a>(
    doc_labels: impl Iterator<Item = &'a [u32]>,
    num_labels: usize,
    parent: &[Option<usize>],
    ancestors: bool,
    max_multi: usize,
) -> Vec<LabelSet> {
    let mut counts: std::collections::BTreeMap<Vec<u32>, f64> = std::collections::BTreeMap::new();
    let mut docs = 0.0;
    for labels in doc_labels {
        if labels.is_empty() {
            continue;
        }
        let mut set = labels.to_vec();
        set.sort_unstable();
        set.dedup();
        *counts.entry(set).or_insert(0.0) += 1.0;
        docs += 1.0;
    }
    let mut multi: Vec<(Vec<u32>, f64)> = counts.iter().filter(|(set, _)| set.len() > 1).map(|(set, &c)| (set.clone(), c)).collect();
    // Most frequent first; equal counts in label order (the map's), as the sort is stable.
    multi.sort_by(|a, b| b.1.total_cmp(&a.1));
    multi.truncate(max_multi);
    let singles = (0..num_labels as u32).map(|k| (vec![k], counts.get(&vec![k]).copied().unwrap_or(0.0)));
    let chosen: std::collections::BTreeMap<Vec<u32>, f64> = singles.chain(multi).collect();
    chosen
        .into_iter()
        .map(|(labels, count)| {
            let members = if ancestors {
                let as_usize: Vec<usize> = labels.iter().map(|&k| k as usize).collect();
                close_under_ancestors(&as_usize, parent).into_iter().map(|k| k as u32).collect()
            } else {
                labels.clone()
            };
            LabelSet { labels, members, log_prior: ((count + 0.5) / (docs + 1.0)).ln() }
        })
        .collect()
}

/// β*_fk = exp(E[μ_fk]) of a document's words (`words` from [`known_words`]), word-major
/// (`words.len() × K`): what both ξ* and the label-set likelihoods read, taken once.
pub fn document_rates(model: &HpcModel, words: &[(usize, f64)]) -> Vec<f64> {
    let n = model.labels.len() + 1;
    words.iter().flat_map(|&(w, _)| model.mu[w * n + 1..(w + 1) * n].iter().map(|&m| (m as f64).exp())).collect()
}

/// log p(w | S) + const for every candidate set (the same constant as
/// [`single_label_log_likelihoods`], whose values `single` a one-label set reuses);
/// `rates` from [`document_rates`].
pub fn label_set_log_likelihoods(model: &HpcModel, words: &[(usize, f64)], sets: &[LabelSet], single: &[f64], rates: &[f64]) -> Vec<f64> {
    let k = model.labels.len();
    let length = words.iter().map(|w| w.1).sum::<f64>() / model.mean_length;
    let totals = model.rate_totals();
    sets.iter()
        .map(|set| match set.labels.as_slice() {
            &[j] => single[j as usize],
            labels => {
                let share = 1.0 / labels.len() as f64;
                let total: f64 = labels.iter().map(|&j| totals[j as usize]).sum();
                let mut ll = -length * total * share;
                for (row, &(_, count)) in rates.chunks_exact(k).zip(words) {
                    let mix: f64 = labels.iter().map(|&j| row[j as usize]).sum();
                    ll += count * (mix * share).ln();
                }
                ll
            }
        })
        .collect()
}

/// What the predictors read of one document's words, computed once for it: the
/// log-likelihood (up to a shared constant) of every single label and of every candidate
/// set of the model's own predictor ([`LabelPrediction::sets`]). ξ*'s second start, the
/// single-label posterior and the label-set posterior at every temperature the
/// calibration tries all read these, so no document's word pass is computed twice.
pub struct Evidence {
    /// log p(w | j) + const for every label j ([`single_label_log_likelihoods`]).
    pub single: Vec<f64>,
    /// log p(w | S) + const for every set of `model.prediction.sets`, in its order.
    pub sets: Vec<f64>,
}

impl Evidence {
    /// The evidence of `words` (from [`known_words`]) with `rates` their
    /// [`document_rates`].
    pub fn of(model: &HpcModel, words: &[(usize, f64)], rates: &[f64]) -> Evidence {
        let single = single_label_log_likelihoods(model, words);
        let sets = label_set_log_likelihoods(model, words, &model.prediction.sets, &single, rates);
        Evidence { single, sets }
    }
}

/// P(label) under the label-set posterior: P(S | w) ∝ π_S p(w | S)^{1/T}, each set's
/// probability added to its members. `how.sets` must be the model's own sets, which
/// `evidence` scored.
pub fn label_set_probabilities(model: &HpcModel, evidence: &Evidence, how: &LabelPrediction) -> Vec<f64> {
    assert_eq!(evidence.sets.len(), how.sets.len(), "the evidence scores the model's own candidate sets");
    let a: Vec<f64> = evidence.sets.iter().zip(&how.sets).map(|(l, set)| l / how.temperature + set.log_prior).collect();
    let mut p = vec![0.0; model.labels.len()];
    for (q, set) in super::affinity::softmax(&a).into_iter().zip(&how.sets) {
        for &k in &set.members {
            p[k as usize] += q;
        }
    }
    p
}

/// P(j | w) ∝ π_j p(w | j)^{1/T}.
pub fn single_label_posterior(log_likelihoods: &[f64], log_prior: &[f64], temperature: f64) -> Vec<f64> {
    let a: Vec<f64> = log_likelihoods.iter().zip(log_prior).map(|(l, p)| l / temperature + p).collect();
    super::affinity::softmax(&a)
}

/// P(k in the closed set) = Σ over k's subtree of P(j) (`order` from [`deepest_first`]).
pub fn subtree_sums(mut p: Vec<f64>, parent: &[Option<usize>], order: &[usize]) -> Vec<f64> {
    for &k in order {
        if let Some(a) = parent[k] {
            p[a] += p[k];
        }
    }
    p
}

/// Each label's probability raised to the largest in its subtree (mode predictor).
pub fn subtree_max(mut p: Vec<f64>, parent: &[Option<usize>], order: &[usize]) -> Vec<f64> {
    for &k in order {
        if let Some(a) = parent[k] {
            p[a] = p[a].max(p[k]);
        }
    }
    p
}

/// Add every label's ancestors to a set (sorted, deduplicated).
pub fn close_under_ancestors(set: &[usize], parent: &[Option<usize>]) -> Vec<usize> {
    let mut out: Vec<usize> = set.to_vec();
    for &k in set {
        let mut a = parent[k];
        while let Some(p) = a {
            out.push(p);
            a = parent[p];
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

impl LabelPrediction {
    /// The predicted set: the thresholded labels (the most probable one if none passes),
    /// closed under ancestors when the uploaded sets are.
    pub fn decide(&self, thresholds: &Thresholds, probabilities: &[f64], parent: &[Option<usize>]) -> Vec<usize> {
        let set = thresholds.decide(probabilities);
        if self.ancestors {
            close_under_ancestors(&set, parent)
        } else {
            set
        }
    }
}

/// The words of a document the model knows, as (term, count).
pub fn known_words(model: &HpcModel, words: impl Iterator<Item = (usize, f64)>) -> Vec<(usize, f64)> {
    words.filter(|&(w, c)| w < model.num_terms && c > 0.0).collect()
}

/// P(label) for every label under `how` (the model's own settings, or a candidate
/// temperature during calibration) from the document's [`Evidence`]. `xi` gives the
/// document's ξ* ([`super::predict::predict_affinities`]); only the mode predictor calls it.
pub fn label_probabilities(model: &HpcModel, how: &LabelPrediction, evidence: &Evidence, order: &[usize], xi: impl FnOnce() -> Vec<f64>) -> Vec<f64> {
    match how.predictor {
        Predictor::Mode => {
            let p = xi().into_iter().map(sigmoid).collect();
            if how.ancestors {
                subtree_max(p, &model.parent, order)
            } else {
                p
            }
        }
        Predictor::SingleLabel => {
            let p = single_label_posterior(&evidence.single, &how.log_prior, how.temperature);
            if how.ancestors {
                subtree_sums(p, &model.parent, order)
            } else {
                p
            }
        }
        Predictor::LabelSets => label_set_probabilities(model, evidence, how),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // 0 → 1 → 2, 3 at the top.
    const PARENT: [Option<usize>; 4] = [None, Some(0), Some(1), None];

    #[test]
    fn subtree_sums_add_descendants_and_stay_probabilities() {
        let order = deepest_first(&PARENT);
        let p = subtree_sums(vec![0.1, 0.2, 0.3, 0.4], &PARENT, &order);
        for (got, want) in p.iter().zip([0.6, 0.5, 0.3, 0.4]) {
            assert!((got - want).abs() < 1e-12, "{p:?}");
        }
        // A parent is never less probable than its child.
        let m = subtree_max(vec![0.1, 0.05, 0.3, 0.4], &PARENT, &order);
        assert_eq!(m, vec![0.3, 0.3, 0.3, 0.4]);
    }

    #[test]
    fn closure_adds_every_ancestor_once() {
        assert_eq!(close_under_ancestors(&[2, 3], &PARENT), vec![0, 1, 2, 3]);
        assert_eq!(close_under_ancestors(&[1, 2], &PARENT), vec![0, 1, 2]);
        assert_eq!(close_under_ancestors(&[], &PARENT), Vec::<usize>::new());
    }

    #[test]
    fn ancestors_are_uploaded_when_most_children_bring_their_parent() {
        let with = vec![vec![0, 1], vec![0, 1, 2], vec![3]];
        assert!(ancestors_are_uploaded(&with, &PARENT));
        let without = vec![vec![1], vec![2], vec![0, 1]];
        // Labels with a parent: 1 (parent 0 absent), 2 (1 absent), 1 (0 present): 1 of 3.
        assert!(!ancestors_are_uploaded(&without, &PARENT));
        assert!(!ancestors_are_uploaded(&[vec![0], vec![3]], &PARENT));
    }

    #[test]
    fn candidate_sets_count_the_training_sets_and_keep_every_single_label() {
        let docs: Vec<Vec<u32>> = vec![vec![2], vec![2], vec![3, 1], vec![], vec![1, 3]];
        let sets = candidate_sets(docs.iter().map(Vec::as_slice), 4, &PARENT, true, 10);
        let labels: Vec<Vec<u32>> = sets.iter().map(|s| s.labels.clone()).collect();
        assert_eq!(labels, vec![vec![0], vec![1], vec![1, 3], vec![2], vec![3]]);
        // Four labelled documents: {2} twice, {1, 3} twice (in either order), the empty one skipped.
        let prior = |labels: &[u32]| sets.iter().find(|s| s.labels == labels).unwrap().log_prior;
        assert!((prior(&[2]) - (2.5f64 / 5.0).ln()).abs() < 1e-12);
        assert!((prior(&[1, 3]) - (2.5f64 / 5.0).ln()).abs() < 1e-12);
        assert!((prior(&[0]) - (0.5f64 / 5.0).ln()).abs() < 1e-12);
        // Members are closed under ancestors (0 → 1 → 2) when asked, each once.
        let members = |labels: &[u32]| sets.iter().find(|s| s.labels == labels).unwrap().members.clone();
        assert_eq!(members(&[1, 3]), vec![0, 1, 3]);
        assert_eq!(members(&[2]), vec![0, 1, 2]);
        let open = candidate_sets(docs.iter().map(Vec::as_slice), 4, &PARENT, false, 10);
        assert_eq!(open.iter().find(|s| s.labels == [2]).unwrap().members, vec![2]);
        // A bound on the multi-label sets keeps the most frequent ones and every single label.
        let more: Vec<Vec<u32>> = vec![vec![0, 3], vec![0, 3], vec![0, 3], vec![2, 3], vec![1, 3]];
        let bounded = candidate_sets(more.iter().map(Vec::as_slice), 4, &PARENT, false, 1);
        let labels: Vec<Vec<u32>> = bounded.iter().map(|s| s.labels.clone()).collect();
        assert_eq!(labels, vec![vec![0], vec![0, 3], vec![1], vec![2], vec![3]]);
        let none = candidate_sets(more.iter().map(Vec::as_slice), 4, &PARENT, false, 0);
        assert_eq!(none.len(), 4);
    }

    #[test]
    fn single_label_posterior_tempers_the_likelihood_not_the_prior() {
        let ll = [0.0, -2.0];
        let prior = [(0.25f64).ln(), (0.75f64).ln()];
        let p = single_label_posterior(&ll, &prior, 2.0);
        // Odds of label 0: e^{(0 − (−2))/2} · 0.25/0.75 = e/3.
        let odds = std::f64::consts::E / 3.0;
        assert!((p[0] - odds / (1.0 + odds)).abs() < 1e-12);
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    }
}
