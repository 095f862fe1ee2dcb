//! What a sweep scores each finished fit by.
//!
//! Why it exists: a sweep's rows are comparable only if every fit is scored the same
//! way on the same documents. [`score_fit`] takes a fitted model, the corpus it was
//! fitted on and the fit's seed and test fraction (every fit of a sweep shares both, so
//! they hold out the same documents), and returns every number a row shows:
//!
//! - `heldout_loglik_per_token`: document completion ([`crate::models::completion`]) on
//!   the test documents, with each document's terms kept for [`super::suggest`];
//! - `coherence_npmi`: mean NPMI of each topic's 10 most frequent words over the whole
//!   stored corpus (a sliding window of 10 tokens where the corpus kept token order,
//!   documents otherwise: gensim's `c_npmi`, as `GET /v1/models/{id}/coherence`);
//! - `exclusivity`: the mean, over topics and their 10 most frequent words, of the
//!   share of the word's rate that falls in the topic (the exclusivity FREX ranks by):
//!   1 when every top word belongs to its topic alone;
//! - `stability`: the mean similarity of the topics to their matches in the other
//!   chains ([`crate::models::stability`]); `None` for one chain;
//! - `residual_dispersion`: Taddy's σ² ([`super::dispersion`]) over the training
//!   documents, with their posterior-mean proportions where the model keeps them and
//!   folded in otherwise;
//! - `rhat_max`: the worst split-R̂ of the fit's convergence report (`None` without one).

use super::dispersion::residual_dispersion;
use super::intervals::mean_standard_error;
use crate::corpus::lexicon::EncodedDoc;
use crate::corpus::Corpus;
use crate::models::completion::{document_completion_by_document, split_corpus_documents, DocumentCompletion};
use crate::models::{splits, stability, DocumentProportions, ModelError, PredictOptions, TableOptions, TopicModel};
use crate::summaries::{model_coherence, Measure, Occurrences};
use ndarray::Array2;
use serde::{Deserialize, Serialize};

/// The share of documents a sweep holds out when its request names none.
pub const DEFAULT_HELDOUT_FRACTION: f64 = 0.1;

/// Top words per topic that coherence and exclusivity read (stm's and gensim's default).
pub const TOP_WORDS: usize = 10;

/// The window NPMI slides over a corpus that kept token order (gensim's default).
const NPMI_WINDOW: usize = 10;

/// One fit's scores. Stored as JSON once the fit is scored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepScores {
    /// The model's topics (an HDP's: those it kept).
    pub topics: usize,
    pub heldout_loglik_per_token: Option<f64>,
    /// Each scored test document's completion terms, in corpus order.
    pub heldout_documents: Vec<DocumentCompletion>,
    pub coherence_npmi: Option<f64>,
    /// Standard errors over topics of `coherence_npmi`, `exclusivity` and `stability`
    /// ([`super::intervals`]; absent from scores kept before them).
    #[serde(default)]
    pub coherence_npmi_se: Option<f64>,
    #[serde(default)]
    pub exclusivity_se: Option<f64>,
    #[serde(default)]
    pub stability_se: Option<f64>,
    /// `None`: documents as the virtual documents; else the sliding window's tokens.
    pub coherence_window: Option<usize>,
    pub exclusivity: f64,
    pub stability: Option<f64>,
    /// Topics some other chain holds no match for.
    pub unstable_topics: usize,
    pub residual_dispersion: Option<f64>,
    pub rhat_max: Option<f64>,
}

