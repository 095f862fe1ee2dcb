//! The stored DCNT/SCNT model.
//!
//! Why it exists: it is the fitted, served form of the sampler's output: the versioned
//! encoding, the global parameters prediction and the estimators condition on
//! ([`DcntModel::plugin_point`]), prediction with explicit features, and the accessors
//! the held-out and covariance estimators read. The `dcnt`/`scnt` families and the
//! model's [`crate::models::TopicModel`] face (topic table, prediction, held-out
//! scoring, correlations, diagnostics) are [`super::family`]'s, above the fit and the
//! scoring, so that neither of them is named from here.

use super::params::DcntParams;
use super::point::DcntPoint;
use super::predict::{fold_in, fold_in_with_intervals};
pub use super::sample::Loadings;
use super::variant::Covariance;
use crate::corpus::lexicon::EncodedDoc;
use crate::models::chains::{alignment_of, Alignment};
use crate::models::consensus;
use crate::models::convergence::ConvergenceReport;
use crate::models::design::{DesignRequest, DesignSpec};
use crate::models::effects::{ChainPooling, ProportionsWithIntervals};
use crate::models::encoding_upgrade::with_params_converted;
use crate::models::heldout::HeldoutReport;
use crate::models::seeds::{MissingWord, SeedWords};
use crate::models::slots::Slots;
use crate::models::{ModelError, PredictOptions};
use serde::{Deserialize, Serialize};

/// Format version of [`DcntModel`]'s encoding (10: the reference chain, last; 9: an edited model's slots, last; 8: the seeds among the parameters and the
/// seed words left out, last; 7: `chains` among the parameters, the
/// chains' alignments and draws per chain, last; 6: `warm_start` among the parameters;
/// 5: the convergence report, last; 4: the design from covariates, in the parameters
/// and last in the model; 3: the parameters without the job's `threads`; 2: with
/// `topic_swaps`; versions 1 to 9 still decode).
pub const ENCODING_VERSION: u32 = 10;

/// A fitted DCNT/SCNT model: posterior means over the kept scans (of every chain, the
/// other chains' topics matched to the reference chain's: [`super::pooled`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DcntModel {
    pub version: u32,
    /// DCNT (full A) or SCNT (diagonal A).
    pub covariance: Covariance,
    pub params: DcntParams,
    pub num_terms: usize,
    /// Posterior mean of Ω, K̄ × V topic-major.
    pub topic_word: Vec<f64>,
    /// Posterior mean share of the training tokens per topic.
    pub topic_shares: Vec<f64>,
    /// Posterior mean π(v_d) of the training documents, D_train × K̄.
    pub document_proportions: Vec<f64>,
    /// Corpus indices of the training documents (rows of `document_proportions`).
    pub train_documents: Vec<usize>,
    /// Corpus indices of the held-out (test) documents.
    pub heldout_documents: Vec<usize>,
    /// Feature names (empty when the corpus had none and φ_d = 1).
    pub feature_names: Vec<String>,
    /// F, the number of metadata features the model uses (1 for the constant).
    pub num_features: usize,
    /// φ_d of every corpus document, corpus order, D × F.
    pub features: Vec<f64>,
    /// Mean φ over the training documents (used for new documents, which carry none).
    pub mean_features: Vec<f64>,
    /// Posterior means of A, η and λ_v (the reference chain's: a topic's place in the stick
    /// order is the chain's own, so loadings are not pooled across chains).
    pub mean: Loadings,
    /// The last kept sample of A, η and λ_v (the reference chain's).
    pub last: Loadings,
    pub kept_scans: usize,
    pub tokens: u64,
    pub final_loglik_per_token: f64,
    /// Mean share of accepted v entries over the kept scans.
    pub mh_acceptance: f64,
    /// Topics holding more than 1 % of the tokens (by the posterior mean shares).
    pub active_topics: usize,
    /// The held-out documents' Chib-style likelihood, computed at the end of the fit.
    pub heldout: Option<HeldoutReport>,
    /// The columns φ_d was built from when the fit read covariates (`feature_names` are
    /// its column names); `None`: the documents' features as they were.
    pub design: Option<DesignSpec>,
    /// A, η and λ_v of kept scans (`params.keep_draws` of them, evenly spread), for
    /// covariate effects with intervals; chain by chain (`draws_per_chain`), each in its
    /// own chain's stick order.
    pub draws: Vec<Loadings>,
    /// Split-R̂ and ESS of the chains' traced quantities (`None` before version 5).
    pub convergence: Option<ConvergenceReport>,
    /// How each chain but the reference was matched to it, in chain order (empty with
    /// one chain).
    pub alignments: Vec<Alignment>,
    /// How many of `draws` each chain gave, in chain order (empty with one chain: all
    /// of them are its).
    pub draws_per_chain: Vec<usize>,
    /// Seed words the vocabulary lacked, left out (`missing_seed_words: ignore`).
    pub missing_seed_words: Vec<MissingWord>,
    /// The child's topic slots of a model whose fit ran on an edit's live topics alone
    /// (every array above holds those, in order; [`crate::models::slotted`] serves
    /// them in the child's ids); `None` when every topic is live.
    pub slots: Option<Slots>,
    /// The chain whose topics, loadings and point values the model serves, the others'
    /// matched onto it: the chain the others agree with most
    /// ([`crate::models::consensus`]; 0 with one chain, and for models before version 10).
    pub reference_chain: usize,
}

