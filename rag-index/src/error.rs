//! The one error type of the index.

use std::path::PathBuf;

/// Errors of the policy index. A query never fails for its syntax.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("i/o on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("tantivy: {0}")]
    Tantivy(#[from] tantivy::TantivyError),
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),
    #[error("index is corrupt or foreign: {0}")]
    Corrupt(String),
    #[error("policy version {0} appears twice in the documents to index")]
    DuplicateDocument(String),
    #[error("eval queries, line {line}: {message}")]
    EvalQuery { line: usize, message: String },
}

impl IndexError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        IndexError::Io {
            path: path.into(),
            source,
        }
    }
}
