//! HPC's and PCM's kernels for the chain driver ([`crate::models::chain`]), and their
//! resumable state.
//!
//! Why it exists: `fit_hpc` no longer owns a loop. This module is what HPC supplies to
//! the driver: one Gibbs scan ([`HpcState::scan`] with the Hessian schedule's settings
//! for that scan), its log-likelihood (computed inside every scan, as the trace always
//! showed it), the estimand sums a kept scan adds to, and the encoding of everything a
//! checkpoint must carry to continue bit for bit:
//!
//! - the state: μ, τ² at the parent nodes (the only entries a scan reads or writes;
//!   the rest stay at their initial value), ξ and the hyperparameters;
//! - from the sampler's caches, the likelihood Hessians cached at the last mode refit
//!   (per word and per document): Algorithm 1 reuses them until the next refit, and they
//!   cannot be recomputed from the state. The rest of the caches is rebuilt: the word
//!   blocks and sparsity patterns from the data, and β = e^μ with its column sums from
//!   μ (the rate block leaves β exactly e^μ of the state, [`Caches::resumed`]);
//! - the estimand sums once a scan has been kept (before that they are zero);
//! - the running acceptance and repair counts, and the last (words, labels)
//!   log-likelihood.

use super::caches::column_sums;
use super::data::HpcData;
use super::params::HpcParams;
use super::sampler::{document_weights, linear_term, parent_variances, Caches, HpcState, ScanSettings, ScanStats};
use super::seed_rates::data_rates;
use super::variant::Supervision;
use crate::models::chain::{Chain, Position, Schedule};
use crate::models::composition::DrawPlan;
use crate::models::convergence::KeptTrace;
use crate::models::state_bytes::{LayoutError, StateReader, StateWriter};
use crate::models::{FitError, RestoreError, StepKind};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// `len` zeros written in parallel into fresh memory (not a lazily zeroed allocation,
/// whose pages would fault in at first use).
fn touched_zeros(len: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(len);
    out.par_extend(rayon::iter::repeat_n(0.0, len));
    out
}

/// Running sums of the estimands over kept scans, word-major `V × K`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct EstimandSums {
    pub frequency: Vec<f64>,
    pub exclusivity: Vec<f64>,
    pub exclusivity_all: Vec<f64>,
    /// `V × (K + 1)`: every node's log rate, the root's included.
    pub mu: Vec<f64>,
    pub shares: Vec<f64>,
    pub kept: usize,
}

impl EstimandSums {
    /// The sums at zero. The V × K buffers (about 290 MB on a 15 000-word, 600-label
    /// corpus) are written here, in parallel, so their pages are faulted in once at
    /// set-up: a zeroed allocation would defer that to the first kept scan, which then
    /// took 0.6 s longer than the others on 2 threads.
    pub fn new(v: usize, k: usize) -> Self {
        EstimandSums {
            frequency: touched_zeros(v * k),
            exclusivity: touched_zeros(v * k),
            exclusivity_all: touched_zeros(v * k),
            mu: touched_zeros(v * (k + 1)),
            shares: vec![0.0; k],
            kept: 0,
        }
    }

    /// Whether the buffers have the shapes of `v` words and `k` topics.
    pub(super) fn has_shape(&self, v: usize, k: usize) -> bool {
        [&self.frequency, &self.exclusivity, &self.exclusivity_all].iter().all(|s| s.len() == v * k) && self.mu.len() == v * (k + 1) && self.shares.len() == k
    }

    /// Add one scan: β_fk, φ_fk against the siblings (an only child against its
    /// parent) and against every topic, μ, and each topic's share of expected tokens.
    /// `beta` and `rate_totals` are exp(μ) and its column sums ([`Caches::rates`]).
    /// Returns this scan's shares (for the convergence trace).
    /// A seeded PCM fit adds the data's rates, without the seeds' pseudo-counts
    /// ([`super::seed_rates`]).
    pub fn add(&mut self, data: &HpcData, state: &HpcState, beta: &[f64], rate_totals: &[f64]) -> Vec<f64> {
        let theta = document_weights(data, &state.xi);
        let linear = linear_term(data, &theta);
        match data_rates(data, &theta, &state.mu, beta) {
            None => self.add_rows(data, &state.mu, beta, rate_totals, linear),
            Some((mu, beta)) => {
                let totals = column_sums(&beta, data.num_nodes());
                self.add_rows(data, &mu, &beta, &totals, linear)
            }
        }
    }

