//! The runner's own options for a job: how many threads it runs on, how often it hands
//! over a checkpoint, and over how many MPI ranks it runs.
//!
//! Why it exists: these say how a fit is run, not what is fitted, so they belong to the
//! job and never to a model's params or its stored model (a model fitted on two threads
//! is the same model as one fitted on eight, byte for byte). Clients have always sent
//! them inside `params` (`"threads"` is one of the API's common param names); the
//! service takes them out at submit ([`JobOptions::take_from`]), checks them once, and
//! keeps them beside the params.

use super::params::{record_schema, ParamError, ParamReader, ParamsDoc, ParamsSchema, MAX_CHECKPOINT_EVERY_S};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The keys of a job's params that are runner options, not model parameters.
/// (`ranks`, an option newer than options' own field, is accepted in `options` only.)
pub const OPTION_KEYS: [&str; 2] = ["threads", "checkpoint_every_s"];

/// The options as a family's params schema states them: accepted inside `params` and
/// moved to the job's options.
const IN_PARAMS: ParamsDoc = ParamsDoc {
    component: "JobOptions",
    description: "The runner's options for a fit job.",
    basic: &[],
    keys: &[
        ("threads", "A runner option (`JobOptions`), accepted here as clients have always sent it and moved to the job's `options`: worker threads, 0 = the server default. Never stored among the params or in the model."),
        ("checkpoint_every_s", "A runner option (`JobOptions`), accepted here and moved to the job's `options`: seconds between checkpoints of the running fit (default: the server's `--checkpoint-every-s`; 0 turns them off). Not part of the model: it does not change a number."),
        ("ranks", "MPI ranks the fit runs over; accepted in `options` only."),
    ],
};

/// The options as the job's `options` object states them (the `JobOptions` component of
/// the OpenAPI document).
const AS_OPTIONS: ParamsDoc = ParamsDoc {
    component: "JobOptions",
    description: "The runner's options for a fit job: how it is run, not what is fitted (a model fitted on two threads is the same model, byte for byte, as one fitted on eight). Kept on the job, never in its params or its model. Absent options take the server's flags.",
    basic: &[],
    keys: &[
        ("threads", "Worker threads of the fit; 0 or absent: the server's `--threads`. At most the machine's cores are used (or `--threads`, where that is more): a fit's result does not depend on its threads."),
        ("checkpoint_every_s", "Seconds between checkpoints of the running fit (absent: the server's `--checkpoint-every-s`; 0 turns them off)."),
        ("ranks", "MPI ranks the fit runs over (absent or 1: one process). The model is the one-process model, byte for byte. Only `lda`, `hpc` and `pcm` (one chain, no covariates) and `hdp` fit over ranks; a job with more than one is claimed only by a replica started with `--mpi-launch`, and a server alone on its SQLite store without one refuses it (422 naming `options.ranks`). Accepted here only, not inside `params`."),
    ],
};

/// The schema of a job's `options` (the `JobOptions` component), generated from
/// [`JobOptions::from_json`] as the params schemas are from their parsers; every option
/// may also be null (the server's default).
pub fn options_schema() -> ParamsSchema {
    let mut schema = record_schema("JobOptions", || {
        let _ = JobOptions::read(&Value::Null, &AS_OPTIONS);
    });
    for property in schema.schema["properties"].as_object_mut().into_iter().flat_map(|p| p.values_mut()) {
        if let Some(t) = property.get("type").and_then(Value::as_str).map(str::to_string) {
            property["type"] = serde_json::json!([t, "null"]);
        }
    }
    schema
}

/// The schema of the runner options a job's `params` may carry ([`OPTION_KEYS`]),
/// generated from [`JobOptions::from_json`]: what every family's params schema adds
/// after its own keys.
pub fn params_options_schema() -> ParamsSchema {
    let mut schema = record_schema("JobOptions", || {
        let _ = JobOptions::from_json(&Value::Null);
    });
    let keep = |k: &str| OPTION_KEYS.contains(&k);
    if let Some(p) = schema.schema["properties"].as_object_mut() {
        p.retain(|k, _| keep(k));
    }
    if let Some(o) = schema.schema["x-property-order"].as_array_mut() {
        o.retain(|k| k.as_str().is_some_and(keep));
    }
    schema
}

