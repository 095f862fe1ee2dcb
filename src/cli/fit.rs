//! `topicd fit`: the fit code path without HTTP.

use crate::corpus::ndjson::NdjsonReader;
use crate::corpus::preprocess::DuplicateIds;
use crate::corpus::Corpus;
use crate::corpus::{PreprocessOptions, StopWords};
use crate::jobs::submit::{FitRequest, Host, ParsedFit, SubmitError};
use crate::models::capabilities::Input;
use crate::models::chain::Resume;
use crate::models::erased::TopicEntry;
use crate::models::options::JobOptions;
use crate::models::registry::{self, InputStats};
use crate::models::{CancelToken, Checkpointing, FitContext, Progress, StepKind, ALWAYS_READY};
use crate::ranks::Ranks;
use clap::Args;
use serde_json::{json, Map, Value};
use std::io::Read;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Instant;

#[derive(Debug, Clone, Args)]
pub struct FitArgs {
    /// JSONL corpus: one document object per line (`text` or `counts`, `labels`, ...; an
    /// unknown key is an error, extra data goes in `meta`).
    #[arg(long)]
    pub input: PathBuf,
    /// Model family (e.g. `lda`).
    #[arg(long, default_value = "lda")]
    pub model: String,
    #[arg(long)]
    pub topics: Option<u64>,
    #[arg(long)]
    pub alpha: Option<f64>,
    #[arg(long)]
    pub beta: Option<f64>,
    #[arg(long)]
    pub iterations: Option<u64>,
    #[arg(long)]
    pub burn_in: Option<u64>,
    #[arg(long)]
    pub thin: Option<u64>,
    /// Further model parameters as `key=value` (value parsed as JSON, else a string).
    #[arg(long = "param", value_name = "KEY=VALUE")]
    pub params: Vec<String>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Stop words: `english`, `none`, or a comma-separated list.
    #[arg(long, default_value = "english")]
    pub stopwords: String,
    #[arg(long)]
    pub stem: bool,
    /// Keep case (no lowercasing).
    #[arg(long)]
    pub keep_case: bool,
    #[arg(long, default_value_t = 1)]
    pub min_df: usize,
    #[arg(long, default_value_t = 1.0)]
    pub max_df: f64,
    #[arg(long)]
    pub top_n: Option<usize>,
    #[arg(long)]
    pub top_fraction: Option<f64>,
    /// Skip documents whose id repeats an earlier one instead of failing.
    #[arg(long)]
    pub keep_first_duplicate: bool,
    /// Write the fitted model's bytes (what the service stores as the model) to this file.
    /// Under `mpirun`, rank 0 writes it.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Keep the fit's latest checkpoint in this file (replaced atomically) every
    /// `--checkpoint-every-s`; a fit killed part-way continues with `--resume FILE`, in
    /// one process or over any number of ranks. Under `mpirun`, rank 0 writes it.
    #[arg(long)]
    pub checkpoint: Option<PathBuf>,
    #[arg(long, default_value_t = 60.0)]
    pub checkpoint_every_s: f64,
    /// Continue from a checkpoint `--checkpoint` wrote (the same corpus, model,
    /// parameters and seed); one that does not fit is reported and the fit starts over.
    #[arg(long)]
    pub resume: Option<PathBuf>,
}

impl FitArgs {
    fn preprocess(&self) -> PreprocessOptions {
        let stopwords = match self.stopwords.as_str() {
            "english" => StopWords::English,
            "none" => StopWords::None,
            list => StopWords::List(list.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()),
        };
        PreprocessOptions {
            lowercase: !self.keep_case,
            stopwords,
            stem: self.stem,
            min_df: self.min_df,
            max_df: self.max_df,
            top_n: self.top_n,
            top_fraction: self.top_fraction,
            duplicate_ids: if self.keep_first_duplicate { DuplicateIds::KeepFirst } else { DuplicateIds::Reject },
            ..PreprocessOptions::default()
        }
    }

