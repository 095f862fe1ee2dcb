//! `topicd estimate-fit`: a family's fit memory estimate from an input's summary.
//!
//! Why it exists: the service admits fits by their estimated peak memory
//! ([`crate::models::memory`]); this prints the same figure without a server or an
//! input, from the numbers an upload reports, so that benchmarks (`bench/fit_memory.py`)
//! and operators sizing `--fit-memory-mb` can compare it with measured memory.

use crate::corpus::CorpusStats;
use crate::graph::GraphStats;
use crate::models::registry::{self, InputStats};
use clap::Args;
use serde_json::{json, Map, Value};

#[derive(Debug, Clone, Args)]
pub struct EstimateArgs {
    /// Model family (`lda`, `hpc`, ..., `hdp_ammsb`).
    #[arg(long)]
    pub model: String,
    /// Corpus: documents, terms, tokens, label-tree nodes (inner ones included) and
    /// tree depth, as the upload reports them.
    #[arg(long, default_value_t = 0)]
    pub documents: usize,
    #[arg(long, default_value_t = 0)]
    pub terms: usize,
    #[arg(long, default_value_t = 0)]
    pub tokens: u64,
    #[arg(long, default_value_t = 0)]
    pub labels: usize,
    #[arg(long, default_value_t = 0)]
    pub depth: usize,
    /// Graph: nodes, kept edges, and whether it is directed.
    #[arg(long, default_value_t = 0)]
    pub nodes: usize,
    #[arg(long, default_value_t = 0)]
    pub edges: usize,
    #[arg(long)]
    pub directed: bool,
    /// Job parameters as `key=value` (value parsed as JSON, else a string).
    #[arg(long = "param", value_name = "KEY=VALUE")]
    pub params: Vec<String>,
    /// Threads of the fit.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
}

/// Print `{"model", "params" (effective), "memory_estimate_bytes"}` as one JSON line.
pub fn run(args: EstimateArgs) -> Result<(), String> {
    let family = registry::lookup(&args.model).ok_or_else(|| format!("unknown model {:?}; known: {}", args.model, registry::names().join(", ")))?;
    let mut m = Map::new();
    for kv in &args.params {
        let (k, v) = kv.split_once('=').ok_or_else(|| format!("--param {kv:?} is not KEY=VALUE"))?;
        m.insert(k.to_string(), serde_json::from_str(v).unwrap_or_else(|_| Value::String(v.to_string())));
    }
    let params = family.parse_params(&Value::Object(m)).map_err(|e| e.to_string())?;
    let corpus = CorpusStats {
        num_documents: args.documents,
        num_terms: args.terms,
        num_tokens: args.tokens,
        num_labels: args.labels,
        tree_depth: args.depth,
        ..CorpusStats::default()
    };
    let graph = GraphStats { num_nodes: args.nodes, num_edges: args.edges, directed: args.directed, self_loops_dropped: 0, duplicate_edges_dropped: 0 };
    let stats = match family {
        registry::Family::Topics(_) => InputStats::Corpus(&corpus),
        registry::Family::Communities(_) => InputStats::Graph(&graph),
    };
    let bytes = family.fit_memory(stats, &params, args.threads.max(1));
    println!("{}", json!({"model": family.name(), "params": params.json(), "threads": args.threads.max(1), "memory_estimate_bytes": bytes}));
    Ok(())
}
