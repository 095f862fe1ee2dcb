//! The registry's seam: each family's typed contract seen through one object-safe face.
//!
//! Why it exists: a family declares its own parameter type ([`ModelFamily::Params`],
//! [`CommunityFamily::Params`]) and every method of its contract takes that type. The
//! registry, the runner and the API hold families as trait objects, which cannot name
//! an associated type, so this module puts the two together once:
//! - [`TopicEntry`] and [`CommunityEntry`] are implemented for every family; their
//!   `parse_params` reads JSON at the edge into the family's type and binds it to the
//!   family that parsed it, as a [`FitParams`];
//! - a [`FitParams`] is that binding: checking, sizing and fitting go through it to the
//!   family's own typed methods, so no `Any`, no downcast and no JSON reach a family
//!   after the edge. It also keeps the params' stored form ([`FitParams::json`]), which
//!   the runner parses back into the same value.
//!
//! Params bound to one family are refused by another by name (a caller's bug, never a
//! panic); a topic family's params handed a graph is a parameter error naming the input.

use super::capabilities::Capabilities;
use super::causes::Internal;
use super::community::{CommunityFamily, CommunityModel};
use super::edits::EditPlan;
use super::params::ParamsSchema;
use super::seeds::SeedWords;
use super::{EditStart, FitContext, FitError, ModelError, ModelFamily, ParamError, RankedModel, TopicModel, UpdateStart};
use crate::corpus::{Corpus, CorpusStats};
use crate::graph::{Graph, GraphStats};
use crate::ranks::Ranks;
use serde_json::Value;
use std::sync::Arc;

/// One family's parsed parameters, bound to the family that parsed them, with their
/// stored JSON form.
#[derive(Clone)]
pub struct FitParams {
    bound: Bound,
}

#[derive(Clone)]
enum Bound {
    Topics(Arc<dyn TopicParams>),
    Communities(Arc<dyn CommunityParams>),
}

impl FitParams {
    /// The wire name of the family these params belong to.
    pub fn family(&self) -> &'static str {
        match &self.bound {
            Bound::Topics(p) => p.family(),
            Bound::Communities(p) => p.family(),
        }
    }

    /// The stored form: every parameter under its wire name, defaults filled in.
    pub fn json(&self) -> &Value {
        match &self.bound {
            Bound::Topics(p) => p.json(),
            Bound::Communities(p) => p.json(),
        }
    }

    /// The seeded topics these params ask for (empty for families without seeds).
    pub fn seeds(&self) -> SeedWords {
        match &self.bound {
            Bound::Topics(p) => p.seeds(),
            Bound::Communities(_) => SeedWords::default(),
        }
    }

    /// The params of a refit of a model fitted with these, edited by `plan`, for
    /// `iterations` sweeps ([`ModelFamily::edited_params`]); graph families cannot be
    /// edited.
    pub fn edited(&self, plan: &EditPlan, iterations: usize) -> Result<FitParams, ParamError> {
        match &self.bound {
            Bound::Topics(p) => p.edited(plan, iterations),
            Bound::Communities(p) => Err(ParamError::new("model", format!("{} models cannot be edited", p.family()))),
        }
    }

    /// The params of an update of a model fitted with these, adding `new_topics`, for
    /// `iterations` sweeps ([`ModelFamily::updated_params`]); graph families cannot be
    /// updated.
    pub fn updated(&self, new_topics: usize, iterations: usize) -> Result<FitParams, ParamError> {
        match &self.bound {
            Bound::Topics(p) => p.updated(new_topics, iterations),
            Bound::Communities(p) => Err(ParamError::new("model", format!("{} models cannot be updated", p.family()))),
        }
    }

    /// These params as a topic family's named `family`, or an error saying whose they are.
    fn topics_of(&self, family: &str) -> Result<&dyn TopicParams, String> {
        match &self.bound {
            Bound::Topics(p) if p.family() == family => Ok(p.as_ref()),
            _ => Err(format!("{} params handed to {family}", self.family())),
        }
    }

    /// These params as a community family's named `family`.
    fn communities_of(&self, family: &str) -> Result<&dyn CommunityParams, String> {
        match &self.bound {
            Bound::Communities(p) if p.family() == family => Ok(p.as_ref()),
            _ => Err(format!("{} params handed to {family}", self.family())),
        }
    }
}