    /// [`Self::add`] for the words whose rows `mu` and `beta` hold (the sums' rows),
    /// given every topic's total rate and the linear term Σ_d l_d θ_d of the whole
    /// corpus (a rank holds some words, the totals and the linear term whole).
    pub fn add_rows(&mut self, data: &HpcData, mu: &[f64], beta: &[f64], rate_totals: &[f64], linear: Vec<f64>) -> Vec<f64> {
        let (n, k) = (data.num_nodes(), data.num_topics());
        self.kept += 1;
        self.frequency
            .par_chunks_mut(k)
            .zip(self.exclusivity.par_chunks_mut(k))
            .zip(self.exclusivity_all.par_chunks_mut(k))
            .zip(self.mu.par_chunks_mut(n))
            .enumerate()
            .for_each_init(
                || vec![0.0; n],
                |child_sum, (f, (((freq, excl), excl_all), mu_sum))| {
                    let mu = &mu[f * n..(f + 1) * n];
                    let beta = &beta[f * n..(f + 1) * n];
                    child_sum.iter_mut().for_each(|c| *c = 0.0);
                    for node in 1..n {
                        child_sum[data.parent[node].expect("labels have parents")] += beta[node];
                    }
                    let all: f64 = beta[1..].iter().sum();
                    for node in 1..n {
                        let p = data.parent[node].expect("labels have parents");
                        let mut comparison = child_sum[p];
                        if data.children[p].len() == 1 {
                            comparison += beta[p];
                        }
                        freq[node - 1] += beta[node];
                        excl[node - 1] += beta[node] / comparison;
                        excl_all[node - 1] += beta[node] / all;
                    }
                    mu_sum.iter_mut().zip(mu).for_each(|(s, m)| *s += m);
                },
            );
        // Expected tokens per topic: the linear term Σ_d l_d θ_dk times each topic's
        // total rate.
        let mut expected = linear;
        expected.iter_mut().zip(rate_totals).for_each(|(e, t)| *e *= t);
        let total: f64 = expected.iter().sum::<f64>().max(f64::MIN_POSITIVE);
        // Topic k is node k + 1: the root has no share.
        let scan: Vec<f64> = expected[1..].iter().map(|e| e / total).collect();
        for (share, e) in self.shares.iter_mut().zip(&scan) {
            *share += e;
        }
        scan
    }
}

/// What the model is made of once a chain has ended: the hyperparameters (the state's
/// μ, τ² and ξ are not read), the estimand sums (at least one scan kept), the counts,
/// the last log-likelihood, the trace, the θ draws and the rate factors' non-zeros.
pub(super) struct EndedChain {
    pub hyper: HpcState,
    pub sums: EstimandSums,
    pub totals: ScanStats,
    pub last: (f64, f64),
    pub trace: KeptTrace,
    pub theta_draws: Vec<Vec<f32>>,
    pub factor_nonzeros: usize,
}

/// A running HPC or PCM chain over the training split.
pub(super) struct HpcChain<'a> {
    data: &'a HpcData,
    params: &'a HpcParams,
    schedule: Schedule,
    pub state: HpcState,
    pub caches: Caches,
    pub sums: EstimandSums,
    /// The scans' acceptance and repair counts summed so far.
    pub totals: ScanStats,
    /// (words, labels) log-likelihood after the last scan (NaN before the first).
    pub last: (f64, f64),
    /// The convergence trace of the kept scans ([`trace_of`]).
    pub trace: KeptTrace,
    /// The documents' θ at the kept scans [`draw_plan`] picks (D × K, f32, zero off a
    /// document's active labels), for covariate effects by composition.
    pub theta_draws: Vec<Vec<f32>>,
    /// Which kept scans give those draws (fixed by the data and parameters).
    draw_plan: DrawPlan,
}

/// Which kept scans of one chain give a draw of the documents' θ (none without
/// covariates: the draws serve their effects only).
pub(super) fn draw_plan(data: &HpcData, params: &HpcParams) -> DrawPlan {
    let s = params.schedule();
    let kept = (1..=s.iterations).filter(|&it| s.is_kept(it)).count();
    let keep = if params.design.covariates.is_empty() { 0 } else { params.keep_draws };
    DrawPlan::new(keep, params.chains, data.num_docs(), data.num_topics(), kept)
}

