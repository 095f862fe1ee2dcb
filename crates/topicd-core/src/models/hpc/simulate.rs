//! Synthetic corpora drawn from HPC's own generative process (paper 003, Table 1).
//!
//! Why it exists: parameter-recovery tests and the benchmark need data whose true rates
//! μ, variances τ², affinities ξ and label tree are known, drawn exactly as the model
//! assumes. [`simulate`] returns that truth together with the data, and
//! [`SimulatedCorpus::to_raw_documents`] turns the data into an upload whose label paths
//! (`t2/t2.3`) make the corpus builder infer the same tree.
//!
//! Every word draws from its own stream `(Synthetic, 0, f)` and every document from
//! `(Synthetic, 1, d)`, so the output depends only on the seed, not on draw order.
//! The scale of the counts is set by ψ (β_fk = exp μ_fk is a rate per average-length
//! document); `mean_length` only sets the spread of the relative lengths l_d.

use std::collections::BTreeMap;

use rand_distr::{Bernoulli, ChiSquared, Distribution, Normal, Poisson};
use rayon::prelude::*;

use crate::corpus::input::RawDocument;
use crate::rng::{stream, Purpose, StreamRng};

/// Sizes and hyperparameters of a simulated corpus (names as in paper 003, Table 1).
#[derive(Debug, Clone)]
pub struct SimulationConfig {
    pub documents: usize,
    pub words: usize,
    /// Children per node at each level, e.g. `[3, 4]` = 3 top-level labels each with 4
    /// children (K = 3 + 12).
    pub fanout: Vec<usize>,
    pub psi: f64,
    pub gamma2: f64,
    pub nu: f64,
    pub sigma2: f64,
    /// The same η for every label.
    pub eta: f64,
    pub lambda2: f64,
    pub mean_length: f64,
}

impl SimulationConfig {
    /// A small labelled corpus for checks that need every family to fit something real
    /// (capabilities, model sizes, model bytes): moderate rates (ψ = −1, η = −1.5) and
    /// the paper's dispersion priors (γ² = 1, ν = 6, σ² = 0.5, λ² = 1).
    pub fn small(documents: usize, words: usize, fanout: Vec<usize>, mean_length: f64) -> Self {
        SimulationConfig { documents, words, fanout, psi: -1.0, gamma2: 1.0, nu: 6.0, sigma2: 0.5, eta: -1.5, lambda2: 1.0, mean_length }
    }
}

/// The truth plus the data.
#[derive(Debug, Clone, PartialEq)]
pub struct SimulatedCorpus {
    /// Parent of each node; node 0 is the implicit corpus root, 1..=K the labels.
    pub parent: Vec<Option<usize>>,
    /// Word-major V × (K+1) log rates μ_fk.
    pub mu: Vec<f64>,
    /// Word-major V × (K+1) variances τ²_fp; meaningful only for nodes with children, 0
    /// otherwise.
    pub tau2: Vec<f64>,
    /// D × K affinities ξ_dk, label k at column k−1.
    pub xi: Vec<f64>,
    /// Each document's active labels (node ids 1..=K, sorted, never empty).
    pub doc_labels: Vec<Vec<usize>>,
    /// Each document's sorted `(word, count)` pairs with count > 0.
    pub counts: Vec<Vec<(u32, u32)>>,
    /// Relative lengths l_d = L_d / mean(L).
    pub lengths: Vec<f64>,
    /// The drawn lengths L_d ~ Poisson(mean_length), at least 1.
    pub raw_lengths: Vec<u32>,
}

/// The node tree for `fanout`, numbered breadth-first so that every parent precedes its
/// children (a topological order).
fn build_tree(fanout: &[usize]) -> Vec<Option<usize>> {
    let mut parent = vec![None];
    let mut level = vec![0usize];
    for &n in fanout {
        let mut next = Vec::with_capacity(level.len() * n);
        for &p in &level {
            for _ in 0..n {
                next.push(parent.len());
                parent.push(Some(p));
            }
        }
        level = next;
    }
    parent
}

