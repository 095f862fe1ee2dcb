//! The vocabulary of a corpus together with the preprocessing that produced it.
//!
//! Why it exists: a fitted model only knows term ids. To score or infer topics for a
//! new document, its text must go through exactly the same tokenizer, stop words,
//! stemming and vocabulary as the training corpus; the [`Lexicon`] stores both the
//! words and the options, and encodes new documents, counting the tokens it had to drop
//! as out-of-vocabulary (OOV).

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use super::input::parse_count;
use super::preprocess::{DuplicateIds, LabelIdentity, PreprocessOptions, StopWords};
use super::sparse::normalize_row;
use super::tokenize::TextPipeline;

/// Term ids ↔ words, plus the preprocessing options of the corpus.
///
/// Words are distinct; term ids index `words`. The fields are public for reading;
/// mutating `words` afterwards invalidates the internal index.
///
/// Stored (postcard, in corpus and model blobs) without `options.label_identity`: it
/// shapes only the label tree a corpus is built with, never how words are encoded, and
/// leaving it out keeps lexicons stored before it existed readable. A decoded lexicon's
/// `label_identity` is the default; the corpus summary keeps the one in force.
#[derive(Deserialize, Debug, Clone)]
#[serde(try_from = "LexiconData")]
pub struct Lexicon {
    /// The vocabulary, by term id.
    pub words: Vec<String>,
    /// The preprocessing that produced the vocabulary (and must encode new text).
    pub options: PreprocessOptions,
    #[serde(skip)]
    index: HashMap<String, u32>,
}

impl PartialEq for Lexicon {
    fn eq(&self, other: &Self) -> bool {
        self.words == other.words && self.options == other.options
    }
}

/// Serialized shape of a [`Lexicon`]; the index is rebuilt on the way in.
#[derive(Deserialize)]
struct LexiconData {
    words: Vec<String>,
    options: StoredOptions,
}

/// What a [`Lexicon`] writes: its words (borrowed) and its stored options.
#[derive(Serialize)]
struct LexiconOut<'a> {
    words: &'a [String],
    options: StoredOptions,
}

impl Serialize for Lexicon {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        LexiconOut { words: &self.words, options: StoredOptions::from(&self.options) }.serialize(serializer)
    }
}

/// [`PreprocessOptions`] as a lexicon stores them: every field in its order but
/// `label_identity` (see [`Lexicon`]).
#[derive(Serialize, Deserialize)]
#[serde(default)]
struct StoredOptions {
    lowercase: bool,
    stopwords: StopWords,
    stem: bool,
    min_token_length: usize,
    keep_numbers: bool,
    min_df: usize,
    max_df: f64,
    top_n: Option<usize>,
    top_fraction: Option<f64>,
    label_separator: Option<String>,
    duplicate_ids: DuplicateIds,
}

impl Default for StoredOptions {
    fn default() -> Self {
        StoredOptions::from(&PreprocessOptions::default())
    }
}

impl From<&PreprocessOptions> for StoredOptions {
    fn from(o: &PreprocessOptions) -> Self {
        StoredOptions {
            lowercase: o.lowercase,
            stopwords: o.stopwords.clone(),
            stem: o.stem,
            min_token_length: o.min_token_length,
            keep_numbers: o.keep_numbers,
            min_df: o.min_df,
            max_df: o.max_df,
            top_n: o.top_n,
            top_fraction: o.top_fraction,
            label_separator: o.label_separator.clone(),
            duplicate_ids: o.duplicate_ids,
        }
    }
}

impl From<StoredOptions> for PreprocessOptions {
    fn from(o: StoredOptions) -> Self {
        PreprocessOptions {
            lowercase: o.lowercase,
            stopwords: o.stopwords,
            stem: o.stem,
            min_token_length: o.min_token_length,
            keep_numbers: o.keep_numbers,
            min_df: o.min_df,
            max_df: o.max_df,
            top_n: o.top_n,
            top_fraction: o.top_fraction,
            label_separator: o.label_separator,
            duplicate_ids: o.duplicate_ids,
            label_identity: LabelIdentity::default(),
        }
    }
}

impl TryFrom<LexiconData> for Lexicon {
    type Error = String;
    fn try_from(d: LexiconData) -> Result<Self, String> {
        // A NaN fraction is corrupt (no upload passes validation with one), and options
        // that are not equal to themselves break every "same options" check.
        if d.options.max_df.is_nan() || d.options.top_fraction.is_some_and(f64::is_nan) {
            return Err("a stored document-frequency fraction is not a number".into());
        }
        Lexicon::try_new(d.words, d.options.into())
    }
}

