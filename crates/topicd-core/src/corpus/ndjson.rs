//! NDJSON corpora: bytes in, line by line, a corpus out.
//!
//! Why it exists: one file must mean the same thing however it reaches topicd. An
//! NDJSON upload (`POST /v1/corpora`, streamed), `topicd fit --input` and the fuzz
//! targets all read it here: one document per line ([`super::input::document_from_value`],
//! strict keys), optional `{"tree": [...]}` lines before the first document adding
//! label-tree entries, blank lines skipped, every error naming its line. The reader
//! takes chunks as they arrive (a line may span chunks), so memory holds the corpus
//! being built and one partial line, never the whole upload.

use super::input::{document_from_value, TreeEntry};
use super::{Corpus, CorpusBuilder, CorpusError, PreprocessOptions};
use crate::unknown_keys::{describe_data_error, unknown_key_message};
use serde_json::Value;

/// Why NDJSON could not be read: a line that is not text or not JSON (the caller's
/// bytes are malformed), or a document or tree that is not valid (named by field and
/// line, as [`CorpusError`]).
#[derive(Debug, Clone, PartialEq)]
pub enum NdjsonError {
    NotUtf8 { line: usize },
    NotJson { line: usize, message: String },
    Invalid(CorpusError),
}

impl std::fmt::Display for NdjsonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NdjsonError::NotUtf8 { line } => write!(f, "line {line} is not UTF-8"),
            NdjsonError::NotJson { line, message } => write!(f, "line {line} is not valid JSON: {message}"),
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
    /// The bytes of the line not yet ended.
    pending: Vec<u8>,
    /// Lines seen so far (1-based numbers in errors).
    line: usize,
    documents: usize,
}

impl NdjsonReader {
    pub fn new(options: PreprocessOptions) -> Self {
        NdjsonReader { options, tree: Vec::new(), builder: None, pending: Vec::new(), line: 0, documents: 0 }
    }

    /// Read every line `chunk` completes; the rest waits for the next chunk.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), NdjsonError> {
        self.pending.extend_from_slice(chunk);
        let mut start = 0;
        while let Some(pos) = self.pending[start..].iter().position(|&b| b == b'\n') {
            let line = self.pending[start..start + pos].to_vec();
            start += pos + 1;
            self.line += 1;
            if let Err(e) = self.read_line(&line) {
                self.pending.drain(..start);
                return Err(e);
            }
        }
        self.pending.drain(..start);
        Ok(())
    }

    /// Read the last line (without a newline) and build the corpus.
    pub fn finish(mut self) -> Result<Corpus, NdjsonError> {
        if !self.pending.is_empty() {
            let line = std::mem::take(&mut self.pending);
            self.line += 1;
            self.read_line(&line)?;
        }
        let builder = match self.builder {
            Some(b) => b,
            None => CorpusBuilder::new(self.options, &self.tree)?,
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
            let mut more = tree_from_line(value, line)?;
            self.tree.append(&mut more);
            return Ok(());
        }
        if self.builder.is_none() {
            self.builder = Some(CorpusBuilder::new(self.options.clone(), &self.tree)?);
        }
        let doc = document_from_value(value, self.documents, Some(line))?;
        self.builder.as_mut().expect("created above").add_document(doc, self.documents, Some(line)).map_err(|e| e.with_line(line))?;
        self.documents += 1;
        Ok(())
    }
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