impl DcntModel {
    pub fn decode(bytes: &[u8]) -> Result<Self, ModelError> {
        let decode_error = |e: postcard::Error| ModelError::Decode(e.to_string());
        let (version, _) = postcard::take_from_bytes::<u32>(bytes).map_err(decode_error)?;
        // Everything after the parameters is laid out as in the current version, but
        // for `design` and `draws` (before version 4) and `convergence` (before version
        // 5), last, which older models hold as none.
        let up = |(_, covariance): (u32, Covariance), p: DcntParamsV3| ((ENCODING_VERSION, covariance), DcntParams::from(p));
        let no_convergence = postcard::to_allocvec(&None::<ConvergenceReport>).map_err(decode_error)?;
        let up5 = |(_, covariance): (u32, Covariance), p: DcntParamsV5| ((ENCODING_VERSION, covariance), DcntParams::from(p));
        let up6 = |(_, covariance): (u32, Covariance), p: DcntParamsV6| ((ENCODING_VERSION, covariance), DcntParams::from(p));
        let up7 = |(_, covariance): (u32, Covariance), p: DcntParamsV7| ((ENCODING_VERSION, covariance), DcntParams::from(p));
        // Before version 7, one chain: no alignments, no draws per chain; before 8, no
        // seeds (an empty list of missing seed words).
        let one_chain = postcard::to_allocvec(&(Vec::<Alignment>::new(), Vec::<usize>::new(), Vec::<MissingWord>::new())).map_err(decode_error)?;
        let no_seeds = postcard::to_allocvec(&Vec::<MissingWord>::new()).map_err(decode_error)?;
        // Before version 10, chain 0 was the reference; before 9, no edit: every topic live.
        let chain_0 = postcard::to_allocvec(&0usize).map_err(decode_error)?;
        let no_slots = postcard::to_allocvec(&None::<Slots>).map_err(decode_error)?;
        let decode_without_reference = |mut blob: Vec<u8>| -> Result<DcntModel, ModelError> {
            blob.extend_from_slice(&chain_0);
            postcard::from_bytes(&blob).map(|m| DcntModel { version: ENCODING_VERSION, ..m }).map_err(decode_error)
        };
        let decode_without_slots = |mut blob: Vec<u8>| -> Result<DcntModel, ModelError> {
            blob.extend_from_slice(&no_slots);
            decode_without_reference(blob)
        };
        let upgraded = match version {
            ENCODING_VERSION => None,
            9 => return decode_without_reference(bytes.to_vec()),
            8 => return decode_without_slots(bytes.to_vec()),
            7 => {
                let mut blob = with_params_converted(bytes, up7).map_err(decode_error)?;
                blob.extend_from_slice(&no_seeds);
                return decode_without_slots(blob);
            }
            6 => {
                let mut blob = with_params_converted(bytes, up6).map_err(decode_error)?;
                blob.extend_from_slice(&one_chain);
                return decode_without_slots(blob);
            }
            5 => {
                let mut blob = with_params_converted(bytes, up5).map_err(decode_error)?;
                blob.extend_from_slice(&one_chain);
                return decode_without_slots(blob);
            }
            4 => {
                let mut blob = with_params_converted(bytes, up5).map_err(decode_error)?;
                blob.extend_from_slice(&no_convergence);
                blob.extend_from_slice(&one_chain);
                return decode_without_slots(blob);
            }
            3 => Some(with_params_converted(bytes, up)),
            2 => Some(with_params_converted(bytes, |h, p: DcntParamsV2| up(h, p.into()))),
            1 => Some(with_params_converted(bytes, |h, p: DcntParamsV1| up(h, p.into()))),
            v => return Err(ModelError::Decode(format!("DCNT encoding version {v} is not {ENCODING_VERSION}, 9, 8, 7, 6, 5, 4, 3, 2 or 1"))),
        };
        let current = match upgraded {
            None => std::borrow::Cow::Borrowed(bytes),
            Some(blob) => {
                let mut blob = blob.map_err(decode_error)?;
                blob.extend(postcard::to_allocvec(&(None::<DesignSpec>, Vec::<Loadings>::new())).map_err(decode_error)?);
                blob.extend_from_slice(&no_convergence);
                blob.extend_from_slice(&one_chain);
                blob.extend_from_slice(&no_slots);
                blob.extend_from_slice(&chain_0);
                blob.into()
            }
        };
        let model: DcntModel = postcard::from_bytes(&current).map_err(decode_error)?;
        if let Some(slots) = &model.slots {
            slots.check(model.params.topics).map_err(|e| ModelError::Decode(format!("an edited DCNT model's slots: {e}")))?;
        }
        Ok(model)
    }

