//! Turning label probabilities into label sets, and scoring label sets (paper 003, §4.5).
//!
//! Why it exists: HPC predicts P(label) for every label; a user wants a set. Thresholds
//! are chosen on a validation split to maximise F1: one global threshold (maximising
//! micro-F1 over every document-label pair), and for a label with enough positive
//! validation documents its own F1-optimal threshold shrunk towards the global one. The same module scores a test split with
//! micro- and macro-averaged precision, recall and F1. Pure functions on plain arrays.

use serde::{Deserialize, Serialize};

/// Decision thresholds on P(label).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Thresholds {
    pub global: f64,
    /// A label's own threshold, where it had enough validation documents.
    pub per_label: Vec<Option<f64>>,
}

impl Thresholds {
    /// 0.5 for every label (no validation data).
    pub fn default_for(num_labels: usize) -> Self {
        Thresholds { global: 0.5, per_label: vec![None; num_labels] }
    }

    pub fn for_label(&self, k: usize) -> f64 {
        self.per_label[k].unwrap_or(self.global)
    }

    /// The labels whose probability reaches their threshold; if none does, the single
    /// most probable label (every training document had at least one label).
    pub fn decide(&self, probabilities: &[f64]) -> Vec<usize> {
        let chosen: Vec<usize> = (0..probabilities.len()).filter(|&k| probabilities[k] >= self.for_label(k)).collect();
        if !chosen.is_empty() || probabilities.is_empty() {
            return chosen;
        }
        let best = (0..probabilities.len()).max_by(|&a, &b| probabilities[a].total_cmp(&probabilities[b])).expect("non-empty");
        vec![best]
    }
}

/// The threshold maximising F1 over scored pairs `(probability, is_positive)`, and that
/// F1. Candidate cuts fall between consecutive distinct scores (predict positive at or
/// above); the threshold is the midpoint of the gap, not the lowest score kept, so that
/// a new document scoring just below every validation positive is not cut off (with
/// well separated scores that lowest score can sit at 0.9999).
pub fn best_f1_threshold(mut pairs: Vec<(f64, bool)>) -> (f64, f64) {
    let positives = pairs.iter().filter(|p| p.1).count();
    if positives == 0 || pairs.is_empty() {
        return (0.5, 0.0);
    }
    pairs.sort_by(|a, b| b.0.total_cmp(&a.0));
    let (mut tp, mut best, mut threshold) = (0usize, -1.0, 0.5);
    for (i, &(score, positive)) in pairs.iter().enumerate() {
        tp += positive as usize;
        // Cut after i only where the next score differs (ties go together).
        if pairs.get(i + 1).is_some_and(|next| next.0 == score) {
            continue;
        }
        let f1 = 2.0 * tp as f64 / ((i + 1) as f64 + positives as f64);
        if f1 > best {
            best = f1;
            threshold = pairs.get(i + 1).map_or(score, |next| 0.5 * (score + next.0));
        }
    }
    (threshold, best)
}

/// A label's own threshold is pulled towards the global one as if the global one had
/// been seen on this many positive documents: the F1-optimal cut of a handful of
/// documents is noisy (on AppStream, unshrunk per-label thresholds lost 0.02 of test
/// micro-F1 against the global threshold alone; see
/// docs/decisions/0015-hpc-single-label-posterior-and-calibration.md).
pub const THRESHOLD_SHRINKAGE: f64 = 10.0;

/// `own` from `positives` documents, shrunk towards `global`.
fn shrink(own: f64, positives: usize, global: f64) -> f64 {
    let n = positives as f64;
    (n * own + THRESHOLD_SHRINKAGE * global) / (n + THRESHOLD_SHRINKAGE)
}

/// Calibrate thresholds from validation probabilities (`docs × labels`, row-major) and
/// the validation documents' true label sets.
pub fn calibrate(probabilities: &[f64], truth: &[Vec<usize>], num_labels: usize, min_label_documents: usize) -> Thresholds {
    if truth.is_empty() {
        return Thresholds::default_for(num_labels);
    }
    let is_true = |d: usize, k: usize| truth[d].contains(&k);
    let pooled: Vec<(f64, bool)> =
        (0..truth.len()).flat_map(|d| (0..num_labels).map(move |k| (d, k))).map(|(d, k)| (probabilities[d * num_labels + k], is_true(d, k))).collect();
    let (global, _) = best_f1_threshold(pooled);
    let per_label = (0..num_labels)
        .map(|k| {
            let positives = (0..truth.len()).filter(|&d| is_true(d, k)).count();
            (positives >= min_label_documents).then(|| {
                let own = best_f1_threshold((0..truth.len()).map(|d| (probabilities[d * num_labels + k], is_true(d, k))).collect()).0;
                shrink(own, positives, global)
            })
        })
        .collect();
    Thresholds { global, per_label }
}

/// Precision, recall and F1 of one label or of a pooled set.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct Scores {
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
}

