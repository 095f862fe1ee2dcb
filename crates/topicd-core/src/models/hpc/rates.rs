//! The conditional posterior of one word's log rates μ_f (paper 003, A.2.1):
//!
//! log p(μ_f | rest) = −Σ_d l_d θ_dᵀβ_f + Σ_d w_fd log(θ_dᵀβ_f) + log N(μ_f | ψ1, Λ⁻¹),
//! β_f = exp(μ_f).
//!
//! Only documents containing the word enter the log term; the linear term is one
//! vector c = Σ_d l_d θ_d shared by every word of a scan. θ_d is sparse: a document
//! touches only its active labels. Node 0 is the corpus root, which no θ_d loads on.
//!
//! The conditional is evaluated on a *block* of nodes, in the block's own indices
//! ([`RateConditional::on_block`]): the sampler's block is the word's touched subtree
//! (see [`super::touched`]) with the other nodes held fixed, whose prior coupling
//! enters through the block's [`TreePrior`]; [`RateConditional::new`] is the block of
//! all nodes. Every document holding the word has all its active nodes in the block, so
//! the likelihood's log term lives inside it and the fixed nodes contribute only
//! constants (their −c_k β_k and their own prior terms).
//!
//! The Hessian −ΘᵀWΘ∘ββᵀ + G − Λ is assembled sparsely: Λ lives on the tree edges and
//! ΘᵀWΘ only couples labels active together in a document holding the word, so the
//! mode is found by Newton steps on a [`SparseSymmetric`] factored in minimum-degree order
//! (chosen over BFGS: the exact Hessian is cheap here, Newton converges in a handful
//! of steps, and the same factor becomes the HMC mass matrix).

use super::data::Rows;
use super::tree_prior::{PriorBuffers, TreePrior};
use crate::inference::newton::{newton_ascent, Mode};
use crate::inference::{fast_exp, LogDensity, SparsePattern, SparseSymmetric};
use nalgebra::DMatrix;
use std::cell::RefCell;

/// The conditional of μ_f (or of a block of it given the rest) as a log density.
pub struct RateConditional<'a> {
    /// c = Σ_d l_d θ_d over the block's nodes (0 at the root).
    linear: Vec<f64>,
    /// The prior of the block's nodes given the others, in block indices.
    pub prior: TreePrior<'a>,
    /// The point of the last gradient evaluation and β = exp(μ) there: one buffer per
    /// word instead of one allocation per evaluation, and the sampler reads β of the
    /// accepted HMC proposal from it instead of exponentiating again.
    last: RefCell<(Vec<f64>, Vec<f64>)>,
    compact: CompactDocs,
    /// PCM's seeds: (block index, c) adding c μ_k to the log density (c pseudo-counts
    /// of the word in topic k with no exposure: gradient +c, Hessian unchanged); empty
    /// for an unseeded word.
    seeds: Vec<(u32, f64)>,
}

/// The word's documents with their active nodes (as block indices) and θ copied next
/// to each other, so the many gradient evaluations of one HMC draw read them
/// sequentially instead of through every document's row of `active` and `theta`.
struct CompactDocs {
    /// (block index, θ_dk) of every active node of every document holding the word.
    entries: Vec<(u32, f64)>,
    /// Per document: the end of its entries and its count w_fd.
    ends: Vec<(u32, f64)>,
}

/// The owned buffers of a [`RateConditional`], kept between words by the rate block.
#[derive(Debug, Default)]
pub struct ConditionalBuffers {
    linear: Vec<f64>,
    point: Vec<f64>,
    beta: Vec<f64>,
    entries: Vec<(u32, f64)>,
    ends: Vec<(u32, f64)>,
}

impl CompactDocs {
    /// Each document's entries with its count.
    fn documents(&self) -> impl Iterator<Item = (&[(u32, f64)], f64)> {
        let mut start = 0;
        self.ends.iter().map(move |&(end, count)| {
            let entries = &self.entries[start..end as usize];
            start = end as usize;
            (entries, count)
        })
    }
}

impl<'a> RateConditional<'a> {
    /// The conditional of all of μ_f: `docs` are the word's (document, count) pairs,
    /// `active` every document's active nodes with θ aligned in `theta`, `linear` c over
    /// all nodes.
    pub fn new(docs: &[(u32, f64)], active: &Rows<u32>, theta: &[f64], linear: &[f64], prior: TreePrior<'a>) -> Self {
        let all: Vec<u32> = (0..linear.len() as u32).collect();
        Self::on_block(docs, active, theta, linear, &all, &all, prior)
    }

