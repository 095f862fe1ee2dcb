//! What a [`FitError`](super::FitError) carries: why a fit or an evaluation failed, in
//! fields a caller matches on ([`InvalidInput`], [`StoreFault`], [`NonFinite`],
//! [`Internal`], [`Interruption`]).
//!
//! Why it exists (issue 56): a caller that acts on a failure (a test, the runner, a
//! client reading a job) should not parse a message to learn which input was deleted or
//! at which sweep the chain broke down. Each value's `Display` is the message the job
//! record shows, word for word the text the variants carried before they were typed.
//! Every type here is serde, so an error crosses the MPI world's pipes
//! (`world::protocol` in the service) and is rebuilt whole on the other side.
//!
//! Invariants: nothing here names another module of `models` (every module of it may
//! name this one); a type's fields say everything its message does.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A kind of input or stored blob a job reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stored {
    Corpus,
    Graph,
    Model,
    /// A held-out likelihood job's submitted documents.
    Documents,
}

impl Stored {
    /// The noun a message names it by (`corpus`, `graph`, `model`, `documents`).
    pub fn noun(self) -> &'static str {
        match self {
            Stored::Corpus => "corpus",
            Stored::Graph => "graph",
            Stored::Model => "model",
            Stored::Documents => "documents",
        }
    }

    /// What a failed read names it by (the job's documents are the job's own).
    fn read_noun(self) -> &'static str {
        match self {
            Stored::Documents => "the job's documents",
            other => other.noun(),
        }
    }

    /// How a message that it does not decode begins (empty for a model, whose decoding
    /// error says so itself).
    fn corrupt_prefix(self) -> &'static str {
        match self {
            Stored::Corpus => "stored corpus is corrupt: ",
            Stored::Graph => "stored graph is corrupt: ",
            Stored::Documents => "stored documents are corrupt: ",
            Stored::Model => "",
        }
    }
}

/// The stored settings of a job that must parse again when it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Settings {
    /// A fit's params.
    Params,
    /// A held-out likelihood job's estimator settings.
    Estimator,
}

impl Settings {
    fn noun(self) -> &'static str {
        match self {
            Settings::Params => "params",
            Settings::Estimator => "estimator settings",
        }
    }
}

/// An evaluation a model family may not offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Evaluation {
    /// A held-out likelihood estimator (`POST /v1/models/{id}/heldout-likelihood`).
    HeldoutLikelihood,
    /// Scores on the test split of a supervised model's corpus.
    TestSplit,
}

impl Evaluation {
    fn noun(self) -> &'static str {
        match self {
            Evaluation::HeldoutLikelihood => "held-out likelihood estimator",
            Evaluation::TestSplit => "test-split evaluation",
        }
    }
}

/// Why the input cannot be fitted or evaluated as asked: the user's to fix
/// ([`super::FailureKind::InvalidInput`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "snake_case")]
pub enum InvalidInput {
    /// A labelled model on a corpus without labels. `model` is the model as the message
    /// names it (`HPC`), `instead` the family that fits an unlabelled corpus (`pcm`).
    #[error("the corpus has no labels: {model} needs labelled documents (use {instead} for an unlabelled corpus)")]
    NoLabels { model: String, instead: String },
    /// Fewer than two training documents (after the test and validation splits).
    #[error("only {documents} training documents: {model} needs at least two")]
    TooFewDocuments { model: String, documents: usize },
    /// A graph of fewer than two nodes.
    #[error("a graph needs at least two nodes")]
    TooFewNodes { nodes: usize },
    /// Every training document held out or empty.
    #[error("no training tokens (every document held out or empty)")]
    NoTrainingTokens,
    /// A corpus without documents or without terms (the test-only `mixture` family).
    #[error("{family}: the corpus has no words")]
    NoWords { family: String },
    /// A family handed the other kind of input; `fits` is what it fits (a corpus or a
    /// graph).
    #[error("{family} fits a {}", .fits.noun())]
    WrongInput { family: String, fits: Stored },
    /// The job's input (a corpus, a graph, the model it evaluates) was deleted before the
    /// job ran.
    #[error("{} {id} no longer exists", .what.noun())]
    Deleted { what: Stored, id: String },
    /// The job's stored params or estimator settings no longer parse (a value this build
    /// refuses); `detail` is the parser's message.
    #[error("the job's stored {} no longer parse: {detail}", .what.noun())]
    Unparsable { what: Settings, detail: String },
    /// The model's family has no such evaluation.
    #[error("{family} models have no {}", .what.noun())]
    NotOffered { family: String, what: Evaluation },
    /// A job over several ranks of a family that fits in one process only.
    #[error("{family} does not fit over several ranks")]
    NotRanked { family: String },
    /// A corpus evaluated against a model fitted on another vocabulary.
    #[error("the corpus has {corpus_terms} terms but the model {model_terms}: not the corpus it was fitted on")]
    OtherVocabulary { corpus_terms: usize, model_terms: usize },
    /// The state a rank was handed (scattered from rank 0's checkpoint) does not fit its
    /// share of the data; `detail` says which part.
    #[error("{detail}")]
    ScatteredState { detail: String },
}

