//! Synthetic corpora with known topics: the "bars" images of Kim & Sudderth (2011, §4.1).
//!
//! Why it exists: a topic model is checked by recovering topics it did not see. The
//! bars corpus has 5 × 5 pixels as words (`p00` … `p44`, row then column) and ten
//! topics, the five horizontal and five vertical bars, each uniform over its five
//! pixels. Every document is an "image" of a few bars:
//!
//! - [`BarsVariant::Random`]: a random number m ~ Uniform{1, …, `max_bars`} of bars,
//!   chosen uniformly among all ten (the paper: "a random number of topics is chosen
//!   for each document, and then a corresponding subset of the bars is picked
//!   uniformly");
//! - [`BarsVariant::Correlated`]: an orientation by a fair coin, then
//!   m ~ Uniform{1, …, `max_bars`} bars of that orientation only (so horizontal bars
//!   co-occur with each other and never with vertical ones).
//!
//! The paper does not give the range of m; the default `max_bars` is 3. (With up to 5
//! bars of one orientation, many documents cover the whole image and say little about
//! single bars: at 500 documents of 100 tokens even LDA then kept two bars merged in
//! one topic after 300 sweeps.)
//!
//! The paper does not say how a document's tokens are shared among its bars; here the
//! shares are θ ~ Dirichlet(1, …, 1) over the chosen bars (the Griffiths & Steyvers
//! bars convention), and each token draws a bar from θ and a pixel uniformly from it.
//! Each document draws from its own stream `(seed, SyntheticCorpus, 0, d)`.
//!
//! True correlations of the correlated variant, in closed form (the bars test compares
//! a fitted model's with them). Let θ_b be a document's share of bar b (0 when absent)
//! and H = E[Σ_b θ_b²] (Dirichlet(1) over m bars: 2/(m + 1); equal shares: 1/m). Each
//! bar is in the chosen orientation half the time, so E θ_b = 1/10 and
//! Var θ_b = H/10 − 1/100. The shares of one orientation sum to the indicator of that
//! orientation (variance 1/4) and the two sums never overlap, so the covariance of two
//! bars is −1/100 across orientations and (1/4 − 5 Var θ_b)/20 within one. Hence
//! corr across = −1/(100 Var θ_b) and corr within = (1/4 − 5 Var θ_b)/(20 Var θ_b),
//! positive only when H < 0.6. With m ~ Uniform{1, …, 3} and Dirichlet(1) shares (the
//! default), H ≈ 0.722: within ≈ −0.049, across ≈ −0.161; with up to 5 bars,
//! H = 0.58: within ≈ +0.010, across ≈ −0.208; equal shares and up to 5 bars would give
//! H ≈ 0.457: within ≈ +0.100, across ≈ −0.280. The paper fixes neither m's range nor
//! the shares, so the sign within an orientation is not the paper's to give.

use super::preprocess::PreprocessOptions;
use super::{Corpus, CorpusStats, DocTermMatrix, LabelTree, Lexicon};
use crate::rng::{stream, Purpose};
use rand::RngExt;
use rand_distr::{Distribution, Gamma};

/// Pixels per side of the image.
pub const SIDE: usize = 5;
/// Number of words (pixels).
pub const NUM_PIXELS: usize = SIDE * SIDE;
/// Number of true topics (bars).
pub const NUM_BARS: usize = 2 * SIDE;

/// Which bars a document may combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BarsVariant {
    Random,
    Correlated,
}

impl BarsVariant {
    /// Parse the wire name (`"random"` or `"correlated"`).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "random" => Some(BarsVariant::Random),
            "correlated" => Some(BarsVariant::Correlated),
            _ => None,
        }
    }
}

/// A bar's orientation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Orientation {
    Horizontal,
    Vertical,
}

/// Settings of a bars corpus (defaults: the paper's 1 500 documents of 300 tokens).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BarsConfig {
    pub variant: BarsVariant,
    pub documents: usize,
    pub tokens: usize,
    /// Largest number of bars in one document (1 to 5).
    pub max_bars: usize,
    pub seed: u64,
}

impl Default for BarsConfig {
    fn default() -> Self {
        BarsConfig { variant: BarsVariant::Random, documents: 1_500, tokens: 300, max_bars: 3, seed: 0 }
    }
}

