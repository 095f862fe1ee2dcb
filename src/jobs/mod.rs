//! Jobs: the queue that turns `POST /v1/jobs` into fitted models.
//!
//! Why it exists: fits take minutes to hours and must survive restarts. Jobs live in
//! SQLite; the [`Runner`] claims queued jobs (at most `max_jobs` at once), runs each fit
//! on its own rayon pool inside `spawn_blocking` (never on a tokio worker), streams
//! progress and thinned samples back to the store, and stores the model together with
//! the job's success in one transaction.
//!
//! Lifecycle: queued → running → succeeded | failed | cancelled. On start-up a job
//! found `running` is re-queued (or failed after `--max-attempts` attempts in a row that
//! wrote no checkpoint); on graceful shutdown running fits are cancelled and re-queued,
//! so no job stays `running` forever. Fits on the chain and pass drivers hand the runner
//! a checkpoint every `checkpoint_every_s`, held-out evaluation jobs one of the
//! documents scored so far; the runner stores it (replacing the previous one) and a
//! re-queued job resumes from it, ending with the same model or result. The next
//! checkpoint waits until the last is stored and an interval has passed ([`cadence`]).
//!
//! A fit enters through [`submit`]: the checks and the job row that `POST /v1/jobs`
//! and `topicd fit` share.

mod admission;
mod cadence;
mod fit_task;
mod fitted;
mod model_start;
mod progress;
mod runner;
pub mod submit;

pub use runner::{Runner, RunnerConfig};