/// Every document's θ as a dense D × K row-major draw (f32): the softmax of its ξ over
/// its active labels, zero elsewhere.
fn theta_draw(data: &HpcData, xi: &[f64]) -> Vec<f32> {
    let k = data.num_topics();
    let weights = document_weights(data, xi);
    let mut out = vec![0.0f32; data.num_docs() * k];
    for d in 0..data.num_docs() {
        let r = data.active.range(d);
        for (&node, &w) in data.active.values[r.clone()].iter().zip(&weights[r]) {
            out[d * k + node as usize - 1] = w as f32;
        }
    }
    out
}

/// The settings of scan `iteration` of a chain seeded with `seed` under `p`.
pub(super) fn scan_settings(p: &HpcParams, seed: u64, iteration: usize) -> ScanSettings {
    ScanSettings { seed, iteration: iteration as u64, refit_modes: p.refits_modes(iteration), leapfrog_steps: p.leapfrog_steps, step_size: p.step_size }
}

/// The hyperparameters traced at every kept scan, beside the log-likelihood per token
/// and the sorted topic shares.
const TRACED: [&str; 5] = ["psi", "gamma2", "lambda2", "nu", "sigma2"];

/// An empty trace of a chain on `data`: HPC's also traces each label's share
/// (`label_share[k]`, topic k of the model), which labels make identified.
pub(super) fn trace_of(data: &HpcData) -> KeptTrace {
    match data.supervision {
        // The labels are identified: each one's share is the same quantity in every chain.
        Supervision::Labelled => KeptTrace::labelled_topic_model(&TRACED, &(0..data.num_topics()).map(|k| k.to_string()).collect::<Vec<_>>()),
        Supervision::Unsupervised => KeptTrace::topic_model(&TRACED, data.num_topics()),
    }
}

/// Format version of an HPC checkpoint's state.
/// Version 4 added the θ draws to the header, version 3 the convergence trace; older
/// checkpoints are rejected
/// (their fit starts over).
const STATE_VERSION: u32 = 4;

/// The small part of an HPC checkpoint's state; the big buffers follow it as raw
/// sections ([`crate::models::state_bytes`]), in this order: μ, τ² at the parent nodes
/// (word-major `V × parent_nodes`), ξ, each word's cached likelihood Hessian (its
/// diagonals, then its off-diagonals by pattern slot), each document's cached
/// active-block Hessian (column-major), and once a scan has been kept the estimand sums
/// (frequency, exclusivity, exclusivity against all, μ, shares).
#[derive(Serialize, Deserialize)]
struct HpcHeader {
    version: u32,
    /// [`chain_key`] of the parameters the chain ran with.
    params: Vec<u8>,
    /// The training split's token count (a cheap check that the data are the same).
    num_tokens: f64,
    psi: f64,
    gamma2: f64,
    eta: Vec<f64>,
    lambda2: f64,
    nu: f64,
    sigma2: f64,
    totals: ScanStats,
    last: (f64, f64),
    /// Kept scans in the estimand sums (0: the sums are not stored).
    kept: usize,
    trace: KeptTrace,
    theta_draws: Vec<Vec<f32>>,
}

/// The parameters that shape the chain, as bytes: all but the prediction settings,
/// which act after the chain (and are not encoded).
fn chain_key(p: &HpcParams) -> Vec<u8> {
    postcard::to_allocvec(p).expect("plain data encodes")
}

impl<'a> HpcChain<'a> {
    /// The chain ended: if no scan fell on the thinning grid, the final state is the one
    /// kept.
    pub fn into_ended(self) -> EndedChain {
        let HpcChain { data, state, mut caches, mut sums, totals, last, trace, theta_draws, .. } = self;
        if sums.kept == 0 {
            let (beta, rate_totals) = caches.rates(&state.mu, data.num_nodes());
            sums.add(data, &state, beta, rate_totals);
        }
        EndedChain { factor_nonzeros: caches.factor_nonzeros(), hyper: state, sums, totals, last, trace, theta_draws }
    }

    /// A chain from HPC's starting point ([`HpcState::initial`]).
    pub fn new(data: &'a HpcData, params: &'a HpcParams, seed: u64) -> Self {
        Self::from_state(data, params, HpcState::initial(data, seed))
    }

