//! What a fit stores about its own convergence: the traces of a few scalars at every
//! kept iteration of every chain, and the split-R̂ and bulk/tail ESS computed from them.
//!
//! Why it exists: a posterior mean is only as good as the chains behind it. A family
//! records, at each kept iteration, quantities that mean the same thing in every chain
//! (the log joint per token, its scalar hyperparameters, and for exchangeable topics
//! their shares sorted largest first, which no relabelling changes) in a [`KeptTrace`];
//! at the fit's end [`ConvergenceReport::from_traces`] turns one trace per chain into
//! the diagnostics of [`crate::inference::convergence`] (the definitions and ArviZ's
//! conventions are there), per chain and pooled. The report is stored in the model and
//! served in its diagnostics; a report whose worst R̂ exceeds [`RHAT_THRESHOLD`] carries
//! a warning.
//!
//! Per chain, R̂ is that of the chain's two halves taken as two chains (each is split
//! again, so four quarter-chains are compared): a trend within one chain shows even in
//! a single-chain fit. Pooled, R̂ compares the chains (each split in two), as Stan and
//! ArviZ report it.

use crate::inference::convergence::{Chains, Diagnostics};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// R̂ above this says the chains have not converged (Vehtari et al. 2021).
pub const RHAT_THRESHOLD: f64 = 1.01;

/// Quantities whose names start with this are one group (a topic's share at each rank),
/// summarised together in the JSON when there are many.
pub const SORTED_SHARE: &str = "sorted_topic_share";

/// The shares of identified topics (HPC's labels, the same in every chain), by topic:
/// another group, summarised like the sorted shares.
pub const LABEL_SHARE: &str = "label_share";

/// Groups longer than this are summarised (worst R̂, least ESS) rather than listed.
const LISTED_GROUP_MAX: usize = 20;

/// How many flagged grouped shares (largest R̂ first) keep their traces in a report.
pub const FLAGGED_GROUP_TRACES: usize = 3;

/// The values of named scalars at each kept iteration of one chain (draw-major).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KeptTrace {
    pub names: Vec<String>,
    values: Vec<f64>,
}

impl KeptTrace {
    /// An empty trace of the quantities `names`.
    pub fn new(names: Vec<String>) -> Self {
        KeptTrace { names, values: Vec::new() }
    }

    /// The names of the usual quantities of a topic model: the log joint per token, the
    /// `scalars` given, and `topics` sorted shares.
    pub fn topic_model(scalars: &[&str], topics: usize) -> Self {
        let names = std::iter::once("loglik_per_token".to_string())
            .chain(scalars.iter().map(|s| s.to_string()))
            .chain((0..topics).map(|r| format!("{SORTED_SHARE}[{r}]")))
            .collect();
        KeptTrace::new(names)
    }

    /// [`KeptTrace::topic_model`] of identified topics (HPC's labels, named `labels`):
    /// each topic's own share is traced too, after the sorted ones.
    pub fn labelled_topic_model(scalars: &[&str], labels: &[String]) -> Self {
        let mut trace = Self::topic_model(scalars, labels.len());
        trace.names.extend(labels.iter().map(|l| format!("{LABEL_SHARE}[{l}]")));
        trace
    }

    /// Record one kept iteration: `scalars` in the order of the names, then `shares`
    /// (any order: they are sorted largest first here; a labelled trace also records
    /// them in their own order).
    pub fn push_topic_model(&mut self, loglik_per_token: f64, scalars: &[f64], shares: &[f64]) {
        let mut sorted = shares.to_vec();
        sorted.sort_by(|a, b| b.total_cmp(a));
        let labelled = self.names.last().is_some_and(|n| n.starts_with(LABEL_SHARE));
        let own = labelled.then_some(shares).into_iter().flatten().copied();
        let draw: Vec<f64> = std::iter::once(loglik_per_token).chain(scalars.iter().copied()).chain(sorted).chain(own).collect();
        self.push(&draw);
    }

