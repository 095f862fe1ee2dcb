//! Every numeric parameter of every registered family has a range, and the range is
//! safe: a value at either end of it is accepted, a value just outside is refused
//! naming the field, and fits with the real-valued parameters at their ends (all low,
//! all high, and alternating) end with finite numbers, so that a job accepted at submit
//! cannot fail on its params. The ranges are the ones each family's generated params
//! schema states (recorded from its parser), so no table here can drift from them;
//! `tests/openapi.rs` checks the served schemas through HTTP.

use super::lda::{fit_lda, LdaParams};
use super::options::JobOptions;
use super::registry::{Family, FitSource, Fitted, REGISTRY};
use super::{FitContext, PredictOptions};
use crate::corpus::builder::build_corpus;
use crate::corpus::lexicon::EncodedDoc;
use crate::corpus::preprocess::{PreprocessOptions, StopWords};
use serde_json::{json, Value};

/// How a parameter's range is read.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    /// An integer in `[lo, hi]`.
    Int,
    /// A real number in `[lo, hi]`.
    Real,
    /// A real number in `[lo, hi)`.
    Fraction,
}

/// One bounded parameter.
struct Bound {
    key: String,
    lo: f64,
    hi: f64,
    kind: Kind,
}

/// The most iterations a Gibbs family runs (what `burn_in` is read beside).
const MILLION: f64 = 1e6;

/// Every numeric parameter of `family` with its range, read from the family's generated
/// params schema (the bounds its parser checks, recorded as it reads them): a new
/// parameter is covered here the moment its parser reads it. The runner options the
/// schema adds are checked separately ([`JobOptions`]).
fn bounds_of(family: Family) -> Vec<Bound> {
    let schema = family.params_schema().schema;
    let properties = schema["properties"].as_object().expect("a params schema has properties");
    properties
        .iter()
        .filter(|(key, _)| !super::options::OPTION_KEYS.contains(&key.as_str()))
        .filter_map(|(key, p)| {
            let kind = match p["type"].as_str()? {
                "integer" => Kind::Int,
                "number" if p.get("exclusiveMaximum").is_some() => Kind::Fraction,
                "number" => Kind::Real,
                _ => return None,
            };
            let (lo, hi) = (p["minimum"].as_f64()?, p["maximum"].as_f64().or_else(|| p["exclusiveMaximum"].as_f64())?);
            Some(Bound { key: key.clone(), lo, hi, kind })
        })
        .collect()
}

/// `key: value` with whatever else the value needs to be read alone: `burn_in` below
/// the most iterations, and HPC's test share without its default validation share.
fn with(family: &str, key: &str, value: f64, kind: Kind) -> Value {
    let v = if kind == Kind::Int { json!(value as u64) } else { json!(value) };
    let mut params = json!({ key: v });
    match key {
        "burn_in" => params["iterations"] = json!(MILLION as u64),
        "test_fraction" if family == "hpc" => params["validation_fraction"] = json!(0.0),
        _ => {}
    }
    params
}

/// Values just outside `b` (a JSON value: a negative integer is not a `u64`).
fn outside(b: &Bound) -> Vec<Value> {
    match b.kind {
        Kind::Int => vec![json!(b.lo as i64 - 1), json!(b.hi as u64 + 1)],
        Kind::Real => vec![json!(if b.lo > 0.0 { b.lo * (1.0 - 1e-9) } else { -1e-12 }), json!(b.hi * (1.0 + 1e-9))],
        Kind::Fraction => vec![json!(b.lo - 1e-12), json!(b.hi)],
    }
}

fn parse(family: Family, params: &Value) -> Result<(), super::ParamError> {
    family.parse_params(params).map(|_| ())
}

