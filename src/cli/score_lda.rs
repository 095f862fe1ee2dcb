//! `topicd score-lda`: the held-out log-likelihood of documents under an LDA given as
//! plain numbers (vocabulary, φ, α), by the same Chib-style estimator the `lda` family
//! uses.
//!
//! Why it exists: to compare topicd's LDA with another implementation's (tomotopy in
//! `bench/lda_optimize.sh`) on held-out documents, both models must be scored by one
//! estimator on the same tokens. This command takes the other model's parameters as
//! JSON and runs [`crate::models::lda::heldout::chib_batch`] on them.

use crate::corpus::lexicon::EncodedDoc;
use crate::models::lda::heldout::{chib_batch, ChibSettings};
use crate::models::CancelToken;
use clap::Args;
use serde::Deserialize;
use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::time::Instant;

#[derive(Debug, Clone, Args)]
pub struct ScoreLdaArgs {
    /// JSON object `{"vocabulary": [word, ...], "alpha": [α_k, ...], "phi": [[φ_kw, ...], ...]}`:
    /// K rows of φ over the vocabulary's V words (each row a distribution), K values of α.
    #[arg(long)]
    pub model: PathBuf,
    /// JSONL documents `{"counts": {word: n, ...}}`; words outside the vocabulary are ignored.
    #[arg(long)]
    pub input: PathBuf,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Gibbs sweeps before iterated conditional modes (the estimator's default if absent).
    #[arg(long)]
    pub burn_in: Option<usize>,
    /// S, the transition chain's length (the estimator's default if absent).
    #[arg(long)]
    pub chain_length: Option<usize>,
}

#[derive(Deserialize)]
struct PlainLda {
    vocabulary: Vec<String>,
    alpha: Vec<f64>,
    phi: Vec<Vec<f64>>,
}

#[derive(Deserialize)]
struct CountsLine {
    counts: BTreeMap<String, u32>,
}

/// Read the model and the documents, score them, print one JSON line.
pub fn run(args: ScoreLdaArgs) -> Result<(), String> {
    let text = std::fs::read_to_string(&args.model).map_err(|e| format!("{}: {e}", args.model.display()))?;
    let model: PlainLda = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", args.model.display()))?;
    let (k, v) = (model.alpha.len(), model.vocabulary.len());
    if k == 0 || model.phi.len() != k || model.phi.iter().any(|row| row.len() != v) {
        return Err(format!("model: phi must be {k} rows of {v} values (one per alpha, one per vocabulary word)"));
    }
    let phi: Vec<f64> = model.phi.concat();
    let index: HashMap<&str, u32> = model.vocabulary.iter().enumerate().map(|(i, w)| (w.as_str(), i as u32)).collect();
    let file = std::fs::File::open(&args.input).map_err(|e| format!("{}: {e}", args.input.display()))?;
    let mut docs = Vec::new();
    for (i, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| format!("line {}: {e}", i + 1))?;
        if line.trim().is_empty() {
            continue;
        }
        let doc: CountsLine = serde_json::from_str(&line).map_err(|e| format!("line {}: {e}", i + 1))?;
        let mut known: Vec<(u32, u32)> = Vec::new();
        let mut oov_tokens = 0;
        for (word, n) in doc.counts.into_iter().filter(|&(_, n)| n > 0) {
            match index.get(word.as_str()) {
                Some(&t) => known.push((t, n)),
                None => oov_tokens += n as u64,
            }
        }
        known.sort_unstable();
        docs.push(EncodedDoc { terms: known.iter().map(|p| p.0).collect(), counts: known.iter().map(|p| p.1).collect(), oov_tokens });
    }
    let defaults = ChibSettings::default();
    let settings = ChibSettings { burn_in: args.burn_in.unwrap_or(defaults.burn_in), chain_length: args.chain_length.unwrap_or(defaults.chain_length) };
    let pool = rayon::ThreadPoolBuilder::new().num_threads(args.threads.max(1)).build().map_err(|e| e.to_string())?;
    let start = Instant::now();
    let scores = pool.install(|| chib_batch(&docs, &phi, k, &model.alpha, &settings, args.seed, &CancelToken::new())).expect("never cancelled");
    let tokens: u64 = docs.iter().map(|d| d.counts.iter().map(|&n| n as u64).sum::<u64>()).sum();
    let oov: u64 = docs.iter().map(|d| d.oov_tokens).sum();
    let total: f64 = scores.iter().sum();
    println!(
        "{}",
        json!({
            "documents": docs.len(),
            "tokens": tokens,
            "oov_tokens": oov,
            "topics": k,
            "terms": v,
            "settings": {"burn_in": settings.burn_in, "chain_length": settings.chain_length},
            "seed": args.seed,
            "total_log_likelihood": total,
            "log_likelihood_per_token": total / tokens.max(1) as f64,
            "seconds": start.elapsed().as_secs_f64(),
        })
    );
    Ok(())
}
