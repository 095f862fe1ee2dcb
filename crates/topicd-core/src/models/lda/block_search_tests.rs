//! Checks of the block search: the three instruction sets agree bit for bit, scans are
//! prefix sums, and draws follow the cumulative weights.

use super::*;

/// Weights of every magnitude the kernel meets, and +0 in the upper lanes of every
/// fourth block (as past K).
fn sample_blocks() -> Vec<Block> {
    let mut x = 0x9e37_79b9u32;
    (0..64)
        .map(|n| {
            std::array::from_fn(|i| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                if n % 4 == 3 && i >= 9 {
                    0.0
                } else {
                    (x as f32 / u32::MAX as f32) * 10f32.powi((x % 9) as i32 - 6)
                }
            })
        })
        .collect()
}

/// Every operation of one instruction set on every sample block, as bit patterns
/// and counts, to compare between instruction sets.
///
/// # Safety
/// `O`'s instruction set must be available.
unsafe fn results<O: BlockOps>() -> Vec<Vec<u32>> {
    let blocks = sample_blocks();
    let mut scans = [[0.0; WIDTH]; MAX_BLOCKS];
    let mut out = Vec::new();
    for (n, x) in blocks.iter().enumerate() {
        let bits = |b: Block| b.map(f32::to_bits).to_vec();
        let d: [u32; WIDTH] = std::array::from_fn(|i| (x[i] * 1e3) as u32 % 700);
        let r: [u32; WIDTH] = std::array::from_fn(|i| (x[i] * 1e5) as u32 % 90_000);
        let mut inv = *x;
        inv[n % WIDTH..].fill(0.0);
        // SAFETY (all calls): forwarded from the caller.
        unsafe {
            let scan = O::scan(x);
            scans[n % MAX_BLOCKS] = scan;
            out.push(bits(scan));
            let alpha: Block = std::array::from_fn(|i| 0.5 / (1 + (i + n) % 7) as f32);
            out.push(bits(O::weights(&d, &r, x, &alpha, 0.01)));
            out.push(bits(O::weights_partial(&d, &r[..n % WIDTH], &inv, &alpha, 0.01)));
            let mut stored = [0.0; WIDTH];
            let mut totals = blocks[(n + 5) % blocks.len()];
            totals[n % WIDTH] = 0.0;
            out.push(bits(O::scan_block(x, &mut stored, &totals, n % WIDTH)));
            out.push(bits(stored));
            out.push(bits(O::add_from(&scan, n % WIDTH, -1e-3)));
            out.push(bits(O::add_two_from(&scan, n % WIDTH, -1e-3, (n * 7) % WIDTH, 2e-3)));
            let ends = O::scan(&blocks[(n + 1) % blocks.len()]);
            for unit in [0.0, 0.3, 0.77, 1.0 - f32::EPSILON] {
                let (b, i) = O::locate(&ends, &scans, 1 + n % MAX_BLOCKS, unit);
                out.push(vec![b as u32, i as u32]);
                out.push(vec![O::locate_one(&scan, unit) as u32]);
            }
        }
    }
    out
}

/// Every instruction set computes the same floats and the same draws.
#[test]
fn instruction_sets_agree_bit_for_bit() {
    // SAFETY: the portable operations need nothing.
    let portable = unsafe { results::<Portable>() };
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("popcnt") {
            // SAFETY: AVX2 is present.
            assert!(unsafe { results::<Avx2>() } == portable, "AVX2 differs from portable");
        }
        if std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("popcnt") {
            // SAFETY: AVX-512F is present.
            assert!(unsafe { results::<Avx512>() } == portable, "AVX-512 differs from portable");
        }
    }
}

/// The scan is a prefix sum (to single-precision rounding), and the partial weights
/// are +0 past the lanes read.
#[test]
fn scans_are_prefix_sums_and_padding_weighs_nothing() {
    for x in sample_blocks() {
        // SAFETY: the portable operations need nothing.
        let scan = unsafe { Portable::scan(&x) };
        let sequential: Vec<f64> = x
            .iter()
            .scan(0.0f64, |s, &v| {
                *s += v as f64;
                Some(*s)
            })
            .collect();
        for (s, e) in scan.iter().zip(&sequential) {
            assert!((*s as f64 - e).abs() <= 1e-6 * e.abs(), "{scan:?} vs {sequential:?}");
        }
    }
    let mut inv = [0.5f32; WIDTH];
    inv[5..].fill(0.0);
    let w = unsafe { Portable::weights_partial(&[3; WIDTH], &[7; 5], &inv, &[0.5; WIDTH], 0.01) };
    assert!(w[..5].iter().all(|&v| v == weight(3, 7, 0.5, 0.5, 0.01)));
    assert!(w[5..].iter().all(|&v| v.to_bits() == 0));
}

