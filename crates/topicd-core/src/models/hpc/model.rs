//! The fitted [`HpcModel`] of the `"hpc"` and `"pcm"` families: what a fit produces, the
//! stored encoding decodes and the service serves.
//!
//! Why it exists: it is the model as data, below the modules that use it: `fit` builds
//! it, `predict` and `label_posterior` read it, and `family` serves it to the rest of the
//! service (parameter checks, topic tables, label prediction and diagnostics). It names
//! none of them, so they all share one form of the model without an import circle.

use super::calibration::{SetScores, Thresholds};
use super::params::{HpcParams, HpcParamsV4, Predictor};
use super::variant::Supervision;
use crate::models::chains::Alignment;
use crate::models::convergence::ConvergenceReport;
use crate::models::design::DesignSpec;
use crate::models::encoding_upgrade::with_params_converted;
use crate::models::seeds::{MissingWord, SeedWords};
use crate::models::ModelError;
use ndarray::Array2;
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

/// Format version of [`HpcModel`]'s encoding. Version 8 appended PCM's seeds
/// ([`HpcModel::seeds`], [`HpcModel::missing_seed_words`]; older blobs decode unseeded).
/// Version 7 appended [`HpcModel::chains`],
/// [`HpcModel::alignments`] and the covariate design with its θ draws (version 6 blobs
/// decode as one chain without covariates). Version 6 appended
/// [`HpcModel::convergence`] (version 5 blobs decode with none). Version 5 took the job's `threads` out of
/// the parameters (older blobs are upgraded by [`with_params_converted`]). Version 4 appended
/// [`HpcModel::refitted_with_validation`] (version 3 blobs decode with `false`, as they
/// were fitted). Version 3 appended the label sets
/// ([`LabelPrediction::sets`]; version 2 blobs decode with none, predicting as they were
/// fitted); version 2 appended [`HpcModel::prediction`]; version 1 blobs decode with the
/// paper's predictor ([`LabelPrediction::mode_only`]), as they were fitted.
pub const ENCODING_VERSION: u32 = 8;

/// A PCM retired slot's log rates and η in a stored model ([`super::edit`]): low enough
/// that no document gives it weight (e⁻⁵⁰ against the live topics'), finite so that
/// nothing downstream meets an infinity.
pub const RETIRED_LOG_WEIGHT: f64 = -50.0;

/// What a version 5 blob lacks at its end: no convergence report (`None`, one zero
/// byte).
const NO_CONVERGENCE: [u8; 1] = [0];

/// What a version 6 blob lacks at its end: one chain (`chains` 1), no alignments, no
/// design, no design rows, no θ draws.
const ONE_CHAIN: [u8; 5] = [1, 0, 0, 0, 0];

/// The encoded end of a version 8 blob: its seeds and the seed words left out.
fn seeds_tail(seeds: &SeedWords, missing: &[MissingWord]) -> Vec<u8> {
    postcard::to_allocvec(&(seeds, missing)).expect("plain data encodes")
}

/// What a version 7 blob lacks at its end: no seeds (the default, unseeded
/// [`SeedWords`]) and no seed words left out.
fn no_seeds() -> Vec<u8> {
    seeds_tail(&SeedWords::default(), &[])
}

/// Test support: a current unseeded blob in version 7's layout (before seeds), against
/// which digests recorded before them are checked.
pub fn as_version7(bytes: &[u8]) -> Vec<u8> {
    let m = HpcModel::decode(bytes).expect("a current HPC blob");
    assert!(m.seeds.is_empty() && bytes[0] == ENCODING_VERSION as u8, "a current unseeded HPC blob");
    // An unseeded PCM fit keeps its (unused) strength: the tail is the model's own.
    let tail = seeds_tail(&m.seeds, &m.missing_seed_words);
    let mut old = bytes[..bytes.len() - tail.len()].to_vec();
    old[0] = 7;
    old
}

