//! What each model family offers once fitted, declared by the family itself.
//!
//! Why it exists: the API, the CLI and error messages must not guess what a model can
//! do from keys in its diagnostics, nor name families in strings ("hpc has"); they ask
//! the registry. A family states its input and its capabilities once
//! ([`super::ModelFamily::capabilities`], [`super::community::CommunityFamily::capabilities`]),
//! and [`all`] lists every registered family, topic and community alike, with them.
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
    /// Communities of a graph's nodes (`/communities`).
    pub communities: bool,
}

impl Capabilities {
    /// A topic model on a corpus with topic tables and prediction, nothing more.
    pub const TOPIC_MODEL: Capabilities = Capabilities {
        input: Input::Corpus,
        topic_tables: true,
        prediction: true,
        label_prediction: false,
        label_evaluation: false,
        correlations: false,
        heldout_likelihood: false,
        communities: false,
    };

    /// A relational model on a graph that reports communities.
    pub const COMMUNITY_MODEL: Capabilities = Capabilities {
        input: Input::Graph,
        topic_tables: false,
        prediction: false,
        label_prediction: false,
        label_evaluation: false,
        correlations: false,
        heldout_likelihood: false,
        communities: true,
    };
}

/// Every registered family's wire name with its capabilities, in registry order.
pub fn all() -> Vec<(&'static str, Capabilities)> {
    super::registry::REGISTRY.iter().map(|f| (f.name(), f.capabilities())).collect()
}

/// The capabilities of the family named `name`, if it is registered.
pub fn of(name: &str) -> Option<Capabilities> {
    super::registry::lookup(name).map(|f| f.capabilities())
}

/// The names of the families that have `capability`, for messages: "hpc",
/// "dcnt and scnt", "lda, dcnt and scnt" ("no family" when none has it).
pub fn families_with(capability: impl Fn(&Capabilities) -> bool) -> String {
    let names: Vec<&str> = all().into_iter().filter(|(_, c)| capability(c)).map(|(n, _)| n).collect();
    match names.as_slice() {
        [] => "no family".to_string(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_family_is_listed_once() {
        let names: Vec<&str> = all().into_iter().map(|(n, _)| n).collect();
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        for n in super::super::family_names() {
            assert_eq!(of(n).unwrap().input, Input::Corpus, "{n}");
        }
        for n in super::super::registry::names_fitting(Input::Graph) {
            assert_eq!(of(n).unwrap().input, Input::Graph, "{n}");
        }
        assert!(of("svm").is_none());
    }

    #[test]
    fn family_lists_read_as_prose() {
        assert_eq!(families_with(|c| c.label_evaluation), "hpc");
        assert_eq!(families_with(|c| c.correlations), "dcnt and scnt");
        assert_eq!(families_with(|c| c.heldout_likelihood), "lda, dcnt and scnt");
        assert_eq!(families_with(|_| false), "no family");
    }
}
