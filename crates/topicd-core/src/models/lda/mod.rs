//! LDA, the baseline every paper compares with: collapsed Gibbs with a sparse sampler.
//!
//! - [`family`]: the registry's entry (params, checks, memory, fits, decoding);
//! - [`params`]: job parameters and defaults;
//! - [`fit`]: a fit in one process (split, chains, pooling, held-out scoring);
//! - [`model`]: the stored model (encoding and older layouts, what the pages, prediction,
//!   effects and held-out scoring read);
//! - [`ranked`]: the same fit over the ranks of a distributed fit;
//! - [`chain`]: what LDA supplies to the shared chain driver (one sweep, the log joint,
//!   the posterior sums, the checkpointed state);
//! - [`tokens`]: document-major tokens with a word-major index;
//! - [`sampler`]: the Gibbs state, and the sparse exact sweep for many topics (document
//!   bucket + smoothing bucket, AD-LDA blocks);
//! - [`partition`]: the partitioned schedule (document blocks × word blocks) of the dense
//!   sweep for up to `sampler::DENSE_MAX_TOPICS` topics;
//! - [`dense_kernel`]: that sweep's vectorised per-token draw over live counts;
//! - [`hyper`]: re-estimation of an asymmetric α (and a symmetric β) every
//!   `optimize_interval` sweeps, by Minka's fixed point;
//! - the collapsed log joint is [`crate::inference::collapsed_loglik`] (DCNT's too);
//! - [`foldin`]: topic proportions of new documents;
//! - [`heldout`]: held-out log-likelihood of new documents (Chib-style estimator);
//! - `pooled`: several chains' models matched topic to topic and averaged;
//! - `edit`: an edit's start (the parent's assignments redrawn from its posterior, the
//!   merges, splits and deletions done on them) for a refit.
//!
//! Covariate effects are the shared method of composition ([`crate::models::composition`],
//! stm's `estimateEffect`) over the kept draws of the documents' proportions.
//!
//! The fitted [`LdaModel`] stores posterior means over kept sweeps: word rates φ,
//! training documents' proportions θ and topic shares, and the α and β the fit ended with
//! (which prediction and the held-out estimator use).

pub(crate) mod block_search;
pub mod chain;
pub mod dense_kernel;
mod edit;
pub mod fit_memory;
pub mod foldin;
pub mod heldout;
pub mod hyper;
pub mod params;
pub mod partition;
mod pooled;
pub mod ranked;
pub mod sampler;
pub mod tokens;
pub(crate) mod update;

pub mod family;
pub mod fit;
pub mod model;

pub use chain::TopicWordSample;
pub use family::LdaFamily;
pub use fit::fit_lda;
pub use model::LdaModel;
pub use params::LdaParams;
