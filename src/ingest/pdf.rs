//! Text extraction from PDF files with lopdf, page by page.

use std::path::Path;

use super::{ExtractedDoc, ExtractedPage};
use crate::{Error, Result};

/// Extract the text of every page of the PDF at `path` (in this process).
pub fn extract(path: &Path) -> Result<ExtractedDoc> {
    let pdf_err = |page: Option<u32>, reason: String| Error::Pdf {
        file: path.to_path_buf(),
        page,
        reason,
    };
    let doc = lopdf::Document::load(path).map_err(|e| pdf_err(None, e.to_string()))?;
    let mut pages = Vec::new();
    for (number, _id) in doc.get_pages() {
        let text = doc
            .extract_text(&[number])
            .map_err(|e| pdf_err(Some(number), e.to_string()))?;
        pages.push(ExtractedPage { number, text });
    }
    Ok(ExtractedDoc { title: None, pages })
}