/// Test support: a current blob in version 4's layout (`threads` 0 among the
/// parameters), against which pins recorded before `threads` left are checked.
#[cfg(test)]
pub(crate) fn as_before_threads_left(bytes: &[u8]) -> Vec<u8> {
    let mut m = HpcModel::decode(bytes).expect("a current HPC blob");
    assert!(m.chains == 1 && m.alignments.is_empty() && m.design.is_none(), "one chain, no covariates");
    m.convergence = None;
    let mut b = postcard::to_allocvec(&m).expect("plain data encodes");
    b.truncate(b.len() - NO_CONVERGENCE.len() - ONE_CHAIN.len() - seeds_tail(&m.seeds, &m.missing_seed_words).len());
    with_params_converted(&b, |(_, supervision): (u32, Supervision), p: HpcParams| ((4u32, supervision), HpcParamsV4::from(&p))).expect("a current HPC blob")
}

/// Numbers about the fit shown with the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FitSummary {
    pub training_documents: usize,
    pub validation_documents: usize,
    pub test_documents: usize,
    pub unlabelled_documents: usize,
    pub kept_scans: usize,
    pub tokens: f64,
    pub final_loglik_per_token: f64,
    pub final_label_loglik: f64,
    pub rate_acceptance: f64,
    pub affinity_acceptance: f64,
    pub mode_hessian_repairs: usize,
    pub mass_matrix_repairs: usize,
    pub inactive_fallbacks: usize,
    pub factor_nonzeros: usize,
    pub rate_curvature: super::rates::Curvature,
    pub nu: f64,
    pub sigma2: f64,
    pub psi: f64,
    pub gamma2: f64,
}

/// Test-split scores of the calibrated predictions and of the trivial baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evaluation {
    pub model: SetScores,
    pub most_frequent_baseline: SetScores,
}

/// A fitted HPC or PCM model: posterior means over the kept scans.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HpcModel {
    pub version: u32,
    /// HPC (labelled) or PCM.
    pub supervision: Supervision,
    pub params: HpcParams,
    pub num_terms: usize,
    /// Topic (label) names.
    pub labels: Vec<String>,
    /// Parent topic of each topic (`None` under the root).
    pub parent: Vec<Option<usize>>,
    /// E[β], topic-major `K × V`.
    pub frequency: Vec<f32>,
    /// E[φ] against the siblings (an only child against its parent), `K × V`.
    pub exclusivity: Vec<f32>,
    /// E[φ] against every topic, `K × V`.
    pub exclusivity_all: Vec<f32>,
    /// E[μ], word-major `V × (K + 1)` (node 0 = the root).
    pub mu: Vec<f32>,
    pub eta: Vec<f64>,
    pub lambda2: f64,
    /// Each topic's share of the expected tokens.
    pub shares: Vec<f64>,
    /// Mean training document length (l_d of a new document is its length over this).
    pub mean_length: f64,
    pub thresholds: Thresholds,
    pub evaluation: Option<Evaluation>,
    pub summary: FitSummary,
    /// How labels are predicted (version 1 blobs end before it).
    pub prediction: LabelPrediction,
    /// Whether the rates (and so the topic tables and predictions) were fitted again on
    /// the training and validation documents after the calibration on the validation
    /// documents (last: version 3 blobs end before it).
    pub refitted_with_validation: bool,
    /// Split-R̂ and ESS of the chain's traced quantities (the chain that fitted the
    /// rates served: the refit's when there was one); `None` before version 6 (last:
    /// version 5 blobs end before it).
    pub convergence: Option<ConvergenceReport>,
    /// Chains pooled into the model (per stage, with a refit); version 6 blobs end
    /// before it and ran one.
    pub chains: usize,
    /// PCM: how each chain after the first was matched to it (HPC's topics are the
    /// labels, matched by name: empty).
    pub alignments: Vec<Alignment>,
    /// The design of the covariates the fit read (`None`: none), for `/effects` by
    /// composition ([`crate::models::composition`]).
    pub design: Option<DesignSpec>,
    /// Its rows for the documents the rates were fitted on (their order in the fit).
    pub design_rows: Vec<f64>,
    /// Draws of those documents' θ (D × K, f32; every chain's, later chains' PCM topics
    /// relabelled onto chain 0's).
    pub theta_draws: Vec<Vec<f32>>,
    /// PCM's seeds as fitted (empty: none; HPC's are always empty): read back into
    /// `params.seeds` on decode.
    pub seeds: SeedWords,
    /// Seed words the vocabulary lacked, left out (`missing_seed_words: ignore`).
    pub missing_seed_words: Vec<MissingWord>,
    /// B_k = Σ_f exp(E[μ_fk]) over topics, computed on first use.
    #[serde(skip)]
    pub(super) rate_totals: OnceLock<Vec<f64>>,
    #[serde(skip)]
    pub(super) deepest_first: OnceLock<Vec<usize>>,
}

