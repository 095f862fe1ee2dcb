//! A model fitted on a derived model's live topics, served in the child's topic ids.
//!
//! Why it exists: an edit retires topics but keeps every id ([`super::slots`]). DCNT
//! and SCNT give each topic a place in the logistic stick order and a row of the
//! activations' regression on the metadata; a retired topic kept in their chains would
//! still take a stick, a loading and the Chib estimator's work. So their edited fits run
//! on the live topics alone and the stored model stays compact: every check, estimator
//! and resume of the family holds unchanged on it. [`Slotted`] serves such a model in
//! the child's slots: compact topic i is child topic `slots.live()[i]`, and a retired
//! slot reads as empty everywhere a topic id shows (rows of zeros in the topic table,
//! 0 in every proportion and interval, no row in the correlations, not among the
//! effects, stable across chains as every chain leaves it empty). Its bytes are the
//! inner model's, which keeps the slots: the family's decoder wraps it again.
//!
//! Every [`TopicModel`] method is forwarded here, spread where it names topics: a new
//! method of the trait must be added too, or an edited model answers with its default.

use super::effects::{EffectQuery, Effects, Interval};
use super::heldout::{DocScorer, EstimatorSettings};
use super::slots::Slots;
use super::stability::TopicStability;
use super::{
    DocPrediction, DocumentProportions, FitError, ModelError, ParamError, PredictOptions, PredictionWithIntervals, TableOptions, TopicCorrelations, TopicDraw,
    TopicInfo, TopicModel, TopicTable,
};
use crate::corpus::lexicon::EncodedDoc;
use crate::corpus::Corpus;
use ndarray::Array2;

/// `inner`, fitted on the live topics of `slots`, served in the child's ids.
pub struct Slotted<M> {
    inner: M,
    slots: Slots,
}

impl<M: TopicModel> Slotted<M> {
    /// `inner`'s topics are the live ones of `slots`, in order.
    pub fn new(inner: M, slots: Slots) -> Self {
        debug_assert_eq!(inner.num_topics(), slots.live().len(), "one compact topic per live slot");
        Slotted { inner, slots }
    }

    pub fn inner(&self) -> &M {
        &self.inner
    }

    /// Rows of `compact` (one per compact topic, `width` wide) in the child's slots,
    /// zeros in the retired ones.
    fn topic_rows(&self, compact: &[f64], width: usize) -> Vec<f64> {
        let mut out = vec![0.0; self.slots.total() * width];
        for (i, &slot) in self.slots.live().iter().enumerate() {
            out[slot * width..(slot + 1) * width].copy_from_slice(&compact[i * width..(i + 1) * width]);
        }
        out
    }

    /// Per-document rows of compact topic values (`n × K_live`) in the child's slots.
    fn document_rows(&self, compact: &[f64]) -> Vec<f64> {
        compact.chunks(self.slots.live().len().max(1)).flat_map(|row| self.slots.spread(row, 0.0)).collect()
    }

    /// A K_live × K_live matrix as K × K, zero in a retired topic's row and column.
    fn square(&self, compact: &[f64]) -> Vec<f64> {
        let (kc, k) = (self.slots.live().len(), self.slots.total());
        let mut out = vec![0.0; k * k];
        for (i, &a) in self.slots.live().iter().enumerate() {
            for (j, &b) in self.slots.live().iter().enumerate() {
                out[a * k + b] = compact[i * kc + j];
            }
        }
        out
    }

    fn table(&self, t: TopicTable) -> TopicTable {
        let (k, v) = (self.slots.total(), t.frequency.ncols());
        let rows = |a: &Array2<f64>| {
            let flat: Vec<f64> = a.iter().copied().collect();
            Array2::from_shape_vec((k, v), self.topic_rows(&flat, v)).expect("K × V")
        };
        let empty = TopicInfo { label: None, parent: None, children: vec![], proportion: 0.0 };
        let mut topics = vec![empty; k];
        for (info, &slot) in t.topics.into_iter().zip(self.slots.live()) {
            topics[slot] = info;
        }
        TopicTable { frequency: rows(&t.frequency), exclusivity: rows(&t.exclusivity), topics }
    }

    fn prediction(&self, p: DocPrediction) -> DocPrediction {
        DocPrediction { topic_proportions: self.slots.spread(&p.topic_proportions, 0.0), ..p }
    }
}