/// A generated bars corpus with its truth.
#[derive(Debug, Clone, PartialEq)]
pub struct BarsCorpus {
    /// Each document's sorted `(pixel, count)` pairs with count > 0.
    pub rows: Vec<Vec<(u32, u32)>>,
    /// Word names, `p{row}{column}`, pixel id = row · 5 + column.
    pub words: Vec<String>,
    /// True topics, 10 × 25 row-major: bars 0–4 horizontal (row r), 5–9 vertical
    /// (column c), each 1/5 on its pixels.
    pub topics: Vec<f64>,
    /// Orientation of each bar.
    pub orientations: Vec<Orientation>,
    /// Each document's bars and their token shares θ.
    pub doc_bars: Vec<Vec<(usize, f64)>>,
}

/// Correlation matrix (10 × 10, row-major) of the bars' token shares θ over the given
/// documents' `doc_bars` (population moments; a bar that never varies gets NaN).
pub fn share_correlation(doc_bars: &[Vec<(usize, f64)>]) -> Vec<f64> {
    let n = doc_bars.len() as f64;
    let theta: Vec<[f64; NUM_BARS]> = doc_bars
        .iter()
        .map(|bars| {
            let mut t = [0.0; NUM_BARS];
            bars.iter().for_each(|&(b, share)| t[b] = share);
            t
        })
        .collect();
    let mean: Vec<f64> = (0..NUM_BARS).map(|b| theta.iter().map(|t| t[b]).sum::<f64>() / n).collect();
    let cov = |a: usize, b: usize| theta.iter().map(|t| (t[a] - mean[a]) * (t[b] - mean[b])).sum::<f64>() / n;
    let mut out = vec![0.0; NUM_BARS * NUM_BARS];
    for a in 0..NUM_BARS {
        for b in 0..NUM_BARS {
            out[a * NUM_BARS + b] = cov(a, b) / (cov(a, a) * cov(b, b)).sqrt();
        }
    }
    out
}

/// The pixels of bar `b` (0–4: row b; 5–9: column b − 5).
pub fn bar_pixels(b: usize) -> [usize; SIDE] {
    assert!(b < NUM_BARS, "bar {b} out of range");
    std::array::from_fn(|i| if b < SIDE { b * SIDE + i } else { i * SIDE + (b - SIDE) })
}

/// Generate a bars corpus. Panics only on zero documents or tokens or `max_bars`
/// outside 1..=5 (the caller validates user input).
pub fn bars(config: &BarsConfig) -> BarsCorpus {
    assert!(config.documents > 0 && config.tokens > 0, "bars need documents and tokens");
    assert!((1..=SIDE).contains(&config.max_bars), "1 to 5 bars per document");
    let words = (0..NUM_PIXELS).map(|p| format!("p{}{}", p / SIDE, p % SIDE)).collect();
    let mut topics = vec![0.0; NUM_BARS * NUM_PIXELS];
    for b in 0..NUM_BARS {
        for p in bar_pixels(b) {
            topics[b * NUM_PIXELS + p] = 1.0 / SIDE as f64;
        }
    }
    let orientations = (0..NUM_BARS).map(|b| if b < SIDE { Orientation::Horizontal } else { Orientation::Vertical }).collect();
    let unit_gamma = Gamma::new(1.0, 1.0).expect("valid Gamma");
    let (mut rows, mut doc_bars) = (Vec::with_capacity(config.documents), Vec::with_capacity(config.documents));
    for d in 0..config.documents {
        let mut rng = stream(config.seed, Purpose::SyntheticCorpus, 0, d as u64);
        let m = rng.random_range(1..=config.max_bars);
        let pool: Vec<usize> = match config.variant {
            BarsVariant::Random => (0..NUM_BARS).collect(),
            BarsVariant::Correlated => {
                let offset = if rng.random::<bool>() { 0 } else { SIDE };
                (offset..offset + SIDE).collect()
            }
        };
        let chosen = choose(&pool, m, &mut rng);
        let gammas: Vec<f64> = chosen.iter().map(|_| unit_gamma.sample(&mut rng)).collect();
        let total: f64 = gammas.iter().sum();
        let shares: Vec<(usize, f64)> = chosen.iter().zip(&gammas).map(|(&b, &g)| (b, g / total)).collect();
        let mut counts = [0u32; NUM_PIXELS];
        for _ in 0..config.tokens {
            let u: f64 = rng.random();
            let mut acc = 0.0;
            let mut bar = shares[shares.len() - 1].0;
            for &(b, s) in &shares {
                acc += s;
                if u < acc {
                    bar = b;
                    break;
                }
            }
            counts[bar_pixels(bar)[rng.random_range(0..SIDE)]] += 1;
        }
        rows.push(counts.iter().enumerate().filter(|(_, &c)| c > 0).map(|(p, &c)| (p as u32, c)).collect());
        doc_bars.push(shares);
    }
    BarsCorpus { rows, words, topics, orientations, doc_bars }
}

