//! `topicd simulate-hpc`: write a corpus drawn from HPC's generative process as JSONL.
//!
//! Why it exists: the HPC benchmark needs corpora of a stated size and shape (tens of
//! thousands of documents, hundreds of labels on a deep tree) whose truth is known,
//! and users can test a deployment the same way. Same seed, same file.

use crate::models::hpc::simulate::{simulate, SimulationConfig};
use clap::Args;
use serde_json::{json, Map, Value};
use std::io::{BufWriter, Write};
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// Output JSONL file (one document per line: id, counts, label paths).
    #[arg(long)]
    pub out: PathBuf,
    #[arg(long, default_value_t = 30_000)]
    pub documents: usize,
    #[arg(long, default_value_t = 15_000)]
    pub words: usize,
    /// Children per node at each level: `6,9,10` gives 6 + 54 + 540 = 600 labels.
    #[arg(long, default_value = "6,9,10", value_delimiter = ',')]
    pub fanout: Vec<usize>,
    /// Mean of the root log rates (sets the document length).
    #[arg(long, default_value_t = -7.0, allow_hyphen_values = true)]
    pub psi: f64,
    #[arg(long, default_value_t = 1.0)]
    pub gamma2: f64,
    #[arg(long, default_value_t = 6.0)]
    pub nu: f64,
    #[arg(long, default_value_t = 0.3)]
    pub sigma2: f64,
    /// Mean label affinity (sets the labels per document).
    #[arg(long, default_value_t = -6.0, allow_hyphen_values = true)]
    pub eta: f64,
    #[arg(long, default_value_t = 1.0)]
    pub lambda2: f64,
    #[arg(long, default_value_t = 65.0)]
    pub mean_length: f64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// Simulate and write the corpus; prints one JSON line of its sizes.
pub fn run(args: SimulateArgs) -> Result<(), String> {
    let config = SimulationConfig {
        documents: args.documents,
        words: args.words,
        fanout: args.fanout.clone(),
        psi: args.psi,
        gamma2: args.gamma2,
        nu: args.nu,
        sigma2: args.sigma2,
        eta: args.eta,
        lambda2: args.lambda2,
        mean_length: args.mean_length,
    };
    let sim = simulate(&config, args.seed);
    let file = std::fs::File::create(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    let mut out = BufWriter::new(file);
    let (mut tokens, mut labels) = (0u64, 0usize);
    for (d, row) in sim.counts.iter().enumerate() {
        let counts: Map<String, Value> = row.iter().map(|&(w, c)| (format!("w{w}"), json!(c))).collect();
        tokens += row.iter().map(|&(_, c)| c as u64).sum::<u64>();
        labels += sim.doc_labels[d].len();
        let paths: Vec<String> = sim.doc_labels[d].iter().map(|&node| sim.label_path(node)).collect();
        writeln!(out, "{}", json!({"id": format!("d{d}"), "counts": counts, "labels": paths})).map_err(|e| e.to_string())?;
    }
    out.flush().map_err(|e| e.to_string())?;
    let docs = sim.counts.len().max(1) as f64;
    println!(
        "{}",
        json!({"documents": sim.counts.len(), "labels": sim.num_labels(), "tokens": tokens, "tokens_per_document": tokens as f64 / docs, "labels_per_document": labels as f64 / docs})
    );
    Ok(())
}
