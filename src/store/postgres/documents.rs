//! Documents in PostgreSQL (see [`crate::store::documents`]): documents, pages, chunks,
//! embeddings (pgvector, with an HNSW index per dimension) and the BM25 postings of
//! each chunk, with the collection statistics and the generation counter in `meta`.

use std::collections::{HashMap, HashSet};

use postgres::Transaction;

use super::collections;
use super::connection::{text_vector, vector_text};
use super::{Postgres, MIGRATION_LOCK};
use crate::store::{file_name, now_ms, DocumentRow, Documents, NewDocument, StoredChunk};
use crate::text::analyzer as text;
use crate::{Error, Result};

/// A chunk's BM25 terms: each distinct term with its frequency (saturated at 255, as
/// the in-memory index keeps it), and how many terms it has in all.
pub(super) fn chunk_terms(text_: &str) -> (Vec<(String, i32)>, i64) {
    let mut tf: HashMap<String, i32> = HashMap::new();
    let mut len = 0i64;
    text::analyze(text_, |t| {
        len += 1;
        *tf.entry(t.to_string()).or_insert(0) += 1;
    });
    let mut terms: Vec<(String, i32)> = tf.into_iter().map(|(t, n)| (t, n.min(255))).collect();
    terms.sort();
    (terms, len)
}

impl Postgres {
    /// The HNSW index over vectors of `dims` dimensions, made if missing.
    fn ensure_hnsw(&self, dims: i32) -> Result<()> {
        if self
            .hnsw
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&dims)
        {
            return Ok(());
        }
        self.run(|c| {
            let mut tx = c.transaction()?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&(MIGRATION_LOCK + 1)])?;
            tx.batch_execute(&format!(
                "CREATE INDEX IF NOT EXISTS embeddings_hnsw_{dims} ON embeddings
                 USING hnsw ((vector::vector({dims})) vector_cosine_ops) WHERE dims = {dims}"
            ))?;
            tx.commit()?;
            Ok(())
        })?;
        self.hnsw
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(dims);
        Ok(())
    }

    /// Remove the document at `path` (in `tx`, under its advisory lock), returning
    /// the collections it was in.
    fn replace_path(tx: &mut Transaction<'_>, path: &str) -> Result<Vec<i64>> {
        tx.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
            &[&path],
        )?;
        let old = tx.query_opt("SELECT id FROM documents WHERE path = $1", &[&path])?;
        let Some(old) = old else {
            return Ok(Vec::new());
        };
        let old: i64 = old.get(0);
        let cols = collections::of_document(tx, old)?;
        Self::delete_document(tx, old)?;
        Ok(cols)
    }

    /// Delete document `id` and take its chunks out of the BM25 statistics.
    fn delete_document(tx: &mut Transaction<'_>, id: i64) -> Result<bool> {
        let r = tx.query_one(
            "SELECT count(*), coalesce(sum(terms), 0)::bigint FROM chunks WHERE doc_id = $1",
            &[&id],
        )?;
        let (chunks, terms): (i64, i64) = (r.get(0), r.get(1));
        let n = tx.execute("DELETE FROM documents WHERE id = $1", &[&id])?;
        if n > 0 {
            Self::count(tx, -chunks, -terms)?;
        }
        Ok(n > 0)
    }

    fn count(tx: &mut Transaction<'_>, chunks: i64, terms: i64) -> Result<()> {
        tx.execute(
            "UPDATE meta SET value = value + CASE key WHEN 'chunks' THEN $1::bigint
                 WHEN 'terms' THEN $2::bigint ELSE 1 END
             WHERE key IN ('generation', 'chunks', 'terms')",
            &[&chunks, &terms],
        )?;
        Ok(())
    }

    fn chunks_where(&self, filter: &str, docs: &[i64]) -> Result<Vec<StoredChunk>> {
        self.run(|c| {
            let params: Vec<&(dyn postgres::types::ToSql + Sync)> = if filter.contains("$1") {
                vec![&docs]
            } else {
                Vec::new()
            };
            let rows = c.query(
                &format!(
                    "SELECT c.id, c.doc_id, d.file_name, c.page_start, c.page_end, c.text,
                            e.vector::text
                     FROM chunks c
                     JOIN documents d ON d.id = c.doc_id AND d.status = 'done'
                     JOIN embeddings e ON e.chunk_id = c.id
                     WHERE {filter}
                     ORDER BY c.id"
                ),
                &params,
            )?;
            Ok(rows
                .iter()
                .map(|r| StoredChunk {
                    id: r.get(0),
                    doc_id: r.get(1),
                    file: r.get(2),
                    page_start: r.get::<_, i64>(3) as u32,
                    page_end: r.get::<_, i64>(4) as u32,
                    text: r.get(5),
                    embedding: text_vector(r.get(6)),
                })
                .collect())
        })
    }
}

impl Documents for Postgres {
    fn generation(&self) -> Result<i64> {
        self.run(|c| {
            Ok(
                c.query_one("SELECT value FROM meta WHERE key = 'generation'", &[])?
                    .get(0),
            )
        })
    }

