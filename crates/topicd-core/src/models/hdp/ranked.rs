//! The HDP topic model over the ranks of a distributed fit, giving the single-process
//! fit's bytes.
//!
//! Why it exists: a corpus whose documents' local state (N_dk, D × K) and counts do not
//! fit one machine is spread over R ranks ([`crate::ranks`]). A memoized pass visits the
//! batches in order and each visit ends in a global step over the whole batch's
//! summary, so every batch is spread over the ranks ([`super::documents`]): each rank
//! runs the local step on its share, the shares' exact topic-word counts are summed as
//! integers and their chunks' small statistics gathered in document order
//! ([`super::local::batch_local_step`]), and every rank then holds the same batch
//! summary, total, q(φ) and sticks and takes the same global step. The moves follow
//! from those: candidate pairs and the topic to delete are chosen from the total, a
//! delete proposal's local step is spread like the current state's, and a merge or
//! reordering rewrites each rank's own N_dk rows. Rank 0 decides when to stop and
//! checkpoint (the others follow, [`crate::models::passes::Passes::agree`]); a
//! checkpoint is the single-process one (N_dk gathered in document order), so a fit
//! checkpointed over R ranks resumes over R' ranks or in one process.
//!
//! What each rank holds: its documents' counts and N_dk (1/R of the document side), and
//! the shared side whole: every batch's summary, the total, q(φ)'s expectations and the
//! sticks. Rank 0 also reads the corpus, keeps the test split and scores it.

use super::documents::{BatchPlan, HdpDocuments};
use super::fit::{finish, prepare, Prepared};
use super::memo::{initial_counts, Memo};
use super::passes::HdpPasses;
use super::summary::Summary;
use super::{HdpModel, HdpParams};
use crate::corpus::{Corpus, DocTermMatrix};
use crate::models::completion::CompletionDoc;
use crate::models::design::DesignSpec;
use crate::models::{passes, Checkpointing, FitContext, FitError, ParamError, ALWAYS_READY};
use crate::ranks::Ranks;

/// Fit HDP over `ranks`: rank 0 holds the corpus (`Some`) and sends every rank its
/// share of each batch; then the passes of [`super::fit_hdp`] spread over the ranks.
/// Rank 0 returns the model `fit_hdp` makes (byte for byte but the passes' wall-clock
/// seconds, which are rank 0's), the others `None`; every rank gets rank 0's error.
///
/// Checkpoints: rank 0's `ctx` says how often and takes them; rank 0's `resume_from` is
/// sent to every rank. The other ranks' `ctx` should report nothing.
pub fn fit_hdp_ranked(corpus: Option<Corpus>, p: &HdpParams, seed: u64, ctx: &FitContext, ranks: &dyn Ranks) -> Result<Option<HdpModel>, FitError> {
    let mut settings = vec![ctx.checkpoint.every.is_some() as u8];
    ranks.broadcast(0, &mut settings);
    let mut resume = ctx.checkpoint.resume_from.map(<[u8]>::to_vec).unwrap_or_default();
    ranks.broadcast(0, &mut resume);
    let Shard { own, plan, init, root } = scatter(corpus, p, seed, ranks)?;
    let docs = HdpDocuments::share(&own, &plan, ranks.rank(), ranks.size());
    let mut fit = HdpPasses::over(Memo::over(docs, init, p, ranks), seed);
    let (no_save, no_resume) = (|_: u64, _: Vec<u8>| {}, |_: crate::models::chain::Resume| {});
    let resume_from = (!resume.is_empty()).then_some(resume.as_slice());
    let checkpoint = if ranks.is_root() {
        Checkpointing { resume_from, ..ctx.checkpoint }
    } else {
        let every = (settings[0] == 1).then_some(std::time::Duration::ZERO);
        Checkpointing { every, save: &no_save, resume_from, resumed: &no_resume, ready: ALWAYS_READY }
    };
    passes::run(&mut fit, seed, &FitContext { checkpoint, ..*ctx })?;
    let model = HdpModel::from_fit(fit.outcome(), p.clone(), plan.num_terms, plan.num_tokens);
    let wants_dirichlets = ranks.is_root() && root.as_ref().is_some_and(|r| r.design.is_some());
    let mut flag = vec![wants_dirichlets as u8];
    ranks.broadcast(0, &mut flag);
    // With covariates, every rank infers its own documents' q(π_d) under the final
    // globals and rank 0 puts the rows back in document order.
    let rows = (flag[0] == 1).then(|| gather_dirichlets(&model, &own, &plan, ranks)).flatten();
    let Some(RootPart { design, test_documents }) = root else { return Ok(None) };
    let mut rows = rows;
    finish(model, design, |_| rows.take().unwrap_or_default(), &test_documents).map(Some)
}

