//! Fitting DCNT or SCNT: the held-out split, the scan loop, progress, thinned samples
//! and posterior means.
//!
//! Why it exists: it turns a [`Corpus`] into a [`DcntModel`]. The sampler knows
//! nothing of corpora, splits or progress; this module does, and nothing else.
//!
//! Split: documents tagged `split = "test"` are held out; without tags, each document
//! is held out with probability `test_fraction` by its own stream `(seed, Split, 0, d)`.
//! Metadata: φ_d is the corpus' feature row, or the constant 1 (F = 1) without features.
//!
//! Progress per scan: `loglik_per_token` = [log p(w | z) (Ω collapsed) + log p(z | v)]
//! / N on scans 1, every `loglik_every`-th and the last; diagnostics `active_topics`
//! (topics holding more than 1 % of the tokens now), `mh_acceptance` (share of
//! accepted v entries this scan), `swap_acceptance` (share of accepted
//! within-document topic swaps this scan), `lambda_v`, `lambda_a`, `kept_scans`.

use super::heldout::ChibSettings;
use super::model::{DcntModel, Loadings, ENCODING_VERSION};
use super::params::DcntParams;
use super::sampler::{DcntState, Documents, SYNC_TOKENS};
use super::scoring::DcntChib;
use super::stick::stick_weights;
use crate::corpus::Corpus;
use crate::models::heldout::score_corpus_documents;
use crate::models::splits;
use crate::models::{FitContext, FitError, Progress};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Share of tokens above which a topic counts as active.
pub const ACTIVE_SHARE: f64 = 0.01;

/// Corpus indices of the training and held-out documents.
/// (The service's one split rule, [`crate::models::splits`].)
pub fn split_documents(corpus: &Corpus, test_fraction: f64, seed: u64) -> (Vec<usize>, Vec<usize>) {
    let held_out = splits::test_mask(corpus, test_fraction, seed);
    (0..corpus.num_documents()).partition(|&d| !held_out[d])
}

/// φ of every corpus document (D × F) and the feature names; F = 1 with φ_d = 1 when
/// the corpus has no features.
pub fn corpus_features(corpus: &Corpus) -> (Vec<String>, usize, Vec<f64>) {
    match &corpus.features {
        Some(fm) if !fm.names.is_empty() => (fm.names.clone(), fm.names.len(), fm.values.clone()),
        _ => (Vec::new(), 1, vec![1.0; corpus.num_documents()]),
    }
}

/// A thinned posterior sample: topic-word counts (word-major, sparse, like LDA's) and
/// the loadings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DcntSample {
    pub num_topics: u32,
    /// `word_ptr[w]..word_ptr[w + 1]` indexes `topics`/`counts` for word w.
    pub word_ptr: Vec<u32>,
    pub topics: Vec<u16>,
    pub counts: Vec<u32>,
    pub a: Vec<f64>,
    pub eta: Vec<f64>,
    pub lambda_v: f64,
}

impl DcntSample {
    fn from_state(state: &DcntState) -> Self {
        let k = state.num_topics;
        let mut word_ptr = vec![0u32];
        let (mut topics, mut counts) = (Vec::new(), Vec::new());
        for row in state.word_topic.chunks(k) {
            for (t, &n) in row.iter().enumerate().filter(|(_, &n)| n > 0) {
                topics.push(t as u16);
                counts.push(n);
            }
            word_ptr.push(topics.len() as u32);
        }
        let g = &state.globals;
        DcntSample { num_topics: k as u32, word_ptr, topics, counts, a: g.a.clone(), eta: g.eta.clone(), lambda_v: g.lambda_v }
    }
}

/// Running sums over kept scans.
struct PosteriorSums {
    omega: Vec<f64>,
    shares: Vec<f64>,
    proportions: Vec<f64>,
    a: Vec<f64>,
    eta: Vec<f64>,
    lambda_v: f64,
    acceptance: f64,
    kept: usize,
}

impl PosteriorSums {
    fn new(k: usize, f: usize, v: usize, docs: usize) -> Self {
        PosteriorSums {
            omega: vec![0.0; k * v],
            shares: vec![0.0; k],
            proportions: vec![0.0; docs * k],
            a: vec![0.0; k * k],
            eta: vec![0.0; f * k],
            lambda_v: 0.0,
            acceptance: 0.0,
            kept: 0,
        }
    }

    fn add(&mut self, state: &DcntState, docs: &Documents, acceptance: f64) {
        let k = state.num_topics;
        self.kept += 1;
        for (s, x) in self.omega.iter_mut().zip(state.topic_word(docs.num_terms)) {
            *s += x;
        }
        let n = docs.num_tokens().max(1) as f64;
        for (s, &c) in self.shares.iter_mut().zip(&state.topic_totals) {
            *s += c as f64 / n;
        }
        for d in 0..docs.num_docs() {
            for (s, p) in self.proportions[d * k..(d + 1) * k].iter_mut().zip(stick_weights(&state.v[d * k..(d + 1) * k])) {
                *s += p;
            }
        }
        let g = &state.globals;
        self.a.iter_mut().zip(&g.a).for_each(|(s, x)| *s += x);
        self.eta.iter_mut().zip(&g.eta).for_each(|(s, x)| *s += x);
        self.lambda_v += g.lambda_v;
        self.acceptance += acceptance;
    }
}