    /// The conditional of the block `nodes` (node ids; block index i is `nodes[i]`)
    /// given the other nodes. `local_of` maps node ids to block indices (`u32::MAX`
    /// outside the block); every active node of a document in `docs` must be in the
    /// block. `prior` is the block's conditional prior ([`TreePrior::on_block`]).
    pub fn on_block(docs: &[(u32, f64)], active: &Rows<u32>, theta: &[f64], linear: &[f64], nodes: &[u32], local_of: &[u32], prior: TreePrior<'a>) -> Self {
        Self::on_block_reusing(docs, active, theta, linear, nodes, local_of, prior, ConditionalBuffers::default())
    }

    /// [`RateConditional::on_block`] in the buffers of a previous conditional
    /// ([`RateConditional::into_buffers`]), so the rate block allocates them once per
    /// worker instead of once per word; the result does not depend on what they held.
    #[allow(clippy::too_many_arguments)]
    pub fn on_block_reusing(
        docs: &[(u32, f64)],
        active: &Rows<u32>,
        theta: &[f64],
        linear: &[f64],
        nodes: &[u32],
        local_of: &[u32],
        prior: TreePrior<'a>,
        buffers: ConditionalBuffers,
    ) -> Self {
        assert_eq!(prior.num_nodes(), nodes.len(), "the prior is not over the block");
        let ConditionalBuffers { linear: mut block_linear, mut point, mut beta, mut entries, mut ends } = buffers;
        entries.clear();
        ends.clear();
        let mut compact = CompactDocs { entries, ends };
        for &(d, count) in docs {
            let r = active.range(d as usize);
            compact.entries.extend(active.values[r.clone()].iter().zip(&theta[r]).map(|(&node, &t)| {
                let local = local_of[node as usize];
                assert!(local != u32::MAX, "node {node} of a document holding the word is outside the block");
                (local, t)
            }));
            compact.ends.push((compact.entries.len() as u32, count));
        }
        block_linear.clear();
        block_linear.extend(nodes.iter().map(|&node| linear[node as usize]));
        point.clear();
        beta.clear();
        RateConditional { linear: block_linear, prior, last: RefCell::new((point, beta)), compact, seeds: Vec::new() }
    }

    /// The conditional with the word's seeds (`(node, c)` pairs, [`super::data::HpcData::seed_counts`])
    /// added: c μ_k for each, `local_of` mapping nodes to block indices. A seeded node
    /// is in the block whenever c > 0 (c counts the word's training tokens, and every
    /// topic is active in a PCM document).
    pub fn with_seeds(mut self, seeds: &[(u32, f64)], local_of: &[u32]) -> Self {
        self.seeds = seeds
            .iter()
            .filter_map(|&(node, c)| {
                let local = local_of[node as usize];
                debug_assert!(local != u32::MAX, "seeded node {node} outside the word's block");
                (local != u32::MAX).then_some((local, c))
            })
            .collect();
        self
    }

    /// Adds the seeds' c μ_k to `grad` and returns their sum.
    fn seed_terms(&self, mu: &[f64], grad: &mut [f64]) -> f64 {
        let mut logp = 0.0;
        for &(k, c) in &self.seeds {
            grad[k as usize] += c;
            logp += c * mu[k as usize];
        }
        logp
    }

    /// The conditional's buffers and its prior's, for
    /// [`RateConditional::on_block_reusing`] and
    /// [`super::touched::WordBlock::prior_reusing`].
    pub fn into_buffers(self) -> (ConditionalBuffers, PriorBuffers) {
        let RateConditional { linear, prior, last, compact, .. } = self;
        let (point, beta) = last.into_inner();
        (ConditionalBuffers { linear, point, beta, entries: compact.entries, ends: compact.ends }, prior.into_buffers())
    }

    /// Records `mu` as the last evaluated point and returns β = exp(μ) there.
    fn evaluate_rates(&self, mu: &[f64]) -> std::cell::RefMut<'_, (Vec<f64>, Vec<f64>)> {
        let mut last = self.last.borrow_mut();
        let (point, beta) = &mut *last;
        point.clear();
        point.extend_from_slice(mu);
        beta.clear();
        beta.extend(mu.iter().map(|&m| fast_exp(m)));
        last
    }
}

