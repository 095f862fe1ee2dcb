//! The stored form of a corpus: its blob and the versioned trailers after it.
//!
//! Storage: a stored corpus blob is the postcard encoding of [`Corpus`] (unversioned,
//! as written before token order existed), optionally followed by trailers, each a
//! postcard `(tag, payload)` and each at most once, in this order:
//! `(COVARIATES_TRAILER = 3, CovariateTable)` ([`super::covariates`]), then
//! `(ORDER_TRAILER_VERSION = 1, TokenOrder)`, then `(META_TRAILER = 2, documents' meta)`
//! ([`super::meta`]), then `(EXCERPT_TRAILER = 4, documents' excerpts)`
//! ([`super::excerpt`]). Blobs without a trailer (every corpus stored before this module)
//! decode with no order and no meta; readers for fits
//! ([`Corpus::decode_without_order`]) read the covariates, which come first, and stop
//! at the token order. Older binaries, whose postcard decoding ignores trailing bytes,
//! still read new blobs that have token order (they stop after it); a blob with meta but
//! no token order (a bag-of-words upload with `meta`) is refused by binaries from before
//! the meta trailer, whose decoder knew only tag 1.

use super::covariates::CovariateTable;
use super::excerpt::EXCERPT_TRAILER;
use super::meta::META_TRAILER;
use super::order::TokenOrder;
use super::Corpus;

/// Version of the token-order trailer of a stored corpus blob.
pub const ORDER_TRAILER_VERSION: u32 = 1;

/// The tag of the covariates trailer ([`super::covariates`]), written first.
pub const COVARIATES_TRAILER: u32 = 3;

/// Why a stored corpus blob could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("stored corpus is corrupt: {0}")]
pub struct BlobError(pub String);

impl Corpus {
    /// The stored form: the corpus, then its trailers when it has them: covariates
    /// first (so that a fit reads them without the token order), then the token order
    /// and the meta.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = postcard::to_allocvec(self).expect("a corpus always encodes");
        if let Some(covariates) = &self.covariates {
            out.extend(postcard::to_allocvec(&(COVARIATES_TRAILER, covariates)).expect("covariates encode"));
        }
        if let Some(order) = &self.token_order {
            out.extend(postcard::to_allocvec(&(ORDER_TRAILER_VERSION, order)).expect("token order encodes"));
        }
        if let Some(meta) = &self.doc_meta {
            out.extend(postcard::to_allocvec(&(META_TRAILER, meta)).expect("meta encodes"));
        }
        if let Some(excerpts) = &self.doc_excerpts {
            out.extend(postcard::to_allocvec(&(EXCERPT_TRAILER, excerpts)).expect("excerpts encode"));
        }
        out
    }

    /// Decodes a stored blob with all its trailers.
    pub fn decode(blob: &[u8]) -> Result<Corpus, BlobError> {
        Self::decode_trailers(blob, true)
    }

    /// Decodes a stored blob without its token order and meta (what fits read): the
    /// covariates, written before them, are read; the rest is not parsed.
    pub fn decode_without_order(blob: &[u8]) -> Result<Corpus, BlobError> {
        Self::decode_trailers(blob, false)
    }

    fn decode_trailers(blob: &[u8], all: bool) -> Result<Corpus, BlobError> {
        let err = |e: postcard::Error| BlobError(e.to_string());
        let (mut corpus, mut rest) = postcard::take_from_bytes::<Corpus>(blob).map_err(err)?;
        // Each trailer at most once: the covariates first, then the others in tag order.
        let mut seen: Vec<u32> = Vec::new();
        while !rest.is_empty() {
            let (tag, _) = postcard::take_from_bytes::<u32>(rest).map_err(err)?;
            if seen.contains(&tag)
                || (tag == COVARIATES_TRAILER && !seen.is_empty())
                || seen.last().is_some_and(|&last| last != COVARIATES_TRAILER && tag < last)
            {
                return Err(BlobError(format!("corpus trailer {tag} after trailers {seen:?}")));
            }
            if !all && tag != COVARIATES_TRAILER {
                break;
            }
            seen.push(tag);
            let documents = match tag {
                COVARIATES_TRAILER => {
                    let ((_, table), tail): ((u32, CovariateTable), _) = postcard::take_from_bytes(rest).map_err(err)?;
                    rest = tail;
                    if table.columns.iter().any(|c| c.len() != table.num_documents()) {
                        return Err(BlobError("corpus covariates of different lengths".into()));
                    }
                    let n = table.num_documents();
                    corpus.stats.covariates = table.summaries();
                    corpus.covariates = Some(table);
                    n
                }
                ORDER_TRAILER_VERSION => {
                    let ((_, order), tail): ((u32, TokenOrder), _) = postcard::take_from_bytes(rest).map_err(err)?;
                    rest = tail;
                    let n = order.num_documents();
                    corpus.token_order = Some(order);
                    n
                }
                META_TRAILER => {
                    let ((_, meta), tail): ((u32, Vec<Option<String>>), _) = postcard::take_from_bytes(rest).map_err(err)?;
                    rest = tail;
                    let n = meta.len();
                    corpus.doc_meta = Some(meta);
                    n
                }
                EXCERPT_TRAILER => {
                    let ((_, excerpts), tail): ((u32, Vec<Option<String>>), _) = postcard::take_from_bytes(rest).map_err(err)?;
                    rest = tail;
                    let n = excerpts.len();
                    corpus.doc_excerpts = Some(excerpts);
                    n
                }
                other => {
                    return Err(BlobError(format!(
                        "unknown corpus trailer {other} (this binary knows {ORDER_TRAILER_VERSION}, token order, {META_TRAILER}, meta, {COVARIATES_TRAILER}, covariates, and {EXCERPT_TRAILER}, excerpts)"
                    )))
                }
            };
            if documents != corpus.num_documents() {
                return Err(BlobError(format!("corpus trailer {tag} has {documents} documents, the corpus {}", corpus.num_documents())));
            }
        }
        Ok(corpus)
    }
}

