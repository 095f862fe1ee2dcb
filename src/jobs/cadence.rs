//! When a running fit may hand the runner its next checkpoint.
//!
//! Why it exists: the fit encodes a checkpoint on its own thread and the runner stores
//! it asynchronously, so nothing stopped a fit from handing over a new checkpoint every
//! interval however long the last one took to store. A state of gigabytes that takes
//! longer to store than the interval then queued whole copies of the state in memory
//! and kept the disk writing without pause. The cadence says "not yet" while a store is
//! in progress, and for one interval after it ended.

use std::sync::Mutex;
use std::time::{Duration, Instant};

pub(crate) struct Cadence {
    every: Duration,
    state: Mutex<State>,
}

struct State {
    storing: bool,
    /// When the last store ended (or the cadence began).
    stored_at: Instant,
}

impl Cadence {
    /// A cadence of one checkpoint per `every` at most, counted from the end of the last
    /// store (and from now).
    pub(crate) fn new(every: Duration) -> Self {
        Cadence { every, state: Mutex::new(State { storing: false, stored_at: Instant::now() }) }
    }

    /// Whether the fit may hand over a checkpoint.
    pub(crate) fn ready(&self) -> bool {
        let s = self.state.lock().expect("cadence lock");
        !s.storing && s.stored_at.elapsed() >= self.every
    }

    /// A checkpoint was handed over: no other until it is stored.
    pub(crate) fn handed_over(&self) {
        self.state.lock().expect("cadence lock").storing = true;
    }

    /// The runner finished storing it (or gave up on it).
    pub(crate) fn stored(&self) {
        let mut s = self.state.lock().expect("cadence lock");
        s.storing = false;
        s.stored_at = Instant::now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_ready_while_storing_nor_within_an_interval_after() {
        let c = Cadence::new(Duration::ZERO);
        assert!(c.ready());
        c.handed_over();
        assert!(!c.ready(), "a store in progress");
        c.stored();
        assert!(c.ready(), "an interval of zero has passed");

        let c = Cadence::new(Duration::from_secs(3600));
        assert!(!c.ready(), "the interval counts from the start");
        c.handed_over();
        c.stored();
        assert!(!c.ready(), "and from the end of the last store");
    }
}
