//! HPC's second chain: the rates fitted again on the training and validation documents
//! once the validation documents have calibrated the predictions.
//!
//! Why it exists: the validation documents (15 % of the labelled ones by default) are
//! held out of the first chain so that the label probabilities they get are those of
//! new documents, which is what the temperature and the thresholds must be chosen on.
//! Once chosen, those documents are as good training data as the rest, and the labels
//! with a handful of documents gain most from them: on AppStream, over five splits and
//! three seeds, the refit raised micro-F1 in 15 of 15 fits and macro-F1 in 12 of 15
//! (docs/decisions/0018-hpc-refit-with-validation.md). It is what scikit-learn's `refit`
//! does after a cross-validated search. The calibration is kept as the first chain chose
//! it.
//!
//! The second chain has its own seed ([`refit_seed`]), so its checkpoints are never
//! mistaken for the first chain's (the driver's trailer carries the seed), and each of
//! them carries the calibration ([`RefitChain::save`]): a job resumed inside the second
//! chain does not need the first chain's state again.
//!
//! With several chains ([`crate::models::chains`]) the second stage runs as many chains
//! again, chain c from `refit_seed(chain_seed(seed, c))`, and every checkpoint of that
//! stage (a chain's, or the boundary after one) carries the calibration in a trailer of
//! its own ([`wrap_refit_stage`]), which tells it from the first stage's.

use super::calibration::Thresholds;
use super::chain::HpcChain;
use super::data::HpcData;
use super::params::HpcParams;
use crate::models::chain::{Chain, Position};
use crate::models::state_bytes::{append_tail, split_tail};
use crate::models::{FitError, RestoreError};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The seed of the second chain: the job's seed mixed with a constant, so its random
/// streams differ from the first chain's and its checkpoints name another chain.
pub fn refit_seed(seed: u64) -> u64 {
    crate::rng::mix64(seed ^ 0x5EF1_7A11_DA7A_0002)
}

/// What the first chain's calibration chose: the second chain's model predicts with it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    pub temperature: f64,
    pub thresholds: Thresholds,
}

/// The second chain: HPC's chain over the training and validation documents, whose
/// checkpoints carry the calibration after the chain's own state.
pub(super) struct RefitChain<'a> {
    pub(super) chain: HpcChain<'a>,
    pub(super) calibration: Calibration,
}

impl Calibration {
    /// Whether a decoded calibration fits a model of `topics` labels: a positive finite
    /// temperature and probabilities for thresholds, one per label.
    pub fn check(&self, topics: usize) -> Result<(), RestoreError> {
        let t = &self.thresholds;
        let probability = |x: f64| (0.0..=1.0).contains(&x);
        let fits = self.temperature.is_finite()
            && self.temperature > 0.0
            && t.per_label.len() == topics
            && probability(t.global)
            && t.per_label.iter().flatten().all(|&x| probability(x));
        if fits {
            Ok(())
        } else {
            Err(RestoreError::Mismatch { what: "refit calibration", part: "temperature or thresholds" })
        }
    }
}

impl<'a> RefitChain<'a> {
    /// Continue from [`RefitChain::save`]'s bytes: the calibration is the tail (its
    /// postcard bytes, then their length as a little-endian `u32`), the chain's state
    /// the rest. Every part is checked; bad bytes are an error.
    pub fn restore(data: &'a HpcData, params: &'a HpcParams, bytes: &[u8], position: &Position) -> Result<Self, RestoreError> {
        let (state, tail) = split_tail(bytes).map_err(RestoreError::layout("refit state"))?;
        let calibration: Calibration = postcard::from_bytes(tail).map_err(|e| RestoreError::undecodable("refit calibration", e))?;
        calibration.check(data.num_topics())?;
        Ok(RefitChain { chain: HpcChain::restore(data, params, state, position)?, calibration })
    }
}

/// Marks the trailer of a multi-chain second stage's checkpoints ("refitstg" in ASCII).
const REFIT_STAGE_MAGIC: u64 = 0x6774_7374_6966_6572;

/// The trailer of a multi-chain second stage's checkpoints.
#[derive(Serialize, Deserialize)]
struct RefitStage {
    magic: u64,
    calibration: Calibration,
}

/// A checkpoint of the multi-chain second stage: the stage's own bytes (the chains'
/// checkpoint) with the calibration after them.
pub fn wrap_refit_stage(bytes: Vec<u8>, calibration: &Calibration) -> Vec<u8> {
    append_tail(bytes, &RefitStage { magic: REFIT_STAGE_MAGIC, calibration: calibration.clone() })
}

/// The stage's bytes and the calibration of a checkpoint [`wrap_refit_stage`] made;
/// `None` for any other checkpoint (the first stage's, or bytes that are no checkpoint).
pub fn unwrap_refit_stage(bytes: &[u8]) -> Option<(&[u8], Calibration)> {
    let (stage, tail) = split_tail(bytes).ok()?;
    let t: RefitStage = postcard::from_bytes(tail).ok()?;
    (t.magic == REFIT_STAGE_MAGIC).then_some((stage, t.calibration))
}

impl Chain for RefitChain<'_> {
    fn step(&mut self, seed: u64, iteration: usize) -> Result<Map<String, Value>, FitError> {
        self.chain.step(seed, iteration)
    }

    fn step_kind(&self, iteration: usize) -> Option<crate::models::StepKind> {
        self.chain.step_kind(iteration)
    }

    fn log_joint_per_token(&self) -> f64 {
        self.chain.log_joint_per_token()
    }

    fn keep(&mut self, loglik_per_token: f64) -> Option<Vec<u8>> {
        self.chain.keep(loglik_per_token)
    }

    fn save(&self) -> Vec<u8> {
        append_tail(self.chain.save(), &self.calibration)
    }
}
