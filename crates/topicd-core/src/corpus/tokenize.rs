//! The text pipeline: raw text → terms, following [`PreprocessOptions`].
//!
//! Why it exists: the exact same steps must run when a corpus is built and when a new
//! document is encoded for prediction, so they live in one place, built once per
//! corpus/request ([`TextPipeline::new`]) and shared by the builder and the lexicon.
//!
//! Steps for text, in order:
//! 1. Unicode word segmentation (UAX #29, `unicode_words`), which drops punctuation and
//!    whitespace. Ideographic scripts (Chinese, Japanese kanji) come out one character
//!    per word, so they only survive with `min_token_length: 1`.
//! 2. Each word is split further at apostrophes (`'` and `’`), so "John's" gives
//!    "John" + "s" and "don't" gives "don" + "t": possessives then share a term with
//!    the bare word, and the fragments are short or stop words anyway.
//! 3. Unicode-aware lowercasing (`str::to_lowercase`) if enabled.
//! 4. Tokens with fewer than `min_token_length` characters are dropped.
//! 5. Tokens without any alphabetic character ("2024", "3.14") are dropped unless
//!    `keep_numbers`.
//! 6. Stop words are removed (checked on the lowercased, unstemmed token).
//! 7. Snowball English ("Porter 2") stemming if enabled. The stemmer expects lowercase
//!    input; with `lowercase: false` capitalised words are mostly left unstemmed.
//!
//! Bag-of-words keys go through [`TextPipeline::normalize_term`]: steps 3–7 only, after
//! trimming, with no splitting (a key like "new york" stays one term).

use std::borrow::Cow;

use rust_stemmers::{Algorithm, Stemmer};
use unicode_segmentation::UnicodeSegmentation;

use super::preprocess::PreprocessOptions;
use super::stopwords::StopSet;

/// Characters at which words are split after segmentation.
const APOSTROPHES: &[char] = &['\'', '\u{2019}'];

/// Tokenizer, stop-word filter and stemmer configured by one [`PreprocessOptions`].
pub struct TextPipeline {
    options: PreprocessOptions,
    stop: StopSet,
    stemmer: Option<Stemmer>,
}

impl std::fmt::Debug for TextPipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextPipeline").field("options", &self.options).field("stop_words", &self.stop.len()).field("stemmer", &self.stemmer.is_some()).finish()
    }
}

impl Clone for TextPipeline {
    fn clone(&self) -> Self {
        TextPipeline { options: self.options.clone(), stop: self.stop.clone(), stemmer: self.stemmer.as_ref().map(|_| Stemmer::create(Algorithm::English)) }
    }
}

impl TextPipeline {
    /// Builds the pipeline (stop set, stemmer) for `options`.
    pub fn new(options: &PreprocessOptions) -> Self {
        TextPipeline {
            options: options.clone(),
            stop: StopSet::new(&options.stopwords, options.lowercase),
            stemmer: options.stem.then(|| Stemmer::create(Algorithm::English)),
        }
    }

    /// The options this pipeline follows.
    pub fn options(&self) -> &PreprocessOptions {
        &self.options
    }

    /// The terms of `text`, in order, with repetitions.
    pub fn tokens(&self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        self.for_each_token(text, |t| out.push(t.to_owned()));
        out
    }

    /// Calls `f` with each term of `text`, in order; allocates only for words that
    /// need lowercasing or stemming.
    pub fn for_each_token(&self, text: &str, mut f: impl FnMut(&str)) {
        for piece in Self::pieces(text) {
            if let Some(term) = self.normalize_piece(piece) {
                f(&term);
            }
        }
    }

