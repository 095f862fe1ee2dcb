//! Graphs: from an uploaded node and edge list to the numbered form relational models
//! read.
//!
//! Why it exists: HDP-aMMSB (and any later relational model) sees only node indices
//! and a sorted adjacency; names, self-loops, duplicate edges and unknown nodes are
//! dealt with here, once, with errors that name the offending field. Like
//! [`crate::corpus`], nothing here knows about HTTP, SQL or tokio.
//!
//! Invariants of a [`Graph`]: node names are unique and non-empty; every adjacency
//! list is sorted, free of duplicates and of self-loops; an undirected graph stores
//! each edge in both endpoints' lists.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Largest graph accepted. HDP-aMMSB's pass costs O(N²K), so ten thousand nodes is
/// already a long fit; the cap keeps one upload from exhausting memory.
pub const MAX_NODES: usize = 10_000;
/// Largest number of edges accepted in one upload.
pub const MAX_EDGES: usize = 2_000_000;

/// A validated graph.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Graph {
    /// Node names, in upload order; node `i` is `nodes[i]`.
    pub nodes: Vec<String>,
    pub directed: bool,
    /// Out-neighbours of each node (all neighbours when undirected), sorted, unique,
    /// never the node itself.
    pub adjacency: Vec<Vec<u32>>,
}

/// What an upload produced, reported back to the uploader and kept as list columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphStats {
    pub num_nodes: usize,
    /// Distinct edges kept (an undirected edge counts once).
    pub num_edges: usize,
    pub directed: bool,
    pub self_loops_dropped: usize,
    pub duplicate_edges_dropped: usize,
}

/// An upload that cannot become a graph; `field` names the offending JSON path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct GraphError {
    pub field: String,
    pub message: String,
}

impl GraphError {
    fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        GraphError { field: field.into(), message: message.into() }
    }
}

/// Build a graph from node names and edges given by name. Self-loops and repeated
/// edges are dropped and counted; an unknown or empty node name, a repeated node or a
/// graph over the size caps is an error.
pub fn build_graph(nodes: Vec<String>, edges: &[(String, String)], directed: bool) -> Result<(Graph, GraphStats), GraphError> {
    if nodes.len() < 2 {
        return Err(GraphError::new("nodes", "a graph needs at least two nodes"));
    }
    if nodes.len() > MAX_NODES {
        return Err(GraphError::new("nodes", format!("{} nodes; at most {MAX_NODES} are accepted", nodes.len())));
    }
    if edges.len() > MAX_EDGES {
        return Err(GraphError::new("edges", format!("{} edges; at most {MAX_EDGES} are accepted", edges.len())));
    }
    let mut index: HashMap<&str, u32> = HashMap::with_capacity(nodes.len());
    for (i, name) in nodes.iter().enumerate() {
        if name.trim().is_empty() {
            return Err(GraphError::new(format!("nodes[{i}]"), "node names must be non-empty"));
        }
        if index.insert(name.as_str(), i as u32).is_some() {
            return Err(GraphError::new(format!("nodes[{i}]"), format!("node {name:?} is listed twice")));
        }
    }
    let lookup = |e: usize, side: usize, name: &str| -> Result<u32, GraphError> {
        index.get(name).copied().ok_or_else(|| GraphError::new(format!("edges[{e}][{side}]"), format!("unknown node {name:?}")))
    };
    let mut adjacency: Vec<Vec<u32>> = vec![Vec::new(); nodes.len()];
    let mut self_loops = 0;
    for (e, (from, to)) in edges.iter().enumerate() {
        let (i, j) = (lookup(e, 0, from)?, lookup(e, 1, to)?);
        if i == j {
            self_loops += 1;
            continue;
        }
        adjacency[i as usize].push(j);
        if !directed {
            adjacency[j as usize].push(i);
        }
    }
    let mut stored = 0;
    for list in &mut adjacency {
        list.sort_unstable();
        list.dedup();
        stored += list.len();
    }
    let num_edges = if directed { stored } else { stored / 2 };
    let stats = GraphStats {
        num_nodes: nodes.len(),
        num_edges,
        directed,
        self_loops_dropped: self_loops,
        duplicate_edges_dropped: edges.len() - self_loops - num_edges,
    };
    Ok((Graph { nodes, directed, adjacency }, stats))
}

