//! The assignments an edit's refit starts from, for any family whose chains sample
//! token topics: the parent's posterior drawn again, the edit done on it.
//!
//! Why it exists: a stored model keeps posterior means (φ, the training documents'
//! θ), not its last assignments, and LDA's and DCNT/SCNT's refits start the same way.
//! Each training token's topic is drawn from the parent's posterior, p(z = k | d, w) ∝
//! θ_dk φ_kw (one stream per document), then the plan
//! ([`crate::models::edits::EditPlan`]) moves tokens:
//! - kept topics keep their tokens; a merge's tokens go to its first topic;
//! - a deleted topic's tokens are drawn again from θ_dj φ_jw among the topics that are
//!   not deleted (and go where those go);
//! - a split topic's tokens are divided among its parts by a short collapsed Gibbs run
//!   restricted to them (as a split-merge proposal's restricted scan), started from
//!   the seed words' parts where the split names seeds (those tokens stay in their
//!   part) and at random elsewhere.
//!
//! The result is in the child's topic ids (retired ones hold no token); a family whose
//! chains run on the live topics alone maps them to its compact ids.

use super::edits::{EditPlan, Fate, SplitSeedTerms};
use super::start_draws::{draw, split_by_document, TokenWords};
use crate::rng::{stream, Purpose, StreamRng};
use rand::RngExt;
use rayon::prelude::*;

/// Sweeps of a split's restricted run: enough for two parts of a topic to separate by
/// their words' co-occurrence (the refit's sweeps settle them further).
pub const RESTRICTED_SWEEPS: usize = 50;

/// The parent's posterior the assignments are drawn from, in the parent's topic ids
/// (the plan's): a retired parent topic's θ column and φ row are zero.
#[derive(Clone, Copy)]
pub struct ParentPosterior<'a> {
    /// The training documents' topic proportions, D × K_parent row-major.
    pub theta: &'a [f64],
    /// The topics' word distributions, K_parent × V topic-major.
    pub phi: &'a [f64],
    /// Each parent topic's document prior α_k in a split's restricted run.
    pub split_alpha: &'a [f64],
    /// The topic-word prior β of the restricted run.
    pub beta: f64,
}

/// Marks a token whose topic is split and waits for its part.
const PENDING: u32 = u32::MAX;

/// The child's starting assignments (child topic ids) of `tokens` under `parent` edited
/// by `plan`, from streams of `seed`: document d's draws from `(seed, EditStart, 1, d)`,
/// split topic t's restricted run from `(seed, EditStart, 0, t)`. `split_words` gives
/// each split's seed words as term ids, by parent topic.
pub fn edited_assignments(plan: &EditPlan, split_words: &[SplitSeedTerms], parent: ParentPosterior<'_>, tokens: TokenWords<'_>, seed: u64) -> Vec<u32> {
    let mut z = rebuilt(plan, parent, tokens, seed);
    for (topic, words) in split_words {
        let Fate::Split { parts, .. } = &plan.fates[*topic] else { continue };
        let mut rng = stream(seed, Purpose::EditStart, 0, *topic as u64);
        divide(&mut z, tokens, *topic as u32, parts, words, (parent.split_alpha[*topic], parent.beta), &mut rng);
    }
    z
}