/// A document encoded against a [`Lexicon`]: sorted distinct term ids with positive
/// counts, plus the number of tokens dropped because they are not in the vocabulary.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EncodedDoc {
    /// Term ids, strictly increasing.
    pub terms: Vec<u32>,
    /// Count of each term (parallel to `terms`, all ≥ 1).
    pub counts: Vec<u32>,
    /// Tokens that survived preprocessing but are not in the vocabulary.
    pub oov_tokens: u64,
}

impl EncodedDoc {
    fn from_pairs(mut pairs: Vec<(u32, u32)>, oov_tokens: u64) -> Self {
        normalize_row(&mut pairs);
        let (terms, counts) = pairs.into_iter().unzip();
        EncodedDoc { terms, counts, oov_tokens }
    }

    /// Number of in-vocabulary tokens.
    pub fn num_tokens(&self) -> u64 {
        self.counts.iter().map(|&c| c as u64).sum()
    }

    /// Whether no in-vocabulary token is left.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }
}

impl Lexicon {
    /// Bytes the vocabulary and its index hold on the heap.
    pub fn memory_bytes(&self) -> usize {
        use crate::heap_size::{hash_map, string, strings};
        strings(&self.words) + hash_map(&self.index, |w, _| string(w))
    }

    /// A lexicon over `words` (term id = position).
    ///
    /// # Panics
    /// If `words` contains a duplicate (use [`Self::try_new`] for untrusted input).
    pub fn new(words: Vec<String>, options: PreprocessOptions) -> Self {
        Self::try_new(words, options).expect("lexicon words must be distinct")
    }

    /// Like [`Self::new`] but reports a duplicate word instead of panicking.
    pub fn try_new(words: Vec<String>, options: PreprocessOptions) -> Result<Self, String> {
        let mut index = HashMap::with_capacity(words.len());
        for (i, w) in words.iter().enumerate() {
            if index.insert(w.clone(), i as u32).is_some() {
                return Err(format!("word '{w}' appears twice in the vocabulary"));
            }
        }
        Ok(Lexicon { words, options, index })
    }

    /// Number of terms.
    pub fn len(&self) -> usize {
        self.words.len()
    }

    /// Whether the vocabulary is empty.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// The word of term `id`. Panics if out of range.
    pub fn word(&self, id: u32) -> &str {
        &self.words[id as usize]
    }

    /// The term id of `word` (an already-normalized term, e.g. a stem).
    pub fn id(&self, word: &str) -> Option<u32> {
        self.index.get(word).copied()
    }

    /// A text pipeline for this lexicon's options (build once, reuse for many docs).
    pub fn pipeline(&self) -> TextPipeline {
        TextPipeline::new(&self.options)
    }

    /// Encodes raw text as the corpus was encoded; tokens not in the vocabulary are
    /// dropped and counted in `oov_tokens`. `pipeline` must come from
    /// [`Self::pipeline`].
    pub fn encode_text(&self, pipeline: &TextPipeline, text: &str) -> EncodedDoc {
        debug_assert_eq!(pipeline.options(), &self.options, "pipeline of another lexicon");
        let mut pairs = Vec::new();
        let mut oov = 0u64;
        pipeline.for_each_token(text, |tok| match self.index.get(tok) {
            Some(&id) => pairs.push((id, 1)),
            None => oov += 1,
        });
        EncodedDoc::from_pairs(pairs, oov)
    }

