//! Tests of one HPC Gibbs scan: its log-likelihood and log prior against direct sums, and the log-likelihood a scan reports.

use super::*;
use crate::rng::{stream, Purpose};
use rand::RngExt;
use statrs::function::gamma::ln_gamma;

/// Root 0; labels 1, 2 under it; 3, 4 under 1. Three documents, three words.
fn tiny() -> (HpcData, HpcState) {
    let data = HpcData::new(
        vec![None, Some(0), Some(0), Some(1), Some(1)],
        Supervision::Labelled,
        vec![vec![1, 2], vec![3], vec![2, 3, 4]],
        vec![vec![(0, 2), (1, 1)], vec![(1, 4), (2, 1)], vec![(0, 1), (2, 3)]],
        3,
    );
    let mut rng = stream(40, Purpose::Estimate, 0, 0);
    let (v, n, k, d) = (3, 5, 4, 3);
    let mu: Vec<f64> = (0..v * n).map(|_| rng.random::<f64>() * 3.0 - 2.0).collect();
    let tau2: Vec<f64> = (0..v * n).map(|_| 0.2 + rng.random::<f64>()).collect();
    // Affinities from −45 to 45: both of the softplus sum's branches (e^x rounding
    // 1 + e^x to 1, and x > 30).
    let mut xi: Vec<f64> = (0..d * k).map(|_| rng.random::<f64>() * 6.0 - 3.0).collect();
    xi[1] = -45.0;
    xi[6] = 45.0;
    let state = HpcState { mu, tau2, xi, psi: -0.4, gamma2: 1.3, eta: vec![-1.0, 0.5, 0.0, -2.0], lambda2: 0.7, nu: 4.0, sigma2: 0.6 };
    (data, state)
}

/// The log-likelihood and log prior (computed with cached β, hoisted logarithms and
/// one logarithm per run of softplus terms) equal the textbook sums term by term.
#[test]
fn log_likelihood_and_prior_equal_the_direct_sums() {
    let (data, state) = tiny();
    let (n, k) = (data.num_nodes(), data.num_topics());
    let sigmoid = |x: f64| 1.0 / (1.0 + (-x).exp());
    let mut words = 0.0;
    for d in 0..data.num_docs() {
        let act = data.active.row(d);
        let xs: Vec<f64> = act.iter().map(|&node| state.xi[d * k + node as usize - 1]).collect();
        let th = super::super::affinity::softmax(&xs);
        for f in 0..data.num_terms() {
            let mean: f64 = data.lengths[d] * act.iter().zip(&th).map(|(&node, t)| t * state.mu[f * n + node as usize].exp()).sum::<f64>();
            let c = data.doc_words.row(d).iter().find(|&&(w, _)| w as usize == f).map_or(0.0, |&(_, c)| c);
            words += c * mean.ln() - mean - ln_gamma(c + 1.0);
        }
    }
    let mut labels = 0.0;
    for d in 0..data.num_docs() {
        for j in 0..k {
            let x = state.xi[d * k + j];
            // log σ(x) and log(1 − σ(x)) = log σ(−x), each without cancellation.
            labels += if data.active.row(d).contains(&((j + 1) as u32)) { sigmoid(x).ln() } else { sigmoid(-x).ln() };
        }
    }
    let log_normal = |x: f64, m: f64, v: f64| -0.5 * ((x - m).powi(2) / v + v.ln() + std::f64::consts::TAU.ln());
    let (nu, s2) = (state.nu, state.sigma2);
    let log_inv_chi2 = |t: f64| (nu / 2.0) * (nu * s2 / 2.0).ln() - ln_gamma(nu / 2.0) - (nu / 2.0 + 1.0) * t.ln() - nu * s2 / (2.0 * t);
    let mut prior = 0.0;
    for f in 0..data.num_terms() {
        let (mu, tau2) = (&state.mu[f * n..(f + 1) * n], &state.tau2[f * n..(f + 1) * n]);
        prior += log_normal(mu[0], state.psi, state.gamma2);
        for c in 1..n {
            let p = data.parent[c].unwrap();
            prior += log_normal(mu[c], mu[p], tau2[p]);
        }
        prior += data.parent_nodes.iter().map(|&p| log_inv_chi2(tau2[p])).sum::<f64>();
    }
    for d in 0..data.num_docs() {
        for j in 0..k {
            prior += log_normal(state.xi[d * k + j], state.eta[j], state.lambda2);
        }
    }
    let mut caches = Caches::new(&data, Curvature::TreeDiagonal);
    let (got_words, got_labels) = state.log_likelihood(&data, &mut caches);
    let got_prior = state.log_prior(&data);
    for (name, got, want) in [("words", got_words, words), ("labels", got_labels, labels), ("prior", got_prior, prior)] {
        assert!((got - want).abs() < 1e-10 * want.abs().max(1.0), "{name}: {got} vs {want}");
    }
}

