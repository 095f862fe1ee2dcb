//! The frames a replica and rank 0 of its MPI world exchange over the launcher's
//! standard input and output.
//!
//! Why it exists: a job over ranks runs as `LAUNCHER topicd rank-fit`; the launcher
//! (`mpirun`, `srun`) forwards the replica's writes to rank 0's standard input and rank
//! 0's standard output back, whichever host rank 0 runs on. Every frame is a header
//! line `TOPICD <kind> <number> <length>` and `length` raw bytes, so checkpoints and
//! models of gigabytes pass without re-encoding; a line that is not a header (a
//! launcher's own message) is skipped and logged.

use crate::models::causes::Internal;
use crate::models::chain::Resume;
use crate::models::{FitError, ParamError, Progress, StepKind};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::io::{BufRead, Write};

const MAGIC: &str = "TOPICD";

/// What a job over ranks fits: everything but the corpus' bytes and a checkpoint's.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Request {
    pub family: String,
    /// The job's parsed params as stored.
    pub params: Value,
    pub seed: u64,
    /// Threads per rank.
    pub threads: usize,
    /// Seconds between checkpoints (`None`: none).
    pub checkpoint_every_s: Option<f64>,
}

/// One frame.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    pub kind: String,
    /// An iteration, where the kind has one.
    pub number: u64,
    pub bytes: Vec<u8>,
}

impl Frame {
    pub fn new(kind: &str, number: u64, bytes: Vec<u8>) -> Frame {
        Frame { kind: kind.to_string(), number, bytes }
    }

    pub fn json(kind: &str, value: &Value) -> Frame {
        Frame::new(kind, 0, serde_json::to_vec(value).expect("JSON encodes"))
    }

    /// Write the frame and flush.
    pub fn write(&self, out: &mut impl Write) -> std::io::Result<()> {
        writeln!(out, "{MAGIC} {} {} {}", self.kind, self.number, self.bytes.len())?;
        out.write_all(&self.bytes)?;
        out.flush()
    }
}

/// Read the next frame; `Ok(None)` at the end of the stream. Lines that are not a frame
/// header are handed to `noise`.
pub fn read_frame(input: &mut impl BufRead, noise: &mut dyn FnMut(&str)) -> std::io::Result<Option<Frame>> {
    let mut line = Vec::new();
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            return Ok(None);
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end();
        let parts: Vec<&str> = text.split(' ').collect();
        if let [MAGIC, kind, number, length] = parts[..] {
            if let (Ok(number), Ok(length)) = (number.parse::<u64>(), length.parse::<usize>()) {
                let mut bytes = vec![0u8; length];
                input.read_exact(&mut bytes)?;
                return Ok(Some(Frame { kind: kind.to_string(), number, bytes }));
            }
        }
        if !text.is_empty() {
            noise(text);
        }
    }
}

/// A progress report as a frame's JSON.
pub fn progress_json(p: &Progress) -> Value {
    let kind = p.kind.map(|k| match k {
        StepKind::Refit => "refit",
        StepKind::Steady => "steady",
    });
    json!({"iteration": p.iteration, "total": p.total, "loglik_per_token": p.loglik_per_token, "diagnostics": p.diagnostics, "kind": kind})
}

/// See [`progress_json`].
pub fn progress_of(v: &Value) -> Progress {
    Progress {
        iteration: v["iteration"].as_u64().unwrap_or(0),
        total: v["total"].as_u64().unwrap_or(0),
        loglik_per_token: v["loglik_per_token"].as_f64(),
        diagnostics: v["diagnostics"].as_object().cloned().unwrap_or_default(),
        kind: match v["kind"].as_str() {
            Some("refit") => Some(StepKind::Refit),
            Some("steady") => Some(StepKind::Steady),
            _ => None,
        },
    }
}

/// What became of the checkpoint a fit was handed, as a frame's JSON.
pub fn resume_json(r: &Resume) -> Value {
    match r {
        Resume::From(it) => json!({"from": it}),
        Resume::Rejected(reason) => json!({"rejected": reason}),
    }
}

/// See [`resume_json`].
pub fn resume_of(v: &Value) -> Resume {
    match v["from"].as_u64() {
        Some(it) => Resume::From(it),
        None => Resume::Rejected(v["rejected"].as_str().unwrap_or("rejected").to_string()),
    }
}

/// A fit's error as a frame's JSON: its class, its message, and its cause (the
/// variant's payload, [`crate::models::causes`]) from which [`error_of`] rebuilds it.
pub fn error_json(e: &FitError) -> Value {
    let (kind, field, cause) = match e {
        FitError::Cancelled => ("cancelled", None, Value::Null),
        FitError::Params(p) => ("params", Some(p.field.clone()), Value::Null),
        FitError::InvalidInput(c) => ("invalid-input", None, json!(c)),
        FitError::Store(c) => ("store", None, json!(c)),
        FitError::Numerical(c) => ("numerical", None, json!(c)),
        FitError::Internal(c) => ("internal", None, json!(c)),
        FitError::Interrupted(c) => ("interrupted", None, json!(c)),
    };
    let message = match e {
        FitError::Params(p) => p.message.clone(),
        other => other.to_string(),
    };
    json!({"kind": kind, "field": field, "message": message, "cause": cause})
}

