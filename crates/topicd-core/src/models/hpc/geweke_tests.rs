//! Geweke joint-distribution tests of HPC's Gibbs blocks (Geweke 2004), and an exact
//! check of the (ν, σ²) HMC draw against its posterior by quadrature.
//!
//! A Geweke test runs two samplers of the joint p(block, data) with everything else
//! fixed: *marginal-conditional* draws the block from its prior and data given it,
//! independently; *successive-conditional* alternates drawing data given the block with
//! one update of the block by the sampler under test. If the update leaves the block's
//! conditional invariant, both give the block its prior distribution. Test functions
//! (first and second moments) are compared by z-scores whose standard errors use batch
//! means for the autocorrelated successive-conditional chain.
//!
//! Threshold: every |z| must stay below 4.5. With about 20 z-scores per test the chance
//! that a correct sampler fails is about 20 · 7e-6 ≈ 1e-4; a wrong conditional (a
//! dropped gradient term, a wrong sign in a conditional draw) shifts the moments by many
//! standard errors at these chain lengths.

use super::data::HpcData;
use super::dispersion::Dispersion;
use super::rates::Curvature;
use super::sampler::{Caches, HpcState, ScanSettings};
use super::variant::Supervision;
use crate::inference::geweke::{mean_and_variance_of_mean, z_score};
use crate::inference::{hmc_step, LogDensity, MassMatrix};
use crate::rng::{stream, Purpose};
use rand::RngExt;
use rand_distr::{ChiSquared, Distribution, Normal, Poisson, StandardNormal};

const Z_LIMIT: f64 = 4.5;

fn assert_all_z(names: &[String], independent: &[Vec<f64>], chain: &[Vec<f64>]) {
    for (i, name) in names.iter().enumerate() {
        let z = z_score(&independent[i], &chain[i]);
        assert!(z.abs() < Z_LIMIT, "{name}: z = {z:.2}");
    }
}

fn poisson<R: rand::Rng + ?Sized>(mean: f64, rng: &mut R) -> u32 {
    if mean <= 0.0 {
        0
    } else {
        Poisson::new(mean).unwrap().sample(rng) as u32
    }
}

/// Simulated documents: each one's active nodes and its sparse (feature, count) row.
type Documents = (Vec<Vec<u32>>, Vec<Vec<(u32, u32)>>);

/// Labels and words of `xi.len() / k` documents given their affinities (row-major
/// D × K) and the log rates `mu` (word-major V × (K + 1)), each document of length 1:
/// I_dk ~ Bernoulli(σ(ξ_dk)), w_fd ~ Poisson(θ_dᵀ β_f) with θ_d the softmax of its
/// active affinities.
fn labels_and_words(xi: &[f64], mu: &[f64], k: usize, v: usize, rng: &mut crate::rng::StreamRng) -> Documents {
    let mut active = Vec::new();
    let mut counts = Vec::new();
    for d in 0..xi.len() / k {
        let act: Vec<u32> = (0..k).filter(|&j| rng.random::<f64>() < super::affinity::sigmoid(xi[d * k + j])).map(|j| j as u32 + 1).collect();
        let xs: Vec<f64> = act.iter().map(|&node| xi[d * k + node as usize - 1]).collect();
        let th = super::affinity::softmax(&xs);
        let row: Vec<(u32, u32)> = (0..v)
            .filter_map(|f| {
                let rate: f64 = act.iter().zip(&th).map(|(&node, t)| t * mu[f * (k + 1) + node as usize].exp()).sum();
                let c = poisson(rate, rng);
                (c > 0).then_some((f as u32, c))
            })
            .collect();
        active.push(act);
        counts.push(row);
    }
    (active, counts)
}

/// The Gibbs step the affinity tests alternate with: labels and words drawn afresh given
/// the state's ξ (rates `mu`, every length 1), then the affinity block (seed, iteration)
/// on them. Returns the data and caches it ran on, for a move that follows.
fn redraw_then_affinity_block(
    state: &mut HpcState,
    parent: &[Option<usize>],
    mu: &[f64],
    (k, v): (usize, usize),
    (seed, iteration): (u64, u64),
    rng: &mut crate::rng::StreamRng,
) -> (HpcData, Caches) {
    let (active, counts) = labels_and_words(&state.xi, mu, k, v, rng);
    let docs = active.len();
    let mut data = HpcData::new(parent.to_vec(), Supervision::Labelled, active, counts, v);
    data.lengths = vec![1.0; docs];
    let mut caches = Caches::new(&data, Curvature::Full);
    let settings = ScanSettings { seed, iteration, refit_modes: true, leapfrog_steps: 5, step_size: 0.4 };
    state.affinity_block(&data, &mut caches, settings);
    (data, caches)
}