/// Each token's topic drawn from the parent's posterior and moved by the plan; a split
/// topic's tokens are left marked [`pending`] for [`divide`].
fn rebuilt(plan: &EditPlan, parent: ParentPosterior<'_>, tokens: TokenWords<'_>, seed: u64) -> Vec<u32> {
    let (kp, v) = (plan.parent_topics(), tokens.num_terms);
    let first_live = plan.origins.iter().position(|o| !o.is_retired()).unwrap_or(0) as u32;
    let is_deleted = |k: usize| matches!(plan.fates[k], Fate::Deleted | Fate::Retired);
    let (theta, phi) = (parent.theta, parent.phi);
    let mut z = vec![0u32; tokens.words.len()];
    let spans: Vec<(usize, &mut [u32])> = split_by_document(&mut z, tokens.doc_ptr);
    spans.into_par_iter().for_each(|(d, zs)| {
        let mut rng = stream(seed, Purpose::EditStart, 1, d as u64);
        let theta_d = &theta[d * kp..(d + 1) * kp];
        let mut weights = vec![0.0; kp];
        for (slot, &w) in zs.iter_mut().zip(&tokens.words[tokens.doc_ptr[d]..tokens.doc_ptr[d + 1]]) {
            let weight = |k: usize| theta_d[k] * phi[k * v + w as usize];
            let drawn = draw(&mut weights, weight, &mut rng);
            let topic = match plan.fates[drawn] {
                Fate::Deleted | Fate::Retired => draw(&mut weights, |k| if is_deleted(k) { 0.0 } else { weight(k) }, &mut rng),
                _ => drawn,
            };
            *slot = match (plan.destination(topic), &plan.fates[topic]) {
                (Some(child), _) => child as u32,
                (None, Fate::Split { .. }) => pending(topic),
                // Only when every weight is zero (a document the parent gave no mass).
                (None, _) => first_live,
            };
        }
    });
    z
}

/// The mark of a token waiting for a part of parent topic `topic`'s split.
fn pending(topic: usize) -> u32 {
    PENDING - topic as u32
}

/// Divide the tokens marked pending for `topic` among the child topics `parts`: a
/// collapsed Gibbs run of [`RESTRICTED_SWEEPS`] sweeps over those tokens alone, with
/// prior `(alpha, beta)` per part. A token of a seed word of part j starts in part j
/// and stays there; the others start at random.
fn divide(z: &mut [u32], tokens: TokenWords<'_>, topic: u32, parts: &[usize], seed_words: &[Vec<u32>], prior: (f64, f64), rng: &mut StreamRng) {
    let mark = pending(topic as usize);
    let (n, v) = (parts.len(), tokens.num_terms);
    let (alpha, beta) = prior;
    let mut pinned_part = vec![u8::MAX; v];
    for (j, words) in seed_words.iter().enumerate() {
        for &w in words {
            if pinned_part[w as usize] == u8::MAX {
                pinned_part[w as usize] = j as u8;
            }
        }
    }
    // The split's tokens: (document, word, part, pinned), in document order.
    let mut split: Vec<(u32, u32, usize, bool)> = Vec::new();
    for d in 0..tokens.doc_ptr.len() - 1 {
        let span = tokens.doc_ptr[d]..tokens.doc_ptr[d + 1];
        for (&t, &w) in z[span.clone()].iter().zip(&tokens.words[span]) {
            if t == mark {
                let pin = pinned_part[w as usize];
                let part = if pin != u8::MAX { pin as usize } else { rng.random_range(0..n) };
                split.push((d as u32, w, part, pin != u8::MAX));
            }
        }
    }
    let mut n_jw = vec![0u32; n * v];
    let mut n_j = vec![0u64; n];
    // Each document's tokens per part, dense (documents × parts; at most 16 parts).
    let mut n_dj = vec![0u32; (tokens.doc_ptr.len() - 1) * n];
    for &(d, w, j, _) in &split {
        n_jw[j * v + w as usize] += 1;
        n_j[j] += 1;
        n_dj[d as usize * n + j] += 1;
    }
    let vbeta = v as f64 * beta;
    let mut weights = vec![0.0; n];
    for _ in 0..RESTRICTED_SWEEPS {
        for token in split.iter_mut().filter(|t| !t.3) {
            let (d, w, old, _) = *token;
            let doc = &mut n_dj[d as usize * n..(d as usize + 1) * n];
            n_jw[old * v + w as usize] -= 1;
            n_j[old] -= 1;
            doc[old] -= 1;
            let new = draw(&mut weights, |j| (doc[j] as f64 + alpha) * (n_jw[j * v + w as usize] as f64 + beta) / (n_j[j] as f64 + vbeta), rng);
            n_jw[new * v + w as usize] += 1;
            n_j[new] += 1;
            doc[new] += 1;
            token.2 = new;
        }
    }
    let mut placed = split.iter();
    for t in z.iter_mut().filter(|t| **t == mark) {
        let &(_, _, j, _) = placed.next().expect("one per marked token");
        *t = parts[j] as u32;
    }
}