/// Draws one corpus. A document whose Bernoulli draws give no label redraws all its
/// labels (same ξ_d) until at least one is active: the model conditions on that
/// (paper 003, §2.2), so this samples I_d given "some I_dk = 1" exactly.
///
/// Panics on an empty or zero fanout, zero documents or words, or non-positive ν,
/// σ², `mean_length`, or negative γ², λ².
pub fn simulate(config: &SimulationConfig, seed: u64) -> SimulatedCorpus {
    let c = config;
    let sizes_ok = c.documents > 0 && c.words > 0 && c.fanout.iter().all(|&n| n > 0);
    assert!(sizes_ok && !c.fanout.is_empty(), "need documents, words and a positive fanout");
    let scales_ok = c.nu > 0.0 && c.sigma2 > 0.0 && c.mean_length > 0.0;
    assert!(scales_ok && c.gamma2 >= 0.0 && c.lambda2 >= 0.0, "invalid hyperparameters");
    let parent = build_tree(&c.fanout);
    let (mu, tau2) = draw_tree_parameters(c, &parent, seed);
    let mut docs = draw_documents(c, parent.len() - 1, seed);
    let mean_len = docs.raw_lengths.iter().map(|&l| l as f64).sum::<f64>() / c.documents as f64;
    let lengths: Vec<f64> = docs.raw_lengths.iter().map(|&l| l as f64 / mean_len).collect();
    let counts = draw_counts(c.words, parent.len(), &mu, &mut docs, &lengths);
    let DocumentDraws { xi, doc_labels, raw_lengths, .. } = docs;
    SimulatedCorpus { parent, mu, tau2, xi, doc_labels, counts, lengths, raw_lengths }
}

/// The tree parameters, one stream per word: μ_f0 ~ N(ψ, γ²), τ²_fp ~ Scaled-Inv-χ²(ν,
/// σ²) for every parent node, then μ_fk ~ N(μ_f,parent, τ²_f,parent) down the tree.
/// Returns (μ, τ²), word-major V × (K+1).
fn draw_tree_parameters(c: &SimulationConfig, parent: &[Option<usize>], seed: u64) -> (Vec<f64>, Vec<f64>) {
    let nodes = parent.len();
    let has_children: Vec<bool> = (0..nodes).map(|p| parent.contains(&Some(p))).collect();
    let chi2 = ChiSquared::new(c.nu).expect("ν > 0");
    let root = Normal::new(c.psi, c.gamma2.sqrt()).expect("finite γ");
    let (mut mu, mut tau2) = (vec![0.0; c.words * nodes], vec![0.0; c.words * nodes]);
    for f in 0..c.words {
        let mut rng = stream(seed, Purpose::Synthetic, 0, f as u64);
        let (m, t) = (&mut mu[f * nodes..][..nodes], &mut tau2[f * nodes..][..nodes]);
        m[0] = root.sample(&mut rng);
        for p in (0..nodes).filter(|&p| has_children[p]) {
            t[p] = c.nu * c.sigma2 / chi2.sample(&mut rng);
        }
        for node in 1..nodes {
            let p = parent[node].expect("labels have parents");
            m[node] = Normal::new(m[p], t[p].sqrt()).expect("finite τ").sample(&mut rng);
        }
    }
    (mu, tau2)
}

/// Every document's affinities, labels and length, and its stream, kept for its counts.
struct DocumentDraws {
    xi: Vec<f64>,
    doc_labels: Vec<Vec<usize>>,
    raw_lengths: Vec<u32>,
    rngs: Vec<StreamRng>,
}

/// Affinities ξ_d ~ N(η, λ²), labels I_dk ~ Bernoulli(σ(ξ_dk)) redrawn until one is
/// active, and lengths L_d ~ Poisson(mean_length) (at least 1) over the `k` labels,
/// one stream per document.
fn draw_documents(c: &SimulationConfig, k: usize, seed: u64) -> DocumentDraws {
    let affinity = Normal::new(c.eta, c.lambda2.sqrt()).expect("finite λ");
    let length = Poisson::new(c.mean_length).expect("valid mean length");
    let mut xi = vec![0.0; c.documents * k];
    let mut doc_labels = Vec::with_capacity(c.documents);
    let mut raw_lengths = Vec::with_capacity(c.documents);
    let mut rngs: Vec<StreamRng> = Vec::with_capacity(c.documents);
    for d in 0..c.documents {
        let mut rng = stream(seed, Purpose::Synthetic, 1, d as u64);
        let x = &mut xi[d * k..][..k];
        x.iter_mut().for_each(|v| *v = affinity.sample(&mut rng));
        let coins: Vec<Bernoulli> = x.iter().map(|&v| Bernoulli::new(1.0 / (1.0 + (-v).exp())).expect("p in [0, 1]")).collect();
        let labels = loop {
            let on: Vec<usize> = (0..k).filter(|&j| coins[j].sample(&mut rng)).map(|j| j + 1).collect();
            if !on.is_empty() {
                break on;
            }
        };
        doc_labels.push(labels);
        raw_lengths.push((length.sample(&mut rng) as u32).max(1));
        rngs.push(rng);
    }
    DocumentDraws { xi, doc_labels, raw_lengths, rngs }
}

