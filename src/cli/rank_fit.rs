//! `topicd rank-fit`: one rank of a job's MPI world, started by a replica's launcher.
//!
//! Why it exists: a job that asks for `"ranks": R` is run by a replica started with
//! `--mpi-launch` as `LAUNCHER topicd rank-fit` ([`crate::world`]). Rank 0 reads the
//! job (family, params, seed, threads, checkpoint interval), the stored corpus' bytes
//! and the checkpoint to resume from on its standard input, tells every rank the job,
//! and writes the fit's progress, samples, checkpoints and model as frames on its
//! standard output; a `cancel` frame (or the replica closing its input) stops the fit.
//! The other ranks receive their shards from rank 0 inside the family's distributed fit
//! and write nothing.

use crate::corpus::Corpus;
use crate::models::causes::Internal;
use crate::models::registry;
use crate::models::{CancelToken, Checkpointing, FitContext, FitError, Progress, ALWAYS_READY};
use crate::ranks::Ranks;
use crate::world::protocol::{error_json, progress_json, read_frame, resume_json, Frame, Request};
use std::io::{BufRead, Write};
use std::sync::Mutex;

/// What rank 0 reads before the fit starts.
struct Job {
    request: Request,
    corpus: Corpus,
    resume: Option<Vec<u8>>,
}

/// Read the job's frames from standard input up to `start`.
fn read_job(input: &mut impl BufRead) -> Result<Job, String> {
    let (mut request, mut corpus, mut resume) = (None, None, None);
    loop {
        let frame = read_frame(input, &mut |line| eprintln!("topicd rank-fit: skipped {line:?}"))
            .map_err(|e| format!("reading the job: {e}"))?
            .ok_or("the job's input ended before its start")?;
        match frame.kind.as_str() {
            "request" => request = Some(serde_json::from_slice::<Request>(&frame.bytes).map_err(|e| format!("the job's request: {e}"))?),
            "corpus" => corpus = Some(Corpus::decode_without_order(&frame.bytes).map_err(|e| format!("the stored corpus is corrupt: {e}"))?),
            "resume" => resume = Some(frame.bytes),
            "start" => break,
            other => return Err(format!("a frame of kind {other:?} before the job's start")),
        }
    }
    Ok(Job { request: request.ok_or("no request")?, corpus: corpus.ok_or("no corpus")?, resume })
}

/// Rank 0's standard output, one frame at a time.
struct Out(Mutex<std::io::Stdout>);

impl Out {
    fn send(&self, frame: Frame) {
        let mut out = self.0.lock().expect("stdout lock");
        if let Err(e) = frame.write(&mut *out) {
            eprintln!("topicd rank-fit: could not write a {} frame: {e}", frame.kind);
        }
    }
}

/// Run this rank; errors are returned as messages (rank 0 has already sent its frame).
pub fn run() -> Result<(), String> {
    let ranks = super::ranks::join_world()?;
    let ranks = ranks.as_ref();
    let out = Out(Mutex::new(std::io::stdout()));
    let job = ranks.is_root().then(|| read_job(&mut std::io::stdin().lock()));
    // Rank 0 tells every rank the request, or that there is none.
    let mut header = match &job {
        Some(Ok(job)) => serde_json::to_vec(&job.request).expect("a request encodes"),
        _ => Vec::new(),
    };
    ranks.broadcast(0, &mut header);
    if header.is_empty() {
        let message = match job {
            Some(Err(e)) => e,
            _ => "rank 0 could not read the job".to_string(),
        };
        if ranks.is_root() {
            out.send(Frame::json("error", &error_json(&FitError::Internal(Internal::JobNotRead { detail: message.clone() }))));
        }
        return Err(message);
    }
    let request: Request = serde_json::from_slice(&header).map_err(|e| e.to_string())?;
    let (corpus, resume) = match job {
        Some(Ok(job)) => (Some(job.corpus), job.resume),
        _ => (None, None),
    };
    let result = fit(&request, corpus, resume, ranks, &out);
    if ranks.is_root() {
        match &result {
            Ok(()) => out.send(Frame::new("done", 0, Vec::new())),
            Err(e) => out.send(Frame::json("error", &error_json(e))),
        }
    }
    result.map_err(|e| e.to_string())
}

/// The family's distributed fit; rank 0 streams what it reports and, at the end, the
/// lexicon and the model.
fn fit(request: &Request, corpus: Option<Corpus>, resume: Option<Vec<u8>>, ranks: &dyn Ranks, out: &Out) -> Result<(), FitError> {
    let family = registry::lookup(&request.family)
        .and_then(registry::Family::topics)
        .ok_or_else(|| FitError::Internal(Internal::NotTopicFamily { name: request.family.clone() }))?;
    let params = family.parse_params(&request.params)?;
    let lexicon = corpus.as_ref().map(|c| postcard::to_allocvec(&c.lexicon).expect("plain data encodes"));
    let threads = request.threads.max(1);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| FitError::Internal(Internal::ThreadPool { threads, detail: e.to_string() }))?;
    let cancel = CancelToken::new();
    let progress = |p: Progress| out.send(Frame::json("progress", &progress_json(&p)));
    let sample = |it: u64, bytes: Vec<u8>| out.send(Frame::new("sample", it, bytes));
    let save = |it: u64, bytes: Vec<u8>| out.send(Frame::new("checkpoint", it, bytes));
    let resumed = |r: crate::models::chain::Resume| out.send(Frame::json("resumed", &resume_json(&r)));
    let quiet = |_: Progress| {};
    let no_sample = |_: u64, _: Vec<u8>| {};
    let every = request.checkpoint_every_s.filter(|&s| s > 0.0).and_then(|s| std::time::Duration::try_from_secs_f64(s).ok());
    let ctx = if ranks.is_root() {
        FitContext {
            progress: &progress,
            cancel: &cancel,
            sample: &sample,
            checkpoint: Checkpointing { every, save: &save, resume_from: resume.as_deref(), resumed: &resumed, ready: ALWAYS_READY },
        }
    } else {
        FitContext { progress: &quiet, cancel: &cancel, sample: &no_sample, checkpoint: Checkpointing::OFF }
    };
    if ranks.is_root() {
        // A cancel frame, or the replica closing rank 0's input, stops the fit. The
        // reader is left behind when the fit ends: the process exits with it.
        let cancel = cancel.clone();
        std::thread::spawn(move || {
            let mut input = std::io::stdin().lock();
            while let Ok(Some(frame)) = read_frame(&mut input, &mut |_| {}) {
                if frame.kind == "cancel" {
                    break;
                }
            }
            cancel.cancel();
        });
    }
    let model = pool.install(|| family.fit_ranked(corpus, &params, request.seed, &ctx, ranks))?;
    if let (Some(model), Some(lexicon)) = (model, lexicon) {
        out.send(Frame::new("lexicon", 0, lexicon));
        out.send(Frame::new("model", 0, model.encode()));
    }
    let _ = std::io::stdout().flush();
    Ok(())
}
