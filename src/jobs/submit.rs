//! One fit submission, for `POST /v1/jobs` and `topicd fit` alike.
//!
//! Why it exists: both edges take a family's name, its params (the runner's options may
//! be among them) and a seed, and must refuse the same fits for the same reasons: an
//! unknown family, a runner option given twice, params the family does not accept or
//! its input does not allow, a fit over ranks nothing can start, one past the fit
//! memory budget. Those checks, and the job they shape, live here; each edge only
//! translates its input to a [`FitRequest`] (and reads the fit's input where it keeps
//! it) and a [`SubmitError`] to its own output: a problem document with its field for
//! HTTP, a message and an exit code for the command line.
//!
//! The steps are typed states ([`FitRequest`] → [`Draft`] → [`ParsedFit`] →
//! [`FitPlan`]) rather than one call because the edges meet their input at different
//! points: the service reads the stored input's summary once it knows the family and
//! before it parses the params (so a missing corpus is reported before a bad
//! parameter), while `topicd fit` parses the params on every rank before rank 0 reads
//! its file.

use crate::models::options::JobOptions;
use crate::models::registry::InputStats;
use crate::models::{FitParams, ParamError};
use crate::store::jobs::{NewJob, QueueGate};
use crate::store::{FamilyName, FitInput, UnknownFamily};
use serde_json::Value;

/// What an edge asks to fit.
#[derive(Debug, Clone)]
pub struct FitRequest {
    /// The family's name (`lda`, `hdp_ammsb`, ...).
    pub model: String,
    /// The params object; runner options among them are taken out of it.
    pub params: Value,
    /// The runner options given apart from the params (the job's `options`).
    pub options: JobOptions,
    pub seed: u64,
}

/// Why a fit is refused. The `Display` texts are the messages both edges show (the
/// edges name the unknown family in words of their own).
#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    /// A runner option among the params does not parse (the error names `params.<key>`).
    #[error("{0}")]
    OptionInParams(ParamError),
    /// A runner option given both among the params and apart from them.
    #[error("{0} is given in both params and options: give it once")]
    OptionTwice(&'static str),
    /// No registered family has the name.
    #[error(transparent)]
    UnknownModel(UnknownFamily),
    /// The params do not parse, or the input does not allow them.
    #[error("{0}")]
    Params(ParamError),
    /// The family does not fit over the ranks the options ask for.
    #[error("{}", .0.message)]
    Ranks(ParamError),
    /// A fit over several ranks that no replica can start.
    #[error("a fit over {ranks} ranks needs a replica started with --mpi-launch, and this server (the only one on its SQLite store) has none")]
    NoWorlds { ranks: usize },
    /// The fit's estimated peak memory passes the fit memory budget.
    #[error(
        "this {family} fit is estimated to need {:.0} MB at its peak, more than this server's fit memory budget of {:.0} MB (--fit-memory-mb): fewer topics, documents or threads need less",
        *.memory as f64 / 1048576.0,
        *.budget as f64 / 1048576.0
    )]
    OverBudget { family: FamilyName, memory: u64, budget: u64 },
}

/// Where the fit will run, for the checks that depend on it.
#[derive(Debug, Clone, Copy)]
pub struct Host {
    /// Threads of a fit whose options name none.
    pub default_threads: usize,
    /// Most estimated peak bytes one fit may need (`--fit-memory-mb`); `None`: no budget.
    pub fit_memory_budget: Option<u64>,
    /// For a fit whose options ask for several ranks: whether something here can start
    /// that world. `None` where the ranks are not an option but the process' own world
    /// (`topicd fit` under `mpirun`).
    pub starts_worlds: Option<bool>,
}

/// A request whose runner options are out of its params and whose family is known.
#[derive(Debug, Clone)]
pub struct Draft {
    family: FamilyName,
    params: Value,
    options: JobOptions,
    seed: u64,
}