/// Most threads one job may ask for.
pub const MAX_THREADS: u64 = 1024;

/// Most MPI ranks one job may ask for.
pub const MAX_RANKS: u64 = 1024;

/// How the runner runs a job. `None` is the server's default (`--threads`,
/// `--checkpoint-every-s`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobOptions {
    /// Worker threads of the fit (0 or absent: the server's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<usize>,
    /// Seconds between checkpoints (0: none; absent: the server's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_every_s: Option<f64>,
    /// MPI ranks the fit runs over (absent or 1: one process). A job with more is run
    /// by a replica started with `--mpi-launch`, as R processes of one world.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranks: Option<usize>,
}

impl JobOptions {
    /// Check `options` (a JSON object of option keys; `null` is none). Errors name the
    /// key (`threads`) and reject any key that is not an option.
    pub fn from_json(options: &Value) -> Result<JobOptions, ParamError> {
        Self::read(options, &IN_PARAMS)
    }

    /// [`Self::from_json`], its keys described (when a schema is recorded) by `doc`.
    fn read(options: &Value, doc: &'static ParamsDoc) -> Result<JobOptions, ParamError> {
        let mut r = ParamReader::new(options)?.described_by(doc);
        let threads = r.uint_in("threads", 0, MAX_THREADS)?.map(|t| t as usize);
        let checkpoint_every_s = r.non_negative("checkpoint_every_s", MAX_CHECKPOINT_EVERY_S)?;
        let ranks = r.uint_in("ranks", 1, MAX_RANKS)?.map(|t| t as usize);
        r.finish()?;
        Ok(JobOptions { threads, checkpoint_every_s, ranks })
    }

    /// Take the option keys out of a job's `params` object and check them; `params`
    /// keeps only the model's parameters.
    pub fn take_from(params: &mut Value) -> Result<JobOptions, ParamError> {
        let Some(map) = params.as_object_mut() else { return Ok(JobOptions::default()) };
        let taken: Map<String, Value> = OPTION_KEYS.iter().filter_map(|k| map.remove(*k).map(|v| (k.to_string(), v))).collect();
        JobOptions::from_json(&Value::Object(taken))
    }

    /// The options of a job queued before options left the params (or an evaluation
    /// job, whose params are the estimator's): the option keys found in its `params`,
    /// read leniently (a value that is not a number is ignored; such a row was checked
    /// when it was queued).
    pub fn in_stored_params(params: &Value) -> JobOptions {
        JobOptions {
            threads: params.get("threads").and_then(Value::as_u64).map(|t| t as usize),
            checkpoint_every_s: params.get("checkpoint_every_s").and_then(Value::as_f64),
            ranks: None,
        }
    }

    /// `self` with every option `other` gives and `self` does not; `Err` names an option
    /// both give (a job says each option once).
    pub fn merged(self, other: JobOptions) -> Result<JobOptions, &'static str> {
        if self.threads.is_some() && other.threads.is_some() {
            return Err("threads");
        }
        if self.checkpoint_every_s.is_some() && other.checkpoint_every_s.is_some() {
            return Err("checkpoint_every_s");
        }
        if self.ranks.is_some() && other.ranks.is_some() {
            return Err("ranks");
        }
        Ok(JobOptions {
            threads: self.threads.or(other.threads),
            checkpoint_every_s: self.checkpoint_every_s.or(other.checkpoint_every_s),
            ranks: self.ranks.or(other.ranks),
        })
    }

    /// The options as stored and shown: only those given.
    pub fn to_json(self) -> Value {
        serde_json::to_value(self).expect("plain data serialises")
    }

    /// The ranks the fit runs over: 1 unless the job asks for more.
    pub fn ranks(self) -> usize {
        self.ranks.unwrap_or(1).max(1)
    }

    /// The threads to run on: the job's, else `default`; at least one.
    pub fn threads_or(self, default: usize) -> usize {
        self.threads.filter(|&t| t > 0).unwrap_or(default).max(1)
    }
}

