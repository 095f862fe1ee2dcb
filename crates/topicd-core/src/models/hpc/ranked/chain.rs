//! A chain of HPC's scans over one rank's words and documents, on the shared chain
//! driver.
//!
//! Why it exists: it is `HpcChain` with each block cut to the rank's rows and the
//! collectives between them. A scan:
//!
//! 1. θ of every document (its active entries) is gathered and the linear term
//!    Σ_d l_d θ_d passed from rank to rank in document order (once per ξ: the keep after
//!    a scan computes it and the next scan reuses it);
//! 2. the rate block on the rank's words; their β = e^μ rows are gathered to every rank
//!    (the affinity block reads every word's), with the root log rates; the τ²'s
//!    dispersion statistics are passed on in word order;
//! 3. the affinity block on the rank's documents; their log-likelihood terms, ξ's mean
//!    and then its spread are passed on in document order;
//! 4. every rank draws the same hyperparameters from the same statistics and stream;
//!    the counts are summed as integers; the log prior's terms are passed on in order.
//!
//! So every float is added in the single-process order and every rank holds the same
//! hyperparameters, trace and topic shares. `save` gathers the single-process
//! checkpoint state to rank 0.

use super::shard::{gather_pieces, sums_of, whole_of, Common, RankData, StatePiece};
use crate::models::chain::{Chain, Schedule};
use crate::models::hpc::chain::{encode_state, scan_diagnostics, scan_settings, EstimandSums, StateParts};
use crate::models::hpc::dispersion::Dispersion;
use crate::models::hpc::hyper::{affinity_mean, affinity_squares, AffinitySpread};
use crate::models::hpc::params::HpcParams;
use crate::models::hpc::refit::Calibration;
use crate::models::hpc::sampler::{
    affinity_rows, column_sums, document_weights, linear_term_from, parent_variances, rate_rows, AffinityInputs, Caches, HpcState, RateInputs, ScanStats,
};
use crate::models::state_bytes::append_tail;
use crate::models::{FitError, RestoreError, StepKind};
use crate::ranks::{bytes_to_f64s, f64s_to_bytes, Ranks};
use serde_json::{Map, Value};

/// A chain of HPC's scans over one rank's part.
pub(super) struct RankedHpcChain<'a> {
    part: &'a RankData,
    params: &'a HpcParams,
    ranks: &'a dyn Ranks,
    schedule: Schedule,
    /// μ and τ² of the rank's words, ξ of its documents, the hyperparameters whole.
    state: HpcState,
    /// The rate block's caches, on the rank's words.
    words: Caches,
    /// The affinity block's caches, on the rank's documents.
    docs: Caches,
    /// β = e^μ of every word (V × N) and its column sums, as the last rate block left μ.
    beta: Vec<f64>,
    rate_totals: Vec<f64>,
    /// θ of every document and the linear term, of the current ξ when `theta_current`.
    theta: Vec<f64>,
    linear: Vec<f64>,
    theta_current: bool,
    /// The rank's words' rows of the estimand sums; the shares whole.
    sums: EstimandSums,
    totals: ScanStats,
    last: (f64, f64),
    trace: crate::models::convergence::KeptTrace,
    /// What rank 0's checkpoints carry after the state (the second chain's calibration).
    tail: Option<Calibration>,
}