/// Counts w_fd ~ Poisson(l_d θ_dᵀ β_f) of the `words` words, θ_d = softmax of ξ_d over
/// the active labels, with `lengths` l_d and μ over `nodes` nodes. Each document
/// continues its own stream (`docs.rngs`), so documents run in parallel and the corpus
/// is the same on any number of threads.
fn draw_counts(words: usize, nodes: usize, mu: &[f64], docs: &mut DocumentDraws, lengths: &[f64]) -> Vec<Vec<(u32, u32)>> {
    let k = nodes - 1;
    let (xi, doc_labels) = (&docs.xi, &docs.doc_labels);
    docs.rngs
        .par_iter_mut()
        .enumerate()
        .map(|(d, rng)| {
            let labels = &doc_labels[d];
            let x = &xi[d * k..][..k];
            let top = labels.iter().map(|&j| x[j - 1]).fold(f64::NEG_INFINITY, f64::max);
            let mut theta: Vec<f64> = labels.iter().map(|&j| (x[j - 1] - top).exp()).collect();
            let total: f64 = theta.iter().sum();
            theta.iter_mut().for_each(|t| *t *= lengths[d] / total);
            let mut row = Vec::new();
            for f in 0..words {
                let m = &mu[f * nodes..][..nodes];
                let rate: f64 = labels.iter().zip(&theta).map(|(&j, t)| t * m[j].exp()).sum();
                let n = match Poisson::new(rate) {
                    Ok(p) => p.sample(rng),
                    Err(_) if rate <= 0.0 => 0.0,
                    Err(e) => panic!("word {f}, document {d}: Poisson rate {rate}: {e}"),
                };
                if n > 0.0 {
                    row.push((f as u32, n as u32));
                }
            }
            row
        })
        .collect()
}

impl SimulatedCorpus {
    /// K, the number of labels (nodes other than the root).
    pub fn num_labels(&self) -> usize {
        self.parent.len() - 1
    }

    /// Node `node`'s label path from the top level: each label is named `t` followed by
    /// its 1-based child positions joined by dots, and the path joins the names of its
    /// ancestors and itself with `/`. The 2nd top-level label is `t2`, its 3rd child has
    /// path `t2/t2.3`. The root (node 0) has the empty path.
    pub fn label_path(&self, node: usize) -> String {
        let mut positions = Vec::new();
        let mut cur = node;
        while let Some(p) = self.parent[cur] {
            positions.push(1 + self.parent[..cur].iter().filter(|&&q| q == Some(p)).count());
            cur = p;
        }
        positions.reverse();
        (1..=positions.len())
            .map(|n| {
                let digits: Vec<String> = positions[..n].iter().map(usize::to_string).collect();
                format!("t{}", digits.join("."))
            })
            .collect::<Vec<_>>()
            .join("/")
    }

