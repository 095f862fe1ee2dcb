//! One Gibbs scan of HPC (paper 003, §3.1 and Appendix A): the rate block per word,
//! the affinity block per document, then the hyperparameters.
//!
//! Why it exists: this is the sampler proper, free of jobs and storage. Every word and
//! every document draws from its own random stream keyed by (seed, scan, index), so a
//! scan gives the same numbers on any number of threads.
//!
//! Scheduled conditional HMC (Algorithm 1): on scans the schedule picks, each word's
//! (document's) conditional mode is found and the likelihood Hessian there is cached;
//! every scan adds the prior Hessian at the current hyperparameters, factors the sum
//! (repairing it if it is not positive definite) and uses it as the HMC mass matrix.
//! A word's HMC runs on its touched subtree given the other nodes, whose log rates are
//! then updated one by one by Metropolis–Hastings ([`super::touched`],
//! [`super::untouched`]); the mode, the cached Hessian and the mass matrix are those of
//! the block's conditional.
//! Inactive affinities have a document-free one-dimensional conditional and are drawn
//! exactly ([`super::affinity::draw_inactive`]).

use super::affinity::{find_block_mode, ActiveAffinities, InactiveSampler};
pub(crate) use super::caches::column_sums;
pub use super::caches::{Caches, RateHessian};
use super::data::HpcData;
use super::dispersion::Dispersion;
use super::hyper::{affinity_mean, affinity_squares, draw_eta_lambda2_from, draw_psi_gamma2, AffinitySpread};
use super::rate_scratch::RateScratch;
use super::rates::{find_mode, Curvature, RateConditional};
use super::touched::WordBlock;
use super::untouched::{update_untouched, UntouchedPrior};
use super::variances::draw_tau2;
use super::variant::Supervision;
use crate::inference::{fast_exp, hmc_step, MassMatrix, SparsePattern, SparseSymmetric};
use crate::rng::{stream, Purpose};
use nalgebra::DMatrix;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// Settings of one scan.
#[derive(Debug, Clone, Copy)]
pub struct ScanSettings {
    pub seed: u64,
    pub iteration: u64,
    pub refit_modes: bool,
    pub leapfrog_steps: usize,
    pub step_size: f64,
}

/// The sampler's state: every latent variable and hyperparameter.
#[derive(Debug, Clone)]
pub struct HpcState {
    /// μ, word-major V × N (N = nodes = K + 1).
    pub mu: Vec<f64>,
    /// τ², word-major V × N; only parent nodes' entries are used.
    pub tau2: Vec<f64>,
    /// ξ, document-major D × K (label node k at column k − 1).
    pub xi: Vec<f64>,
    pub psi: f64,
    pub gamma2: f64,
    /// η over labels (K).
    pub eta: Vec<f64>,
    pub lambda2: f64,
    /// (ν, σ²) of the τ² prior.
    pub nu: f64,
    pub sigma2: f64,
}

/// Counts from one scan (acceptances, repairs), summed over words or documents.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ScanStats {
    pub rate_accepted: usize,
    pub rate_draws: usize,
    /// Metropolis–Hastings steps of untouched log rates (nodes with c_k > 0) and how
    /// many were accepted.
    pub untouched_accepted: usize,
    pub untouched_proposals: usize,
    pub affinity_accepted: usize,
    pub affinity_draws: usize,
    pub dispersion_accepted: bool,
    /// Newton steps of mode searches whose Hessian needed a diagonal shift (expected
    /// far from the mode, where the chain-rule term can make it indefinite).
    pub mode_repairs: usize,
    /// Mass matrices (−H at the cached mode plus the current prior) that needed one.
    pub mass_repairs: usize,
    /// Inactive affinities drawn by the Metropolis fallback instead of exactly.
    pub inactive_fallbacks: usize,
    /// The log-likelihood (words, labels) at the state the scan ends in, as
    /// [`HpcState::log_likelihood`] gives it, computed by the affinity block from the
    /// rates it already gathered (the hyperparameter block changes neither μ nor ξ).
    pub log_likelihood: Option<(f64, f64)>,
}