impl RateConditional<'_> {
    /// β = exp(μ) if the last gradient evaluation was exactly at `mu`.
    pub fn rates_if_last_evaluated_at(&self, mu: &[f64]) -> Option<std::cell::Ref<'_, [f64]>> {
        let last = self.last.borrow();
        (last.0.as_slice() == mu).then(|| std::cell::Ref::map(last, |l| l.1.as_slice()))
    }

    /// The likelihood and its gradient in μ (overwrites `grad`).
    fn likelihood_grad(&self, beta: &[f64], grad: &mut [f64]) -> f64 {
        self.likelihood_terms(beta, grad, true)
    }

    /// The likelihood's gradient in μ (overwrites `grad`) and, if `with_logp`, the
    /// likelihood (else 0: no logarithm is taken). The word's documents are read from
    /// the compact copy made by [`RateConditional::on_block`].
    fn likelihood_terms(&self, beta: &[f64], grad: &mut [f64], with_logp: bool) -> f64 {
        let mut logp = 0.0;
        for ((g, &c), &b) in grad.iter_mut().zip(&self.linear).zip(beta) {
            *g = -c * b;
        }
        if with_logp {
            logp -= self.linear.iter().zip(beta).map(|(c, b)| c * b).sum::<f64>();
        }
        for (entries, count) in self.compact.documents() {
            let s: f64 = entries.iter().map(|&(k, t)| t * beta[k as usize]).sum();
            if with_logp {
                logp += count * s.ln();
            }
            let w = count / s;
            for &(k, t) in entries {
                grad[k as usize] += w * t * beta[k as usize];
            }
        }
        logp
    }

    /// −(likelihood Hessian) at μ, added into `m`. With [`Curvature::Full`] the
    /// pattern of `m` must contain the word's co-occurrence pairs (see
    /// [`super::data::HpcData::word_hessian_edges`]); with [`Curvature::TreeDiagonal`]
    /// only the diagonal is added, clamped at zero so that adding the prior precision
    /// always gives a positive-definite matrix.
    pub fn add_negative_likelihood_hessian(&self, mu: &[f64], m: &mut SparseSymmetric, curvature: Curvature) {
        let beta: Vec<f64> = mu.iter().map(|&x| fast_exp(x)).collect();
        let mut diag = vec![0.0; mu.len()];
        self.likelihood_grad(&beta, &mut diag);
        diag.iter_mut().for_each(|g| *g = -*g);
        for (entries, count) in self.compact.documents() {
            let s: f64 = entries.iter().map(|&(k, t)| t * beta[k as usize]).sum();
            let wt = count / (s * s);
            for (i, &(a, theta_a)) in entries.iter().enumerate() {
                let (a, ta) = (a as usize, theta_a * beta[a as usize]);
                diag[a] += wt * ta * ta;
                if curvature == Curvature::Full {
                    for &(b, theta_b) in &entries[i + 1..] {
                        let (b, tb) = (b as usize, theta_b * beta[b as usize]);
                        m.add_off(a, b, wt * ta * tb);
                    }
                }
            }
        }
        for (k, v) in diag.into_iter().enumerate() {
            m.add_diag(k, if curvature == Curvature::Full { v } else { v.max(0.0) });
        }
    }

    /// The full Hessian as a dense matrix (tests and tiny trees only).
    pub fn hessian(&self, mu: &[f64]) -> DMatrix<f64> {
        let n = mu.len();
        let beta: Vec<f64> = mu.iter().map(|&m| fast_exp(m)).collect();
        let mut grad = vec![0.0; n];
        self.likelihood_grad(&beta, &mut grad);
        let mut h = DMatrix::zeros(n, n);
        for k in 0..n {
            h[(k, k)] = grad[k];
        }
        for (entries, count) in self.compact.documents() {
            let s: f64 = entries.iter().map(|&(k, t)| t * beta[k as usize]).sum();
            let wt = count / (s * s);
            for &(k, tk) in entries {
                for &(j, tj) in entries {
                    let (k, j) = (k as usize, j as usize);
                    h[(k, j)] -= wt * tk * beta[k] * tj * beta[j];
                }
            }
        }
        self.prior.add_hessian(&mut h);
        h
    }

    /// −H (likelihood and prior) at μ, sparse, or its tree-plus-diagonal stand-in.
    pub fn negative_hessian<'p>(&self, mu: &[f64], pattern: &'p SparsePattern, curvature: Curvature) -> SparseSymmetric<'p> {
        let mut m = SparseSymmetric::zeros(pattern);
        self.add_negative_likelihood_hessian(mu, &mut m, curvature);
        self.prior.add_precision(&mut m);
        m
    }
}