    fn documents(&self) -> Result<Vec<DocumentRow>> {
        self.run(|c| {
            let rows = c.query(
                "SELECT d.id, d.path, d.file_name, d.hash, d.title, d.pages, d.status, d.error,
                        (SELECT count(*) FROM chunks c WHERE c.doc_id = d.id)
                 FROM documents d ORDER BY d.id",
                &[],
            )?;
            Ok(rows
                .iter()
                .map(|r| DocumentRow {
                    id: r.get(0),
                    path: r.get(1),
                    file_name: r.get(2),
                    hash: r.get(3),
                    title: r.get(4),
                    pages: r.get::<_, i64>(5) as u32,
                    status: r.get(6),
                    error: r.get(7),
                    chunks: r.get::<_, i64>(8) as usize,
                })
                .collect())
        })
    }

    fn done_with_hash(&self, hash: &str) -> Result<Option<(i64, String, usize)>> {
        self.run(|c| {
            Ok(c.query_opt(
                "SELECT d.id, d.path, (SELECT count(*) FROM chunks c WHERE c.doc_id = d.id)
                 FROM documents d WHERE d.hash = $1 AND d.status = 'done'
                 ORDER BY d.id LIMIT 1",
                &[&hash],
            )?
            .map(|r| (r.get(0), r.get(1), r.get::<_, i64>(2) as usize)))
        })
    }

