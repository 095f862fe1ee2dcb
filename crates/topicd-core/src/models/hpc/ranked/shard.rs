//! What each rank of an HPC fit holds: its documents, its words, and its part of the
//! chain's state; how rank 0 hands them out and gathers them back.
//!
//! Why it exists: the sampler's two blocks factor by word and by document, so rank q
//! owns a contiguous run of documents ([`Layout::docs`], equal counts) and a contiguous
//! run of words ([`Layout::words`], cut so each rank's words hold about 1/R of the
//! tokens). Its [`RankData`] is two [`HpcData`] values the sampler reads unchanged: the
//! documents' side (their words, active labels and lengths; no word rows) and the
//! words' side (their document rows, with every document's active labels, which the rate
//! block reads beside the gathered θ; no document rows). Rank 0 shapes the corpus, sends
//! every rank its data and its [`StatePiece`] of a fresh or restored chain, and gathers
//! the pieces back into the single-process checkpoint format.

use super::super::chain::{trace_of, EndedChain, EstimandSums};
use super::super::data::{HpcData, Rows};
use super::super::sampler::{initial_affinities, initial_eta, initial_exposure, initial_rates, initial_root_prior, HpcState, RateHessian, ScanStats};
use crate::models::convergence::KeptTrace;
use crate::ranks::{bytes_to_f64s, f64s_to_bytes, Ranks};
use serde::{Deserialize, Serialize};
use std::ops::Range;

/// Which documents and words each rank owns: rank q has documents
/// `doc_bounds[q]..doc_bounds[q + 1]` and words `word_bounds[q]..word_bounds[q + 1]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Layout {
    pub doc_bounds: Vec<usize>,
    pub word_bounds: Vec<usize>,
}

impl Layout {
    /// Documents in equal runs (ξ, a row of K per document, is most of their side);
    /// words in runs of about equal cost: a word's tokens plus its nodes (its rate block
    /// costs by its documents, its untouched nodes' updates by the tree).
    pub fn of(data: &HpcData, ranks: usize) -> Self {
        let d = data.num_docs();
        let doc_bounds = (0..=ranks).map(|q| q * d / ranks).collect();
        // A word costs by its documents and by its nodes (the untouched nodes' updates).
        let n = data.num_nodes() as f64;
        let tokens: Vec<f64> = (0..data.num_terms()).map(|f| n + data.word_docs.row(f).iter().map(|&(_, c)| c).sum::<f64>()).collect();
        let total: f64 = tokens.iter().sum();
        let mut word_bounds = vec![0];
        let (mut running, mut f) = (0.0, 0);
        for q in 1..ranks {
            let target = total * q as f64 / ranks as f64;
            while f < tokens.len() && running + tokens[f] / 2.0 < target {
                running += tokens[f];
                f += 1;
            }
            word_bounds.push(f);
        }
        word_bounds.push(tokens.len());
        Layout { doc_bounds, word_bounds }
    }

    pub fn docs(&self, rank: usize) -> Range<usize> {
        self.doc_bounds[rank]..self.doc_bounds[rank + 1]
    }

    pub fn words(&self, rank: usize) -> Range<usize> {
        self.word_bounds[rank]..self.word_bounds[rank + 1]
    }

    pub fn num_docs(&self) -> usize {
        *self.doc_bounds.last().expect("bounds")
    }

    pub fn num_words(&self) -> usize {
        *self.word_bounds.last().expect("bounds")
    }
}

/// One rank's data (see the module's documentation).
pub struct RankData {
    pub layout: Layout,
    pub rank: usize,
    /// This rank's documents: `doc_words`, `active` and `lengths` of its rows; the
    /// corpus' token count and Σ log w! (the whole corpus'); no word rows.
    pub docs: HpcData,
    /// This rank's words: their `word_docs` rows (corpus document indices) and every
    /// document's `active` labels; no document rows.
    pub words: HpcData,
}

impl RankData {
    pub fn first_doc(&self) -> usize {
        self.layout.doc_bounds[self.rank]
    }

    pub fn first_word(&self) -> usize {
        self.layout.word_bounds[self.rank]
    }
}