    fn params_json(&self) -> Result<Value, String> {
        let mut m = Map::new();
        let mut put = |k: &str, v: Option<Value>| {
            if let Some(v) = v {
                m.insert(k.to_string(), v);
            }
        };
        put("topics", self.topics.map(Value::from));
        put("alpha", self.alpha.map(Value::from));
        put("beta", self.beta.map(Value::from));
        put("iterations", self.iterations.map(Value::from));
        put("burn_in", self.burn_in.map(Value::from));
        put("thin", self.thin.map(Value::from));
        for kv in &self.params {
            let (k, v) = kv.split_once('=').ok_or_else(|| format!("--param {kv:?} is not KEY=VALUE"))?;
            let v = serde_json::from_str(v).unwrap_or_else(|_| Value::String(v.to_string()));
            m.insert(k.to_string(), v);
        }
        Ok(Value::Object(m))
    }
}

/// Read and preprocess the JSONL corpus with the same reader as an NDJSON upload: strict
/// document keys, tree lines, errors naming their line.
fn read_corpus(args: &FitArgs) -> Result<crate::corpus::Corpus, String> {
    let mut file = std::fs::File::open(&args.input).map_err(|e| format!("{}: {e}", args.input.display()))?;
    let mut reader = NdjsonReader::new(args.preprocess());
    let mut buffer = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buffer).map_err(|e| format!("{}: {e}", args.input.display()))?;
        if n == 0 {
            break;
        }
        reader.push(&buffer[..n]).map_err(|e| e.to_string())?;
    }
    reader.finish().map_err(|e| e.to_string())
}

/// (iteration, time, loglik, refit a mode) of one progress report.
type Report = (u64, Instant, Option<f64>, Option<bool>);

/// Run the fit and print one JSON line; errors are returned as messages. Started by an
/// MPI launcher with several ranks (feature `mpi`), rank 0 reads the corpus and hands
/// every rank its shard, the fit runs over the ranks and rank 0 prints and writes.
pub fn run(args: FitArgs) -> Result<(), String> {
    let ranks = super::ranks::join_world()?;
    run_on(args, ranks.as_ref())
}

fn run_on(args: FitArgs, ranks: &dyn Ranks) -> Result<(), String> {
    let (family, fit) = parse_job(&args)?;
    let (params, threads) = (fit.params(), fit.threads(args.threads));
    let t_read = Instant::now();
    let (corpus, memory_estimate) = read_on_root(&args, &fit, ranks)?.unzip();
    let read_seconds = t_read.elapsed().as_secs_f64();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().map_err(|e| e.to_string())?;
    let reports: Mutex<Vec<Report>> = Mutex::new(Vec::new());
    let on_progress = |p: Progress| {
        let refit = p.kind.map(|k| k == StepKind::Refit);
        reports.lock().expect("progress lock").push((p.iteration, Instant::now(), p.loglik_per_token, refit))
    };
    let cancel = CancelToken::new();
    let quiet = |_: Progress| {};
    let progress: &(dyn Fn(Progress) + Sync) = if ranks.is_root() { &on_progress } else { &quiet };
    let resume = match (&args.resume, ranks.is_root()) {
        (Some(path), true) => Some(std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?),
        _ => None,
    };
    let resumed: Mutex<Option<String>> = Mutex::new(None);
    let save_checkpoint = |_: u64, bytes: Vec<u8>| {
        if let Some(path) = &args.checkpoint {
            if let Err(e) = write_atomically(path, &bytes) {
                eprintln!("topicd fit: checkpoint not written: {}: {e}", path.display());
            }
        }
    };
    let on_resume = |r: Resume| {
        *resumed.lock().expect("resume lock") = Some(match r {
            Resume::From(it) => format!("from iteration {it}"),
            Resume::Rejected(reason) => reason,
        })
    };
    let checkpoint = if ranks.is_root() {
        Checkpointing {
            every: args.checkpoint.as_ref().map(|_| std::time::Duration::from_secs_f64(args.checkpoint_every_s.max(0.0))),
            save: &save_checkpoint,
            resume_from: resume.as_deref(),
            resumed: &on_resume,
            ready: ALWAYS_READY,
        }
    } else {
        Checkpointing::OFF
    };
    let ctx = FitContext { progress, cancel: &cancel, sample: &|_, _| {}, checkpoint };
    let stats = corpus.as_ref().map(|c| (c.stats.clone(), c.num_documents(), c.num_terms(), c.counts.nnz()));
    let t_fit = Instant::now();
    let model = if ranks.size() > 1 {
        pool.install(|| family.fit_ranked(corpus, params, fit.seed(), &ctx, ranks)).map_err(|e| e.to_string())?
    } else {
        let corpus = corpus.expect("one process reads the corpus");
        Some(pool.install(|| family.fit(&corpus, params, fit.seed(), &ctx)).map_err(|e| e.to_string())?)
    };
    let fit_seconds = t_fit.elapsed().as_secs_f64();
    // Every rank's peak memory and bytes sent, gathered for rank 0's report.
    let mine = serde_json::to_vec(&json!({"rank": ranks.rank(), "peak_rss_bytes": peak_rss_bytes(), "bytes_sent": ranks.bytes_sent()})).expect("JSON encodes");
    let per_rank: Option<Vec<Value>> = ranks.gather_to_root(&mine).map(|all| all.iter().map(|b| serde_json::from_slice(b).expect("a rank's report")).collect());
    let (Some(model), Some(per_rank), Some((stats, documents, terms, nonzeros)), Some(memory_estimate)) = (model, per_rank, stats, memory_estimate) else {
        return Ok(());
    };
    if let Some(out) = &args.out {
        std::fs::write(out, model.encode()).map_err(|e| format!("{}: {e}", out.display()))?;
    }
    let measured = Measured {
        documents,
        terms,
        nonzeros,
        tokens: stats.num_tokens,
        memory_estimate,
        per_rank,
        resumed: resumed.into_inner().expect("resume lock"),
        read_seconds,
        fit_seconds,
        timing: Timing::of(&reports.into_inner().expect("progress lock"), t_fit, fit_seconds),
    };
    println!("{}", measured.report(&args, family.name(), threads, ranks.size(), model.as_ref()));
    Ok(())
}