/// Tree: root 0; labels 1, 2 under it; 3, 4 under label 1.
const PARENT: [Option<usize>; 5] = [None, Some(0), Some(0), Some(1), Some(1)];

/// μ/τ² block: with ξ, ψ, γ², ν, σ² fixed, draw μ_f and τ²_f from the tree prior, the
/// counts of two words in four documents from the Poisson likelihood, and check that
/// alternating counts and the rate block keeps the prior. The counts decide each word's
/// touched subtree afresh every step, so the chain runs the HMC on blocks of every size
/// (from the whole tree to none: a word absent from all documents has every node,
/// the root included, untouched) and the untouched nodes' Metropolis–Hastings updates.
#[test]
fn rate_block_keeps_the_joint_distribution() {
    let (psi, gamma2, nu, sigma2): (f64, f64, f64, f64) = (0.8, 0.5, 6.0, 0.3);
    let active: Vec<Vec<u32>> = vec![vec![1], vec![2], vec![3, 4], vec![2, 3]];
    let xi_rows = [[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.4, -0.3], [0.0, 0.2, -0.5, 0.0]];
    let lengths = vec![1.0, 0.7, 1.4, 0.9];
    let (v, n) = (2usize, 5usize);
    let draw_prior = |rng: &mut crate::rng::StreamRng| -> (Vec<f64>, Vec<f64>) {
        let chi = ChiSquared::new(nu).unwrap();
        let mut mu = vec![0.0f64; v * n];
        let mut tau2 = vec![0.0f64; v * n];
        for f in 0..v {
            for p in [0, 1] {
                tau2[f * n + p] = nu * sigma2 / chi.sample(rng);
            }
            mu[f * n] = Normal::new(psi, gamma2.sqrt()).unwrap().sample(rng);
            for c in 1..n {
                let p = PARENT[c].unwrap();
                mu[f * n + c] = Normal::new(mu[f * n + p], tau2[f * n + p].sqrt()).unwrap().sample(rng);
            }
        }
        (mu, tau2)
    };
    let theta = |d: usize| -> Vec<(usize, f64)> {
        let nodes = &active[d];
        let xs: Vec<f64> = nodes.iter().map(|&k| xi_rows[d][k as usize - 1]).collect();
        let th = super::affinity::softmax(&xs);
        nodes.iter().map(|&k| k as usize).zip(th).collect()
    };
    let draw_counts = |mu: &[f64], rng: &mut crate::rng::StreamRng| -> Vec<Vec<(u32, u32)>> {
        (0..active.len())
            .map(|d| {
                (0..v)
                    .filter_map(|f| {
                        let rate: f64 = theta(d).iter().map(|&(k, t)| t * mu[f * n + k].exp()).sum();
                        let c = poisson(lengths[d] * rate, rng);
                        (c > 0).then_some((f as u32, c))
                    })
                    .collect()
            })
            .collect()
    };
    let functions = |mu: &[f64], tau2: &[f64]| -> Vec<f64> {
        let mut g = Vec::new();
        for &m in &mu[..n] {
            g.push(m);
            g.push(m * m);
        }
        g.push(tau2[0].ln());
        g.push(tau2[1].ln());
        g.push(mu[n + 3] - mu[n + 1]);
        g
    };
    let mut names: Vec<String> = (0..n).flat_map(|k| [format!("mu[{k}]"), format!("mu[{k}]^2")]).collect();
    names.extend(["log tau2[0]".into(), "log tau2[1]".into(), "mu[1,3] - mu[1,1]".into()]);

    let draws = 4_000;
    let mut rng = stream(31, Purpose::Estimate, 0, 0);
    let mut independent = vec![Vec::new(); names.len()];
    for _ in 0..draws {
        let (mu, tau2) = draw_prior(&mut rng);
        for (i, x) in functions(&mu, &tau2).into_iter().enumerate() {
            independent[i].push(x);
        }
    }
    // Both curvatures: the exact sparse Hessian and the fill-free tree-plus-diagonal.
    for curvature in [Curvature::Full, Curvature::TreeDiagonal] {
        let (mu, tau2) = draw_prior(&mut rng);
        let mut state = HpcState { mu, tau2, xi: xi_rows.concat(), psi, gamma2, eta: vec![0.0; 4], lambda2: 1.0, nu, sigma2 };
        let mut chain = vec![Vec::new(); names.len()];
        let steps = 20_000;
        let mut totals = super::sampler::ScanStats::default();
        for it in 0..steps {
            let counts = draw_counts(&state.mu, &mut rng);
            let mut data = HpcData::new(PARENT.to_vec(), Supervision::Labelled, active.clone(), counts, v);
            data.lengths = lengths.clone();
            let mut caches = Caches::new(&data, curvature);
            let settings = ScanSettings { seed: 5, iteration: it, refit_modes: true, leapfrog_steps: 5, step_size: 0.4 };
            totals = totals.merge(state.rate_block(&data, &mut caches, settings));
            for (i, x) in functions(&state.mu, &state.tau2).into_iter().enumerate() {
                chain[i].push(x);
            }
        }
        // Coverage, not a statistic: both parts of the split ran often, HMC on a
        // non-empty block (at most one per word and step) and Metropolis–Hastings steps
        // of untouched nodes with c_k > 0 (about 12 000 with these settings, acceptance
        // about 0.76).
        assert!(totals.rate_draws > steps as usize && totals.untouched_proposals > steps as usize / 4, "{totals:?}");
        let names: Vec<String> = names.iter().map(|n| format!("{curvature:?} {n}")).collect();
        assert_all_z(&names, &independent, &chain);
    }
}