impl Scores {
    fn from_counts(tp: usize, fp: usize, fneg: usize) -> Self {
        let precision = if tp + fp > 0 { tp as f64 / (tp + fp) as f64 } else { 0.0 };
        let recall = if tp + fneg > 0 { tp as f64 / (tp + fneg) as f64 } else { 0.0 };
        let f1 = if tp > 0 { 2.0 * tp as f64 / (2 * tp + fp + fneg) as f64 } else { 0.0 };
        Scores { precision, recall, f1 }
    }
}

/// Micro- and macro-averaged scores and every label's own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetScores {
    pub documents: usize,
    pub micro: Scores,
    /// Averaged over the labels present in the truth or the predictions.
    pub macro_average: Scores,
    /// `(label index, scores, documents with the label)`.
    pub per_label: Vec<(usize, Scores, usize)>,
}

/// Score predicted label sets against the truth.
pub fn score(predicted: &[Vec<usize>], truth: &[Vec<usize>], num_labels: usize) -> SetScores {
    let (mut tp, mut fp, mut fneg) = (vec![0usize; num_labels], vec![0usize; num_labels], vec![0usize; num_labels]);
    for (p, t) in predicted.iter().zip(truth) {
        for &k in p {
            if t.contains(&k) {
                tp[k] += 1;
            } else {
                fp[k] += 1;
            }
        }
        for &k in t {
            if !p.contains(&k) {
                fneg[k] += 1;
            }
        }
    }
    let micro = Scores::from_counts(tp.iter().sum(), fp.iter().sum(), fneg.iter().sum());
    let present: Vec<usize> = (0..num_labels).filter(|&k| tp[k] + fp[k] + fneg[k] > 0).collect();
    let per_label: Vec<(usize, Scores, usize)> = present.iter().map(|&k| (k, Scores::from_counts(tp[k], fp[k], fneg[k]), tp[k] + fneg[k])).collect();
    let m = per_label.len().max(1) as f64;
    let macro_average = Scores {
        precision: per_label.iter().map(|x| x.1.precision).sum::<f64>() / m,
        recall: per_label.iter().map(|x| x.1.recall).sum::<f64>() / m,
        f1: per_label.iter().map(|x| x.1.f1).sum::<f64>() / m,
    };
    SetScores { documents: truth.len(), micro, macro_average, per_label }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_threshold_separates_when_it_can() {
        let pairs = vec![(0.9, true), (0.8, true), (0.4, false), (0.3, true), (0.1, false)];
        let (t, f1) = best_f1_threshold(pairs.clone());
        // Cutting below 0.3 gives tp 3, predicted 4: F1 = 6/7; below 0.8: tp 2,
        // predicted 2: 4/5. The threshold is halfway between 0.3 and the next score.
        assert_eq!(t, 0.5 * (0.3 + 0.1));
        assert!((f1 - 6.0 / 7.0).abs() < 1e-12);
        // Brute force over every candidate agrees.
        let positives = 3.0;
        let brute = pairs.iter().map(|&(c, _)| {
            let tp = pairs.iter().filter(|p| p.0 >= c && p.1).count() as f64;
            let pred = pairs.iter().filter(|p| p.0 >= c).count() as f64;
            2.0 * tp / (pred + positives)
        });
        assert!((brute.fold(0.0, f64::max) - f1).abs() < 1e-12);
    }

    #[test]
    fn scores_match_hand_counts() {
        let truth = vec![vec![0, 1], vec![1], vec![2]];
        let predicted = vec![vec![0], vec![1, 2], vec![2]];
        let s = score(&predicted, &truth, 3);
        // tp: 0→1, 1→1, 2→1; fp: 2→1; fn: 1→1.
        assert!((s.micro.precision - 3.0 / 4.0).abs() < 1e-12);
        assert!((s.micro.recall - 3.0 / 4.0).abs() < 1e-12);
        let f1_label2 = 2.0 / 3.0;
        let want_macro = (1.0 + 2.0 / 3.0 + f1_label2) / 3.0;
        assert!((s.macro_average.f1 - want_macro).abs() < 1e-12);
    }

    #[test]
    fn decisions_fall_back_to_the_most_probable_label() {
        let t = Thresholds { global: 0.6, per_label: vec![None, Some(0.2), None] };
        assert_eq!(t.decide(&[0.7, 0.3, 0.1]), vec![0, 1]);
        assert_eq!(t.decide(&[0.5, 0.1, 0.55]), vec![2]);
    }

    #[test]
    fn calibration_uses_own_thresholds_only_with_enough_documents() {
        // Label 0 has 3 positive documents, label 1 only one.
        let probs = vec![0.9, 0.1, 0.8, 0.2, 0.7, 0.9, 0.2, 0.3];
        let truth = vec![vec![0], vec![0], vec![0, 1], vec![]];
        let t = calibrate(&probs, &truth, 2, 2);
        // Label 0's own cut lies between 0.7 (its lowest positive) and 0.2 (the next
        // score), shrunk towards the global cut.
        assert_eq!(t.per_label[0], Some((3.0 * 0.45 + THRESHOLD_SHRINKAGE * t.global) / (3.0 + THRESHOLD_SHRINKAGE)));
        assert_eq!(t.per_label[1], None);
    }
}