/// See [`error_json`]. A frame whose cause this build cannot read back (written by
/// another build, or not a fit's error at all) is an [`Internal::Relayed`] error
/// keeping the message.
pub fn error_of(v: &Value) -> FitError {
    let message = v["message"].as_str().unwrap_or("the fit failed on rank 0").to_string();
    let cause = &v["cause"];
    let rebuilt = match v["kind"].as_str() {
        Some("cancelled") => Some(FitError::Cancelled),
        Some("params") => Some(FitError::Params(ParamError::new(v["field"].as_str().unwrap_or(""), message.clone()))),
        Some("invalid-input") => cause_of(cause).map(FitError::InvalidInput),
        Some("store") => cause_of(cause).map(FitError::Store),
        Some("numerical") => cause_of(cause).map(FitError::Numerical),
        Some("internal") => cause_of(cause).map(FitError::Internal),
        Some("interrupted") => cause_of(cause).map(FitError::Interrupted),
        _ => None,
    };
    rebuilt.unwrap_or(FitError::Internal(Internal::Relayed { message }))
}

fn cause_of<T: DeserializeOwned>(cause: &Value) -> Option<T> {
    T::deserialize(cause).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::causes::{Interruption, InvalidInput, NonFinite, Quantity, StoreFault, Stored, Written};

    /// Frames read back as written, with a launcher's lines between them skipped.
    #[test]
    fn frames_round_trip_between_noise() {
        let mut out = Vec::new();
        Frame::new("checkpoint", 7, vec![0, 10, 255, b'\n', 3]).write(&mut out).unwrap();
        out.extend_from_slice(b"mpirun: a warning\n\n");
        Frame::json("progress", &json!({"iteration": 3})).write(&mut out).unwrap();
        Frame::new("done", 0, Vec::new()).write(&mut out).unwrap();
        let mut input = std::io::Cursor::new(out);
        let mut noise = Vec::new();
        let mut frames = Vec::new();
        while let Some(f) = read_frame(&mut input, &mut |l| noise.push(l.to_string())).unwrap() {
            frames.push(f);
        }
        assert_eq!(frames[0], Frame::new("checkpoint", 7, vec![0, 10, 255, b'\n', 3]));
        assert_eq!(frames[1].kind, "progress");
        assert_eq!((frames[2].kind.as_str(), frames.len()), ("done", 3));
        assert_eq!(noise, vec!["mpirun: a warning"]);
    }

    /// Errors, progress and resumes keep what the runner reads of them: an error comes
    /// back whole (its class, its message, its cause's every field).
    #[test]
    fn errors_progress_and_resumes_keep_their_meaning() {
        let errors = [
            FitError::Cancelled,
            FitError::Params(ParamError::new("topics", "too many")),
            FitError::InvalidInput(InvalidInput::Deleted { what: Stored::Corpus, id: "c1".into() }),
            FitError::InvalidInput(InvalidInput::NoTrainingTokens),
            FitError::Store(StoreFault::Refused { what: Written::Checkpoint { iteration: 3 }, detail: "the database is full".into() }),
            FitError::Numerical(NonFinite::log_likelihood(f64::NAN, 7)),
            FitError::Numerical(NonFinite::heldout_estimate("d\"1", f64::NEG_INFINITY)),
            FitError::Numerical(NonFinite::at_scan(Quantity::UPrecision, 4)),
            FitError::Internal(Internal::Panicked { message: "bug".into() }),
            FitError::Internal(Internal::Corrupt { what: Stored::Model, detail: "stored model could not be decoded: eof".into() }),
            FitError::Interrupted(Interruption::WorldEnded { ranks: 3, started: true, status: "signal: 9".into(), last_words: "lost".into() }),
        ];
        for e in errors {
            let back = error_of(&error_json(&e));
            assert_eq!((back.kind(), back.to_string()), (e.kind(), e.to_string()));
            assert_eq!(format!("{back:?}"), format!("{e:?}"), "the cause comes back whole");
        }
        // A frame without a cause this build reads keeps its message, as an internal error.
        let foreign = error_of(&json!({"kind": "numerical", "message": "log-likelihood is NaN at sweep 2", "cause": {"new": 1}}));
        assert!(matches!(&foreign, FitError::Internal(Internal::Relayed { message }) if message == "log-likelihood is NaN at sweep 2"), "{foreign:?}");
        let p = Progress { iteration: 4, total: 9, loglik_per_token: Some(-7.5), diagnostics: Default::default(), kind: Some(StepKind::Refit) };
        let back = progress_of(&progress_json(&p));
        assert_eq!((back.iteration, back.total, back.loglik_per_token, back.kind), (4, 9, Some(-7.5), Some(StepKind::Refit)));
        assert!(matches!(resume_of(&resume_json(&Resume::From(12))), Resume::From(12)));
        assert!(matches!(resume_of(&resume_json(&Resume::Rejected("x".into()))), Resume::Rejected(r) if r == "x"));
    }
}
