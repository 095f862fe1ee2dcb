//! The starting point of the fit: node memberships seeded by label propagation.
//!
//! Why it exists: memoized VI is a local search and the MMSB objective has many poor
//! local optima. From diffuse random memberships, most unlinked pairs are explained by
//! the background state, so every community's link posterior is driven near 1; unlinked
//! pairs then repel co-members strongly and the fit settles on many small near-cliques
//! (on a 4-block planted partition with K = 10: ten communities with link probability
//! 0.95 and NMI 0.68, although the planted partition has a far higher objective). bnpy
//! seeds each community from one node's links ("randexamples"); with K above the truth
//! that still splits blocks, and without merge moves they never rejoin.
//!
//! So the fit starts from a clustering that picks its own number of groups: asynchronous
//! label propagation (Raghavan, Albert & Kumara 2007), each node in turn adopting the
//! label most common among its neighbours (in- and out-neighbours when directed), ties
//! broken at random, nodes visited in a random order, at most [`LPA_SWEEPS`] sweeps or
//! until no label changes. Everything random comes from
//! `crate::rng::stream(seed, Purpose::Init, sweep, 0)`: the propagation is sequential
//! (O(edges) per sweep), so it is thread-count independent.
//!
//! The [`crate::models::hdp_ammsb::params::AmmsbParams::communities`] largest groups of
//! at least two nodes become communities 0, 1, … (largest first, so the sticks' ordering
//! matches); a node of a smaller group (or a singleton, e.g. an isolated node) takes the
//! community most common among its neighbours' seeds, if any, and otherwise starts
//! unassigned. Node i's θ_i = α E[β] + P (h e_{g(i)} + (1 − h) w_i),
//! P the number of observed pairs i takes part in (its usage mass once data arrive),
//! h = [`SEED_CONFIDENCE`] (0 for unassigned nodes), w_i ~ Dirichlet(1, …, 1) from
//! `stream(seed, Purpose::Init, LPA_SWEEPS + 1, i)`. Sticks start with uniform expected
//! weights and the prior's concentration; link posteriors at the prior Beta(τ1, τ0).

use super::params::AmmsbParams;
use super::state::GlobalState;
use crate::graph::Graph;
use crate::inference::stick_posterior::StickPosterior;
use crate::rng::{stream, Purpose};
use rand::RngExt;
use rayon::prelude::*;

/// Upper bound on label-propagation sweeps.
pub const LPA_SWEEPS: u64 = 30;
/// Share of a node's initial usage put on its label-propagation community.
pub const SEED_CONFIDENCE: f64 = 0.9;

/// Undirected neighbour lists (in- and out-neighbours for a directed graph), sorted.
fn neighbours(graph: &Graph) -> Vec<Vec<u32>> {
    if !graph.directed {
        return graph.adjacency.clone();
    }
    let mut both = graph.adjacency.clone();
    for (i, out) in graph.adjacency.iter().enumerate() {
        for &j in out {
            both[j as usize].push(i as u32);
        }
    }
    for list in &mut both {
        list.sort_unstable();
        list.dedup();
    }
    both
}

/// Asynchronous label propagation; returns a label per node (labels are node ids).
pub fn propagate_labels(graph: &Graph, seed: u64) -> Vec<usize> {
    let n = graph.num_nodes();
    let adj = neighbours(graph);
    let mut label: Vec<usize> = (0..n).collect();
    let mut counts = vec![0usize; n];
    let mut order: Vec<usize> = (0..n).collect();
    for sweep in 0..LPA_SWEEPS {
        let mut rng = stream(seed, Purpose::Init, sweep, 0);
        for t in (1..n).rev() {
            order.swap(t, rng.random_range(0..=t));
        }
        let mut changed = false;
        for &i in &order {
            if adj[i].is_empty() {
                continue;
            }
            let mut best = 0;
            for &j in &adj[i] {
                let l = label[j as usize];
                counts[l] += 1;
                best = best.max(counts[l]);
            }
            // The labels reaching the maximum, in neighbour order (deterministic).
            let mut top: Vec<usize> = Vec::new();
            for &j in &adj[i] {
                let l = label[j as usize];
                if counts[l] == best && !top.contains(&l) {
                    top.push(l);
                }
            }
            for &j in &adj[i] {
                counts[label[j as usize]] = 0;
            }
            if top.contains(&label[i]) {
                continue;
            }
            label[i] = top[rng.random_range(0..top.len())];
            changed = true;
        }
        if !changed {
            break;
        }
    }
    label
}

