//! Draws shared by every family's start from a stored model (an edit's refit, an
//! update): a topic drawn from unnormalised weights, and assignments cut by document.
//!
//! Why it exists: a stored model keeps posterior means, not assignments, so each
//! family's warm start draws every token's topic from θ_dk φ_kw and folds new documents
//! in by collapsed Gibbs, one stream per document; the draws are the same whatever the
//! family, and live here once.

use crate::rng::StreamRng;
use rand::RngExt;

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
}