impl ScanStats {
    /// Sum of two statistics (the dispersion flag of `self` is kept).
    pub fn merge(mut self, o: ScanStats) -> ScanStats {
        self.rate_accepted += o.rate_accepted;
        self.rate_draws += o.rate_draws;
        self.untouched_accepted += o.untouched_accepted;
        self.untouched_proposals += o.untouched_proposals;
        self.affinity_accepted += o.affinity_accepted;
        self.affinity_draws += o.affinity_draws;
        self.mode_repairs += o.mode_repairs;
        self.mass_repairs += o.mass_repairs;
        self.inactive_fallbacks += o.inactive_fallbacks;
        self.log_likelihood = self.log_likelihood.or(o.log_likelihood);
        self
    }
}

/// Σ log(1 + e^x) over `xs` with one logarithm per run of terms: the factors 1 + e^x
/// are multiplied and the product's logarithm is taken before it could overflow (each
/// factor below e^30 keeps a product under 1e280 from reaching f64's limit). The
/// exponentials are [`fast_exp`] (within 2 ulp of libm): the label log-likelihood takes
/// one per document and label, 18 M a scan on the 30 000-document benchmark, where the
/// library call was ≈ 5 % of the run.
fn sum_softplus(xs: &[f64]) -> f64 {
    let (mut total, mut product) = (0.0, 1.0);
    for &x in xs {
        if x > 30.0 {
            total += x + (-x).exp().ln_1p();
        } else {
            product *= 1.0 + fast_exp(x);
            if product > 1e280 {
                total += product.ln();
                product = 1.0;
            }
        }
    }
    total + product.ln()
}

/// Every word's τ² at the parent nodes, word by word: what the τ²'s prior is drawn from.
pub(crate) fn parent_variances<'a>(data: &'a HpcData, tau2: &'a [f64]) -> impl Iterator<Item = f64> + 'a {
    tau2.chunks(data.num_nodes()).flat_map(|row| data.parent_nodes.iter().map(move |&p| row[p]))
}

/// θ of every document over its active nodes (aligned with `data.active.values`).
pub fn document_weights(data: &HpcData, xi: &[f64]) -> Vec<f64> {
    let k = data.num_topics();
    let mut theta = vec![0.0; data.active.values.len()];
    for d in 0..data.num_docs() {
        let r = data.active.range(d);
        let (nodes, out) = (&data.active.values[r.clone()], &mut theta[r]);
        // softmax in place: no allocation per document.
        let max = nodes.iter().map(|&node| xi[d * k + node as usize - 1]).fold(f64::NEG_INFINITY, f64::max);
        let mut total = 0.0;
        for (t, &node) in out.iter_mut().zip(nodes) {
            *t = (xi[d * k + node as usize - 1] - max).exp();
            total += *t;
        }
        out.iter_mut().for_each(|t| *t /= total);
    }
    theta
}

/// c = Σ_d l_d θ_d by node.
pub(super) fn linear_term(data: &HpcData, theta: &[f64]) -> Vec<f64> {
    linear_term_from(vec![0.0; data.num_nodes()], data, theta)
}

/// [`linear_term`] continued from the running sum `c` of the documents before
/// `data`'s (the ranks before this one pass it on).
pub(super) fn linear_term_from(mut c: Vec<f64>, data: &HpcData, theta: &[f64]) -> Vec<f64> {
    for d in 0..data.num_docs() {
        let r = data.active.range(d);
        for (&node, &t) in data.active.values[r.clone()].iter().zip(&theta[r]) {
            c[node as usize] += data.lengths[d] * t;
        }
    }
    c
}

impl HpcState {
    /// A starting point: each word's rates from its smoothed frequency under each label,
    /// active affinities at 0, inactive ones and η from the label frequencies.
    pub fn initial(data: &HpcData, seed: u64) -> Self {
        let (v, n, k, d) = (data.num_terms(), data.num_nodes(), data.num_topics(), data.num_docs());
        let exposure = initial_exposure(vec![0.0; n], data);
        let mu = initial_rates(data, &exposure, seed, 0);
        let root: Vec<f64> = (0..v).map(|f| mu[f * n]).collect();
        let (psi, gamma2) = initial_root_prior(&root);
        let eta = initial_eta(&data.active, k, data.supervision);
        let xi = initial_affinities(data, &eta);
        debug_assert_eq!(xi.len(), d * k);
        HpcState { mu, tau2: Self::initial_tau2(v, n), xi, psi, gamma2, eta, lambda2: 1.0, nu: 5.0, sigma2: 0.5 }
    }

