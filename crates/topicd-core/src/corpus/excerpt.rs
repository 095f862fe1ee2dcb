//! Documents' excerpts: the beginning of each uploaded text, as the user wrote it.
//!
//! Why it exists: a reader judges a topic by the documents most about it, and those must
//! read as the user uploaded them (case, punctuation, stop words, numbers), not as the
//! tokens preprocessing left. The whole text is not kept: an excerpt of at most
//! [`EXCERPT_CHARS`] characters, cut at a word boundary, bounds what a large upload adds
//! to its stored corpus (about as much as its token order for documents of 150 tokens).
//! Like `meta` it is a trailer of the corpus blob (see [`super::blob`]), so corpora stored
//! before it decode unchanged (without excerpts) and fits never read it. Only text
//! uploads have excerpts; a bag-of-words document has none.

/// The tag of the corpus blob's excerpt trailer.
pub const EXCERPT_TRAILER: u32 = 4;

/// Most characters (Unicode scalar values) of a document's text kept as its excerpt.
pub const EXCERPT_CHARS: usize = 600;

/// The excerpt of `text`: its whitespace-trimmed whole when it has at most
/// [`EXCERPT_CHARS`] characters, else its first characters up to the last whitespace
/// before the limit (or the limit itself, within one long word), followed by "…".
pub fn excerpt(text: &str) -> String {
    let text = text.trim();
    let Some((cut, _)) = text.char_indices().nth(EXCERPT_CHARS) else {
        return text.to_string();
    };
    let head = &text[..cut];
    let at_word = head.rfind(char::is_whitespace).filter(|&i| i > 0).map_or(head, |i| &head[..i]);
    format!("{}…", at_word.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_text_is_kept_whole() {
        assert_eq!(excerpt("  The Quick, brown fox!\n"), "The Quick, brown fox!");
        assert_eq!(excerpt(""), "");
    }

    #[test]
    fn a_long_text_is_cut_at_a_word_boundary() {
        let text = "word ".repeat(EXCERPT_CHARS);
        let e = excerpt(&text);
        assert!(e.ends_with("word…"), "{e:?}");
        assert!(e.chars().count() <= EXCERPT_CHARS + 1);
        assert!(e.chars().count() > EXCERPT_CHARS - 6, "cut at the last space before the limit");
    }

    #[test]
    fn one_long_word_is_cut_at_the_limit_on_a_character_boundary() {
        let text = "é".repeat(EXCERPT_CHARS + 10);
        let e = excerpt(&text);
        assert_eq!(e.chars().count(), EXCERPT_CHARS + 1);
        assert!(e.ends_with("é…"));
    }
}
