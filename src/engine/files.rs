//! A document's own PDF, for a viewer: the file an indexed document came from, found
//! by the document's id alone (no path from a client reaches the file system) and
//! handed out only once it is known to hold the very bytes that were indexed (their
//! sha256, as the pipeline recorded it). A moved, deleted or changed file is refused
//! with the reason; a different file is never served in its place.
//!
//! A viewer reads a file in many range requests, so a check is remembered per document
//! while the file looks the same (length, modification time and, on Unix, its inode
//! and change time); when any of them differs, the bytes are hashed again.

use std::collections::HashMap;
use std::fs::{File, Metadata};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use super::{lock, uploads, DocumentFile, Engine};
use crate::ingest::pipeline::content_hash;
use crate::{Error, Result};

/// A file modified this recently may be modified again within the resolution of its
/// timestamps without them changing, so its check is not remembered (git's "racily
/// clean" entries).
const RACY: Duration = Duration::from_secs(2);

/// What a file looked like when its bytes were checked: while it still looks like
/// this, it still holds them.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
    /// Device, inode, change time (s, ns): a file put in its place, or any write,
    /// changes them, and unlike the modification time they cannot be set back.
    #[cfg(unix)]
    identity: (u64, u64, i64, i64),
}

impl Stamp {
    fn of(m: &Metadata) -> Self {
        #[cfg(unix)]
        use std::os::unix::fs::MetadataExt;
        Self {
            len: m.len(),
            modified: m.modified().ok(),
            #[cfg(unix)]
            identity: (m.dev(), m.ino(), m.ctime(), m.ctime_nsec()),
        }
    }

    /// Whether the file was modified less than [`RACY`] before `now` (or when its time
    /// cannot be told).
    fn racy(&self, now: SystemTime) -> bool {
        self.modified
            .is_none_or(|m| now.duration_since(m).is_ok_and(|d| d < RACY) || m > now)
    }
}

/// The files checked so far: per document id, the hash they matched and how the file
/// looked then.
#[derive(Debug, Default)]
pub(super) struct Verified(Mutex<HashMap<i64, (String, Stamp)>>);

impl Verified {
    fn holds(&self, id: i64, hash: &str, stamp: &Stamp) -> bool {
        lock(&self.0)
            .get(&id)
            .is_some_and(|(h, s)| h == hash && s == stamp)
    }

    fn remember(&self, id: i64, hash: &str, stamp: Stamp) {
        lock(&self.0).insert(id, (hash.to_string(), stamp));
    }

    pub(super) fn forget(&self, id: i64) {
        lock(&self.0).remove(&id);
    }
}

fn moved(name: &str, path: &Path) -> Error {
    Error::NotFound(format!(
        "\"{name}\" is no longer at {}: it was moved or deleted after it was indexed; \
         add it again to view it",
        path.display()
    ))
}

fn changed(name: &str, path: &Path) -> Error {
    Error::Conflict(format!(
        "\"{name}\" at {} has changed since it was indexed; re-index it to view it",
        path.display()
    ))
}

/// Open for reading only. On Unix without blocking: a FIFO put at the path must not
/// hang the open (it is refused below as not a regular file).
fn open(path: &Path) -> std::io::Result<File> {
    let mut o = std::fs::OpenOptions::new();
    o.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(libc::O_NONBLOCK);
    }
    o.open(path)
}

impl DocumentFile {
    /// `len` bytes from `start`, read from the checked file.
    pub fn read_range(&mut self, start: u64, len: usize) -> Result<Vec<u8>> {
        let mut buf = vec![0; len];
        self.file
            .seek(SeekFrom::Start(start))
            .and_then(|_| self.file.read_exact(&mut buf))
            .map_err(|e| Error::io(&self.file_name, e))?;
        Ok(buf)
    }
}

impl Engine {
    /// The file of indexed document `id`, open at its start, checked to hold the bytes
    /// that were indexed. A file no longer there is [`Error::NotFound`]; one whose bytes
    /// differ is [`Error::Conflict`]. Documents that failed to index are served too:
    /// their hash was recorded all the same.
    pub fn document_file(&self, id: i64) -> Result<DocumentFile> {
        self.open_document_file(id).map(|(f, _)| f)
    }

    /// The whole checked file of document `id`, with its name (for the desktop
    /// window, which receives bytes rather than a stream).
    pub fn read_document_file(&self, id: i64) -> Result<(String, Vec<u8>)> {
        let (mut doc, bytes) = self.open_document_file(id)?;
        if let Some(bytes) = bytes {
            return Ok((doc.file_name, bytes));
        }
        let len = usize::try_from(doc.len)
            .map_err(|_| Error::Invalid(format!("\"{}\" is too large", doc.file_name)))?;
        let bytes = doc.read_range(0, len)?;
        Ok((doc.file_name, bytes))
    }