    /// The starting τ² of `v` words over `n` nodes. Only parent nodes' entries are
    /// ever drawn; the others keep this value for the whole chain.
    pub fn initial_tau2(v: usize, n: usize) -> Vec<f64> {
        vec![0.5; v * n]
    }

    /// One full Gibbs scan. Returns its statistics.
    pub fn scan(&mut self, data: &HpcData, caches: &mut Caches, s: ScanSettings) -> ScanStats {
        let mut stats = self.rate_block(data, caches, s);
        stats = stats.merge(self.affinity_block(data, caches, s));
        stats.dispersion_accepted = self.hyperparameters(data, s);
        stats
    }

    /// Block 1: μ_f by SCHMC on the word's touched subtree, its untouched nodes by
    /// Metropolis–Hastings, then τ²_f per parent node, for every word in parallel.
    pub(crate) fn rate_block(&mut self, data: &HpcData, caches: &mut Caches, s: ScanSettings) -> ScanStats {
        let theta = document_weights(data, &self.xi);
        let linear = linear_term(data, &theta);
        let hyper = self.rate_hyperparameters();
        rate_rows(&mut self.mu, &mut self.tau2, hyper, data, caches, s, RateInputs { theta: &theta, linear: &linear, first_word: 0 })
    }

    /// The hyperparameters the rate block reads: (ψ, γ², ν, σ²).
    pub(crate) fn rate_hyperparameters(&self) -> [f64; 4] {
        [self.psi, self.gamma2, self.nu, self.sigma2]
    }

    /// Block 2: ξ_d's active block by SCHMC and its inactive coordinates exactly, for
    /// every document in parallel.
    pub(crate) fn affinity_block(&mut self, data: &HpcData, caches: &mut Caches, s: ScanSettings) -> ScanStats {
        caches.rates(&self.mu, data.num_nodes());
        let Caches { beta, rate_totals, affinity_hessians, .. } = caches;
        let rates = AffinityInputs { beta, rate_totals, first_doc: 0 };
        let (mut stats, doc_log_likelihood) = affinity_rows(&mut self.xi, &self.eta, self.lambda2, data, affinity_hessians, s, rates);
        // Summed in document order so the total does not depend on the thread count.
        let (words, labels) = doc_log_likelihood.iter().fold((0.0, 0.0), |(a, b), (w, l)| (a + w, b + l));
        stats.log_likelihood = Some((words - data.log_count_factorials, labels));
        stats
    }

    /// Block 3: (ψ, γ²), (η, λ²) in closed form and (ν, σ²) by HMC on (log κ, log λ).
    /// Returns whether the (ν, σ²) proposal was accepted.
    pub(crate) fn hyperparameters(&mut self, data: &HpcData, s: ScanSettings) -> bool {
        let (n, k) = (data.num_nodes(), data.num_topics());
        let root: Vec<f64> = self.mu.chunks(n).map(|row| row[0]).collect();
        let affinities = (data.num_docs() >= 2).then(|| {
            let mean = affinity_mean(vec![0.0; k], &self.xi, k, data.num_docs());
            let squares = affinity_squares(-0.0, &self.xi, &mean);
            AffinitySpread { mean, squares, docs: data.num_docs() }
        });
        let dispersion = Dispersion::from_variances(parent_variances(data, &self.tau2));
        self.draw_hyperparameters(data, &root, affinities, dispersion, s)
    }