/// At both ends of its range each parameter is accepted; just outside it is refused and
/// the error names it. Every numeric (or null-defaulted) key a family stores has a range
/// in the table, so a new parameter cannot arrive unbounded.
#[test]
fn every_numeric_param_is_accepted_at_its_bounds_and_refused_just_outside() {
    for family in REGISTRY {
        let name = family.name();
        let table = bounds_of(*family);
        let stored = family.parse_params(&json!({})).unwrap().json().clone();
        for (key, value) in stored.as_object().unwrap() {
            if value.is_number() || value.is_null() {
                assert!(table.iter().any(|b| b.key == *key), "{name}: {key} (stored as {value}) has no range in its params schema");
            }
        }
        for b in &table {
            let top = if b.kind == Kind::Fraction { b.hi - 1e-9 } else { b.hi };
            for at in [b.lo, top] {
                let params = with(name, &b.key, at, b.kind);
                parse(*family, &params).unwrap_or_else(|e| panic!("{name}: {params} is refused: {e}"));
            }
            for value in outside(b) {
                let mut params = with(name, &b.key, b.lo, b.kind);
                params[b.key.as_str()] = value;
                let e = parse(*family, &params).expect_err(&format!("{name}: {params} is accepted"));
                assert_eq!(e.field, b.key, "{name}: {params}: {e}");
            }
            for absurd in [json!(1e308), json!(-1e308), json!("1")] {
                let e = parse(*family, &json!({ b.key.as_str(): absurd })).expect_err(&format!("{name}: {} = {absurd} is accepted", b.key));
                assert_eq!(e.field, b.key, "{name}: {absurd}");
            }
        }
        // Spline columns per covariate: checked when the params are read, not only
        // against the corpus.
        if stored.get("splines").is_some() {
            parse(*family, &json!({"covariates": ["x"], "splines": {"x": 3}})).unwrap();
            parse(*family, &json!({"covariates": ["x"], "splines": {"x": 20}})).unwrap();
            for df in [2, 21] {
                let e = parse(*family, &json!({"covariates": ["x"], "splines": {"x": df}})).unwrap_err();
                assert_eq!(e.field, "splines.x", "{name}: {df} columns");
            }
        }
    }
    // The runner options every family's params may carry.
    for (key, lo, hi, kind) in [("threads", 0.0, 1024.0, Kind::Int), ("checkpoint_every_s", 0.0, 604_800.0, Kind::Real), ("ranks", 1.0, 1024.0, Kind::Int)] {
        let b = Bound { key: key.to_string(), lo, hi, kind };
        for at in [lo, hi] {
            JobOptions::from_json(&with("", key, at, kind)).unwrap();
        }
        for value in outside(&b) {
            assert_eq!(JobOptions::from_json(&json!({ key: value })).unwrap_err().field, key, "{value}");
        }
    }
}

/// A small corpus drawn from HPC's generative process (labels on a tree, so every topic
/// family fits it), as `capabilities_tests` uses.
fn small_corpus() -> crate::corpus::Corpus {
    let config = super::hpc::simulate::SimulationConfig::small(60, 40, vec![2, 2], 30.0);
    let docs = super::hpc::simulate::simulate(&config, 5).to_raw_documents();
    build_corpus(PreprocessOptions { stopwords: StopWords::None, ..PreprocessOptions::default() }, &[], docs).expect("corpus builds")
}

/// `blocks` groups of `size` nodes, each linked to four fifths of its own group, and
/// `cross` links between groups: planted communities with links and non-links in
/// each (a community with none of either is where tiny Beta priors underflowed).
fn planted_graph(blocks: usize, size: usize, cross: usize) -> crate::graph::Graph {
    let n = blocks * size;
    let nodes: Vec<String> = (0..n).map(|i| format!("n{i}")).collect();
    let mut edges = Vec::new();
    for b in 0..blocks {
        for i in b * size..(b + 1) * size {
            for j in (i + 1)..(b + 1) * size {
                if (i * 7 + j * 3) % 5 != 0 {
                    edges.push((nodes[i].clone(), nodes[j].clone()));
                }
            }
        }
    }
    for c in 0..cross {
        let (i, j) = ((c * 13) % n, (c * 29 + 5) % n);
        if i != j {
            edges.push((nodes[i].clone(), nodes[j].clone()));
        }
    }
    crate::graph::build_graph(nodes, &edges, false).expect("graph builds").0
}

fn all_finite(xs: impl IntoIterator<Item = f64>) -> bool {
    xs.into_iter().all(f64::is_finite)
}

/// A fitted model's numbers: its topic table and a prediction (topic models), its
/// memberships and link probabilities (community models).
fn assert_finite(model: &Fitted, what: &str) {
    match model {
        Fitted::Topics(m) => {
            let table = m.topic_table(&Default::default());
            assert!(all_finite(table.frequency.iter().copied()) && all_finite(table.exclusivity.iter().copied()), "{what}: topic table");
            let doc = EncodedDoc { terms: vec![0, 3, 7], counts: vec![2, 1, 1], oov_tokens: 0 };
            if let Ok(p) = m.predict(&[doc], &PredictOptions::default()) {
                assert!(all_finite(p[0].topic_proportions.iter().copied()), "{what}: prediction {:?}", p[0].topic_proportions);
            }
        }
        Fitted::Communities(m) => {
            let c = m.communities();
            assert!(all_finite(c.nodes.iter().flat_map(|n| n.membership.iter().copied())), "{what}: memberships");
            assert!(all_finite(c.communities.iter().flat_map(|s| [s.link_probability, s.size])), "{what}: communities");
        }
    }
}

