//! The declared [`Capabilities`] of every topic family against what its fitted models
//! actually answer: each family is fitted (a few sweeps) on a small labelled corpus
//! drawn from HPC's generative process, and each capability's trait method must give
//! an answer exactly when the family declares it.

use super::capabilities::{Capabilities, Input};
use super::hpc::simulate::{simulate, SimulationConfig};
use super::registry::topic_families;
use super::{FitContext, PredictOptions};
use crate::corpus::builder::build_corpus;
use crate::corpus::lexicon::EncodedDoc;
use crate::corpus::preprocess::{PreprocessOptions, StopWords};
use serde_json::json;

#[test]
fn declared_capabilities_match_what_fitted_models_answer() {
    let config = SimulationConfig::small(120, 60, vec![2, 2], 40.0);
    let corpus = build_corpus(PreprocessOptions { stopwords: StopWords::None, ..PreprocessOptions::default() }, &[], simulate(&config, 3).to_raw_documents())
        .expect("corpus builds");
    let doc = EncodedDoc { terms: vec![0, 3, 7], counts: vec![2, 1, 1], oov_tokens: 0 };
    for family in topic_families() {
        let declared: Capabilities = family.capabilities();
        assert_eq!(super::registry::lookup(family.name()).map(|f| f.capabilities()), Some(declared));
        assert_eq!(declared.input, Input::Corpus, "{}", family.name());
        assert!(!declared.communities, "{}", family.name());
        // A family that scores labels on a test split is given one.
        let mut quick = family.quick_params().json().clone();
        if declared.label_evaluation {
            quick["test_fraction"] = json!(0.2);
        }
        let params = family.parse_params(&quick).unwrap();
        let samples = std::sync::Mutex::new(Vec::new());
        let cancel = super::CancelToken::new();
        let ctx = FitContext {
            progress: &|_| {},
            cancel: &cancel,
            sample: &|it, bytes| samples.lock().unwrap().push((it, bytes)),
            checkpoint: super::Checkpointing::OFF,
        };
        let model = family.fit(&corpus, &params, 1, &ctx).unwrap_or_else(|e| panic!("{} fits: {e}", family.name()));
        let samples = samples.into_inner().unwrap();
        let name = family.name();
        assert_eq!(model.num_topics() > 0 && !model.topic_table(&Default::default()).topics.is_empty(), declared.topic_tables, "{name}: topic tables");
        let predicted = model.predict(std::slice::from_ref(&doc), &PredictOptions::default());
        let intervals =
            model.predict_with_intervals(std::slice::from_ref(&doc), &PredictOptions::default(), 0.9).unwrap_or_else(|e| panic!("{}: {e}", family.name()));
        assert_eq!(
            intervals.as_ref().is_some_and(|i| i.len() == 1 && i[0].1.len() == model.num_topics()),
            declared.prediction_intervals,
            "{}: prediction intervals",
            family.name()
        );
        if let (Some(with), Ok(p)) = (&intervals, &predicted) {
            assert_eq!(with[0].0.topic_proportions, p[0].topic_proportions, "{}: the same prediction with intervals", family.name());
        }
        assert_eq!(predicted.is_ok(), declared.prediction, "{name}: prediction");
        if let Ok(p) = predicted {
            assert_eq!(!p[0].labels.is_empty(), declared.label_prediction, "{name}: label prediction");
        }
        assert_eq!(model.evaluate_test_split(&corpus, 1).is_some(), declared.label_evaluation, "{name}: label evaluation");
        assert_eq!(model.correlations(4, 0).is_some(), declared.correlations, "{name}: correlations");
        // A family with effects answers (here, without covariates, with an error naming
        // why); one without has no estimator.
        let query = crate::models::effects::EffectQuery {
            covariate: "x".into(),
            grid: 5,
            contrast: None,
            level: 0.95,
            topics: None,
            seed: 1,
            chains: Default::default(),
        };
        assert_eq!(!matches!(model.effects(&query), Ok(None)), declared.effects, "{name}: effects");
        // A family with summary intervals draws a table from each kept sample; one
        // without keeps none to draw from.
        let (it, bytes) = samples.first().cloned().unwrap_or((1, Vec::new()));
        let drawn = model.topic_draw(it, &bytes).unwrap_or_else(|e| panic!("{name}: its own sample draws: {e}"));
        assert_eq!(
            drawn.is_some_and(|d| d.table.topics.len() == model.num_topics() && d.pooled.len() == model.num_topics()),
            declared.summary_intervals,
            "{name}: summary intervals"
        );
        let scorer = model.heldout_scorer(&Default::default()).unwrap_or_else(|e| panic!("{name}: default estimator settings are valid: {e:?}"));
        assert_eq!(scorer.is_some(), declared.heldout_likelihood, "{name}: held-out likelihood");
    }
}