/// What every rank receives: its documents, the batches' plan and the initial topics.
struct Shard {
    own: DocTermMatrix,
    plan: BatchPlan,
    init: Summary,
    root: Option<RootPart>,
}

/// What rank 0 keeps of the corpus once the shares are sent.
struct RootPart {
    design: Option<(DesignSpec, Vec<f64>)>,
    test_documents: Vec<CompletionDoc>,
}

/// Rank 0: prepare the corpus as [`super::fit_hdp`] does, send every rank the plan, the
/// initial topics and its share of each batch, and keep its own; the others: receive
/// theirs. Every rank gets rank 0's error, if any.
fn scatter(corpus: Option<Corpus>, p: &HdpParams, seed: u64, ranks: &dyn Ranks) -> Result<Shard, FitError> {
    let (rank, size) = (ranks.rank(), ranks.size());
    let prepared = corpus.as_ref().map(|corpus| -> Result<_, FitError> {
        let Prepared { training, design, test_documents } = prepare(corpus, p, seed)?;
        let (plan, _) = BatchPlan::of(&training, corpus.num_terms(), p.batches);
        let init = initial_counts(&training, corpus.num_terms(), p.topics, seed);
        Ok((training, plan, init, RootPart { design, test_documents }))
    });
    let mut verdict = match &prepared {
        Some(Err(e)) => e.to_string().into_bytes(),
        _ => Vec::new(),
    };
    ranks.broadcast(0, &mut verdict);
    if !verdict.is_empty() {
        return Err(match prepared {
            Some(Err(e)) => e,
            _ => FitError::Params(ParamError::new("ranks", format!("rank 0: {}", String::from_utf8_lossy(&verdict)))),
        });
    }
    let rows_of = |training: &DocTermMatrix, plan: &BatchPlan, q: usize| {
        DocTermMatrix::from_rows(plan.documents_of(q, size).map(|d| {
            let (terms, counts) = training.row(d);
            terms.iter().copied().zip(counts.iter().copied()).collect()
        }))
    };
    match prepared {
        Some(Ok((training, plan, init, root))) => {
            let mut shared = postcard::to_allocvec(&(&plan, &init)).expect("plain data encodes");
            ranks.broadcast(0, &mut shared);
            for q in 1..size {
                let bytes = postcard::to_allocvec(&rows_of(&training, &plan, q)).expect("plain data encodes");
                ranks.exchange(Some((q, &bytes)), None);
            }
            let own = rows_of(&training, &plan, rank);
            drop(training);
            drop(corpus);
            Ok(Shard { own, plan, init, root: Some(root) })
        }
        _ => {
            let mut shared = Vec::new();
            ranks.broadcast(0, &mut shared);
            let (plan, init): (BatchPlan, Summary) = postcard::from_bytes(&shared).expect("rank 0's plan decodes");
            let bytes = ranks.exchange(None, Some(0)).expect("rank 0 sends every rank its documents");
            let own: DocTermMatrix = postcard::from_bytes(&bytes).expect("rank 0's documents decode");
            Ok(Shard { own, plan, init, root: None })
        }
    }
}

/// Every rank's documents' q(π_d) under `model` ([`HdpModel::document_dirichlets`]),
/// on rank 0 in document order (batch after batch, each batch's shares in rank order).
fn gather_dirichlets(model: &HdpModel, own: &DocTermMatrix, plan: &BatchPlan, ranks: &dyn Ranks) -> Option<Vec<f32>> {
    let k = model.num_topics.max(1);
    let mine: Vec<u8> = model.document_dirichlets(own).iter().flat_map(|x| x.to_le_bytes()).collect();
    let parts = ranks.gather_to_root(&mine)?;
    let parts: Vec<Vec<f32>> = parts.iter().map(|b| b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().expect("four bytes"))).collect()).collect();
    let mut at = vec![0usize; parts.len()];
    let mut rows = Vec::with_capacity(plan.num_docs() * k);
    for b in 0..plan.num_batches() {
        for (q, part) in parts.iter().enumerate() {
            let n = plan.share_of(b, q, parts.len()).len() * k;
            rows.extend_from_slice(&part[at[q]..at[q] + n]);
            at[q] += n;
        }
    }
    Some(rows)
}