    /// A stored parent model (an edit's or an update's), its damage an internal error.
    pub fn decode_parent(bytes: &[u8]) -> Result<Self, crate::models::FitError> {
        use crate::models::causes::{Internal, Stored};
        Self::decode(bytes).map_err(|e| crate::models::FitError::Internal(Internal::Corrupt { what: Stored::Model, detail: e.to_string() }))
    }

    /// The model's topic slots: an edited model's, or every topic live.
    pub fn slots_or_all(&self) -> Slots {
        self.slots.clone().unwrap_or_else(|| Slots::retiring(&[], self.params.topics))
    }

    /// The chain draw `s` was kept by (`None` for a one-chain model, whose draws carry
    /// no chain, or past the last draw).
    fn draw_chain(&self, s: usize) -> Option<usize> {
        let mut end = 0;
        self.draws_per_chain.iter().position(|&n| {
            end += n;
            s < end
        })
    }

    /// Where draw `s`'s topics go among the model's: `None` for the reference chain's
    /// (the model's own order), its chain's alignment otherwise.
    pub fn draw_topics(&self, s: usize) -> Option<&[usize]> {
        let c = self.draw_chain(s)?;
        alignment_of(&self.alignments, self.reference_chain, c).map(|a| a.permutation.as_slice())
    }

    /// Whether chain `c` holds the model's topic `t` ([`consensus::chain_holds`]).
    fn chain_holds(&self, c: usize, t: usize) -> bool {
        consensus::chain_holds(&self.alignments, self.reference_chain, c, t)
    }

    /// Whether draw `s` counts for the model's topic `t`: it does unless its chain
    /// settled elsewhere ([`Self::chain_holds`]); such a chain says nothing about `t`'s
    /// effect.
    pub fn draw_counts_for(&self, s: usize, t: usize) -> bool {
        self.draw_chain(s).is_none_or(|c| self.chain_holds(c, t))
    }

    /// For a model of several chains, how many chains' draws topic `t`'s effect pools
    /// under `pooling` (every chain, or those that hold it); `None` for one chain.
    pub fn pooled_chains(&self, t: usize, pooling: ChainPooling) -> Option<usize> {
        let chains = self.draws_per_chain.len();
        (chains > 1).then(|| match pooling {
            ChainPooling::All => chains,
            ChainPooling::Matched => (0..chains).filter(|&c| self.chain_holds(c, t)).count(),
        })
    }