    /// Raw segmentation (steps 1–2): the words of `text` split at apostrophes, before
    /// lowercasing or filtering. Each piece is a slice of `text`.
    pub fn pieces(text: &str) -> impl Iterator<Item = &str> + '_ {
        text.unicode_words().flat_map(|w| w.split(APOSTROPHES)).filter(|p| !p.is_empty())
    }

    /// Steps 3–7 for one piece from [`Self::pieces`]: the term, or `None` if dropped.
    /// Pure function of the piece, so callers may cache results per distinct piece.
    pub fn normalize_piece<'a>(&self, piece: &'a str) -> Option<Cow<'a, str>> {
        let lowered: Cow<'a, str> = if self.options.lowercase && needs_lowercasing(piece) { Cow::Owned(piece.to_lowercase()) } else { Cow::Borrowed(piece) };
        if lowered.chars().count() < self.options.min_token_length {
            return None;
        }
        if !self.options.keep_numbers && !lowered.chars().any(char::is_alphabetic) {
            return None;
        }
        if self.stop.contains(&lowered) {
            return None;
        }
        match &self.stemmer {
            None => Some(lowered),
            Some(stemmer) => {
                let stemmed = stemmer.stem(&lowered);
                if stemmed == lowered {
                    Some(lowered)
                } else {
                    Some(Cow::Owned(stemmed.into_owned()))
                }
            }
        }
    }

    /// Normalizes a bag-of-words key like a token (lowercasing, length, number,
    /// stop-word and stemming rules) but without splitting: surrounding whitespace is
    /// trimmed and inner whitespace kept. `None` when the term is dropped.
    pub fn normalize_term(&self, term: &str) -> Option<String> {
        let trimmed = term.trim();
        if trimmed.is_empty() {
            return None;
        }
        self.normalize_piece(trimmed).map(Cow::into_owned)
    }
}