/// What the store could not read, or refused to write. Retrying the job may succeed
/// ([`super::FailureKind::StoreFault`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "snake_case")]
pub enum StoreFault {
    /// Reading the job's input failed; `detail` is the store's error.
    #[error("could not read {}: {detail}", .what.read_noun())]
    Read { what: Stored, detail: String },
    /// The store refused a write the fit made (a full or read-only database); `detail`
    /// says which, in words an operator acts on.
    #[error("could not store {what}: {detail}")]
    Refused { what: Written, detail: String },
}

/// What a running fit writes to the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Written {
    /// A thinned sample kept after this iteration.
    Sample { iteration: u64 },
    /// A checkpoint after this iteration.
    Checkpoint { iteration: u64 },
    /// The fit's progress and trace.
    Progress,
}

impl fmt::Display for Written {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Written::Sample { iteration } => write!(f, "the sample of iteration {iteration}"),
            Written::Checkpoint { iteration } => write!(f, "the checkpoint after iteration {iteration}"),
            Written::Progress => f.write_str("the fit's progress"),
        }
    }
}

/// A quantity of a fit that reached a non-finite value (or a factorization that broke
/// down because one did), the value when it is one number, and where in the fit
/// ([`super::FailureKind::Numerical`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NonFinite {
    pub quantity: Quantity,
    /// NaN or ±infinity; `None` when the quantity is not one number (a set of
    /// parameters, a matrix).
    #[serde(with = "float_text")]
    pub value: Option<f64>,
    pub at: Step,
}

/// What [`NonFinite`] reports on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Quantity {
    /// A chain's log joint per token, at a sweep.
    LogLikelihood,
    /// A variational fit's objective, after a pass.
    Objective,
    /// A held-out document's estimated log-likelihood.
    HeldoutEstimate,
    /// DCNT's global parameters, at a scan.
    GlobalParameters,
    /// The precision of DCNT's u (I + λ_v AᵀA), no longer positive definite because A or
    /// λ_v overflowed, at a scan.
    UPrecision,
}

/// Where in a fit a [`NonFinite`] was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// A sampler's sweep (1-based, as progress counts it).
    Sweep(u64),
    /// DCNT's scan.
    Scan(u64),
    /// A variational fit's pass.
    Pass(u64),
    /// A held-out document, by its id.
    Document(String),
}

impl NonFinite {
    /// A chain's log joint per token is `value` at `sweep`.
    pub fn log_likelihood(value: f64, sweep: u64) -> Self {
        NonFinite { quantity: Quantity::LogLikelihood, value: Some(value), at: Step::Sweep(sweep) }
    }

    /// A variational fit's objective is `value` after `pass`.
    pub fn objective(value: f64, pass: u64) -> Self {
        NonFinite { quantity: Quantity::Objective, value: Some(value), at: Step::Pass(pass) }
    }

    /// The held-out estimate of `document` is `value`.
    pub fn heldout_estimate(document: &str, value: f64) -> Self {
        NonFinite { quantity: Quantity::HeldoutEstimate, value: Some(value), at: Step::Document(document.to_string()) }
    }

    /// `quantity` (one that is not a single number) broke down at DCNT's `scan`.
    pub fn at_scan(quantity: Quantity, scan: u64) -> Self {
        NonFinite { quantity, value: None, at: Step::Scan(scan) }
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Sweep(n) => write!(f, "sweep {n}"),
            Step::Scan(n) => write!(f, "scan {n}"),
            Step::Pass(n) => write!(f, "pass {n}"),
            Step::Document(id) => write!(f, "document {id:?}"),
        }
    }
}

