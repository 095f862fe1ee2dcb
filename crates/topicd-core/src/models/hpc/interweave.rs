//! Non-centred moves of the affinity hyperparameters (η, λ), to interweave with their
//! centred Gibbs draw. Checked, and not yet part of the scan (see "Status").
//!
//! Why it exists: [`super::hyper::draw_eta_lambda2`] draws (η, λ²) given every
//! affinity ξ_dk, D·K of them. Given that many, λ² is pinned to a fraction of a
//! percent (its conditional has D·K − K degrees of freedom), while given the labels and
//! words it is far less certain, so the Gibbs chain crawls: on AppStream (1 372
//! documents, 114 labels) the scan's λ² went 1.0, 1.9, 2.8, 4.1 at scans 1, 300, 600,
//! 1 000, and η's mean −5.2, −5.8, −6.3, −7.0 (bench/README.md, "HPC's affinity
//! hyperparameters do not settle").
//!
//! The remedy here is the ancillarity–sufficiency interweaving of Yu & Meng (2011): after the
//! centred draw, move the hyperparameters with the *standardised* affinities
//! z_dk = (ξ_dk − η_k)/λ held fixed, so ξ moves with them:
//!
//! * scale: log λ' = log λ + ε, ξ' = η + (λ'/λ)(ξ − η);
//! * shift, label by label: η'_k = η_k + δ, ξ'_·k = ξ_·k + δ.
//!
//! Each is a Metropolis step with a symmetric proposal on (η, log λ). The Gaussian
//! prior of ξ at the moved point, times the move's Jacobian ((λ'/λ)^{DK} for the scale,
//! 1 for the shift), equals its value at the old point, so with HPC's flat prior on
//! (η, log λ²) the acceptance ratio is the likelihood ratio alone: the labels'
//! Bernoulli terms and the words' Poisson terms through θ = softmax(ξ) over each
//! document's active labels. A proper prior adds its own ratio (`log_prior`).
//!
//! Proposal scales are fixed by the data, not the state, so the moves stay reversible:
//! the labels inform log λ through about one Bernoulli term per active label, so ε has
//! standard deviation 1/√(active labels + 1); η_k through label k's documents, so δ has
//! 1/√(documents with k + 1). Random numbers come from the hyperparameter stream of the
//! scan (index 1, which the centred draw does not use), and every sum runs in document
//! order, so the moves are the same at any thread count.
//!
//! Status: when wired in as a prototype (in [`HpcState`]'s hyperparameter block, after
//! the centred draw; the scan's reported log-likelihood must then be recomputed when a
//! move changed ξ), the moves took λ² on AppStream to 3.9 by scan 100 and 19 by scan
//! 1 000, still rising. Our reading: along (λ → ∞, η → −∞ at fixed label frequencies)
//! the labels' marginal likelihood is flat and the words gain as θ is freed to be
//! one-hot, so under the flat hyperprior the posterior of λ² has no settling point. A Scaled-Inv-χ²(4, 1) prior did not
//! stop the climb either (10.8 at scan 600). Until the hyperprior is settled the scan
//! keeps the centred draw alone, whose slowness is the de facto regulariser every HPC
//! model so far was fitted with; label predictions were the same either way (AppStream,
//! three seeds: micro-F1 0.658 vs 0.660, macro-F1 0.424 vs 0.427).

use super::affinity::softplus;
use super::data::HpcData;
use super::sampler::HpcState;
use super::variant::Supervision;
use crate::rng::{stream, Purpose, StreamRng};
use rand::RngExt;
use rand_distr::{Distribution, StandardNormal};
use rayon::prelude::*;

/// log σ(x) for an active label, log(1 − σ(x)) for an inactive one.
fn label_term(x: f64, active: bool) -> f64 {
    if active {
        x - softplus(x)
    } else {
        -softplus(x)
    }
}

