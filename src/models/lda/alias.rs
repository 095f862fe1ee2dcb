//! Walker/Vose alias tables: O(1) draws from a fixed discrete distribution.
//!
//! Why it exists: the LDA word proposal draws from a per-word distribution over topics
//! built once per sweep; an alias table makes each draw two array reads.

/// An alias table over `outcomes` (arbitrary `u32` ids) with given non-negative weights.
#[derive(Debug, Clone, Default)]
pub struct AliasTable {
    outcomes: Vec<u32>,
    aliases: Vec<u32>,
    /// Probability of keeping column i's own outcome.
    keep: Vec<f32>,
    total: f64,
}

impl AliasTable {
    /// Build from `(outcome, weight)` pairs. Zero total weight gives an empty table.
    pub fn new(items: impl IntoIterator<Item = (u32, f64)>) -> Self {
        let (outcomes, weights): (Vec<u32>, Vec<f64>) = items.into_iter().unzip();
        let n = outcomes.len();
        let total: f64 = weights.iter().sum();
        if n == 0 || total <= 0.0 {
            return AliasTable::default();
        }
        let mut scaled: Vec<f64> = weights.iter().map(|w| w * n as f64 / total).collect();
        let mut keep = vec![1.0f32; n];
        let mut aliases: Vec<u32> = (0..n as u32).collect();
        let (mut small, mut large): (Vec<usize>, Vec<usize>) = (0..n).partition(|&i| scaled[i] < 1.0);
        while let (Some(s), Some(&l)) = (small.pop(), large.last()) {
            keep[s] = scaled[s] as f32;
            aliases[s] = l as u32;
            scaled[l] -= 1.0 - scaled[s];
            if scaled[l] < 1.0 {
                large.pop();
                small.push(l);
            }
        }
        // Leftovers (rounding) keep their own outcome with probability 1.
        let aliases = aliases.into_iter().map(|a| outcomes[a as usize]).collect();
        AliasTable { outcomes, aliases, keep, total }
    }

    /// Sum of the weights the table was built from.
    pub fn total(&self) -> f64 {
        self.total
    }

    pub fn is_empty(&self) -> bool {
        self.outcomes.is_empty()
    }

    /// Draw an outcome from one uniform `u` in [0, 1).
    #[inline]
    pub fn sample(&self, u: f64) -> u32 {
        let n = self.outcomes.len();
        let x = u * n as f64;
        let i = (x as usize).min(n - 1);
        let frac = (x - i as f64) as f32;
        if frac < self.keep[i] {
            self.outcomes[i]
        } else {
            self.aliases[i]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{stream, Purpose};
    use rand::RngExt;

    #[test]
    fn draws_match_weights() {
        // 200 000 draws; each frequency's sd is sqrt(p(1-p)/n) <= 0.0011, so 5 sd = 0.0056.
        let weights = [(3u32, 0.1), (7, 0.0), (9, 0.5), (11, 0.25), (20, 0.15)];
        let t = AliasTable::new(weights);
        assert!((t.total() - 1.0).abs() < 1e-12);
        let mut rng = stream(3, Purpose::Estimate, 0, 0);
        let n = 200_000;
        let mut hist = std::collections::HashMap::new();
        for _ in 0..n {
            *hist.entry(t.sample(rng.random())).or_insert(0usize) += 1;
        }
        for (o, w) in weights {
            let f = *hist.get(&o).unwrap_or(&0) as f64 / n as f64;
            assert!((f - w).abs() < 0.0056, "outcome {o}: {f} vs {w}");
        }
    }

    #[test]
    fn empty_when_no_mass() {
        assert!(AliasTable::new([(1u32, 0.0)]).is_empty());
        assert!(AliasTable::new(std::iter::empty()).is_empty());
    }
}