    /// The checked file, and its bytes when they were read to check them.
    fn open_document_file(&self, id: i64) -> Result<(DocumentFile, Option<Vec<u8>>)> {
        let doc = self
            .store()
            .document(id)?
            .ok_or_else(|| Error::NotFound(format!("document {id}")))?;
        let path = PathBuf::from(&doc.path);
        let name = doc.file_name;
        if doc.hash.is_empty() {
            return Err(Error::Conflict(format!(
                "\"{name}\" has no record of its content; re-index it to view it"
            )));
        }
        let mut file = match open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.verified.forget(id);
                return Err(moved(&name, &path));
            }
            Err(e) => return Err(Error::io(&path, e)),
        };
        let meta = file.metadata().map_err(|e| Error::io(&path, e))?;
        if !meta.is_file() {
            self.verified.forget(id);
            return Err(changed(&name, &path));
        }
        let stamp = Stamp::of(&meta);
        let handed = |file| DocumentFile {
            file,
            len: stamp.len,
            file_name: name.clone(),
        };
        if self.verified.holds(id, &doc.hash, &stamp) {
            return Ok((handed(file), None));
        }
        self.verified.forget(id);
        let now = SystemTime::now();
        let mut bytes = Vec::with_capacity(stamp.len.min(1 << 30) as usize);
        file.read_to_end(&mut bytes)
            .map_err(|e| Error::io(&path, e))?;
        if bytes.len() as u64 != stamp.len || content_hash(&bytes) != doc.hash {
            return Err(changed(&name, &path));
        }
        if !uploads::looks_like_pdf(&bytes) {
            return Err(Error::Unsupported(format!("\"{name}\" is not a PDF")));
        }
        file.seek(SeekFrom::Start(0))
            .map_err(|e| Error::io(&path, e))?;
        // Remembered only when the file did not change while it was read, and not
        // too recently before.
        let after = file.metadata().map(|m| Stamp::of(&m)).ok();
        if after.as_ref() == Some(&stamp) && !stamp.racy(now) {
            self.verified.remember(id, &doc.hash, stamp.clone());
        }
        Ok((handed(file), Some(bytes)))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::engine::EngineConfig;

    const HOUR: Duration = Duration::from_secs(3600);

    fn pdf(fill: u8) -> Vec<u8> {
        let mut b = b"%PDF-1.4\n".to_vec();
        b.resize(4096, fill);
        b
    }

    /// An engine on a fresh data directory, and the id of a document recorded for
    /// `path` as it is now (as a failed document: no embedding model needed).
    fn recorded(dir: &Path, path: &Path) -> (Engine, i64) {
        let engine = Engine::open(EngineConfig {
            data_dir: dir.join("data"),
            store: None,
            ..EngineConfig::default()
        })
        .unwrap();
        let bytes = std::fs::read(path).unwrap();
        let id = engine
            .store()
            .insert_failed(
                &path.display().to_string(),
                &content_hash(&bytes),
                bytes.len() as u64,
                "no text",
            )
            .unwrap();
        (engine, id)
    }

    fn write(path: &Path, bytes: &[u8], modified: SystemTime) {
        std::fs::write(path, bytes).unwrap();
        File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(modified)
            .unwrap();
    }

    #[test]
    fn a_changed_file_is_refused_even_after_a_remembered_check() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.pdf");
        let then = SystemTime::now() - 2 * HOUR;
        write(&path, &pdf(b'a'), then);
        let (engine, id) = recorded(dir.path(), &path);

        let (name, bytes) = engine.read_document_file(id).unwrap();
        assert_eq!((name.as_str(), bytes), ("a.pdf", pdf(b'a')));
        assert!(lock(&engine.verified.0).contains_key(&id), "not remembered");
        // Served from the remembered check: the same bytes, from the same file.
        let mut f = engine.document_file(id).unwrap();
        assert_eq!(f.len, 4096);
        assert_eq!(f.read_range(4090, 6).unwrap(), b"aaaaaa");
        assert_eq!(engine.read_document_file(id).unwrap().1, pdf(b'a'));

        // Same length, other bytes, another modification time.
        write(&path, &pdf(b'b'), then + HOUR);
        let e = engine.document_file(id).unwrap_err();
        assert!(matches!(e, Error::Conflict(_)), "{e}");
        assert!(
            e.to_string().contains("has changed since it was indexed"),
            "{e}"
        );
        assert!(engine.read_document_file(id).is_err());
        assert!(!lock(&engine.verified.0).contains_key(&id));

        // The indexed bytes back again: served again.
        write(&path, &pdf(b'a'), then);
        assert_eq!(engine.read_document_file(id).unwrap().1, pdf(b'a'));

        std::fs::remove_file(&path).unwrap();
        let e = engine.document_file(id).unwrap_err();
        assert!(matches!(e, Error::NotFound(_)), "{e}");
        assert!(e.to_string().contains("is no longer at"), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn a_file_in_place_of_the_indexed_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.pdf");
        let then = SystemTime::now() - 2 * HOUR;
        write(&path, &pdf(b'a'), then);
        let (engine, id) = recorded(dir.path(), &path);
        engine.document_file(id).unwrap();
        // Another file renamed over it, with the same length and time.
        let other = dir.path().join("b.pdf");
        write(&other, &pdf(b'b'), then);
        std::fs::rename(&other, &path).unwrap();
        let e = engine.read_document_file(id).unwrap_err();
        assert!(matches!(e, Error::Conflict(_)), "{e}");
    }

    #[test]
    fn a_fresh_file_is_checked_each_time_and_unknown_ids_are_not_found() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new.pdf");
        std::fs::write(&path, pdf(b'n')).unwrap();
        let (engine, id) = recorded(dir.path(), &path);
        assert_eq!(engine.read_document_file(id).unwrap().1, pdf(b'n'));
        assert!(lock(&engine.verified.0).is_empty(), "a racy check was kept");
        let e = engine.document_file(id + 1).unwrap_err();
        assert!(matches!(e, Error::NotFound(_)), "{e}");
    }

    #[test]
    fn indexed_bytes_that_are_not_a_pdf_are_not_served() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("page.pdf");
        std::fs::write(&path, b"<html><script>alert(1)</script></html>").unwrap();
        let (engine, id) = recorded(dir.path(), &path);
        let e = engine.document_file(id).unwrap_err();
        assert!(matches!(e, Error::Unsupported(_)), "{e}");
    }
}
