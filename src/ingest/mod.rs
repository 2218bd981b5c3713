//! PDF ingestion: text extraction ([`pdf`], in child processes: the `quire-pdf` crate),
//! text recognition for scanned pages ([`ocr`]), splitting into chunks, and the
//! indexing pipeline with its progress events ([`IndexEvent`]).

mod events;
pub mod ocr;
pub mod pipeline;
pub mod split;

pub use events::IndexEvent;
/// The PDF text extractor (the `quire-pdf` crate); its errors become [`crate::Error`]'s.
pub use quire_pdf as pdf;
/// What extraction gives: a document's pages and their text.
pub use quire_pdf::{ExtractedDoc, ExtractedPage};
