//! The one error every step of building a corpus reports: it names the field, the
//! document's line or the label at fault, so an upload's 4xx can point at it.

/// Why a corpus could not be built: names the field, document line or label at fault.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct CorpusError {
    /// A JSON-pointer-like path to the offending field, e.g. `documents[3].counts.foo`
    /// or `preprocess.max_df`; for NDJSON the field within the line.
    pub field: Option<String>,
    /// 1-based line number for NDJSON uploads, 0-based document index otherwise.
    pub line: Option<usize>,
    /// The offending label, when the error is about the label tree.
    pub label: Option<String>,
    pub message: String,
}

impl CorpusError {
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> Self {
        CorpusError { field: Some(field.into()), line: None, label: None, message: message.into() }
    }
    pub fn label(label: impl Into<String>, message: impl Into<String>) -> Self {
        CorpusError { field: None, line: None, label: Some(label.into()), message: message.into() }
    }
    pub fn with_line(mut self, line: usize) -> Self {
        self.line = Some(line);
        self
    }
}
