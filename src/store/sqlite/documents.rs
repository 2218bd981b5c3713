//! Documents in SQLite (see [`crate::store::documents`]): documents, pages, chunks,
//! embeddings (little-endian f32 blobs) and the full-text index over the chunks, with
//! the generation counter in `meta`.

use std::collections::HashSet;

use rusqlite::{params, OptionalExtension, Transaction};

use super::{collections, Sqlite};
use crate::store::{file_name, now_ms, DocumentRow, Documents, NewDocument, StoredChunk};
use crate::Result;

impl Sqlite {
    fn bump(tx: &Transaction<'_>) -> Result<()> {
        tx.execute(
            "UPDATE meta SET value = value + 1 WHERE key = 'generation'",
            [],
        )?;
        Ok(())
    }

    fn load_chunks_where<P: rusqlite::Params>(
        &self,
        filter: &str,
        params: P,
    ) -> Result<Vec<StoredChunk>> {
        let mut out = Vec::new();
        self.each_chunk_where(filter, params, &mut |c| {
            out.push(c);
            Ok(())
        })?;
        Ok(out)
    }

    /// The chunks matching `filter` with their embeddings, in chunk id order, one at a
    /// time as SQLite steps through them.
    fn each_chunk_where<P: rusqlite::Params>(
        &self,
        filter: &str,
        params: P,
        each: &mut dyn FnMut(StoredChunk) -> Result<()>,
    ) -> Result<()> {
        let mut st = self.conn.prepare(&format!(
            "SELECT c.id, c.doc_id, d.file_name, c.page_start, c.page_end, c.text, e.vector
             FROM chunks c
             JOIN documents d ON d.id = c.doc_id AND d.status = 'done'
             JOIN embeddings e ON e.chunk_id = c.id
             WHERE {filter}
             ORDER BY c.id"
        ))?;
        let mut rows = st.query(params)?;
        while let Some(r) = rows.next()? {
            let blob = r.get_ref(6)?.as_blob().map_err(rusqlite::Error::from)?;
            each(StoredChunk {
                id: r.get(0)?,
                doc_id: r.get(1)?,
                file: r.get(2)?,
                page_start: r.get(3)?,
                page_end: r.get(4)?,
                text: r.get(5)?,
                embedding: blob_vector(blob),
            })?;
        }
        Ok(())
    }

