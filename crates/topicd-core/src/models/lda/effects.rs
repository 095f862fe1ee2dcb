//! LDA's covariate effects by the method of composition (`"method": "composition"`,
//! [`crate::models::composition`]) over the θ draws its fit kept.
//!
//! Why it exists: LDA's prior does not read a document's metadata; this is where its
//! model hands its design and draws to the shared method.

use super::LdaModel;
use crate::models::composition;
use crate::models::effects::{EffectQuery, Effects};
use crate::models::ModelError;

/// The effect of `query.covariate` on the model's topics, by composition.
pub fn composition(model: &LdaModel, query: &EffectQuery) -> Result<Effects, ModelError> {
    let spec = model
        .design
        .as_ref()
        .ok_or_else(|| ModelError::NotOffered("this model was fitted without covariates: effects need a fit with `covariates` in its params".into()))?;
    composition::composition(spec, &model.design_rows, model.params.topics, &model.theta_draws, query)
}