/// The log-likelihood the affinity block computes on the fly (per document, from the
/// rates it gathered) equals [`HpcState::log_likelihood`] of the state the scan ends
/// in, for refit and steady scans.
#[test]
fn the_scan_reports_the_log_likelihood_of_its_final_state() {
    let (data, mut state) = tiny();
    state.xi.iter_mut().for_each(|x| *x = x.clamp(-4.0, 4.0));
    let mut caches = Caches::new(&data, Curvature::Full);
    for it in 1..=3 {
        let settings = ScanSettings { seed: 3, iteration: it, refit_modes: it == 1, leapfrog_steps: 4, step_size: 0.3 };
        let stats = state.scan(&data, &mut caches, settings);
        let (words, labels) = stats.log_likelihood.expect("the affinity block reports it");
        let mut fresh = Caches::new(&data, Curvature::Full);
        let (want_words, want_labels) = state.log_likelihood(&data, &mut fresh);
        assert!((words - want_words).abs() < 1e-10 * want_words.abs(), "scan {it}: words {words} vs {want_words}");
        assert!((labels - want_labels).abs() < 1e-10 * want_labels.abs(), "scan {it}: labels {labels} vs {want_labels}");
    }
}

/// What a checkpoint leaves out of the caches can be rebuilt exactly: after every scan
/// β is e^μ of the state (bit for bit) and B its column sums, and caches resumed from
/// the state and the cached likelihood Hessians continue the chain exactly as the
/// running caches do, with either curvature. Hessians of the wrong shape are refused.
#[test]
fn resumed_caches_continue_the_chain_exactly() {
    for curvature in [Curvature::Full, Curvature::TreeDiagonal] {
        let (data, mut state) = tiny();
        state.xi.iter_mut().for_each(|x| *x = x.clamp(-4.0, 4.0));
        let mut caches = Caches::new(&data, curvature);
        let settings = |it: u64| ScanSettings { seed: 9, iteration: it, refit_modes: it == 1 || it == 4, leapfrog_steps: 4, step_size: 0.3 };
        let mut resumed = None;
        for it in 1..=6 {
            state.scan(&data, &mut caches, settings(it));
            let exp_mu: Vec<u64> = state.mu.iter().map(|&m| fast_exp(m).to_bits()).collect();
            assert_eq!(caches.beta.iter().map(|b| b.to_bits()).collect::<Vec<_>>(), exp_mu, "{curvature:?} scan {it}: β is e^μ");
            assert_eq!(caches.rate_totals, column_sums(&caches.beta, data.num_nodes()));
            if it == 2 {
                let (rates, documents) = caches.likelihood_hessians();
                let documents = documents.iter().map(|m| m.as_slice().to_vec()).collect();
                resumed = Some((state.clone(), Caches::resumed(&data, curvature, &state.mu, rates.to_vec(), documents).expect("shapes fit")));
            }
        }
        let (mut other, mut other_caches) = resumed.unwrap();
        for it in 3..=6 {
            other.scan(&data, &mut other_caches, settings(it));
        }
        assert_eq!((other.mu, other.tau2, other.xi, other.eta), (state.mu.clone(), state.tau2.clone(), state.xi.clone(), state.eta.clone()), "{curvature:?}");
        assert_eq!((other.psi, other.gamma2, other.lambda2, other.nu, other.sigma2), (state.psi, state.gamma2, state.lambda2, state.nu, state.sigma2));

        let (rates, documents) = caches.likelihood_hessians();
        let documents: Vec<Vec<f64>> = documents.iter().map(|m| m.as_slice().to_vec()).collect();
        let mut short_word = rates.to_vec();
        short_word[1].0.pop();
        let mut short_document = documents.clone();
        short_document[2].pop();
        for (rates, documents) in [(short_word, documents.clone()), (rates.to_vec(), short_document), (rates[..2].to_vec(), documents)] {
            assert!(Caches::resumed(&data, curvature, &state.mu, rates, documents).is_err(), "{curvature:?}");
        }
    }
}
