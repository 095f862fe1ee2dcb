//! The one registry of model families, topic and graph alike.
//!
//! Why it exists: topic models fit a corpus and graph models fit a graph, so their
//! traits differ ([`super::ModelFamily`], [`super::community::CommunityFamily`], each with its own parameter type, seen here through [`super::erased`]), but the job API, the runner, the
//! model cache and every message ask the same questions of a family by name: does it
//! exist, what does it fit, what does it offer, what are its effective parameters, fit
//! it, decode what it stored. [`REGISTRY`] lists every family once; [`Family`] answers
//! those questions whatever its kind, and [`Fitted`] is a fitted model of either kind.
//! Callers branch on the input a family declares, never on a family's name.
//! Adding a family means one folder under `models/` and one line in [`REGISTRY`].

use super::capabilities::{Capabilities, Input};
use super::causes::{InvalidInput, Stored};
use super::community::CommunityModel;
use super::erased::{CommunityEntry, TopicEntry};
use super::params::ParamsSchema;
use super::{FitContext, FitError, FitParams, ModelError, ParamError, TopicModel};
use crate::corpus::{Corpus, CorpusStats};
use crate::graph::{Graph, GraphStats};

/// A registered family: a topic model on a corpus or a community model on a graph.
#[derive(Clone, Copy)]
pub enum Family {
    Topics(&'static dyn TopicEntry),
    Communities(&'static dyn CommunityEntry),
}

/// Every model the service knows, in the order the API lists them. Register a new
/// family here.
pub static REGISTRY: &[Family] = &[
    Family::Topics(&super::lda::LdaFamily),
    Family::Topics(&super::hpc::HPC),
    Family::Topics(&super::hpc::PCM),
    Family::Topics(&super::dcnt::DCNT),
    Family::Topics(&super::dcnt::SCNT),
    Family::Topics(&super::hdp::HdpFamily),
    Family::Communities(&super::hdp_ammsb::HDP_AMMSB),
    #[cfg(feature = "test-family")]
    Family::Topics(&super::mixture::MixtureFamily),
];

/// The family with wire name `name` (`"lda"`, `"hdp_ammsb"`, ...).
pub fn lookup(name: &str) -> Option<Family> {
    REGISTRY.iter().copied().find(|f| f.name() == name)
}

/// Every registered topic-model family, in registry order.
pub fn topic_families() -> impl Iterator<Item = &'static dyn TopicEntry> {
    REGISTRY.iter().filter_map(|f| f.topics())
}

/// Every registered family's wire name with its capabilities, in registry order.
pub fn capabilities() -> Vec<(&'static str, Capabilities)> {
    REGISTRY.iter().map(|f| (f.name(), f.capabilities())).collect()
}

/// The names of the families that have `capability`, for messages: "hpc",
/// "dcnt and scnt", "lda, dcnt and scnt" ("no family" when none has it).
pub fn families_with(capability: impl Fn(&Capabilities) -> bool) -> String {
    let names: Vec<&str> = REGISTRY.iter().filter(|f| capability(&f.capabilities())).map(|f| f.name()).collect();
    match names.as_slice() {
        [] => "no family".to_string(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// Wire names of every registered family, in registry order.
pub fn names() -> Vec<&'static str> {
    REGISTRY.iter().map(|f| f.name()).collect()
}

/// Wire names of the families that fit `input`, in registry order.
pub fn names_fitting(input: Input) -> Vec<&'static str> {
    REGISTRY.iter().filter(|f| f.input() == input).map(|f| f.name()).collect()
}

/// The params schemas of every registered family, one per OpenAPI component (families
/// whose parsers share a [`super::params::ParamsDoc`] share one, the union of their
/// keys), in registry order, each with `x-families` naming its families.
pub fn params_components() -> Vec<ParamsSchema> {
    let mut out: Vec<(ParamsSchema, Vec<&'static str>)> = Vec::new();
    for f in REGISTRY {
        let schema = f.params_schema();
        match out.iter_mut().find(|(c, _)| c.component == schema.component) {
            Some((shared, families)) => {
                *shared = shared.clone().union(&schema);
                families.push(f.name());
            }
            None => out.push((schema, vec![f.name()])),
        }
    }
    out.into_iter()
        .map(|(mut c, families)| {
            c.schema["x-families"] = serde_json::json!(families);
            c
        })
        .collect()
}

/// What a fit reads: a decoded corpus or graph.
pub enum FitSource<'a> {
    Corpus(&'a Corpus),
    Graph(&'a Graph),
}

/// The statistics a family's parameter checks read (bounds that depend on the input).
#[derive(Clone, Copy)]
pub enum InputStats<'a> {
    Corpus(&'a CorpusStats),
    Graph(&'a GraphStats),
}

impl Family {
    pub fn name(self) -> &'static str {
        match self {
            Family::Topics(f) => f.name(),
            Family::Communities(f) => f.name(),
        }
    }

    /// The topic-model family, if this is one.
    pub fn topics(self) -> Option<&'static dyn TopicEntry> {
        match self {
            Family::Topics(f) => Some(f),
            Family::Communities(_) => None,
        }
    }

    /// The community-model family, if this is one.
    pub fn communities(self) -> Option<&'static dyn CommunityEntry> {
        match self {
            Family::Communities(f) => Some(f),
            Family::Topics(_) => None,
        }
    }

    pub fn capabilities(self) -> Capabilities {
        match self {
            Family::Topics(f) => f.capabilities(),
            Family::Communities(f) => f.capabilities(),
        }
    }

    /// What the family fits (from its declared capabilities).
    pub fn input(self) -> Input {
        self.capabilities().input
    }

    /// Parse `params` into the family's typed parameters, defaults filled in
    /// ([`super::ModelFamily::parse_params`]), bound to the family: once at submit, and
    /// by the runner on what the job stored.
    pub fn parse_params(self, params: &serde_json::Value) -> Result<FitParams, ParamError> {
        match self {
            Family::Topics(f) => f.parse_params(params),
            Family::Communities(f) => f.parse_params(params),
        }
    }

    /// The JSON Schema of the family's `params`, generated from its parser
    /// ([`super::ModelFamily::params_schema`]), with the runner options a job's params may
    /// carry ([`super::options::params_options_schema`]) after its own keys.
    pub fn params_schema(self) -> ParamsSchema {
        let own = match self {
            Family::Topics(f) => f.params_schema(),
            Family::Communities(f) => f.params_schema(),
        };
        own.with_keys_of(&super::options::params_options_schema())
    }

    /// Params of a brief fit on a small input ([`super::ModelFamily::quick_params`]).
    pub fn quick_params(self) -> FitParams {
        match self {
            Family::Topics(f) => f.quick_params(),
            Family::Communities(f) => f.quick_params(),
        }
    }

    /// Check parsed `params` against the input's statistics.
    pub fn check_params(self, params: &FitParams, stats: InputStats<'_>) -> Result<(), ParamError> {
        match (self, stats) {
            (Family::Topics(f), InputStats::Corpus(s)) => f.check_params(params, s),
            (Family::Communities(f), InputStats::Graph(s)) => f.check_params(params, s),
            (f, _) => Err(ParamError::new(self.input_field(), format!("{} fits a {}", f.name(), f.input_noun()))),
        }
    }

    /// Whether a fit of `params` runs over `ranks` MPI ranks ([`super::ModelFamily::check_ranks`]);
    /// graph families fit in one process.
    pub fn check_ranks(self, params: &FitParams, ranks: usize) -> Result<(), ParamError> {
        match self {
            Family::Topics(f) => f.check_ranks(params, ranks),
            Family::Communities(f) if ranks > 1 => Err(ParamError::new("ranks", format!("{} does not fit over several ranks", f.name()))),
            Family::Communities(_) => Ok(()),
        }
    }

    /// Peak resident memory of a fit on an input summarised by `stats` with `params` on
    /// `threads` workers ([`super::ModelFamily::fit_memory`]); 0 when the input is not what the
    /// family fits (such a job is refused by [`Family::check_params`]).
    ///
    /// # Panics
    /// When `params` are another family's (a caller's bug: a job's params are parsed by its own family).
    pub fn fit_memory(self, stats: InputStats<'_>, params: &FitParams, threads: usize) -> u64 {
        match (self, stats) {
            (Family::Topics(f), InputStats::Corpus(s)) => f.fit_memory(s, params, threads),
            (Family::Communities(f), InputStats::Graph(s)) => f.fit_memory(s, params, threads),
            _ => 0,
        }
    }

    /// Fit on `input`, which must be what the family fits, with params it parsed.
    pub fn fit(self, input: FitSource<'_>, params: &FitParams, seed: u64, ctx: &FitContext) -> Result<Fitted, FitError> {
        match (self, input) {
            (Family::Topics(f), FitSource::Corpus(c)) => f.fit(c, params, seed, ctx).map(Fitted::Topics),
            (Family::Communities(f), FitSource::Graph(g)) => f.fit(g, params, seed, ctx).map(Fitted::Communities),
            (f, _) => {
                let fits = match f.input() {
                    Input::Corpus => Stored::Corpus,
                    Input::Graph => Stored::Graph,
                };
                Err(FitError::InvalidInput(InvalidInput::WrongInput { family: f.name().into(), fits }))
            }
        }
    }

    /// Refit on `corpus` from an edited parent ([`super::ModelFamily::fit_edited`]);
    /// graph families cannot be edited.
    pub fn fit_edited(self, corpus: &Corpus, params: &FitParams, start: &super::EditStart<'_>, seed: u64, ctx: &FitContext) -> Result<Fitted, FitError> {
        match self {
            Family::Topics(f) => f.fit_edited(corpus, params, start, seed, ctx).map(Fitted::Topics),
            Family::Communities(f) => Err(FitError::Params(ParamError::new("model", format!("{} models cannot be edited", f.name())))),
        }
    }

    /// Fit `corpus` from a parent with new documents added
    /// ([`super::ModelFamily::fit_updated`]); graph families cannot be updated.
    pub fn fit_updated(self, corpus: &Corpus, params: &FitParams, start: &super::UpdateStart<'_>, seed: u64, ctx: &FitContext) -> Result<Fitted, FitError> {
        match self {
            Family::Topics(f) => f.fit_updated(corpus, params, start, seed, ctx).map(Fitted::Topics),
            Family::Communities(f) => Err(FitError::Params(ParamError::new("model", format!("{} models cannot be updated", f.name())))),
        }
    }

    /// Decode a model this family stored.
    pub fn decode(self, bytes: &[u8]) -> Result<Fitted, ModelError> {
        match self {
            Family::Topics(f) => f.decode(bytes).map(Fitted::Topics),
            Family::Communities(f) => f.decode(bytes).map(Fitted::Communities),
        }
    }

    /// The job request's field that names this family's input.
    pub fn input_field(self) -> &'static str {
        match self.input() {
            Input::Corpus => "corpus_id",
            Input::Graph => "graph_id",
        }
    }

    /// "corpus" or "graph", for messages.
    pub fn input_noun(self) -> &'static str {
        match self.input() {
            Input::Corpus => "corpus",
            Input::Graph => "graph",
        }
    }
}

