//! Deterministic random streams.
//!
//! Why it exists: a fit must give the same draws whatever the thread count. Every unit of
//! parallel work (a document in an iteration, a word in a scan) gets its own generator
//! whose state is a hash of `(seed, purpose, iteration, index)`, so the order in which
//! rayon happens to schedule work cannot change any number.

use rand::SeedableRng;

/// The generator used everywhere: PCG-64 with a 128-bit multiplier (fast, small state,
/// stable output across rand versions because the algorithm is pinned by `rand_pcg`).
pub type StreamRng = rand_pcg::Pcg64Mcg;

/// What a stream is for; keeps streams of different phases of a fit disjoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u64)]
pub enum Purpose {
    Init = 1,
    Sweep = 2,
    Predict = 3,
    Synthetic = 4,
    Split = 5,
    Estimate = 6,
    /// HPC's per-word rate block.
    HpcRates = 7,
    /// HPC's per-document affinity block.
    HpcAffinities = 8,
    /// HPC's hyperparameter draws.
    HpcHyper = 9,
    /// DCNT/SCNT per-document draws (z, v, u) in a scan.
    DcntDocuments = 10,
    /// DCNT/SCNT global draws (A, η, μ, precisions).
    DcntGlobal = 11,
    /// Held-out likelihood estimators (one stream per held-out document).
    Heldout = 12,
    /// Monte Carlo topic covariance (one stream per document).
    Covariance = 13,
    /// Synthetic corpora (bars).
    SyntheticCorpus = 14,
    /// DCNT/SCNT within-document topic swaps (one stream per document and scan).
    DcntSwap = 15,
    /// Covariate effects' Monte Carlo integrals (one stream per kept draw).
    Effects = 16,
    /// DCNT/SCNT's collapsed start (one stream per document and sweep).
    DcntWarmStart = 17,
    /// Draws of documents' topic proportions from a variational posterior for effects
    /// by composition (one stream per draw and document).
    EffectDraws = 18,
    /// HDP's birth proposals: the fresh topics' starting documents (one stream per pass).
    HdpBirth = 19,
    /// An edit's start: the parent's assignments redrawn (one stream per document) and
    /// each split's restricted run (one stream per split topic).
    EditStart = 20,
    /// An update's start: the parent's documents' assignments redrawn and the new
    /// documents folded in (one stream per document).
    UpdateStart = 21,
}

/// SplitMix64 finaliser: a bijective 64-bit mixer with good avalanche.
#[inline]
pub fn mix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// The stream for one unit of work.
pub fn stream(seed: u64, purpose: Purpose, iteration: u64, index: u64) -> StreamRng {
    let a = mix64(seed ^ mix64(purpose as u64));
    let b = mix64(a ^ mix64(iteration.wrapping_add(0x51_7CC1_B727_220A)));
    let c = mix64(b ^ mix64(index.wrapping_mul(0x2545_F491_4F6C_DD1D)));
    let state = ((mix64(c) as u128) << 64) | (c as u128 | 1);
    StreamRng::from_seed(state.to_le_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngExt;

    #[test]
    fn same_key_same_stream_and_different_keys_differ() {
        let a: Vec<u64> = (0..4).map(|_| 0).scan(stream(7, Purpose::Sweep, 3, 11), |r, _| Some(r.random())).collect();
        let b: Vec<u64> = (0..4).map(|_| 0).scan(stream(7, Purpose::Sweep, 3, 11), |r, _| Some(r.random())).collect();
        assert_eq!(a, b);
        let keys = [(8, Purpose::Sweep, 3, 11), (7, Purpose::Init, 3, 11), (7, Purpose::Sweep, 4, 11), (7, Purpose::Sweep, 3, 12)];
        for (s, p, i, d) in keys {
            let mut r = stream(s, p, i, d);
            let x: u64 = r.random();
            assert_ne!(x, a[0], "stream {s} {p:?} {i} {d} collides");
        }
    }

    #[test]
    fn streams_are_roughly_uniform() {
        // Mean of 10 000 uniforms from consecutive indices: sd = sqrt(1/12/10000) ≈ 0.0029;
        // a 5-sd band is 0.0144.
        let n = 10_000;
        let mean: f64 = (0..n).map(|i| stream(1, Purpose::Sweep, 0, i).random::<f64>()).sum::<f64>() / n as f64;
        assert!((mean - 0.5).abs() < 0.0144, "mean {mean}");
    }
}