    /// Block 3 from its sufficient statistics: the words' root log rates, the
    /// affinities' spread (`None` below two documents) and the τ²'s [`Dispersion`].
    pub(crate) fn draw_hyperparameters(
        &mut self,
        data: &HpcData,
        root: &[f64],
        affinities: Option<AffinitySpread>,
        dispersion: Dispersion,
        s: ScanSettings,
    ) -> bool {
        let mut rng = stream(s.seed, Purpose::HpcHyper, s.iteration, 0);
        (self.psi, self.gamma2) = draw_psi_gamma2(root, self.gamma2, &mut rng);
        if let Some(a) = affinities {
            (self.eta, self.lambda2) = draw_eta_lambda2_from(a.mean, a.squares, a.docs, data.num_topics(), &mut rng);
        }
        if data.parent_nodes.is_empty() {
            return true;
        }
        let kappa = self.nu / 2.0;
        let lambda = 1.0 / (kappa * self.sigma2);
        let mut x = [kappa.ln(), lambda.ln()];
        let mass = MassMatrix::from_negative_hessian(&dispersion.hessian(&dispersion.mode()));
        let out = hmc_step(&dispersion, &mut x, &mass, s.step_size, s.leapfrog_steps, &mut rng);
        let (kappa, lambda) = (x[0].exp(), x[1].exp());
        self.nu = 2.0 * kappa;
        self.sigma2 = 1.0 / (kappa * lambda);
        out.accepted
    }

    /// Log-likelihood of the word counts (Poisson, with the log w! constants) and of
    /// the observed labels (Bernoulli over every label of every document). β is read
    /// from `caches` (see [`Caches::rates`]).
    pub fn log_likelihood(&self, data: &HpcData, caches: &mut Caches) -> (f64, f64) {
        let (n, k) = (data.num_nodes(), data.num_topics());
        let (beta, beta_totals) = caches.rates(&self.mu, n);
        let theta = document_weights(data, &self.xi);
        // Per-document terms are collected, then summed in document order, so the
        // reported numbers do not depend on how rayon split the work.
        let words: f64 = (0..data.num_docs())
            .into_par_iter()
            .map(|d| {
                let r = data.active.range(d);
                let (nodes, th) = (&data.active.values[r.clone()], &theta[r]);
                let l = data.lengths[d];
                let mut ll = 0.0;
                for &(w, c) in data.doc_words.row(d) {
                    let row = &beta[w as usize * n..(w as usize + 1) * n];
                    let rate: f64 = nodes.iter().zip(th).map(|(&node, t)| t * row[node as usize]).sum();
                    ll += c * (l * rate).ln();
                }
                ll
            })
            .collect::<Vec<f64>>()
            .iter()
            .sum::<f64>()
            - data.log_count_factorials;
        let linear = linear_term(data, &theta);
        let expected: f64 = linear.iter().zip(beta_totals).map(|(c, b)| c * b).sum();
        let labels = match data.supervision {
            // log σ(ξ) = ξ − softplus(ξ) for an active label, log(1 − σ(ξ)) = −softplus(ξ)
            // for an inactive one.
            Supervision::Labelled => self
                .xi
                .par_chunks(k)
                .enumerate()
                .map(|(d, row)| data.active.row(d).iter().map(|&node| row[node as usize - 1]).sum::<f64>() - sum_softplus(row))
                .collect::<Vec<f64>>()
                .iter()
                .sum(),
            Supervision::Unsupervised => 0.0,
        };
        (words - expected, labels)
    }

    /// log p(μ, τ², ξ | ψ, γ², ν, σ², η, λ²) with every normalising constant: the tree
    /// diffusion of each word's log rates, the Scaled-Inv-χ² prior of each τ² and the
    /// Gaussian prior of every affinity. Added to [`Self::log_likelihood`] it is the log
    /// posterior (up to the flat hyperpriors) shown per scan.
    pub fn log_prior(&self, data: &HpcData) -> f64 {
        self.log_prior_of_words(data, &self.mu, &self.tau2).iter().sum::<f64>() + self.log_prior_of_documents(&self.xi).iter().sum::<f64>()
    }

