//! Retrieval in the PostgreSQL index: nothing is loaded into memory.
//!
//! - **Vector:** cosine similarity by pgvector, through the HNSW index of the
//!   vectors' dimension (`hnsw.ef_search` at least 200, or ten times the hits
//!   asked), so a query reads a few hundred rows of the graph. A query restricted to
//!   some documents (a scope) is ranked exactly over their chunks instead: an HNSW scan
//!   filtered afterwards could return fewer hits than asked.
//! - **BM25:** the query analyzed as chunks are ([`crate::text::analyzer`]), then
//!   Lucene's Okapi BM25 over the `postings` table: `idf = ln(1 + (N − df + 0.5) /
//!   (df + 0.5))`, `score = Σ idf · tf · (k1 + 1) / (tf + k1 · (1 − b + b · len /
//!   avg_len))`, with N and the average length from `meta`. A posting carries its
//!   chunk's length and document, and the primary key covers every column the query
//!   reads ([`POSTINGS_COVERED`]), so a term's postings are one index range, read
//!   without visiting the table or the chunks. The terms are the scan's own
//!   condition, not only the join's: while a library is being indexed (its
//!   statistics behind), the planner otherwise read every posting of the library
//!   (58 ms against 14 ms a query at 5.8k chunks; the same once analyzed). The
//!   same formula as the
//!   in-memory index, in double precision rather than single: scores agree to about
//!   1e-6, so two chunks tied that closely may swap.
//!
//! Each retriever takes a connection from a small pool of its own
//! ([`Pool`]), so a question never waits for the indexer's transaction on the
//! store's connection.

use std::collections::HashMap;

use postgres::Client;

use super::connection::{vector_text, Pool};
use crate::embed::Embedder;
use crate::retrieve::{ChunkInfo, Corpus, DocFilter, Hit, Retriever, RetrieverKind};
use crate::text::analyzer as text;
use crate::text::bm25::{B, K1};
use crate::Result;

/// Hits read past the `k` asked, so that chunks tied with the k-th (the same text
/// twice) are ordered by id, as the in-memory index orders them.
const TIE_SLACK: i64 = 8;

/// The migration that puts each chunk's length and document in its postings and
/// makes the primary key cover them: BM25 then scans an index range per term (an
/// index-only scan once the table is vacuumed), where it joined every posting to its
/// chunk (a random row each).
pub(super) const POSTINGS_COVERED: &str =
    "ALTER TABLE postings ADD COLUMN len INTEGER, ADD COLUMN doc_id BIGINT;
     UPDATE postings p SET len = c.terms, doc_id = c.doc_id FROM chunks c WHERE c.id = p.chunk_id;
     ALTER TABLE postings ALTER COLUMN len SET NOT NULL, ALTER COLUMN doc_id SET NOT NULL;
     ALTER TABLE postings DROP CONSTRAINT postings_pkey;
     ALTER TABLE postings ADD PRIMARY KEY (term, chunk_id) INCLUDE (tf, len, doc_id);";

/// The in-database retrievers of one PostgreSQL index.
pub struct PgSearch {
    pool: Pool,
}

impl PgSearch {
    pub fn new(url: &str) -> Self {
        Self {
            pool: Pool::new(url),
        }
    }

    /// Run `f` on a pooled connection (off any async runtime).
    fn with<T: Send>(&self, f: impl FnOnce(&mut Client) -> Result<T> + Send) -> Result<T> {
        self.pool.with(f)
    }

    /// The `k` chunks nearest `query` (an embedding), best first.
    pub fn nearest(&self, query: &[f32], k: usize, filter: Option<&DocFilter>) -> Result<Vec<Hit>> {
        let dims = query.len() as i32;
        let q = vector_text(query);
        self.with(|c| {
            let rows = match filter {
                None => {
                    let mut tx = c.transaction()?;
                    tx.batch_execute(&format!(
                        "SET LOCAL hnsw.ef_search = {}",
                        (10 * k).clamp(200, 1000)
                    ))?;
                    let rows = tx.query(
                        &format!(
                            "SELECT e.chunk_id,
                                    1 - (e.vector::vector({dims}) <=> $1::text::vector({dims}))
                             FROM embeddings e
                             WHERE e.dims = {dims}
                             ORDER BY e.vector::vector({dims}) <=> $1::text::vector({dims})
                             LIMIT $2"
                        ),
                        &[&q, &(k as i64 + TIE_SLACK)],
                    )?;
                    tx.commit()?;
                    rows
                }
                Some(f) => {
                    let docs: Vec<i64> = f.documents().collect();
                    c.query(
                        "SELECT e.chunk_id, 1 - (e.vector <=> $1::text::vector)
                         FROM embeddings e JOIN chunks ch ON ch.id = e.chunk_id
                         WHERE e.dims = $3 AND ch.doc_id = ANY($4)
                         ORDER BY e.vector <=> $1::text::vector, e.chunk_id
                         LIMIT $2",
                        &[&q, &(k as i64 + TIE_SLACK), &dims, &docs],
                    )?
                }
            };
            let mut hits: Vec<Hit> = rows
                .iter()
                .map(|r| Hit {
                    chunk_id: r.get(0),
                    score: r.get::<_, f64>(1) as f32,
                })
                .collect();
            // Equal scores (chunks of the same text) in chunk order, as in memory.
            hits.sort_by(|a, b| {
                b.score
                    .total_cmp(&a.score)
                    .then(a.chunk_id.cmp(&b.chunk_id))
            });
            hits.truncate(k);
            Ok(hits)
        })
    }