#[cfg(test)]
mod tests {
    use crate::corpus::meta::META_TRAILER;
    use crate::corpus::Corpus;
    use crate::corpus::{build_corpus, PreprocessOptions, RawDocument, StopWords};
    use std::collections::BTreeMap;

    fn text(id: &str, t: &str) -> RawDocument {
        RawDocument { id: Some(id.into()), text: Some(t.into()), ..Default::default() }
    }

    fn options() -> PreprocessOptions {
        PreprocessOptions { stopwords: StopWords::None, min_df: 1, ..Default::default() }
    }

    #[test]
    fn text_uploads_keep_their_order_after_pruning_and_renumbering() {
        let docs = vec![text("a", "zeta alpha zeta beta"), text("b", "the"), text("c", "beta alpha alpha")];
        let opts = PreprocessOptions { stopwords: StopWords::English, ..options() };
        let c = build_corpus(opts, &[], docs).unwrap();
        let order = c.token_order.as_ref().expect("text upload keeps order");
        assert_eq!(order.num_documents(), 2, "the empty document is dropped from the order too");
        let words = |d: usize| order.doc(d).iter().map(|&t| c.lexicon.word(t).to_string()).collect::<Vec<_>>();
        assert_eq!(words(0), ["zeta", "alpha", "zeta", "beta"]);
        assert_eq!(words(1), ["beta", "alpha", "alpha"]);
        // The sequences agree with the counts.
        for d in 0..2 {
            let (terms, counts) = c.counts.row(d);
            for (&t, &n) in terms.iter().zip(counts) {
                assert_eq!(order.doc(d).iter().filter(|&&x| x == t).count(), n as usize);
            }
        }
        assert_eq!(order.max_len(), 4);
    }

    #[test]
    fn pruned_tokens_leave_the_sequence() {
        let docs = vec![text("a", "rare common other common"), text("b", "common other")];
        let c = build_corpus(PreprocessOptions { min_df: 2, ..options() }, &[], docs).unwrap();
        let order = c.token_order.as_ref().unwrap();
        let w: Vec<&str> = order.doc(0).iter().map(|&t| c.lexicon.word(t)).collect();
        assert_eq!(w, ["common", "other", "common"]);
    }