    /// A chain from `state` (an update's start, [`super::start`]).
    pub fn from_state(data: &'a HpcData, params: &'a HpcParams, state: HpcState) -> Self {
        let caches = Caches::new(data, params.curvature(data.num_topics()));
        let sums = EstimandSums::new(data.num_terms(), data.num_topics());
        let trace = trace_of(data);
        HpcChain {
            data,
            params,
            schedule: params.schedule(),
            state,
            caches,
            sums,
            totals: ScanStats::default(),
            last: (f64::NAN, f64::NAN),
            trace,
            theta_draws: Vec::new(),
            draw_plan: draw_plan(data, params),
        }
    }

    /// A chain continued from [`Chain::save`]'s bytes; every length and value range is
    /// checked against the data and parameters, so bad bytes are an error, not a panic.
    pub fn restore(data: &'a HpcData, params: &'a HpcParams, bytes: &[u8], position: &Position) -> Result<Self, RestoreError> {
        const WHAT: &str = "HPC state";
        let mut r = StateReader::new(bytes);
        let header: HpcHeader = r.header().map_err(RestoreError::layout(WHAT))?;
        if header.version != STATE_VERSION {
            return Err(RestoreError::Version { what: WHAT, found: header.version, expected: STATE_VERSION });
        }
        let read = || -> Result<_, LayoutError> {
            let (mu, tau2_parents, xi) = (r.f64s()?, r.f64s()?, r.f64s()?);
            let (rate_diagonals, rate_off_diagonals, affinity_hessians) = (r.ragged()?, r.ragged()?, r.ragged()?);
            let sums = if header.kept > 0 {
                let (frequency, exclusivity, exclusivity_all, mu, shares) = (r.f64s()?, r.f64s()?, r.f64s()?, r.f64s()?, r.f64s()?);
                Some(EstimandSums { frequency, exclusivity, exclusivity_all, mu, shares, kept: header.kept })
            } else {
                None
            };
            r.finish()?;
            Ok((header, mu, tau2_parents, xi, rate_diagonals, rate_off_diagonals, affinity_hessians, sums))
        };
        let (s, mu, tau2_parents, xi, rate_diagonals, rate_off_diagonals, affinity_hessians, sums) = read().map_err(RestoreError::layout(WHAT))?;
        let (v, n, k, d) = (data.num_terms(), data.num_nodes(), data.num_topics(), data.num_docs());
        let finite = |xs: &[f64]| xs.iter().all(|x| x.is_finite());
        let positive = |xs: &[f64]| xs.iter().all(|x| x.is_finite() && *x > 0.0);
        // A variance whose precision overflows (a subnormal τ²) is as corrupt as a
        // negative one: the rate block's prior precision would be infinite.
        let variances = |xs: &[f64]| positive(xs) && xs.iter().all(|x| x.recip().is_finite());
        let all_finite = |rows: &[Vec<f64>]| rows.iter().all(|row| finite(row));
        let checks = [
            (s.params == chain_key(params), "parameters"),
            (s.num_tokens.to_bits() == data.num_tokens.to_bits(), "training tokens"),
            (mu.len() == v * n && finite(&mu), "μ"),
            (tau2_parents.len() == v * data.parent_nodes.len() && variances(&tau2_parents), "τ²"),
            (xi.len() == d * k && finite(&xi), "ξ"),
            (s.eta.len() == k && finite(&s.eta) && s.psi.is_finite() && variances(&[s.gamma2, s.lambda2, s.nu, s.sigma2]), "hyperparameters"),
            (rate_diagonals.len() == v && rate_off_diagonals.len() == v && all_finite(&rate_diagonals) && all_finite(&rate_off_diagonals), "rate Hessians"),
            (all_finite(&affinity_hessians), "affinity Hessians"),
            (sums.as_ref().map_or(position.kept == 0, |sums| sums.has_shape(v, k) && sums.kept == position.kept), "estimand sums"),
            (s.last.0.is_finite() && (s.last.0 / data.num_tokens).to_bits() == position.last_loglik.to_bits(), "log-likelihood"),
            (s.trace.names == trace_of(data).names && s.trace.is_consistent() && s.trace.draws() == position.kept, "convergence trace"),
            (s.theta_draws.len() <= draw_plan(data, params).keep && s.theta_draws.iter().all(|t| t.len() == d * k), "θ draws"),
        ];
        RestoreError::first_mismatch(WHAT, &checks)?;
        let mut tau2 = HpcState::initial_tau2(v, n);
        for (row, saved) in tau2.chunks_mut(n).zip(tau2_parents.chunks(data.parent_nodes.len().max(1))) {
            for (&p, &t) in data.parent_nodes.iter().zip(saved) {
                row[p] = t;
            }
        }
        let state = HpcState { mu, tau2, xi, psi: s.psi, gamma2: s.gamma2, eta: s.eta, lambda2: s.lambda2, nu: s.nu, sigma2: s.sigma2 };
        let rate_hessians = rate_diagonals.into_iter().zip(rate_off_diagonals).collect();
        let caches = Caches::resumed(data, params.curvature(k), &state.mu, rate_hessians, affinity_hessians)?;
        let sums = sums.unwrap_or_else(|| EstimandSums::new(v, k));
        Ok(HpcChain {
            data,
            params,
            schedule: params.schedule(),
            state,
            caches,
            sums,
            totals: s.totals,
            last: s.last,
            trace: s.trace,
            theta_draws: s.theta_draws,
            draw_plan: draw_plan(data, params),
        })
    }
}