    /// Encodes a bag of words (keys normalized like the corpus' bag-of-words keys).
    /// Counts must be non-negative integers; the error message names the bad word.
    /// Keys dropped by preprocessing (stop words, …) are ignored; keys not in the
    /// vocabulary add their count to `oov_tokens`.
    pub fn encode_counts(&self, pipeline: &TextPipeline, counts: &BTreeMap<String, f64>) -> Result<EncodedDoc, String> {
        debug_assert_eq!(pipeline.options(), &self.options, "pipeline of another lexicon");
        let mut pairs = Vec::with_capacity(counts.len());
        let mut oov = 0u64;
        for (word, &value) in counts {
            let c = parse_count(value).map_err(|why| format!("bad count {value} for word '{word}': {why}"))?;
            if c == 0 {
                continue;
            }
            let Some(term) = pipeline.normalize_term(word) else { continue };
            match self.index.get(term.as_str()) {
                Some(&id) => pairs.push((id, c)),
                None => oov += c as u64,
            }
        }
        Ok(EncodedDoc::from_pairs(pairs, oov))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::preprocess::StopWords;

    fn lex(words: &[&str], opts: PreprocessOptions) -> Lexicon {
        Lexicon::new(words.iter().map(|w| w.to_string()).collect(), opts)
    }

    #[test]
    fn lookup() {
        let l = lex(&["cat", "dog"], PreprocessOptions::default());
        assert_eq!(l.len(), 2);
        assert!(!l.is_empty());
        assert_eq!(l.id("dog"), Some(1));
        assert_eq!(l.id("Dog"), None);
        assert_eq!(l.word(0), "cat");
    }

    /// A lexicon is stored without `label_identity`, so lexicons written before the
    /// option existed decode, and one built with `path` decodes with the default.
    #[test]
    fn stored_without_label_identity() {
        use crate::corpus::preprocess::{DuplicateIds, LabelIdentity};
        // The stored shape before label_identity: words, then the eleven options.
        type OldOptions = (bool, StopWords, bool, usize, bool, usize, f64, Option<usize>, Option<f64>, Option<String>, DuplicateIds);
        #[derive(Serialize)]
        struct Before(Vec<String>, OldOptions);
        let d = PreprocessOptions::default();
        let old = Before(
            vec!["cat".into(), "dog".into()],
            (
                d.lowercase,
                d.stopwords.clone(),
                d.stem,
                d.min_token_length,
                d.keep_numbers,
                d.min_df,
                d.max_df,
                d.top_n,
                d.top_fraction,
                d.label_separator.clone(),
                d.duplicate_ids,
            ),
        );
        let old_bytes = postcard::to_allocvec(&old).unwrap();
        let decoded: Lexicon = postcard::from_bytes(&old_bytes).unwrap();
        assert_eq!(decoded, lex(&["cat", "dog"], d.clone()));
        let with_path = lex(&["cat", "dog"], PreprocessOptions { label_identity: LabelIdentity::Path, ..d });
        assert_eq!(postcard::to_allocvec(&with_path).unwrap(), old_bytes);
        assert_eq!(postcard::from_bytes::<Lexicon>(&old_bytes).unwrap().options.label_identity, LabelIdentity::Name);
    }

    #[test]
    fn duplicates_rejected() {
        let r = Lexicon::try_new(vec!["a".into(), "a".into()], PreprocessOptions::default());
        assert!(r.unwrap_err().contains("'a'"));
        let j = r#"{"words":["x","x"],"options":{}}"#;
        assert!(serde_json::from_str::<Lexicon>(j).is_err());
    }

    #[test]
    fn encode_text_with_oov() {
        let l = lex(&["cat", "dog", "fish"], PreprocessOptions::default());
        let p = l.pipeline();
        let e = l.encode_text(&p, "The Dog chased the cat; the CAT ran from a zebra, a zebra!");
        assert_eq!(e.terms, vec![0, 1]);
        assert_eq!(e.counts, vec![2, 1]);
        // "chased", "ran", "zebra" ×2 are OOV; "the", "from", "a" are stop words.
        assert_eq!(e.oov_tokens, 4);
        assert_eq!(e.num_tokens(), 3);
        let e = l.encode_text(&p, "");
        assert!(e.is_empty());
        assert_eq!(e.oov_tokens, 0);
    }

    #[test]
    fn encode_with_stemming() {
        let opts = PreprocessOptions { stem: true, ..Default::default() };
        let l = lex(&["connect", "run"], opts);
        let p = l.pipeline();
        let e = l.encode_text(&p, "Connections running runs connected walking");
        assert_eq!((e.terms, e.counts, e.oov_tokens), (vec![0, 1], vec![2, 2], 1));
    }

    #[test]
    fn encode_counts_rules() {
        let l = lex(&["cat", "dog"], PreprocessOptions::default());
        let p = l.pipeline();
        let mut bow = BTreeMap::new();
        bow.insert("Dog".to_string(), 2.0);
        bow.insert("dog".to_string(), 1.0);
        bow.insert("the".to_string(), 5.0); // stop word: ignored, not OOV
        bow.insert("zebra".to_string(), 3.0);
        bow.insert("cat".to_string(), 0.0);
        let e = l.encode_counts(&p, &bow).unwrap();
        assert_eq!((e.terms, e.counts, e.oov_tokens), (vec![1], vec![3], 3));

        bow.insert("emu".to_string(), 1.5);
        let err = l.encode_counts(&p, &bow).unwrap_err();
        assert!(err.contains("'emu'"), "{err}");
        let mut neg = BTreeMap::new();
        neg.insert("cat".to_string(), -1.0);
        assert!(l.encode_counts(&p, &neg).unwrap_err().contains("'cat'"));
    }

    #[test]
    fn serde_roundtrip_rebuilds_index() {
        let opts = PreprocessOptions { stopwords: StopWords::List(vec!["foo".into()]), min_df: 2, ..Default::default() };
        let l = lex(&["alpha", "beta"], opts);
        let s = serde_json::to_string(&l).unwrap();
        assert!(!s.contains("index"));
        let back: Lexicon = serde_json::from_str(&s).unwrap();
        assert_eq!(back, l);
        assert_eq!(back.id("beta"), Some(1));
        assert_eq!(back.options.min_df, 2);
        let p = back.pipeline();
        assert_eq!(back.encode_text(&p, "foo beta beta").counts, vec![2]);
    }
}