impl fmt::Display for NonFinite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = &self.at;
        let value = self.value.map_or_else(|| "non-finite".to_string(), |v| v.to_string());
        match self.quantity {
            Quantity::LogLikelihood => write!(f, "log-likelihood is {value} at {at}"),
            Quantity::Objective => write!(f, "the objective is {value} after {at}"),
            Quantity::HeldoutEstimate => write!(f, "{at}: the estimate is {value}"),
            Quantity::GlobalParameters => write!(f, "non-finite global parameters at {at}"),
            Quantity::UPrecision => write!(f, "u's precision I + λ_v AᵀA is not positive definite at {at} (A or λ_v overflowed)"),
        }
    }
}

impl std::error::Error for NonFinite {}

/// A bug, a corrupt stored blob or a broken environment: a state the service should
/// never be in ([`super::FailureKind::Internal`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "snake_case")]
pub enum Internal {
    /// The fit panicked; `message` is the panic's.
    #[error("internal error: the job panicked: {message}")]
    Panicked { message: String },
    /// The fit's task ended without a result or a panic (the runtime cancelled it).
    #[error("internal error: {detail}")]
    Aborted { detail: String },
    /// A thread pool of `threads` threads could not start.
    #[error("could not start {threads} threads: {detail}")]
    ThreadPool { threads: usize, detail: String },
    /// A stored blob does not decode; `detail` is the decoder's error (a model's says
    /// itself that the stored model could not be decoded, so its message is `detail`).
    #[error("{}{detail}", .what.corrupt_prefix())]
    Corrupt { what: Stored, detail: String },
    /// The model rank 0 of an MPI world sent does not decode.
    #[error("rank 0's model does not decode: {detail}")]
    Rank0Model { detail: String },
    /// A job's or a model's family this build does not register (or not one that can do
    /// what the job asks).
    #[error("unknown model {name:?}")]
    UnknownModel { name: String },
    /// Rank 0 was asked to fit a family that is not a topic model family.
    #[error("{name:?} is not a topic model family")]
    NotTopicFamily { name: String },
    /// Rank 0 could not read the job the replica sent (its frames, the corpus in them).
    #[error("{detail}")]
    JobNotRead { detail: String },
    /// This program's path (which the ranks of a world run) could not be read.
    #[error("this program's path: {detail}")]
    ProgramPath { detail: String },
    /// A state the code should never reach (a job row without its input, params handed
    /// to another family, a job over ranks on a replica without `--mpi-launch`).
    #[error("{detail}")]
    Bug { detail: String },
    /// An error rank 0 of an MPI world sent whose cause this build cannot read back (a
    /// frame from another build): its message as sent. Used only for relayed errors.
    #[error("{message}")]
    Relayed { message: String },
}

impl Internal {
    /// A state the code should never reach, `detail` saying which.
    pub fn bug(detail: impl Into<String>) -> Self {
        Internal::Bug { detail: detail.into() }
    }
}

/// The processes of a distributed fit ended before the fit did: retrying resumes from
/// its last checkpoint ([`super::FailureKind::Interrupted`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "snake_case")]
pub enum Interruption {
    /// The MPI launcher (`mpirun`, `srun`) could not be started.
    #[error("the MPI launcher could not start: {detail}")]
    LauncherDidNotStart { detail: String },
    /// The world of `ranks` ranks ended without a model: before it started the fit
    /// (`started` false) or during it. `status` is the launcher's exit status (or that it
    /// did not stop), `last_words` the tail of its standard error.
    #[error("the world of {ranks} MPI ranks {} ({status}): {last_words}", world_end(.started))]
    WorldEnded { ranks: usize, started: bool, status: String, last_words: String },
}

/// How [`Interruption::WorldEnded`] says when the world ended.
fn world_end(started: &bool) -> &'static str {
    if *started {
        "ended before the fit did"
    } else {
        "could not start"
    }
}