/// A scan's progress diagnostics: acceptance rates, repairs, whether it refit the modes,
/// its log-likelihood parts, the log posterior, and the affinity hyperparameters (λ² and
/// the mean of η), whose drift shows whether the chain has settled.
pub(super) fn scan_diagnostics(
    stats: &ScanStats,
    refit_modes: bool,
    (words, labels): (f64, f64),
    log_prior: f64,
    kept_scans: usize,
    state: &HpcState,
) -> Map<String, Value> {
    let rate = |a: usize, n: usize| if n > 0 { a as f64 / n as f64 } else { 1.0 };
    let mut diagnostics = Map::new();
    diagnostics.insert("rate_acceptance".into(), json!(rate(stats.rate_accepted, stats.rate_draws)));
    diagnostics.insert("untouched_acceptance".into(), json!(rate(stats.untouched_accepted, stats.untouched_proposals)));
    diagnostics.insert("affinity_acceptance".into(), json!(rate(stats.affinity_accepted, stats.affinity_draws)));
    diagnostics.insert("dispersion_accepted".into(), json!(stats.dispersion_accepted));
    diagnostics.insert("mode_hessian_repairs".into(), json!(stats.mode_repairs));
    diagnostics.insert("mass_matrix_repairs".into(), json!(stats.mass_repairs));
    diagnostics.insert("mode_refit".into(), json!(refit_modes));
    diagnostics.insert("log_likelihood_words".into(), json!(words));
    diagnostics.insert("log_likelihood_labels".into(), json!(labels));
    diagnostics.insert("log_posterior".into(), json!(words + labels + log_prior));
    diagnostics.insert("lambda2".into(), json!(state.lambda2));
    diagnostics.insert("eta_mean".into(), json!(state.eta.iter().sum::<f64>() / state.eta.len().max(1) as f64));
    // The name HPC's progress used before the driver added `kept_sweeps` (same value).
    diagnostics.insert("kept_scans".into(), json!(kept_scans));
    diagnostics
}

impl Chain for HpcChain<'_> {
    fn step(&mut self, seed: u64, iteration: usize) -> Result<Map<String, Value>, FitError> {
        let p = self.params;
        let settings = scan_settings(p, seed, iteration);
        let stats = self.state.scan(self.data, &mut self.caches, settings);
        self.last = match stats.log_likelihood {
            Some(ll) => ll,
            None => self.state.log_likelihood(self.data, &mut self.caches),
        };
        let kept_scans = self.sums.kept + self.schedule.is_kept(iteration) as usize;
        let diagnostics = scan_diagnostics(&stats, settings.refit_modes, self.last, self.state.log_prior(self.data), kept_scans, &self.state);
        self.totals = std::mem::take(&mut self.totals).merge(stats);
        Ok(diagnostics)
    }

    fn step_kind(&self, iteration: usize) -> Option<StepKind> {
        Some(if self.params.refits_modes(iteration) { StepKind::Refit } else { StepKind::Steady })
    }

    /// The words' log-likelihood per training token, as the scan computed it.
    fn log_joint_per_token(&self) -> f64 {
        self.last.0 / self.data.num_tokens
    }

    fn keep(&mut self, loglik_per_token: f64) -> Option<Vec<u8>> {
        let (beta, rate_totals) = self.caches.rates(&self.state.mu, self.data.num_nodes());
        let shares = self.sums.add(self.data, &self.state, beta, rate_totals);
        let s = &self.state;
        self.trace.push_topic_model(loglik_per_token, &[s.psi, s.gamma2, s.lambda2, s.nu, s.sigma2], &shares);
        if self.draw_plan.due(self.theta_draws.len(), self.sums.kept) {
            self.theta_draws.push(theta_draw(self.data, &s.xi));
        }
        None
    }

    fn save(&self) -> Vec<u8> {
        let (s, data) = (&self.state, self.data);
        let (rate_hessians, affinity_hessians) = self.caches.likelihood_hessians();
        let tau2_parents: Vec<f64> = parent_variances(data, &s.tau2).collect();
        encode_state(&StateParts {
            params: self.params,
            num_tokens: data.num_tokens,
            hyper: s,
            mu: &s.mu,
            tau2_parents: &tau2_parents,
            xi: &s.xi,
            rate_diagonals: rate_hessians.iter().map(|(d, _)| &d[..]).collect(),
            rate_off_diagonals: rate_hessians.iter().map(|(_, o)| &o[..]).collect(),
            affinity: affinity_hessians.iter().map(|m| m.as_slice()).collect(),
            sums: &self.sums,
            totals: &self.totals,
            last: self.last,
            trace: &self.trace,
            theta_draws: &self.theta_draws,
        })
    }
}