/// With K = 37 (three blocks, the last partial), every u lands on the topic whose
/// cumulative interval holds it, against a sequential sum in double precision, and
/// so it does after weights are changed by differences.
#[test]
fn draws_follow_the_cumulative_weights() {
    let k = 37;
    let mut row: Vec<u32> = (0..k as u32).map(|t| (t * 7919) % 13).collect();
    let mut doc: Vec<u32> = (0..padded(k) as u32).map(|t| if (t as usize) < k { (t * 104_729) % 5 } else { 0 }).collect();
    let inv: Vec<f32> = (0..padded(k)).map(|t| if t < k { 1.0 / (100.0 + t as f32) } else { 0.0 }).collect();
    // An asymmetric α, as after optimisation.
    let alpha: Vec<f32> = (0..padded(k)).map(|t| if t < k { 0.05 + 0.2 * (t % 5) as f32 } else { 0.0 }).collect();
    let mut search = BlockSearch::new(k);
    // SAFETY: the portable operations need nothing.
    unsafe { search.fill::<Portable>(&row, &doc, &inv, &alpha, 0.05) };
    let check = |search: &BlockSearch, row: &[u32], doc: &[u32]| {
        let w: Vec<f64> = (0..k).map(|t| weight(doc[t], row[t], inv[t], alpha[t], 0.05) as f64).collect();
        let total: f64 = w.iter().sum();
        let mut upper = 0.0;
        for (t, &wt) in w.iter().enumerate() {
            let lower = upper;
            upper += wt;
            // Points well inside topic t's interval (away from rounding at its ends).
            for frac in [0.02, 0.5, 0.98] {
                let unit = ((lower + frac * wt) / total) as f32;
                let drawn = unsafe { search.draw::<Portable>(unit, k) };
                assert_eq!(drawn, t, "unit {unit}: interval [{lower}, {upper}) of {total}");
            }
        }
        // The top of the range stays below K.
        assert_eq!(unsafe { search.draw::<Portable>(1.0 - f32::EPSILON / 2.0, k) }, k - 1);
    };
    check(&search, &row, &doc);
    // Move counts of topics 3 (block 0) and 35 (block 2), then of 3 and 9 (both in
    // block 0), and change their weights by the differences.
    for pair in [[(3usize, 2u32, 5u32), (35, 1, 9)], [(3, 1, 1), (9, 4, 2)]] {
        let deltas = pair.map(|(t, dd, dr)| {
            let before = weight(doc[t], row[t], inv[t], alpha[t], 0.05);
            doc[t] += dd;
            row[t] += dr;
            weight(doc[t], row[t], inv[t], alpha[t], 0.05) - before
        });
        unsafe { search.change_two_weights::<Portable>(pair[0].0, deltas[0], pair[1].0, deltas[1]) };
        check(&search, &row, &doc);
    }
}

/// Up to two blocks of topics the `_sized` search keeps no block ends' vector (one
/// block: none; two: two scalar ends); its draws are still the general search's, bit for
/// bit: after a fill and after rounds of weights changed by differences (in one block and
/// across two), at K = 4 and 11 (a partial block), 16 (a whole one), 17 and 20 (a partial
/// second block) and 32, for every instruction set the processor has. The general
/// search is driven through the same fills and changes beside it.
#[test]
fn sized_draws_are_the_general_searchs() {
    unsafe fn check_sized<O: BlockOps, const BLOCKS: usize>(k: usize) {
        let mut row: Vec<u32> = (0..k as u32).map(|t| (t * 7919) % 13).collect();
        let doc: Vec<u32> = (0..padded(k) as u32).map(|t| if (t as usize) < k { (t * 104_729) % 5 } else { 0 }).collect();
        let inv: Vec<f32> = (0..padded(k)).map(|t| if t < k { 1.0 / (100.0 + t as f32) } else { 0.0 }).collect();
        let alpha: Vec<f32> = (0..padded(k)).map(|t| if t < k { 0.05 + 0.2 * (t % 5) as f32 } else { 0.0 }).collect();
        let (mut sized, mut general) = (BlockSearch::new(k), BlockSearch::new(k));
        // SAFETY (this function): forwarded from the caller.
        unsafe {
            sized.fill_sized::<O, BLOCKS>(&row, &doc, &inv, &alpha, 0.05);
            general.fill::<O>(&row, &doc, &inv, &alpha, 0.05);
        }
        let units: Vec<f32> = (0..=1000).map(|i| i as f32 / 1000.0 * (1.0 - f32::EPSILON)).collect();
        for round in 0..8 {
            for &unit in &units {
                let expected = unsafe { general.draw::<O>(unit, k) };
                assert_eq!(unsafe { sized.draw_sized::<O, BLOCKS>(unit, k) }, expected, "K = {k}, round {round}, unit {unit}");
            }
            // Topics in the same block and, with two blocks, across them.
            let (t1, t2) = ((k - 1 + round * 7) % k, (round * 5 + 2) % k);
            if t1 != t2 {
                let before = [t1, t2].map(|t| weight(doc[t], row[t], inv[t], alpha[t], 0.05));
                row[t1] += 3;
                row[t2] -= row[t2].min(1);
                let after = [t1, t2].map(|t| weight(doc[t], row[t], inv[t], alpha[t], 0.05));
                let (d1, d2) = (after[0] - before[0], after[1] - before[1]);
                unsafe {
                    sized.change_two_weights_sized::<O, BLOCKS>(t1, d1, t2, d2);
                    general.change_two_weights::<O>(t1, d1, t2, d2);
                }
            }
        }
    }
    unsafe fn check<O: BlockOps>(k: usize) {
        // SAFETY (both calls): forwarded from the caller.
        match k.div_ceil(WIDTH) {
            1 => unsafe { check_sized::<O, 1>(k) },
            _ => unsafe { check_sized::<O, 2>(k) },
        }
    }
    for k in [4, 11, 16, 17, 20, 32] {
        // SAFETY: the portable operations need nothing.
        unsafe { check::<Portable>(k) };
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("popcnt") {
                // SAFETY: AVX2 is present.
                unsafe { check::<Avx2>(k) };
            }
            if std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("popcnt") {
                // SAFETY: AVX-512F is present.
                unsafe { check::<Avx512>(k) };
            }
        }
    }
}
