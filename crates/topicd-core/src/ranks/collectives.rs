//! What a distributed fit asks of its ranks ([`Ranks`]), one process's answer ([`Solo`]),
//! and the byte packing and block ownership every distributed sampler shares.

use std::sync::atomic::{AtomicU64, Ordering};

/// The collective and point-to-point operations of a distributed fit. Calls are made
/// from one thread of each rank at a time.
pub trait Ranks: Sync {
    /// This rank, `0..size()`.
    fn rank(&self) -> usize;
    /// Number of ranks, R.
    fn size(&self) -> usize;
    /// Every rank's `mine`, in rank order, on every rank.
    fn all_gather(&self, mine: &[u8]) -> Vec<Vec<u8>>;
    /// `data` as rank `root` holds it, on every rank (other ranks' `data` is replaced).
    fn broadcast(&self, root: usize, data: &mut Vec<u8>);
    /// Element-wise integer sum over the ranks, on every rank (wrapping: two's-complement
    /// differences sum correctly).
    fn sum_u64(&self, values: &mut [u64]);
    /// Send `send` to one rank and receive from another (either may be absent), without
    /// deadlock whatever the other ranks' pairs are.
    fn exchange(&self, send: Option<(usize, &[u8])>, receive_from: Option<usize>) -> Option<Vec<u8>>;
    /// Bytes this rank has sent so far (for the communication benchmark).
    fn bytes_sent(&self) -> u64;

    /// Is this rank 0, the one that reports and writes?
    fn is_root(&self) -> bool {
        self.rank() == 0
    }

    /// A decision every rank must take together (stop here, checkpoint here), given this
    /// rank's own view: rank 0's, one broadcast byte.
    fn agree(&self, decision: bool) -> bool {
        if self.size() == 1 {
            return decision;
        }
        let mut flag = vec![decision as u8];
        self.broadcast(0, &mut flag);
        flag[0] == 1
    }

    /// A left fold over the ranks in order: rank 0 starts from `start`, each rank applies
    /// `fold` to the running value it receives from the rank before, and every rank gets
    /// the last rank's result. With `fold` adding a rank's documents one by one, the
    /// total equals the single-process sum bit for bit.
    fn fold_in_rank_order(&self, start: f64, fold: &dyn Fn(f64) -> f64) -> f64 {
        let value = |bytes: Vec<u8>| f64::from_le_bytes(bytes.try_into().expect("eight bytes"));
        value(self.fold_bytes_in_rank_order(start.to_le_bytes().to_vec(), &mut |running| fold(value(running)).to_le_bytes().to_vec()))
    }

    /// [`Ranks::fold_in_rank_order`] over bytes: rank 0 starts from `start`, each rank
    /// applies `fold` to the bytes it receives from the rank before, and every rank gets
    /// the last rank's result. A running sum of a few numbers passed this way adds every
    /// rank's terms in rank order, as one process adds them, for a message of the sum's
    /// size per rank.
    fn fold_bytes_in_rank_order(&self, start: Vec<u8>, fold: &mut dyn FnMut(Vec<u8>) -> Vec<u8>) -> Vec<u8> {
        let (rank, size) = (self.rank(), self.size());
        let running = if rank == 0 { start } else { self.exchange(None, Some(rank - 1)).expect("a value from the rank before") };
        let mut mine = fold(running);
        if rank + 1 < size {
            self.exchange(Some((rank + 1, &mine)), None);
        }
        self.broadcast(size - 1, &mut mine);
        mine
    }

    /// Every rank's `mine`, in rank order, on rank 0 (`None` on the others).
    fn gather_to_root(&self, mine: &[u8]) -> Option<Vec<Vec<u8>>> {
        if self.rank() != 0 {
            self.exchange(Some((0, mine)), None);
            return None;
        }
        let mut parts = vec![mine.to_vec()];
        parts.extend((1..self.size()).map(|q| self.exchange(None, Some(q)).expect("a rank's part")));
        Some(parts)
    }

    /// Element-wise integer sum of `u32` values (counts that fit in 32 bits whatever
    /// the ranks: the single-process totals).
    fn sum_u32(&self, values: &mut [u32]) {
        let mut wide: Vec<u64> = values.iter().map(|&v| v as u64).collect();
        self.sum_u64(&mut wide);
        for (v, w) in values.iter_mut().zip(wide) {
            *v = u32::try_from(w).expect("a count's total fits in 32 bits");
        }
    }
}

/// One process: every collective is the identity.
#[derive(Debug, Default)]
pub struct Solo;

impl Ranks for Solo {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn all_gather(&self, mine: &[u8]) -> Vec<Vec<u8>> {
        vec![mine.to_vec()]
    }
    fn broadcast(&self, _root: usize, _data: &mut Vec<u8>) {}
    fn sum_u64(&self, _values: &mut [u64]) {}
    fn exchange(&self, send: Option<(usize, &[u8])>, receive_from: Option<usize>) -> Option<Vec<u8>> {
        assert!(send.is_none() && receive_from.is_none(), "one rank has no one to talk to");
        None
    }
    fn bytes_sent(&self) -> u64 {
        0
    }
}

/// A running count of bytes sent, for implementations to share.
#[derive(Debug, Default)]
pub struct SentBytes(AtomicU64);

impl SentBytes {
    pub fn add(&self, n: usize) {
        self.0.fetch_add(n as u64, Ordering::Relaxed);
    }
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Little-endian bytes of `u32` values, and back: the wire form of count rows.
pub fn u32s_to_bytes(values: &[u32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// See [`u32s_to_bytes`].
pub fn bytes_to_u32s(bytes: &[u8]) -> Vec<u32> {
    bytes.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().expect("four bytes"))).collect()
}

/// See [`u32s_to_bytes`].
pub fn f64s_to_bytes(values: &[f64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// See [`u32s_to_bytes`].
pub fn bytes_to_f64s(bytes: &[u8]) -> Vec<f64> {
    bytes.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().expect("eight bytes"))).collect()
}

/// Which ranks own which of `blocks` consecutive blocks: rank q owns blocks
/// `q·B/R .. (q+1)·B/R` (contiguous, sizes differing by at most one; ranks beyond the
/// block count own none).
pub fn block_range(blocks: usize, ranks: usize, rank: usize) -> std::ops::Range<usize> {
    (rank * blocks / ranks)..((rank + 1) * blocks / ranks)
}

/// The rank that owns block `b` under [`block_range`].
pub fn owner_of_block(blocks: usize, ranks: usize, b: usize) -> usize {
    (0..ranks).find(|&q| block_range(blocks, ranks, q).contains(&b)).expect("every block has an owner")
}