    /// Record one kept iteration's values, one per name.
    ///
    /// # Panics
    /// When `draw` does not have one value per name (a family's own bug).
    pub fn push(&mut self, draw: &[f64]) {
        assert_eq!(draw.len(), self.names.len(), "one value per traced quantity");
        self.values.extend_from_slice(draw);
    }

    /// Kept iterations recorded.
    pub fn draws(&self) -> usize {
        self.values.len().checked_div(self.names.len()).unwrap_or(0)
    }

    /// The draws of quantity `q`, first `n` of them.
    fn series(&self, q: usize, n: usize) -> Vec<f64> {
        let m = self.names.len();
        (0..n).map(|d| self.values[d * m + q]).collect()
    }

    /// Whether the stored values fit the names (a decoded trace is checked with this).
    pub fn is_consistent(&self) -> bool {
        if self.names.is_empty() {
            self.values.is_empty()
        } else {
            self.values.len().is_multiple_of(self.names.len())
        }
    }
}

/// [`Diagnostics`] in a form that is stored (NaN where undefined). Equal when every
/// field has the same bits, so a decoded report equals the one encoded, NaN and all.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct StoredDiagnostics {
    pub rhat: f64,
    pub ess_bulk: f64,
    pub ess_tail: f64,
    pub mcse_mean: f64,
}

impl PartialEq for StoredDiagnostics {
    fn eq(&self, other: &Self) -> bool {
        let bits = |d: &Self| [d.rhat, d.ess_bulk, d.ess_tail, d.mcse_mean].map(f64::to_bits);
        bits(self) == bits(other)
    }
}

impl From<Diagnostics> for StoredDiagnostics {
    fn from(d: Diagnostics) -> Self {
        StoredDiagnostics { rhat: d.rhat, ess_bulk: d.ess_bulk, ess_tail: d.ess_tail, mcse_mean: d.mcse_mean }
    }
}

impl StoredDiagnostics {
    fn to_json(self) -> Value {
        json!({"rhat": finite(self.rhat), "ess_bulk": finite(self.ess_bulk), "ess_tail": finite(self.ess_tail), "mcse_mean": finite(self.mcse_mean)})
    }
}

/// One quantity's diagnostics: pooled over the chains, and per chain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuantityReport {
    pub name: String,
    /// The mean over every chain's draws.
    pub mean: f64,
    /// Over all chains (R̂ NaN with one chain).
    pub pooled: StoredDiagnostics,
    /// Each chain alone (R̂ of its two halves).
    pub per_chain: Vec<StoredDiagnostics>,
}

impl QuantityReport {
    /// The R̂ that judges this quantity: pooled with several chains, the worst chain's
    /// halves with one.
    pub fn rhat(&self) -> f64 {
        if self.per_chain.len() > 1 {
            self.pooled.rhat
        } else {
            self.per_chain.iter().map(|d| d.rhat).fold(f64::NAN, f64::max)
        }
    }
}

/// A fit's convergence diagnostics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConvergenceReport {
    pub chains: usize,
    /// Kept draws per chain (the shortest chain's, if they differ).
    pub draws_per_chain: usize,
    pub quantities: Vec<QuantityReport>,
    /// The kept traces, per chain, so a client can draw them and recompute the
    /// diagnostics (e.g. with ArviZ): every scalar, and the few grouped shares that were
    /// flagged (see `traced_quantities`).
    pub scalar_traces: Vec<(String, Vec<Vec<f64>>)>,
}