    /// Each word's term of [`Self::log_prior`] (its tree diffusion and τ² priors), for
    /// the words whose rows `mu` and `tau2` hold, in word order.
    pub(crate) fn log_prior_of_words(&self, data: &HpcData, mu: &[f64], tau2: &[f64]) -> Vec<f64> {
        use statrs::function::gamma::ln_gamma;
        let n = data.num_nodes();
        let log_normal = |x: f64, mean: f64, var: f64| -0.5 * ((x - mean).powi(2) / var + var.ln() + std::f64::consts::TAU.ln());
        let (nu, s2) = (self.nu, self.sigma2);
        let chi2_constant = (nu / 2.0) * (nu * s2 / 2.0).ln() - ln_gamma(nu / 2.0);
        let log_inv_chi2 = |t: f64, log_t: f64| chi2_constant - (nu / 2.0 + 1.0) * log_t - nu * s2 / (2.0 * t);
        let half_log_tau = 0.5 * std::f64::consts::TAU.ln();
        mu.par_chunks(n)
            .zip(tau2.par_chunks(n))
            .map(|(mu, tau2)| {
                // −½ (x − m)²/v − ½ log v − ½ log 2π, with 1/v and log v once per parent.
                let mut lp = log_normal(mu[0], self.psi, self.gamma2);
                for &p in &data.parent_nodes {
                    let (precision, log_var) = (1.0 / tau2[p], tau2[p].ln());
                    let squares: f64 = data.children[p].iter().map(|&c| (mu[c] - mu[p]).powi(2)).sum();
                    let m = data.children[p].len() as f64;
                    lp += -0.5 * squares * precision - 0.5 * m * log_var - m * half_log_tau + log_inv_chi2(tau2[p], log_var);
                }
                lp
            })
            .collect()
    }

    /// Each document's term of [`Self::log_prior`] (the Gaussian prior of its
    /// affinities), for the documents whose rows `xi` holds, in document order.
    pub(crate) fn log_prior_of_documents(&self, xi: &[f64]) -> Vec<f64> {
        let k = self.eta.len();
        xi.par_chunks(k)
            .map(|row| {
                let squares: f64 = row.iter().zip(&self.eta).map(|(x, e)| (x - e).powi(2)).sum();
                -0.5 * squares / self.lambda2 - 0.5 * k as f64 * (self.lambda2.ln() + std::f64::consts::TAU.ln())
            })
            .collect()
    }
}

/// The starting point's exposure of each node, continued over `data`'s documents from
/// the running `exposure` of the documents before them: Σ_d l_d [node active in d] /
/// |active(d)|, and at the root (never active) Σ_d l_d.
pub(crate) fn initial_exposure(mut exposure: Vec<f64>, data: &HpcData) -> Vec<f64> {
    for doc in 0..data.num_docs() {
        let act = data.active.row(doc);
        for &node in act {
            exposure[node as usize] += data.lengths[doc] / act.len() as f64;
        }
        exposure[0] += data.lengths[doc];
    }
    exposure
}

/// The starting log rates of `data`'s words (word-major, the first being corpus word
/// `first_word`): each word's smoothed frequency under each node, its counts split as
/// the exposure is; a little noise breaks PCM's symmetry. A seed word's counts go to
/// its seeded topics alone (split evenly when several seeds list it), as a seeded LDA
/// chain starts with the word's tokens in its topic.
pub(crate) fn initial_rates(data: &HpcData, exposure: &[f64], seed: u64, first_word: usize) -> Vec<f64> {
    let (v, n) = (data.num_terms(), data.num_nodes());
    let mut mu = vec![0.0; v * n];
    mu.par_chunks_mut(n).enumerate().for_each(|(f, row)| {
        let mut counts = vec![0.0; n];
        let seeded = data.seed_counts(f);
        for &(doc, c) in data.word_docs.row(f) {
            if seeded.is_empty() {
                let act = data.active.row(doc as usize);
                for &node in act {
                    counts[node as usize] += c / act.len() as f64;
                }
            } else {
                for &(node, _) in seeded {
                    counts[node as usize] += c / seeded.len() as f64;
                }
            }
            counts[0] += c;
        }
        let base = (counts[0] + 0.5) / exposure[0];
        let mut rng = stream(seed, Purpose::Init, 0, (first_word + f) as u64);
        for node in 0..n {
            // Shrink towards the overall rate.
            let r = (counts[node] + 1.0 * base) / (exposure[node] + 1.0);
            let noise: f64 = match data.supervision {
                Supervision::Labelled => 0.0,
                Supervision::Unsupervised => 0.3 * (rand::RngExt::random::<f64>(&mut rng) - 0.5),
            };
            row[node] = r.ln() + noise;
        }
    });
    mu
}

/// The starting (ψ, γ²) from every word's root log rate.
pub(crate) fn initial_root_prior(root: &[f64]) -> (f64, f64) {
    let v = root.len() as f64;
    let psi = root.iter().sum::<f64>() / v;
    let gamma2 = (root.iter().map(|m| (m - psi).powi(2)).sum::<f64>() / v).max(0.1);
    (psi, gamma2)
}

