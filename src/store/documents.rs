//! Documents: what the index keeps of each file (its pages with their OCR mark, its
//! chunks with their embeddings), the rows that go in and come out, and the
//! [`Documents`] trait both databases implement.

use std::collections::HashSet;

use quire_pdf::ExtractedPage;

use crate::Result;

use super::DocStatus;

/// A document as listed.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DocumentRow {
    pub id: i64,
    pub path: String,
    pub file_name: String,
    /// sha256 of the file's bytes, hex.
    pub hash: String,
    pub title: Option<String>,
    pub pages: u32,
    pub chunks: usize,
    pub status: DocStatus,
    pub error: Option<String>,
}

/// A piece of a document as the index keeps it: its text and where it lies. Splitting
/// a document's pages makes them; the store writes them with their embeddings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    pub text: String,
    /// 1-based physical page where the chunk starts.
    pub page_start: u32,
    /// 1-based physical page where it ends (same as `page_start` for most chunks).
    pub page_end: u32,
    /// Offset of the first character, in characters from the start of
    /// `page_start`'s text.
    pub char_start: usize,
    /// Offset just past the last character, in characters from the start of
    /// `page_end`'s text.
    pub char_end: usize,
    /// Length in the model's tokens, special tokens included (≤ `max_tokens`).
    pub tokens: usize,
}

/// A chunk with its embedding, as the in-memory retrievers load them.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredChunk {
    pub id: i64,
    pub doc_id: i64,
    /// The document's file name.
    pub file: String,
    pub page_start: u32,
    pub page_end: u32,
    pub text: String,
    pub embedding: Vec<f32>,
}

/// A document ready to be written: what extraction, splitting and embedding made.
#[derive(Debug, Clone)]
pub struct NewDocument<'a> {
    pub path: &'a str,
    pub hash: &'a str,
    pub bytes: u64,
    pub title: Option<&'a str>,
    pub pages: &'a [ExtractedPage],
    pub chunks: &'a [Chunk],
    /// One per chunk, same order.
    pub embeddings: &'a [Vec<f32>],
    /// Which model made the embeddings.
    pub model: &'a str,
}

/// Documents, pages, chunks and embeddings.
pub trait Documents {
    /// A counter bumped by every change to the documents: when it moves, in-memory
    /// indexes built from [`Documents::load_chunks`] are stale.
    fn generation(&self) -> Result<i64>;
    /// All documents, by id.
    fn documents(&self) -> Result<Vec<DocumentRow>>;
    /// The document with this id, if any: one row read, not every document.
    fn document(&self, id: i64) -> Result<Option<DocumentRow>>;
    /// The document at `path`, if any: one row read, not every document.
    fn document_by_path(&self, path: &str) -> Result<Option<DocumentRow>>;
    /// A document indexed (status done) with this content hash, if any: (id, path,
    /// chunks).
    fn done_with_hash(&self, hash: &str) -> Result<Option<(i64, String, usize)>>;
    /// Write a document with its pages, chunks and embeddings in one transaction,
    /// replacing whatever was indexed at the same path (it stays in its
    /// collections). Returns its id.
    fn insert_document(&mut self, doc: &NewDocument<'_>) -> Result<i64>;
    /// Record that the file at `path` could not be indexed (replacing what was there).
    fn insert_failed(&mut self, path: &str, hash: &str, bytes: u64, error: &str) -> Result<i64>;
    /// Remove a document with its pages, chunks and embeddings. Returns whether it
    /// existed.
    fn remove_document(&mut self, id: i64) -> Result<bool>;
    /// The numbers of the pages of a document whose text came from OCR.
    fn ocr_pages(&self, doc_id: i64) -> Result<Vec<u32>>;
    /// The text of one page of a document.
    fn page_text(&self, doc_id: i64, number: u32) -> Result<Option<String>>;
    /// Every chunk of the documents indexed (status done), with its embedding, in
    /// chunk id order.
    fn load_chunks(&self) -> Result<Vec<StoredChunk>>;
    /// [`Documents::load_chunks`] for the chunks of the documents `docs` only.
    fn load_chunks_of(&self, docs: &[i64]) -> Result<Vec<StoredChunk>>;
    /// [`Documents::load_chunks`] one chunk at a time, into `each`, without holding
    /// them all (an error from `each` stops it). The default reads them all first;
    /// SQLite streams its rows.
    fn for_each_chunk(&self, each: &mut dyn FnMut(StoredChunk) -> Result<()>) -> Result<()> {
        for c in self.load_chunks()? {
            each(c)?;
        }
        Ok(())
    }
    /// The text of those of the chunks `ids` that exist, in any order.
    fn chunk_texts(&self, ids: &[i64]) -> Result<Vec<(i64, String)>>;
    /// The chunk that follows chunk `id` in its document (`seq` + 1): its id and text.
    /// A quote that runs to the end of its chunk reads on into it.
    fn next_chunk(&self, id: i64) -> Result<Option<(i64, String)>>;
    /// The embeddings of those of the chunks `ids` that have one, in any order.
    fn chunk_vectors(&self, ids: &[i64]) -> Result<Vec<(i64, Vec<f32>)>>;
    /// The documents [`Documents::load_chunks`] returns chunks of.
    fn searchable_documents(&self) -> Result<HashSet<i64>>;
    /// Which embedding models made the vectors of the index, with how many chunks
    /// each, most chunks first.
    fn embedding_models(&self) -> Result<Vec<(String, usize)>>;
    /// Up to `limit` chunks whose vectors were not made by `model`, as (chunk id,
    /// text), in chunk id order.
    fn chunks_not_embedded_by(&self, model: &str, limit: usize) -> Result<Vec<(i64, String)>>;
    /// Replace the vectors of these chunks with ones `model` made, in one
    /// transaction. Chunks removed meanwhile are skipped.
    fn replace_embeddings(&mut self, model: &str, rows: &[(i64, Vec<f32>)]) -> Result<()>;
}