/// Document `d`'s word log-likelihood given its affinities `xi` (its row of ξ), up to
/// terms that do not depend on ξ: Σ_w c_w log Σ_k θ_k β_wk − l Σ_k θ_k B_k over its
/// active labels k, with θ = softmax of their affinities.
fn word_term(data: &HpcData, d: usize, xi: &[f64], beta: &[f64], totals: &[f64]) -> f64 {
    let n = data.num_nodes();
    let nodes = data.active.row(d);
    if nodes.len() < 2 {
        // θ is 1 on the only active label (or there is none): nothing depends on ξ.
        return 0.0;
    }
    let max = nodes.iter().map(|&node| xi[node as usize - 1]).fold(f64::NEG_INFINITY, f64::max);
    let mut theta: Vec<f64> = nodes.iter().map(|&node| (xi[node as usize - 1] - max).exp()).collect();
    let total: f64 = theta.iter().sum();
    theta.iter_mut().for_each(|t| *t /= total);
    let mut ll = -data.lengths[d] * nodes.iter().zip(&theta).map(|(&node, t)| t * totals[node as usize]).sum::<f64>();
    for &(w, c) in data.doc_words.row(d) {
        let row = &beta[w as usize * n..(w as usize + 1) * n];
        ll += c * nodes.iter().zip(&theta).map(|(&node, t)| t * row[node as usize]).sum::<f64>().ln();
    }
    ll
}

/// Document `d`'s log-likelihood (labels, if labelled, and words) given its row of ξ.
fn doc_term(data: &HpcData, d: usize, xi: &[f64], beta: &[f64], totals: &[f64]) -> f64 {
    let labels = match data.supervision {
        Supervision::Labelled => {
            let nodes = data.active.row(d);
            xi.iter().enumerate().map(|(j, &x)| label_term(x, nodes.contains(&(j as u32 + 1)))).sum()
        }
        Supervision::Unsupervised => 0.0,
    };
    labels + word_term(data, d, xi, beta, totals)
}

/// Accepted moves of one [`interweave`] call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Moves {
    pub scale_accepted: bool,
    pub shifts_accepted: usize,
}

/// One scale move, then one shift move per label, of (η, λ) with the standardised
/// affinities fixed (module doc). `beta`, `totals` are e^μ and its column sums
/// ([`super::sampler::Caches::rates`]); `log_prior(η, log λ)` is the hyperprior's log
/// density in those coordinates (zero for HPC's flat prior): a prior stated on λ² must
/// carry the Jacobian, log p(λ²) + log(2λ²).
pub fn interweave(
    state: &mut HpcState,
    data: &HpcData,
    beta: &[f64],
    totals: &[f64],
    seed: u64,
    iteration: u64,
    log_prior: &dyn Fn(&[f64], f64) -> f64,
) -> Moves {
    let (k, docs) = (data.num_topics(), data.num_docs());
    let mut moves = Moves::default();
    if docs == 0 || k == 0 {
        return moves;
    }
    let mut rng = stream(seed, Purpose::HpcHyper, iteration, 1);
    let rates = Rates { beta, totals };
    moves.scale_accepted = scale_move(state, data, rates, log_prior, &mut rng);
    moves.shifts_accepted = shift_moves(state, data, rates, log_prior, &mut rng);
    moves
}

/// What the likelihood reads of the words: e^μ and its column sums.
#[derive(Clone, Copy)]
struct Rates<'a> {
    beta: &'a [f64],
    totals: &'a [f64],
}

/// log U for U uniform on [0, 1), the Metropolis test's draw.
fn log_uniform(rng: &mut StreamRng) -> f64 {
    rng.random::<f64>().ln()
}

/// The sum of `xs` in their order (per-document terms, summed in document order).
fn ordered_sum(xs: Vec<f64>) -> f64 {
    xs.iter().sum::<f64>()
}

/// The scale move: log λ by ε with the standardised affinities fixed (ξ scaled about
/// η). Returns whether it was accepted.
fn scale_move(state: &mut HpcState, data: &HpcData, rates: Rates, log_prior: &dyn Fn(&[f64], f64) -> f64, rng: &mut StreamRng) -> bool {
    let (k, docs) = (data.num_topics(), data.num_docs());
    let Rates { beta, totals } = rates;
    let log_lambda = 0.5 * state.lambda2.ln();
    let epsilon: f64 = StandardNormal.sample(rng);
    let epsilon = epsilon / (data.active.values.len() as f64 + 1.0).sqrt();
    let ratio = epsilon.exp();
    let eta = state.eta.clone();
    let proposed: Vec<f64> = state.xi.par_chunks(k).flat_map_iter(|row| row.iter().zip(&eta).map(move |(x, e)| e + ratio * (x - e))).collect();
    let current = ordered_sum((0..docs).into_par_iter().map(|d| doc_term(data, d, &state.xi[d * k..(d + 1) * k], beta, totals)).collect());
    let moved = ordered_sum((0..docs).into_par_iter().map(|d| doc_term(data, d, &proposed[d * k..(d + 1) * k], beta, totals)).collect());
    let log_accept = moved - current + log_prior(&eta, log_lambda + epsilon) - log_prior(&eta, log_lambda);
    if log_uniform(rng) < log_accept {
        state.xi = proposed;
        state.lambda2 *= ratio * ratio;
        return true;
    }
    false
}

