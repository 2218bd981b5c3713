//! Poppler's `pdftotext`, the reference the extraction benchmark compares Quire with
//! and the stand-in ingestion of the retrieval benchmark: the text of a PDF, one
//! string per page.

use std::path::Path;
use std::process::Command;

use quire::{Error, Result};

/// How `pdftotext` lays out a page's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `-layout`: the physical layout, columns side by side as on the page.
    Physical,
    /// The default: text in reading order.
    Reading,
}

/// The text of each page of `pdf` by `pdftotext` (UTF-8, pages separated by form
/// feeds in its output).
pub fn pages(pdf: &Path, layout: Layout) -> Result<Vec<String>> {
    let mut cmd = Command::new("pdftotext");
    if layout == Layout::Physical {
        cmd.arg("-layout");
    }
    let out = cmd
        .args(["-q", "-enc", "UTF-8"])
        .arg(pdf)
        .arg("-")
        .output()
        .map_err(|e| Error::Pdf {
            file: pdf.to_path_buf(),
            page: None,
            reason: format!("cannot run pdftotext (install poppler-utils): {e}"),
        })?;
    if !out.status.success() {
        return Err(Error::Pdf {
            file: pdf.to_path_buf(),
            page: None,
            reason: format!("pdftotext failed: {}", String::from_utf8_lossy(&out.stderr)),
        });
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut pages: Vec<String> = text.split('\u{c}').map(str::to_string).collect();
    // pdftotext ends every page with a form feed, the last one too.
    if pages.last().is_some_and(|p| p.trim().is_empty()) {
        pages.pop();
    }
    Ok(pages)
}
