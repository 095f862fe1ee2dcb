//! NDJSON corpora: bytes in, line by line, a corpus out.
//!
//! Why it exists: one file must mean the same thing however it reaches topicd. An
//! NDJSON upload (`POST /v1/corpora`, streamed), `topicd fit --input` and the fuzz
//! targets all read it here: one document per line ([`super::input::document_from_value`],
//! strict keys), optional `{"tree": [...]}` lines before the first document adding
//! label-tree entries, blank lines skipped, every error naming its line. The reader
//! takes chunks as they arrive (a line may span chunks), so memory holds the corpus
//! being built and one partial line, never the whole upload. Each byte is scanned for a
//! newline once (a long line sent in small chunks costs its length, not its length
//! squared), and a line may hold at most a set number of bytes.

use super::input::{document_from_value, TreeEntry};
use super::like::LikeBase;
use super::{Corpus, CorpusBuilder, CorpusError, PreprocessOptions, TokenLimits};
use crate::unknown_keys::{describe_data_error, unknown_key_message};
use serde_json::Value;

/// Why NDJSON could not be read: a line that is not text or not JSON (the caller's
/// bytes are malformed), or a document or tree that is not valid (named by field and
/// line, as [`CorpusError`]).
#[derive(Debug, Clone, PartialEq)]
pub enum NdjsonError {
    NotUtf8 {
        line: usize,
    },
    NotJson {
        line: usize,
        message: String,
    },
    /// A line longer than the reader's limit (bytes), refused before it is read whole.
    LineTooLong {
        line: usize,
        limit: usize,
    },
    Invalid(CorpusError),
}

impl std::fmt::Display for NdjsonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NdjsonError::NotUtf8 { line } => write!(f, "line {line} is not UTF-8"),
            NdjsonError::NotJson { line, message } => write!(f, "line {line} is not valid JSON: {message}"),
            NdjsonError::LineTooLong { line, limit } => write!(f, "line {line} is longer than {limit} bytes"),
            NdjsonError::Invalid(e) => match e.line {
                Some(l) => write!(f, "line {l}: {}", e.message),
                None => write!(f, "{}", e.message),
            },
        }
    }
}

impl From<CorpusError> for NdjsonError {
    fn from(e: CorpusError) -> Self {
        NdjsonError::Invalid(e)
    }
}

/// Reads NDJSON pushed to it in chunks of any size.
pub struct NdjsonReader {
    options: PreprocessOptions,
    tree: Vec<TreeEntry>,
    /// Created at the first document, once the tree lines are read.
    builder: Option<CorpusBuilder>,
    /// The bytes of the line not yet ended (never a newline among them).
    pending: Vec<u8>,
    /// Most bytes one line may hold (without its newline).
    max_line_bytes: usize,
    /// Caps on a document's and the upload's tokens.
    token_limits: TokenLimits,
    /// Bytes searched for a newline so far: each byte once (checked by a test).
    bytes_scanned: u64,
    /// Lines seen so far (1-based numbers in errors).
    line: usize,
    documents: usize,
    /// The corpus the documents are preprocessed like, if any ([`super::like`]).
    like: Option<LikeBase>,
}

impl NdjsonReader {
    /// A reader whose lines and tokens are unbounded (the caller bounds the input).
    pub fn new(options: PreprocessOptions) -> Self {
        NdjsonReader {
            options,
            tree: Vec::new(),
            builder: None,
            pending: Vec::new(),
            max_line_bytes: usize::MAX,
            token_limits: TokenLimits::NONE,
            bytes_scanned: 0,
            line: 0,
            documents: 0,
            like: None,
        }
    }

    /// A reader of documents preprocessed like `base` ([`super::like`]): its options
    /// and label tree (tree lines are refused).
    pub fn like(base: LikeBase) -> Self {
        NdjsonReader { like: Some(base.clone()), ..Self::new(base.options) }
    }

    /// Refuse a line of more than `max_line_bytes` bytes as soon as that many have
    /// arrived without a newline.
    pub fn with_line_limit(mut self, max_line_bytes: usize) -> Self {
        self.max_line_bytes = max_line_bytes;
        self
    }

    /// Refuse documents and uploads over these token caps.
    pub fn with_token_limits(mut self, limits: TokenLimits) -> Self {
        self.token_limits = limits;
        self
    }

    fn new_builder(&self) -> Result<CorpusBuilder, CorpusError> {
        let builder = match &self.like {
            Some(base) => CorpusBuilder::like(base.clone())?,
            None => CorpusBuilder::new(self.options.clone(), &self.tree)?,
        };
        Ok(builder.with_token_limits(self.token_limits))
    }

