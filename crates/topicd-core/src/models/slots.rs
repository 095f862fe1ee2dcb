//! A derived model's topic slots: which of them a fit runs on, and where a fitted topic
//! goes back.
//!
//! Why it exists: an edit retires topics (merged away, deleted) but keeps every id, and
//! later fits of the child (an update with new documents) keep them retired. A family
//! whose fit would bring a retired topic back to life or give it a share of a prior
//! (PCM's affinities, HDP's sticks) fits the *live* topics alone: compact topic i is
//! child topic `live()[i]`, and topics the fit adds beyond them (HDP's births) take ids
//! after the child's last ([`Slots::child_of`]). The family then writes its fitted model
//! back into the child's slots, its own way (`hpc::retired`, `hdp::retired`).

use super::chains::Alignment;

/// The child's topics and which of them a fit runs on.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Slots {
    /// The child ids of the live topics, in order.
    live: Vec<usize>,
    /// The child's topics, retired ones included.
    total: usize,
}

impl Slots {
    /// `total` topics of which `retired` hold nothing.
    pub fn retiring(retired: &[usize], total: usize) -> Self {
        Slots { live: (0..total).filter(|k| !retired.contains(k)).collect(), total }
    }

    /// The child ids of the live topics, in order (compact topic i is `live()[i]`).
    pub fn live(&self) -> &[usize] {
        &self.live
    }

    /// The child's topics, retired ones included.
    pub fn total(&self) -> usize {
        self.total
    }

    /// Whether no topic is retired (the fit's model is the child's as it is).
    pub fn all_live(&self) -> bool {
        self.live.len() == self.total
    }

    /// The child id of compact topic `i`: a live topic's slot, or for a topic the fit
    /// added beyond the live ones, the next id after the child's last.
    pub fn child_of(&self, i: usize) -> usize {
        self.live.get(i).copied().unwrap_or(self.total + i - self.live.len())
    }

    /// The compact index of child topic `child`: `None` for a retired one and past the
    /// child's last.
    pub fn compact_of(&self, child: usize) -> Option<usize> {
        self.live.binary_search(&child).ok()
    }

    /// Slots of `total + added` topics: these with `added` live topics after the last.
    pub fn with_added(&self, added: usize) -> Slots {
        let mut live = self.live.clone();
        live.extend(self.total..self.total + added);
        Slots { live, total: self.total + added }
    }

    /// Whether these slots can hold a fit of `fitted` topics: live ids strictly
    /// increasing, below the total, one per fitted topic (what a decoder checks of
    /// stored slots); the error says what is wrong.
    pub fn check(&self, fitted: usize) -> Result<(), String> {
        if self.live.len() != fitted {
            return Err(format!("{} live slots for {fitted} fitted topics", self.live.len()));
        }
        if self.live.windows(2).any(|w| w[0] >= w[1]) || self.live.last().is_some_and(|&k| k >= self.total) {
            return Err(format!("live slots {:?} are not increasing ids below {}", self.live, self.total));
        }
        Ok(())
    }

    /// A later chain's alignment onto chain 0 (compact ids) in the child's ids; a retired
    /// slot is matched to itself at distance 0 (every chain leaves it empty).
    pub fn spread_alignment(&self, a: &Alignment) -> Alignment {
        let mut permutation: Vec<usize> = (0..self.total).collect();
        for (i, &slot) in self.live.iter().enumerate() {
            permutation[slot] = self.live[a.permutation[i]];
        }
        Alignment { permutation, distances: self.spread(&a.distances, 0.0) }
    }

    /// Per-topic values of `compact` (the live topics, then any the fit added) in the
    /// child's slots, `retired` in the retired ones.
    pub fn spread<T: Copy>(&self, compact: &[T], retired: T) -> Vec<T> {
        let added = compact.len().saturating_sub(self.live.len());
        let mut out = vec![retired; self.total + added];
        for (i, &x) in compact.iter().enumerate() {
            out[self.child_of(i)] = x;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_topics_go_back_to_their_slots_and_added_ones_after_the_last() {
        let slots = Slots::retiring(&[1, 3], 5);
        assert_eq!(slots.live(), &[0, 2, 4]);
        assert!(!slots.all_live());
        assert_eq!((0..5).map(|i| slots.child_of(i)).collect::<Vec<_>>(), vec![0, 2, 4, 5, 6]);
        assert_eq!(slots.spread(&[10, 12, 14], 0), vec![10, 0, 12, 0, 14]);
        assert_eq!(slots.spread(&[10, 12, 14, 15], 0), vec![10, 0, 12, 0, 14, 15]);
        assert!(Slots::retiring(&[], 3).all_live());
        assert_eq!((0..7).map(|k| slots.compact_of(k)).collect::<Vec<_>>(), vec![Some(0), None, Some(1), None, Some(2), None, None]);
        assert!(slots.check(3).is_ok() && slots.check(2).is_err());
        assert!(Slots { live: vec![2, 0], total: 3 }.check(2).is_err() && Slots { live: vec![0, 3], total: 3 }.check(2).is_err());
        let a = Alignment { permutation: vec![2, 0, 1], distances: vec![0.1, 0.2, 0.3] };
        let spread = slots.spread_alignment(&a);
        assert_eq!((spread.permutation, spread.distances), (vec![4, 1, 0, 3, 2], vec![0.1, 0.0, 0.2, 0.0, 0.3]));
        let grown = slots.with_added(2);
        assert_eq!((grown.live(), grown.total()), (&[0, 2, 4, 5, 6][..], 7));
    }
}