/// No rows.
fn no_rows<T>() -> Rows<T> {
    Rows { ptr: vec![0], values: Vec::new() }
}

/// `data`'s documents `docs` and words `words`, the words' side without its `active`
/// rows (every rank receives those once, [`scatter_data`]).
fn parts_of(data: &HpcData, docs: Range<usize>, words: Range<usize>) -> (HpcData, HpcData) {
    let tree = || HpcData {
        parent: data.parent.clone(),
        children: data.children.clone(),
        parent_nodes: data.parent_nodes.clone(),
        supervision: data.supervision,
        active: no_rows(),
        lengths: Vec::new(),
        doc_words: no_rows(),
        word_docs: no_rows(),
        num_tokens: data.num_tokens,
        log_count_factorials: data.log_count_factorials,
        seed_counts: Vec::new(),
    };
    let doc_side =
        HpcData { active: data.active.slice(docs.clone()), lengths: data.lengths[docs.clone()].to_vec(), doc_words: data.doc_words.slice(docs), ..tree() };
    let seed_counts = data.seed_counts.get(words.clone()).map(<[_]>::to_vec).unwrap_or_default();
    let word_side = HpcData { word_docs: data.word_docs.slice(words), seed_counts, ..tree() };
    (doc_side, word_side)
}

/// Rank 0 (`Some(data)`): cut `data` over the ranks and send each its part; every
/// rank returns its own.
pub fn scatter_data(data: Option<&HpcData>, ranks: &dyn Ranks) -> RankData {
    let (rank, size) = (ranks.rank(), ranks.size());
    let mut shared = data.map(|data| postcard::to_allocvec(&(Layout::of(data, size), &data.active)).expect("plain data encodes")).unwrap_or_default();
    ranks.broadcast(0, &mut shared);
    let (layout, active): (Layout, Rows<u32>) = postcard::from_bytes(&shared).expect("rank 0's layout decodes");
    drop(shared);
    let (docs, mut words) = match data {
        Some(data) => {
            for q in 1..size {
                let bytes = postcard::to_allocvec(&parts_of(data, layout.docs(q), layout.words(q))).expect("plain data encodes");
                ranks.exchange(Some((q, &bytes)), None);
            }
            parts_of(data, layout.docs(0), layout.words(0))
        }
        None => {
            let bytes = ranks.exchange(None, Some(0)).expect("rank 0 sends every rank its data");
            postcard::from_bytes(&bytes).expect("rank 0's data decodes")
        }
    };
    words.active = active;
    RankData { layout, rank, docs, words }
}

/// The chain's state every rank holds whole: the hyperparameters, the counts so far,
/// the last log-likelihood, the trace, the kept count and the topic shares' sums.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Common {
    pub psi: f64,
    pub gamma2: f64,
    pub eta: Vec<f64>,
    pub lambda2: f64,
    pub nu: f64,
    pub sigma2: f64,
    pub totals: ScanStats,
    pub last: (f64, f64),
    pub trace: KeptTrace,
    pub kept: usize,
    pub shares: Vec<f64>,
}

impl Common {
    /// `state`'s hyperparameters with the rest of the common part.
    pub fn of(state: &HpcState, totals: ScanStats, last: (f64, f64), trace: KeptTrace, kept: usize, shares: Vec<f64>) -> Self {
        Common {
            psi: state.psi,
            gamma2: state.gamma2,
            eta: state.eta.clone(),
            lambda2: state.lambda2,
            nu: state.nu,
            sigma2: state.sigma2,
            totals,
            last,
            trace,
            kept,
            shares,
        }
    }
}

/// One rank's part of the chain's state: its words' μ and τ² rows (word-major, every
/// node) and cached Hessians, its documents' ξ rows and cached Hessians (column-major),
/// and its words' rows of the estimand sums (frequency, exclusivity, exclusivity against
/// all, μ) once a scan has been kept. Empty Hessians: a fresh chain (the caches start
/// empty and scan 1 refits every mode).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StatePiece {
    pub mu: Vec<f64>,
    pub tau2: Vec<f64>,
    pub xi: Vec<f64>,
    pub rate_hessians: Vec<RateHessian>,
    pub affinity_hessians: Vec<Vec<f64>>,
    pub sums: Option<[Vec<f64>; 4]>,
}