    /// Read every line `chunk` completes; the rest waits for the next chunk. Only the
    /// new bytes are searched for a newline.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), NdjsonError> {
        let mut rest = chunk;
        while let Some(pos) = memchr_newline(rest) {
            self.bytes_scanned += pos as u64 + 1;
            self.check_line_length(self.pending.len() + pos)?;
            self.line += 1;
            if self.pending.is_empty() {
                self.read_line(&rest[..pos])?;
            } else {
                // The line began in an earlier chunk: `pending` holds no newline.
                self.pending.extend_from_slice(&rest[..pos]);
                let line = std::mem::take(&mut self.pending);
                self.read_line(&line)?;
            }
            rest = &rest[pos + 1..];
        }
        self.bytes_scanned += rest.len() as u64;
        self.check_line_length(self.pending.len() + rest.len())?;
        self.pending.extend_from_slice(rest);
        Ok(())
    }

    /// A line of `bytes` bytes so far: an error naming it when over the limit.
    fn check_line_length(&self, bytes: usize) -> Result<(), NdjsonError> {
        if bytes > self.max_line_bytes {
            return Err(NdjsonError::LineTooLong { line: self.line + 1, limit: self.max_line_bytes });
        }
        Ok(())
    }

    /// Read the last line (without a newline) and build the corpus.
    pub fn finish(mut self) -> Result<Corpus, NdjsonError> {
        if !self.pending.is_empty() {
            let line = std::mem::take(&mut self.pending);
            self.line += 1;
            self.read_line(&line)?;
        }
        let builder = match self.builder.take() {
            Some(b) => b,
            None => self.new_builder()?,
        };
        Ok(builder.finish()?)
    }

    fn read_line(&mut self, bytes: &[u8]) -> Result<(), NdjsonError> {
        let line = self.line;
        let text = std::str::from_utf8(bytes).map_err(|_| NdjsonError::NotUtf8 { line })?;
        if text.trim().is_empty() {
            return Ok(());
        }
        let value: Value = serde_json::from_str(text).map_err(|e| NdjsonError::NotJson { line, message: e.to_string() })?;
        if value.as_object().is_some_and(|o| o.contains_key("tree")) {
            if self.builder.is_some() {
                return Err(CorpusError::field("tree", "tree lines must come before the first document").with_line(line).into());
            }
            if self.like.is_some() {
                return Err(CorpusError::field("tree", "documents preprocessed like another corpus take its label tree: leave out tree lines")
                    .with_line(line)
                    .into());
            }
            let mut more = tree_from_line(value, line)?;
            self.tree.append(&mut more);
            return Ok(());
        }
        if self.builder.is_none() {
            self.builder = Some(self.new_builder()?);
        }
        let doc = document_from_value(value, self.documents, Some(line))?;
        self.builder.as_mut().expect("created above").add_document(doc, self.documents, Some(line)).map_err(|e| e.with_line(line))?;
        self.documents += 1;
        Ok(())
    }
}

/// The position of the first newline in `bytes`.
fn memchr_newline(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == b'\n')
}

