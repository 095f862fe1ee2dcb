//! How sure a topic summary is: posterior intervals of the listed words' frequency,
//! exclusivity and FREX, the posterior probability that each is among its topic's top
//! n, and each topic's share with its interval, from draws of the topic table.
//!
//! Why it exists: a topic table is served as one number per word (the posterior
//! mean's), but a fit that kept samples knows more. Each kept sample gives one draw of
//! the table (frequency φ, exclusivity P(topic | word), shares); the words listed are
//! those the posterior-mean table ranks first; for each draw the words' three scores
//! are read off, FREX from that draw's own ECDFs, and whether the word is in the draw's
//! top n by the same rank. Across draws that gives a mean and an equal-tailed interval
//! (type-7 quantiles, [`crate::models::effects::interval`]) and a share of draws. With
//! D draws the interval's ends are order statistics of D values: the answer says D.
//!
//! A multi-chain fit serves each topic pooled over the chains that found it
//! ([`crate::models::consensus::chain_pools`]), so each topic is summarised over the
//! draws of those chains only ([`TopicDraw::pooled`]): its interval's mean is the served
//! posterior mean. The served shares are such per-topic means renormalised to sum to 1,
//! so each draw's shares are divided by the same sum of per-topic means (1 where every
//! chain is pooled into every topic).
//!
//! Draws are made and summarised one at a time in parallel (a draw's table is K × V
//! and is dropped once read), so memory stays at a few tables whatever D is.

use super::frex::{ecdf, frex_score, Rank};
use crate::models::effects::{interval, Interval};
use crate::models::TopicDraw;
use rayon::prelude::*;

/// What the intervals are of: the table's ranking (`rank`, FREX `weight`, the top `n`)
/// and the interval's probability `level`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IntervalSettings {
    pub rank: Rank,
    pub weight: f64,
    pub n: usize,
    pub level: f64,
}

/// One listed word's posterior summaries in one topic.
#[derive(Debug, Clone, PartialEq)]
pub struct WordIntervals {
    pub term: u32,
    pub frequency: Interval,
    pub exclusivity: Interval,
    pub frex: Interval,
    /// Share of draws in which the word is among the topic's top n by the rank.
    pub in_top_n: f64,
}

/// One topic's share interval and its listed words' summaries.
#[derive(Debug, Clone, PartialEq)]
pub struct TopicIntervals {
    pub share: Interval,
    pub words: Vec<WordIntervals>,
    /// The draws this topic's summaries are over: those of the chains pooled into it.
    pub draws: usize,
}

/// One draw read at the listed words: per topic, whether the draw stands for it, its
/// share and per listed word (frequency, exclusivity, FREX, in the top n).
type DrawReading = Vec<(bool, f64, Vec<[f64; 4]>)>;

/// Summaries of `listed[k]` (term ids) in every topic k over `draws` draws of the
/// table, draw i made by `draw(i)` (None: a draw that could not be made, skipped);
/// topic k over the draws that stand for it. Returns the summaries and the number of
/// draws used (0: no summary).
pub fn topic_intervals(
    draws: usize,
    draw: impl Fn(usize) -> Option<TopicDraw> + Sync,
    listed: &[Vec<u32>],
    settings: &IntervalSettings,
) -> (Vec<TopicIntervals>, usize) {
    let readings: Vec<DrawReading> = (0..draws).into_par_iter().filter_map(|i| draw(i).map(|d| read(&d, listed, settings))).collect();
    let used = readings.len();
    if used == 0 {
        return (Vec::new(), 0);
    }
    let of_topic = |k: usize| readings.iter().map(move |r| &r[k]).filter(|(stands, _, _)| *stands);
    let mean_share = |k: usize| {
        let (sum, n) = of_topic(k).fold((0.0, 0usize), |(s, n), (_, share, _)| (s + share, n + 1));
        if n == 0 {
            0.0
        } else {
            sum / n as f64
        }
    };
    // The served shares' normaliser, the per-topic means' sum: 1 where every draw
    // stands for every topic (each draw's shares sum to 1), so left as it is there.
    let every = readings.iter().all(|r| r.iter().all(|(stands, _, _)| *stands));
    let total: f64 = (0..listed.len()).map(mean_share).sum();
    let scale = if every || total <= 0.0 { 1.0 } else { 1.0 / total };
    let summaries = listed
        .iter()
        .enumerate()
        .map(|(k, terms)| {
            let shares: Vec<f64> = of_topic(k).map(|(_, share, _)| share * scale).collect();
            let words = (0..terms.len())
                .map(|j| {
                    let values = |c: usize| of_topic(k).map(|(_, _, words)| words[j][c]).collect::<Vec<f64>>();
                    let in_top = values(3);
                    WordIntervals {
                        term: terms[j],
                        frequency: interval(&values(0), settings.level),
                        exclusivity: interval(&values(1), settings.level),
                        frex: interval(&values(2), settings.level),
                        in_top_n: in_top.iter().sum::<f64>() / in_top.len().max(1) as f64,
                    }
                })
                .collect();
            TopicIntervals { share: interval(&shares, settings.level), words, draws: shares.len() }
        })
        .collect();
    (summaries, used)
}