impl ConvergenceReport {
    /// The diagnostics of one trace per chain (the same quantities in each). `None` when
    /// there is no trace or no quantity.
    pub fn from_traces(traces: &[KeptTrace]) -> Option<Self> {
        let first = traces.first()?;
        if first.names.is_empty() || traces.iter().any(|t| t.names != first.names) {
            return None;
        }
        let n = traces.iter().map(KeptTrace::draws).min().unwrap_or(0);
        let quantities: Vec<QuantityReport> = (0..first.names.len())
            .map(|q| {
                let series: Vec<Vec<f64>> = traces.iter().map(|t| t.series(q, n)).collect();
                let pooled = Chains::new(&series).expect("series cut to one length").diagnostics().into();
                let per_chain = series.iter().map(|s| halves(s)).collect();
                let mean = series.iter().flatten().sum::<f64>() / (n * traces.len()).max(1) as f64;
                QuantityReport { name: first.names[q].clone(), mean, pooled, per_chain }
            })
            .collect();
        let kept = traced_quantities(&first.names, &quantities);
        let scalar_traces = kept.into_iter().map(|q| (first.names[q].clone(), traces.iter().map(|t| t.series(q, n)).collect())).collect();
        Some(ConvergenceReport { chains: traces.len(), draws_per_chain: n, quantities, scalar_traces })
    }

    /// The largest R̂ over the quantities (NaN when none is defined).
    pub fn max_rhat(&self) -> f64 {
        self.quantities.iter().map(QuantityReport::rhat).fold(f64::NAN, f64::max)
    }

    /// The quantity with the largest R̂, if any is defined.
    fn worst(&self) -> Option<&QuantityReport> {
        self.quantities.iter().filter(|q| !q.rhat().is_nan()).max_by(|a, b| a.rhat().total_cmp(&b.rhat()))
    }

    /// The warning a reader should see, when R̂ exceeds the threshold.
    pub fn warning(&self) -> Option<String> {
        let worst = self.worst()?;
        (worst.rhat() > RHAT_THRESHOLD).then(|| {
            let across = if self.chains > 1 { format!("the {} chains disagree", self.chains) } else { "the chain's halves disagree".to_string() };
            format!(
                "R-hat is {:.3} (above {RHAT_THRESHOLD}) for {}: {across}; run more iterations (or chains) before trusting the posterior summaries",
                worst.rhat(),
                worst.name
            )
        })
    }

    /// The report as served: scalars one by one, a long group of sorted shares
    /// summarised.
    pub fn to_json(&self) -> Value {
        let entry = |q: &QuantityReport| {
            json!({
                "name": q.name,
                "mean": finite(q.mean),
                "rhat": finite(q.rhat()),
                "pooled": q.pooled.to_json(),
                "per_chain": q.per_chain.iter().map(|d| d.to_json()).collect::<Vec<_>>(),
            })
        };
        let (shares, rest): (Vec<&QuantityReport>, Vec<&QuantityReport>) = self.quantities.iter().partition(|q| q.name.starts_with(SORTED_SHARE));
        let (labels, scalars): (Vec<&QuantityReport>, Vec<&QuantityReport>) = rest.into_iter().partition(|q| q.name.starts_with(LABEL_SHARE));
        let group = |members: &[&QuantityReport]| {
            let least = |f: fn(&StoredDiagnostics) -> f64| finite(members.iter().map(|q| f(&q.pooled)).fold(f64::NAN, f64::min));
            json!({
                "count": members.len(),
                "max_rhat": finite(members.iter().map(|q| q.rhat()).fold(f64::NAN, f64::max)),
                "min_ess_bulk": least(|d| d.ess_bulk),
                "min_ess_tail": least(|d| d.ess_tail),
                "quantities": (members.len() <= LISTED_GROUP_MAX).then(|| members.iter().map(|q| entry(q)).collect::<Vec<_>>()),
            })
        };
        let max_rhat = self.max_rhat();
        json!({
            "chains": self.chains,
            "draws_per_chain": self.draws_per_chain,
            "rhat_threshold": RHAT_THRESHOLD,
            "max_rhat": finite(max_rhat),
            "min_ess_bulk": finite(self.quantities.iter().map(|q| q.pooled.ess_bulk).fold(f64::NAN, f64::min)),
            "min_ess_tail": finite(self.quantities.iter().map(|q| q.pooled.ess_tail).fold(f64::NAN, f64::min)),
            "converged": if max_rhat.is_nan() { Value::Null } else { json!(max_rhat <= RHAT_THRESHOLD) },
            "warning": self.warning(),
            "quantities": scalars.iter().map(|q| entry(q)).collect::<Vec<_>>(),
            "sorted_topic_shares": group(&shares),
            "label_shares": group(&labels),
            "traces": self.scalar_traces.iter().map(|(name, chains)| {
                let rhat = self.quantities.iter().find(|q| &q.name == name).map_or(f64::NAN, QuantityReport::rhat);
                json!({"name": name, "rhat": finite(rhat), "chains": chains})
            }).collect::<Vec<_>>(),
        })
    }
}

