//! The ranks of one fit spread over processes: what a distributed fit asks of them.
//!
//! Why it exists: a fit whose documents do not fit one machine runs as R ranks (Open MPI
//! processes under `mpirun`, or threads in a test), each holding a shard of the
//! documents. The numerics must not know which: this trait is the handful of
//! bulk-synchronous operations the distributed samplers use, implemented by the service
//! crate over MPI (feature `mpi`), by [`Solo`] for one process and by
//! [`threads::ThreadRanks`] for tests of R ranks inside one process.
//!
//! The rule that keeps a distributed fit's bytes equal to the single-process fit's:
//! floating-point values are never reduced in an order the transport chooses. Integers
//! may be summed by [`Ranks::sum_u64`] (integer sums do not depend on order); floats are
//! gathered ([`Ranks::all_gather`]) and summed in block order by the caller, or passed
//! from rank to rank ([`Ranks::fold_in_rank_order`]) so a running sum adds the documents
//! in the single-process order.
//!
//! Every collective must be called by every rank in the same order; only rank 0 reports
//! progress, writes checkpoints and the model.

pub mod collectives;
pub mod threads;

pub use collectives::{block_range, bytes_to_f64s, bytes_to_u32s, f64s_to_bytes, owner_of_block, u32s_to_bytes, Ranks, SentBytes, Solo};
