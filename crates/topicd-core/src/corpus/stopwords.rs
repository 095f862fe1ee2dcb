//! The built-in English stop-word list and the set used to filter tokens.
//!
//! Why it exists: topic models waste their topics on function words ("the", "of",
//! "and") unless they are removed, and the service must not depend on an external data
//! file for that. The list is lowercase; it contains common English function words,
//! full contractions ("don't") and the fragments left when the tokenizer splits a
//! contraction at its apostrophe ("don", "ll", "ve").

use std::collections::HashSet;

use super::preprocess::StopWords;

/// Common English function words, lowercase and without duplicates.
#[rustfmt::skip]
const ENGLISH: &[&str] = &[
    "a", "about", "above", "across", "after", "afterwards", "again", "against", "ain",
    "all", "almost", "alone", "along", "already", "also", "although", "always", "am",
    "among", "amongst", "an", "and", "another", "any", "anyhow", "anyone", "anything",
    "anyway", "anywhere", "are", "aren", "aren't", "around", "as", "at", "be", "became",
    "because", "become", "becomes", "been", "before", "beforehand", "behind", "being",
    "below", "beside", "besides", "between", "beyond", "both", "but", "by", "can", "cannot",
    "can't", "could", "couldn", "couldn't", "d", "did", "didn", "didn't", "do", "does",
    "doesn", "doesn't", "doing", "don", "don't", "done", "down", "during", "each", "either",
    "else", "elsewhere", "enough", "etc", "even", "ever", "every", "everyone", "everything",
    "everywhere", "except", "few", "for", "former", "formerly", "from", "further",
    "furthermore", "had", "hadn", "hadn't", "has", "hasn", "hasn't", "have", "haven",
    "haven't", "having", "he", "hence", "her", "here", "hereafter", "hereby", "herein",
    "hers", "herself", "him", "himself", "his", "how", "however", "i", "ie", "if", "in",
    "indeed", "into", "is", "isn", "isn't", "it", "it's", "its", "itself", "just", "least",
    "less", "ll", "m", "ma", "many", "may", "me", "meanwhile", "might", "mightn",
    "mightn't", "more", "moreover", "most", "mostly", "much", "must", "mustn", "mustn't",
    "my", "myself", "namely", "needn", "needn't", "neither", "never", "nevertheless", "no",
    "nobody", "none", "nor", "not", "nothing", "now", "nowhere", "o", "of", "off", "often",
    "on", "once", "only", "onto", "or", "other", "others", "otherwise", "our", "ours",
    "ourselves", "out", "over", "own", "per", "perhaps", "rather", "re", "s", "same",
    "shan", "shan't", "she", "she's", "should", "shouldn", "shouldn't", "should've",
    "since", "so", "some", "somehow", "someone", "something", "sometimes", "somewhere",
    "still", "such", "t", "than", "that", "that'll", "the", "their", "theirs", "them",
    "themselves", "then", "thence", "there", "thereafter", "thereby", "therefore",
    "therein", "these", "they", "this", "those", "though", "through", "throughout", "thus",
    "to", "together", "too", "toward", "towards", "under", "unless", "until", "up", "upon",
    "us", "ve", "very", "via", "was", "wasn", "wasn't", "we", "were", "weren", "weren't",
    "what", "whatever", "when", "whence", "whenever", "where", "whereas", "whereby",
    "wherein", "whereupon", "wherever", "whether", "which", "while", "whither", "who",
    "whoever", "whole", "whom", "whose", "why", "will", "with", "within", "without", "won",
    "won't", "would", "wouldn", "wouldn't", "y", "yet", "you", "you'd", "you'll", "your",
    "you're", "yours", "yourself", "yourselves", "you've",
];

/// The built-in English stop-word list (lowercase).
pub fn english() -> &'static [&'static str] {
    ENGLISH
}

/// A set of stop words ready for lookups by `&str`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StopSet {
    words: HashSet<String>,
}

impl StopSet {
    /// Builds the set for `stopwords`. With `lowercase`, user-supplied words are
    /// lowercased so they match lowercased tokens; without it they are kept as given
    /// (the built-in list is lowercase, so it then only matches lowercase tokens).
    pub fn new(stopwords: &StopWords, lowercase: bool) -> Self {
        let words = match stopwords {
            StopWords::English => ENGLISH.iter().map(|w| (*w).to_owned()).collect(),
            StopWords::None => HashSet::new(),
            StopWords::List(list) => list
                .iter()
                .map(|w| {
                    let w = w.trim();
                    if lowercase {
                        w.to_lowercase()
                    } else {
                        w.to_owned()
                    }
                })
                .filter(|w| !w.is_empty())
                .collect(),
        };
        StopSet { words }
    }

    /// Whether `word` is a stop word (exact match).
    pub fn contains(&self, word: &str) -> bool {
        self.words.contains(word)
    }

    /// Number of distinct stop words.
    pub fn len(&self) -> usize {
        self.words.len()
    }

    /// Whether the set is empty (stop-word removal disabled).
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english_list_is_sane() {
        let list = english();
        assert!(list.len() >= 170 && list.len() <= 320, "len {}", list.len());
        for w in ["the", "and", "of", "a", "is", "don", "don't", "ll"] {
            assert!(list.contains(&w), "missing {w}");
        }
        for w in ["topic", "model", "computer", "music"] {
            assert!(!list.contains(&w), "{w} should not be a stop word");
        }
        let unique: HashSet<_> = list.iter().collect();
        assert_eq!(unique.len(), list.len(), "duplicates in the list");
        assert!(list.iter().all(|w| *w == w.to_lowercase() && !w.is_empty()));
    }

    #[test]
    fn stop_set_from_options() {
        let s = StopSet::new(&StopWords::English, true);
        assert!(s.contains("the"));
        assert!(!s.contains("The"));
        assert_eq!(s.len(), english().len());

        let s = StopSet::new(&StopWords::None, true);
        assert!(s.is_empty());
        assert!(!s.contains("the"));

        let list = StopWords::List(vec!["Foo".into(), " bar ".into(), "".into()]);
        let s = StopSet::new(&list, true);
        assert!(s.contains("foo") && s.contains("bar"));
        assert!(!s.contains("Foo"));
        assert_eq!(s.len(), 2);

        let s = StopSet::new(&list, false);
        assert!(s.contains("Foo") && !s.contains("foo"));
    }
}
