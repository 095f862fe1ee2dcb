//! R ranks as threads of one process, for tests of distributed fits without `mpirun`.
//!
//! Why it exists: the property a distributed fit promises (its bytes equal the
//! single-process fit's for every R) is a property of the numerics, which should be
//! tested where they live, quickly and at every R, not only under Open MPI. Each rank is
//! a thread with its own [`ThreadRanks`]; messages go through one first-in-first-out
//! mailbox per ordered pair of ranks, which is all the ordering the collectives need
//! because every rank calls them in the same sequence.

use super::{Ranks, SentBytes};
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};

/// The mailboxes shared by the ranks of one world.
struct Hub {
    size: usize,
    /// `boxes[from * size + to]`.
    boxes: Mutex<Vec<VecDeque<Vec<u8>>>>,
    arrived: Condvar,
}

/// One rank of a world of threads.
pub struct ThreadRanks {
    rank: usize,
    hub: Arc<Hub>,
    sent: SentBytes,
}

impl ThreadRanks {
    /// A world of `size` ranks, one handle per rank (move each to its own thread).
    pub fn world(size: usize) -> Vec<ThreadRanks> {
        assert!(size >= 1, "a world has at least one rank");
        let hub = Arc::new(Hub { size, boxes: Mutex::new(vec![VecDeque::new(); size * size]), arrived: Condvar::new() });
        (0..size).map(|rank| ThreadRanks { rank, hub: hub.clone(), sent: SentBytes::default() }).collect()
    }

    /// Run `body` on every rank of a world of `size` threads; the ranks' results in rank
    /// order.
    pub fn run<T: Send>(size: usize, body: impl Fn(&ThreadRanks) -> T + Sync) -> Vec<T> {
        let world = Self::world(size);
        std::thread::scope(|s| {
            let handles: Vec<_> = world.iter().map(|r| s.spawn(|| body(r))).collect();
            handles.into_iter().map(|h| h.join().expect("a rank panicked")).collect()
        })
    }

    fn send(&self, to: usize, data: &[u8]) {
        assert!(to < self.hub.size && to != self.rank, "rank {} sends to rank {to}", self.rank);
        self.sent.add(data.len());
        let mut boxes = self.hub.boxes.lock().expect("mailbox lock");
        boxes[self.rank * self.hub.size + to].push_back(data.to_vec());
        self.hub.arrived.notify_all();
    }

    fn receive(&self, from: usize) -> Vec<u8> {
        assert!(from < self.hub.size && from != self.rank, "rank {} receives from rank {from}", self.rank);
        let at = from * self.hub.size + self.rank;
        let mut boxes = self.hub.boxes.lock().expect("mailbox lock");
        loop {
            if let Some(message) = boxes[at].pop_front() {
                return message;
            }
            boxes = self.hub.arrived.wait(boxes).expect("mailbox lock");
        }
    }
}

impl Ranks for ThreadRanks {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.hub.size
    }

    fn all_gather(&self, mine: &[u8]) -> Vec<Vec<u8>> {
        for to in (0..self.size()).filter(|&q| q != self.rank) {
            self.send(to, mine);
        }
        (0..self.size()).map(|from| if from == self.rank { mine.to_vec() } else { self.receive(from) }).collect()
    }

    fn broadcast(&self, root: usize, data: &mut Vec<u8>) {
        if self.rank == root {
            for to in (0..self.size()).filter(|&q| q != root) {
                self.send(to, data);
            }
        } else {
            *data = self.receive(root);
        }
    }

    fn sum_u64(&self, values: &mut [u64]) {
        let mine: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let all = self.all_gather(&mine);
        values.fill(0);
        for bytes in all {
            for (v, c) in values.iter_mut().zip(bytes.chunks_exact(8)) {
                *v = v.wrapping_add(u64::from_le_bytes(c.try_into().expect("eight bytes")));
            }
        }
    }

    fn exchange(&self, send: Option<(usize, &[u8])>, receive_from: Option<usize>) -> Option<Vec<u8>> {
        if let Some((to, data)) = send {
            self.send(to, data);
        }
        receive_from.map(|from| self.receive(from))
    }

    fn bytes_sent(&self) -> u64 {
        self.sent.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The collectives agree with their definitions at several world sizes, and a fold
    /// in rank order is the sequential sum.
    #[test]
    fn collectives_do_what_they_say() {
        for size in 1..=4 {
            let results = ThreadRanks::run(size, |r| {
                let gathered = r.all_gather(&[r.rank() as u8; 3]);
                let mut counts = vec![r.rank() as u64, 1];
                r.sum_u64(&mut counts);
                let mut root_data = if r.rank() == 0 { vec![7, 8] } else { Vec::new() };
                r.broadcast(0, &mut root_data);
                let values: Vec<f64> = (0..4).map(|i| 0.1 * (r.rank() * 4 + i) as f64).collect();
                let folded = r.fold_in_rank_order(0.0, &|s| values.iter().fold(s, |a, &b| a + b));
                (gathered, counts, root_data, folded)
            });
            let sequential = (0..size * 4).map(|i| 0.1 * i as f64).fold(0.0, |a, b| a + b);
            for (gathered, counts, root_data, folded) in results {
                assert_eq!(gathered, (0..size).map(|q| vec![q as u8; 3]).collect::<Vec<_>>());
                assert_eq!(counts, vec![(0..size as u64).sum(), size as u64]);
                assert_eq!(root_data, vec![7, 8]);
                assert_eq!(folded.to_bits(), sequential.to_bits());
            }
        }
    }

    /// A ring of exchanges (each rank sends right and receives from the left) does not
    /// deadlock and delivers each message to its neighbour.
    #[test]
    fn a_ring_of_exchanges_delivers() {
        let results = ThreadRanks::run(4, |r| {
            let (right, left) = ((r.rank() + 1) % 4, (r.rank() + 3) % 4);
            r.exchange(Some((right, &[r.rank() as u8])), Some(left)).expect("a message")
        });
        assert_eq!(results, vec![vec![3], vec![0], vec![1], vec![2]]);
    }
}