/// Whether `str::to_lowercase` would change `s` (cheap check to avoid allocating).
fn needs_lowercasing(s: &str) -> bool {
    if s.is_ascii() {
        s.bytes().any(|b| b.is_ascii_uppercase())
    } else {
        s.chars().any(|c| {
            let mut lower = c.to_lowercase();
            !(lower.next() == Some(c) && lower.next().is_none())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::preprocess::StopWords;

    fn pipe(f: impl FnOnce(&mut PreprocessOptions)) -> TextPipeline {
        let mut o = PreprocessOptions::default();
        f(&mut o);
        TextPipeline::new(&o)
    }

    #[test]
    fn unicode_lowercasing() {
        let p = pipe(|_| {});
        assert_eq!(p.tokens("Café naïve Über"), vec!["café", "naïve", "über"]);
        assert_eq!(p.tokens("ΛΌΓΟΣ Straße"), vec!["λόγος", "straße"]);
        assert_eq!(p.tokens("Привет, МИР!"), vec!["привет", "мир"]);
    }

    #[test]
    fn non_latin_words_survive() {
        let p = pipe(|_| {});
        // Hangul and Katakana words are segmented as whole words.
        assert_eq!(p.tokens("한국어 コンピュータ"), vec!["한국어", "コンピュータ"]);
        // Han ideographs come out one per word: dropped at the default length 2 …
        assert!(p.tokens("東京").is_empty());
        // … but kept with min_token_length 1.
        let p1 = pipe(|o| o.min_token_length = 1);
        assert_eq!(p1.tokens("東京"), vec!["東", "京"]);
    }

    #[test]
    fn punctuation_numbers_and_length() {
        let p = pipe(|o| o.stopwords = StopWords::None);
        assert_eq!(p.tokens("Hello, world!! x 2024 3.14 mp3 -- e-mail"), vec!["hello", "world", "mp3", "mail"]);
        let p = pipe(|o| {
            o.stopwords = StopWords::None;
            o.keep_numbers = true;
        });
        assert_eq!(p.tokens("in 2024 pi=3.14"), vec!["in", "2024", "pi", "3.14"]);
        let p = pipe(|o| {
            o.stopwords = StopWords::None;
            o.min_token_length = 4;
        });
        assert_eq!(p.tokens("the cat sat quietly über"), vec!["quietly", "über"]);
    }

    #[test]
    fn min_length_counts_chars_not_bytes() {
        let p = pipe(|o| {
            o.stopwords = StopWords::None;
            o.min_token_length = 3;
        });
        // "éé" is 4 bytes but 2 chars.
        assert!(p.tokens("éé").is_empty());
        assert_eq!(p.tokens("ééé"), vec!["ééé"]);
    }

    #[test]
    fn apostrophes_split() {
        let p = pipe(|_| {});
        assert_eq!(p.tokens("John's dog doesn't bark"), vec!["john", "dog", "bark"]);
        assert_eq!(p.tokens("Mary’s house"), vec!["mary", "house"]);
        let pieces: Vec<_> = TextPipeline::pieces("can't stop, won't stop").collect();
        assert_eq!(pieces, vec!["can", "t", "stop", "won", "t", "stop"]);
    }

    #[test]
    fn stop_words_removed() {
        let p = pipe(|_| {});
        assert_eq!(p.tokens("The quick brown fox jumps over the lazy dog and THE cat"), vec!["quick", "brown", "fox", "jumps", "lazy", "dog", "cat"]);
        let p = pipe(|o| o.stopwords = StopWords::None);
        assert_eq!(p.tokens("the fox"), vec!["the", "fox"]);
        let p = pipe(|o| o.stopwords = StopWords::List(vec!["Fox".into()]));
        assert_eq!(p.tokens("the Fox"), vec!["the"]);
    }

    #[test]
    fn no_lowercasing() {
        let p = pipe(|o| {
            o.lowercase = false;
            o.stopwords = StopWords::List(vec!["Fox".into()]);
        });
        assert_eq!(p.tokens("The Fox fox"), vec!["The", "fox"]);
    }

    #[test]
    fn stemming() {
        let p = pipe(|o| o.stem = true);
        assert_eq!(p.tokens("running connections"), vec!["run", "connect"]);
        assert_eq!(p.tokens("Connected CONNECTING"), vec!["connect", "connect"]);
        // Stop words are checked before stemming: "having" is a stop word.
        assert_eq!(p.tokens("having cats"), vec!["cat"]);
    }

    #[test]
    fn normalize_term_rules() {
        let p = pipe(|_| {});
        assert_eq!(p.normalize_term("  Hello "), Some("hello".into()));
        assert_eq!(p.normalize_term("New York"), Some("new york".into()));
        assert_eq!(p.normalize_term("the"), None);
        assert_eq!(p.normalize_term("THE"), None);
        assert_eq!(p.normalize_term("x"), None);
        assert_eq!(p.normalize_term("2024"), None);
        assert_eq!(p.normalize_term("   "), None);
        assert_eq!(p.normalize_term("don't"), None);
        let p = pipe(|o| {
            o.stem = true;
            o.keep_numbers = true;
        });
        assert_eq!(p.normalize_term("Connections"), Some("connect".into()));
        assert_eq!(p.normalize_term("2024"), Some("2024".into()));
    }

    #[test]
    fn tokens_match_normalize_term_for_single_words() {
        let p = pipe(|o| o.stem = true);
        for w in ["Running", "über", "Cats", "the", "a", "x1"] {
            let via_tokens = p.tokens(w).into_iter().next();
            assert_eq!(via_tokens, p.normalize_term(w), "{w}");
        }
    }

    #[test]
    fn lowercasing_check() {
        assert!(!needs_lowercasing("abc"));
        assert!(needs_lowercasing("aBc"));
        assert!(!needs_lowercasing("über"));
        assert!(needs_lowercasing("Über"));
        assert!(needs_lowercasing("ǅ")); // titlecase digraph
        assert!(!needs_lowercasing("東京"));
    }

    #[test]
    fn clone_keeps_behaviour() {
        let p = pipe(|o| o.stem = true);
        let q = p.clone();
        assert_eq!(q.tokens("running dogs"), p.tokens("running dogs"));
        assert_eq!(q.options(), p.options());
        assert!(format!("{q:?}").contains("TextPipeline"));
    }
}