/// Community of each node (`None`: not among the K largest groups of two or more nodes),
/// groups ranked by size, ties by smallest label.
pub fn seed_communities(labels: &[usize], k: usize) -> Vec<Option<usize>> {
    let n = labels.len();
    let mut size = vec![0usize; n];
    for &l in labels {
        size[l] += 1;
    }
    let mut groups: Vec<usize> = (0..n).filter(|&l| size[l] >= 2).collect();
    groups.sort_by(|&a, &b| size[b].cmp(&size[a]).then(a.cmp(&b)));
    let mut rank = vec![None; n];
    for (r, &l) in groups.iter().take(k).enumerate() {
        rank[l] = Some(r);
    }
    labels.iter().map(|&l| rank[l]).collect()
}

/// Unassigned nodes take the seed most common among their neighbours (ties: the smallest
/// community), reading only the original seeds, so the order of nodes does not matter.
pub fn adopt_neighbour_seeds(graph: &Graph, seeds: &[Option<usize>], k: usize) -> Vec<Option<usize>> {
    let adj = neighbours(graph);
    let mut counts = vec![0usize; k];
    seeds
        .iter()
        .enumerate()
        .map(|(i, s)| {
            if s.is_some() {
                return *s;
            }
            counts.iter_mut().for_each(|c| *c = 0);
            for &j in &adj[i] {
                if let Some(c) = seeds[j as usize] {
                    counts[c] += 1;
                }
            }
            let best = (0..k).max_by(|&a, &b| counts[a].cmp(&counts[b]).then(b.cmp(&a)))?;
            (counts[best] > 0).then_some(best)
        })
        .collect()
}

/// The starting globals (see the module doc).
pub fn initial_state(graph: &Graph, p: &AmmsbParams, seed: u64) -> GlobalState {
    let seeds = seed_communities(&propagate_labels(graph, seed), p.communities);
    let seeds = adopt_neighbour_seeds(graph, &seeds, p.communities);
    initial_state_from(graph, p, seed, &seeds)
}

/// The starting globals for given seed communities.
pub fn initial_state_from(graph: &Graph, p: &AmmsbParams, seed: u64, seeds: &[Option<usize>]) -> GlobalState {
    let n = graph.num_nodes();
    let k = p.communities;
    let stick = StickPosterior::new(k, p.gamma);
    let prior: Vec<f64> = stick.expected_beta().iter().map(|b| p.alpha * b).collect();
    let pairs_per_node = if graph.directed { 2 * (n - 1) } else { n - 1 } as f64;
    let mut theta = vec![0.0; n * (k + 1)];
    theta.par_chunks_mut(k + 1).enumerate().for_each(|(i, row)| {
        let mut rng = stream(seed, Purpose::Init, LPA_SWEEPS + 1, i as u64);
        let draws: Vec<f64> = (0..k).map(|_| -(1.0 - rng.random::<f64>()).ln()).collect();
        let total: f64 = draws.iter().sum();
        let h = if seeds[i].is_some() { SEED_CONFIDENCE } else { 0.0 };
        for c in 0..k {
            let hard = if seeds[i] == Some(c) { h } else { 0.0 };
            row[c] = prior[c] + pairs_per_node * (hard + (1.0 - h) * draws[c] / total);
        }
        row[k] = prior[k];
    });
    GlobalState { num_nodes: n, num_communities: k, stick, theta, link_on: vec![p.tau1; k], link_off: vec![p.tau0; k] }
}