    /// Chunk ids matching a full-text query (FTS5 syntax), best first (bm25).
    pub fn search_text(&self, query: &str, limit: usize) -> Result<Vec<(i64, f64)>> {
        let mut st = self.conn.prepare(
            "SELECT rowid, bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ?1
             ORDER BY bm25(chunks_fts) LIMIT ?2",
        )?;
        let rows = st.query_map(params![query, limit as i64], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

impl Sqlite {
    /// The documents' rows that `tail` (a WHERE and/or ORDER BY) selects.
    fn document_rows<P: rusqlite::Params>(
        &self,
        tail: &str,
        params: P,
    ) -> Result<Vec<DocumentRow>> {
        let mut st = self.conn.prepare(&format!(
            "SELECT d.id, d.path, d.file_name, d.hash, d.title, d.pages, d.status, d.error,
                    (SELECT count(*) FROM chunks c WHERE c.doc_id = d.id)
             FROM documents d {tail}"
        ))?;
        let rows = st.query_map(params, |r| {
            Ok(DocumentRow {
                id: r.get(0)?,
                path: r.get(1)?,
                file_name: r.get(2)?,
                hash: r.get(3)?,
                title: r.get(4)?,
                pages: r.get(5)?,
                status: r.get(6)?,
                error: r.get(7)?,
                chunks: r.get::<_, i64>(8)? as usize,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

impl Documents for Sqlite {
    /// indexes built from [`Store::load_chunks`] are stale.
    fn generation(&self) -> Result<i64> {
        Ok(self
            .conn
            .query_row("SELECT value FROM meta WHERE key = 'generation'", [], |r| {
                r.get(0)
            })?)
    }

    /// All documents, by id.
    fn documents(&self) -> Result<Vec<DocumentRow>> {
        self.document_rows("ORDER BY d.id", [])
    }

    /// The document with this id, if any.
    fn document(&self, id: i64) -> Result<Option<DocumentRow>> {
        Ok(self.document_rows("WHERE d.id = ?1", [id])?.pop())
    }

    /// The document at `path`, if any.
    fn document_by_path(&self, path: &str) -> Result<Option<DocumentRow>> {
        Ok(self.document_rows("WHERE d.path = ?1", [path])?.pop())
    }

    /// A document indexed (status done) with this content hash, if any.
    fn done_with_hash(&self, hash: &str) -> Result<Option<(i64, String, usize)>> {
        Ok(self
            .conn
            .query_row(
                "SELECT d.id, d.path, (SELECT count(*) FROM chunks c WHERE c.doc_id = d.id)
                 FROM documents d WHERE d.hash = ?1 AND d.status = 'done'
                 ORDER BY d.id LIMIT 1",
                [hash],
                |r| Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)? as usize)),
            )
            .optional()?)
    }

    /// Write a document with its pages, chunks and embeddings in one transaction,
    /// replacing whatever was indexed at the same path. Returns its id.
    fn insert_document(&mut self, doc: &NewDocument<'_>) -> Result<i64> {
        if doc.embeddings.len() != doc.chunks.len() {
            return Err(crate::Error::Invalid(format!(
                "{} embeddings for {} chunks",
                doc.embeddings.len(),
                doc.chunks.len()
            )));
        }
        let tx = self.conn.transaction()?;
        // A document indexed again stays in its collections.
        let old: Option<i64> = tx
            .query_row(
                "SELECT id FROM documents WHERE path = ?1",
                [doc.path],
                |r| r.get(0),
            )
            .optional()?;
        let in_collections = match old {
            Some(old) => collections::of_document(&tx, old)?,
            None => Vec::new(),
        };
        tx.execute("DELETE FROM documents WHERE path = ?1", [doc.path])?;
        tx.execute(
            "INSERT INTO documents (path, file_name, hash, title, pages, status, bytes, indexed_at)
             VALUES (?1, ?2, ?3, ?4, ?5, 'done', ?6, ?7)",
            params![
                doc.path,
                file_name(doc.path),
                doc.hash,
                doc.title,
                doc.pages.len() as i64,
                doc.bytes as i64,
                now_ms()
            ],
        )?;
        let id = tx.last_insert_rowid();
        collections::restore(&tx, id, &in_collections)?;
        {
            let mut page = tx
                .prepare("INSERT INTO pages (doc_id, number, text, ocr) VALUES (?1, ?2, ?3, ?4)")?;
            for p in doc.pages {
                page.execute(params![id, p.number, p.text, p.ocr])?;
            }
            let mut chunk = tx.prepare(
                "INSERT INTO chunks (doc_id, seq, page_start, page_end, char_start, char_end, tokens, text)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?;
            let mut emb =
                tx.prepare("INSERT INTO embeddings (chunk_id, model, vector) VALUES (?1, ?2, ?3)")?;
            for (seq, (c, v)) in doc.chunks.iter().zip(doc.embeddings).enumerate() {
                chunk.execute(params![
                    id,
                    seq as i64,
                    c.page_start,
                    c.page_end,
                    c.char_start as i64,
                    c.char_end as i64,
                    c.tokens as i64,
                    c.text
                ])?;
                emb.execute(params![tx.last_insert_rowid(), doc.model, vector_blob(v)])?;
            }
        }
        Self::bump(&tx)?;
        tx.commit()?;
        Ok(id)
    }

    /// The numbers of the pages of a document whose text came from OCR.
    fn ocr_pages(&self, doc_id: i64) -> Result<Vec<u32>> {
        let mut st = self.conn.prepare_cached(
            "SELECT number FROM pages WHERE doc_id = ?1 AND ocr != 0 ORDER BY number",
        )?;
        let rows = st.query_map([doc_id], |r| r.get(0))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Record that the file at `path` could not be indexed (replacing what was there).
    fn insert_failed(&mut self, path: &str, hash: &str, bytes: u64, error: &str) -> Result<i64> {
        let tx = self.conn.transaction()?;
        let old: Option<(i64, String, bool)> = tx
            .query_row(
                "SELECT id, hash, status = 'failed' AND ignored != 0 FROM documents
                 WHERE path = ?1",
                [path],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()?;
        let in_collections = match &old {
            Some((old, _, _)) => collections::of_document(&tx, *old)?,
            None => Vec::new(),
        };
        // A failed file ignored stays ignored while it has not changed.
        let ignored = matches!(&old, Some((_, h, true)) if h == hash);
        tx.execute("DELETE FROM documents WHERE path = ?1", [path])?;
        tx.execute(
            "INSERT INTO documents (path, file_name, hash, status, error, bytes, indexed_at, ignored)
             VALUES (?1, ?2, ?3, 'failed', ?4, ?5, ?6, ?7)",
            params![path, file_name(path), hash, error, bytes as i64, now_ms(), ignored],
        )?;
        let id = tx.last_insert_rowid();
        collections::restore(&tx, id, &in_collections)?;
        Self::bump(&tx)?;
        tx.commit()?;
        Ok(id)
    }

    /// Remove a document with its pages, chunks and embeddings. Returns whether it
    /// existed.
    fn remove_document(&mut self, id: i64) -> Result<bool> {
        let tx = self.conn.transaction()?;
        let n = tx.execute("DELETE FROM documents WHERE id = ?1", [id])?;
        if n > 0 {
            Self::bump(&tx)?;
        }
        tx.commit()?;
        Ok(n > 0)
    }

    /// The text of one page of a document.
    fn page_text(&self, doc_id: i64, number: u32) -> Result<Option<String>> {
        Ok(self
            .conn
            .query_row(
                "SELECT text FROM pages WHERE doc_id = ?1 AND number = ?2",
                params![doc_id, number],
                |r| r.get(0),
            )
            .optional()?)
    }

    /// Every chunk of the documents indexed (status done), with its embedding, in
    /// chunk id order.
    fn load_chunks(&self) -> Result<Vec<StoredChunk>> {
        self.load_chunks_where("1", [])
    }

    /// [`Store::load_chunks`] one chunk at a time, as SQLite steps through the rows.
    fn for_each_chunk(&self, each: &mut dyn FnMut(StoredChunk) -> Result<()>) -> Result<()> {
        self.each_chunk_where("1", [], each)
    }

    /// The text of those of the chunks `ids` that exist.
    fn chunk_texts(&self, ids: &[i64]) -> Result<Vec<(i64, String)>> {
        let mut st = self
            .conn
            .prepare_cached("SELECT text FROM chunks WHERE id = ?1")?;
        let mut out = Vec::with_capacity(ids.len());
        for &id in ids {
            if let Some(t) = st.query_row([id], |r| r.get(0)).optional()? {
                out.push((id, t));
            }
        }
        Ok(out)
    }

    fn next_chunk(&self, id: i64) -> Result<Option<(i64, String)>> {
        let mut st = self.conn.prepare_cached(
            "SELECT n.id, n.text FROM chunks c JOIN chunks n \
             ON n.doc_id = c.doc_id AND n.seq = c.seq + 1 WHERE c.id = ?1",
        )?;
        Ok(st
            .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?)
    }

    /// The embeddings of those of the chunks `ids` that have one.
    fn chunk_vectors(&self, ids: &[i64]) -> Result<Vec<(i64, Vec<f32>)>> {
        let mut st = self
            .conn
            .prepare_cached("SELECT vector FROM embeddings WHERE chunk_id = ?1")?;
        let mut out = Vec::with_capacity(ids.len());
        for &id in ids {
            let mut rows = st.query([id])?;
            if let Some(r) = rows.next()? {
                out.push((
                    id,
                    blob_vector(r.get_ref(0)?.as_blob().map_err(rusqlite::Error::from)?),
                ));
            }
        }
        Ok(out)
    }

    /// [`Store::load_chunks`] for the chunks of the documents `docs` only (in chunk
    /// id order).
    fn load_chunks_of(&self, docs: &[i64]) -> Result<Vec<StoredChunk>> {
        let mut out = Vec::new();
        for &d in docs {
            out.extend(self.load_chunks_where("c.doc_id = ?1", [d])?);
        }
        out.sort_by_key(|c| c.id);
        Ok(out)
    }

    /// The documents [`Store::load_chunks`] returns chunks of.
    fn searchable_documents(&self) -> Result<HashSet<i64>> {
        let mut st = self.conn.prepare(
            "SELECT DISTINCT c.doc_id FROM chunks c
             JOIN documents d ON d.id = c.doc_id AND d.status = 'done'
             JOIN embeddings e ON e.chunk_id = c.id",
        )?;
        let rows = st.query_map([], |r| r.get::<_, i64>(0))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Which embedding models made the vectors of the index, with how many chunks
    /// each, most chunks first. One entry (or none, when nothing is indexed) is the
    /// normal case; more means a re-embedding was stopped half way.
    fn embedding_models(&self) -> Result<Vec<(String, usize)>> {
        let mut st = self.conn.prepare(
            "SELECT model, count(*) FROM embeddings GROUP BY model ORDER BY count(*) DESC, model",
        )?;
        let rows = st.query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as usize)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Up to `limit` chunks whose vectors were not made by `model`, as (chunk id,
    /// text), in chunk id order.
    fn chunks_not_embedded_by(&self, model: &str, limit: usize) -> Result<Vec<(i64, String)>> {
        let mut st = self.conn.prepare(
            "SELECT c.id, c.text FROM chunks c JOIN embeddings e ON e.chunk_id = c.id
             WHERE e.model != ?1 ORDER BY c.id LIMIT ?2",
        )?;
        let rows = st.query_map(params![model, limit as i64], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Replace the vectors of these chunks with ones `model` made, in one
    /// transaction. Chunks removed meanwhile are skipped.
    fn replace_embeddings(&mut self, model: &str, rows: &[(i64, Vec<f32>)]) -> Result<()> {
        let tx = self.conn.transaction()?;
        {
            let mut up =
                tx.prepare("UPDATE embeddings SET model = ?1, vector = ?2 WHERE chunk_id = ?3")?;
            for (id, v) in rows {
                up.execute(params![model, vector_blob(v), id])?;
            }
        }
        Self::bump(&tx)?;
        tx.commit()?;
        Ok(())
    }
}

fn vector_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn blob_vector(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}
