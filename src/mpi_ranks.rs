//! The ranks of a distributed fit over Open MPI (feature `mpi`).
//!
//! Why it exists: `mpirun -n R topicd fit ...` starts R processes; this is their
//! [`Ranks`]: MPI's world communicator behind the core's trait, so the numerics never see
//! MPI. Collectives are MPI's own (all-gather of variable-length bytes, broadcast, an
//! integer all-reduce); [`Ranks::exchange`] posts its send before it receives, so a ring
//! of exchanges cannot deadlock.

use mpi::collective::SystemOperation;
use mpi::datatype::PartitionMut;
use mpi::environment::Universe;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::sync::Mutex;
use topicd_core::ranks::{Ranks, SentBytes};

/// Whether this process was started by an MPI launcher (Open MPI's `mpirun`, or a PMI
/// launcher such as Slurm's `srun`): only then does `topicd fit` join a world.
pub fn launched_by_mpi() -> bool {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"].iter().any(|v| std::env::var_os(v).is_some())
}

/// This process' rank of the MPI world.
pub struct MpiRanks {
    /// Calls are made one at a time (the lock), from whichever thread runs the fit.
    world: Mutex<SimpleCommunicator>,
    rank: usize,
    size: usize,
    sent: SentBytes,
    /// Finalises MPI when dropped; kept last so the communicator goes first.
    _universe: Universe,
}

// SAFETY: MPI is initialised with `Threading::Serialized` or better, and every call on
// the communicator is made under `world`'s lock, so no two threads call MPI at once.
unsafe impl Send for MpiRanks {}
unsafe impl Sync for MpiRanks {}

impl MpiRanks {
    /// Join the world `mpirun` started.
    pub fn init() -> Result<Self, String> {
        let (universe, threading) = mpi::initialize_with_threading(mpi::Threading::Serialized).ok_or("MPI is already initialised in this process")?;
        if threading < mpi::Threading::Serialized {
            return Err(format!("this MPI library offers threading {threading:?}; topicd needs Serialized"));
        }
        let world = universe.world();
        let (rank, size) = (world.rank() as usize, world.size() as usize);
        Ok(MpiRanks { world: Mutex::new(world), rank, size, sent: SentBytes::default(), _universe: universe })
    }

    fn world(&self) -> std::sync::MutexGuard<'_, SimpleCommunicator> {
        self.world.lock().expect("MPI lock")
    }
}

impl Ranks for MpiRanks {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn all_gather(&self, mine: &[u8]) -> Vec<Vec<u8>> {
        let world = self.world();
        let length = i32::try_from(mine.len()).expect("a rank's part is under 2 GiB");
        let mut lengths = vec![0i32; self.size];
        world.all_gather_into(&length, &mut lengths[..]);
        let displacements: Vec<i32> = lengths.iter().scan(0i32, |at, &n| Some(std::mem::replace(at, *at + n))).collect();
        let total: usize = lengths.iter().map(|&n| n as usize).sum();
        let mut all = vec![0u8; total];
        {
            let mut parts = PartitionMut::new(&mut all[..], &lengths[..], &displacements[..]);
            world.all_gather_varcount_into(mine, &mut parts);
        }
        self.sent.add(mine.len() * (self.size - 1));
        lengths.iter().zip(&displacements).map(|(&n, &at)| all[at as usize..(at + n) as usize].to_vec()).collect()
    }

    fn broadcast(&self, root: usize, data: &mut Vec<u8>) {
        let world = self.world();
        let process = world.process_at_rank(root as i32);
        let mut length = data.len() as u64;
        process.broadcast_into(&mut length);
        data.resize(length as usize, 0);
        // An empty buffer is not sent: Open MPI refuses a broadcast of nothing.
        if length > 0 {
            process.broadcast_into(&mut data[..]);
        }
        if self.rank == root {
            self.sent.add(data.len() * (self.size - 1));
        }
    }

    fn sum_u64(&self, values: &mut [u64]) {
        let world = self.world();
        let mine = values.to_vec();
        world.all_reduce_into(&mine[..], values, SystemOperation::sum());
        self.sent.add(values.len() * 8);
    }

    fn exchange(&self, send: Option<(usize, &[u8])>, receive_from: Option<usize>) -> Option<Vec<u8>> {
        let world = self.world();
        mpi::request::scope(|scope| {
            let request = send.map(|(to, data)| {
                self.sent.add(data.len());
                world.process_at_rank(to as i32).immediate_send(scope, data)
            });
            let received = receive_from.map(|from| world.process_at_rank(from as i32).receive_vec::<u8>().0);
            if let Some(request) = request {
                request.wait();
            }
            received
        })
    }

    fn bytes_sent(&self) -> u64 {
        self.sent.get()
    }
}