impl<'a> RankedHpcChain<'a> {
    /// The chain on `part` from this rank's `piece` of a fresh or restored state.
    pub fn new(part: &'a RankData, params: &'a HpcParams, ranks: &'a dyn Ranks, piece: StatePiece, common: Common) -> Result<Self, RestoreError> {
        let k = part.docs.num_topics();
        let curvature = params.curvature(k);
        let StatePiece { mu, tau2, xi, rate_hessians, affinity_hessians, sums } = piece;
        let fresh = rate_hessians.is_empty() && affinity_hessians.is_empty();
        let (words, docs) = if fresh {
            (Caches::new(&part.words, curvature), Caches::new(&part.docs, curvature))
        } else {
            (
                Caches::resumed(&part.words, curvature, &mu, rate_hessians, Vec::new())?,
                Caches::resumed(&part.docs, curvature, &[], Vec::new(), affinity_hessians)?,
            )
        };
        let v = part.words.num_terms();
        let sums = match sums {
            Some([frequency, exclusivity, exclusivity_all, mu]) => {
                EstimandSums { frequency, exclusivity, exclusivity_all, mu, shares: common.shares, kept: common.kept }
            }
            None => EstimandSums::new(v, k),
        };
        let state =
            HpcState { mu, tau2, xi, psi: common.psi, gamma2: common.gamma2, eta: common.eta, lambda2: common.lambda2, nu: common.nu, sigma2: common.sigma2 };
        let mut chain = RankedHpcChain {
            part,
            params,
            ranks,
            schedule: params.schedule(),
            state,
            words,
            docs,
            beta: Vec::new(),
            rate_totals: Vec::new(),
            theta: Vec::new(),
            linear: Vec::new(),
            theta_current: false,
            sums,
            totals: common.totals,
            last: common.last,
            trace: common.trace,
            tail: None,
        };
        chain.gather_rates();
        Ok(chain)
    }

    /// Checkpoints carry `calibration` after the state, as [`RefitChain`]'s do.
    ///
    /// [`RefitChain`]: crate::models::hpc::refit::RefitChain
    pub fn carry(&mut self, calibration: Calibration) {
        self.tail = Some(calibration);
    }

    fn n(&self) -> usize {
        self.part.docs.num_nodes()
    }

    /// All-gather the rank's words' rows of `local` (`width` values a word), in word
    /// order.
    fn gather_rows(&self, local: &[f64]) -> Vec<f64> {
        gather_rows(self.ranks, local)
    }

    /// β of every word from the ranks' rows, and its column sums.
    fn gather_rates(&mut self) {
        let n = self.n();
        let (local, _) = self.words.rates(&self.state.mu, n);
        let beta = gather_rows(self.ranks, local);
        self.rate_totals = column_sums(&beta, n);
        self.beta = beta;
    }

    /// θ of every document and the linear term of the current ξ, on every rank.
    fn refresh_theta(&mut self) {
        if self.theta_current {
            return;
        }
        let docs = &self.part.docs;
        let local = document_weights(docs, &self.state.xi);
        let start = f64s_to_bytes(&vec![0.0; docs.num_nodes()]);
        self.linear =
            bytes_to_f64s(&self.ranks.fold_bytes_in_rank_order(start, &mut |running| f64s_to_bytes(&linear_term_from(bytes_to_f64s(&running), docs, &local))));
        self.theta = self.gather_rows(&local);
        self.theta_current = true;
    }

    /// Running sums of f64 values passed from rank to rank: `add` continues `start`
    /// with this rank's terms.
    fn fold(&self, start: Vec<f64>, add: impl Fn(Vec<f64>) -> Vec<f64>) -> Vec<f64> {
        bytes_to_f64s(&self.ranks.fold_bytes_in_rank_order(f64s_to_bytes(&start), &mut |running| f64s_to_bytes(&add(bytes_to_f64s(&running)))))
    }

    /// The counts of a scan summed over the ranks (integers: any order).
    fn sum_counts(&self, stats: ScanStats) -> ScanStats {
        let mut counts = [
            stats.rate_accepted,
            stats.rate_draws,
            stats.untouched_accepted,
            stats.untouched_proposals,
            stats.affinity_accepted,
            stats.affinity_draws,
            stats.mode_repairs,
            stats.mass_repairs,
            stats.inactive_fallbacks,
        ]
        .map(|c| c as u64);
        self.ranks.sum_u64(&mut counts);
        let [rate_accepted, rate_draws, untouched_accepted, untouched_proposals, affinity_accepted, affinity_draws, mode_repairs, mass_repairs, inactive_fallbacks] =
            counts.map(|c| c as usize);
        ScanStats {
            rate_accepted,
            rate_draws,
            untouched_accepted,
            untouched_proposals,
            affinity_accepted,
            affinity_draws,
            mode_repairs,
            mass_repairs,
            inactive_fallbacks,
            ..stats
        }
    }