impl std::fmt::Debug for FitParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FitParams").field("family", &self.family()).field("json", self.json()).finish()
    }
}

/// A family's typed params with the family itself.
struct Bind<F: 'static, P> {
    family: &'static F,
    params: P,
    json: Value,
}

/// What a topic family's bound params can do.
trait TopicParams: Send + Sync {
    fn family(&self) -> &'static str;
    fn json(&self) -> &Value;
    fn check(&self, corpus: &CorpusStats) -> Result<(), ParamError>;
    fn check_ranks(&self, ranks: usize) -> Result<(), ParamError>;
    fn seeds(&self) -> SeedWords;
    fn fit_memory(&self, corpus: &CorpusStats, threads: usize) -> u64;
    fn fit(&self, corpus: &Corpus, seed: u64, ctx: &FitContext) -> Result<Box<dyn TopicModel>, FitError>;
    fn edited(&self, plan: &EditPlan, iterations: usize) -> Result<FitParams, ParamError>;
    fn fit_edited(&self, corpus: &Corpus, start: &EditStart<'_>, seed: u64, ctx: &FitContext) -> Result<Box<dyn TopicModel>, FitError>;
    fn updated(&self, new_topics: usize, iterations: usize) -> Result<FitParams, ParamError>;
    fn fit_updated(&self, corpus: &Corpus, start: &UpdateStart<'_>, seed: u64, ctx: &FitContext) -> Result<Box<dyn TopicModel>, FitError>;
    fn fit_ranked(&self, corpus: Option<Corpus>, seed: u64, ctx: &FitContext, ranks: &dyn Ranks) -> Result<RankedModel, FitError>;
}

impl<F: ModelFamily> TopicParams for Bind<F, F::Params> {
    fn family(&self) -> &'static str {
        self.family.name()
    }
    fn json(&self) -> &Value {
        &self.json
    }
    fn check(&self, corpus: &CorpusStats) -> Result<(), ParamError> {
        self.family.check_params(&self.params, corpus)
    }
    fn check_ranks(&self, ranks: usize) -> Result<(), ParamError> {
        self.family.check_ranks(&self.params, ranks)
    }
    fn seeds(&self) -> SeedWords {
        self.family.seeds(&self.params)
    }
    fn fit_memory(&self, corpus: &CorpusStats, threads: usize) -> u64 {
        self.family.fit_memory(corpus, &self.params, threads)
    }
    fn fit(&self, corpus: &Corpus, seed: u64, ctx: &FitContext) -> Result<Box<dyn TopicModel>, FitError> {
        self.family.fit(corpus, &self.params, seed, ctx)
    }
    fn edited(&self, plan: &EditPlan, iterations: usize) -> Result<FitParams, ParamError> {
        let child = self.family.edited_params(&self.params, plan, iterations)?;
        Ok(bind_topics(self.family, child))
    }
    fn fit_edited(&self, corpus: &Corpus, start: &EditStart<'_>, seed: u64, ctx: &FitContext) -> Result<Box<dyn TopicModel>, FitError> {
        self.family.fit_edited(corpus, &self.params, start, seed, ctx)
    }
    fn updated(&self, new_topics: usize, iterations: usize) -> Result<FitParams, ParamError> {
        let child = self.family.updated_params(&self.params, new_topics, iterations)?;
        Ok(bind_topics(self.family, child))
    }
    fn fit_updated(&self, corpus: &Corpus, start: &UpdateStart<'_>, seed: u64, ctx: &FitContext) -> Result<Box<dyn TopicModel>, FitError> {
        self.family.fit_updated(corpus, &self.params, start, seed, ctx)
    }
    fn fit_ranked(&self, corpus: Option<Corpus>, seed: u64, ctx: &FitContext, ranks: &dyn Ranks) -> Result<RankedModel, FitError> {
        self.family.fit_ranked(corpus, &self.params, seed, ctx, ranks)
    }
}

/// What a community family's bound params can do.
trait CommunityParams: Send + Sync {
    fn family(&self) -> &'static str;
    fn json(&self) -> &Value;
    fn check(&self, graph: &GraphStats) -> Result<(), ParamError>;
    fn fit_memory(&self, graph: &GraphStats, threads: usize) -> u64;
    fn fit(&self, graph: &Graph, seed: u64, ctx: &FitContext) -> Result<Box<dyn CommunityModel>, FitError>;
}

impl<F: CommunityFamily> CommunityParams for Bind<F, F::Params> {
    fn family(&self) -> &'static str {
        self.family.name()
    }
    fn json(&self) -> &Value {
        &self.json
    }
    fn check(&self, graph: &GraphStats) -> Result<(), ParamError> {
        self.family.check_params(&self.params, graph)
    }
    fn fit_memory(&self, graph: &GraphStats, threads: usize) -> u64 {
        self.family.fit_memory(graph, &self.params, threads)
    }
    fn fit(&self, graph: &Graph, seed: u64, ctx: &FitContext) -> Result<Box<dyn CommunityModel>, FitError> {
        self.family.fit(graph, &self.params, seed, ctx)
    }
}