/// Everything a checkpoint's state holds, borrowed: one process's chain, or the parts
/// rank 0 gathered from every rank in word and document order.
pub(super) struct StateParts<'a> {
    pub params: &'a HpcParams,
    pub num_tokens: f64,
    /// The hyperparameters (its μ, τ² and ξ are not read: they are the fields below).
    pub hyper: &'a HpcState,
    pub mu: &'a [f64],
    /// τ² at the parent nodes, word-major `V × parent_nodes`.
    pub tau2_parents: &'a [f64],
    pub xi: &'a [f64],
    pub rate_diagonals: Vec<&'a [f64]>,
    pub rate_off_diagonals: Vec<&'a [f64]>,
    /// Each document's cached active-block Hessian, column-major.
    pub affinity: Vec<&'a [f64]>,
    /// Written only once a scan has been kept.
    pub sums: &'a EstimandSums,
    pub totals: &'a ScanStats,
    pub last: (f64, f64),
    pub trace: &'a KeptTrace,
    pub theta_draws: &'a [Vec<f32>],
}

/// The bytes of an HPC checkpoint's state ([`HpcHeader`], then the sections).
pub(super) fn encode_state(parts: &StateParts) -> Vec<u8> {
    let StateParts { params, num_tokens, hyper: s, mu, tau2_parents, xi, rate_diagonals, rate_off_diagonals, affinity, sums, totals, last, trace, theta_draws } =
        parts;
    let sums = (sums.kept > 0).then_some(*sums);
    // Reserve the whole state (and the driver's trailer) once: the sections are
    // most of it.
    let ragged = |rows: &[&[f64]]| StateWriter::ragged_len(rows.len(), rows.iter().map(|r| r.len()).sum());
    let sum_sections =
        sums.map_or(0, |m| [&m.frequency, &m.exclusivity, &m.exclusivity_all, &m.mu, &m.shares].iter().map(|x| StateWriter::section_len(x.len())).sum());
    let capacity = 1024
        + [mu, tau2_parents, xi].iter().map(|x| StateWriter::section_len(x.len())).sum::<usize>()
        + ragged(rate_diagonals)
        + ragged(rate_off_diagonals)
        + ragged(affinity)
        + sum_sections
        + theta_draws.iter().map(|t| 4 * t.len() + 8).sum::<usize>();
    let mut w = StateWriter::with_capacity(capacity);
    w.header(&HpcHeader {
        version: STATE_VERSION,
        params: chain_key(params),
        num_tokens: *num_tokens,
        psi: s.psi,
        gamma2: s.gamma2,
        eta: s.eta.clone(),
        lambda2: s.lambda2,
        nu: s.nu,
        sigma2: s.sigma2,
        totals: (*totals).clone(),
        last: *last,
        kept: parts.sums.kept,
        trace: (*trace).clone(),
        theta_draws: theta_draws.to_vec(),
    });
    w.f64s(mu);
    w.f64s(tau2_parents);
    w.f64s(xi);
    w.ragged(rate_diagonals);
    w.ragged(rate_off_diagonals);
    w.ragged(affinity);
    if let Some(m) = sums {
        for section in [&m.frequency, &m.exclusivity, &m.exclusivity_all, &m.mu, &m.shares] {
            w.f64s(section);
        }
    }
    w.finish()
}
