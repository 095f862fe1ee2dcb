//! Corpora: from uploaded documents to the sparse, numbered form every model reads.
//!
//! Why it exists: models see only integers (term ids, label ids, CSR rows); everything
//! about text (tokenising, stop words, stemming, vocabulary pruning, label paths and the
//! label tree) happens here, once, so that a model never touches a string and new
//! documents at prediction time are encoded exactly as the corpus was (see [`Lexicon`]).
//!
//! Invariant: nothing in this module knows about HTTP, SQL or tokio.

pub mod append;
pub mod blob;
pub mod builder;
pub mod built;
pub mod covariate_support;
pub mod covariates;
pub mod error;
pub mod excerpt;
pub mod input;
pub mod labels;
pub mod lexicon;
pub mod like;
pub mod meta;
pub mod ndjson;
pub mod order;
pub mod preprocess;
pub mod sparse;
pub mod stopwords;
pub mod synthetic;
pub mod token_limits;
pub mod tokenize;

pub use builder::CorpusBuilder;
pub use input::{RawDocument, TreeEntry};
pub use labels::LabelTree;
pub use lexicon::Lexicon;
pub use preprocess::{PreprocessOptions, StopWords};
pub use sparse::DocTermMatrix;

pub use builder::build_corpus;
pub use labels::LabelTreeBuilder;
pub use lexicon::EncodedDoc;
pub use order::TokenOrder;
pub use token_limits::TokenLimits;
pub use tokenize::TextPipeline;

pub use built::{Corpus, CorpusStats, FeatureMatrix};
pub use error::CorpusError;
