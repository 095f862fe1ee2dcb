//! HPC and PCM over the ranks of a distributed fit, giving the single-process fit's
//! bytes.
//!
//! Why it exists: HPC's document side (ξ, a row of K affinities per document, their
//! Hessians and the documents' words) grows with the corpus, and its sampler's two
//! blocks factor by word and by document (paper 003, §3 and appendix A, fitted there
//! "using parallel computing software such as MPI"). Here rank q owns a run of
//! documents and a run of words ([`shard`]); every scan gathers θ (each document's
//! active entries) for the rate block and β (V × N) for the affinity block, and every
//! float reduction runs in the single-process order ([`chain`]).
//!
//! The stages are [`super::fit`]'s: the chain on the training documents, the
//! calibration on the validation documents (rank 0, from the model), the second chain
//! on the training and validation documents, the test evaluation (rank 0). Rank 0
//! shapes the corpus, hands every rank its data and its piece of a fresh or restored
//! state, and takes every checkpoint in the single-process format (gathered), so a fit
//! checkpointed over R ranks resumes over R' ranks or in one process.
//!
//! What each rank holds: its documents' words, active labels, ξ and Hessians, and its
//! words' document rows, μ, τ², Hessians and estimand sums (1/R of each); and whole,
//! every document's active labels and θ (a few numbers a document) and every word's β
//! (V × N). Rank 0 also holds the corpus, its shaped splits, and a checkpoint's whole
//! state while it encodes or decodes one.
//!
//! Not over ranks yet (refused, naming `ranks`): several chains, and covariates (their
//! θ draws).

mod chain;
mod fit;
mod shard;

pub use shard::Layout;

pub use fit::{fit_hpc_ranked, unsupported};