/// What rank 0 measured of a fit, for its one line of JSON.
struct Measured {
    documents: usize,
    terms: usize,
    nonzeros: usize,
    tokens: u64,
    memory_estimate: u64,
    per_rank: Vec<Value>,
    resumed: Option<String>,
    read_seconds: f64,
    fit_seconds: f64,
    timing: Timing,
}

impl Measured {
    /// The line `topicd fit` prints.
    fn report(&self, args: &FitArgs, family: &str, threads: usize, ranks: usize, model: &dyn crate::models::TopicModel) -> Value {
        let t = &self.timing;
        json!({
            "model": family,
            "documents": self.documents,
            "terms": self.terms,
            "tokens": self.tokens,
            "nonzeros": self.nonzeros,
            "topics": model.num_topics(),
            "iterations": t.iterations,
            "threads": threads,
            "ranks": ranks,
            "per_rank": self.per_rank,
            "seed": args.seed,
            "resumed": self.resumed,
            "read_seconds": self.read_seconds,
            "fit_seconds": self.fit_seconds,
            "seconds_per_iteration": t.per_iteration,
            "tokens_per_second": self.tokens as f64 / t.per_iteration,
            "loglik_per_token": t.loglik,
            "seconds_per_steady_scan": t.steady_scan,
            "seconds_per_refit_scan": t.refit_scan,
            "memory_estimate_bytes": self.memory_estimate,
            "peak_rss_bytes": peak_rss_bytes(),
            "diagnostics": model.diagnostics(),
        })
    }
}

/// The command line's fit as a [`FitRequest`], drafted and parsed by
/// [`crate::jobs::submit`] (on every rank, before any reads the corpus), with its
/// topic-model family. `--param threads=N` is the runner's option, as in a job's params:
/// it overrides `--threads` and is not a model parameter.
fn parse_job(args: &FitArgs) -> Result<(&'static dyn TopicEntry, ParsedFit), String> {
    let request = FitRequest { model: args.model.clone(), params: args.params_json()?, options: JobOptions::default(), seed: args.seed };
    let draft = request.draft().map_err(|e| submit_message(e, args))?;
    let family = draft.family().family().topics().ok_or_else(|| unknown_model(args))?;
    let fit = draft.parse().map_err(|e| submit_message(e, args))?;
    Ok((family, fit))
}

