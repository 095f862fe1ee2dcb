//! Jobs over MPI ranks: a replica started with `--mpi-launch` runs a job that asks for
//! `"ranks": R` as one world of R `topicd rank-fit` processes.
//!
//! Why it exists: the numerics of a fit over ranks are the core's (`fit_ranked`); what a
//! job needs besides is a way to start the world where the operator's scheduler says
//! (`mpirun --hostfile`, Slurm's `srun`, a Kubernetes MPI operator's launcher), to hand
//! rank 0 the job, and to bring what rank 0 reports back into the runner's streaming of
//! progress, samples, checkpoints and the model to the store.
//!
//! - [`protocol`]: the frames over the launcher's standard input and output;
//! - [`launch`]: the replica's side (start the world, feed it, read it back);
//! - `cli::rank_fit`: each rank's side.

pub mod launch;
pub mod protocol;
