//! LDA, the baseline every paper compares with: collapsed Gibbs with a sparse sampler.
//!
//! - [`params`]: job parameters and defaults;
//! - [`tokens`]: document-major tokens with a word-major index;
//! - [`sampler`]: the sparse exact Gibbs sweep (document bucket + alias smoothing bucket);
//! - [`loglik`]: the collapsed log joint;
//! - [`foldin`]: topic proportions of new documents;
//! - [`heldout`]: held-out log-likelihood of new documents (Chib-style estimator).
//!
//! The fitted [`LdaModel`] stores posterior means over kept sweeps: word rates φ,
//! training documents' proportions θ and topic shares.

pub mod dense_kernel;
pub mod foldin;
pub mod heldout;
pub mod loglik;
pub mod params;
pub mod sampler;
pub mod tokens;

use crate::corpus::lexicon::EncodedDoc;
use crate::corpus::{Corpus, CorpusStats};
use crate::models::{
    DocPrediction, FitContext, FitError, ModelError, ModelFamily, ParamError, PredictOptions, Progress, TableOptions, TopicInfo, TopicModel,
    TopicTable,
};
use ndarray::Array2;
pub use params::LdaParams;
use sampler::GibbsState;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokens::Tokens;

/// Format version of [`LdaModel`]'s encoding.
const ENCODING_VERSION: u32 = 2;

/// The `"lda"` model family.
pub struct LdaFamily;

impl ModelFamily for LdaFamily {
    fn name(&self) -> &'static str {
        "lda"
    }

    fn check_params(&self, params: &serde_json::Value, _corpus: &CorpusStats) -> Result<(), ParamError> {
        LdaParams::from_json(params).map(|_| ())
    }

    fn fit(&self, corpus: &Corpus, params: &serde_json::Value, seed: u64, ctx: &FitContext) -> Result<Box<dyn TopicModel>, FitError> {
        let p = LdaParams::from_json(params)?;
        Ok(Box::new(fit_lda(corpus, &p, seed, ctx)?))
    }

    fn decode(&self, bytes: &[u8]) -> Result<Box<dyn TopicModel>, ModelError> {
        Ok(Box::new(LdaModel::decode(bytes)?))
    }
}

/// A fitted LDA model: posterior means over the kept sweeps.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LdaModel {
    pub version: u32,
    pub params: LdaParams,
    pub num_terms: usize,
    /// φ, topic-major (`K × V`).
    pub word_rates: Vec<f64>,
    /// θ of the training documents (`D × K`).
    pub document_proportions: Vec<f64>,
    /// Share of tokens per topic.
    pub topic_shares: Vec<f64>,
    pub kept_sweeps: usize,
    pub tokens: u64,
    pub final_loglik_per_token: f64,
    /// Mean over sweeps of the non-zero topics per token's document (the sampler's cost).
    pub mean_doc_topics: f64,
}

/// A thinned posterior sample: the topic-word counts, word-major and sparse.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TopicWordSample {
    pub num_topics: u32,
    /// `word_ptr[w]..word_ptr[w + 1]` indexes `topics`/`counts` for word w.
    pub word_ptr: Vec<u32>,
    pub topics: Vec<u16>,
    pub counts: Vec<u32>,
}

impl TopicWordSample {
    fn from_state(state: &GibbsState) -> Self {
        let k = state.num_topics;
        let mut word_ptr = vec![0u32];
        let (mut topics, mut counts) = (Vec::new(), Vec::new());
        for row in state.n_kw.chunks(k) {
            for (t, &n) in row.iter().enumerate().filter(|(_, &n)| n > 0) {
                topics.push(t as u16);
                counts.push(n);
            }
            word_ptr.push(topics.len() as u32);
        }
        TopicWordSample { num_topics: k as u32, word_ptr, topics, counts }
    }
}

/// Running sums of φ, θ and topic shares over the kept sweeps.
struct PosteriorSums {
    /// Word-major `V × K`.
    phi: Vec<f64>,
    /// `D × K`.
    theta: Vec<f64>,
    shares: Vec<f64>,
    kept: usize,
}

impl PosteriorSums {
    fn new(num_terms: usize, num_docs: usize, k: usize) -> Self {
        PosteriorSums { phi: vec![0.0; num_terms * k], theta: vec![0.0; num_docs * k], shares: vec![0.0; k], kept: 0 }
    }

    fn add(&mut self, state: &GibbsState, tokens: &Tokens) {
        self.kept += 1;
        state.add_word_rates(&mut self.phi);
        state.add_document_proportions(tokens, &mut self.theta);
        let n = tokens.num_tokens().max(1) as f64;
        for (s, &c) in self.shares.iter_mut().zip(&state.n_k) {
            *s += c as f64 / n;
        }
    }
}

