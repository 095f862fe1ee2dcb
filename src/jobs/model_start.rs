//! A fit job that starts from a stored model: an edit's refit.
//!
//! Why it exists: the runner's fit path reads a corpus and fits from scratch; a job
//! with a `start` also reads the model it starts from (its `source_model_id`, which
//! cannot be deleted while the job is queued or running) and hands the family both.
//! The child's names are made from the parent's after the fit, so a rename made while
//! the refit ran is kept, and the child records its parent and the edit's record.

use super::fitted::{decode_corpus, FittedBlobs};
use crate::models::causes::{Internal, InvalidInput, StoreFault, Stored};
use crate::models::edits::{EditPlan, EditRecord, StartSpec};
use crate::models::{EditStart, FitContext, FitError, FitParams};
use crate::store::{FamilyName, JobRow, Store};
use std::collections::BTreeMap;

/// The stored model a job starts from, and how.
pub(super) struct Parent {
    id: String,
    data: Vec<u8>,
    pub(super) plan: EditPlan,
    split_seed: u64,
}

impl Parent {
    /// Read the job's `start` and its parent model's bytes.
    pub(super) async fn load(store: &Store, job: &JobRow, start: &serde_json::Value) -> Result<Parent, FitError> {
        let StartSpec::Edit { plan, split_seed } = serde_json::from_value(start.clone())
            .map_err(|e| FitError::Internal(Internal::Corrupt { what: Stored::Model, detail: format!("the job's start does not parse: {e}") }))?;
        let id = job.source_model_id.clone().ok_or_else(|| FitError::Internal(Internal::bug("a job with a start names no model")))?;
        let (_, _, data) = store
            .model_blobs(&id)
            .await
            .map_err(|e| FitError::Store(StoreFault::Read { what: Stored::Model, detail: e.to_string() }))?
            .ok_or_else(|| FitError::InvalidInput(InvalidInput::Deleted { what: Stored::Model, id: id.clone() }))?;
        Ok(Parent { id, data, plan, split_seed })
    }

    /// The family's refit of the corpus in `blob` from this parent (on the fit's thread).
    pub(super) fn refit(self, name: FamilyName, blob: &[u8], params: &FitParams, seed: u64, ctx: &FitContext) -> Result<FittedBlobs, FitError> {
        let corpus = decode_corpus(blob)?;
        let start = EditStart { parent: &self.data, plan: &self.plan, split_seed: self.split_seed };
        let model = name.family().fit_edited(&corpus, params, &start, seed, ctx)?;
        let lexicon = postcard::to_allocvec(&corpus.lexicon).expect("plain data encodes");
        let blobs = FittedBlobs::of(name, &model, Some(lexicon));
        let record = serde_json::to_value(EditRecord::of(&self.plan)).expect("plain data serialises");
        Ok(FittedBlobs { parent: Some((self.id, record)), ..blobs })
    }
}

/// The child's names from its parent's current ones ([`EditPlan::child_names`]).
pub(super) async fn with_parent_names(store: &Store, plan: &EditPlan, mut fitted: FittedBlobs) -> Result<FittedBlobs, FitError> {
    let Some((parent_id, _)) = &fitted.parent else { return Ok(fitted) };
    let names: BTreeMap<usize, String> =
        store.topic_names(parent_id).await.map_err(|e| FitError::Store(StoreFault::Read { what: Stored::Model, detail: e.to_string() }))?.into_iter().collect();
    fitted.topic_names = plan.child_names(&names);
    Ok(fitted)
}
