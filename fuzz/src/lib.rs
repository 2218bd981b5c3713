//! The extractor's own source files (`src/ingest/pdf/`), compiled here without the
//! rest of Quire: the fuzz build then instruments lopdf and the extractor only, not
//! candle, tokenizers and SQLite, and builds in a minute instead of a quarter hour.
//! What the extractor names from the crate (`Error`, `Result`, `ExtractedDoc`) is
//! stood in for below, with the same shapes.

use std::path::PathBuf;

#[path = "../../src/ingest/pdf/mod.rs"]
pub mod pdf;

/// Stands in for `quire::ingest`, for the paths the extractor uses.
pub mod ingest {
    pub use crate::{ExtractedDoc, ExtractedPage};
}

/// As `quire::ingest::ExtractedPage`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ExtractedPage {
    pub number: u32,
    pub text: String,
    #[serde(default)]
    pub ocr: bool,
    #[serde(default)]
    pub has_images: bool,
}

/// As `quire::ingest::ExtractedDoc`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ExtractedDoc {
    pub title: Option<String>,
    pub pages: Vec<ExtractedPage>,
}

/// The variants of `quire::Error` the extractor uses.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{file}: {reason}")]
    Pdf {
        file: PathBuf,
        page: Option<u32>,
        reason: String,
    },
    #[error("{0}")]
    Invalid(String),
    #[error("cancelled")]
    Cancelled,
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}