    /// This rank's piece of the state (what [`Self::save`] gathers).
    fn piece(&self, with_sums: bool) -> StatePiece {
        let (rate_hessians, _) = self.words.likelihood_hessians();
        let (_, affinity_hessians) = self.docs.likelihood_hessians();
        let s = &self.sums;
        StatePiece {
            mu: self.state.mu.clone(),
            tau2: parent_variances(&self.part.words, &self.state.tau2).collect(),
            xi: self.state.xi.clone(),
            rate_hessians: rate_hessians.to_vec(),
            affinity_hessians: affinity_hessians.iter().map(|h| h.as_slice().to_vec()).collect(),
            sums: with_sums.then(|| [s.frequency.clone(), s.exclusivity.clone(), s.exclusivity_all.clone(), s.mu.clone()]),
        }
    }

    fn common(&self) -> Common {
        let kept = self.sums.kept;
        Common::of(&self.state, self.totals.clone(), self.last, self.trace.clone(), kept, self.sums.shares.clone())
    }

    /// The chain ended (every rank calls it): if no scan was kept, the final state is;
    /// rank 0 gets the model's parts, the others `None`.
    pub fn into_ended(mut self) -> Option<crate::models::hpc::chain::EndedChain> {
        if self.sums.kept == 0 {
            self.add_to_sums();
        }
        let mut nonzeros = [self.words.factor_nonzeros() as u64];
        self.ranks.sum_u64(&mut nonzeros);
        let common = self.common();
        let s = &mut self.sums;
        let sums = Some([&mut s.frequency, &mut s.exclusivity, &mut s.exclusivity_all, &mut s.mu].map(std::mem::take));
        let pieces = gather_pieces(&StatePiece { sums, ..Default::default() }, self.ranks)?;
        Some(super::shard::ended_from(pieces, common, nonzeros[0] as usize))
    }

    /// Add the current state to the estimand sums; returns this scan's topic shares.
    fn add_to_sums(&mut self) -> Vec<f64> {
        self.refresh_theta();
        let n = self.n();
        let (beta, _) = self.words.rates(&self.state.mu, n);
        self.sums.add_rows(&self.part.words, &self.state.mu, beta, &self.rate_totals, self.linear.clone())
    }
}

/// Every rank's `local` values, concatenated in rank order, on every rank.
fn gather_rows(ranks: &dyn Ranks, local: &[f64]) -> Vec<f64> {
    let parts = ranks.all_gather(&f64s_to_bytes(local));
    let mut out = Vec::with_capacity(parts.iter().map(Vec::len).sum::<usize>() / 8);
    for part in parts {
        out.extend(bytes_to_f64s(&part));
    }
    out
}

