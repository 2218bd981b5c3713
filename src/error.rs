//! The one error type of the library.

use std::path::PathBuf;

/// Everything that can go wrong in Quire's core, with the facts a user needs.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A model file is not what it claims to be, or not a kind Quire can run.
    #[error("model file {path}: {reason}")]
    ModelFormat { path: PathBuf, reason: String },

    /// A model file or folder that should be there is not.
    #[error("model not found: {path} ({hint})")]
    ModelMissing { path: PathBuf, hint: String },

    /// A prompt does not fit in the model's context window.
    #[error("prompt needs {needed} tokens but the context window is {window}")]
    ContextOverflow { needed: usize, window: usize },

    /// A PDF could not be read (whole file, or one page when `page` is set).
    #[error("{file}{}: {reason}", page.map(|p| format!(" page {p}")).unwrap_or_default())]
    Pdf {
        file: PathBuf,
        page: Option<u32>,
        reason: String,
    },

    /// A template is unusable (missing or unknown variables).
    #[error("template: {0}")]
    Template(String),

    /// The user's request is invalid (bad option, unknown mode, ...).
    #[error("{0}")]
    Invalid(String),

    /// Input of a kind Quire does not take (a file that is not a PDF).
    #[error("{0}")]
    Unsupported(String),

    /// The index is not in a state to do this yet: its vectors were made by another
    /// embedding model than the one chosen (re-embed first).
    #[error("{0}")]
    Conflict(String),

    /// Something asked for (a document, a conversation) does not exist.
    #[error("not found: {0}")]
    NotFound(String),

    /// The work was cancelled by the user.
    #[error("cancelled")]
    Cancelled,

    /// The local index failed.
    #[error("index database: {0}")]
    Store(#[from] rusqlite::Error),

    /// The PostgreSQL index failed, or could not be reached (its message, with the
    /// server's detail when it sent one).
    #[error("index database (PostgreSQL): {0}")]
    Postgres(String),

    /// A device asked for is not compiled in or does not initialize (what is missing:
    /// the cargo feature, the driver, a library).
    #[error("device: {0}")]
    Device(String),

    /// An OpenAI-compatible model server could not be reached, refused the request,
    /// or broke off its answer.
    #[error("model server {url}: {reason}")]
    Server { url: String, reason: String },

    /// The tensor runtime failed.
    #[error("model runtime: {0}")]
    Candle(#[from] candle_core::Error),

    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An I/O error about `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// A model-format error about `path`.
    pub fn model_format(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        Error::ModelFormat {
            path: path.into(),
            reason: reason.into(),
        }
    }
}

impl From<postgres::Error> for Error {
    fn from(e: postgres::Error) -> Self {
        match e.as_db_error() {
            Some(db) => Error::Postgres(match db.detail() {
                Some(d) => format!("{} ({d})", db.message()),
                None => db.message().to_string(),
            }),
            None => Error::Postgres(e.to_string()),
        }
    }
}

/// The PDF extractor's errors, each as the variant of the same name.
impl From<quire_pdf::Error> for Error {
    fn from(e: quire_pdf::Error) -> Self {
        match e {
            quire_pdf::Error::Pdf { file, page, reason } => Error::Pdf { file, page, reason },
            quire_pdf::Error::Invalid(m) => Error::Invalid(m),
            quire_pdf::Error::Cancelled => Error::Cancelled,
            quire_pdf::Error::Io { path, source } => Error::Io { path, source },
        }
    }
}