/// A fit whose params are parsed into its family's type (every default filled in).
#[derive(Debug, Clone)]
pub struct ParsedFit {
    family: FamilyName,
    params: FitParams,
    options: JobOptions,
    seed: u64,
}

/// A fit checked against its input and host: what a job row stores.
#[derive(Debug)]
pub struct FitPlan<'a> {
    fit: &'a ParsedFit,
    /// The fit's estimated peak memory in bytes.
    pub memory_bytes: u64,
    /// The threads it runs on.
    pub threads: usize,
    options_json: Value,
}

impl FitRequest {
    /// Take the runner options out of the params (each given once), then find the family.
    pub fn draft(mut self) -> Result<Draft, SubmitError> {
        let in_params = JobOptions::take_from(&mut self.params).map_err(SubmitError::OptionInParams)?;
        let options = self.options.merged(in_params).map_err(SubmitError::OptionTwice)?;
        let family = FamilyName::parse(&self.model).map_err(SubmitError::UnknownModel)?;
        Ok(Draft { family, params: self.params, options, seed: self.seed })
    }
}

impl Draft {
    /// The family asked for (which says what input to read).
    pub fn family(&self) -> FamilyName {
        self.family
    }

    /// Parse the params into the family's type: the job keeps the parsed params' JSON
    /// and the runner reads that back into the same type.
    pub fn parse(self) -> Result<ParsedFit, SubmitError> {
        let params = self.family.family().parse_params(&self.params).map_err(SubmitError::Params)?;
        Ok(ParsedFit { family: self.family, params, options: self.options, seed: self.seed })
    }
}

impl ParsedFit {
    pub fn family(&self) -> FamilyName {
        self.family
    }