impl Chain for RankedHpcChain<'_> {
    fn step(&mut self, seed: u64, iteration: usize) -> Result<Map<String, Value>, FitError> {
        let p = self.params;
        let s = scan_settings(p, seed, iteration);
        let (n, k, total_docs) = (self.n(), self.part.docs.num_topics(), self.part.layout.num_docs());
        let (first_word, first_doc) = (self.part.first_word(), self.part.first_doc());
        self.refresh_theta();
        let hyper = self.state.rate_hyperparameters();
        let inputs = RateInputs { theta: &self.theta, linear: &self.linear, first_word };
        let rate_stats = rate_rows(&mut self.state.mu, &mut self.state.tau2, hyper, &self.part.words, &mut self.words, s, inputs);
        self.gather_rates();
        let root = self.gather_rows(&self.state.mu.chunks(n).map(|row| row[0]).collect::<Vec<_>>());
        let words = &self.part.words;
        let tau2 = &self.state.tau2;
        let dispersion = self.fold(vec![0.0; 3], |d| {
            let d = Dispersion { count: d[0], sum_precision: d[1], sum_log_precision: d[2] }.continued(parent_variances(words, tau2));
            vec![d.count, d.sum_precision, d.sum_log_precision]
        });
        let dispersion = Dispersion { count: dispersion[0], sum_precision: dispersion[1], sum_log_precision: dispersion[2] };
        let rates = AffinityInputs { beta: &self.beta, rate_totals: &self.rate_totals, first_doc };
        let (affinity_stats, doc_log_likelihood) =
            affinity_rows(&mut self.state.xi, &self.state.eta, self.state.lambda2, &self.part.docs, self.docs.affinity_hessians_mut(), s, rates);
        self.theta_current = false;
        let ll = self.fold(vec![0.0, 0.0], |running| {
            let (w, l) = doc_log_likelihood.iter().fold((running[0], running[1]), |(a, b), (w, l)| (a + w, b + l));
            vec![w, l]
        });
        let xi = &self.state.xi;
        let affinities = (total_docs >= 2).then(|| {
            let mean = self.fold(vec![0.0; k], |running| affinity_mean(running, xi, k, total_docs));
            let squares = self.fold(vec![-0.0], |running| vec![affinity_squares(running[0], xi, &mean)])[0];
            AffinitySpread { mean, squares, docs: total_docs }
        });
        let mut stats = self.sum_counts(rate_stats.merge(affinity_stats));
        stats.log_likelihood = Some((ll[0] - self.part.docs.log_count_factorials, ll[1]));
        stats.dispersion_accepted = self.state.draw_hyperparameters(&self.part.docs, &root, affinities, dispersion, s);
        self.last = stats.log_likelihood.expect("set above");
        let word_terms = self.state.log_prior_of_words(&self.part.words, &self.state.mu, &self.state.tau2);
        let doc_terms = self.state.log_prior_of_documents(&self.state.xi);
        let prior_words = self.fold(vec![-0.0], |running| vec![word_terms.iter().fold(running[0], |a, b| a + b)])[0];
        let prior_docs = self.fold(vec![-0.0], |running| vec![doc_terms.iter().fold(running[0], |a, b| a + b)])[0];
        let kept_scans = self.sums.kept + self.schedule.is_kept(iteration) as usize;
        let diagnostics = scan_diagnostics(&stats, s.refit_modes, self.last, prior_words + prior_docs, kept_scans, &self.state);
        self.totals = std::mem::take(&mut self.totals).merge(stats);
        Ok(diagnostics)
    }

    fn step_kind(&self, iteration: usize) -> Option<StepKind> {
        Some(if self.params.refits_modes(iteration) { StepKind::Refit } else { StepKind::Steady })
    }

    fn log_joint_per_token(&self) -> f64 {
        self.last.0 / self.part.docs.num_tokens
    }

    fn keep(&mut self, loglik_per_token: f64) -> Option<Vec<u8>> {
        let shares = self.add_to_sums();
        let s = &self.state;
        self.trace.push_topic_model(loglik_per_token, &[s.psi, s.gamma2, s.lambda2, s.nu, s.sigma2], &shares);
        None
    }

    /// Every rank gathers its piece to rank 0, which encodes the single-process state;
    /// the others return nothing (their context discards it).
    fn save(&self) -> Vec<u8> {
        let Some(pieces) = gather_pieces(&self.piece(self.sums.kept > 0), self.ranks) else { return Vec::new() };
        let mut whole = whole_of(pieces);
        let sums = sums_of(whole.sums.take(), &self.common());
        let state = encode_state(&StateParts {
            params: self.params,
            num_tokens: self.part.docs.num_tokens,
            hyper: &self.state,
            mu: &whole.mu,
            tau2_parents: &whole.tau2,
            xi: &whole.xi,
            rate_diagonals: whole.rate_hessians.iter().map(|(d, _)| &d[..]).collect(),
            rate_off_diagonals: whole.rate_hessians.iter().map(|(_, o)| &o[..]).collect(),
            affinity: whole.affinity_hessians.iter().map(Vec::as_slice).collect(),
            sums: &sums,
            totals: &self.totals,
            last: self.last,
            trace: &self.trace,
            theta_draws: &[],
        });
        match &self.tail {
            Some(calibration) => append_tail(state, calibration),
            None => state,
        }
    }

    fn agree(&self, decision: bool) -> bool {
        self.ranks.agree(decision)
    }
}
