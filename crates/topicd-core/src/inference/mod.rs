//! Generic samplers and numerical kernels shared by models: Hamiltonian Monte Carlo
//! with a dense or sparse mass matrix, and a sparse Cholesky factorisation for
//! tree-structured Hessians; Minka's fixed point for Dirichlet parameters; and the
//! convergence diagnostics of multi-chain draws (split-R̂, bulk and tail ESS); and the
//! pieces more than one model family computes with: the collapsed Dirichlet-multinomial
//! log joint (LDA, DCNT) and the HDP's top-level stick posterior (HDP, HDP-aMMSB).
//!
//! Why it exists: HPC (and later models) draw non-conjugate conditionals by scheduled
//! conditional HMC. The sampler only needs a log density with its gradient
//! ([`LogDensity`]) and a mass matrix ([`Metric`]); it knows nothing of topics. Pure
//! numerics: no I/O, no threads of its own.

pub mod assignment;
pub mod collapsed_loglik;
pub mod convergence;
pub mod dirichlet;
pub mod fast_exp;
#[cfg(test)]
pub(crate) mod finite_diff;
#[cfg(test)]
pub(crate) mod geweke;
pub mod hmc;
pub mod lbfgs;
pub mod newton;
pub mod sparse_cholesky;
pub mod stick_posterior;

pub use fast_exp::fast_exp;
pub use hmc::{hmc_step, HmcOutcome, LogDensity, MassMatrix, Metric};
pub use lbfgs::{minimize, LbfgsOptions, LbfgsResult};
pub use sparse_cholesky::{minimum_degree_order, tree_postorder, FactorBuffers, SparseCholesky, SparsePattern, SparseSymmetric};