/// A restored chain's state as rank 0 holds it before cutting it: the state, the cached
/// Hessians, the sums (`None` before a kept scan) and the rest.
pub struct WholeState<'a> {
    pub state: &'a HpcState,
    pub hessians: (&'a [RateHessian], Vec<&'a [f64]>),
    pub sums: Option<&'a EstimandSums>,
    pub common: Common,
}

/// Rank q's piece of `whole` under `layout` (`n` nodes, `k` topics).
fn piece_of(whole: &WholeState, layout: &Layout, q: usize, n: usize, k: usize) -> StatePiece {
    let (docs, words) = (layout.docs(q), layout.words(q));
    let rows = |x: &[f64], r: &Range<usize>, width: usize| x[r.start * width..r.end * width].to_vec();
    StatePiece {
        mu: rows(&whole.state.mu, &words, n),
        tau2: rows(&whole.state.tau2, &words, n),
        xi: rows(&whole.state.xi, &docs, k),
        rate_hessians: whole.hessians.0[words.clone()].to_vec(),
        affinity_hessians: whole.hessians.1[docs.clone()].iter().map(|h| h.to_vec()).collect(),
        sums: whole.sums.map(|s| [rows(&s.frequency, &words, k), rows(&s.exclusivity, &words, k), rows(&s.exclusivity_all, &words, k), rows(&s.mu, &words, n)]),
    }
}

/// Rank 0 (`Some(whole)`): send every rank its piece of the state; every rank returns
/// its own piece and the common part. The big arrays go in chunks of
/// [`CHUNK_VALUES`], so a rank holds its piece and one chunk, not the piece twice.
pub fn scatter_state(whole: Option<WholeState>, layout: &Layout, n: usize, k: usize, ranks: &dyn Ranks) -> (StatePiece, Common) {
    let mut common = whole.as_ref().map(|w| postcard::to_allocvec(&w.common).expect("plain data encodes")).unwrap_or_default();
    ranks.broadcast(0, &mut common);
    let common: Common = postcard::from_bytes(&common).expect("rank 0's state decodes");
    let piece = match whole {
        Some(whole) => {
            for q in 1..ranks.size() {
                send_piece(ranks, q, piece_of(&whole, layout, q, n, k));
            }
            piece_of(&whole, layout, 0, n, k)
        }
        None => receive_piece(ranks),
    };
    (piece, common)
}

/// Values a chunk of a piece's arrays holds (64 MB).
pub const CHUNK_VALUES: usize = 1 << 23;

fn send_piece(ranks: &dyn Ranks, q: usize, piece: StatePiece) {
    let StatePiece { mu, tau2, xi, rate_hessians, affinity_hessians, sums } = piece;
    let small = postcard::to_allocvec(&(rate_hessians, affinity_hessians, sums.is_some())).expect("plain data encodes");
    ranks.exchange(Some((q, &small)), None);
    for values in [mu, tau2, xi].iter().chain(sums.iter().flatten()) {
        ranks.exchange(Some((q, &(values.len() as u64).to_le_bytes())), None);
        for chunk in values.chunks(CHUNK_VALUES) {
            ranks.exchange(Some((q, &f64s_to_bytes(chunk))), None);
        }
    }
}

fn receive_piece(ranks: &dyn Ranks) -> StatePiece {
    let receive = || ranks.exchange(None, Some(0)).expect("rank 0 sends every rank its state");
    let (rate_hessians, affinity_hessians, has_sums): (Vec<RateHessian>, Vec<Vec<f64>>, bool) =
        postcard::from_bytes(&receive()).expect("rank 0's state decodes");
    let values = || {
        let len = u64::from_le_bytes(receive().try_into().expect("a length")) as usize;
        let mut out = Vec::with_capacity(len);
        while out.len() < len {
            out.extend(bytes_to_f64s(&receive()));
        }
        out
    };
    let (mu, tau2, xi) = (values(), values(), values());
    let sums = has_sums.then(|| [values(), values(), values(), values()]);
    StatePiece { mu, tau2, xi, rate_hessians, affinity_hessians, sums }
}

