//! Quire's PDF text extraction, with lopdf, page by page, with its own
//! content-stream interpreter: simple fonts with `/Encoding` and `/Differences`,
//! ToUnicode CMaps, Type0/CID fonts, Type3 and the standard 14, text in Form
//! XObjects, spaces and line breaks inferred from glyph positions, ligatures
//! normalized. A page without text (a scan) has empty text.
//!
//! [`extract`] runs in the calling process; [`extract_isolated`] and [`Extractor`] run
//! it in a child process with time and memory limits, which is what untrusted files
//! need and what Quire's indexing pipeline uses (as `quire::ingest::pdf`). A crate of
//! its own, so that the fuzz targets (`fuzz/`) build it without the rest of Quire.

use std::path::Path;

mod builtin;
mod cid;
mod cmap;
mod content;
mod encoding;
mod error;
mod font;
mod isolate;
mod layout;
mod resources;
mod table;
mod tables;

pub use encoding::normalize_ligatures;
pub use error::{Error, Result};
pub use isolate::{
    child_main, extract_isolated, serve_child, Extractor, Limits, CHILD_COMMAND, EXE_ENV, FAULT_ENV,
};
pub use table::{Params as TableParams, Table, CELL_GAP};

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
    /// The tables found in the page's text (the text keeps their cells as it reads
    /// them; each row's bytes in it are given). Absent from pages extracted before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tables: Vec<Table>,
}

/// What extraction gives for one PDF.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ExtractedDoc {
    /// The document's title from its metadata, if any.
    pub title: Option<String>,
    pub pages: Vec<ExtractedPage>,
}

/// The numbers of the pages of `doc` without text (scans, figures, blank pages).
pub fn pages_without_text(doc: &ExtractedDoc) -> Vec<u32> {
    doc.pages
        .iter()
        .filter(|p| p.text.trim().is_empty())
        .map(|p| p.number)
        .collect()
}

/// The most any single stream may decompress to (a guard against decompression bombs).
const MAX_STREAM: usize = 64 * 1024 * 1024;

/// Extract the text of every page of the PDF at `path` (in this process).
///
/// A document that cannot be opened is an error; a page whose content cannot be
/// read keeps the text read before the fault (possibly none).
pub fn extract(path: &Path) -> Result<ExtractedDoc> {
    let data = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    extract_bytes(path, &data)
}

/// [`extract`] from the bytes of a PDF; `path` only names it in errors.
pub fn extract_bytes(path: &Path, data: &[u8]) -> Result<ExtractedDoc> {
    extract_bytes_with(path, data, &TableParams::default())
}

/// [`extract`] with the table detector's thresholds given (for measuring them).
pub fn extract_with(path: &Path, tables: &TableParams) -> Result<ExtractedDoc> {
    let data = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    extract_bytes_with(path, &data, tables)
}

/// [`extract_bytes`] with the table detector's thresholds given.
pub fn extract_bytes_with(path: &Path, data: &[u8], params: &TableParams) -> Result<ExtractedDoc> {
    let pdf_err = |reason: String| Error::Pdf {
        file: path.to_path_buf(),
        page: None,
        reason,
    };
    if !data.windows(5).take(1024).any(|w| w == b"%PDF-") {
        return Err(pdf_err("not a PDF file (no %PDF- header)".into()));
    }
    let doc = lopdf::Document::load_mem(data).map_err(|e| match e {
        lopdf::Error::InvalidPassword | lopdf::Error::Decryption(_) => pdf_err(
            "encrypted: password-protected (the empty user password does not open it)".into(),
        ),
        e => pdf_err(format!("cannot parse: {e}")),
    })?;
    if doc.is_encrypted() && !doc.was_encrypted() {
        return Err(pdf_err(
            "encrypted: password-protected (the empty user password does not open it)".into(),
        ));
    }
    let pages = doc.get_pages();
    if pages.is_empty() {
        return Err(pdf_err("no readable pages (broken page tree)".into()));
    }
    let title = doc
        .trailer
        .get(b"Info")
        .ok()
        .and_then(|o| doc.dereference(o).ok())
        .and_then(|(_, o)| o.as_dict().ok())
        .and_then(|info| info.get(b"Title").ok())
        .and_then(|o| doc.dereference(o).ok())
        .and_then(|(_, o)| lopdf::decode_text_string(o).ok())
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty());
    let mut fonts = content::FontCache::new();
    let mut out = Vec::with_capacity(pages.len());
    for (number, page_id) in pages {
        let (text, tables, has_images) = page_text(&doc, page_id, &mut fonts, params);
        out.push(ExtractedPage {
            number,
            text,
            ocr: false,
            has_images,
            tables,
        });
    }
    Ok(ExtractedDoc { title, pages: out })
}

fn page_text(
    doc: &lopdf::Document,
    page_id: lopdf::ObjectId,
    fonts: &mut content::FontCache,
    params: &TableParams,
) -> (String, Vec<Table>, bool) {
    let resources = resources::page_resources(doc, page_id);
    let Ok(data) = doc.get_page_content_with_limit(page_id, MAX_STREAM) else {
        return (String::new(), Vec::new(), false);
    };
    let mut interp = content::Interpreter::new(doc, fonts);
    // A fault in the stream keeps the text read before it.
    let _ = interp.run(&data, &resources, content::IDENTITY);
    let (text, tables) = std::mem::take(&mut interp.layout).finish(params);
    (text, tables, interp.images)
}