/// The restricted rate HMC alone: a word's block {0, 1, 2, 3} of the tree root 0; 1, 2
/// under it; 3, 4 under 1; 5 under 2, with μ4 and μ5 held fixed (they hang off the
/// block, so the block's prior has boundary terms at 1 and 2). The block's conditional
/// prior given them is Gaussian, N(Λ⁻¹b, Λ⁻¹) with Λ = −(its Hessian) and b its
/// gradient at 0; counts of documents whose labels lie in the block are Poisson. The
/// successive-conditional chain alternates fresh counts with one HMC step on the block's
/// conditional (mode refit, cached curvature plus prior as mass matrix, as a refit scan
/// does), for both curvatures. Threshold and standard errors as above.
#[test]
fn restricted_rate_hmc_keeps_the_block_conditional() {
    use super::data::Rows;
    use super::rates::{find_mode, RateConditional};
    use super::touched::WordBlock;
    use crate::inference::{minimum_degree_order, SparsePattern, SparseSymmetric};
    use nalgebra::{DMatrix, DVector};
    let parent = vec![None, Some(0), Some(0), Some(1), Some(1), Some(2)];
    let order: Vec<u32> = (0..6).collect();
    let nodes = vec![0u32, 1, 2, 3];
    let block = WordBlock::new(&parent, &order, &nodes);
    assert_eq!(block.untouched, vec![4, 5]);
    let tau2 = [0.4, 0.3, 0.7, 1.0, 1.0, 1.0];
    let fixed = [0.0, 0.0, 0.0, 0.0, 1.2, -0.8];
    let inverse_tau2: Vec<f64> = tau2.iter().map(|t| 1.0 / t).collect();
    let prior = block.prior(&parent, 0.5, 0.6, &inverse_tau2, &fixed);
    let m = nodes.len();
    let mut h = DMatrix::zeros(m, m);
    prior.add_hessian(&mut h);
    let mut b = vec![0.0; m];
    prior.logp_grad(&vec![0.0; m], &mut b);
    let chol = (-h).cholesky().expect("the prior precision is positive definite");
    let mean = chol.solve(&DVector::from_vec(b));
    let draw_prior = |rng: &mut crate::rng::StreamRng| -> Vec<f64> {
        let z = DVector::from_iterator(m, (0..m).map(|_| StandardNormal.sample(rng)));
        // x = mean + L⁻ᵀ z has covariance (L Lᵀ)⁻¹ = Λ⁻¹.
        let w = chol.l().transpose().solve_upper_triangular(&z).expect("positive diagonal");
        (&mean + w).as_slice().to_vec()
    };
    // Documents (labels in the block, θ uniform over them) and their lengths.
    let labels: Vec<Vec<u32>> = vec![vec![1], vec![3], vec![2, 3], vec![1, 2], vec![2]];
    let lengths = [1.0, 0.6, 1.5, 0.8, 1.2];
    let active = Rows::from_rows(labels.clone());
    let theta: Vec<f64> = labels.iter().flat_map(|l| vec![1.0 / l.len() as f64; l.len()]).collect();
    let mut linear = vec![0.0; 6];
    for (d, l) in labels.iter().enumerate() {
        for &k in l {
            linear[k as usize] += lengths[d] / l.len() as f64;
        }
    }
    let draw_counts = |x: &[f64], rng: &mut crate::rng::StreamRng| -> Vec<(u32, f64)> {
        labels
            .iter()
            .enumerate()
            .filter_map(|(d, l)| {
                let rate: f64 = l.iter().map(|&k| x[block.local_of[k as usize] as usize].exp() / l.len() as f64).sum();
                let c = poisson(lengths[d] * rate, rng);
                (c > 0).then_some((d as u32, c as f64))
            })
            .collect()
    };
    let functions = |x: &[f64]| -> Vec<f64> { x.iter().flat_map(|&v| [v, v * v]).collect() };
    let names: Vec<String> = nodes.iter().flat_map(|k| [format!("mu[{k}]"), format!("mu[{k}]^2")]).collect();
    let mut rng = stream(34, Purpose::Estimate, 0, 0);
    let mut independent = vec![Vec::new(); names.len()];
    for _ in 0..4_000 {
        for (i, v) in functions(&draw_prior(&mut rng)).into_iter().enumerate() {
            independent[i].push(v);
        }
    }
    let tree_edges: Vec<(usize, usize)> = block.parent.iter().enumerate().filter_map(|(c, p)| p.map(|p| (c, p))).collect();
    let mut full_edges = tree_edges.clone();
    full_edges.extend([(2, 3), (1, 2)]); // documents {2, 3} and {1, 2} (block index = node here)
    for curvature in [Curvature::Full, Curvature::TreeDiagonal] {
        let pattern = match curvature {
            Curvature::Full => SparsePattern::new(&minimum_degree_order(m, full_edges.iter().copied()), full_edges.iter().copied()),
            Curvature::TreeDiagonal => SparsePattern::for_tree(&block.parent),
        };
        let mut x = draw_prior(&mut rng);
        let mut chain = vec![Vec::new(); names.len()];
        let mut accepted = 0;
        for _ in 0..20_000 {
            let docs = draw_counts(&x, &mut rng);
            let cond = RateConditional::on_block(&docs, &active, &theta, &linear, &nodes, &block.local_of, prior.clone());
            let mode = find_mode(&cond, &pattern, curvature, &x, 50, 1e-8);
            let mut mass = SparseSymmetric::zeros(&pattern);
            cond.add_negative_likelihood_hessian(&mode.point, &mut mass, curvature);
            cond.prior.add_precision(&mut mass);
            let (factor, _) = mass.cholesky_repaired();
            accepted += hmc_step(&cond, &mut x, &factor, 0.4, 5, &mut rng).accepted as usize;
            for (i, v) in functions(&x).into_iter().enumerate() {
                chain[i].push(v);
            }
        }
        assert!(accepted > 15_000, "{curvature:?}: accepted {accepted} of 20000");
        let names: Vec<String> = names.iter().map(|n| format!("{curvature:?} {n}")).collect();
        assert_all_z(&names, &independent, &chain);
    }
}

