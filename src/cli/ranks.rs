//! Which ranks `topicd fit` runs on: one process, or the MPI world `mpirun` started.
//!
//! Why it exists: the fit command is the same under `mpirun` and without it; this is the
//! one place that asks whether an MPI launcher started the process and, in a build
//! without the `mpi` feature, refuses a world of several ranks instead of running R
//! copies of the whole fit.

use crate::ranks::{Ranks, Solo};

/// The ranks of this process' fit.
#[cfg(feature = "mpi")]
pub fn join_world() -> Result<Box<dyn Ranks>, String> {
    if crate::mpi_ranks::launched_by_mpi() {
        return Ok(Box::new(crate::mpi_ranks::MpiRanks::init()?));
    }
    Ok(Box::new(Solo))
}

/// The ranks of this process' fit.
#[cfg(not(feature = "mpi"))]
pub fn join_world() -> Result<Box<dyn Ranks>, String> {
    let world_size = ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE"].iter().find_map(|v| std::env::var(v).ok()).and_then(|s| s.parse::<usize>().ok());
    match world_size {
        Some(size) if size > 1 => {
            Err(format!("started as one of {size} MPI ranks, but this topicd was built without the `mpi` feature (cargo build --release --features mpi)"))
        }
        _ => Ok(Box::new(Solo)),
    }
}