impl HpcModel {
    /// A stored model, any version; a model whose design rows or θ draws disagree with
    /// its documents and topics is corrupt (`/effects` indexes by them).
    pub fn decode(bytes: &[u8]) -> Result<Self, ModelError> {
        let m = Self::decode_layout(bytes)?;
        let (d, k) = (m.summary.training_documents, m.labels.len());
        let rows_fit = match &m.design {
            None => m.design_rows.is_empty() && m.theta_draws.is_empty(),
            Some(spec) => Some(m.design_rows.len()) == d.checked_mul(spec.width()),
        };
        if !rows_fit || m.theta_draws.iter().any(|t| Some(t.len()) != d.checked_mul(k)) {
            return Err(ModelError::Decode("the covariates' design rows or θ draws do not fit the model's documents and topics".into()));
        }
        Ok(m)
    }

    fn decode_layout(bytes: &[u8]) -> Result<Self, ModelError> {
        let bad = |e: postcard::Error| ModelError::Decode(e.to_string());
        let (version, _) = postcard::take_from_bytes::<u32>(bytes).map_err(bad)?;
        // Postcard writes a struct's fields one after another, without names or lengths,
        // so an older blob is a version 4 one without its trailing fields, a version 4
        // one is a version 5 one with `threads` among the parameters, and a version 5
        // one is the current one without the convergence report at its end.
        let with_chains = |mut m: HpcModel| {
            m.version = ENCODING_VERSION;
            m.params.chains = m.chains;
            m.params.seeds = m.seeds.clone();
            m
        };
        let v4: std::borrow::Cow<[u8]> = match version {
            ENCODING_VERSION => return postcard::from_bytes(bytes).map(with_chains).map_err(bad),
            5..=7 => {
                let mut current = bytes.to_vec();
                if version == 5 {
                    current.extend_from_slice(&NO_CONVERGENCE);
                }
                if version <= 6 {
                    current.extend_from_slice(&ONE_CHAIN);
                }
                current.extend_from_slice(&no_seeds());
                return postcard::from_bytes(&current).map(with_chains).map_err(bad);
            }
            4 => bytes.into(),
            3 => {
                // Version 3 ends before `refitted_with_validation`: `false` is one zero byte.
                let mut v4 = bytes.to_vec();
                v4.extend(postcard::to_allocvec(&false).map_err(bad)?);
                v4.into()
            }
            2 => {
                // Version 2 ends before `prediction.sets`: an empty list is one zero byte.
                let mut v4 = bytes.to_vec();
                v4.extend(postcard::to_allocvec(&Vec::<LabelSet>::new()).map_err(bad)?);
                v4.extend(postcard::to_allocvec(&false).map_err(bad)?);
                v4.into()
            }
            1 => {
                // Version 1 ends before `prediction`.
                let mut v4 = bytes.to_vec();
                v4.extend(postcard::to_allocvec(&LabelPrediction::mode_only()).map_err(bad)?);
                v4.extend(postcard::to_allocvec(&false).map_err(bad)?);
                v4.into()
            }
            v => return Err(ModelError::Decode(format!("HPC encoding version {v} is not {ENCODING_VERSION}, 7, 6, 5, 4, 3, 2 or 1"))),
        };
        let mut current =
            with_params_converted(&v4, |(_, supervision): (u32, Supervision), p: HpcParamsV4| ((ENCODING_VERSION, supervision), HpcParams::from(p)))
                .map_err(bad)?;
        current.extend_from_slice(&NO_CONVERGENCE);
        current.extend_from_slice(&ONE_CHAIN);
        current.extend_from_slice(&no_seeds());
        postcard::from_bytes(&current).map(with_chains).map_err(bad)
    }