/// A refused fit as `topicd fit` reports it: the message both edges show, the unknown
/// family in the command line's own words.
fn submit_message(e: SubmitError, args: &FitArgs) -> String {
    match e {
        SubmitError::UnknownModel(_) => unknown_model(args),
        e => e.to_string(),
    }
}

/// `--model` names no topic-model family (`topicd fit` reads a corpus).
fn unknown_model(args: &FitArgs) -> String {
    format!("unknown model {:?}; known: {}", args.model, registry::names_fitting(Input::Corpus).join(", "))
}

/// Rank 0 reads the corpus and checks the fit against it ([`ParsedFit::plan`], which
/// also estimates its peak memory); the other ranks get `None`. Over several ranks it
/// first tells the others whether that went well, so a bad line ends every rank with
/// the same message.
fn read_on_root(args: &FitArgs, fit: &ParsedFit, ranks: &dyn Ranks) -> Result<Option<(Corpus, u64)>, String> {
    let host = Host { default_threads: args.threads, fit_memory_budget: None, starts_worlds: None };
    let read = ranks.is_root().then(|| {
        read_corpus(args).and_then(|corpus| {
            let plan = fit.plan(InputStats::Corpus(&corpus.stats), &host).map_err(|e| submit_message(e, args))?;
            let memory = plan.memory_bytes;
            Ok((corpus, memory))
        })
    });
    if ranks.size() > 1 {
        let mut verdict = match &read {
            Some(Err(e)) => e.clone().into_bytes(),
            _ => Vec::new(),
        };
        ranks.broadcast(0, &mut verdict);
        if !verdict.is_empty() {
            // Every rank says why before any returns: once one rank exits with an error,
            // mpirun ends the others, and a rank ended before it printed says nothing.
            // The message is printed here, and the error returned is empty (`main`
            // prints nothing more).
            eprintln!("topicd fit: {}", String::from_utf8_lossy(&verdict));
            // A barrier: no rank gets the gathered bytes before every rank has sent its.
            ranks.all_gather(&[]);
            return Err(String::new());
        }
    }
    read.transpose()
}

/// What the progress reports say about the fit's pace.
struct Timing {
    iterations: u64,
    /// Steady-state seconds per sweep: from the end of sweep 1 to the end of the last.
    per_iteration: f64,
    /// The last log-likelihood per token reported.
    loglik: Option<f64>,
    /// Schedules that mix kinds of step (HPC): mean seconds of the scans that keep the
    /// modes and of those that refit them.
    steady_scan: Option<f64>,
    refit_scan: Option<f64>,
}

impl Timing {
    fn of(reports: &[Report], t_fit: Instant, fit_seconds: f64) -> Timing {
        let iterations = reports.last().map(|r| r.0).unwrap_or(0);
        let per_iteration = match (reports.first(), reports.last()) {
            (Some(a), Some(b)) if b.0 > a.0 => b.1.duration_since(a.1).as_secs_f64() / (b.0 - a.0) as f64,
            _ => fit_seconds / iterations.max(1) as f64,
        };
        let loglik = reports.iter().rev().find_map(|r| r.2);
        let mut by_kind = [(0.0, 0usize); 2];
        let mut previous = t_fit;
        for r in reports {
            if let Some(refit) = r.3 {
                let slot = &mut by_kind[refit as usize];
                slot.0 += r.1.duration_since(previous).as_secs_f64();
                slot.1 += 1;
            }
            previous = r.1;
        }
        let mean = |(total, n): (f64, usize)| (n > 0).then(|| total / n as f64);
        Timing { iterations, per_iteration, loglik, steady_scan: mean(by_kind[0]), refit_scan: mean(by_kind[1]) }
    }
}

/// Replace `path` with `bytes` so that a reader (or a kill) never sees half a file: write
/// a sibling, flush it to disk, rename it over.
fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".partial");
    let tmp = PathBuf::from(tmp);
    let mut file = std::fs::File::create(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)
}

/// This process' peak resident memory (`VmHWM` of `/proc/self/status`), where Linux
/// reports it. It includes the corpus as `topicd fit` builds it and the process' base,
/// which a fit's estimate leaves out; `topicd fit` holds no checkpoints.
fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse::<u64>().ok().map(|kb| kb * 1024)
}