    /// The global parameters at their posterior means (Ω, A, η, λ_v).
    pub fn point(&self) -> DcntPoint {
        self.point_from(&self.mean)
    }

    /// The global parameters of the last kept sample (Ω still the posterior mean).
    pub fn last_point(&self) -> DcntPoint {
        self.point_from(&self.last)
    }

    /// The parameters prediction, held-out likelihood and topic correlations condition
    /// on: Ω at its posterior mean, (A, η, λ_v) at the last kept sample. A is identified
    /// only up to a rotation from the right (A u with u ~ N(ηᵀφ, I) is unchanged by
    /// A → AR, u → Rᵀu, η → ηR, and A's row prior is isotropic), so the chain drifts
    /// along rotations and the posterior mean of A shrinks A Aᵀ, the activations'
    /// covariance; a single posterior draw keeps it.
    pub fn plugin_point(&self) -> DcntPoint {
        self.last_point()
    }

    fn point_from(&self, l: &Loadings) -> DcntPoint {
        DcntPoint {
            num_topics: self.params.topics,
            num_features: self.num_features,
            a: l.a.clone(),
            eta: l.eta.clone(),
            lambda_v: l.lambda_v,
            topic_word: self.topic_word.clone(),
        }
    }

    /// φ_d of corpus document `d` (corpus order).
    pub fn document_features(&self, d: usize) -> &[f64] {
        &self.features[d * self.num_features..(d + 1) * self.num_features]
    }

    /// Topic proportions of new documents with explicit features (one F-row each).
    pub fn predict_with_features(&self, docs: &[EncodedDoc], features: &[f64], options: &PredictOptions) -> Result<Vec<Vec<f64>>, ModelError> {
        self.check_documents(docs, features)?;
        Ok(fold_in(&self.plugin_point(), docs, features, options))
    }

    /// [`DcntModel::predict_with_features`] and each topic weight's `level` interval over
    /// the same fold-in chain's kept sweeps.
    pub fn predict_with_features_and_intervals(
        &self,
        docs: &[EncodedDoc],
        features: &[f64],
        options: &PredictOptions,
        level: f64,
    ) -> Result<Vec<ProportionsWithIntervals>, ModelError> {
        self.check_documents(docs, features)?;
        Ok(fold_in_with_intervals(&self.plugin_point(), docs, features, options, level))
    }

    fn check_documents(&self, docs: &[EncodedDoc], features: &[f64]) -> Result<(), ModelError> {
        if features.len() != docs.len() * self.num_features {
            return Err(ModelError::Invalid(format!("expected {} feature values per document", self.num_features)));
        }
        if let Some(bad) = docs.iter().flat_map(|d| &d.terms).find(|&&w| w as usize >= self.num_terms) {
            return Err(ModelError::Invalid(format!("term id {bad} is outside the vocabulary")));
        }
        Ok(())
    }
}

/// [`DcntParams`] as stored by version 2 (with the job's `threads`, always 0 once the
/// runner took it from the job's options).
#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
pub(super) struct DcntParamsV2 {
    /// Laid out as version 3's (postcard writes a nested struct's fields in place).
    pub v3: DcntParamsV3,
    /// The job's thread count: read to pass over its bytes, never used.
    #[allow(dead_code)]
    pub threads: usize,
}

#[cfg(test)]
impl From<&DcntParams> for DcntParamsV3 {
    /// Test support: the version 3 fields of current parameters.
    fn from(p: &DcntParams) -> Self {
        DcntParamsV3 {
            topics: p.topics,
            priors: p.priors,
            iterations: p.iterations,
            burn_in: p.burn_in,
            thin: p.thin,
            loglik_every: p.loglik_every,
            test_fraction: p.test_fraction,
            heldout_burn_in: p.heldout_burn_in,
            heldout_chain_length: p.heldout_chain_length,
            heldout_acceptance_samples: p.heldout_acceptance_samples,
            topic_swaps: p.topic_swaps,
        }
    }
}

#[cfg(test)]
impl From<&DcntParams> for DcntParamsV2 {
    /// The version 2 layout of current parameters (`threads` 0, as every job's was).
    fn from(p: &DcntParams) -> Self {
        DcntParamsV2 { v3: p.into(), threads: 0 }
    }
}