/// The starting η from every document's active labels (`active`, one row a document):
/// each label's log odds of being active (0 for PCM).
pub(crate) fn initial_eta(active: &super::data::Rows<u32>, k: usize, supervision: Supervision) -> Vec<f64> {
    let d = active.len();
    let mut freq = vec![0.0; k];
    for &node in &active.values {
        freq[node as usize - 1] += 1.0;
    }
    match supervision {
        Supervision::Labelled => freq.iter().map(|c| ((c + 0.5) / (d as f64 - c + 0.5)).ln()).collect(),
        Supervision::Unsupervised => vec![0.0; k],
    }
}

/// The starting affinities of `data`'s documents: 0 on their active labels, η − 1 on
/// the others.
pub(crate) fn initial_affinities(data: &HpcData, eta: &[f64]) -> Vec<f64> {
    let (d, k) = (data.num_docs(), data.num_topics());
    let mut xi = vec![0.0; d * k];
    for doc in 0..d {
        let act = data.active.row(doc);
        for j in 0..k {
            if !act.contains(&((j + 1) as u32)) {
                xi[doc * k + j] = eta[j] - 1.0;
            }
        }
    }
    xi
}

/// What the rate block reads of the documents: θ of every document over its active
/// nodes (aligned with the data's `active.values`), the linear term Σ_d l_d θ_d, and the
/// corpus index of the first word whose rows it is given (its random stream's index).
#[derive(Clone, Copy)]
pub(crate) struct RateInputs<'a> {
    pub theta: &'a [f64],
    pub linear: &'a [f64],
    pub first_word: usize,
}