/// A topic family as the registry holds it: [`ModelFamily`] with its params bound.
pub trait TopicEntry: Sync {
    fn name(&self) -> &'static str;
    /// Parse `params` into the family's type ([`ModelFamily::parse_params`]), bound to it.
    fn parse_params(&'static self, params: &Value) -> Result<FitParams, ParamError>;
    /// The family's brief-fit params ([`ModelFamily::quick_params`]), bound to it.
    fn quick_params(&'static self) -> FitParams;
    fn decode(&self, bytes: &[u8]) -> Result<Box<dyn TopicModel>, ModelError>;
    fn capabilities(&self) -> Capabilities;
    /// The generated schema of the family's params ([`ModelFamily::params_schema`]).
    fn params_schema(&self) -> ParamsSchema;

    /// [`ModelFamily::check_params`] of params this family parsed.
    fn check_params(&self, params: &FitParams, corpus: &CorpusStats) -> Result<(), ParamError> {
        params.topics_of(self.name()).map_err(|e| ParamError::new("", e))?.check(corpus)
    }
    /// [`ModelFamily::check_ranks`] of params this family parsed.
    fn check_ranks(&self, params: &FitParams, ranks: usize) -> Result<(), ParamError> {
        params.topics_of(self.name()).map_err(|e| ParamError::new("", e))?.check_ranks(ranks)
    }
    /// [`ModelFamily::fit_memory`] of params this family parsed.
    ///
    /// # Panics
    /// When `params` are another family's (a caller's bug: the job's params are parsed
    /// by its own family).
    fn fit_memory(&self, corpus: &CorpusStats, params: &FitParams, threads: usize) -> u64 {
        params.topics_of(self.name()).unwrap_or_else(|e| panic!("{e}")).fit_memory(corpus, threads)
    }
    /// [`ModelFamily::fit`] with params this family parsed.
    fn fit(&self, corpus: &Corpus, params: &FitParams, seed: u64, ctx: &FitContext) -> Result<Box<dyn TopicModel>, FitError> {
        params.topics_of(self.name()).map_err(|detail| FitError::Internal(Internal::Bug { detail }))?.fit(corpus, seed, ctx)
    }
    /// [`ModelFamily::fit_ranked`] with params this family parsed.
    fn fit_ranked(&self, corpus: Option<Corpus>, params: &FitParams, seed: u64, ctx: &FitContext, ranks: &dyn Ranks) -> Result<RankedModel, FitError> {
        params.topics_of(self.name()).map_err(|detail| FitError::Internal(Internal::Bug { detail }))?.fit_ranked(corpus, seed, ctx, ranks)
    }
    /// [`ModelFamily::fit_edited`] with params this family made ([`FitParams::edited`]).
    fn fit_edited(&self, corpus: &Corpus, params: &FitParams, start: &EditStart<'_>, seed: u64, ctx: &FitContext) -> Result<Box<dyn TopicModel>, FitError> {
        params.topics_of(self.name()).map_err(|detail| FitError::Internal(Internal::Bug { detail }))?.fit_edited(corpus, start, seed, ctx)
    }
    /// [`ModelFamily::fit_updated`] with params this family made ([`FitParams::updated`]).
    fn fit_updated(&self, corpus: &Corpus, params: &FitParams, start: &UpdateStart<'_>, seed: u64, ctx: &FitContext) -> Result<Box<dyn TopicModel>, FitError> {
        params.topics_of(self.name()).map_err(|detail| FitError::Internal(Internal::Bug { detail }))?.fit_updated(corpus, start, seed, ctx)
    }
}

impl<F: ModelFamily> TopicEntry for F {
    fn name(&self) -> &'static str {
        ModelFamily::name(self)
    }
    fn parse_params(&'static self, params: &Value) -> Result<FitParams, ParamError> {
        let typed = ModelFamily::parse_params(self, params)?;
        Ok(bind_topics(self, typed))
    }
    fn quick_params(&'static self) -> FitParams {
        bind_topics(self, ModelFamily::quick_params(self))
    }
    fn decode(&self, bytes: &[u8]) -> Result<Box<dyn TopicModel>, ModelError> {
        ModelFamily::decode(self, bytes)
    }
    fn capabilities(&self) -> Capabilities {
        ModelFamily::capabilities(self)
    }
    fn params_schema(&self) -> ParamsSchema {
        ModelFamily::params_schema(self)
    }
}

fn bind_topics<F: ModelFamily>(family: &'static F, params: F::Params) -> FitParams {
    let json = family.params_json(&params);
    FitParams { bound: Bound::Topics(Arc::new(Bind { family, params, json })) }
}

/// A community family as the registry holds it: [`CommunityFamily`] with its params bound.
pub trait CommunityEntry: Sync {
    fn name(&self) -> &'static str;
    /// Parse `params` into the family's type ([`CommunityFamily::parse_params`]), bound to it.
    fn parse_params(&'static self, params: &Value) -> Result<FitParams, ParamError>;
    /// The family's brief-fit params, bound to it.
    fn quick_params(&'static self) -> FitParams;
    fn decode(&self, bytes: &[u8]) -> Result<Box<dyn CommunityModel>, ModelError>;
    fn capabilities(&self) -> Capabilities;
    /// The generated schema of the family's params ([`CommunityFamily::params_schema`]).
    fn params_schema(&self) -> ParamsSchema;

    /// [`CommunityFamily::check_params`] of params this family parsed.
    fn check_params(&self, params: &FitParams, graph: &GraphStats) -> Result<(), ParamError> {
        params.communities_of(self.name()).map_err(|e| ParamError::new("", e))?.check(graph)
    }
    /// [`CommunityFamily::fit_memory`] of params this family parsed.
    ///
    /// # Panics
    /// When `params` are another family's (see [`TopicEntry::fit_memory`]).
    fn fit_memory(&self, graph: &GraphStats, params: &FitParams, threads: usize) -> u64 {
        params.communities_of(self.name()).unwrap_or_else(|e| panic!("{e}")).fit_memory(graph, threads)
    }
    /// [`CommunityFamily::fit`] with params this family parsed.
    fn fit(&self, graph: &Graph, params: &FitParams, seed: u64, ctx: &FitContext) -> Result<Box<dyn CommunityModel>, FitError> {
        params.communities_of(self.name()).map_err(|detail| FitError::Internal(Internal::Bug { detail }))?.fit(graph, seed, ctx)
    }
}

impl<F: CommunityFamily> CommunityEntry for F {
    fn name(&self) -> &'static str {
        CommunityFamily::name(self)
    }
    fn parse_params(&'static self, params: &Value) -> Result<FitParams, ParamError> {
        let typed = CommunityFamily::parse_params(self, params)?;
        Ok(bind_communities(self, typed))
    }
    fn quick_params(&'static self) -> FitParams {
        bind_communities(self, CommunityFamily::quick_params(self))
    }
    fn decode(&self, bytes: &[u8]) -> Result<Box<dyn CommunityModel>, ModelError> {
        CommunityFamily::decode(self, bytes)
    }
    fn capabilities(&self) -> Capabilities {
        CommunityFamily::capabilities(self)
    }
    fn params_schema(&self) -> ParamsSchema {
        CommunityFamily::params_schema(self)
    }
}

fn bind_communities<F: CommunityFamily>(family: &'static F, params: F::Params) -> FitParams {
    let json = family.params_json(&params);
    FitParams { bound: Bound::Communities(Arc::new(Bind { family, params, json })) }
}