/// ξ block: with μ, η, λ² fixed, draw ξ_d from N(η, λ²), labels from Bernoulli(σ(ξ))
/// and counts from the Poisson likelihood over the drawn active labels, and check that
/// alternating labels-and-counts with the affinity block keeps the prior. A document
/// that draws no label has no active block and no words; only its inactive
/// coordinates move.
#[test]
fn affinity_block_keeps_the_joint_distribution() {
    let parent = vec![None, Some(0), Some(0), Some(1)];
    let (k, docs, v) = (3usize, 3usize, 3usize);
    let eta = vec![0.6, -0.4, 0.0];
    let lambda2: f64 = 0.8;
    let mu: Vec<f64> = vec![0.0, 0.5, -0.3, 1.0, 0.0, -0.5, 0.9, 0.2, 0.0, 0.3, 0.1, -0.8];
    let draw_prior = |rng: &mut crate::rng::StreamRng| -> Vec<f64> {
        (0..docs * k)
            .map(|i| {
                let z: f64 = StandardNormal.sample(rng);
                eta[i % k] + lambda2.sqrt() * z
            })
            .collect()
    };
    let functions = |xi: &[f64]| -> Vec<f64> { xi.iter().flat_map(|&x| [x, x * x]).collect() };
    let names: Vec<String> = (0..docs * k).flat_map(|i| [format!("xi[{i}]"), format!("xi[{i}]^2")]).collect();

    let mut rng = stream(32, Purpose::Estimate, 0, 0);
    let mut independent = vec![Vec::new(); names.len()];
    for _ in 0..4_000 {
        for (i, x) in functions(&draw_prior(&mut rng)).into_iter().enumerate() {
            independent[i].push(x);
        }
    }
    let mut state = HpcState {
        mu: mu.clone(),
        tau2: vec![1.0; mu.len()],
        xi: draw_prior(&mut rng),
        psi: 0.0,
        gamma2: 1.0,
        eta: eta.clone(),
        lambda2,
        nu: 5.0,
        sigma2: 1.0,
    };
    let mut chain = vec![Vec::new(); names.len()];
    for it in 0..20_000 {
        redraw_then_affinity_block(&mut state, &parent, &mu, (k, v), (6, it), &mut rng);
        for (i, x) in functions(&state.xi).into_iter().enumerate() {
            chain[i].push(x);
        }
    }
    assert_all_z(&names, &independent, &chain);
}