/// Which curvature the mode search and the HMC mass matrix use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Curvature {
    /// The exact Hessian: tree precision plus the word's label co-occurrence pattern,
    /// factored sparsely. Its cost per column grows with the square of the fill, which
    /// the co-occurrence graph of a frequent word under hundreds of labels makes large.
    Full,
    /// The tree precision plus the (clamped) diagonal of the likelihood Hessian: fill
    /// free, O(K) per factorisation and solve, a valid but less exact mass matrix where
    /// labels co-occur.
    TreeDiagonal,
}

/// The conditional mode by Newton steps on the sparse Hessian with a backtracking line
/// search. Where −H is not positive definite (away from the mode the chain-rule term G
/// can make it indefinite) it is shifted along the diagonal first.
pub fn find_mode(cond: &RateConditional, pattern: &SparsePattern, curvature: Curvature, start: &[f64], max_iterations: usize, tolerance: f64) -> Mode {
    newton_ascent(cond, start, max_iterations, tolerance, |mu, grad| {
        let (chol, repaired) = cond.negative_hessian(mu, pattern, curvature).cholesky_repaired();
        let mut step = grad.to_vec();
        chol.solve_in_place(&mut step);
        (step, repaired)
    })
}

impl LogDensity for RateConditional<'_> {
    fn dim(&self) -> usize {
        self.prior.num_nodes()
    }

    fn logp_grad(&self, mu: &[f64], grad: &mut [f64]) -> f64 {
        let last = self.evaluate_rates(mu);
        self.likelihood_terms(&last.1, grad, true) + self.seed_terms(mu, grad) + self.prior.logp_grad(mu, grad)
    }

    fn grad(&self, mu: &[f64], grad: &mut [f64]) -> bool {
        let last = self.evaluate_rates(mu);
        self.likelihood_terms(&last.1, grad, false);
        self.seed_terms(mu, grad);
        self.prior.logp_grad(mu, grad);
        grad.iter().sum::<f64>().is_finite()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inference::finite_diff::check_gradient_and_hessian;
    use crate::inference::tree_postorder;
    use crate::rng::{stream, Purpose};
    use rand::RngExt;

    /// Root 0; labels 1, 2 under the root; 3, 4 under 1. Three documents hold the word.
    struct Setup {
        docs: Vec<(u32, f64)>,
        active: Rows<u32>,
        theta: Vec<f64>,
        linear: Vec<f64>,
        parent: Vec<Option<usize>>,
        tau2: Vec<f64>,
    }

    fn setup() -> Setup {
        Setup {
            docs: vec![(0, 3.0), (1, 1.0), (2, 5.0)],
            active: Rows::from_rows(vec![vec![1, 2], vec![3], vec![2, 3, 4]]),
            theta: vec![0.7, 0.3, 1.0, 0.3, 0.2, 0.5],
            linear: vec![0.0, 1.1, 0.9, 1.4, 0.6],
            parent: vec![None, Some(0), Some(0), Some(1), Some(1)],
            tau2: vec![0.5, 0.2, 1.0, 1.0, 1.0],
        }
    }

    impl Setup {
        fn cond(&self) -> RateConditional<'_> {
            RateConditional::new(&self.docs, &self.active, &self.theta, &self.linear, TreePrior::new(&self.parent, -1.0, 4.0, &self.tau2))
        }

        fn pattern(&self) -> SparsePattern {
            let mut edges: Vec<(usize, usize)> = self.parent.iter().enumerate().filter_map(|(c, p)| p.map(|p| (c, p))).collect();
            edges.extend([(1, 2), (2, 3), (2, 4), (3, 4)]);
            SparsePattern::new(&tree_postorder(&self.parent), edges)
        }
    }

    #[test]
    fn gradient_and_hessian_match_finite_differences() {
        let s = setup();
        let cond = s.cond();
        let mut rng = stream(9, Purpose::Estimate, 0, 0);
        for _ in 0..5 {
            let mu: Vec<f64> = (0..cond.dim()).map(|_| rng.random::<f64>() * 3.0 - 2.0).collect();
            check_gradient_and_hessian(&cond, |x| cond.hessian(x), &mu);
        }
    }

    /// The seeds' term c μ_k is linear: the gradient gains c at each seeded node (checked
    /// by finite differences with the Hessian, which it leaves unchanged), and log p
    /// differs from the unseeded conditional's by exactly Σ c μ_k at any point.
    #[test]
    fn seeded_gradient_and_hessian_match_finite_differences() {
        let s = setup();
        let all: Vec<u32> = (0..s.linear.len() as u32).collect();
        let seeded = s.cond().with_seeds(&[(2, 4.0), (4, 1.5)], &all);
        let plain = s.cond();
        let mut rng = stream(10, Purpose::Estimate, 0, 0);
        for _ in 0..5 {
            let mu: Vec<f64> = (0..seeded.dim()).map(|_| rng.random::<f64>() * 3.0 - 2.0).collect();
            check_gradient_and_hessian(&seeded, |x| seeded.hessian(x), &mu);
            let mut g = vec![0.0; mu.len()];
            let difference = seeded.logp_grad(&mu, &mut g) - plain.logp_grad(&mu, &mut g);
            let expected = 4.0 * mu[2] + 1.5 * mu[4];
            assert!((difference - expected).abs() < 1e-9, "{difference} against {expected}");
        }
    }

    /// The sparse −H equals the dense one: compare the products with a few vectors.
    #[test]
    fn sparse_hessian_equals_the_dense_one() {
        let s = setup();
        let cond = s.cond();
        let pattern = s.pattern();
        let mu = [-0.5, 0.3, -1.2, 0.8, 0.1];
        let dense = -cond.hessian(&mu);
        let sparse = cond.negative_hessian(&mu, &pattern, Curvature::Full);
        for v in [[1.0, 0.0, 0.0, 0.0, 0.0], [0.3, -1.0, 2.0, 0.5, -0.7], [0.0, 0.0, 1.0, 1.0, 1.0]] {
            let want = &dense * nalgebra::DVector::from_column_slice(&v);
            let got = sparse.mul(&v);
            for i in 0..5 {
                assert!((want[i] - got[i]).abs() < 1e-12, "row {i}: {} vs {}", want[i], got[i]);
            }
        }
    }

    /// HMC with the sparse negative Hessian at the mode as mass matrix accepts nearly
    /// always on this small, well-conditioned conditional, and its draws stay finite.
    #[test]
    fn hmc_with_the_sparse_mass_matrix_accepts() {
        use crate::inference::hmc_step;
        let s = setup();
        let cond = s.cond();
        let pattern = s.pattern();
        let mode = find_mode(&cond, &pattern, Curvature::Full, &[-1.0; 5], 100, 1e-12);
        let mut mu = mode.point;
        let mut g = vec![0.0; mu.len()];
        cond.logp_grad(&mu, &mut g);
        assert!(g.iter().all(|x| x.abs() < 1e-5), "not at the mode: {g:?}");
        let (mass, repaired) = cond.negative_hessian(&mu, &pattern, Curvature::Full).cholesky_repaired();
        assert!(!repaired, "the Hessian at the mode is negative definite");
        let mut rng = stream(10, Purpose::Estimate, 0, 0);
        let mut accepted = 0;
        for _ in 0..500 {
            accepted += hmc_step(&cond, &mut mu, &mass, 0.3, 5, &mut rng).accepted as usize;
            assert!(mu.iter().all(|m| m.is_finite()));
        }
        assert!(accepted > 400, "accepted {accepted} of 500");
    }

    /// The tree-plus-diagonal curvature finds the same mode (it only changes the
    /// Newton steps, not their fixed point) and needs no repair.
    #[test]
    fn tree_diagonal_curvature_finds_the_same_mode() {
        let s = setup();
        let cond = s.cond();
        let tree_edges: Vec<(usize, usize)> = s.parent.iter().enumerate().filter_map(|(c, p)| p.map(|p| (c, p))).collect();
        let tree = SparsePattern::new(&tree_postorder(&s.parent), tree_edges);
        let exact = find_mode(&cond, &s.pattern(), Curvature::Full, &[-1.0; 5], 200, 1e-14);
        let approx = find_mode(&cond, &tree, Curvature::TreeDiagonal, &[-1.0; 5], 200, 1e-14);
        for (a, b) in exact.point.iter().zip(&approx.point) {
            assert!((a - b).abs() < 1e-5, "{:?} vs {:?}", exact.point, approx.point);
        }
        assert_eq!(approx.repairs, 0);
        assert!(cond.negative_hessian(&approx.point, &tree, Curvature::TreeDiagonal).cholesky().is_some());
    }

    /// The conditional of a word's touched subtree given the other nodes: root 0; 1, 2
    /// under it; 3, 4 under 1; 5 under 2. The word's documents have labels {1, 3} and
    /// {3}, so the block is {0, 1, 3} and 2, 4, 5 are fixed (2 and 4 hang off the block).
    /// Its gradient and Hessian match finite differences, and it equals the conditional
    /// of all nodes up to a constant: the differences of log p between block points and
    /// the gradient on the block agree with the full conditional's.
    #[test]
    fn block_conditional_matches_finite_differences_and_the_full_conditional() {
        use super::super::touched::WordBlock;
        let parent = vec![None, Some(0), Some(0), Some(1), Some(1), Some(2)];
        let docs = vec![(0u32, 2.0), (1, 1.0)];
        let active = Rows::from_rows(vec![vec![1u32, 3], vec![3], vec![2, 5]]);
        let theta = vec![0.6, 0.4, 1.0, 0.5, 0.5];
        let linear = vec![0.0, 1.3, 0.8, 1.7, 0.4, 0.9];
        let tau2 = vec![0.5, 0.3, 0.8, 1.0, 1.0, 1.0];
        let nodes = vec![0u32, 1, 3];
        let block = WordBlock::new(&parent, &[0, 1, 2, 3, 4, 5], &nodes);
        let fixed = [0.0, 0.0, -0.7, 0.0, 0.4, -1.5];
        let cond = RateConditional::on_block(
            &docs,
            &active,
            &theta,
            &linear,
            &nodes,
            &block.local_of,
            block.prior(&parent, -1.0, 2.0, &tau2.iter().map(|t| 1.0 / t).collect::<Vec<f64>>(), &fixed),
        );
        let full = RateConditional::new(&docs, &active, &theta, &linear, TreePrior::new(&parent, -1.0, 2.0, &tau2));
        let mut rng = stream(13, Purpose::Estimate, 0, 0);
        let mut previous: Option<(f64, f64)> = None;
        for _ in 0..5 {
            let x: Vec<f64> = (0..3).map(|_| rng.random::<f64>() * 3.0 - 2.0).collect();
            check_gradient_and_hessian(&cond, |y| cond.hessian(y), &x);
            let mut all = fixed.to_vec();
            block.scatter(&x, &mut all);
            let (mut g_block, mut g_full) = (vec![0.0; 3], vec![0.0; 6]);
            let (lb, lf) = (cond.logp_grad(&x, &mut g_block), full.logp_grad(&all, &mut g_full));
            for (i, &node) in nodes.iter().enumerate() {
                assert!((g_block[i] - g_full[node as usize]).abs() < 1e-12, "gradient at node {node}");
            }
            if let Some((pb, pf)) = previous {
                assert!(((lb - pb) - (lf - pf)).abs() < 1e-10, "log p differences {} vs {}", lb - pb, lf - pf);
            }
            previous = Some((lb, lf));
        }
    }

    /// A block, prior and conditional built in the buffers of another word's (as a
    /// worker's scratch holds them) evaluate bit for bit like freshly built ones, so
    /// the rate block's draws do not depend on which worker updated the word before.
    #[test]
    fn reused_buffers_give_the_fresh_conditional() {
        use super::super::touched::WordBlock;
        let parent = vec![None, Some(0), Some(0), Some(1), Some(1), Some(2)];
        let order = [0u32, 1, 2, 3, 4, 5];
        let active = Rows::from_rows(vec![vec![1u32, 3], vec![3], vec![2, 5], vec![4, 5]]);
        let theta = vec![0.6, 0.4, 1.0, 0.5, 0.5, 0.3, 0.7];
        let linear = vec![0.0, 1.3, 0.8, 1.7, 0.4, 0.9];
        let inverse_tau2 = vec![2.0, 3.0, 1.25, 1.0, 1.0, 1.0];
        let mu = [0.2, -0.4, 0.6, 0.1, -1.1, 0.5];
        // Word A: documents 2 and 3 (block {0, 1, 2, 4, 5}); word B: documents 0 and 1
        // (block {0, 1, 3}).
        let (docs_a, nodes_a) = (vec![(2u32, 1.0), (3, 2.0)], vec![0u32, 1, 2, 4, 5]);
        let (docs_b, nodes_b) = (vec![(0u32, 2.0), (1, 1.0)], vec![0u32, 1, 3]);
        let block_a = WordBlock::new(&parent, &order, &nodes_a);
        let cond_a =
            RateConditional::on_block(&docs_a, &active, &theta, &linear, &nodes_a, &block_a.local_of, block_a.prior(&parent, -1.0, 2.0, &inverse_tau2, &mu));
        let mut g = vec![0.0; nodes_a.len()];
        cond_a.logp_grad(&[0.1, 0.2, 0.3, 0.4, 0.5], &mut g);
        let (conditional_buffers, prior_buffers) = cond_a.into_buffers();
        let block_buffers = block_a.into_buffers();

        let fresh_block = WordBlock::new(&parent, &order, &nodes_b);
        let fresh = RateConditional::on_block(
            &docs_b,
            &active,
            &theta,
            &linear,
            &nodes_b,
            &fresh_block.local_of,
            fresh_block.prior(&parent, -1.0, 2.0, &inverse_tau2, &mu),
        );
        let block = WordBlock::reusing(&parent, &order, &nodes_b, block_buffers);
        assert_eq!((&block.local_of, &block.parent, &block.untouched), (&fresh_block.local_of, &fresh_block.parent, &fresh_block.untouched));
        let prior = block.prior_reusing(&parent, -1.0, 2.0, &inverse_tau2, &mu, prior_buffers);
        let reused = RateConditional::on_block_reusing(&docs_b, &active, &theta, &linear, &nodes_b, &block.local_of, prior, conditional_buffers);
        assert!(reused.rates_if_last_evaluated_at(&[0.1, 0.2, 0.3]).is_none(), "no point evaluated yet");
        for x in [[0.3, -0.2, 1.0], [-1.5, 0.7, 0.2]] {
            let (mut g_fresh, mut g_reused) = (vec![0.0; 3], vec![0.0; 3]);
            assert_eq!(fresh.logp_grad(&x, &mut g_fresh), reused.logp_grad(&x, &mut g_reused));
            assert_eq!(g_fresh, g_reused);
        }
        assert_eq!(fresh.hessian(&[0.3, -0.2, 1.0]), reused.hessian(&[0.3, -0.2, 1.0]));
        drop(reused);
        let empty = WordBlock::reusing(&parent, &order, &[], block.into_buffers());
        assert!(empty.local_of.iter().all(|&l| l == u32::MAX), "local_of is given back reset");
    }

    /// The gradient-only evaluation HMC uses inside a trajectory gives exactly the
    /// gradient of the full evaluation, and records β = exp(μ) at its point.
    #[test]
    fn gradient_only_evaluation_matches_the_full_one() {
        let s = setup();
        let cond = s.cond();
        let mut rng = stream(12, Purpose::Estimate, 0, 0);
        for _ in 0..5 {
            let mu: Vec<f64> = (0..cond.dim()).map(|_| rng.random::<f64>() * 3.0 - 2.0).collect();
            let (mut full, mut only) = (vec![0.0; mu.len()], vec![0.0; mu.len()]);
            assert!(cond.logp_grad(&mu, &mut full).is_finite());
            assert!(cond.grad(&mu, &mut only));
            assert_eq!(full, only);
            let rates = cond.rates_if_last_evaluated_at(&mu).expect("last point");
            assert!(rates.iter().zip(&mu).all(|(b, &m)| *b == fast_exp(m)));
        }
        assert!(cond.rates_if_last_evaluated_at(&[0.0; 5]).is_none());
    }
}
