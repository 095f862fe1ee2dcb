//! `mixture`: a test-only family (cargo feature `test-family`), the smallest complete
//! one: a mixture of unigrams fitted by hard EM. Each document belongs to one topic;
//! documents start in topic `d mod K`, and each iteration re-estimates the topics'
//! smoothed word rates and moves every document to the topic under which its words are
//! likeliest. Deterministic (no seed is drawn from), cancellable between iterations.
//!
//! Why it exists: it proves that adding a family is this folder (in the shape every
//! family has: `family`, `params`, `fit`, `model`), one line in
//! [`crate::models::registry::REGISTRY`] and its `mod` line in `models/mod.rs`: `tests/adding_a_family.rs` finds it in
//! `GET /v1/families` with its generated params schema, fits it through `POST /v1/jobs`,
//! reads its `/topics` and finds its schema in the served OpenAPI document. Never in a
//! default or release build. `docs/adding-a-family.md` walks through it.

pub mod family;
pub mod fit;
pub mod model;
pub mod params;

pub use family::MixtureFamily;
pub use model::MixtureModel;
pub use params::MixtureParams;
