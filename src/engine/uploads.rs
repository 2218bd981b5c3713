//! Uploaded PDFs: what the HTTP server receives from a browser is kept in the data
//! directory's `uploads/` folder and indexed from there. Here, once: the folder, the
//! check that the bytes are a PDF, a file name safe to create, and a name that does
//! not overwrite an earlier upload. The server only hands the bytes over.

use std::path::{Path, PathBuf};

use super::Engine;
use crate::{Error, Result};

/// The uploads folder of a data directory.
pub(super) fn dir(data_dir: &Path) -> PathBuf {
    data_dir.join("uploads")
}

/// Whether `bytes` start like a PDF: the `%PDF-` header, at the start or (as readers
/// tolerate) within the first KiB.
pub fn looks_like_pdf(bytes: &[u8]) -> bool {
    bytes.starts_with(b"%PDF-") || bytes.windows(5).take(1024).any(|w| w == b"%PDF-")
}

/// A file name safe to create: the last path part, no control characters, no leading
/// dots; `upload.pdf` when nothing is left.
pub fn sanitize_file_name(name: &str) -> String {
    let base = name.rsplit(['/', '\\']).next().unwrap_or("");
    let clean: String = base
        .chars()
        .filter(|c| !c.is_control())
        .collect::<String>()
        .trim_start_matches('.')
        .to_string();
    if clean.is_empty() {
        "upload.pdf".into()
    } else {
        clean
    }
}

/// `dir/name`, or `dir/stem (N).ext` for the first N that is free.
fn unique_path(dir: &Path, name: &str) -> PathBuf {
    let p = dir.join(name);
    if !p.exists() {
        return p;
    }
    let (stem, ext) = match name.rsplit_once('.') {
        Some((s, e)) => (s.to_string(), format!(".{e}")),
        None => (name.to_string(), String::new()),
    };
    (1..)
        .map(|i| dir.join(format!("{stem} ({i}){ext}")))
        .find(|p| !p.exists())
        .unwrap_or(p)
}

impl Engine {
    /// Keep an uploaded file (`name` as the client gave it) in the uploads folder,
    /// under a safe and unused name, and return its path for [`Engine::index`]. Bytes
    /// that are not a PDF are refused ([`Error::Unsupported`]) and nothing is written.
    pub fn save_upload(&self, name: &str, bytes: &[u8]) -> Result<PathBuf> {
        let name = sanitize_file_name(name);
        if !looks_like_pdf(bytes) {
            return Err(Error::Unsupported(format!(
                "{name} is not a PDF (no %PDF- header)"
            )));
        }
        let dir = dir(self.data_dir());
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let path = unique_path(&dir, &name);
        std::fs::write(&path, bytes).map_err(|e| Error::io(&path, e))?;
        Ok(path)
    }

    /// Whether `path` is a file Quire keeps in its uploads folder (removed with its
    /// document).
    pub(super) fn is_upload(&self, path: &Path) -> bool {
        let uploads = dir(self.data_dir());
        let uploads = std::fs::canonicalize(&uploads).unwrap_or(uploads);
        path.starts_with(&uploads)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn file_names_are_sanitized() {
        assert_eq!(sanitize_file_name("../../etc/passwd"), "passwd");
        assert_eq!(sanitize_file_name("C:\\x\\a.pdf"), "a.pdf");
        assert_eq!(sanitize_file_name(".."), "upload.pdf");
        assert_eq!(sanitize_file_name("ok.pdf"), "ok.pdf");
        assert_eq!(sanitize_file_name("a\u{7}b.pdf"), "ab.pdf");
    }

    #[test]
    fn pdfs_are_told_from_other_bytes() {
        assert!(looks_like_pdf(b"%PDF-1.7\n..."));
        assert!(looks_like_pdf(b"\xef\xbb\xbf%PDF-1.4"));
        assert!(!looks_like_pdf(b"just some text, not a PDF at all"));
        assert!(!looks_like_pdf(b""));
    }

    #[test]
    fn uploads_never_overwrite() {
        let d = tempfile::tempdir().unwrap();
        let a = unique_path(d.path(), "x.pdf");
        std::fs::write(&a, b"1").unwrap();
        let b = unique_path(d.path(), "x.pdf");
        assert_eq!(b.file_name().unwrap(), "x (1).pdf");
    }
}
