//! Draws shared by every family's start from a stored model (an edit's refit, an
//! update): a topic drawn from unnormalised weights, assignments cut by document, and
//! an update's two steps (the parent's documents drawn from its posterior, the new ones
//! folded in).
//!
//! Why it exists: a stored model keeps posterior means, not assignments, so each
//! family's warm start draws every token's topic from θ_dk φ_kw and folds new documents
//! in by collapsed Gibbs, one stream per document; the draws are the same whatever the
//! family, and live here once.

use crate::rng::{stream, Purpose, StreamRng};
use rand::RngExt;
use rayon::prelude::*;

/// The tokens a start reads: each token's word, document by document, and the
/// documents' token offsets (document d owns `doc_ptr[d]..doc_ptr[d + 1]`).
#[derive(Clone, Copy)]
pub struct TokenWords<'a> {
    pub words: &'a [u32],
    pub doc_ptr: &'a [usize],
    pub num_terms: usize,
}

/// The parent's documents `0..parents` of an update: each token's topic drawn from the
/// parent's posterior, p(z = k | d, w) ∝ θ_dk φ_kw (`theta` D × K, `phi` K × `phi_terms`
/// topic-major; a parent document's words are all below `phi_terms`), document d from
/// stream `(seed, UpdateStart, 0, d)`. Writes the first `doc_ptr[parents]` entries of `z`.
pub fn draw_from_parent(z: &mut [u32], tokens: TokenWords<'_>, parents: usize, (theta, phi, phi_terms): (&[f64], &[f64], usize), seed: u64) {
    let k = phi.len() / phi_terms.max(1);
    let spans = split_by_document(&mut z[..tokens.doc_ptr[parents]], &tokens.doc_ptr[..=parents]);
    spans.into_par_iter().for_each(|(d, zs)| {
        let mut rng = stream(seed, Purpose::UpdateStart, 0, d as u64);
        let mut weights = vec![0.0; k];
        let theta_d = &theta[d * k..(d + 1) * k];
        for (slot, &w) in zs.iter_mut().zip(&tokens.words[tokens.doc_ptr[d]..tokens.doc_ptr[d + 1]]) {
            *slot = draw(&mut weights, |j| theta_d[j] * phi[j * phi_terms + w as usize], &mut rng) as u32;
        }
    });
}

/// How many documents [`fold_in`] folds in between two looks at its `stop`.
pub const FOLD_IN_STOP_EVERY: usize = 64;

/// An update's new documents (`parents..`), folded in one after another by collapsed
/// Gibbs against the counts of every token before them (o-LDA's initialisation, Canini,
/// Shi and Griffiths 2009): p(z = k) ∝ (n_dk + α_k)(n_kw + β)/(n_k + Vβ) over the
/// `alpha.len()` topics, every draw added before the next, document d from stream
/// `(seed, UpdateStart, 1, d)`. Reads the parent's tokens' topics from `z` and writes
/// the rest. It runs in one thread, document after document, so it asks `stop` every
/// [`FOLD_IN_STOP_EVERY`] documents and leaves the rest at topic 0 when told (a
/// cancelled job's chain then stops at its first scan, before anything is kept).
pub fn fold_in(z: &mut [u32], tokens: TokenWords<'_>, parents: usize, (alpha, beta): (&[f64], f64), seed: u64, stop: &dyn Fn() -> bool) {
    let (k, v) = (alpha.len(), tokens.num_terms);
    let vbeta = v as f64 * beta;
    let mut n_kw = vec![0u32; v * k];
    let mut n_k = vec![0u64; k];
    let first_new = tokens.doc_ptr[parents];
    for (&t, &w) in z[..first_new].iter().zip(tokens.words) {
        n_kw[w as usize * k + t as usize] += 1;
        n_k[t as usize] += 1;
    }
    let mut weights = vec![0.0; k];
    let mut n_dk = vec![0u32; k];
    for d in parents..tokens.doc_ptr.len() - 1 {
        if (d - parents).is_multiple_of(FOLD_IN_STOP_EVERY) && stop() {
            return;
        }
        let mut rng = stream(seed, Purpose::UpdateStart, 1, d as u64);
        n_dk.fill(0);
        let span = tokens.doc_ptr[d]..tokens.doc_ptr[d + 1];
        for (slot, &w) in z[span.clone()].iter_mut().zip(&tokens.words[span]) {
            let w = w as usize;
            let row = &mut n_kw[w * k..(w + 1) * k];
            let topic = draw(&mut weights, |j| (n_dk[j] as f64 + alpha[j]) * (row[j] as f64 + beta) / (n_k[j] as f64 + vbeta), &mut rng);
            n_dk[topic] += 1;
            row[topic] += 1;
            n_k[topic] += 1;
            *slot = topic as u32;
        }
    }
}