/// `params` without the option keys (what a job and its model keep as parameters).
pub fn without_options(mut params: Value) -> Value {
    if let Some(map) = params.as_object_mut() {
        for k in OPTION_KEYS {
            map.remove(k);
        }
    }
    params
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn options_leave_the_params_and_are_checked_once() {
        let mut params = json!({"topics": 5, "threads": 2, "checkpoint_every_s": 0.5});
        let options = JobOptions::take_from(&mut params).unwrap();
        assert_eq!(params, json!({"topics": 5}));
        assert_eq!(options, JobOptions { threads: Some(2), checkpoint_every_s: Some(0.5), ranks: None });
        let world = JobOptions::from_json(&json!({"ranks": 4, "threads": 2})).unwrap();
        assert_eq!((world.ranks(), JobOptions::default().ranks()), (4, 1));
        assert_eq!(world.to_json(), json!({"threads": 2, "ranks": 4}));
        let mut params = json!({"topics": 5, "ranks": 4});
        assert_eq!(JobOptions::take_from(&mut params).unwrap().ranks, None, "ranks is not taken from the params");
        assert_eq!(options.to_json(), json!({"threads": 2, "checkpoint_every_s": 0.5}));
        assert_eq!(JobOptions::from_json(&options.to_json()).unwrap(), options);
        assert_eq!(JobOptions::from_json(&Value::Null).unwrap(), JobOptions::default());
        assert_eq!(JobOptions::default().to_json(), json!({}));
        assert_eq!((options.threads_or(8), JobOptions::default().threads_or(8), JobOptions { threads: Some(0), ..options }.threads_or(3)), (2, 8, 3));
    }

    #[test]
    fn bad_options_name_their_key() {
        for (bad, field) in [
            (json!({"threads": -1}), "threads"),
            (json!({"threads": 5000}), "threads"),
            (json!({"threads": "two"}), "threads"),
            (json!({"checkpoint_every_s": -1}), "checkpoint_every_s"),
            (json!({"checkpoint_every_s": 1e9}), "checkpoint_every_s"),
        ] {
            let mut params = bad.clone();
            assert_eq!(JobOptions::take_from(&mut params).unwrap_err().field, field, "{bad}");
        }
        assert_eq!(JobOptions::from_json(&json!({"thread": 2})).unwrap_err().field, "thread", "an unknown option is named");
        for bad in [json!({"ranks": 0}), json!({"ranks": 2000}), json!({"ranks": 1.5})] {
            assert_eq!(JobOptions::from_json(&bad).unwrap_err().field, "ranks", "{bad}");
        }
    }

    #[test]
    fn an_option_is_given_once() {
        let a = JobOptions { threads: Some(2), checkpoint_every_s: None, ranks: None };
        let b = JobOptions { threads: None, checkpoint_every_s: Some(1.0), ranks: Some(2) };
        assert_eq!(a.merged(b).unwrap(), JobOptions { threads: Some(2), checkpoint_every_s: Some(1.0), ranks: Some(2) });
        assert_eq!(b.merged(b).unwrap_err(), "checkpoint_every_s");
        assert_eq!(a.merged(a).unwrap_err(), "threads");
        assert_eq!(without_options(json!({"topics": 3, "threads": 0})), json!({"topics": 3}));
        let stored = json!({"topics": 3, "threads": 4, "checkpoint_every_s": "x"});
        assert_eq!(JobOptions::in_stored_params(&stored), JobOptions { threads: Some(4), checkpoint_every_s: None, ranks: None });
    }
}