/// Block 1 on the words whose rows `mu` and `tau2` hold (word-major, `data.word_docs`'
/// rows, `caches` built on `data`): μ_f by SCHMC on the word's touched subtree, its
/// untouched nodes by Metropolis–Hastings, then τ²_f per parent node, every word in
/// parallel. `hyper` is (ψ, γ², ν, σ²). One process passes every word; a rank its own.
// kernel: per-word SCHMC, untouched-node and τ² updates in one parallel item, reusing its rayon scratch buffers
pub(crate) fn rate_rows(
    mu: &mut [f64],
    tau2: &mut [f64],
    hyper: [f64; 4],
    data: &HpcData,
    caches: &mut Caches,
    s: ScanSettings,
    inputs: RateInputs,
) -> ScanStats {
    let n = data.num_nodes();
    let [psi, gamma2, nu, sigma2] = hyper;
    let RateInputs { theta, linear, first_word } = inputs;
    let Caches { curvature, topological, blocks, patterns, rate_hessians, beta, rate_totals, beta_is_current, .. } = caches;
    let (curvature, topological, beta_was_current) = (*curvature, &*topological, *beta_is_current);
    beta.resize(mu.len(), 0.0);
    let stats = mu
        .par_chunks_mut(n)
        .zip(tau2.par_chunks_mut(n))
        .zip(rate_hessians.par_iter_mut())
        .zip(beta.par_chunks_mut(n))
        .enumerate()
        .map_init(RateScratch::default, |scratch, (f, (((mu, tau2), cached), beta))| {
            let mut st = ScanStats::default();
            let mut rng = stream(s.seed, Purpose::HpcRates, s.iteration, (first_word + f) as u64);
            let block = WordBlock::reusing(&data.parent, topological, &blocks[f], std::mem::take(&mut scratch.block));
            let inverse_tau2 = &mut scratch.inverse_tau2;
            if inverse_tau2.len() != n {
                inverse_tau2.clear();
                inverse_tau2.resize(n, 0.0);
            }
            for &p in &data.parent_nodes {
                inverse_tau2[p] = 1.0 / tau2[p];
            }
            if !block.nodes.is_empty() {
                let pattern = match curvature {
                    Curvature::Full => &patterns[f],
                    Curvature::TreeDiagonal => {
                        scratch.tree_pattern = SparsePattern::for_tree_reusing(&block.parent, std::mem::take(&mut scratch.tree_pattern));
                        &scratch.tree_pattern
                    }
                };
                let prior = block.prior_reusing(&data.parent, psi, gamma2, inverse_tau2, mu, std::mem::take(&mut scratch.prior));
                let cond = RateConditional::on_block_reusing(
                    data.word_docs.row(f),
                    &data.active,
                    theta,
                    linear,
                    block.nodes,
                    &block.local_of,
                    prior,
                    std::mem::take(&mut scratch.conditional),
                )
                .with_seeds(data.seed_counts(f), &block.local_of);
                let x = &mut scratch.block_mu;
                block.gather_into(mu, x);
                if s.refit_modes || cached.0.is_empty() {
                    let mode = find_mode(&cond, pattern, curvature, x, 50, 1e-8);
                    st.mode_repairs += mode.repairs;
                    let mut lik = SparseSymmetric::zeros(pattern);
                    cond.add_negative_likelihood_hessian(&mode.point, &mut lik, curvature);
                    *cached = lik.into_parts();
                }
                let (mut diag, mut off) = std::mem::take(&mut scratch.mass);
                diag.clear();
                diag.extend_from_slice(&cached.0);
                off.clear();
                off.extend_from_slice(&cached.1);
                let mut mass = SparseSymmetric::from_parts(pattern, diag, off);
                cond.prior.add_precision(&mut mass);
                let (factor, repaired) = mass.cholesky_repaired_reusing(std::mem::take(&mut scratch.factor));
                st.mass_repairs += repaired as usize;
                let out = hmc_step(&cond, x, &factor, s.step_size, s.leapfrog_steps, &mut rng);
                st.rate_accepted += out.accepted as usize;
                st.rate_draws += 1;
                block.scatter(x, mu);
                // β of the new block values: an accepted proposal was the last point
                // evaluated.
                match cond.rates_if_last_evaluated_at(x) {
                    Some(rates) => block.scatter(&rates, beta),
                    None => block.nodes.iter().for_each(|&node| beta[node as usize] = fast_exp(mu[node as usize])),
                };
                scratch.factor = factor.into_buffers();
                scratch.mass = mass.into_parts();
                (scratch.conditional, scratch.prior) = cond.into_buffers();
            }
            if !beta_was_current {
                block.untouched.iter().for_each(|&node| beta[node as usize] = fast_exp(mu[node as usize]));
            }
            let inverse_tau2 = &scratch.inverse_tau2;
            let prior = UntouchedPrior { parent: &data.parent, children: &data.children, psi, gamma2, inverse_tau2 };
            let untouched = update_untouched(&block.untouched, &prior, linear, mu, beta, &mut rng);
            st.untouched_accepted += untouched.accepted;
            st.untouched_proposals += untouched.proposals;
            for &p in &data.parent_nodes {
                let devs = data.children[p].iter().map(|&c| mu[c] - mu[p]);
                tau2[p] = draw_tau2(nu, sigma2, devs, &mut rng);
            }
            scratch.block = block.into_buffers();
            st
        })
        .reduce(ScanStats::default, ScanStats::merge);
    *rate_totals = column_sums(beta, n);
    *beta_is_current = true;
    stats
}

/// What the affinity block reads of the words: β = e^μ of every word (word-major V × N)
/// and its column sums, and the corpus index of the first document whose rows it is
/// given (its random stream's index).
#[derive(Clone, Copy)]
pub(crate) struct AffinityInputs<'a> {
    pub beta: &'a [f64],
    pub rate_totals: &'a [f64],
    pub first_doc: usize,
}