/// One draw's values at the listed words.
fn read(draw: &TopicDraw, listed: &[Vec<u32>], s: &IntervalSettings) -> DrawReading {
    let table = &draw.table;
    listed
        .iter()
        .enumerate()
        .map(|(k, terms)| {
            let stands = draw.pooled.get(k).copied().unwrap_or(false);
            if terms.is_empty() || !stands {
                // Nothing listed in this topic, or a draw that does not stand for it: its
                // share only (read only where it stands).
                return (stands, table.topics[k].proportion, Vec::new());
            }
            let (freq, excl) = (table.frequency.row(k).to_vec(), table.exclusivity.row(k).to_vec());
            let (ef, ee) = (ecdf(&freq), ecdf(&excl));
            let key: Vec<f64> = match s.rank {
                Rank::Frequency => freq.clone(),
                Rank::Exclusivity => excl.clone(),
                Rank::Frex => (0..freq.len()).map(|f| frex_score(s.weight, ee[f], ef[f])).collect(),
            };
            // The n-th largest key and, among words tied with it, the tie-break by term
            // id the tables use: a word is in the top n when it ranks before that one.
            let mut order: Vec<u32> = (0..key.len() as u32).collect();
            let cmp = |a: &u32, b: &u32| key[*b as usize].total_cmp(&key[*a as usize]).then(a.cmp(b));
            let n = s.n.min(order.len());
            let cutoff = (n > 0).then(|| *order.select_nth_unstable_by(n - 1, cmp).1);
            let in_top = |f: u32| cutoff.is_some_and(|c| cmp(&f, &c) != std::cmp::Ordering::Greater);
            let words = terms
                .iter()
                .map(|&f| {
                    let i = f as usize;
                    [freq[i], excl[i], frex_score(s.weight, ee[i], ef[i]), f64::from(u8::from(in_top(f)))]
                })
                .collect();
            (stands, table.topics[k].proportion, words)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::TopicTable;
    use crate::summaries::frex::rank_topic;
    use ndarray::Array2;

    fn table(phi: Vec<f64>, k: usize, shares: Vec<f64>) -> TopicTable {
        let v = phi.len() / k;
        let frequency = Array2::from_shape_vec((k, v), phi).unwrap();
        TopicTable::flat(frequency, &shares)
    }

    /// Three draws of a two-topic, four-word table, summarised by hand: each word's
    /// values across draws are read where `rank_topic` reads them (so FREX and the top
    /// n agree with the served ranking of each draw).
    #[test]
    fn summaries_are_the_draws_read_as_the_tables_rank() {
        let draws = [
            table(vec![0.4, 0.3, 0.2, 0.1, 0.1, 0.2, 0.3, 0.4], 2, vec![0.5, 0.5]),
            table(vec![0.3, 0.4, 0.2, 0.1, 0.1, 0.1, 0.4, 0.4], 2, vec![0.6, 0.4]),
            table(vec![0.25, 0.25, 0.25, 0.25, 0.4, 0.3, 0.2, 0.1], 2, vec![0.3, 0.7]),
        ];
        let listed = vec![vec![0, 1, 3], vec![3]];
        for rank in [Rank::Frequency, Rank::Exclusivity, Rank::Frex] {
            let s = IntervalSettings { rank, weight: 0.5, n: 2, level: 0.5 };
            let (out, used) = topic_intervals(3, |i| Some(TopicDraw::of_every_topic(draws[i].clone())), &listed, &s);
            assert_eq!(used, 3);
            for (k, terms) in listed.iter().enumerate() {
                let shares: Vec<f64> = draws.iter().map(|d| d.topics[k].proportion).collect();
                assert_eq!(out[k].share, interval(&shares, 0.5));
                for (j, &term) in terms.iter().enumerate() {
                    let scores: Vec<_> = draws.iter().map(|d| rank_topic(d, k, Rank::Frex, 0.5, None).into_iter().find(|w| w.term == term).unwrap()).collect();
                    let w = &out[k].words[j];
                    assert_eq!(w.frequency, interval(&scores.iter().map(|x| x.frequency).collect::<Vec<_>>(), 0.5));
                    assert_eq!(w.exclusivity, interval(&scores.iter().map(|x| x.exclusivity).collect::<Vec<_>>(), 0.5));
                    assert_eq!(w.frex, interval(&scores.iter().map(|x| x.frex).collect::<Vec<_>>(), 0.5));
                    let top = draws.iter().filter(|d| rank_topic(d, k, rank, 0.5, Some(2)).iter().any(|x| x.term == term)).count();
                    assert_eq!(w.in_top_n, top as f64 / 3.0, "{rank:?}, topic {k}, word {term}");
                }
            }
        }
    }

    #[test]
    fn draws_that_cannot_be_made_are_skipped() {
        let d = table(vec![0.5, 0.5, 0.5, 0.5], 2, vec![0.5, 0.5]);
        let s = IntervalSettings { rank: Rank::Frequency, weight: 0.5, n: 1, level: 0.9 };
        let (out, used) = topic_intervals(4, |i| (i % 2 == 0).then(|| TopicDraw::of_every_topic(d.clone())), &[vec![0], vec![1]], &s);
        assert_eq!((used, out.len()), (2, 2));
        // Ties are broken by term id, as the tables break them: word 0 is topic 0's top 1.
        assert_eq!((out[0].words[0].in_top_n, out[1].words[0].in_top_n), (1.0, 0.0));
        assert_eq!(topic_intervals(2, |_| None, &[vec![0]], &s).1, 0);
    }

    /// Two chains, two draws each; the second chain found a different topic 1, so its
    /// draws stand for topic 0 only. Topic 0 is summarised over all four draws, topic 1
    /// over the first chain's two; the shares are divided by the sum of the per-topic
    /// means, as the served shares are renormalised.
    #[test]
    fn a_topic_is_summarised_over_the_draws_that_stand_for_it() {
        let first = [table(vec![0.6, 0.4, 0.2, 0.8], 2, vec![0.5, 0.5]), table(vec![0.7, 0.3, 0.1, 0.9], 2, vec![0.3, 0.7])];
        let second = [table(vec![0.5, 0.5, 0.9, 0.1], 2, vec![0.6, 0.4]), table(vec![0.4, 0.6, 0.8, 0.2], 2, vec![0.8, 0.2])];
        let draw = |i: usize| {
            let d = TopicDraw::of_every_topic(if i < 2 { first[i].clone() } else { second[i - 2].clone() });
            Some(if i < 2 { d } else { TopicDraw { pooled: vec![true, false], ..d } })
        };
        let s = IntervalSettings { rank: Rank::Frequency, weight: 0.5, n: 1, level: 0.5 };
        let (out, used) = topic_intervals(4, draw, &[vec![0], vec![0]], &s);
        assert_eq!(used, 4);
        assert_eq!((out[0].draws, out[1].draws), (4, 2));
        // Topic 0's frequency of word 0 over all four draws, topic 1's over the first two.
        assert!((out[0].words[0].frequency.mean - 0.55).abs() < 1e-12, "{:?}", out[0]);
        assert!((out[1].words[0].frequency.mean - 0.15).abs() < 1e-12, "{:?}", out[1]);
        // Word 0 leads topic 1 in neither of the first chain's draws; the second chain's
        // (where it would lead) are not read.
        assert_eq!(out[1].words[0].in_top_n, 0.0);
        // Mean shares 0.55 and 0.6 sum to 1.15; the served shares are 0.55/1.15 and
        // 0.6/1.15, and so are the intervals' means.
        assert!((out[0].share.mean - 0.55 / 1.15).abs() < 1e-12 && (out[1].share.mean - 0.6 / 1.15).abs() < 1e-12, "{out:?}");
        assert!((out[0].share.mean + out[1].share.mean - 1.0).abs() < 1e-12);
    }
}
