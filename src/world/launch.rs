//! The replica's side of a job over ranks: start the world with the operator's
//! launcher, feed rank 0 the job, and turn rank 0's frames back into the fit's
//! progress, samples, checkpoints and model.
//!
//! Why it exists: the runner streams a fit's reports to the store through a
//! [`FitContext`]; a fit over ranks reports from another process (rank 0, on whichever
//! host the launcher put it), so this is the in-process stand-in: the same callbacks
//! fed from the frames. The replica keeps the job's lease and does every store write, so
//! a world needs no database access and runs the same on SQLite and PostgreSQL.
//!
//! Ends: rank 0's model (with the corpus' lexicon), rank 0's error (its class kept),
//! or, when the world ends without either (a rank killed, a host lost, a launcher that
//! cannot start), [`FitError::Interrupted`] with the launcher's last words, which the
//! runner re-queues so that the next attempt resumes from the last checkpoint.

use super::protocol::{error_of, progress_of, read_frame, resume_of, Frame, Request};
use crate::models::causes::Interruption;
use crate::models::{FitContext, FitError};
use std::io::{BufReader, Read};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What a finished world hands back.
pub struct WorldFit {
    /// The model's bytes as the service stores them.
    pub model: Vec<u8>,
    /// The corpus' lexicon (postcard), which the model is stored with.
    pub lexicon: Vec<u8>,
}

/// How long a cancelled world may take to stop before it is killed.
const CANCEL_GRACE: Duration = Duration::from_secs(60);
/// The launcher's last bytes of standard error kept for the job's message.
const STDERR_TAIL: usize = 4096;

/// The command a replica runs for a world of `ranks`: the operator's `launch` template
/// with `{ranks}` filled in, then this program's `rank-fit`, through `sh -c` so that
/// the template may set variables or name a wrapper.
pub fn world_command(launch: &str, ranks: usize, program: &std::path::Path) -> Command {
    let line = format!("{} {} rank-fit", launch.replace("{ranks}", &ranks.to_string()), shell_quote(&program.to_string_lossy()));
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(line);
    cmd
}

/// `s` as one single-quoted word for `sh`.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Kills the world's process group when dropped (a fit that ends early, a panic).
struct Group(Child);

impl Drop for Group {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            // The launcher leads its own process group: signal all of it.
            unsafe {
                libc::kill(-(self.0.id() as i32), libc::SIGKILL);
            }
            let _ = self.0.wait();
        }
    }
}

/// Run `request` on `corpus` over a world started by `cmd` (see [`world_command`]),
/// reporting through `ctx` as an in-process fit does.
pub fn run_world(mut cmd: Command, ranks: usize, request: &Request, corpus: &[u8], ctx: &FitContext) -> Result<WorldFit, FitError> {
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    let child = cmd.spawn().map_err(|e| FitError::Interrupted(Interruption::LauncherDidNotStart { detail: e.to_string() }))?;
    let pid = child.id() as i32;
    let mut group = Group(child);
    let stdin = group.0.stdin.take().expect("piped stdin");
    let stdout = group.0.stdout.take().expect("piped stdout");
    let stderr = group.0.stderr.take().expect("piped stderr");
    let tail: Arc<Mutex<Vec<u8>>> = Arc::default();
    let done = AtomicBool::new(false);
    let outcome = std::thread::scope(|s| {
        // The launcher's standard error, logged and its tail kept.
        let tail_in = tail.clone();
        s.spawn(move || keep_stderr(stderr, &tail_in));
        // The job to rank 0, then a cancel frame if the fit is cancelled.
        let world = World { pid, ranks, done: &done };
        let writer = s.spawn(move || feed_rank0(stdin, request, corpus, ctx, world));
        let outcome = read_frames(stdout, ctx, ranks);
        done.store(true, Ordering::SeqCst);
        let _ = writer.join();
        outcome
    });
    let status = wait_for_exit(&mut group);
    drop(group);
    let last_words = String::from_utf8_lossy(&tail.lock().expect("stderr lock")).trim().to_string();
    let started = match outcome {
        Ended::Model(fit) if status.is_some_and(|s| s.success()) => return Ok(fit),
        Ended::Error(e) => return Err(e),
        Ended::Model(_) => true,
        Ended::Nothing { started } => started,
    };
    let status = status.map_or("did not stop".to_string(), |s| s.to_string());
    Err(FitError::Interrupted(Interruption::WorldEnded { ranks, started, status, last_words }))
}