/// `m` distinct elements of `pool` chosen uniformly (partial Fisher–Yates), in pool order.
fn choose<R: rand::Rng + ?Sized>(pool: &[usize], m: usize, rng: &mut R) -> Vec<usize> {
    let mut items = pool.to_vec();
    for i in 0..m {
        let j = rng.random_range(i..items.len());
        items.swap(i, j);
    }
    let mut out = items[..m].to_vec();
    out.sort_unstable();
    out
}

impl BarsCorpus {
    /// The corpus as models read it (no labels, no features, no splits; document ids
    /// are the 0-based indices).
    pub fn to_corpus(&self) -> Corpus {
        let counts = DocTermMatrix::from_rows(self.rows.clone());
        let stats = CorpusStats {
            num_documents: self.rows.len(),
            num_terms: self.words.len(),
            num_tokens: counts.total_tokens(),
            num_types_before_pruning: self.words.len(),
            ..CorpusStats::default()
        };
        Corpus {
            lexicon: Lexicon::new(self.words.clone(), PreprocessOptions::default()),
            counts,
            doc_ids: (0..self.rows.len()).map(|d| d.to_string()).collect(),
            labels: LabelTree::default(),
            doc_labels: vec![Vec::new(); self.rows.len()],
            features: None,
            splits: None,
            stats,
            token_order: None,
            doc_meta: None,
            doc_excerpts: None,
            covariates: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topics_are_the_ten_bars() {
        let c = bars(&BarsConfig { documents: 3, tokens: 10, ..BarsConfig::default() });
        assert_eq!(c.words[7], "p12");
        for b in 0..NUM_BARS {
            let row = &c.topics[b * NUM_PIXELS..(b + 1) * NUM_PIXELS];
            assert!((row.iter().sum::<f64>() - 1.0).abs() < 1e-12);
            assert_eq!(row.iter().filter(|&&x| x > 0.0).count(), SIDE);
        }
        // Horizontal bar 1 is row 1; vertical bar 7 is column 2.
        assert_eq!(bar_pixels(1), [5, 6, 7, 8, 9]);
        assert_eq!(bar_pixels(7), [2, 7, 12, 17, 22]);
        assert_eq!(c.orientations[4], Orientation::Horizontal);
        assert_eq!(c.orientations[5], Orientation::Vertical);
    }

    #[test]
    fn documents_have_the_requested_tokens_and_only_their_bars_pixels() {
        for variant in [BarsVariant::Random, BarsVariant::Correlated] {
            let c = bars(&BarsConfig { variant, documents: 200, tokens: 50, max_bars: 5, seed: 3 });
            assert_eq!(c.rows.len(), 200);
            for (row, shares) in c.rows.iter().zip(&c.doc_bars) {
                assert_eq!(row.iter().map(|&(_, n)| n).sum::<u32>(), 50);
                assert!((1..=SIDE).contains(&shares.len()));
                let allowed: Vec<usize> = shares.iter().flat_map(|&(b, _)| bar_pixels(b)).collect();
                assert!(row.iter().all(|&(p, _)| allowed.contains(&(p as usize))));
                if variant == BarsVariant::Correlated {
                    let horizontal = shares.iter().filter(|&&(b, _)| b < SIDE).count();
                    assert!(horizontal == 0 || horizontal == shares.len(), "mixed orientations: {shares:?}");
                }
            }
        }
    }

    #[test]
    fn same_seed_same_corpus_and_bar_use_is_balanced() {
        let config = BarsConfig { variant: BarsVariant::Random, documents: 2_000, tokens: 20, max_bars: 5, seed: 9 };
        assert_eq!(bars(&config), bars(&config));
        assert_ne!(bars(&config).rows, bars(&BarsConfig { seed: 10, ..config }).rows);
        // Each bar is in a document with probability E[m]/10 = 0.3; over 2 000 documents
        // the count has sd sqrt(2000 · 0.3 · 0.7) ≈ 20.5: a 4.5-sd band around 600.
        let c = bars(&config);
        for b in 0..NUM_BARS {
            let n = c.doc_bars.iter().filter(|s| s.iter().any(|&(x, _)| x == b)).count() as f64;
            assert!((n - 600.0).abs() < 4.5 * 20.5, "bar {b} in {n} documents");
        }
        let corpus = c.to_corpus();
        assert_eq!(corpus.num_documents(), 2_000);
        assert_eq!(corpus.num_terms(), NUM_PIXELS);
        assert_eq!(corpus.stats.num_tokens, 40_000);
    }

    /// Mean correlation of the true shares over pairs of bars within one orientation
    /// and over pairs across.
    fn orientation_correlations(docs: &[Vec<(usize, f64)>]) -> (f64, f64) {
        let corr = share_correlation(docs);
        let (mut within, mut across) = (Vec::new(), Vec::new());
        for a in 0..NUM_BARS {
            for b in a + 1..NUM_BARS {
                let c = corr[a * NUM_BARS + b];
                if (a < SIDE) == (b < SIDE) {
                    within.push(c)
                } else {
                    across.push(c)
                }
            }
        }
        (within.iter().sum::<f64>() / within.len() as f64, across.iter().sum::<f64>() / across.len() as f64)
    }

    /// The closed form of the module documentation: with m ~ Uniform{1, …, M} and
    /// Dirichlet(1) shares, H = E[2/(m + 1)], Var θ_b = H/10 − 1/100, corr within =
    /// (1/4 − 5 Var)/(20 Var), corr across = −1/(100 Var). 20 000 documents in 20
    /// batches of 1 000; each statistic of the whole sample is compared with the closed
    /// form by a z-score with the batch-means standard error (sd of the 20 batch values
    /// / √20), |z| < 4.5. The Herfindahl H itself is checked against the mean of the
    /// per-document Σ_b θ_b² with its plain standard error.
    #[test]
    fn correlated_variant_has_its_closed_form_correlations() {
        let (documents, batches) = (20_000usize, 20usize);
        for (max_bars, expect_positive) in [(3usize, false), (5, true)] {
            let c = bars(&BarsConfig { variant: BarsVariant::Correlated, documents, tokens: 1, max_bars, seed: 21 });
            let h = (1..=max_bars).map(|m| 2.0 / (m as f64 + 1.0)).sum::<f64>() / max_bars as f64;
            let var = h / 10.0 - 0.01;
            let (within, across) = ((0.25 - 5.0 * var) / (20.0 * var), -0.01 / var);
            let herfindahl: Vec<f64> = c.doc_bars.iter().map(|s| s.iter().map(|&(_, x)| x * x).sum()).collect();
            let mean_h = herfindahl.iter().sum::<f64>() / documents as f64;
            let sd_h = (herfindahl.iter().map(|x| (x - mean_h).powi(2)).sum::<f64>() / (documents - 1) as f64).sqrt();
            let z = (mean_h - h) / (sd_h / (documents as f64).sqrt());
            assert!(z.abs() < 4.5, "max_bars {max_bars}: mean Herfindahl {mean_h} vs {h}, z = {z}");
            let (got_within, got_across) = orientation_correlations(&c.doc_bars);
            let per_batch: Vec<(f64, f64)> = c.doc_bars.chunks(documents / batches).map(orientation_correlations).collect();
            let se = |f: fn(&(f64, f64)) -> f64| {
                let xs: Vec<f64> = per_batch.iter().map(f).collect();
                let m = xs.iter().sum::<f64>() / xs.len() as f64;
                (xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (xs.len() - 1) as f64).sqrt() / (xs.len() as f64).sqrt()
            };
            let (z_within, z_across) = ((got_within - within) / se(|p| p.0), (got_across - across) / se(|p| p.1));
            eprintln!("max_bars {max_bars}: within {got_within:.4} vs {within:.4} (z {z_within:.2}), across {got_across:.4} vs {across:.4} (z {z_across:.2})");
            assert!(z_within.abs() < 4.5 && z_across.abs() < 4.5, "max_bars {max_bars}: z within {z_within}, across {z_across}");
            assert_eq!(within > 0.0, expect_positive, "closed form within {within}");
        }
    }
}