/// Draw an index by the weights `weight(k)` (filled into `buf`); the last positive one
/// when rounding leaves the draw past the total, 0 when every weight is zero.
pub fn draw(buf: &mut [f64], weight: impl Fn(usize) -> f64, rng: &mut StreamRng) -> usize {
    let mut total = 0.0;
    for (k, b) in buf.iter_mut().enumerate() {
        total += weight(k);
        *b = total;
    }
    if total <= 0.0 {
        return 0;
    }
    let u = rng.random::<f64>() * total;
    buf.iter().position(|&c| u < c).unwrap_or_else(|| buf.iter().rposition(|&c| c > 0.0).unwrap_or(0))
}

/// Document d's slice of `z` (tokens `doc_ptr[d]..doc_ptr[d + 1]`), for every document.
pub fn split_by_document<'z, T>(z: &'z mut [T], doc_ptr: &[usize]) -> Vec<(usize, &'z mut [T])> {
    let mut out = Vec::with_capacity(doc_ptr.len().saturating_sub(1));
    let mut rest = z;
    for d in 0..doc_ptr.len().saturating_sub(1) {
        let (head, tail) = std::mem::take(&mut rest).split_at_mut(doc_ptr[d + 1] - doc_ptr[d]);
        out.push((d, head));
        rest = tail;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{stream, Purpose};

    /// Zero weights are never drawn; all-zero weights give 0; the cut covers every token.
    #[test]
    fn draws_skip_zero_weights_and_cuts_cover_the_tokens() {
        let mut rng = stream(1, Purpose::UpdateStart, 0, 0);
        let mut buf = vec![0.0; 4];
        for _ in 0..200 {
            let k = draw(&mut buf, |j| [0.0, 2.0, 0.0, 1.0][j], &mut rng);
            assert!(k == 1 || k == 3, "{k}");
        }
        assert_eq!(draw(&mut buf, |_| 0.0, &mut rng), 0);
        let mut z = [0u16, 1, 2, 3, 4];
        let spans = split_by_document(&mut z, &[0, 2, 2, 5]);
        let lens: Vec<(usize, usize)> = spans.iter().map(|(d, s)| (*d, s.len())).collect();
        assert_eq!(lens, vec![(0, 2), (1, 0), (2, 3)]);
    }

    /// The fold-in stops when told, at its next look (every `FOLD_IN_STOP_EVERY`
    /// documents), leaving the parent's tokens and the unvisited documents as they
    /// were; told to go on, it assigns topics from the second topic's strong counts.
    #[test]
    fn the_fold_in_stops_when_told() {
        let docs = 3 * FOLD_IN_STOP_EVERY;
        let words: Vec<u32> = (0..2 * docs).map(|i| (i % 2) as u32).collect();
        let doc_ptr: Vec<usize> = (0..=docs).map(|d| 2 * d).collect();
        let tokens = TokenWords { words: &words, doc_ptr: &doc_ptr, num_terms: 2 };
        let fold = |stop_after: usize| {
            let mut z = vec![1u32; 2]; // the parent's one document, on topic 1
            z.resize(words.len(), 7); // 7: not yet drawn
            let looks = std::cell::Cell::new(0);
            fold_in(&mut z, tokens, 1, (&[0.01, 0.01], 0.01), 3, &|| {
                looks.set(looks.get() + 1);
                looks.get() > stop_after
            });
            z
        };
        let stopped = fold(1);
        let first_unvisited = 2 * (1 + FOLD_IN_STOP_EVERY);
        assert_eq!(&stopped[..2], &[1, 1], "the parent's tokens are read, not written");
        assert!(stopped[2..first_unvisited].iter().all(|&t| t < 2), "the first block is folded in");
        assert!(stopped[first_unvisited..].iter().all(|&t| t == 7), "nothing after the stop is drawn");
        let whole = fold(usize::MAX);
        assert!(whole[2..].iter().all(|&t| t < 2));
        assert_eq!(&whole[..first_unvisited], &stopped[..first_unvisited], "the same draws up to the stop");
    }
}