/// Test support: a current blob of a fit without covariates in version 2's layout
/// (`threads` 0 among the parameters, no `design`, no `draws`, no convergence report),
/// against which pins
/// recorded before `threads` left are checked.
#[cfg(test)]
pub(crate) fn as_before_threads_left(bytes: &[u8]) -> Vec<u8> {
    let mut m = DcntModel::decode(bytes).expect("a current DCNT blob");
    assert!(m.design.is_none(), "a fit without covariates");
    m.draws.clear();
    m.convergence = None;
    assert!(m.params.chains == 1 && m.alignments.is_empty() && m.draws_per_chain.is_empty(), "one chain");
    assert!(m.params.seeds.is_empty() && m.missing_seed_words.is_empty(), "no seeds");
    assert!(m.slots.is_none() && m.reference_chain == 0, "no edit, chain 0 the reference");
    let bytes = postcard::to_allocvec(&m).expect("plain data encodes");
    let mut old = with_params_converted(&bytes, |(_, covariance): (u32, Covariance), p: DcntParams| ((2u32, covariance), DcntParamsV2::from(&p)))
        .expect("a current DCNT blob");
    assert_eq!(
        old.split_off(old.len() - 8),
        [0; 8],
        "no design, draws, convergence report, alignments, draws per chain, missing seed words or slots, reference chain 0: eight zero bytes"
    );
    old
}

/// Test support: a current blob of an unseeded, unedited fit in version 7's layout (no
/// seeds among the parameters, no missing seed words, slots or reference chain last),
/// against which digests recorded before seeds are checked.
#[cfg(test)]
pub(crate) fn as_version7(bytes: &[u8]) -> Vec<u8> {
    let m = DcntModel::decode(bytes).expect("a current DCNT blob");
    assert!(m.params.seeds.is_empty() && m.missing_seed_words.is_empty() && m.slots.is_none(), "no seeds, no edit");
    let mut b = postcard::to_allocvec(&m).expect("plain data encodes");
    // The reference chain (below 8 chains: one byte), the slots and the missing seed words.
    b.truncate(b.len() - 3);
    with_params_converted(&b, |(_, covariance): (u32, Covariance), p: DcntParams| ((7u32, covariance), DcntParamsV7::from(&p))).expect("a current DCNT blob")
}

/// [`DcntParams`] as stored by version 3 (before `design`).
#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
pub(super) struct DcntParamsV3 {
    pub topics: usize,
    pub priors: super::params::Priors,
    pub iterations: usize,
    pub burn_in: usize,
    pub thin: usize,
    pub loglik_every: usize,
    pub test_fraction: f64,
    pub heldout_burn_in: usize,
    pub heldout_chain_length: usize,
    pub heldout_acceptance_samples: usize,
    pub topic_swaps: usize,
}

impl From<DcntParamsV3> for DcntParams {
    /// Models stored before covariates were fitted on the documents' features.
    fn from(p: DcntParamsV3) -> Self {
        DcntParams {
            topics: p.topics,
            priors: p.priors,
            iterations: p.iterations,
            burn_in: p.burn_in,
            thin: p.thin,
            loglik_every: p.loglik_every,
            test_fraction: p.test_fraction,
            heldout_burn_in: p.heldout_burn_in,
            heldout_chain_length: p.heldout_chain_length,
            heldout_acceptance_samples: p.heldout_acceptance_samples,
            topic_swaps: p.topic_swaps,
            warm_start: 0,
            keep_draws: 0,
            design: DesignRequest::default(),
            chains: 1,
            seeds: SeedWords::default(),
        }
    }
}

/// [`DcntParams`] as stored by versions 4 and 5 (before `warm_start`): version 3's
/// fields, then the kept draws and the design.
#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
pub(super) struct DcntParamsV5 {
    /// Laid out as version 3's (postcard writes a nested struct's fields in place).
    pub v3: DcntParamsV3,
    pub keep_draws: usize,
    pub design: DesignRequest,
}