/// Run the sampler and accumulate posterior means.
pub fn fit_lda(corpus: &Corpus, p: &LdaParams, seed: u64, ctx: &FitContext) -> Result<LdaModel, FitError> {
    let v = corpus.num_terms();
    let k = p.topics;
    let mut tokens = Tokens::from_counts(&corpus.counts, v);
    tokens.set_blocks(p.sync_tokens);
    let mut snapshot = sampler::Snapshot::new(v, k, !sampler::uses_dense_kernel(k));
    let n = tokens.num_tokens().max(1) as f64;
    let mut state = GibbsState::init(&tokens, k, p.alpha, p.beta, seed);
    let mut sums = PosteriorSums::new(v, tokens.num_docs(), k);
    // Sweep 1 and the last sweep always compute the log-likelihood.
    let mut last_ll = f64::NAN;
    let mut doc_topics_sum = 0.0;
    for it in 1..=p.iterations {
        if ctx.cancel.is_cancelled() {
            return Err(FitError::Cancelled);
        }
        let stats = state.sweep(&tokens, &mut snapshot, seed, it as u64);
        doc_topics_sum += stats.mean_doc_topics();
        let ll = (it % p.loglik_every == 0 || it == p.iterations || it == 1).then(|| state.log_joint(&tokens) / n);
        if let Some(x) = ll {
            if !x.is_finite() {
                return Err(FitError::Numerical(format!("log-likelihood is {x} at sweep {it}")));
            }
            last_ll = x;
        }
        if p.is_kept(it) {
            sums.add(&state, &tokens);
            let sample = TopicWordSample::from_state(&state);
            (ctx.sample)(it as u64, postcard::to_allocvec(&sample).expect("plain data encodes"));
        }
        let mut diagnostics = serde_json::Map::new();
        diagnostics.insert("mean_doc_topics".into(), json!(stats.mean_doc_topics()));
        diagnostics.insert("smoothing_draws".into(), json!(stats.smoothing_draws));
        diagnostics.insert("kept_sweeps".into(), json!(sums.kept));
        (ctx.progress)(Progress { iteration: it as u64, total: p.iterations as u64, loglik_per_token: ll, diagnostics });
    }
    if sums.kept == 0 {
        // No sweep fell on the thinning grid: use the final state.
        sums.add(&state, &tokens);
    }
    let PosteriorSums { phi: phi_sum, theta: theta_sum, shares: share_sum, kept } = sums;
    let scale = 1.0 / kept as f64;
    // Transpose φ to topic-major for the summaries.
    let mut word_rates = vec![0.0; k * v];
    for w in 0..v {
        for t in 0..k {
            word_rates[t * v + w] = phi_sum[w * k + t] * scale;
        }
    }
    Ok(LdaModel {
        version: ENCODING_VERSION,
        params: p.clone(),
        num_terms: v,
        word_rates,
        document_proportions: theta_sum.into_iter().map(|x| x * scale).collect(),
        topic_shares: share_sum.into_iter().map(|x| x * scale).collect(),
        kept_sweeps: kept,
        tokens: tokens.num_tokens() as u64,
        final_loglik_per_token: last_ll,
        mean_doc_topics: doc_topics_sum / p.iterations as f64,
    })
}

impl LdaModel {
    pub fn decode(bytes: &[u8]) -> Result<Self, ModelError> {
        let m: LdaModel = postcard::from_bytes(bytes).map_err(|e| ModelError::Decode(e.to_string()))?;
        if m.version != ENCODING_VERSION {
            return Err(ModelError::Decode(format!("LDA encoding version {} is not {ENCODING_VERSION}", m.version)));
        }
        Ok(m)
    }

    /// P(topic | word) = φ_kw p_k / Σ_j φ_jw p_j with p the topic shares (paper 003, eq. 1).
    fn topic_given_word(&self, phi: &Array2<f64>) -> Array2<f64> {
        let mut out = phi.clone();
        for (t, mut row) in out.rows_mut().into_iter().enumerate() {
            row *= self.topic_shares[t];
        }
        for mut col in out.columns_mut() {
            let s = col.sum();
            if s > 0.0 {
                col /= s;
            }
        }
        out
    }
}

impl TopicModel for LdaModel {
    fn family(&self) -> &'static str {
        "lda"
    }

    fn num_topics(&self) -> usize {
        self.params.topics
    }

    fn topic_table(&self, _options: &TableOptions) -> TopicTable {
        let k = self.params.topics;
        let phi = Array2::from_shape_vec((k, self.num_terms), self.word_rates.clone()).expect("shape stored with the model");
        let exclusivity = self.topic_given_word(&phi);
        let topics = self
            .topic_shares
            .iter()
            .map(|&s| TopicInfo { label: None, parent: None, children: vec![], proportion: s })
            .collect();
        TopicTable { frequency: phi, exclusivity, topics }
    }

    fn predict(&self, docs: &[EncodedDoc], options: &PredictOptions) -> Result<Vec<DocPrediction>, ModelError> {
        let thetas = foldin::fold_in(docs, &self.word_rates, self.params.topics, self.params.alpha, options.iterations, options.burn_in, options.seed);
        Ok(thetas.into_iter().map(|t| DocPrediction { topic_proportions: t, labels: vec![], predicted_labels: vec![] }).collect())
    }

    fn diagnostics(&self) -> serde_json::Value {
        json!({
            "tokens": self.tokens,
            "kept_sweeps": self.kept_sweeps,
            "final_loglik_per_token": self.final_loglik_per_token,
            "mean_doc_topics": self.mean_doc_topics,
            "alpha": self.params.alpha,
            "beta": self.params.beta,
        })
    }

    fn encode(&self) -> Vec<u8> {
        postcard::to_allocvec(self).expect("plain data encodes")
    }
}
