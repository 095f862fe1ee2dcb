//! Topic proportions of new documents by a fold-in chain with the globals held fixed.
//!
//! Why it exists: a new document's topic weights π(v_d) have no closed form. With A,
//! η, λ_v and Ω fixed (a [`DcntPoint`]), the document's own chain alternates
//! z_n | π, Ω (independent per token: p(z_n = k) ∝ π_k Ω_{k,w_n}), v_d by
//! [`update_activations`] and u_d by [`UConditional`]; the prediction is π(v_d)
//! averaged over the sweeps after burn-in. Document i draws from the stream
//! `(seed, Predict, 0, i)`, so predictions do not depend on the thread count. With
//! intervals ([`fold_in_with_intervals`]) the π(v_d) of those sweeps are the draws the
//! intervals are taken over (the same chain: the point answer is their mean).

use crate::models::effects::{interval, ProportionsWithIntervals};
use crate::models::PredictOptions;

use super::activations::{update_activations, UConditional};
use super::point::DcntPoint;
use super::stick::stick_weights;
use crate::corpus::lexicon::EncodedDoc;
use crate::rng::{stream, Purpose};
use rand::RngExt;
use rand_distr::{Distribution, Normal, StandardNormal};
use rayon::prelude::*;

/// Mean π over `iterations − burn_in` sweeps (the last sweep alone if burn-in covers
/// them all) for each document; `features` holds one F-row per document.
/// (`options`: the chain's sweeps, burn-in and seed.)
pub fn fold_in(point: &DcntPoint, docs: &[EncodedDoc], features: &[f64], options: &PredictOptions) -> Vec<Vec<f64>> {
    fold_in_each(point, docs, features, options, |_| (), |_, _| ()).into_iter().map(|(pi, _)| pi).collect()
}

/// Each document's mean π as [`fold_in`] gives it and the `level` interval of every
/// topic's weight over the kept sweeps' π(v_d).
pub fn fold_in_with_intervals(point: &DcntPoint, docs: &[EncodedDoc], features: &[f64], options: &PredictOptions, level: f64) -> Vec<ProportionsWithIntervals> {
    let k = point.num_topics;
    let answers = fold_in_each(point, docs, features, options, |_| Vec::new(), |draws: &mut Vec<Vec<f64>>, pi: &[f64]| draws.push(pi.to_vec()));
    answers.into_iter().map(|(pi, draws)| (pi, (0..k).map(|t| interval(&draws.iter().map(|d| d[t]).collect::<Vec<f64>>(), level)).collect())).collect()
}

/// The fold-in chain of every document: its mean π and what `keep` gathered from the
/// π(v_d) of each kept sweep into the document's `start(i)`.
fn fold_in_each<S: Send>(
    point: &DcntPoint,
    docs: &[EncodedDoc],
    features: &[f64],
    options: &PredictOptions,
    start: impl Fn(usize) -> S + Sync,
    keep: impl Fn(&mut S, &[f64]) + Sync,
) -> Vec<(Vec<f64>, S)> {
    let k = point.num_topics;
    let f = point.num_features;
    assert_eq!(features.len(), docs.len() * f, "one feature row per document");
    let u_conditional = UConditional::new(&point.a, k, point.lambda_v).expect("finite A and λ_v");
    let (iterations, burn_in, seed) = (options.iterations, options.burn_in, options.seed);
    let iterations = iterations.max(1);
    let first_kept = burn_in.min(iterations - 1);
    docs.par_iter()
        .enumerate()
        .map(|(i, doc)| {
            let mut kept_draws = start(i);
            let mut rng = stream(seed, Purpose::Predict, 0, i as u64);
            let prior_mean = point.u_mean(&features[i * f..(i + 1) * f]);
            let mut u: Vec<f64> = prior_mean
                .iter()
                .map(|m| {
                    let e: f64 = StandardNormal.sample(&mut rng);
                    m + e
                })
                .collect();
            let sd = 1.0 / point.lambda_v.sqrt();
            let mut v: Vec<f64> = point.a_times(&u).iter().map(|&m| Normal::new(m, sd).expect("finite sd").sample(&mut rng)).collect();
            let mut mean_pi = vec![0.0; k];
            let mut weights = vec![0.0; k];
            for sweep in 0..iterations {
                let pi = stick_weights(&v);
                let mut counts = vec![0u32; k];
                for (&w, &c) in doc.terms.iter().zip(&doc.counts) {
                    let mut sum = 0.0;
                    for topic in 0..k {
                        sum += pi[topic] * point.omega(topic, w as usize);
                        weights[topic] = sum;
                    }
                    for _ in 0..c {
                        let target = rng.random::<f64>() * sum;
                        counts[weights.iter().position(|&x| target < x).unwrap_or(k - 1)] += 1;
                    }
                }
                update_activations(&mut v, &point.a_times(&u), point.lambda_v, &counts, &mut rng);
                u = u_conditional.draw(&v, &prior_mean, &mut rng);
                if sweep >= first_kept {
                    let pi = stick_weights(&v);
                    for (m, p) in mean_pi.iter_mut().zip(&pi) {
                        *m += p;
                    }
                    keep(&mut kept_draws, &pi);
                }
            }
            let kept = (iterations - first_kept) as f64;
            mean_pi.iter_mut().for_each(|m| *m /= kept);
            (mean_pi, kept_draws)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two topics with disjoint words and a flat prior on v: a document of only topic
    /// 1's words must get most of its weight on topic 1, and the result is a
    /// distribution that does not depend on the thread count.
    #[test]
    fn fold_in_follows_the_words() {
        let point = DcntPoint {
            num_topics: 3,
            num_features: 1,
            a: vec![1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0],
            eta: vec![0.0; 3],
            lambda_v: 1.0,
            topic_word: vec![0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.5, 0.5, 0.5, 0.5, 0.0, 0.0],
        };
        let docs = vec![EncodedDoc { terms: vec![2, 3], counts: vec![20, 20], oov_tokens: 0 }, EncodedDoc { terms: vec![0], counts: vec![30], oov_tokens: 0 }];
        let run = |threads| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| fold_in(&point, &docs, &[1.0, 1.0], &PredictOptions { iterations: 200, burn_in: 50, seed: 4 }))
        };
        let (a, b) = (run(1), run(2));
        assert_eq!(a, b);
        assert!((a[0].iter().sum::<f64>() - 1.0).abs() < 1e-9);
        assert!(a[0][1] > 0.9, "{:?}", a[0]);
        // Words 0 and 1 belong to topics 0 and 2 equally; topic 1 is unused.
        assert!(a[1][1] < 0.1, "{:?}", a[1]);
        // With intervals: the same chain, so the same point answer bit for bit, and each
        // interval is over the kept sweeps' weights, whose mean is that answer.
        let with = fold_in_with_intervals(&point, &docs, &[1.0, 1.0], &PredictOptions { iterations: 200, burn_in: 50, seed: 4 }, 0.9);
        for (d, (pi, intervals)) in with.iter().enumerate() {
            assert_eq!(pi, &a[d]);
            for (t, i) in intervals.iter().enumerate() {
                assert!((i.mean - pi[t]).abs() < 1e-12 && i.lower <= i.mean && i.mean <= i.upper, "{d}/{t}: {i:?} against {}", pi[t]);
            }
        }
        assert!(with[0].1[1].lower > 0.5, "a document of topic 1's words is sure of it: {:?}", with[0].1[1]);
    }
}