/// The entries of a `{"tree": [...]}` line; an unknown key, in the line or in an entry,
/// is named with the nearest known one.
fn tree_from_line(value: Value, line: usize) -> Result<Vec<TreeEntry>, CorpusError> {
    let Value::Object(mut object) = value else { unreachable!("called for objects with a tree key") };
    if let Some(other) = object.keys().find(|k| k.as_str() != "tree") {
        return Err(CorpusError::field(other.clone(), unknown_key_message(other, &format!("in the tree line (line {line})"), &["tree"])).with_line(line));
    }
    let tree = object.remove("tree").expect("checked above");
    serde_path_to_error::deserialize(tree).map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." { "tree".to_string() } else { format!("tree{path}") };
        let (field, message) = describe_data_error(&path, &e.into_inner().to_string(), Some(line));
        CorpusError::field(field.unwrap_or(path), message).with_line(line)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(chunks: &[&str]) -> Result<Corpus, NdjsonError> {
        let mut r = NdjsonReader::new(PreprocessOptions::default());
        for c in chunks {
            r.push(c.as_bytes())?;
        }
        r.finish()
    }

    #[test]
    fn lines_may_span_chunks_and_the_last_needs_no_newline() {
        let whole = "{\"text\": \"apple pear apple\", \"labels\": [\"a\"]}\n\n{\"text\": \"pear plum\", \"labels\": [\"b\"]}";
        let one = read(&[whole]).unwrap();
        let split = read(&[&whole[..7], &whole[7..40], &whole[40..]]).unwrap();
        assert_eq!(one.num_documents(), 2);
        assert_eq!((split.num_documents(), split.num_terms(), split.stats.num_tokens), (one.num_documents(), one.num_terms(), one.stats.num_tokens));
    }

    /// A 4 MB line in 1 KB chunks: each push scans only its own bytes. Before, every
    /// push rescanned the whole pending line (a 4 MB line took 5.3 s over HTTP); the
    /// bound here is the count of bytes searched, not a time.
    #[test]
    fn a_long_line_in_small_chunks_is_read_once_and_long_lines_are_refused() {
        let text = "word ".repeat(800_000);
        let line = format!("{{\"text\": \"{text}\"}}\n");
        let mut r = NdjsonReader::new(PreprocessOptions::default());
        for chunk in line.as_bytes().chunks(1024) {
            r.push(chunk).unwrap();
        }
        assert_eq!(r.bytes_scanned, line.len() as u64, "every byte searched once");
        assert_eq!(r.finish().unwrap().stats.num_tokens, 800_000);

        let mut r = NdjsonReader::new(PreprocessOptions::default()).with_line_limit(100);
        r.push(b"{\"text\": \"short\"}\n").unwrap();
        let long = format!("{{\"text\": \"{}\"}}", "a".repeat(200));
        // Refused while the line is still arriving, naming line 2.
        assert_eq!(r.push(&long.as_bytes()[..150]).unwrap_err(), NdjsonError::LineTooLong { line: 2, limit: 100 });
        let mut r = NdjsonReader::new(PreprocessOptions::default()).with_line_limit(100);
        assert_eq!(r.push(format!("{long}\n").as_bytes()).unwrap_err(), NdjsonError::LineTooLong { line: 1, limit: 100 });
    }

    #[test]
    fn token_caps_name_the_document_and_its_line() {
        let limits = TokenLimits { per_document: 1000, per_input: 1500, input_flag: "max-upload-tokens" };
        let mut r = NdjsonReader::new(PreprocessOptions::default()).with_token_limits(limits);
        let e = r.push(b"{\"counts\": {\"git\": 4000000000}}\n").unwrap_err();
        assert!(matches!(&e, NdjsonError::Invalid(c) if c.field.as_deref() == Some("documents[0].counts") && c.line == Some(1)), "{e:?}");
        let mut r = NdjsonReader::new(PreprocessOptions::default()).with_token_limits(limits);
        r.push(b"{\"counts\": {\"git\": 1000}}\n").unwrap();
        let e = r.push(b"{\"counts\": {\"svn\": 501}}\n").unwrap_err();
        assert!(matches!(&e, NdjsonError::Invalid(c) if c.line == Some(2) && c.message.contains("--max-upload-tokens")), "{e:?}");
        let long = format!("{{\"text\": \"{}\"}}\n", "word ".repeat(1001));
        let e = NdjsonReader::new(PreprocessOptions::default()).with_token_limits(limits).push(long.as_bytes()).unwrap_err();
        assert!(matches!(&e, NdjsonError::Invalid(c) if c.field.as_deref() == Some("documents[0].text")), "{e:?}");
    }

    #[test]
    fn tree_lines_come_first_and_shape_the_labels() {
        let c = read(&[
            "{\"tree\": [{\"label\": \"fruit\"}, {\"label\": \"apple\", \"parent\": \"fruit\"}]}\n{\"text\": \"apple pear\", \"labels\": [\"apple\"]}\n",
        ])
        .unwrap();
        assert_eq!(c.stats.tree_depth, 2, "the tree line's parent edge is kept");
        let late = read(&["{\"text\": \"apple\", \"labels\": [\"a\"]}\n{\"tree\": [{\"label\": \"a\"}]}\n"]).unwrap_err();
        assert!(matches!(&late, NdjsonError::Invalid(e) if e.field.as_deref() == Some("tree") && e.line == Some(2)), "{late:?}");
    }

    #[test]
    fn errors_name_their_line_and_key() {
        let e = read(&["{\"text\": \"a\"}\n{\"text\": \"b\", \"lables\": [\"x\"]}\n"]).unwrap_err();
        match &e {
            NdjsonError::Invalid(c) => {
                assert_eq!((c.field.as_deref(), c.line), (Some("documents[1].lables"), Some(2)));
                assert!(c.message.contains("did you mean \"labels\""), "{}", c.message);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            read(&["{\"text\": \"a\"}\n{not json\n"]).unwrap_err(),
            NdjsonError::NotJson { line: 2, message: "key must be a string at line 1 column 2".into() }
        );
        let mut r = NdjsonReader::new(PreprocessOptions::default());
        assert_eq!(r.push(&[b'{', 0xff, b'}', b'\n']).unwrap_err(), NdjsonError::NotUtf8 { line: 1 });
        let e = read(&["{\"tree\": [], \"labels\": []}\n"]).unwrap_err();
        assert!(matches!(&e, NdjsonError::Invalid(c) if c.field.as_deref() == Some("labels") && c.line == Some(1)), "{e:?}");
        let e = read(&["{\"tree\": [{\"label\": \"a\", \"parnt\": \"b\"}]}\n"]).unwrap_err();
        assert!(matches!(&e, NdjsonError::Invalid(c) if c.field.as_deref() == Some("tree[0].parnt") && c.message.contains("did you mean \"parent\"")), "{e:?}");
    }
}