    fn insert_document(&mut self, doc: &NewDocument<'_>) -> Result<i64> {
        if doc.embeddings.len() != doc.chunks.len() {
            return Err(Error::Invalid(format!(
                "{} embeddings for {} chunks",
                doc.embeddings.len(),
                doc.chunks.len()
            )));
        }
        let mut dims: Vec<i32> = doc.embeddings.iter().map(|v| v.len() as i32).collect();
        dims.dedup();
        for d in &dims {
            self.ensure_hnsw(*d)?;
        }
        // The analysis runs before the transaction: it holds no lock meanwhile.
        let terms: Vec<(Vec<(String, i32)>, i64)> =
            doc.chunks.iter().map(|c| chunk_terms(&c.text)).collect();
        self.run(|c| {
            let mut tx = c.transaction()?;
            let cols = Self::replace_path(&mut tx, doc.path)?;
            let id: i64 = tx
                .query_one(
                    "INSERT INTO documents (path, file_name, hash, title, pages, status, bytes, indexed_at)
                     VALUES ($1, $2, $3, $4, $5, 'done', $6, $7) RETURNING id",
                    &[
                        &doc.path,
                        &file_name(doc.path),
                        &doc.hash,
                        &doc.title,
                        &(doc.pages.len() as i64),
                        &(doc.bytes as i64),
                        &now_ms(),
                    ],
                )?
                .get(0);
            collections::restore(&mut tx, id, &cols)?;
            let page =
                tx.prepare("INSERT INTO pages (doc_id, number, text, ocr) VALUES ($1, $2, $3, $4)")?;
            for p in doc.pages {
                tx.execute(&page, &[&id, &i64::from(p.number), &p.text, &p.ocr])?;
            }
            let chunk = tx.prepare(
                "INSERT INTO chunks (doc_id, seq, page_start, page_end, char_start, char_end, tokens,
                                     terms, text)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
            )?;
            let emb = tx.prepare(
                "INSERT INTO embeddings (chunk_id, model, dims, vector)
                 VALUES ($1, $2, $3, $4::text::vector)",
            )?;
            let post = tx.prepare(
                "INSERT INTO postings (term, chunk_id, tf)
                 SELECT t, $2, f FROM unnest($1::text[], $3::int[]) AS u(t, f)",
            )?;
            let mut total_terms = 0i64;
            for (seq, ((ch, v), (tf, len))) in doc
                .chunks
                .iter()
                .zip(doc.embeddings)
                .zip(&terms)
                .enumerate()
            {
                let cid: i64 = tx
                    .query_one(
                        &chunk,
                        &[
                            &id,
                            &(seq as i64),
                            &i64::from(ch.page_start),
                            &i64::from(ch.page_end),
                            &(ch.char_start as i64),
                            &(ch.char_end as i64),
                            &(ch.tokens as i64),
                            len,
                            &ch.text,
                        ],
                    )?
                    .get(0);
                tx.execute(
                    &emb,
                    &[&cid, &doc.model, &(v.len() as i32), &vector_text(v)],
                )?;
                let names: Vec<&str> = tf.iter().map(|(t, _)| t.as_str()).collect();
                let counts: Vec<i32> = tf.iter().map(|(_, n)| *n).collect();
                tx.execute(&post, &[&names, &cid, &counts])?;
                total_terms += len;
            }
            Self::count(&mut tx, doc.chunks.len() as i64, total_terms)?;
            tx.commit()?;
            Ok(id)
        })
    }

    fn insert_failed(&mut self, path: &str, hash: &str, bytes: u64, error: &str) -> Result<i64> {
        self.run(|c| {
            let mut tx = c.transaction()?;
            let cols = Self::replace_path(&mut tx, path)?;
            let id: i64 = tx
                .query_one(
                    "INSERT INTO documents (path, file_name, hash, status, error, bytes, indexed_at)
                     VALUES ($1, $2, $3, 'failed', $4, $5, $6) RETURNING id",
                    &[
                        &path,
                        &file_name(path),
                        &hash,
                        &error,
                        &(bytes as i64),
                        &now_ms(),
                    ],
                )?
                .get(0);
            collections::restore(&mut tx, id, &cols)?;
            Self::count(&mut tx, 0, 0)?;
            tx.commit()?;
            Ok(id)
        })
    }

    fn remove_document(&mut self, id: i64) -> Result<bool> {
        self.run(|c| {
            let mut tx = c.transaction()?;
            let path = tx.query_opt("SELECT path FROM documents WHERE id = $1", &[&id])?;
            let Some(path) = path else { return Ok(false) };
            let path: String = path.get(0);
            tx.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
                &[&path],
            )?;
            let gone = Self::delete_document(&mut tx, id)?;
            tx.commit()?;
            Ok(gone)
        })
    }

    fn ocr_pages(&self, doc_id: i64) -> Result<Vec<u32>> {
        self.run(|c| {
            Ok(c.query(
                "SELECT number FROM pages WHERE doc_id = $1 AND ocr ORDER BY number",
                &[&doc_id],
            )?
            .iter()
            .map(|r| r.get::<_, i64>(0) as u32)
            .collect())
        })
    }

    fn page_text(&self, doc_id: i64, number: u32) -> Result<Option<String>> {
        self.run(|c| {
            Ok(c.query_opt(
                "SELECT text FROM pages WHERE doc_id = $1 AND number = $2",
                &[&doc_id, &i64::from(number)],
            )?
            .map(|r| r.get(0)))
        })
    }

    fn load_chunks(&self) -> Result<Vec<StoredChunk>> {
        self.chunks_where("true", &[])
    }

    fn load_chunks_of(&self, docs: &[i64]) -> Result<Vec<StoredChunk>> {
        self.chunks_where("c.doc_id = ANY($1)", docs)
    }

    fn chunk_texts(&self, ids: &[i64]) -> Result<Vec<(i64, String)>> {
        self.run(|c| {
            Ok(
                c.query("SELECT id, text FROM chunks WHERE id = ANY($1)", &[&ids])?
                    .iter()
                    .map(|r| (r.get(0), r.get(1)))
                    .collect(),
            )
        })
    }

    fn chunk_vectors(&self, ids: &[i64]) -> Result<Vec<(i64, Vec<f32>)>> {
        self.run(|c| {
            Ok(c.query(
                "SELECT chunk_id, vector::text FROM embeddings WHERE chunk_id = ANY($1)",
                &[&ids],
            )?
            .iter()
            .map(|r| (r.get(0), text_vector(r.get(1))))
            .collect())
        })
    }

    fn searchable_documents(&self) -> Result<HashSet<i64>> {
        self.run(|c| {
            Ok(c.query(
                "SELECT DISTINCT c.doc_id FROM chunks c
                 JOIN documents d ON d.id = c.doc_id AND d.status = 'done'
                 JOIN embeddings e ON e.chunk_id = c.id",
                &[],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect())
        })
    }

    fn embedding_models(&self) -> Result<Vec<(String, usize)>> {
        self.run(|c| {
            Ok(c.query(
                "SELECT model, count(*) FROM embeddings GROUP BY model
                 ORDER BY count(*) DESC, model",
                &[],
            )?
            .iter()
            .map(|r| (r.get(0), r.get::<_, i64>(1) as usize))
            .collect())
        })
    }

    fn chunks_not_embedded_by(&self, model: &str, limit: usize) -> Result<Vec<(i64, String)>> {
        self.run(|c| {
            Ok(c.query(
                "SELECT c.id, c.text FROM chunks c JOIN embeddings e ON e.chunk_id = c.id
                 WHERE e.model != $1 ORDER BY c.id LIMIT $2",
                &[&model, &(limit as i64)],
            )?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect())
        })
    }

    fn replace_embeddings(&mut self, model: &str, rows: &[(i64, Vec<f32>)]) -> Result<()> {
        let mut dims: Vec<i32> = rows.iter().map(|(_, v)| v.len() as i32).collect();
        dims.sort_unstable();
        dims.dedup();
        for d in &dims {
            self.ensure_hnsw(*d)?;
        }
        self.run(|c| {
            let mut tx = c.transaction()?;
            let up = tx.prepare(
                "UPDATE embeddings SET model = $1, dims = $2, vector = $3::text::vector
                 WHERE chunk_id = $4",
            )?;
            for (id, v) in rows {
                tx.execute(&up, &[&model, &(v.len() as i32), &vector_text(v), id])?;
            }
            Self::count(&mut tx, 0, 0)?;
            tx.commit()?;
            Ok(())
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn chunk_terms_count_as_the_in_memory_index_does() {
        let (terms, len) = chunk_terms("Upgrading the upgrades: upgrade 宏包");
        assert!(
            terms.iter().any(|(t, n)| t == "upgrad" && *n == 3),
            "{terms:?}"
        );
        assert_eq!(len, terms.iter().map(|(_, n)| i64::from(*n)).sum::<i64>());
    }
}