/// An optional float as its text (`"NaN"`, `"-inf"`, `"-7.25"`): JSON has no NaN or
/// infinity, which are what a [`NonFinite`] holds.
mod float_text {
    use serde::de::Error;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(value: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        value.map(|v| v.to_string()).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        Option::<String>::deserialize(d)?.map(|text| text.parse().map_err(D::Error::custom)).transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every cause's message is the text its variant carried before issue 56.
    #[test]
    fn messages_read_as_before() {
        let messages: Vec<(String, &str)> = vec![
            (NonFinite::log_likelihood(f64::NAN, 12).to_string(), "log-likelihood is NaN at sweep 12"),
            (NonFinite::objective(f64::NEG_INFINITY, 3).to_string(), "the objective is -inf after pass 3"),
            (NonFinite::heldout_estimate("d7", f64::INFINITY).to_string(), "document \"d7\": the estimate is inf"),
            (NonFinite::at_scan(Quantity::GlobalParameters, 40).to_string(), "non-finite global parameters at scan 40"),
            (NonFinite::at_scan(Quantity::UPrecision, 5).to_string(), "u's precision I + λ_v AᵀA is not positive definite at scan 5 (A or λ_v overflowed)"),
            (
                InvalidInput::NoLabels { model: "HPC".into(), instead: "pcm".into() }.to_string(),
                "the corpus has no labels: HPC needs labelled documents (use pcm for an unlabelled corpus)",
            ),
            (InvalidInput::TooFewDocuments { model: "HPC".into(), documents: 1 }.to_string(), "only 1 training documents: HPC needs at least two"),
            (InvalidInput::TooFewNodes { nodes: 1 }.to_string(), "a graph needs at least two nodes"),
            (InvalidInput::NoWords { family: "mixture".into() }.to_string(), "mixture: the corpus has no words"),
            (InvalidInput::WrongInput { family: "lda".into(), fits: Stored::Corpus }.to_string(), "lda fits a corpus"),
            (InvalidInput::Deleted { what: Stored::Graph, id: "g1".into() }.to_string(), "graph g1 no longer exists"),
            (InvalidInput::Unparsable { what: Settings::Estimator, detail: "x".into() }.to_string(), "the job's stored estimator settings no longer parse: x"),
            (InvalidInput::Unparsable { what: Settings::Params, detail: "x".into() }.to_string(), "the job's stored params no longer parse: x"),
            (
                InvalidInput::NotOffered { family: "hdp_ammsb".into(), what: Evaluation::HeldoutLikelihood }.to_string(),
                "hdp_ammsb models have no held-out likelihood estimator",
            ),
            (InvalidInput::NotOffered { family: "lda".into(), what: Evaluation::TestSplit }.to_string(), "lda models have no test-split evaluation"),
            (InvalidInput::NotRanked { family: "dcnt".into() }.to_string(), "dcnt does not fit over several ranks"),
            (StoreFault::Read { what: Stored::Documents, detail: "gone".into() }.to_string(), "could not read the job's documents: gone"),
            (StoreFault::Read { what: Stored::Corpus, detail: "gone".into() }.to_string(), "could not read corpus: gone"),
            (
                StoreFault::Refused { what: Written::Checkpoint { iteration: 4 }, detail: "full".into() }.to_string(),
                "could not store the checkpoint after iteration 4: full",
            ),
            (
                StoreFault::Refused { what: Written::Sample { iteration: 4 }, detail: "full".into() }.to_string(),
                "could not store the sample of iteration 4: full",
            ),
            (Internal::Panicked { message: "boom".into() }.to_string(), "internal error: the job panicked: boom"),
            (Internal::Corrupt { what: Stored::Documents, detail: "eof".into() }.to_string(), "stored documents are corrupt: eof"),
            (Internal::Corrupt { what: Stored::Corpus, detail: "eof".into() }.to_string(), "stored corpus is corrupt: eof"),
            (
                Internal::Corrupt { what: Stored::Model, detail: "stored model could not be decoded: eof".into() }.to_string(),
                "stored model could not be decoded: eof",
            ),
            (Internal::UnknownModel { name: "old".into() }.to_string(), "unknown model \"old\""),
            (Internal::ThreadPool { threads: 4, detail: "no".into() }.to_string(), "could not start 4 threads: no"),
            (
                Interruption::WorldEnded { ranks: 2, started: true, status: "exit status: 1".into(), last_words: "bye".into() }.to_string(),
                "the world of 2 MPI ranks ended before the fit did (exit status: 1): bye",
            ),
            (
                Interruption::WorldEnded { ranks: 2, started: false, status: "did not stop".into(), last_words: String::new() }.to_string(),
                "the world of 2 MPI ranks could not start (did not stop): ",
            ),
        ];
        for (got, expected) in messages {
            assert_eq!(got, expected);
        }
    }

    /// A non-finite value survives JSON (which has no NaN or infinity) as its text.
    #[test]
    fn non_finite_values_cross_json() {
        for value in [Some(f64::NAN), Some(f64::INFINITY), Some(f64::NEG_INFINITY), Some(-7.25), None] {
            let cause = NonFinite { quantity: Quantity::Objective, value, at: Step::Pass(2) };
            let back: NonFinite = serde_json::from_value(serde_json::to_value(&cause).unwrap()).unwrap();
            assert_eq!(format!("{back:?}"), format!("{cause:?}"));
        }
    }
}