    /// Topics deepest first (see [`deepest_first`]), computed on first use.
    pub(super) fn deepest_first(&self) -> &[usize] {
        self.deepest_first.get_or_init(|| deepest_first(&self.parent))
    }

    /// PCM's retired slots (an edit's merged-away and deleted topics, [`super::edit`]),
    /// in order: stored with share 0 and η at [`RETIRED_LOG_WEIGHT`], which no fitted
    /// topic has.
    pub fn retired_slots(&self) -> Vec<usize> {
        (0..self.eta.len()).filter(|&k| self.shares.get(k) == Some(&0.0) && self.eta[k] == RETIRED_LOG_WEIGHT).collect()
    }

    /// Σ_f β*_fk for every topic, with β* = exp of the posterior-mean log rates.
    pub fn rate_totals(&self) -> &[f64] {
        self.rate_totals.get_or_init(|| {
            let n = self.labels.len() + 1;
            let mut totals = vec![0.0; n - 1];
            for row in self.mu.chunks(n) {
                for (t, &m) in totals.iter_mut().zip(&row[1..]) {
                    *t += (m as f64).exp();
                }
            }
            totals
        })
    }

    pub(super) fn table(&self, values: &[f32]) -> Array2<f64> {
        Array2::from_shape_vec((self.labels.len(), self.num_terms), values.iter().map(|&x| x as f64).collect()).expect("shape stored with the model")
    }
}

/// A set of labels that labelled documents carried (as trained): a candidate
/// explanation of a new document's words under [`Predictor::LabelSets`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabelSet {
    /// Its labels, ascending; θ spreads evenly over them.
    pub labels: Vec<u32>,
    /// The labels whose probability this set adds to: `labels`, closed under ancestors
    /// when the predicted sets are.
    pub members: Vec<u32>,
    /// log π_S.
    pub log_prior: f64,
}

/// What a fitted model uses to predict labels (stored with the model).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabelPrediction {
    pub predictor: Predictor,
    /// Predicted sets (and probabilities) include every predicted label's ancestors.
    pub ancestors: bool,
    /// T of the single-label posterior.
    pub temperature: f64,
    /// log π_j, each label's prior as a document's deepest label (single-label only).
    pub log_prior: Vec<f64>,
    /// The candidate label sets (label-set predictor only; last: version-2 blobs end
    /// before it).
    pub sets: Vec<LabelSet>,
}

impl LabelPrediction {
    /// The paper's predictor without closure: what models stored before this existed did.
    pub fn mode_only() -> Self {
        LabelPrediction { predictor: Predictor::Mode, ancestors: false, temperature: 1.0, log_prior: Vec::new(), sets: Vec::new() }
    }
}

/// Topics ordered deepest first, so a pass in this order sees every child before its
/// parent.
pub fn deepest_first(parent: &[Option<usize>]) -> Vec<usize> {
    let depth = |mut k: usize| {
        let mut d = 0;
        while let Some(p) = parent[k] {
            k = p;
            d += 1;
        }
        d
    };
    let mut order: Vec<usize> = (0..parent.len()).collect();
    order.sort_by_key(|&k| std::cmp::Reverse(depth(k)));
    order
}
