//! How many tokens one document and one input may declare.
//!
//! Why it exists: a document's `counts` are a few bytes on the wire but become that many
//! tokens wherever a model samples or scores them (`{"counts": {"git": 4000000000}}` is
//! 60 bytes and four billion tokens). So every input that carries documents is checked
//! against these caps as each document is read, before anything grows with its tokens;
//! the server sets them from its flags (`--max-document-tokens`, and a per-request or
//! per-upload total), the offline tools leave them unbounded.

/// The caps: tokens of one document (text or counts) and of a whole input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenLimits {
    pub per_document: u64,
    pub per_input: u64,
    /// The flag that sets `per_input`, named in the error (`max-upload-tokens`, ...).
    pub input_flag: &'static str,
}

impl TokenLimits {
    /// No caps (offline tools, tests).
    pub const NONE: TokenLimits = TokenLimits { per_document: u64::MAX, per_input: u64::MAX, input_flag: "" };

    /// Why a document of `tokens` tokens at `field` is refused, if it is.
    pub fn check_document(&self, field: &str, tokens: u64) -> Result<(), String> {
        if tokens > self.per_document {
            return Err(format!(
                "{field} holds {tokens} tokens; the server's limit is {} tokens a document (--max-document-tokens): split the document",
                self.per_document
            ));
        }
        Ok(())
    }

    /// Why an input is refused once its documents hold `total` tokens, if it is.
    pub fn check_input(&self, total: u64) -> Result<(), String> {
        if total > self.per_input {
            return Err(format!(
                "the documents hold more than {} tokens in all, the server's limit (--{}): send fewer or shorter documents",
                self.per_input, self.input_flag
            ));
        }
        Ok(())
    }
}

/// The tokens a bag of words declares: the sum of its counts, saturating.
pub fn counted_tokens<'a>(counts: impl IntoIterator<Item = &'a u32>) -> u64 {
    counts.into_iter().fold(0u64, |sum, &c| sum.saturating_add(u64::from(c)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_name_their_flag_and_the_document() {
        let l = TokenLimits { per_document: 10, per_input: 15, input_flag: "max-upload-tokens" };
        assert!(l.check_document("documents[2].counts", 10).is_ok());
        let e = l.check_document("documents[2].counts", 11).unwrap_err();
        assert!(e.contains("documents[2].counts") && e.contains("--max-document-tokens"), "{e}");
        assert!(l.check_input(15).is_ok());
        assert!(l.check_input(16).unwrap_err().contains("--max-upload-tokens"));
        assert_eq!(counted_tokens(&[u32::MAX, u32::MAX]), 2 * u64::from(u32::MAX));
        assert!(TokenLimits::NONE.check_document("x", u64::MAX).is_ok());
    }
}