    /// The `k` chunks that rank best for `query` by BM25, best first; chunks sharing no
    /// term with it are never returned; ties go to the earlier chunk.
    pub fn bm25(&self, query: &str, k: usize, filter: Option<&DocFilter>) -> Result<Vec<Hit>> {
        let mut terms: Vec<String> = Vec::new();
        text::analyze(query, |t| {
            if !terms.iter().any(|x| x == t) {
                terms.push(t.to_string());
            }
        });
        if terms.is_empty() || k == 0 {
            return Ok(Vec::new());
        }
        let docs: Option<Vec<i64>> = filter.map(|f| f.documents().collect());
        self.with(|c| {
            let rows = c.query(
                "WITH stats AS (
                     SELECT (SELECT value FROM meta WHERE key = 'chunks')::float8 AS n,
                            (SELECT value FROM meta WHERE key = 'terms')::float8 AS total),
                 w AS (
                     SELECT p.term,
                            ln(1 + (s.n - count(*) + 0.5) / (count(*) + 0.5)) * ($3::float8 + 1) AS w,
                            $4::float8 / greatest(CASE WHEN s.n > 0 THEN s.total / s.n ELSE 1 END,
                                                  1e-9) AS per_term
                     FROM postings p, stats s
                     WHERE p.term = ANY($1)
                     GROUP BY p.term, s.n, s.total)
                 SELECT p.chunk_id,
                        sum(w.w * p.tf / (p.tf + $3::float8 * (1 - $4::float8 + w.per_term * p.len)))
                            AS score
                 FROM postings p
                 JOIN w ON w.term = p.term
                 WHERE p.term = ANY($1) AND ($5::bigint[] IS NULL OR p.doc_id = ANY($5))
                 GROUP BY p.chunk_id
                 HAVING sum(p.tf) > 0
                 ORDER BY score DESC, p.chunk_id
                 LIMIT $2",
                &[
                    &terms,
                    &(k as i64),
                    &f64::from(K1),
                    &f64::from(B),
                    &docs,
                ],
            )?;
            Ok(rows
                .iter()
                .map(|r| Hit {
                    chunk_id: r.get(0),
                    score: r.get::<_, f64>(1) as f32,
                })
                .collect())
        })
    }
}

impl Corpus for PgSearch {
    fn chunks_indexed(&self) -> Result<usize> {
        self.with(|c| {
            // The count the writes keep in `meta` (BM25's N): a count(*) of the
            // embeddings scanned the table on every question.
            let n: i64 = c
                .query_one("SELECT value FROM meta WHERE key = 'chunks'", &[])?
                .get(0);
            Ok(n.max(0) as usize)
        })
    }

    fn retrievers<'a>(
        &'a self,
        kinds: &[RetrieverKind],
        embedder: &'a dyn Embedder,
    ) -> Vec<Box<dyn Retriever + 'a>> {
        kinds
            .iter()
            .map(|k| -> Box<dyn Retriever + 'a> {
                match k {
                    RetrieverKind::Vector => Box::new(PgVector {
                        search: self,
                        embedder,
                    }),
                    RetrieverKind::Bm25 => Box::new(PgBm25 { search: self }),
                }
            })
            .collect()
    }

    fn chunk_infos(&self, ids: &[i64]) -> Result<HashMap<i64, ChunkInfo>> {
        self.with(|c| {
            Ok(c.query(
                "SELECT c.id, c.doc_id, d.file_name, c.page_start, c.page_end, c.text
                 FROM chunks c JOIN documents d ON d.id = c.doc_id
                 WHERE c.id = ANY($1)",
                &[&ids],
            )?
            .iter()
            .map(|r| {
                (
                    r.get(0),
                    ChunkInfo {
                        doc_id: r.get(1),
                        file: r.get(2),
                        page_start: r.get::<_, i64>(3) as u32,
                        page_end: r.get::<_, i64>(4) as u32,
                        text: r.get(5),
                    },
                )
            })
            .collect())
        })
    }
}

/// Cosine similarity in the database.
struct PgVector<'a> {
    search: &'a PgSearch,
    embedder: &'a dyn Embedder,
}

impl Retriever for PgVector<'_> {
    fn name(&self) -> &str {
        "vector"
    }
    fn retrieve(&self, query: &str, top_k: usize, filter: Option<&DocFilter>) -> Result<Vec<Hit>> {
        let q = self.embedder.embed_query(query)?;
        self.search.nearest(&q, top_k, filter)
    }
    fn covers(&self, query: &str) -> bool {
        self.embedder.covers(query)
    }
}

/// BM25 in the database.
struct PgBm25<'a> {
    search: &'a PgSearch,
}

impl Retriever for PgBm25<'_> {
    fn name(&self) -> &str {
        "bm25"
    }
    fn retrieve(&self, query: &str, top_k: usize, filter: Option<&DocFilter>) -> Result<Vec<Hit>> {
        self.search.bm25(query, top_k, filter)
    }
}
