//! Monte Carlo covariance and correlation of DCNT/SCNT topic weights (paper 000, A.3).
//!
//! Why it exists: the logistic stick-breaking makes Cov[π_d] intractable in closed form,
//! yet the topic correlations are what DCNT is for. For each document, S draws of
//! (u, v) from the fitted prior given φ_d (u ~ N(ηᵀφ_d, I), v ~ N(A u, λ_v⁻¹ I)) are
//! mapped through the stick-breaking; the per-document covariances (eqs. 3–4, divided
//! by S as the paper writes) are averaged over documents (eq. 5).
//!
//! Documents with identical feature rows have the same distribution of π, hence the
//! same Cov[π_d]: each distinct row is simulated once (on the `Covariance` stream of its
//! first document) and weighted by its number of documents. Without metadata (φ_d = 1)
//! the whole corpus costs one document's S draws; the Monte Carlo error is then that of
//! S draws, so raise S for more precision.

use super::point::DcntPoint;
use super::stick::log_stick_weights;
use crate::rng::{stream, Purpose};
use rand_distr::{Distribution, StandardNormal};
use rayon::prelude::*;
use std::collections::HashMap;

/// One standard normal draw.
#[inline]
fn std_normal<R: rand::Rng + ?Sized>(rng: &mut R) -> f64 {
    StandardNormal.sample(rng)
}

/// Σ̂ (K̄ × K̄ row-major), its correlation matrix, and the mean topic weights.
#[derive(Debug, Clone, PartialEq)]
pub struct TopicCovariance {
    pub covariance: Vec<f64>,
    /// Σ̂_ij / sqrt(Σ̂_ii Σ̂_jj), 0 where a variance is 0.
    pub correlation: Vec<f64>,
    /// (1/D) Σ_d E[π_d].
    pub mean: Vec<f64>,
}

/// Σ̂ = (1/D) Σ_d Cov[π_d] with `draws` (S, at least 2 used) prior draws per distinct
/// feature row, in parallel over rows. An empty corpus gives zeros.
pub fn topic_covariance(point: &DcntPoint, features_per_doc: &[Vec<f64>], draws: usize, seed: u64) -> TopicCovariance {
    let k = point.num_topics;
    let draws = draws.max(2);
    // Distinct feature rows (bitwise), each with its first document and multiplicity.
    let mut groups: Vec<(usize, usize)> = Vec::new();
    let mut seen: HashMap<Vec<u64>, usize> = HashMap::new();
    for (d, row) in features_per_doc.iter().enumerate() {
        let key: Vec<u64> = row.iter().map(|x| x.to_bits()).collect();
        match seen.get(&key) {
            Some(&g) => groups[g].1 += 1,
            None => {
                seen.insert(key, groups.len());
                groups.push((d, 1));
            }
        }
    }
    let (mut covariance, mut mean) = groups
        .par_iter()
        .map(|&(d, multiplicity)| {
            let (cov, m) = document_covariance(point, &features_per_doc[d], draws, seed, d as u64);
            let w = multiplicity as f64;
            (cov.into_iter().map(|x| x * w).collect::<Vec<f64>>(), m.into_iter().map(|x| x * w).collect::<Vec<f64>>())
        })
        .reduce(
            || (vec![0.0; k * k], vec![0.0; k]),
            |(mut c1, mut m1), (c2, m2)| {
                c1.iter_mut().zip(&c2).for_each(|(a, b)| *a += b);
                m1.iter_mut().zip(&m2).for_each(|(a, b)| *a += b);
                (c1, m1)
            },
        );
    let docs = features_per_doc.len().max(1) as f64;
    covariance.iter_mut().for_each(|x| *x /= docs);
    mean.iter_mut().for_each(|x| *x /= docs);
    let correlation = correlation_of(&covariance, k);
    TopicCovariance { covariance, correlation, mean }
}

/// Cov[π_d] (eq. 4, K̄ × K̄) and E[π_d] (eq. 3) from S draws on document d's stream.
fn document_covariance(point: &DcntPoint, features: &[f64], draws: usize, seed: u64, doc: u64) -> (Vec<f64>, Vec<f64>) {
    let k = point.num_topics;
    let mut rng = stream(seed, Purpose::Covariance, 0, doc);
    let mean_u = point.u_mean(features);
    let sd = 1.0 / point.lambda_v.sqrt();
    let (mut u, mut v) = (vec![0.0; k], vec![0.0; k]);
    let mut pis = vec![0.0; draws * k];
    for pi in pis.chunks_exact_mut(k) {
        for (x, m) in u.iter_mut().zip(&mean_u) {
            *x = m + std_normal(&mut rng);
        }
        for (r, x) in v.iter_mut().enumerate() {
            let au: f64 = point.a[r * k..(r + 1) * k].iter().zip(&u).map(|(a, b)| a * b).sum();
            *x = au + sd * std_normal(&mut rng);
        }
        log_stick_weights(&v, pi);
        pi.iter_mut().for_each(|p| *p = p.exp());
    }
    // Two passes (mean, then centred products) for accuracy.
    let mut mean = vec![0.0; k];
    for pi in pis.chunks_exact(k) {
        mean.iter_mut().zip(pi).for_each(|(m, p)| *m += p);
    }
    mean.iter_mut().for_each(|m| *m /= draws as f64);
    let mut cov = vec![0.0; k * k];
    let mut centred = vec![0.0; k];
    for pi in pis.chunks_exact(k) {
        centred.iter_mut().zip(pi).zip(&mean).for_each(|((c, p), m)| *c = p - m);
        for i in 0..k {
            let ci = centred[i];
            for (out, cj) in cov[i * k + i..(i + 1) * k].iter_mut().zip(&centred[i..]) {
                *out += ci * cj;
            }
        }
    }
    for i in 0..k {
        for j in i..k {
            let x = cov[i * k + j] / draws as f64;
            cov[i * k + j] = x;
            cov[j * k + i] = x;
        }
    }
    (cov, mean)
}

/// C_ij / sqrt(C_ii C_jj), 0 where either variance is 0.
fn correlation_of(cov: &[f64], k: usize) -> Vec<f64> {
    let sd: Vec<f64> = (0..k).map(|i| cov[i * k + i].max(0.0).sqrt()).collect();
    let mut out = vec![0.0; k * k];
    for i in 0..k {
        for j in 0..k {
            if sd[i] > 0.0 && sd[j] > 0.0 {
                out[i * k + j] = cov[i * k + j] / (sd[i] * sd[j]);
            }
        }
    }
    out
}