impl<M: TopicModel> TopicModel for Slotted<M> {
    fn family(&self) -> &'static str {
        self.inner.family()
    }

    fn num_topics(&self) -> usize {
        self.slots.total()
    }

    fn topic_table(&self, options: &TableOptions) -> TopicTable {
        self.table(self.inner.topic_table(options))
    }

    fn predict(&self, docs: &[EncodedDoc], options: &PredictOptions) -> Result<Vec<DocPrediction>, ModelError> {
        Ok(self.inner.predict(docs, options)?.into_iter().map(|p| self.prediction(p)).collect())
    }

    fn diagnostics(&self) -> serde_json::Value {
        let mut d = self.inner.diagnostics();
        if let Some(o) = d.as_object_mut() {
            o.insert("live_topics".into(), serde_json::json!(self.slots.live()));
        }
        d
    }

    fn encode(&self) -> Vec<u8> {
        self.inner.encode()
    }

    fn memory_bytes(&self) -> usize {
        self.inner.memory_bytes() + std::mem::size_of_val(self.slots.live())
    }

    fn heldout_scorer(&self, settings: &EstimatorSettings) -> Result<Option<Box<dyn DocScorer + '_>>, ParamError> {
        self.inner.heldout_scorer(settings)
    }

    fn feature_names(&self) -> Vec<String> {
        self.inner.feature_names()
    }

    /// The live topics' effects (a retired topic asked for by id is an error naming
    /// `topics`), each under its child id.
    fn effects(&self, query: &EffectQuery) -> Result<Option<Effects>, ModelError> {
        let topics = match &query.topics {
            None => None,
            Some(ids) => Some(
                ids.iter()
                    .map(|&t| {
                        self.slots.compact_of(t).ok_or_else(|| {
                            let why = if t < self.slots.total() { "holds no tokens (retired by an edit)" } else { "does not exist" };
                            ModelError::Invalid(format!("topics: topic {t} {why}; the model's live topics are {:?}", self.slots.live()))
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            ),
        };
        let compact = EffectQuery { topics, ..query.clone() };
        Ok(self.inner.effects(&compact)?.map(|mut e| {
            e.topics.iter_mut().for_each(|t| t.id = self.slots.live()[t.id]);
            e
        }))
    }

    fn predict_with_intervals(&self, docs: &[EncodedDoc], options: &PredictOptions, level: f64) -> Result<Option<Vec<PredictionWithIntervals>>, ModelError> {
        let none = Interval { mean: 0.0, lower: 0.0, upper: 0.0 };
        Ok(self
            .inner
            .predict_with_intervals(docs, options, level)?
            .map(|answers| answers.into_iter().map(|(p, intervals)| (self.prediction(p), self.slots.spread(&intervals, none))).collect()))
    }

    fn topic_draw(&self, iteration: u64, sample: &[u8]) -> Result<Option<TopicDraw>, ModelError> {
        // A retired slot is empty in every chain's draw, so every draw stands for it.
        let spread = |d: TopicDraw| TopicDraw { pooled: self.slots.spread(&d.pooled, true), table: self.table(d.table) };
        Ok(self.inner.topic_draw(iteration, sample)?.map(spread))
    }

    fn correlations(&self, draws: usize, seed: u64) -> Option<TopicCorrelations> {
        let c = self.inner.correlations(draws, seed)?;
        Some(TopicCorrelations {
            num_topics: self.slots.total(),
            draws: c.draws,
            mean: self.slots.spread(&c.mean, 0.0),
            covariance: self.square(&c.covariance),
            correlation: self.square(&c.correlation),
            activation: c.activation.map(|(cov, corr)| (self.square(&cov), self.square(&corr))),
        })
    }

    fn evaluate_test_split(&self, corpus: &Corpus, seed: u64) -> Option<Result<serde_json::Value, FitError>> {
        self.inner.evaluate_test_split(corpus, seed)
    }

    /// A retired slot is the same (empty) topic in every chain.
    fn topic_stability(&self) -> Option<Vec<TopicStability>> {
        let compact = self.inner.topic_stability()?;
        let chains = compact.first()?.chains;
        let empty = TopicStability { chains, matched: chains - 1, similarity: 1.0 };
        Some(self.slots.spread(&compact, empty))
    }

    fn training_proportions(&self, corpus: &Corpus, seed: u64) -> Option<DocumentProportions> {
        let p = self.inner.training_proportions(corpus, seed)?;
        Some(DocumentProportions { rows: self.document_rows(&p.rows), documents: p.documents })
    }
}