    #[test]
    fn counts_or_mixed_uploads_have_no_order() {
        let bow = RawDocument { id: Some("x".into()), counts: Some(BTreeMap::from([("alpha".to_string(), 2.0)])), ..Default::default() };
        let c = build_corpus(options(), &[], vec![text("a", "alpha beta"), bow]).unwrap();
        assert!(c.token_order.is_none());
    }

    #[test]
    fn blobs_round_trip_and_old_blobs_still_decode() {
        let c = build_corpus(options(), &[], vec![text("a", "alpha beta alpha"), text("b", "beta gamma")]).unwrap();
        let blob = c.encode();
        let back = Corpus::decode(&blob).unwrap();
        assert_eq!(back.token_order, c.token_order);
        assert_eq!(back.counts, c.counts);
        // What fits read, and what binaries before the trailer read: the corpus alone.
        assert!(Corpus::decode_without_order(&blob).unwrap().token_order.is_none());
        assert_eq!(postcard::from_bytes::<Corpus>(&blob).unwrap().counts, c.counts);
        // A blob stored before token order existed (no trailer) decodes without order.
        let old = postcard::to_allocvec(&c).unwrap();
        let back = Corpus::decode(&old).unwrap();
        assert!(back.token_order.is_none());
        assert_eq!(back.doc_ids, c.doc_ids);
        // An unknown trailer is an error, not a silent loss.
        let mut future = old.clone();
        future.extend(postcard::to_allocvec(&(9u32, c.token_order.as_ref().unwrap())).unwrap());
        assert!(Corpus::decode(&future).is_err());
    }