/// The shift moves, one label at a time: η_k and ξ_·k by δ. Returns how many were
/// accepted.
fn shift_moves(state: &mut HpcState, data: &HpcData, rates: Rates, log_prior: &dyn Fn(&[f64], f64) -> f64, rng: &mut StreamRng) -> usize {
    let (k, docs) = (data.num_topics(), data.num_docs());
    let Rates { beta, totals } = rates;
    let mut accepted = 0;
    let log_lambda = 0.5 * state.lambda2.ln();
    let with_label = documents_by_label(data);
    // Each document's word term at the current ξ, kept up to date as shifts are
    // accepted, so a shift evaluates only its proposal.
    let mut words: Vec<f64> = (0..docs).into_par_iter().map(|d| word_term(data, d, &state.xi[d * k..(d + 1) * k], beta, totals)).collect();
    let mut row = vec![0.0; k];
    let mut proposed_words = Vec::new();
    for j in 0..k {
        let delta: f64 = StandardNormal.sample(rng);
        let delta = delta / (with_label[j].len() as f64 + 1.0).sqrt();
        let mut change = match data.supervision {
            Supervision::Labelled => label_shift_change(state, data, j, delta),
            Supervision::Unsupervised => 0.0,
        };
        proposed_words.clear();
        for &d in &with_label[j] {
            row.copy_from_slice(&state.xi[d * k..(d + 1) * k]);
            row[j] += delta;
            let moved = word_term(data, d, &row, beta, totals);
            change += moved - words[d];
            proposed_words.push(moved);
        }
        let mut shifted = state.eta.clone();
        shifted[j] += delta;
        let log_accept = change + log_prior(&shifted, log_lambda) - log_prior(&state.eta, log_lambda);
        if log_uniform(rng) < log_accept {
            state.eta = shifted;
            for d in 0..docs {
                state.xi[d * k + j] += delta;
            }
            for (&d, &moved) in with_label[j].iter().zip(&proposed_words) {
                words[d] = moved;
            }
            accepted += 1;
        }
    }
    accepted
}

/// For each label, the documents it is active in, in document order.
fn documents_by_label(data: &HpcData) -> Vec<Vec<usize>> {
    let mut with_label: Vec<Vec<usize>> = vec![Vec::new(); data.num_topics()];
    for d in 0..data.num_docs() {
        for &node in data.active.row(d) {
            with_label[node as usize - 1].push(d);
        }
    }
    with_label
}

