//! The extractor's error type: what a user needs to know of a PDF that could not be
//! read. The `quire` library turns each variant into its own `quire::Error` of the
//! same name.

use std::path::PathBuf;

/// Everything that can go wrong in extraction.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A PDF could not be read (whole file, or one page when `page` is set).
    #[error("{file}{}: {reason}", page.map(|p| format!(" page {p}")).unwrap_or_default())]
    Pdf {
        file: PathBuf,
        page: Option<u32>,
        reason: String,
    },

    /// Extraction cannot run as asked (no binary to run its child processes from).
    #[error("{0}")]
    Invalid(String),

    /// The extraction was cancelled (its child process killed).
    #[error("cancelled")]
    Cancelled,

    /// Reading a file or running the child process failed.
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
}