/// The quantities whose traces a report keeps: every scalar, and of the grouped shares
/// (sorted topic shares, label shares) only the [`FLAGGED_GROUP_TRACES`] with the largest
/// R̂ above [`RHAT_THRESHOLD`], so a reader sees the draws of what was flagged without
/// a model storing every share's trace.
fn traced_quantities(names: &[String], quantities: &[QuantityReport]) -> Vec<usize> {
    let grouped = |name: &str| name.starts_with(SORTED_SHARE) || name.starts_with(LABEL_SHARE);
    let mut flagged: Vec<usize> = (0..names.len()).filter(|&q| grouped(&names[q]) && quantities[q].rhat() > RHAT_THRESHOLD).collect();
    flagged.sort_by(|&a, &b| quantities[b].rhat().total_cmp(&quantities[a].rhat()));
    flagged.truncate(FLAGGED_GROUP_TRACES);
    flagged.sort_unstable();
    (0..names.len()).filter(|&q| !grouped(&names[q]) || flagged.contains(&q)).collect()
}

/// One chain's diagnostics, R̂ from its two halves taken as two chains.
fn halves(series: &[f64]) -> StoredDiagnostics {
    let own = Chains::new(&[series]).expect("one chain").diagnostics();
    let h = series.len() / 2;
    // An odd draw is dropped from the first half, as the split drops the middle draw.
    let rhat = Chains::new(&[&series[series.len() - 2 * h..series.len() - h], &series[series.len() - h..]]).expect("equal halves").rhat();
    StoredDiagnostics { rhat, ..own.into() }
}