/// Every rank's piece of HPC's starting point ([`HpcState::initial`]), each computed
/// where it is held: the exposure passed from rank to rank in document order, the rank's
/// words' log rates, every word's root rate gathered for (ψ, γ²), η from every
/// document's active labels (which every rank holds), the rank's documents' affinities.
pub fn fresh_state(part: &RankData, seed: u64, ranks: &dyn Ranks) -> (StatePiece, Common) {
    let (n, k) = (part.docs.num_nodes(), part.docs.num_topics());
    let start = f64s_to_bytes(&vec![0.0; n]);
    let exposure = bytes_to_f64s(&ranks.fold_bytes_in_rank_order(start, &mut |running| f64s_to_bytes(&initial_exposure(bytes_to_f64s(&running), &part.docs))));
    let mu = initial_rates(&part.words, &exposure, seed, part.first_word());
    let root: Vec<f64> = ranks.all_gather(&f64s_to_bytes(&mu.chunks(n).map(|row| row[0]).collect::<Vec<_>>())).iter().flat_map(|b| bytes_to_f64s(b)).collect();
    let (psi, gamma2) = initial_root_prior(&root);
    let eta = initial_eta(&part.words.active, k, part.docs.supervision);
    let xi = initial_affinities(&part.docs, &eta);
    let tau2 = HpcState::initial_tau2(part.words.num_terms(), n);
    let state = HpcState { mu: Vec::new(), tau2: Vec::new(), xi: Vec::new(), psi, gamma2, eta, lambda2: 1.0, nu: 5.0, sigma2: 0.5 };
    let common = Common::of(&state, Default::default(), (f64::NAN, f64::NAN), trace_of(&part.docs), 0, vec![0.0; k]);
    (StatePiece { mu, tau2, xi, ..Default::default() }, common)
}

/// Every rank's `piece`, on rank 0, in rank order (which is word and document order).
pub fn gather_pieces(piece: &StatePiece, ranks: &dyn Ranks) -> Option<Vec<StatePiece>> {
    let parts = ranks.gather_to_root(&postcard::to_allocvec(piece).expect("plain data encodes"))?;
    Some(parts.iter().map(|bytes| postcard::from_bytes(bytes).expect("a rank's state decodes")).collect())
}

/// The ranks' pieces put together in rank order: the whole state's rows (sums only if
/// every piece has them).
pub fn whole_of(pieces: Vec<StatePiece>) -> StatePiece {
    let mut whole = StatePiece { sums: pieces.iter().all(|p| p.sums.is_some()).then(Default::default), ..Default::default() };
    for piece in pieces {
        whole.mu.extend(piece.mu);
        whole.tau2.extend(piece.tau2);
        whole.xi.extend(piece.xi);
        whole.rate_hessians.extend(piece.rate_hessians);
        whole.affinity_hessians.extend(piece.affinity_hessians);
        if let (Some(all), Some(rows)) = (&mut whole.sums, piece.sums) {
            all.iter_mut().zip(rows).for_each(|(all, rows)| all.extend(rows));
        }
    }
    whole
}

/// The estimand sums of a whole state's rows, with the shares and the kept count.
pub fn sums_of(rows: Option<[Vec<f64>; 4]>, common: &Common) -> EstimandSums {
    let [frequency, exclusivity, exclusivity_all, mu] = rows.unwrap_or_default();
    EstimandSums { frequency, exclusivity, exclusivity_all, mu, shares: common.shares.clone(), kept: common.kept }
}

/// Rank 0's model parts from every rank's sums rows and the common part.
pub fn ended_from(pieces: Vec<StatePiece>, common: Common, factor_nonzeros: usize) -> EndedChain {
    let sums = sums_of(whole_of(pieces).sums, &common);
    let hyper = HpcState {
        mu: Vec::new(),
        tau2: Vec::new(),
        xi: Vec::new(),
        psi: common.psi,
        gamma2: common.gamma2,
        eta: common.eta,
        lambda2: common.lambda2,
        nu: common.nu,
        sigma2: common.sigma2,
    };
    EndedChain { hyper, sums, totals: common.totals, last: common.last, trace: common.trace, theta_draws: Vec::new(), factor_nonzeros }
}