/// A fitted model of either kind.
pub enum Fitted {
    Topics(Box<dyn TopicModel>),
    Communities(Box<dyn CommunityModel>),
}

impl Fitted {
    /// Topics or communities reported.
    pub fn num_components(&self) -> usize {
        match self {
            Fitted::Topics(m) => m.num_topics(),
            Fitted::Communities(m) => m.num_communities(),
        }
    }

    pub fn diagnostics(&self) -> serde_json::Value {
        match self {
            Fitted::Topics(m) => m.diagnostics(),
            Fitted::Communities(m) => m.diagnostics(),
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        match self {
            Fitted::Topics(m) => m.encode(),
            Fitted::Communities(m) => m.encode(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_every_family_fits_what_it_declares() {
        let mut all = names();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), REGISTRY.len());
        for f in REGISTRY {
            let expected = match f {
                Family::Topics(_) => Input::Corpus,
                Family::Communities(_) => Input::Graph,
            };
            assert_eq!(f.input(), expected, "{}", f.name());
            assert_eq!(lookup(f.name()).map(Family::name), Some(f.name()));
        }
        assert!(lookup("svm").is_none());
        assert_eq!(names_fitting(Input::Graph), vec!["hdp_ammsb"]);
    }

    #[test]
    fn family_lists_read_as_prose() {
        assert_eq!(families_with(|c| c.label_evaluation), "hpc");
        assert_eq!(families_with(|c| c.correlations), "dcnt and scnt");
        assert_eq!(families_with(|c| c.heldout_likelihood), "lda, dcnt and scnt");
        assert_eq!(families_with(|_| false), "no family");
        assert_eq!(capabilities().len(), REGISTRY.len());
        assert_eq!(topic_families().count(), names_fitting(Input::Corpus).len());
        assert!(lookup("hdp_ammsb").and_then(Family::topics).is_none() && lookup("hdp_ammsb").and_then(Family::communities).is_some());
    }

    #[test]
    fn a_family_refuses_the_other_kind_of_input() {
        let lda = lookup("lda").unwrap();
        let (graph, stats) = crate::graph::build_graph(vec!["a".into(), "b".into()], &[("a".into(), "b".into())], false).unwrap();
        let params = lda.parse_params(&serde_json::json!({})).unwrap();
        let err = FitContext::silent(|ctx| lda.fit(FitSource::Graph(&graph), &params, 1, ctx)).err().unwrap();
        assert_eq!(err.to_string(), "lda fits a corpus");
        assert_eq!(err.kind(), crate::models::FailureKind::InvalidInput, "the caller's input, not a numerical fault");
        let err = lda.check_params(&params, InputStats::Graph(&stats)).unwrap_err();
        assert_eq!(err.field, "corpus_id");
    }

    /// The job stores `json()` and the runner parses it back: the same parameters, the
    /// same JSON, every default filled in (an empty object gives every key), and no
    /// runner option among them.
    #[test]
    fn stored_params_read_back_into_the_same_type() {
        for f in REGISTRY {
            let quick = f.quick_params();
            assert_eq!(quick.family(), f.name());
            let stored = quick.json().clone();
            let again = f.parse_params(&stored).unwrap_or_else(|e| panic!("{}: the stored params parse: {e}", f.name()));
            assert_eq!(again.json(), &stored, "{}", f.name());
            let defaults = f.parse_params(&serde_json::json!({})).unwrap_or_else(|e| panic!("{}: {e}", f.name()));
            let keys = |v: &serde_json::Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
            assert_eq!(keys(defaults.json()), keys(&stored), "{}: defaults are filled in", f.name());
            for option in crate::models::options::OPTION_KEYS {
                assert!(stored.get(option).is_none(), "{}: {option} is a runner option, not a parameter", f.name());
                let mut with_option = stored.clone();
                with_option[option] = serde_json::json!(2);
                assert_eq!(f.parse_params(&with_option).unwrap_err().field, option, "{}: options are taken out before parsing", f.name());
            }
        }
    }

    /// Every family's params schema is generated from its parser: every key it reads is
    /// described, every key its doc describes is read by a family sharing the doc, and
    /// families sharing a component agree on each shared key but for its default.
    #[test]
    fn params_schemas_are_generated_and_fully_described() {
        let components = params_components();
        for c in &components {
            assert!(c.unread.is_empty(), "{}: described but read by no family: {:?}", c.component, c.unread);
            assert!(c.schema["description"].as_str().is_some_and(|d| !d.is_empty()), "{}", c.component);
        }
        for f in REGISTRY {
            let own = f.params_schema();
            let component = components.iter().find(|c| c.component == own.component).unwrap();
            assert!(component.schema["x-families"].as_array().unwrap().iter().any(|n| n == f.name()), "{}", f.name());
            for (key, spec) in own.schema["properties"].as_object().unwrap() {
                assert!(spec["description"].as_str().is_some_and(|d| !d.is_empty()), "{}: params.{key} has no description", f.name());
                let mut shared = component.schema["properties"][key].clone();
                let mut mine = spec.clone();
                shared.as_object_mut().unwrap().remove("default");
                mine.as_object_mut().unwrap().remove("default");
                assert_eq!(mine, shared, "{}: params.{key} in {}", f.name(), own.component);
            }
            // Every stored key is in the schema (a default filled in is a key read).
            let stored = f.parse_params(&serde_json::json!({})).unwrap().json().clone();
            for key in stored.as_object().unwrap().keys() {
                assert!(own.schema["properties"].get(key).is_some(), "{}: stored {key} is not in its schema", f.name());
            }
        }
    }

    /// Every family marks the params a first fit sets (`x-basic`, the console's basic
    /// form): each a key of its schema, the model's size among them.
    #[test]
    fn every_family_names_its_basic_params() {
        for f in REGISTRY {
            let own = f.params_schema();
            let basic: Vec<&str> =
                own.schema["x-basic"].as_array().unwrap_or_else(|| panic!("{} has no x-basic", f.name())).iter().map(|v| v.as_str().unwrap()).collect();
            for key in &basic {
                assert!(own.schema["properties"].get(*key).is_some(), "{}: basic {key} is not a param", f.name());
            }
            let size = own.schema["properties"].get("topics").map_or("communities", |_| "topics");
            assert!(basic.contains(&size) || own.schema["properties"].get(size).is_none(), "{}: {size} is basic", f.name());
        }
        for d in [
            &crate::models::lda::params::DOC,
            &crate::models::hpc::params::DOC,
            &crate::models::dcnt::params::DOC,
            &crate::models::hdp::params::DOC,
            &crate::models::hdp_ammsb::params::DOC,
        ] {
            for key in d.basic {
                assert!(d.keys.iter().any(|(k, _)| k == key), "{}: basic {key} is not described", d.component);
            }
        }
    }

    /// Params are bound to the family that parsed them: another family refuses them by
    /// name, as a caller's bug (never a panic or a fit with the wrong type).
    #[test]
    fn a_family_refuses_another_familys_params() {
        let (lda, hdp, ammsb) = (lookup("lda").unwrap(), lookup("hdp").unwrap(), lookup("hdp_ammsb").unwrap());
        let params = hdp.parse_params(&serde_json::json!({})).unwrap();
        let stats = crate::corpus::CorpusStats::default();
        assert!(lda.check_params(&params, InputStats::Corpus(&stats)).unwrap_err().message.contains("hdp params handed to lda"));
        let corpus = crate::corpus::synthetic::bars(&crate::corpus::synthetic::BarsConfig { documents: 10, ..Default::default() }).to_corpus();
        let err = FitContext::silent(|ctx| lda.fit(FitSource::Corpus(&corpus), &params, 1, ctx)).err().unwrap();
        assert_eq!(err.kind(), crate::models::FailureKind::Internal);
        let (graph, graph_stats) = crate::graph::build_graph(vec!["a".into(), "b".into()], &[("a".into(), "b".into())], false).unwrap();
        let topic_params = lda.parse_params(&serde_json::json!({})).unwrap();
        assert!(ammsb.check_params(&topic_params, InputStats::Graph(&graph_stats)).unwrap_err().message.contains("lda params handed to hdp_ammsb"));
        let err = FitContext::silent(|ctx| ammsb.fit(FitSource::Graph(&graph), &topic_params, 1, ctx)).err().unwrap();
        assert_eq!(err.kind(), crate::models::FailureKind::Internal);
    }
}
