//! A fit job that starts from a stored model: an edit's refit, or an update with new
//! documents.
//!
//! Why it exists: the runner's fit path reads a corpus and fits from scratch; a job
//! with a `start` also reads the model it starts from (its `source_model_id`, which
//! cannot be deleted while the job is queued or running) and hands the family both.
//! The child's names are made from the parent's after the fit, so a rename made while
//! the job ran is kept, and the child records its parent and how it was made.

use super::fitted::{decode_corpus, FittedBlobs};
use crate::models::causes::{Internal, InvalidInput, StoreFault, Stored};
use crate::models::edits::{EditPlan, EditRecord};
use crate::models::job_start::StartSpec;
use crate::models::updates::{Derivation, UpdateRecord};
use crate::models::{EditStart, FitContext, FitError, FitParams, UpdateStart};
use crate::store::{FamilyName, JobRow, Store};
use std::collections::BTreeMap;

/// The stored model a job starts from, and how.
pub(super) struct Parent {
    id: String,
    data: Vec<u8>,
    how: StartSpec,
}

impl Parent {
    /// Read the job's `start` and its parent model's bytes.
    pub(super) async fn load(store: &Store, job: &JobRow, start: &serde_json::Value) -> Result<Parent, FitError> {
        let how: StartSpec = serde_json::from_value(start.clone())
            .map_err(|e| FitError::Internal(Internal::Corrupt { what: Stored::Model, detail: format!("the job's start does not parse: {e}") }))?;
        let id = job.source_model_id.clone().ok_or_else(|| FitError::Internal(Internal::bug("a job with a start names no model")))?;
        let (_, _, data) = store
            .model_blobs(&id)
            .await
            .map_err(|e| FitError::Store(StoreFault::Read { what: Stored::Model, detail: e.to_string() }))?
            .ok_or_else(|| FitError::InvalidInput(InvalidInput::Deleted { what: Stored::Model, id: id.clone() }))?;
        Ok(Parent { id, data, how })
    }

    /// How the child's topics relate to the parent's (for its names, after the fit).
    pub(super) fn naming(&self) -> Naming {
        match &self.how {
            StartSpec::Edit { plan, .. } => Naming::Edit(plan.clone()),
            StartSpec::Update { .. } => Naming::Kept,
        }
    }

    /// The family's fit of the corpus in `blob` from this parent (on the fit's thread).
    pub(super) fn fit(self, name: FamilyName, blob: &[u8], params: &FitParams, seed: u64, ctx: &FitContext) -> Result<FittedBlobs, FitError> {
        let corpus = decode_corpus(blob)?;
        let (model, derivation, corpus_ids) = match &self.how {
            StartSpec::Edit { plan, split_seed } => {
                let start = EditStart { parent: &self.data, plan, split_seed: *split_seed };
                (name.family().fit_edited(&corpus, params, &start, seed, ctx)?, Derivation::Edit(EditRecord::of(plan, *split_seed)), Vec::new())
            }
            StartSpec::Update { record, corpus_ids } => {
                let start = update_start(&self.data, record);
                let model = name.family().fit_updated(&corpus, params, &start, seed, ctx)?;
                let record = record_of_added(name, &self.data, record, model.num_components())?;
                (model, Derivation::Update(record), corpus_ids.clone())
            }
        };
        let lexicon = postcard::to_allocvec(&corpus.lexicon).expect("plain data encodes");
        let blobs = FittedBlobs::of(name, &model, Some(lexicon));
        let record = serde_json::to_value(derivation).expect("plain data serialises");
        Ok(FittedBlobs { parent: Some((self.id, record)), corpus_ids, ..blobs })
    }
}

fn update_start<'a>(parent: &'a [u8], record: &UpdateRecord) -> UpdateStart<'a> {
    UpdateStart { parent, parent_documents: record.parent_documents, new_topics: record.new_topics.len(), split_seed: record.split_seed }
}

/// The update's record with the topics the fit added: the `new_topics` the request
/// asked for, and for a family whose fit also adds topics (HDP's births) those too.
fn record_of_added(name: FamilyName, parent: &[u8], record: &UpdateRecord, child_topics: usize) -> Result<UpdateRecord, FitError> {
    let parent_topics =
        name.family().decode(parent).map_err(|e| FitError::Internal(Internal::Corrupt { what: Stored::Model, detail: e.to_string() }))?.num_components();
    let added = child_topics.saturating_sub(parent_topics);
    Ok(UpdateRecord { new_topics: crate::models::updates::added_topics(parent_topics, added), ..record.clone() })
}

/// How a child's names follow its parent's.
pub(super) enum Naming {
    /// By the edit's plan ([`EditPlan::child_names`]).
    Edit(EditPlan),
    /// Every parent topic keeps its id and name (an update; its new topics have none).
    Kept,
}

/// The child's names from its parent's current ones.
pub(super) async fn with_parent_names(store: &Store, naming: &Naming, mut fitted: FittedBlobs) -> Result<FittedBlobs, FitError> {
    let Some((parent_id, _)) = &fitted.parent else { return Ok(fitted) };
    let names: BTreeMap<usize, String> =
        store.topic_names(parent_id).await.map_err(|e| FitError::Store(StoreFault::Read { what: Stored::Model, detail: e.to_string() }))?.into_iter().collect();
    fitted.topic_names = match naming {
        Naming::Edit(plan) => plan.child_names(&names),
        Naming::Kept => names.into_iter().collect(),
    };
    Ok(fitted)
}