    #[test]
    fn meta_trailer_round_trips_with_and_without_order() {
        let meta = |t: &str| serde_json::json!({ "title": t }).as_object().cloned();
        let docs = vec![RawDocument { meta: meta("A"), ..text("a", "alpha beta alpha") }, text("b", "beta gamma")];
        let c = build_corpus(options(), &[], docs).unwrap();
        assert!(c.token_order.is_some() && c.doc_meta.is_some());
        let blob = c.encode();
        let back = Corpus::decode(&blob).unwrap();
        assert_eq!(back.doc_meta, c.doc_meta);
        assert_eq!(back.token_order, c.token_order);
        assert!(Corpus::decode_without_order(&blob).unwrap().doc_meta.is_none(), "fits skip the trailers");
        // A binary from before the meta trailer read the order and stopped there.
        let (_, rest) = postcard::take_from_bytes::<Corpus>(&blob).unwrap();
        let (_, old_reader): (u32, super::TokenOrder) = postcard::from_bytes(rest).unwrap();
        assert_eq!(Some(old_reader), c.token_order);

        // Bag-of-words documents: meta without order.
        let bow = RawDocument { id: Some("x".into()), counts: Some(BTreeMap::from([("alpha".to_string(), 2.0)])), meta: meta("X"), ..Default::default() };
        let c = build_corpus(options(), &[], vec![bow]).unwrap();
        assert!(c.token_order.is_none());
        let back = Corpus::decode(&c.encode()).unwrap();
        assert_eq!(back.doc_meta, Some(vec![Some(r#"{"title":"X"}"#.to_string())]));
        assert!(back.token_order.is_none());

        // Trailers out of order, repeated, or of the wrong length are refused.
        let mut c2 = c.clone();
        c2.doc_meta = Some(vec![None, None]);
        assert!(Corpus::decode(&c2.encode()).is_err(), "two metas for one document");
        let mut twice = c.encode();
        twice.extend(postcard::to_allocvec(&(META_TRAILER, c.doc_meta.as_ref().unwrap())).unwrap());
        assert!(Corpus::decode(&twice).is_err());
        let mut swapped = postcard::to_allocvec(&c).unwrap();
        swapped.extend(postcard::to_allocvec(&(META_TRAILER, c.doc_meta.as_ref().unwrap())).unwrap());
        swapped.extend(postcard::to_allocvec(&(super::ORDER_TRAILER_VERSION, super::TokenOrder { indptr: vec![0, 0], tokens: vec![] })).unwrap());
        assert!(Corpus::decode(&swapped).is_err());
    }

    /// Text documents keep their text as uploaded (case, punctuation, stop words); a
    /// document given as counts has none; the trailer decodes to itself, after the meta,
    /// and fits never read it.
    #[test]
    fn excerpts_keep_the_uploaded_text() {
        let bow = RawDocument { id: Some("x".into()), counts: Some(BTreeMap::from([("alpha".to_string(), 2.0)])), ..Default::default() };
        let meta = serde_json::json!({ "title": "A" }).as_object().cloned();
        let docs = vec![RawDocument { meta, ..text("a", "  The Alpha, and beta!  ") }, bow, text("c", "gamma alpha")];
        let c = build_corpus(options(), &[], docs).unwrap();
        assert_eq!(c.doc_excerpts, Some(vec![Some("The Alpha, and beta!".to_string()), None, Some("gamma alpha".to_string())]));
        let blob = c.encode();
        let back = Corpus::decode(&blob).unwrap();
        assert_eq!((back.doc_excerpts.as_ref(), back.doc_meta.as_ref()), (c.doc_excerpts.as_ref(), c.doc_meta.as_ref()));
        assert!(Corpus::decode_without_order(&blob).unwrap().doc_excerpts.is_none(), "fits skip the trailers");
        let mut wrong = c.clone();
        wrong.doc_excerpts = Some(vec![None]);
        assert!(Corpus::decode(&wrong.encode()).is_err(), "one excerpt for three documents");
        let mut twice = blob.clone();
        twice.extend(postcard::to_allocvec(&(super::EXCERPT_TRAILER, c.doc_excerpts.as_ref().unwrap())).unwrap());
        assert!(Corpus::decode(&twice).is_err());
    }

    #[test]
    fn covariates_come_first_and_fits_read_them_without_the_order() {
        let cov =
            |year: i64, party: &str| Some(BTreeMap::from([("year".to_string(), serde_json::json!(year)), ("party".to_string(), serde_json::json!(party))]));
        let meta = serde_json::json!({ "title": "A" }).as_object().cloned();
        let docs = vec![
            RawDocument { covariates: cov(2001, "B"), meta, ..text("a", "alpha beta alpha") },
            RawDocument { covariates: cov(2002, "A"), ..text("b", "beta gamma") },
            text("c", "gamma alpha"),
        ];
        let c = build_corpus(options(), &[], docs).unwrap();
        let table = c.covariates.clone().expect("the upload had covariates");
        assert_eq!(table.num_documents(), 3);
        assert!(table.column("party").unwrap().is_missing(2));
        let blob = c.encode();
        let back = Corpus::decode(&blob).unwrap();
        // Missing numbers are NaN, which `==` never equals: compared as text.
        let shown = |t: Option<&crate::corpus::covariates::CovariateTable>| format!("{t:?}");
        assert_eq!(shown(back.covariates.as_ref()), shown(Some(&table)));
        assert_eq!((back.token_order.as_ref(), back.doc_meta.as_ref()), (c.token_order.as_ref(), c.doc_meta.as_ref()));
        let for_fit = Corpus::decode_without_order(&blob).unwrap();
        assert_eq!(shown(for_fit.covariates.as_ref()), shown(Some(&table)));
        assert!(for_fit.token_order.is_none() && for_fit.doc_meta.is_none());
        // A covariates trailer after another trailer, or twice, is refused.
        let mut late = postcard::to_allocvec(&c).unwrap();
        late.extend(postcard::to_allocvec(&(super::ORDER_TRAILER_VERSION, c.token_order.as_ref().unwrap())).unwrap());
        late.extend(postcard::to_allocvec(&(super::COVARIATES_TRAILER, &table)).unwrap());
        assert!(Corpus::decode(&late).is_err());
        let mut twice = postcard::to_allocvec(&c).unwrap();
        for _ in 0..2 {
            twice.extend(postcard::to_allocvec(&(super::COVARIATES_TRAILER, &table)).unwrap());
        }
        assert!(Corpus::decode(&twice).is_err());
    }
}
