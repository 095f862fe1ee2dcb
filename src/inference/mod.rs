//! Generic samplers shared by models: Hamiltonian Monte Carlo with a dense mass matrix.
//!
//! Why it exists: HPC (and later models) draw non-conjugate conditionals by scheduled
//! conditional HMC. The sampler only needs a log density with its gradient
//! ([`LogDensity`]) and a mass matrix; it knows nothing of topics. Pure numerics: no
//! I/O, no threads of its own.

#[cfg(test)]
pub(crate) mod finite_diff;
pub mod hmc;

pub use hmc::{hmc_step, HmcOutcome, LogDensity, MassMatrix};