/// Score a fitted model (see the module docs).
pub fn score_fit(model: &dyn TopicModel, corpus: &Corpus, seed: u64, test_fraction: f64) -> Result<SweepScores, ModelError> {
    let held_out = splits::test_mask(corpus, test_fraction, seed);
    let predict = PredictOptions { seed, ..PredictOptions::default() };
    let test_documents = split_corpus_documents(corpus, &held_out);
    let (report, heldout_documents) = document_completion_by_document(model, &test_documents, &predict)?;
    let table = model.topic_table(&TableOptions::default());
    let top = top_words(&table.frequency, TOP_WORDS);
    let (npmi_per_topic, coherence_npmi, coherence_window) = npmi(corpus, &top);
    let exclusivity_per_topic: Vec<f64> = top.iter().enumerate().map(|(k, words)| mean(words.iter().map(|&w| table.exclusivity[[k, w as usize]]))).collect();
    let exclusivity = mean(exclusivity_per_topic.iter().copied());
    let per_topic = model.topic_stability();
    let similarities: Vec<f64> = per_topic.iter().flatten().map(|s| s.similarity).collect();
    let theta = training_theta(model, corpus, &held_out, &predict)?;
    let dispersion = residual_dispersion(corpus, &theta, table.frequency.view());
    let rhat_max = model.diagnostics()["convergence"]["max_rhat"].as_f64();
    Ok(SweepScores {
        topics: model.num_topics(),
        heldout_loglik_per_token: report.per_token.is_finite().then_some(report.per_token),
        heldout_documents,
        coherence_npmi,
        coherence_npmi_se: mean_standard_error(&npmi_per_topic),
        exclusivity_se: mean_standard_error(&exclusivity_per_topic),
        stability_se: mean_standard_error(&similarities),
        coherence_window,
        exclusivity,
        stability: per_topic.as_deref().and_then(stability::mean_similarity),
        unstable_topics: per_topic.iter().flatten().filter(|s| !s.in_every_chain()).count(),
        residual_dispersion: dispersion.map(|d| d.dispersion),
        rhat_max,
    })
}

/// Each topic's `n` most frequent words, most frequent first.
fn top_words(frequency: &Array2<f64>, n: usize) -> Vec<Vec<u32>> {
    frequency
        .rows()
        .into_iter()
        .map(|row| {
            let mut order: Vec<u32> = (0..row.len() as u32).collect();
            order.sort_by(|&a, &b| row[b as usize].total_cmp(&row[a as usize]).then(a.cmp(&b)));
            order.truncate(n);
            order
        })
        .collect()
}

/// Each topic's NPMI of its top words, their mean, and the window it slid (`None`:
/// documents); `None` for the mean when no topic's value is finite.
fn npmi(corpus: &Corpus, top: &[Vec<u32>]) -> (Vec<f64>, Option<f64>, Option<usize>) {
    let words: Vec<u32> = top.iter().flatten().copied().collect();
    let (occ, window) = match &corpus.token_order {
        Some(order) => (Occurrences::from_windows(order, &words, NPMI_WINDOW), Some(NPMI_WINDOW)),
        None => (Occurrences::from_documents(&corpus.counts, &words), None),
    };
    let (per_topic, mean) = model_coherence(Measure::CNpmi, &occ, top);
    (per_topic, mean.is_finite().then_some(mean), window)
}

/// The training documents' topic proportions: the model's posterior means where it
/// keeps them, else folded in.
fn training_theta(model: &dyn TopicModel, corpus: &Corpus, held_out: &[bool], predict: &PredictOptions) -> Result<DocumentProportions, ModelError> {
    if let Some(kept) = model.training_proportions(corpus, predict.seed) {
        return Ok(kept);
    }
    let documents: Vec<usize> = (0..corpus.num_documents()).filter(|&d| !held_out[d]).collect();
    let docs: Vec<EncodedDoc> = documents
        .iter()
        .map(|&d| {
            let (terms, counts) = corpus.counts.row(d);
            EncodedDoc { terms: terms.to_vec(), counts: counts.to_vec(), oov_tokens: 0 }
        })
        .collect();
    let rows = model.predict(&docs, predict)?.into_iter().flat_map(|p| p.topic_proportions).collect();
    Ok(DocumentProportions { documents, rows })
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    if n == 0 {
        f64::NAN
    } else {
        sum / n as f64
    }
}