fn active_topics(shares: impl IntoIterator<Item = f64>) -> usize {
    shares.into_iter().filter(|&s| s > ACTIVE_SHARE).count()
}

/// Run the sampler on the training documents and accumulate posterior means.
pub fn fit_dcnt(corpus: &Corpus, p: &DcntParams, diagonal: bool, seed: u64, ctx: &FitContext) -> Result<DcntModel, FitError> {
    let k = p.topics;
    let num_terms = corpus.num_terms();
    let (train, heldout) = split_documents(corpus, p.test_fraction, seed);
    let (feature_names, f, features) = corpus_features(corpus);
    let rows = train
        .iter()
        .map(|&d| {
            let (terms, counts) = corpus.counts.row(d);
            (terms.to_vec(), counts.to_vec())
        })
        .collect();
    let train_features: Vec<f64> = train.iter().flat_map(|&d| features[d * f..(d + 1) * f].iter().copied()).collect();
    let docs = Documents::new(rows, train_features, f, num_terms);
    if docs.num_tokens() == 0 {
        return Err(FitError::Numerical("no training tokens (every document held out or empty)".into()));
    }
    let mut mean_features = vec![0.0; f];
    for d in 0..docs.num_docs() {
        mean_features.iter_mut().zip(docs.phi(d)).for_each(|(m, x)| *m += x / docs.num_docs() as f64);
    }
    let blocks = docs.blocks(SYNC_TOKENS);
    let n = docs.num_tokens() as f64;
    let mut state = DcntState::init(&docs, k, diagonal, p.priors, p.topic_swaps, seed);
    let mut sums = PosteriorSums::new(k, f, num_terms, docs.num_docs());
    let mut last = Loadings { a: state.globals.a.clone(), eta: state.globals.eta.clone(), lambda_v: state.globals.lambda_v };
    let mut last_ll = f64::NAN;
    for it in 1..=p.iterations {
        if ctx.cancel.is_cancelled() {
            return Err(FitError::Cancelled);
        }
        let stats = state.scan(&docs, &blocks, seed, it as u64);
        let g = &state.globals;
        if !(g.lambda_v.is_finite() && g.lambda_a.is_finite() && g.a.iter().all(|x| x.is_finite())) {
            return Err(FitError::Numerical(format!("non-finite global parameters at scan {it}")));
        }
        let ll = (it % p.loglik_every == 0 || it == p.iterations || it == 1).then(|| state.log_joint(&docs) / n);
        if let Some(x) = ll {
            if !x.is_finite() {
                return Err(FitError::Numerical(format!("log joint is {x} at scan {it}")));
            }
            last_ll = x;
        }
        if p.is_kept(it) {
            sums.add(&state, &docs, stats.acceptance());
            last = Loadings { a: state.globals.a.clone(), eta: state.globals.eta.clone(), lambda_v: state.globals.lambda_v };
            let sample = DcntSample::from_state(&state);
            (ctx.sample)(it as u64, postcard::to_allocvec(&sample).expect("plain data encodes"));
        }
        let mut diagnostics = serde_json::Map::new();
        diagnostics.insert("active_topics".into(), json!(active_topics(state.topic_totals.iter().map(|&c| c as f64 / n))));
        diagnostics.insert("mh_acceptance".into(), json!(stats.acceptance()));
        diagnostics.insert("swap_acceptance".into(), json!(stats.swap_acceptance()));
        diagnostics.insert("lambda_v".into(), json!(state.globals.lambda_v));
        diagnostics.insert("lambda_a".into(), json!(state.globals.lambda_a));
        diagnostics.insert("kept_scans".into(), json!(sums.kept));
        (ctx.progress)(Progress { iteration: it as u64, total: p.iterations as u64, loglik_per_token: ll, diagnostics });
    }
    if sums.kept == 0 {
        // No scan fell on the thinning grid: use the final state.
        sums.add(&state, &docs, f64::NAN);
    }
    let scale = 1.0 / sums.kept as f64;
    let topic_shares: Vec<f64> = sums.shares.iter().map(|x| x * scale).collect();
    let mut model = DcntModel {
        version: ENCODING_VERSION,
        diagonal,
        params: p.clone(),
        num_terms,
        topic_word: sums.omega.iter().map(|x| x * scale).collect(),
        active_topics: active_topics(topic_shares.iter().copied()),
        topic_shares,
        document_proportions: sums.proportions.iter().map(|x| x * scale).collect(),
        train_documents: train,
        heldout_documents: heldout,
        feature_names,
        num_features: f,
        features,
        mean_features,
        mean: Loadings { a: sums.a.iter().map(|x| x * scale).collect(), eta: sums.eta.iter().map(|x| x * scale).collect(), lambda_v: sums.lambda_v * scale },
        last,
        kept_scans: sums.kept,
        tokens: docs.num_tokens() as u64,
        final_loglik_per_token: last_ll,
        mh_acceptance: sums.acceptance * scale,
        heldout: None,
    };
    if !model.heldout_documents.is_empty() {
        let settings = ChibSettings { burn_in: p.heldout_burn_in, chain_length: p.heldout_chain_length, acceptance_samples: p.heldout_acceptance_samples };
        let scorer = DcntChib::new(&model, settings);
        let report = score_corpus_documents(&scorer, corpus, &model.heldout_documents, |d| model.document_features(d).to_vec(), seed, ctx)?;
        model.heldout = Some(report);
    }
    Ok(model)
}