/// Node pairs (i, j), i ≠ j, a relational model observes on `num_nodes` nodes: all
/// ordered pairs when directed, unordered ones otherwise.
pub fn observed_pairs(num_nodes: usize, directed: bool) -> u64 {
    let n = num_nodes as u64;
    let ordered = n * n.saturating_sub(1);
    if directed {
        ordered
    } else {
        ordered / 2
    }
}

impl GraphStats {
    pub fn num_observed_pairs(&self) -> u64 {
        observed_pairs(self.num_nodes, self.directed)
    }
}

impl Graph {
    pub fn num_nodes(&self) -> usize {
        self.nodes.len()
    }

    /// Is there an edge i → j (i — j when undirected)?
    pub fn has_edge(&self, i: usize, j: usize) -> bool {
        self.adjacency[i].binary_search(&(j as u32)).is_ok()
    }

    /// Edges kept (an undirected edge counts once).
    pub fn num_edges(&self) -> usize {
        let stored: usize = self.adjacency.iter().map(Vec::len).sum();
        if self.directed {
            stored
        } else {
            stored / 2
        }
    }

    /// Ordered node pairs (i, j), i ≠ j, that a relational model observes: all of them
    /// when directed, i < j when undirected.
    pub fn num_observed_pairs(&self) -> usize {
        observed_pairs(self.nodes.len(), self.directed) as usize
    }

    /// Versioned postcard encoding, as stored.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![GRAPH_FORMAT_VERSION];
        out.extend(postcard::to_allocvec(self).expect("a graph always encodes"));
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<Graph, String> {
        match bytes.split_first() {
            Some((&GRAPH_FORMAT_VERSION, rest)) => postcard::from_bytes(rest).map_err(|e| e.to_string()),
            Some((v, _)) => Err(format!("unknown graph format version {v}")),
            None => Err("empty graph blob".into()),
        }
    }
}

const GRAPH_FORMAT_VERSION: u8 = 1;

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn edges(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    #[test]
    fn undirected_edges_are_symmetric_and_cleaned() {
        let (g, s) = build_graph(names(&["a", "b", "c"]), &edges(&[("a", "b"), ("b", "a"), ("c", "c"), ("b", "c")]), false).unwrap();
        assert_eq!(g.adjacency, vec![vec![1], vec![0, 2], vec![1]]);
        assert_eq!(s, GraphStats { num_nodes: 3, num_edges: 2, directed: false, self_loops_dropped: 1, duplicate_edges_dropped: 1 });
        assert!(g.has_edge(2, 1) && g.has_edge(1, 2) && !g.has_edge(0, 2));
        assert_eq!(g.num_edges(), 2);
        assert_eq!(g.num_observed_pairs(), 3);
    }

    #[test]
    fn directed_edges_keep_their_direction() {
        let (g, s) = build_graph(names(&["a", "b", "c"]), &edges(&[("a", "b"), ("b", "a"), ("a", "b")]), true).unwrap();
        assert_eq!(g.adjacency, vec![vec![1], vec![0], vec![]]);
        assert_eq!((s.num_edges, s.duplicate_edges_dropped), (2, 1));
        assert_eq!(g.num_observed_pairs(), 6);
    }

    #[test]
    fn errors_name_the_field() {
        let e = build_graph(names(&["a", "b"]), &edges(&[("a", "b"), ("a", "z")]), false).unwrap_err();
        assert_eq!(e.field, "edges[1][1]");
        assert!(e.message.contains("\"z\""));
        assert_eq!(build_graph(names(&["a", "a"]), &[], false).unwrap_err().field, "nodes[1]");
        assert_eq!(build_graph(names(&["a", " "]), &[], false).unwrap_err().field, "nodes[1]");
        assert_eq!(build_graph(names(&["a"]), &[], false).unwrap_err().field, "nodes");
    }

    #[test]
    fn encoding_round_trips() {
        let (g, _) = build_graph(names(&["a", "b", "c"]), &edges(&[("a", "c")]), true).unwrap();
        assert_eq!(Graph::decode(&g.encode()).unwrap(), g);
        assert!(Graph::decode(&[9, 1, 2]).is_err());
    }
}