/// Which end of its range the i-th real-valued parameter takes (true: the low one).
type End = (&'static str, fn(usize) -> bool);

/// Every family fits a small input with its real-valued parameters (priors, step
/// sizes, tolerances, ε) all at the bottom of their ranges, all at the top, and
/// alternating (a Gamma prior's shape low and its rate high, and the reverse): the fit
/// succeeds and its numbers are finite, the held-out score of its test split included.
#[test]
fn fits_at_the_ends_of_the_ranges_are_finite() {
    let corpus = small_corpus();
    let graph = planted_graph(4, 10, 15);
    for family in REGISTRY {
        let name = family.name();
        let reals: Vec<Bound> = bounds_of(*family).into_iter().filter(|b| b.kind == Kind::Real).collect();
        assert!(!reals.is_empty(), "{name}");
        let ends: [End; 4] = [("low", |_| true), ("high", |_| false), ("even low", |i| i % 2 == 0), ("odd low", |i| i % 2 == 1)];
        for (label, low) in ends {
            let mut params = family.quick_params().json().clone();
            if family.input() == super::capabilities::Input::Corpus {
                params["test_fraction"] = json!(0.2);
            }
            if matches!(name, "lda" | "dcnt" | "scnt") {
                (params["heldout_burn_in"], params["heldout_chain_length"]) = (json!(3), json!(5));
            }
            if matches!(name, "dcnt" | "scnt") {
                params["heldout_acceptance_samples"] = json!(20);
            }
            for (i, b) in reals.iter().enumerate() {
                params[b.key.as_str()] = json!(if low(i) { b.lo } else { b.hi });
            }
            let parsed = family.parse_params(&params).unwrap_or_else(|e| panic!("{name} {label}: {e}"));
            let source = match family {
                Family::Topics(_) => FitSource::Corpus(&corpus),
                Family::Communities(_) => FitSource::Graph(&graph),
            };
            let what = format!("{name} with {label} ends {params}");
            let model = FitContext::silent(|ctx| family.fit(source, &parsed, 3, ctx)).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_finite(&model, &what);
            let heldout = &model.diagnostics()["heldout"];
            if !heldout.is_null() {
                // A NaN would have been written as null.
                assert!(heldout["total_log_likelihood"].is_f64() && heldout["perplexity"].is_f64(), "{what}: held-out {heldout}");
            }
        }
    }
}

/// LDA at the ends of α's and β's ranges (the report's β = 1e308 made V·β infinite and
/// the fit's log-likelihood NaN): the trace's log-likelihood, the word rates and the
/// held-out score stay finite, with the dense and the sparse kernel and with the
/// hyperparameters re-estimated from the extreme start.
#[test]
fn lda_at_its_extreme_priors_has_a_finite_log_likelihood() {
    let (_, docs) = super::lda::sampler::tests::lda_corpus(3, 30, 40, 25, 0.3, 11);
    let corpus = build_corpus(super::lda::sampler::tests::raw_options(), &[], docs).expect("corpus builds");
    let (lo, hi) = (super::params::MIN_CONCENTRATION, super::params::MAX_CONCENTRATION);
    let sparse = super::lda::sampler::DENSE_MAX_TOPICS + 4;
    let mut cases = Vec::new();
    for (alpha, beta) in [(lo, lo), (lo, hi), (hi, lo), (hi, hi)] {
        cases.push(json!({"topics": 3, "alpha": alpha, "beta": beta, "iterations": 6, "burn_in": 2, "thin": 1, "loglik_every": 1,
                          "test_fraction": 0.2, "heldout_burn_in": 3, "heldout_chain_length": 5}));
        cases.push(json!({"topics": 4, "alpha": alpha, "beta": beta, "iterations": 6, "burn_in": 1, "thin": 1, "optimize_interval": 2, "optimize_beta": true}));
    }
    for beta in [lo, hi] {
        cases.push(json!({"topics": sparse, "alpha": lo, "beta": beta, "iterations": 3, "burn_in": 1, "thin": 1, "sync_tokens": 200}));
        cases.push(json!({"topics": sparse, "alpha": hi, "beta": beta, "iterations": 3, "burn_in": 1, "thin": 1, "sync_tokens": 200}));
    }
    // β's rejected value gives the failure this guards against.
    assert_eq!(LdaParams::from_json(&json!({"beta": 1e308})).unwrap_err().field, "beta");
    for given in cases {
        let p = LdaParams::from_json(&given).unwrap();
        let model = FitContext::silent(|ctx| fit_lda(&corpus, &p, 5, ctx)).unwrap_or_else(|e| panic!("{given}: {e}"));
        assert!(model.final_loglik_per_token.is_finite() && model.final_loglik_per_token < 0.0, "{given}: log-likelihood {}", model.final_loglik_per_token);
        assert!(all_finite(model.word_rates.iter().copied()) && all_finite(model.document_proportions.iter().copied()), "{given}: rates");
        assert!(all_finite(model.alpha.iter().copied()) && model.beta.is_finite(), "{given}: α {:?}, β {}", model.alpha, model.beta);
        if let Some(h) = &model.heldout {
            assert!(h.total_log_likelihood.is_finite() && h.perplexity.is_finite(), "{given}: held-out {} {}", h.total_log_likelihood, h.perplexity);
        }
        assert_eq!(model.heldout.is_some(), given.get("test_fraction").is_some(), "{given}");
    }
}