    /// The documents as the service's upload type: ids `d{d}`, words named `w{f}`, labels
    /// as paths (separator `/`), so the corpus builder rebuilds [`Self::parent`].
    pub fn to_raw_documents(&self) -> Vec<RawDocument> {
        let paths: Vec<String> = (0..self.parent.len()).map(|n| self.label_path(n)).collect();
        self.counts
            .iter()
            .zip(&self.doc_labels)
            .enumerate()
            .map(|(d, (row, labels))| RawDocument {
                id: Some(format!("d{d}")),
                counts: Some(row.iter().map(|&(f, n)| (format!("w{f}"), n as f64)).collect::<BTreeMap<_, _>>()),
                labels: Some(labels.iter().map(|&j| paths[j].clone()).collect()),
                ..RawDocument::default()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::builder::build_corpus;
    use crate::corpus::preprocess::{PreprocessOptions, StopWords};

    fn config(documents: usize, words: usize) -> SimulationConfig {
        SimulationConfig { documents, words, fanout: vec![3, 4], psi: -1.0, gamma2: 1.5, nu: 5.0, sigma2: 0.5, eta: -0.5, lambda2: 1.0, mean_length: 200.0 }
    }

    #[test]
    fn same_seed_same_corpus_and_different_seed_differs() {
        let c = config(60, 80);
        let a = simulate(&c, 11);
        assert_eq!(a, simulate(&c, 11));
        let b = simulate(&c, 12);
        assert_ne!(a.mu, b.mu);
        assert_ne!(a.counts, b.counts);
    }

    #[test]
    fn shapes_labels_counts_and_lengths_are_well_formed() {
        let c = config(200, 100);
        let s = simulate(&c, 3);
        let k = s.num_labels();
        assert_eq!(k, 15);
        assert_eq!((s.mu.len(), s.tau2.len(), s.xi.len()), (100 * 16, 100 * 16, 200 * 15));
        for (d, labels) in s.doc_labels.iter().enumerate() {
            assert!(!labels.is_empty(), "document {d} has no label");
            assert!(labels.windows(2).all(|w| w[0] < w[1]) && labels.iter().all(|&j| (1..=k).contains(&j)));
            let row = &s.counts[d];
            assert!(row.windows(2).all(|w| w[0].0 < w[1].0) && row.iter().all(|&(f, n)| f < 100 && n > 0));
        }
        // τ² is drawn for the root and the 3 top-level labels only (the leaves have none).
        for f in 0..100 {
            let t = &s.tau2[f * 16..][..16];
            assert!(t[..4].iter().all(|&v| v > 0.0) && t[4..].iter().all(|&v| v == 0.0));
        }
        let mean_l = s.lengths.iter().sum::<f64>() / 200.0;
        assert!((mean_l - 1.0).abs() < 1e-12);
        // L_d ~ Poisson(200): the mean of 200 has standard error sqrt(200 / 200) = 1.
        let mean_raw = s.raw_lengths.iter().map(|&l| l as f64).sum::<f64>() / 200.0;
        assert!((mean_raw - 200.0).abs() < 5.0, "mean length {mean_raw}");
    }

    /// μ_f,0 ~ N(ψ, γ²) independently over V words: the sample mean has standard error
    /// sqrt(γ²/V) and the sample variance sqrt(2γ⁴/(V−1)) (normal data). Five each.
    #[test]
    fn root_rates_have_the_prior_mean_and_variance() {
        let c = config(2, 20_000);
        let s = simulate(&c, 5);
        let v = c.words as f64;
        let roots: Vec<f64> = (0..c.words).map(|f| s.mu[f * 16]).collect();
        let mean = roots.iter().sum::<f64>() / v;
        let var = roots.iter().map(|m| (m - mean).powi(2)).sum::<f64>() / (v - 1.0);
        let (se_mean, se_var) = ((c.gamma2 / v).sqrt(), c.gamma2 * (2.0 / (v - 1.0)).sqrt());
        assert!((mean - c.psi).abs() < 5.0 * se_mean, "mean {mean} (se {se_mean})");
        assert!((var - c.gamma2).abs() < 5.0 * se_var, "variance {var} (se {se_var})");
    }

    #[test]
    fn upload_rebuilds_the_same_tree_labels_and_tokens() {
        let c = SimulationConfig { fanout: vec![2, 3, 2], ..config(400, 150) };
        let s = simulate(&c, 9);
        let options = PreprocessOptions { stopwords: StopWords::None, ..PreprocessOptions::default() };
        let corpus = build_corpus(options, &[], s.to_raw_documents()).expect("corpus builds");
        let tree = &corpus.labels;
        assert_eq!(tree.len(), s.num_labels());
        assert_eq!(tree.depth(), c.fanout.len());
        let name = |node: usize| s.label_path(node).rsplit('/').next().unwrap().to_owned();
        for node in 1..=s.num_labels() {
            let id = tree.id(&name(node)).unwrap_or_else(|| panic!("label {} missing", name(node)));
            let built = tree.parent(id).map(|p| tree.name(p).to_owned());
            let truth = s.parent[node].filter(|&p| p != 0).map(name);
            assert_eq!(built, truth, "parent of {}", name(node));
        }
        let total: u64 = s.counts.iter().flatten().map(|&(_, n)| n as u64).sum();
        assert_eq!(corpus.stats.num_tokens as u64, total);
        for (row, id) in corpus.doc_ids.iter().enumerate() {
            let d: usize = id[1..].parse().unwrap();
            let mut got: Vec<String> = corpus.doc_labels[row].iter().map(|&j| tree.name(j).to_owned()).collect();
            let mut want: Vec<String> = s.doc_labels[d].iter().map(|&j| name(j)).collect();
            got.sort();
            want.sort();
            assert_eq!(got, want, "labels of document {id}");
        }
    }
}