    pub fn params(&self) -> &FitParams {
        &self.params
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The threads the fit runs on: its options', else `default`; at least one.
    pub fn threads(&self, default: usize) -> usize {
        self.options.threads_or(default)
    }

    /// Check the params against the input's summary and the host (ranks, memory), and
    /// estimate the fit's peak memory.
    pub fn plan(&self, stats: InputStats<'_>, host: &Host) -> Result<FitPlan<'_>, SubmitError> {
        self.plan_beside(stats, host, 0)
    }

    /// [`Self::plan`] for a fit that also keeps `parent_bytes` in memory: an edit or an
    /// update decodes its parent model (counted at its stored size, which its arrays of
    /// floats match) and keeps it while its start is drawn.
    pub fn plan_beside(&self, stats: InputStats<'_>, host: &Host, parent_bytes: u64) -> Result<FitPlan<'_>, SubmitError> {
        let family = self.family.family();
        family.check_params(&self.params, stats).map_err(SubmitError::Params)?;
        self.check_ranks(host)?;
        let threads = self.threads(host.default_threads);
        let memory_bytes = family.fit_memory(stats, &self.params, threads).saturating_add(parent_bytes);
        match host.fit_memory_budget {
            Some(budget) if memory_bytes > budget => Err(SubmitError::OverBudget { family: self.family, memory: memory_bytes, budget }),
            _ => Ok(FitPlan { fit: self, memory_bytes, threads, options_json: self.options.to_json() }),
        }
    }

    /// A fit over several ranks: the family must run over them and the host must be
    /// able to start them.
    fn check_ranks(&self, host: &Host) -> Result<(), SubmitError> {
        let ranks = self.options.ranks();
        let Some(starts_worlds) = host.starts_worlds else { return Ok(()) };
        if ranks <= 1 {
            return Ok(());
        }
        self.family.family().check_ranks(&self.params, ranks).map_err(SubmitError::Ranks)?;
        if !starts_worlds {
            return Err(SubmitError::NoWorlds { ranks });
        }
        Ok(())
    }
}

impl<'a> FitPlan<'a> {
    /// The job row to queue: the parsed params' JSON, the options beside them.
    pub fn new_job(&'a self, id: &'a str, input: FitInput<'a>, queue: QueueGate<'a>) -> NewJob<'a> {
        NewJob {
            id,
            input,
            model: self.fit.family,
            params: self.fit.params.json(),
            seed: self.fit.seed,
            queue,
            memory_bytes: Some(self.memory_bytes),
            options: Some(&self.options_json),
            ranks: self.fit.options.ranks(),
            start: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::CorpusStats;
    use serde_json::json;

    const SERVER: Host = Host { default_threads: 2, fit_memory_budget: Some(u64::MAX), starts_worlds: Some(false) };

    fn request(model: &str, params: Value, options: JobOptions) -> FitRequest {
        FitRequest { model: model.into(), params, options, seed: 7 }
    }

    fn stats() -> CorpusStats {
        CorpusStats { num_documents: 10, num_terms: 20, num_tokens: 200, ..CorpusStats::default() }
    }

    #[test]
    fn a_fit_is_shaped_into_its_job_row() {
        let fit = request("lda", json!({"topics": 3, "threads": 4}), JobOptions::default()).draft().unwrap().parse().unwrap();
        let stats = stats();
        let plan = fit.plan(InputStats::Corpus(&stats), &SERVER).unwrap();
        assert_eq!(plan.threads, 4);
        let job = plan.new_job("j", FitInput::Corpus("c"), QueueGate::UNBOUNDED);
        assert_eq!(job.model.as_str(), "lda");
        assert_eq!(job.params["topics"], json!(3));
        assert!(job.params.get("threads").is_none(), "the runner's option left the params");
        assert_eq!(job.options, Some(&json!({"threads": 4})));
        assert_eq!((job.seed, job.ranks, job.memory_bytes), (7, 1, Some(plan.memory_bytes)));
    }

    #[test]
    fn each_refusal_is_typed() {
        let twice = request("lda", json!({"threads": 2}), JobOptions { threads: Some(3), ..JobOptions::default() }).draft().unwrap_err();
        assert!(matches!(twice, SubmitError::OptionTwice("threads")), "{twice:?}");
        let unknown = request("nope", json!({}), JobOptions::default()).draft().unwrap_err();
        assert!(matches!(&unknown, SubmitError::UnknownModel(u) if u.name == "nope"), "{unknown:?}");
        let stats = stats();
        let ranked = request("lda", json!({}), JobOptions { ranks: Some(2), ..JobOptions::default() }).draft().unwrap().parse().unwrap();
        let refused = ranked.plan(InputStats::Corpus(&stats), &SERVER).unwrap_err();
        assert!(matches!(refused, SubmitError::NoWorlds { ranks: 2 }), "{refused:?}");
        let in_process = Host { starts_worlds: None, fit_memory_budget: None, ..SERVER };
        assert!(ranked.plan(InputStats::Corpus(&stats), &in_process).is_ok(), "topicd fit's ranks are its world's");
        let tight = Host { fit_memory_budget: Some(1), ..SERVER };
        let over = request("lda", json!({}), JobOptions::default()).draft().unwrap().parse().unwrap().plan(InputStats::Corpus(&stats), &tight).unwrap_err();
        assert!(over.to_string().starts_with("this lda fit is estimated to need"), "{over}");
    }

    /// A fit from a stored model counts the parent it keeps: under a budget that the fit
    /// alone meets, a parent larger than what is left makes it over budget.
    #[test]
    fn a_fit_from_a_parent_counts_the_parent() {
        let fit = request("lda", json!({}), JobOptions::default()).draft().unwrap().parse().unwrap();
        let stats = stats();
        let alone = fit.plan(InputStats::Corpus(&stats), &SERVER).unwrap().memory_bytes;
        let budget = Host { fit_memory_budget: Some(alone + 1000), ..SERVER };
        let beside = fit.plan_beside(InputStats::Corpus(&stats), &budget, 1000).unwrap();
        assert_eq!(beside.memory_bytes, alone + 1000);
        let over = fit.plan_beside(InputStats::Corpus(&stats), &budget, 1001).unwrap_err();
        assert!(matches!(over, SubmitError::OverBudget { .. }), "{over:?}");
    }
}
