//! PDF ingestion: text extraction ([`pdf`], in child processes), text recognition for
//! scanned pages ([`ocr`]), splitting into chunks, and the indexing
//! pipeline with its progress events ([`IndexEvent`]).

mod events;
pub mod ocr;
pub mod pdf;
pub mod pipeline;
pub mod split;

pub use events::IndexEvent;

/// The text of one page.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ExtractedPage {
    /// 1-based physical page number.
    pub number: u32,
    /// The page's text; empty for a page without text (e.g. a scan).
    pub text: String,
    /// The text was recognized from the page's image (OCR), not read from its text layer.
    #[serde(default)]
    pub ocr: bool,
    /// The page draws an image: a page without text and without one (a blank page)
    /// is not worth recognizing.
    #[serde(default)]
    pub has_images: bool,
}

/// What extraction gives for one PDF.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ExtractedDoc {
    /// The document's title from its metadata, if any.
    pub title: Option<String>,
    pub pages: Vec<ExtractedPage>,
}