/// `x` as JSON, null when it is not finite (JSON has no NaN or ∞).
fn finite(x: f64) -> Value {
    if x.is_finite() {
        json!(x)
    } else {
        Value::Null
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{stream, Purpose};

    /// An AR(1) series with autocorrelation `rho` around `mean`, from its own stream.
    fn ar1(seed: u64, n: usize, rho: f64, mean: f64) -> Vec<f64> {
        let mut rng = stream(seed, Purpose::Estimate, 0, 0);
        let mut x = 0.0;
        (0..n)
            .map(|_| {
                let e: f64 = rand_distr::Distribution::sample(&rand_distr::StandardNormal, &mut rng);
                x = rho * x + (1.0 - rho * rho).sqrt() * e;
                mean + x
            })
            .collect()
    }

    fn trace_of(series: &[Vec<f64>]) -> KeptTrace {
        let mut t = KeptTrace::new((0..series.len()).map(|q| format!("q{q}")).collect());
        for d in 0..series[0].len() {
            t.push(&series.iter().map(|s| s[d]).collect::<Vec<_>>());
        }
        t
    }

    /// The report computes exactly what `Chains` computes on the same series (the
    /// numerics, checked against ArviZ, live there).
    #[test]
    fn the_report_is_the_numerics_on_each_quantity() {
        let chains: Vec<Vec<Vec<f64>>> = (0..3).map(|c| vec![ar1(c, 200, 0.5, 0.0), ar1(c + 10, 200, 0.9, 3.0)]).collect();
        let traces: Vec<KeptTrace> = chains.iter().map(|c| trace_of(c)).collect();
        let report = ConvergenceReport::from_traces(&traces).unwrap();
        assert_eq!((report.chains, report.draws_per_chain), (3, 200));
        for q in 0..2 {
            let series: Vec<&Vec<f64>> = chains.iter().map(|c| &c[q]).collect();
            let expected = Chains::new(&series).unwrap().diagnostics();
            assert_eq!(report.quantities[q].pooled, expected.into());
            let own = Chains::new(&[series[1]]).unwrap().diagnostics();
            assert_eq!(report.quantities[q].per_chain[1].ess_bulk, own.ess_bulk);
            let halves = Chains::new(&[&series[1][..100], &series[1][100..]]).unwrap().rhat();
            assert_eq!(report.quantities[q].per_chain[1].rhat, halves);
        }
        assert_eq!(report.scalar_traces[1].1[2], chains[2][1]);
    }

    /// Chains drawn from one stationary process pass; a chain shifted by a few of its
    /// standard deviations fails and the report says which quantity. (With 3 × 400
    /// independent-ish draws R̂'s sampling spread is about 1e-3, far below the shift's
    /// effect, which pushes R̂ well above 1.1.)
    #[test]
    fn agreeing_chains_pass_and_a_stuck_chain_is_named() {
        let good: Vec<KeptTrace> = (0..3).map(|c| trace_of(&[ar1(c, 400, 0.2, 0.0), ar1(c + 7, 400, 0.2, 1.0)])).collect();
        let report = ConvergenceReport::from_traces(&good).unwrap();
        assert!(report.max_rhat() < RHAT_THRESHOLD, "{}", report.max_rhat());
        assert!(report.warning().is_none());
        assert_eq!(report.to_json()["converged"], json!(true));
        let mut bad = good.clone();
        bad[2] = trace_of(&[ar1(2, 400, 0.2, 0.0), ar1(9, 400, 0.2, 4.0)]);
        let report = ConvergenceReport::from_traces(&bad).unwrap();
        assert!(report.max_rhat() > 1.1, "{}", report.max_rhat());
        let warning = report.warning().unwrap();
        assert!(warning.contains("q1") && warning.contains("3 chains disagree"), "{warning}");
        assert_eq!(report.to_json()["converged"], json!(false));
    }

    /// One chain with a trend between its halves is flagged by its own halves' R̂.
    #[test]
    fn a_single_chain_with_a_trend_is_flagged() {
        let mut s = ar1(4, 400, 0.2, 0.0);
        for (i, x) in s.iter_mut().enumerate() {
            *x += i as f64 / 40.0;
        }
        let report = ConvergenceReport::from_traces(&[trace_of(&[s])]).unwrap();
        assert!(report.quantities[0].pooled.rhat.is_nan(), "no pooled R-hat from one chain");
        assert!(report.max_rhat() > 1.1, "{}", report.max_rhat());
        assert!(report.warning().unwrap().contains("halves"));
    }

    #[test]
    fn sorted_shares_are_sorted_and_summarised_when_many() {
        let mut t = KeptTrace::topic_model(&["alpha_sum"], 30);
        for d in 0..8 {
            let shares: Vec<f64> = (0..30).map(|k| ((k * 7 + d) % 30) as f64).collect();
            t.push_topic_model(-7.0 + d as f64, &[1.0], &shares);
        }
        assert_eq!(t.draws(), 8);
        assert_eq!(t.series(2, 8), vec![29.0; 8], "rank 0 is the largest share");
        let json = ConvergenceReport::from_traces(&[t.clone(), t]).unwrap().to_json();
        assert_eq!(json["sorted_topic_shares"]["count"], json!(30));
        assert!(json["sorted_topic_shares"]["quantities"].is_null());
        assert_eq!(json["quantities"].as_array().unwrap().len(), 2);
        assert_eq!(json["traces"].as_array().unwrap().len(), 2);
    }

    /// A labelled trace records each topic's share in its own order after the sorted
    /// ones, and the report summarises them as their own group, outside the scalars.
    #[test]
    fn labelled_shares_are_their_own_group() {
        let labels: Vec<String> = (0..3).map(|k| k.to_string()).collect();
        let mut t = KeptTrace::labelled_topic_model(&["psi"], &labels);
        for d in 0..8 {
            t.push_topic_model(-7.0 + d as f64, &[0.5], &[0.2, 0.5 + 0.01 * d as f64, 0.3 - 0.01 * d as f64]);
        }
        assert_eq!(t.names[5], "label_share[0]");
        assert_eq!(t.series(4, 8)[2], 0.2, "sorted: the smallest last");
        assert_eq!((t.series(5, 8)[0], t.series(6, 8)[7]), (0.2, 0.5 + 0.01 * 7.0), "labelled: each in its own place");
        let json = ConvergenceReport::from_traces(&[t.clone(), t]).unwrap().to_json();
        assert_eq!((json["label_shares"]["count"].as_u64(), json["sorted_topic_shares"]["count"].as_u64()), (Some(3), Some(3)));
        assert_eq!(json["quantities"].as_array().unwrap().len(), 2, "the log joint and psi");
        // The shares trend within each chain, so their split R̂ flags them: the two
        // scalars' traces are kept, and those of the three worst flagged shares.
        let traces = json["traces"].as_array().unwrap();
        assert_eq!(traces.len(), 2 + FLAGGED_GROUP_TRACES, "{traces:?}");
        assert!(traces[2..].iter().all(|t| t["name"].as_str().unwrap().contains("share") && t["rhat"].as_f64().unwrap() > RHAT_THRESHOLD));
    }

    /// Of the grouped shares, only the flagged ones with the largest R̂ keep their
    /// traces: chains whose rank-r share differs by r (noise of sd 1) flag ranks 1..4, R̂
    /// growing with r, so ranks 2, 3 and 4 are kept and ranks 0 and 1 are not.
    #[test]
    fn the_worst_flagged_shares_keep_their_traces() {
        let chain = |c: u64, shift: f64| {
            let noise: Vec<Vec<f64>> = (0..5).map(|r| ar1(c * 10 + r, 200, 0.0, 0.0)).collect();
            let mut t = KeptTrace::topic_model(&[], 5);
            for draw in (0..200).map(|d| noise.iter().map(|series| series[d]).collect::<Vec<f64>>()) {
                let shares: Vec<f64> = draw.iter().enumerate().map(|(r, e)| 100.0 - 20.0 * r as f64 + shift * r as f64 + e).collect();
                t.push_topic_model(-7.0 + draw[0], &[], &shares);
            }
            t
        };
        let report = ConvergenceReport::from_traces(&[chain(1, 0.0), chain(2, 3.0)]).unwrap();
        let kept: Vec<&str> = report.scalar_traces.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(kept, ["loglik_per_token", "sorted_topic_share[2]", "sorted_topic_share[3]", "sorted_topic_share[4]"]);
        let json = report.to_json();
        let rhat = json["traces"][3]["rhat"].as_f64().unwrap();
        assert_eq!(rhat, report.quantities[5].rhat(), "each kept trace carries its R̂");
        assert!(rhat > RHAT_THRESHOLD);
    }

    #[test]
    fn nothing_to_report_is_none() {
        assert!(ConvergenceReport::from_traces(&[]).is_none());
        assert!(ConvergenceReport::from_traces(&[KeptTrace::new(vec![])]).is_none());
        let a = KeptTrace::new(vec!["a".into()]);
        let b = KeptTrace::new(vec!["b".into()]);
        assert!(ConvergenceReport::from_traces(&[a, b]).is_none(), "chains must trace the same quantities");
    }
}
