//! `quire bench fill-rows N DIR`: a library of N synthetic documents written straight
//! into the SQLite index of data directory DIR (rows only: no PDF is read, nothing is
//! embedded; each document has one page, one chunk and a zero vector under the
//! embedding model the directory's settings choose), for the UI's tests and timings at
//! 2,000 or 10,000 documents. Every 50th file is recorded as failed. File names are
//! `<topic>-<n>.pdf` over a fixed list of topics, so a search narrows predictably.

use std::path::Path;
use std::time::Instant;

use quire::engine::{Engine, EngineConfig};
use quire::ingest::ExtractedPage;
use quire::store::{Chunk, NewDocument, Store};
use quire::Result;
use serde::Serialize;

/// The topics file names are made of, in turn.
pub const TOPICS: [&str; 10] = [
    "glaciers",
    "volcanoes",
    "rivers",
    "deserts",
    "forests",
    "tides",
    "comets",
    "orchids",
    "bridges",
    "engines",
];

/// What was written, and how long it took.
#[derive(Debug, Serialize)]
pub struct Filled {
    pub documents: usize,
    pub failed: usize,
    pub secs: f64,
}

impl std::fmt::Display for Filled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "wrote {} documents ({} of them failed) in {:.2} s",
            self.documents + self.failed,
            self.failed,
            self.secs
        )
    }
}

/// The file name of synthetic document `i`.
pub fn name(i: usize) -> String {
    format!("{}-{i:05}.pdf", TOPICS[i % TOPICS.len()])
}

/// Write `n` synthetic documents into `dir`'s SQLite index (created if needed).
pub fn fill(dir: &Path, n: usize) -> Result<Filled> {
    let start = Instant::now();
    std::fs::create_dir_all(dir).map_err(|e| quire::Error::io(dir, e))?;
    // The vectors are labelled with the model the directory's settings choose, so the
    // library does not look stale to the window.
    let model = Engine::open(EngineConfig::new(Some(dir.to_path_buf()))?)?.embedder_name();
    let mut store = Store::open(&dir.join("index.sqlite"))?;
    let mut failed = 0;
    for i in 0..n {
        let file = name(i);
        let path = dir.join("synthetic").join(&file).display().to_string();
        let hash = format!("{:064x}", i + 1);
        if i % 50 == 49 {
            store.insert_failed(&path, &hash, 1000, "synthetic: not a PDF (no %PDF header)")?;
            failed += 1;
            continue;
        }
        let topic = TOPICS[i % TOPICS.len()];
        let text = format!("Document {i} is about {topic}.");
        let pages = [ExtractedPage {
            number: 1,
            text: text.clone(),
            ocr: false,
            has_images: false,
            tables: Vec::new(),
        }];
        let chunks = [Chunk {
            char_end: text.chars().count(),
            text,
            page_start: 1,
            page_end: 1,
            char_start: 0,
            tokens: 8,
        }];
        store.insert_document(&NewDocument {
            path: &path,
            hash: &hash,
            bytes: 1000,
            title: None,
            pages: &pages,
            chunks: &chunks,
            embeddings: &[vec![0.0; 384]],
            model: &model,
        })?;
    }
    Ok(Filled {
        documents: n - failed,
        failed,
        secs: start.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use quire::store::{LibraryFilter, LibraryQuery};

    #[test]
    fn fills_a_library_the_store_pages_and_searches() {
        let dir = tempfile::tempdir().unwrap();
        let r = fill(dir.path(), 120).unwrap();
        assert_eq!((r.documents, r.failed), (118, 2));
        let store = Store::open(&dir.path().join("index.sqlite")).unwrap();
        let s = store.library_summary().unwrap();
        assert_eq!((s.indexed, s.failed, s.chunks), (118, 2, 118));
        let page = store
            .library_page(&LibraryQuery {
                search: "Comets".into(),
                filter: LibraryFilter::Done,
                limit: 5,
                ..Default::default()
            })
            .unwrap();
        assert_eq!(page.total, 12);
        assert_eq!(page.items.len(), 5);
        assert_eq!(page.items[0].file_name, "comets-00006.pdf");
    }
}
