//! Documents in PostgreSQL (see [`crate::store::documents`]): documents, pages, chunks,
//! embeddings (pgvector, with an HNSW index per dimension) and the BM25 postings (a
//! row per term and document, its chunks' postings in one list), with the collection
//! statistics and the generation counter in `meta`.
//! A document is written in one transaction, its rows a few hundred to a statement
//! (`INSERT … SELECT … FROM unnest($arrays)`), not one statement a row.

use std::collections::{BTreeMap, HashMap, HashSet};

use postgres::Transaction;

use super::blocks;
use super::bm25;
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

/// Rows (pages, chunks with their embeddings) written by one statement.
const ROWS: usize = 256;
/// Terms' postings lists written by one statement.
const LIST_ROWS: usize = 4096;

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
        blocks::before_delete(tx, id)?;
        let r = tx.query_one(
            "SELECT count(*), coalesce(sum(terms), 0)::bigint FROM chunks WHERE doc_id = $1",
            &[&id],
        )?;
        let (chunks, terms): (i64, i64) = (r.get(0), r.get(1));
        let lists = tx.query(
            "SELECT term, (octet_length(postings) / 16)::bigint FROM term_docs
             WHERE doc_id = $1",
            &[&id],
        )?;
        let mut gone: Vec<(String, i64)> = lists
            .iter()
            .map(|r| (r.get(0), -r.get::<_, i64>(1)))
            .collect();
        gone.sort_unstable();
        Self::count_terms(tx, &gone)?;
        let n = tx.execute("DELETE FROM documents WHERE id = $1", &[&id])?;
        if n > 0 {
            Self::count(tx, -chunks, -terms)?;
        }
        Ok(n > 0)
    }

    /// Add each term's change of document frequency (chunks) to `term_stats`.
    /// `changes` is in the order of the terms' bytes, as every writer's is, so two
    /// transactions lock the rows they share in one order.
    fn count_terms(tx: &mut Transaction<'_>, changes: &[(String, i64)]) -> Result<()> {
        for part in changes.chunks(LIST_ROWS) {
            let terms: Vec<&str> = part.iter().map(|(t, _)| t.as_str()).collect();
            let dfs: Vec<i64> = part.iter().map(|(_, d)| *d).collect();
            tx.execute(
                "INSERT INTO term_stats (term, df)
                 SELECT * FROM unnest($1::text[], $2::bigint[])
                 ON CONFLICT (term) DO UPDATE SET df = term_stats.df + EXCLUDED.df",
                &[&terms, &dfs],
            )?;
        }
        Ok(())
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

    /// Document `id`'s pages, [`ROWS`] a statement.
    fn write_pages(
        tx: &mut Transaction<'_>,
        id: i64,
        pages: &[quire_pdf::ExtractedPage],
    ) -> Result<()> {
        for part in pages.chunks(ROWS) {
            let numbers: Vec<i64> = part.iter().map(|p| i64::from(p.number)).collect();
            let texts: Vec<&str> = part.iter().map(|p| p.text.as_str()).collect();
            let ocr: Vec<bool> = part.iter().map(|p| p.ocr).collect();
            tx.execute(
                "INSERT INTO pages (doc_id, number, text, ocr)
                 SELECT $1::bigint, u.* FROM unnest($2::bigint[], $3::text[], $4::bool[]) AS u",
                &[&id, &numbers, &texts, &ocr],
            )?;
        }
        Ok(())
    }

    /// Document `id`'s BM25 postings: a row per term, its postings in this document
    /// as one list ([`bm25::push_posting`]), [`LIST_ROWS`] rows a statement.
    fn write_term_lists(
        tx: &mut Transaction<'_>,
        id: i64,
        lists: &BTreeMap<&str, Vec<u8>>,
    ) -> Result<()> {
        let lists: Vec<(&str, &[u8])> = lists.iter().map(|(t, l)| (*t, l.as_slice())).collect();
        for part in lists.chunks(LIST_ROWS) {
            let terms: Vec<&str> = part.iter().map(|(t, _)| *t).collect();
            let postings: Vec<&[u8]> = part.iter().map(|(_, l)| *l).collect();
            tx.execute(
                "INSERT INTO term_docs (term, doc_id, postings)
                 SELECT u.t, $1::bigint, u.p FROM unnest($2::text[], $3::bytea[]) AS u(t, p)",
                &[&id, &terms, &postings],
            )?;
        }
        Ok(())
    }

    /// Document `id`'s chunks with their embeddings, [`ROWS`] chunks a statement, then
    /// its BM25 postings (`terms`, per chunk) gathered into a list per term
    /// ([`Self::write_term_lists`]): a few statements a document instead of three a
    /// chunk. Returns the terms counted.
    fn write_chunks(
        tx: &mut Transaction<'_>,
        id: i64,
        doc: &NewDocument<'_>,
        terms: &[(Vec<(String, i32)>, i64)],
    ) -> Result<i64> {
        let mut total_terms = 0i64;
        // Each term's postings in this document, in chunk order.
        let mut lists: BTreeMap<&str, Vec<u8>> = BTreeMap::new();
        let rows: Vec<_> = doc
            .chunks
            .iter()
            .zip(doc.embeddings)
            .zip(terms)
            .enumerate()
            .collect();
        for part in rows.chunks(ROWS) {
            let col = |f: &dyn Fn(&crate::store::Chunk) -> i64| -> Vec<i64> {
                part.iter().map(|(_, ((c, _), _))| f(c)).collect()
            };
            let seqs: Vec<i64> = part.iter().map(|(seq, _)| *seq as i64).collect();
            let lens: Vec<i64> = part.iter().map(|(_, (_, (_, len)))| *len).collect();
            let texts: Vec<&str> = part
                .iter()
                .map(|(_, ((c, _), _))| c.text.as_str())
                .collect();
            let inserted = tx.query(
                "INSERT INTO chunks (doc_id, seq, page_start, page_end, char_start, char_end,
                                     tokens, terms, text)
                 SELECT $1::bigint, u.* FROM unnest($2::bigint[], $3::bigint[], $4::bigint[],
                     $5::bigint[], $6::bigint[], $7::bigint[], $8::bigint[], $9::text[]) AS u
                 RETURNING seq, id",
                &[
                    &id,
                    &seqs,
                    &col(&|c| i64::from(c.page_start)),
                    &col(&|c| i64::from(c.page_end)),
                    &col(&|c| c.char_start as i64),
                    &col(&|c| c.char_end as i64),
                    &col(&|c| c.tokens as i64),
                    &lens,
                    &texts,
                ],
            )?;
            // Each chunk's id, by its sequence number (RETURNING promises no order).
            let ids: HashMap<i64, i64> = inserted.iter().map(|r| (r.get(0), r.get(1))).collect();
            let cids = seqs
                .iter()
                .map(|s| {
                    ids.get(s)
                        .copied()
                        .ok_or_else(|| Error::Invalid(format!("chunk {s} was not written")))
                })
                .collect::<Result<Vec<i64>>>()?;
            let dims: Vec<i32> = part.iter().map(|(_, ((_, v), _))| v.len() as i32).collect();
            let vectors: Vec<String> = part.iter().map(|(_, ((_, v), _))| vector_text(v)).collect();
            tx.execute(
                "INSERT INTO embeddings (chunk_id, model, dims, vector)
                 SELECT u.c, $1::text, u.d, u.v::vector
                 FROM unnest($2::bigint[], $3::int[], $4::text[]) AS u(c, d, v)",
                &[&doc.model, &cids, &dims, &vectors],
            )?;
            for ((_, (_, (tf, len))), cid) in part.iter().zip(&cids) {
                total_terms += len;
                for (t, n) in tf {
                    bm25::push_posting(lists.entry(t).or_default(), *cid, *n, *len as i32);
                }
            }
        }
        Self::write_term_lists(tx, id, &lists)?;
        let counts: Vec<(String, i64)> = lists
            .iter()
            .map(|(t, l)| (t.to_string(), (l.len() / bm25::POSTING_BYTES) as i64))
            .collect();
        Self::count_terms(tx, &counts)?;
        Ok(total_terms)
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

impl Postgres {
    /// The documents' rows that `tail` (a WHERE and/or ORDER BY) selects.
    fn document_rows(
        &self,
        tail: &str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<Vec<DocumentRow>> {
        self.run(|c| {
            let rows = c.query(
                &format!(
                    "SELECT d.id, d.path, d.file_name, d.hash, d.title, d.pages, d.status, d.error,
                            (SELECT count(*) FROM chunks c WHERE c.doc_id = d.id)
                     FROM documents d {tail}"
                ),
                params,
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
        self.document_rows("ORDER BY d.id", &[])
    }

    fn document(&self, id: i64) -> Result<Option<DocumentRow>> {
        Ok(self.document_rows("WHERE d.id = $1", &[&id])?.pop())
    }

    fn document_by_path(&self, path: &str) -> Result<Option<DocumentRow>> {
        Ok(self.document_rows("WHERE d.path = $1", &[&path])?.pop())
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
            Self::write_pages(&mut tx, id, doc.pages)?;
            let total_terms = Self::write_chunks(&mut tx, id, doc, &terms)?;
            Self::count(&mut tx, doc.chunks.len() as i64, total_terms)?;
            tx.commit()?;
            blocks::merge_quietly(c);
            Ok(id)
        })
    }

    fn insert_failed(&mut self, path: &str, hash: &str, bytes: u64, error: &str) -> Result<i64> {
        self.run(|c| {
            let mut tx = c.transaction()?;
            // A failed file ignored stays ignored while it has not changed.
            let ignored = tx
                .query_opt(
                    "SELECT 1 FROM documents WHERE path = $1 AND hash = $2
                     AND status = 'failed' AND ignored",
                    &[&path, &hash],
                )?
                .is_some();
            let cols = Self::replace_path(&mut tx, path)?;
            let id: i64 = tx
                .query_one(
                    "INSERT INTO documents
                         (path, file_name, hash, status, error, bytes, indexed_at, ignored)
                     VALUES ($1, $2, $3, 'failed', $4, $5, $6, $7) RETURNING id",
                    &[
                        &path,
                        &file_name(path),
                        &hash,
                        &error,
                        &(bytes as i64),
                        &now_ms(),
                        &ignored,
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
            blocks::merge_quietly(c);
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

    fn next_chunk(&self, id: i64) -> Result<Option<(i64, String)>> {
        self.run(|c| {
            Ok(c.query_opt(
                "SELECT n.id, n.text FROM chunks c JOIN chunks n \
                 ON n.doc_id = c.doc_id AND n.seq = c.seq + 1 WHERE c.id = $1",
                &[&id],
            )?
            .map(|r| (r.get(0), r.get(1))))
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