/// The (ν, σ²) draw: HMC on (log κ, log λ) with the mass matrix at the mode, repeated,
/// has the posterior's mean of log κ and log λ, computed by quadrature on a grid
/// (flat prior on (κ, λ), Jacobian included). 20 000 draws; the chain's standard error
/// comes from batch means; |z| < 4.5 as above.
#[test]
fn dispersion_draws_match_the_posterior_by_quadrature() {
    let tau2 = [0.3, 1.2, 0.05, 0.7, 2.0, 0.4, 0.9, 0.15, 0.6, 1.1];
    let d = Dispersion::from_variances(tau2);
    let mut g = [0.0; 2];
    let (lo, hi, steps) = (-6.0, 6.0, 600);
    let h = (hi - lo) / steps as f64;
    let (mut z, mut ma, mut mb) = (0.0, 0.0, 0.0);
    let mode_logp = d.logp_grad(&d.mode(), &mut g);
    for i in 0..=steps {
        for j in 0..=steps {
            let (a, b) = (lo + i as f64 * h, lo + j as f64 * h);
            let w = (d.logp_grad(&[a, b], &mut g) - mode_logp).exp();
            z += w;
            ma += w * a;
            mb += w * b;
        }
    }
    let (ma, mb) = (ma / z, mb / z);
    let mass = MassMatrix::from_negative_hessian(&d.hessian(&d.mode()));
    let mut rng = stream(33, Purpose::Estimate, 0, 0);
    let mut x = d.mode();
    let (mut xa, mut xb, mut accepted) = (Vec::new(), Vec::new(), 0);
    for _ in 0..20_000 {
        accepted += hmc_step(&d, &mut x, &mass, 0.4, 5, &mut rng).accepted as usize;
        xa.push(x[0]);
        xb.push(x[1]);
    }
    assert!(accepted > 15_000, "acceptance {accepted} of 20000");
    for (name, want, chain) in [("log kappa", ma, &xa), ("log lambda", mb, &xb)] {
        let (m, var) = mean_and_variance_of_mean(chain);
        let zscore = (m - want) / var.sqrt();
        assert!(zscore.abs() < Z_LIMIT, "{name}: chain mean {m}, quadrature {want}, z = {zscore:.2}");
    }
}