/// The change of every document's label term when label `j`'s affinities move by
/// `delta`, summed in document order.
fn label_shift_change(state: &HpcState, data: &HpcData, j: usize, delta: f64) -> f64 {
    let k = data.num_topics();
    let active = |d: usize| data.active.row(d).contains(&(j as u32 + 1));
    ordered_sum(
        (0..data.num_docs())
            .into_par_iter()
            .map(|d| {
                let x = state.xi[d * k + j];
                label_term(x + delta, active(d)) - label_term(x, active(d))
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::hpc::rates::Curvature;
    use crate::models::hpc::sampler::Caches;

    /// Three labels (two under the first), five documents with one to three active
    /// labels, four words.
    fn small() -> (HpcData, HpcState) {
        let parent = vec![None, Some(0), Some(0), Some(1)];
        let active = vec![vec![1], vec![1, 3], vec![2, 3], vec![1, 2, 3], vec![2]];
        let counts = vec![vec![(0, 3), (2, 1)], vec![(1, 2), (3, 4)], vec![(0, 1), (1, 1), (2, 5)], vec![(3, 2), (2, 2), (0, 1)], vec![(1, 7)]];
        let data = HpcData::new(parent, Supervision::Labelled, active, counts, 4);
        let mut rng = stream(5, Purpose::Estimate, 0, 0);
        let mut state = HpcState::initial(&data, 5);
        for x in state.mu.iter_mut().chain(state.xi.iter_mut()) {
            let z: f64 = StandardNormal.sample(&mut rng);
            *x += 0.7 * z;
        }
        (data, state)
    }

    /// Σ_d of the moves' per-document terms differs from the sampler's (word, label)
    /// log-likelihood by a constant that does not depend on ξ: checked at two very
    /// different ξ, to rounding.
    #[test]
    fn the_moves_likelihood_is_the_samplers() {
        let (data, mut state) = small();
        let mut caches = Caches::new(&data, Curvature::Full);
        let k = data.num_topics();
        let gap = |state: &HpcState, caches: &mut Caches| {
            let (words, labels) = state.log_likelihood(&data, caches);
            let (beta, totals) = caches.rates(&state.mu, data.num_nodes());
            let ours: f64 = (0..data.num_docs()).map(|d| doc_term(&data, d, &state.xi[d * k..(d + 1) * k], beta, totals)).sum();
            words + labels - ours
        };
        let before = gap(&state, &mut caches);
        for (i, x) in state.xi.iter_mut().enumerate() {
            *x = 1.5 * *x - 0.3 * (i % 4) as f64;
        }
        let after = gap(&state, &mut caches);
        assert!((before - after).abs() < 1e-9, "the constant moved: {before} vs {after}");
    }

    /// The same identity for PCM's data: no label terms, every topic active.
    #[test]
    fn the_moves_likelihood_is_the_samplers_without_labels() {
        let (labelled, mut state) = small();
        let every = vec![vec![1, 2, 3]; labelled.num_docs()];
        let counts = (0..labelled.num_docs()).map(|d| labelled.doc_words.row(d).iter().map(|&(w, c)| (w, c as u32)).collect()).collect();
        let data = HpcData::new(vec![None, Some(0), Some(0), Some(0)], Supervision::Unsupervised, every, counts, 4);
        let mut caches = Caches::new(&data, Curvature::Full);
        let k = data.num_topics();
        let mut gap = |state: &HpcState| {
            let (words, labels) = state.log_likelihood(&data, &mut caches);
            assert_eq!(labels, 0.0);
            let (beta, totals) = caches.rates(&state.mu, data.num_nodes());
            let ours: f64 = (0..data.num_docs()).map(|d| doc_term(&data, d, &state.xi[d * k..(d + 1) * k], beta, totals)).sum();
            words - ours
        };
        let before = gap(&state);
        for (i, x) in state.xi.iter_mut().enumerate() {
            *x = 0.5 * *x + 0.2 * (i % 3) as f64;
        }
        let after = gap(&state);
        assert!((before - after).abs() < 1e-9, "the constant moved: {before} vs {after}");
    }

    /// The moves keep the standardised affinities: after them ξ − η is the old ξ − η
    /// times λ'/λ for every document and label. And they are the same at any thread
    /// count.
    #[test]
    fn moves_keep_the_standardised_affinities_and_do_not_depend_on_threads() {
        let (data, state) = small();
        let k = data.num_topics();
        let run = |threads: usize, iteration: u64| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| {
                let mut s = state.clone();
                let mut caches = Caches::new(&data, Curvature::Full);
                let (beta, totals) = caches.rates(&s.mu, data.num_nodes());
                let moves = interweave(&mut s, &data, beta, totals, 9, iteration, &|_, _| 0.0);
                (s, moves)
            })
        };
        let (mut scales, mut shifts) = (0, 0);
        for iteration in 0..40 {
            let (one, moves) = run(1, iteration);
            let (three, again) = run(3, iteration);
            assert_eq!((&one.xi, &one.eta, one.lambda2, moves), (&three.xi, &three.eta, three.lambda2, again));
            scales += moves.scale_accepted as usize;
            shifts += moves.shifts_accepted;
            let ratio = (one.lambda2 / state.lambda2).sqrt();
            for (i, (a, b)) in state.xi.iter().zip(&one.xi).enumerate() {
                let (e0, e1) = (state.eta[i % k], one.eta[i % k]);
                assert!(((a - e0) * ratio - (b - e1)).abs() < 1e-9);
            }
        }
        assert!(scales > 0 && shifts > 0, "accepted scale and shift moves: {scales}, {shifts}");
    }
}