/// Block 2 on the documents whose rows `xi` holds (`data`'s documents, their cached
/// Hessians in `affinity_hessians`): ξ_d's active block by SCHMC and its inactive
/// coordinates exactly, every document in parallel. Returns the counts and each
/// document's (words, labels) log-likelihood at its new ξ, for the caller to sum in
/// document order.
// kernel: per-document SCHMC, inactive draws and log-likelihood in one parallel item over its gathered β block
pub(crate) fn affinity_rows(
    xi: &mut [f64],
    eta: &[f64],
    lambda2: f64,
    data: &HpcData,
    affinity_hessians: &mut [DMatrix<f64>],
    s: ScanSettings,
    rates: AffinityInputs,
) -> (ScanStats, Vec<(f64, f64)>) {
    let (n, k) = (data.num_nodes(), data.num_topics());
    let AffinityInputs { beta, rate_totals: totals, first_doc } = rates;
    let inactive: Vec<InactiveSampler> = eta.iter().map(|&e| InactiveSampler::new(e, lambda2)).collect();
    let mut doc_log_likelihood = vec![(0.0, 0.0); data.num_docs()];
    let stats = xi
        .par_chunks_mut(k)
        .zip(affinity_hessians.par_iter_mut())
        .zip(doc_log_likelihood.par_iter_mut())
        .enumerate()
        .map(|(d, ((xi, cached), log_likelihood))| {
            let mut st = ScanStats::default();
            let mut rng = stream(s.seed, Purpose::HpcAffinities, s.iteration, (first_doc + d) as u64);
            let act: Vec<usize> = data.active.row(d).iter().map(|&x| x as usize).collect();
            let words = data.doc_words.row(d);
            let counts: Vec<f64> = words.iter().map(|&(_, c)| c).collect();
            let mut block_beta = Vec::with_capacity(words.len() * act.len());
            for &(w, _) in words {
                block_beta.extend(act.iter().map(|&node| beta[w as usize * n + node]));
            }
            let rate_totals: Vec<f64> = act.iter().map(|&node| totals[node]).collect();
            let block_eta: Vec<f64> = act.iter().map(|&node| eta[node - 1]).collect();
            let target = ActiveAffinities {
                length: data.lengths[d],
                rate_totals: &rate_totals,
                counts: &counts,
                beta: &block_beta,
                eta: &block_eta,
                lambda2,
                label_terms: data.supervision.is_labelled(),
            };
            let mut x: Vec<f64> = act.iter().map(|&node| xi[node - 1]).collect();
            // A document without active labels (possible only for data drawn from
            // the model without HPC's at-least-one-label rule) has no active block.
            if !act.is_empty() && (s.refit_modes || cached.nrows() != act.len()) {
                let (mode, repairs) = find_block_mode(&target, &x, 50, 1e-8);
                st.mode_repairs += repairs;
                // Keep the likelihood part only: remove the prior's −1/λ² diagonal.
                let mut h = -target.hessian(&mode);
                for i in 0..act.len() {
                    h[(i, i)] -= 1.0 / lambda2;
                }
                *cached = h;
            }
            if !act.is_empty() {
                let mut neg = cached.clone();
                for i in 0..act.len() {
                    neg[(i, i)] += 1.0 / lambda2;
                }
                let mass = MassMatrix::from_negative_hessian(&(-neg));
                st.mass_repairs += mass.repaired as usize;
                let out = hmc_step(&target, &mut x, &mass, s.step_size, s.leapfrog_steps, &mut rng);
                st.affinity_accepted += out.accepted as usize;
                st.affinity_draws += 1;
            }
            for (&node, &value) in act.iter().zip(&x) {
                xi[node - 1] = value;
            }
            if data.supervision.is_labelled() {
                let mut next_active = act.iter().peekable();
                for j in 0..k {
                    if next_active.peek() == Some(&&(j + 1)) {
                        next_active.next();
                        continue;
                    }
                    let (value, exact) = inactive[j].draw(xi[j], &mut rng);
                    xi[j] = value;
                    st.inactive_fallbacks += !exact as usize;
                }
            }
            // Σ_f w_fd log(l_d θ_dᵀβ_f) − l_d θ_dᵀB: a document without active labels
            // has rate 0 for every word it holds.
            let l = data.lengths[d];
            let words_ll = if act.is_empty() {
                if words.is_empty() {
                    0.0
                } else {
                    f64::NEG_INFINITY
                }
            } else {
                target.word_log_likelihood(&x) + l.ln() * counts.iter().sum::<f64>()
            };
            let labels_ll = match data.supervision {
                Supervision::Labelled => act.iter().map(|&node| xi[node - 1]).sum::<f64>() - sum_softplus(xi),
                Supervision::Unsupervised => 0.0,
            };
            *log_likelihood = (words_ll, labels_ll);
            st
        })
        .reduce(ScanStats::default, ScanStats::merge);
    (stats, doc_log_likelihood)
}

#[cfg(test)]
#[path = "sampler_tests.rs"]
mod tests;