/// The interweaving moves of (η, λ) ([`super::interweave`]) under a proper hyperprior
/// (η_k ~ N(m_k, 0.5²), log λ ~ N(log 0.9, 0.3²): a Geweke test needs one to draw from),
/// composed with the affinity block so that the standardised affinities, which the
/// moves hold fixed, are refreshed too. Marginal-conditional: (η, λ) from the prior, ξ
/// given them. Successive-conditional: labels and words given ξ, the affinity block,
/// then the moves. The moves' acceptance must carry exactly the likelihood and prior
/// ratios for η, log λ and every ξ to keep their prior moments; a wrong Jacobian in the
/// scale move gave z = 22 for log λ². (The words say little about θ in documents this
/// short: that the moves' likelihood is the sampler's own is checked exactly in
/// `interweave`'s tests.) 20 000 steps, |z| < 4.5 as above.
#[test]
fn interweaving_moves_keep_the_joint_distribution() {
    let parent = vec![None, Some(0), Some(0), Some(1)];
    let (k, docs, v) = (3usize, 3usize, 3usize);
    let prior_mean = [0.6, -0.4, 0.0];
    let (eta_sd, log_lambda_mean, log_lambda_sd) = (0.5, 0.9f64.ln(), 0.3);
    let log_prior = |eta: &[f64], log_lambda: f64| -> f64 {
        let e: f64 = eta.iter().zip(&prior_mean).map(|(x, m)| -0.5 * ((x - m) / eta_sd).powi(2)).sum();
        e - 0.5 * ((log_lambda - log_lambda_mean) / log_lambda_sd).powi(2)
    };
    let mu: Vec<f64> = vec![0.0, 0.5, -0.3, 1.0, 0.0, -0.5, 0.9, 0.2, 0.0, 0.3, 0.1, -0.8];
    let draw_prior = |rng: &mut crate::rng::StreamRng| -> (Vec<f64>, f64, Vec<f64>) {
        let eta: Vec<f64> = prior_mean
            .iter()
            .map(|m| {
                let z: f64 = StandardNormal.sample(rng);
                m + eta_sd * z
            })
            .collect();
        let z: f64 = StandardNormal.sample(rng);
        let lambda = (log_lambda_mean + log_lambda_sd * z).exp();
        let xi = (0..docs * k)
            .map(|i| {
                let z: f64 = StandardNormal.sample(rng);
                eta[i % k] + lambda * z
            })
            .collect();
        (eta, lambda * lambda, xi)
    };
    let functions = |eta: &[f64], lambda2: f64, xi: &[f64]| -> Vec<f64> {
        let log_lambda = 0.5 * lambda2.ln();
        eta.iter().chain(std::iter::once(&log_lambda)).chain(xi).flat_map(|&x| [x, x * x]).collect()
    };
    let names: Vec<String> = (0..k)
        .map(|j| format!("eta[{j}]"))
        .chain(std::iter::once("log lambda".to_string()))
        .chain((0..docs * k).map(|i| format!("xi[{i}]")))
        .flat_map(|name| [name.clone(), format!("{name}^2")])
        .collect();

    let mut rng = stream(33, Purpose::Estimate, 0, 0);
    let mut independent = vec![Vec::new(); names.len()];
    for _ in 0..4_000 {
        let (eta, lambda2, xi) = draw_prior(&mut rng);
        for (i, x) in functions(&eta, lambda2, &xi).into_iter().enumerate() {
            independent[i].push(x);
        }
    }
    let (eta, lambda2, xi) = draw_prior(&mut rng);
    let mut state = HpcState { mu: mu.clone(), tau2: vec![1.0; mu.len()], xi, psi: 0.0, gamma2: 1.0, eta, lambda2, nu: 5.0, sigma2: 1.0 };
    let mut chain = vec![Vec::new(); names.len()];
    let mut accepted = (0, 0);
    for it in 0..20_000u64 {
        let (data, mut caches) = redraw_then_affinity_block(&mut state, &parent, &mu, (k, v), (7, it), &mut rng);
        let (beta, totals) = caches.rates(&state.mu, k + 1);
        let moves = super::interweave::interweave(&mut state, &data, beta, totals, 7, it, &log_prior);
        accepted.0 += moves.scale_accepted as usize;
        accepted.1 += moves.shifts_accepted;
        for (i, x) in functions(&state.eta, state.lambda2, &state.xi).into_iter().enumerate() {
            chain[i].push(x);
        }
    }
    // The moves must move: they are this chain's only update of (η, λ).
    assert!(accepted.0 > 2_000 && accepted.1 > 6_000, "accepted scale and shift moves: {accepted:?}");
    assert_all_z(&names, &independent, &chain);
}