/// Log the launcher's standard error as it comes and keep its last [`STDERR_TAIL`]
/// bytes in `tail`.
fn keep_stderr(mut stderr: impl Read, tail: &Mutex<Vec<u8>>) {
    let mut buf = [0u8; 8192];
    while let Ok(n) = stderr.read(&mut buf) {
        if n == 0 {
            break;
        }
        tracing::info!(target: "topicd::world", "{}", String::from_utf8_lossy(&buf[..n]).trim_end());
        let mut t = tail.lock().expect("stderr lock");
        t.extend_from_slice(&buf[..n]);
        let excess = t.len().saturating_sub(STDERR_TAIL);
        t.drain(..excess);
    }
}

/// The running world as its rank 0 feeder sees it: the launcher's process group, the
/// world's size, and whether rank 0's stream has ended.
#[derive(Clone, Copy)]
struct World<'a> {
    pid: i32,
    ranks: usize,
    done: &'a AtomicBool,
}

/// Send rank 0 the job (request, corpus, the checkpoint to resume from, start), then
/// watch for a cancel until the stream ends: a cancel frame, and a kill of the world's
/// group if it does not stop within [`CANCEL_GRACE`]. Closes rank 0's standard input.
fn feed_rank0(mut stdin: ChildStdin, request: &Request, corpus: &[u8], ctx: &FitContext, world: World) -> std::io::Result<()> {
    let World { pid, ranks, done } = world;
    Frame::json("request", &serde_json::to_value(request).expect("a request encodes")).write(&mut stdin)?;
    Frame::new("corpus", 0, corpus.to_vec()).write(&mut stdin)?;
    if let Some(resume) = ctx.checkpoint.resume_from {
        Frame::new("resume", 0, resume.to_vec()).write(&mut stdin)?;
    }
    Frame::new("start", 0, Vec::new()).write(&mut stdin)?;
    while !done.load(Ordering::SeqCst) {
        if ctx.cancel.is_cancelled() {
            Frame::new("cancel", 0, Vec::new()).write(&mut stdin)?;
            // A world that does not stop in time is killed (its stream then
            // ends, and the fit with it).
            let asked = Instant::now();
            while !done.load(Ordering::SeqCst) && asked.elapsed() < CANCEL_GRACE {
                std::thread::sleep(Duration::from_millis(50));
            }
            if !done.load(Ordering::SeqCst) {
                tracing::warn!(ranks, "the world did not stop within {CANCEL_GRACE:?} of its cancel; killing it");
                unsafe {
                    libc::kill(-pid, libc::SIGKILL);
                }
            }
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // Closing rank 0's standard input tells it the replica is gone, should
    // the world still run.
    drop(stdin);
    Ok(())
}

/// Wait for the world to exit after its stream ended, giving up after [`CANCEL_GRACE`]
/// (the caller then kills it): its exit status, if it exited.
fn wait_for_exit(group: &mut Group) -> Option<ExitStatus> {
    let ended = Instant::now();
    loop {
        match group.0.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if ended.elapsed() > CANCEL_GRACE => break None,
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => break None,
        }
    }
}

/// How rank 0's stream ended.
enum Ended {
    Model(WorldFit),
    Error(FitError),
    /// No model and no error; `started` once rank 0 said anything.
    Nothing {
        started: bool,
    },
}

/// Read rank 0's frames, calling `ctx` as the fit would, until the stream ends.
fn read_frames(stdout: impl Read, ctx: &FitContext, ranks: usize) -> Ended {
    let mut input = BufReader::new(stdout);
    let (mut model, mut lexicon, mut started) = (None, None, false);
    let mut noise = |line: &str| tracing::info!(target: "topicd::world", ranks, "{line}");
    while let Ok(Some(frame)) = read_frame(&mut input, &mut noise) {
        started = true;
        let json = || serde_json::from_slice::<serde_json::Value>(&frame.bytes).unwrap_or_default();
        match frame.kind.as_str() {
            "progress" => (ctx.progress)(progress_of(&json())),
            "sample" => (ctx.sample)(frame.number, frame.bytes),
            "checkpoint" => (ctx.checkpoint.save)(frame.number, frame.bytes),
            "resumed" => (ctx.checkpoint.resumed)(resume_of(&json())),
            "lexicon" => lexicon = Some(frame.bytes),
            "model" => model = Some(frame.bytes),
            "error" => return Ended::Error(error_of(&json())),
            "done" => break,
            other => tracing::warn!(kind = other, "rank 0 sent a frame of an unknown kind"),
        }
    }
    match (model, lexicon) {
        (Some(model), Some(lexicon)) => Ended::Model(WorldFit { model, lexicon }),
        _ => Ended::Nothing { started },
    }
}
