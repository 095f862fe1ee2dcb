//! Choosing the number of topics: what a sweep over K scores each fit by, and the rule
//! that suggests one K from the scores.
//!
//! Why it exists: "how many topics?" is the first question of every topic-model user
//! (stm's `searchK`). A sweep fits one family at several K on one corpus with one seed,
//! so every fit holds out the same test documents; each finished fit is scored here
//! ([`scores`]: held-out likelihood by document completion, NPMI coherence,
//! exclusivity, stability across chains, Taddy's residual dispersion, the worst R̂),
//! and [`suggest`] picks a K by a stated rule (stability across chains with two chains
//! or more, the one-standard-error rule on held-out likelihood with one); [`intervals`]
//! gives each score's standard error. Numerics only: the service stores the scores and
//! serves them (`/v1/sweeps`).

pub mod dispersion;
pub mod intervals;
pub mod scores;
pub mod suggest;

pub use dispersion::{residual_dispersion, Dispersion};
pub use scores::{score_fit, SweepScores, DEFAULT_HELDOUT_FRACTION};
pub use suggest::{suggest, ScoredRow, Suggestion, RULE_HELDOUT, RULE_STABILITY};