#[cfg(test)]
impl From<&DcntParams> for DcntParamsV5 {
    /// Test support: current parameters (whose `warm_start` is 0) in versions 4 and 5's layout.
    fn from(p: &DcntParams) -> Self {
        assert_eq!(p.warm_start, 0, "versions 4 and 5 had no collapsed start");
        DcntParamsV5 { v3: p.into(), keep_draws: p.keep_draws, design: p.design.clone() }
    }
}

/// [`DcntParams`] as stored by version 6 (before `chains`): version 3's fields, then the
/// collapsed start, the kept draws and the design.
#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
pub(super) struct DcntParamsV6 {
    /// Laid out as version 3's (postcard writes a nested struct's fields in place).
    pub v3: DcntParamsV3,
    pub warm_start: usize,
    pub keep_draws: usize,
    pub design: DesignRequest,
}

#[cfg(test)]
impl From<&DcntParams> for DcntParamsV6 {
    /// Test support: current one-chain parameters in version 6's layout.
    fn from(p: &DcntParams) -> Self {
        assert_eq!(p.chains, 1, "version 6 ran one chain");
        DcntParamsV6 { v3: p.into(), warm_start: p.warm_start, keep_draws: p.keep_draws, design: p.design.clone() }
    }
}

impl From<DcntParamsV6> for DcntParams {
    /// Models stored before several chains ran one.
    fn from(p: DcntParamsV6) -> Self {
        DcntParams { warm_start: p.warm_start, keep_draws: p.keep_draws, design: p.design, ..p.v3.into() }
    }
}

/// [`DcntParams`] as stored by version 7 (before the seeds): version 6's fields, then
/// the chains.
#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
pub(super) struct DcntParamsV7 {
    /// Laid out as version 6's (postcard writes a nested struct's fields in place).
    pub v6: DcntParamsV6,
    pub chains: usize,
}

#[cfg(test)]
impl From<&DcntParams> for DcntParamsV7 {
    /// Test support: current unseeded parameters in version 7's layout.
    fn from(p: &DcntParams) -> Self {
        assert!(p.seeds.is_empty(), "version 7 had no seeds");
        let v6 = DcntParamsV6 { v3: p.into(), warm_start: p.warm_start, keep_draws: p.keep_draws, design: p.design.clone() };
        DcntParamsV7 { v6, chains: p.chains }
    }
}

impl From<DcntParamsV7> for DcntParams {
    /// Models stored before seeds.
    fn from(p: DcntParamsV7) -> Self {
        DcntParams { chains: p.chains, ..p.v6.into() }
    }
}

impl From<DcntParamsV5> for DcntParams {
    /// Models stored before the collapsed start began from the prior alone
    /// (`warm_start` 0, as version 3's conversion gives).
    fn from(p: DcntParamsV5) -> Self {
        DcntParams { keep_draws: p.keep_draws, design: p.design, ..p.v3.into() }
    }
}

impl From<DcntParamsV2> for DcntParamsV3 {
    fn from(p: DcntParamsV2) -> Self {
        p.v3
    }
}

impl From<DcntParamsV1> for DcntParamsV3 {
    /// Models stored before `topic_swaps` existed were fitted without swaps.
    fn from(p: DcntParamsV1) -> Self {
        DcntParamsV3 {
            topics: p.topics,
            priors: p.priors,
            iterations: p.iterations,
            burn_in: p.burn_in,
            thin: p.thin,
            loglik_every: p.loglik_every,
            test_fraction: p.test_fraction,
            heldout_burn_in: p.heldout_burn_in,
            heldout_chain_length: p.heldout_chain_length,
            heldout_acceptance_samples: p.heldout_acceptance_samples,
            topic_swaps: 0,
        }
    }
}

/// [`DcntParams`] as stored by version 1 (before `topic_swaps`).
#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
pub(super) struct DcntParamsV1 {
    pub topics: usize,
    pub priors: super::params::Priors,
    pub iterations: usize,
    pub burn_in: usize,
    pub thin: usize,
    pub loglik_every: usize,
    pub test_fraction: f64,
    pub heldout_burn_in: usize,
    pub heldout_chain_length: usize,
    pub heldout_acceptance_samples: usize,
    /// The job's thread count: read to pass over its bytes, never used.
    #[allow(dead_code)]
    pub threads: usize,
}
