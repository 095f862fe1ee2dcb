//! What each model family offers once fitted, declared by the family itself.
//!
//! Why it exists: the API, the CLI and error messages must not guess what a model can
//! do from keys in its diagnostics, nor name families in strings ("hpc has"); they ask
//! the registry. A family states its input and its capabilities once
//! ([`super::ModelFamily::capabilities`], [`super::community::CommunityFamily::capabilities`]),
//! and [`super::registry::capabilities`] lists every registered family, topic and
//! community alike, with them.
//! A test fits every family on tiny data and checks the declarations against what the
//! fitted model actually answers.

use serde::Serialize;

/// What a family fits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Input {
    /// A corpus (`corpus_id`).
    Corpus,
    /// A graph (`graph_id`).
    Graph,
}

/// The questions a fitted model of a family answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Capabilities {
    pub input: Input,
    /// Topic tables, FREX, words, coherence (`/topics`, `/frex`, `/coherence`, CSV).
    pub topic_tables: bool,
    /// Topic proportions of new documents (`/predict`).
    pub prediction: bool,
    /// Labels of new documents in the uploaded label space (`/predict`'s `labels`).
    pub label_prediction: bool,
    /// Scores of label predictions on the fit's test split (`/evaluation`).
    pub label_evaluation: bool,
    /// Monte Carlo topic covariance and correlation (`/correlations`).
    pub correlations: bool,
    /// A held-out likelihood estimator (`/heldout-likelihood`).
    pub heldout_likelihood: bool,
    /// Covariate effects with intervals (`/effects`), for fits that read covariates.
    pub effects: bool,
    /// Intervals on the topic summaries (`/topics?with=intervals`), from kept samples.
    pub summary_intervals: bool,
    /// Intervals on predicted topic proportions (`/predict` with `intervals`).
    pub prediction_intervals: bool,
    /// Communities of a graph's nodes (`/communities`).
    pub communities: bool,
    /// Refits from an edit of the model's topics (`POST /v1/models/{id}/edits`).
    pub edits: bool,
    /// Fits from the model's state with new documents added
    /// (`POST /v1/models/{id}/update`).
    pub updates: bool,
}

impl Capabilities {
    /// A model on a corpus that offers nothing: what the two kinds below start from.
    const NOTHING: Capabilities = Capabilities {
        input: Input::Corpus,
        topic_tables: false,
        prediction: false,
        label_prediction: false,
        label_evaluation: false,
        correlations: false,
        heldout_likelihood: false,
        effects: false,
        summary_intervals: false,
        prediction_intervals: false,
        communities: false,
        edits: false,
        updates: false,
    };

    /// A topic model on a corpus with topic tables and prediction, nothing more.
    pub const TOPIC_MODEL: Capabilities = Capabilities { topic_tables: true, prediction: true, ..Self::NOTHING };

    /// A relational model on a graph that reports communities.
    pub const COMMUNITY_MODEL: Capabilities = Capabilities { input: Input::Graph, communities: true, ..Self::NOTHING };
}
