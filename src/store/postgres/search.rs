//! Retrieval in the PostgreSQL index: nothing is loaded into memory.
//!
//! - **Vector:** cosine similarity by pgvector, through the HNSW index of the
//!   vectors' dimension (`hnsw.ef_search` at least 200, or ten times the hits
//!   asked), so a query reads a few hundred rows of the graph. A query restricted to
//!   some documents (a scope) is ranked exactly over their chunks instead: an HNSW scan
//!   filtered afterwards could return fewer hits than asked.
//! - **BM25:** the query analyzed as chunks are ([`crate::text::analyzer`]), then
//!   Lucene's Okapi BM25: `idf = ln(1 + (N − df + 0.5) / (df + 0.5))`, `score = Σ idf
//!   · tf · (k1 + 1) / (tf + k1 · (1 − b + b · len / avg_len))`, with N and the
//!   average length from `meta`. The postings are kept a row per term and document
//!   (`term_docs`), each row one list of (chunk, tf, chunk length): a question reads
//!   its terms' rows by the primary key, a few hundred rows where it read one per
//!   posting (tens of thousands, at 1.4 µs each in PostgreSQL's executor), and sums
//!   the scores here. The same formula as the in-memory index, in double precision
//!   rather than single: scores agree to about 1e-6, so two chunks tied that closely
//!   may swap.
//!
//! Each retriever takes a connection from a small pool of its own
//! ([`Pool`]), so a question never waits for the indexer's transaction on the
//! store's connection.

use std::collections::HashMap;

use postgres::Client;

use super::connection::{vector_text, Pool};
use crate::embed::Embedder;
use crate::retrieve::{ChunkInfo, Corpus, DocFilter, Hit, Retriever, RetrieverKind, TermWeight};
use crate::text::analyzer as text;
use crate::text::bm25::{B, K1};
use crate::Result;

/// Hits read past the `k` asked, so that chunks tied with the k-th (the same text
/// twice) are ordered by id, as the in-memory index orders them.
const TIE_SLACK: i64 = 8;

/// The migration that puts each chunk's length and document in its postings and
/// makes the primary key cover them (version 4; [`TERM_LISTS`] replaces its table).
pub(super) const POSTINGS_COVERED: &str =
    "ALTER TABLE postings ADD COLUMN len INTEGER, ADD COLUMN doc_id BIGINT;
     UPDATE postings p SET len = c.terms, doc_id = c.doc_id FROM chunks c WHERE c.id = p.chunk_id;
     ALTER TABLE postings ALTER COLUMN len SET NOT NULL, ALTER COLUMN doc_id SET NOT NULL;
     ALTER TABLE postings DROP CONSTRAINT postings_pkey;
     ALTER TABLE postings ADD PRIMARY KEY (term, chunk_id) INCLUDE (tf, len, doc_id);";

/// The migration from a row per posting to a row per term and document holding
/// its postings as one list ([`push_posting`]'s bytes, built here by `int8send` and
/// `int4send`): a question reads a few rows a term, where it read (and PostgreSQL
/// aggregated) one row per posting, 1.4 µs each. Stored uncompressed: a list is
/// read whole by every question that has its term.
pub(super) const TERM_LISTS: &str = "CREATE TABLE term_docs (
         term     TEXT NOT NULL,
         doc_id   BIGINT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
         postings BYTEA NOT NULL,
         PRIMARY KEY (term, doc_id)
     );
     ALTER TABLE term_docs ALTER COLUMN postings SET STORAGE EXTERNAL;
     INSERT INTO term_docs (term, doc_id, postings)
         SELECT term, doc_id,
                string_agg(int8send(chunk_id) || int4send(tf) || int4send(len), ''::bytea
                           ORDER BY chunk_id)
         FROM postings GROUP BY term, doc_id;
     CREATE INDEX term_docs_by_doc ON term_docs(doc_id);
     DROP TABLE postings;";

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
    ///
    /// One statement reads the query's terms' lists (every document's, so that each
    /// term's document frequency counts the whole library, as a scope's ranking
    /// does in memory) with N and the total length from `meta`, in one snapshot; the
    /// scores are summed here, term by term in the query's order.
    ///
    /// With the ranking come the query's [`Self::term_weights`], counted from the same
    /// lists: one read where the "not found" check made a second one of the same rows.
    pub fn bm25(
        &self,
        query: &str,
        k: usize,
        filter: Option<&DocFilter>,
    ) -> Result<(Vec<Hit>, Vec<TermWeight>)> {
        let terms = query_terms(query);
        if terms.is_empty() || k == 0 {
            return Ok((Vec::new(), self.term_weights(query)?));
        }
        let rows = self.with(|c| {
            Ok(c.query(
                "SELECT t.term, t.doc_id, t.postings, m.n, m.total
                 FROM term_docs t,
                      (SELECT (SELECT value FROM meta WHERE key = 'chunks') AS n,
                              (SELECT value FROM meta WHERE key = 'terms') AS total) m
                 WHERE t.term = ANY($1)",
                &[&terms],
            )?)
        })?;
        let Some(first) = rows.first() else {
            return Ok((Vec::new(), self.term_weights(query)?));
        };
        let (n, total): (i64, i64) = (first.get(3), first.get(4));
        let mut lists: Vec<Vec<(i64, &[u8])>> = vec![Vec::new(); terms.len()];
        for r in &rows {
            let term: &str = r.get(0);
            if let Some(i) = terms.iter().position(|t| t == term) {
                lists[i].push((r.get(1), r.get(2)));
            }
        }
        let bm = Bm25Stats::new(n as f64, total as f64);
        let mut scores: HashMap<i64, f64> = HashMap::new();
        let mut weights = Vec::with_capacity(terms.len());
        for (list, term) in lists.iter_mut().zip(terms) {
            // The same order whatever order the rows came in: the sums are exact.
            list.sort_unstable_by_key(|(doc, _)| *doc);
            let df: usize = list.iter().map(|(_, p)| p.len() / POSTING_BYTES).sum();
            weights.push(TermWeight::new(term, df, n.max(0) as usize));
            if df == 0 {
                continue;
            }
            let w = bm.weight(df as f64);
            for (doc, postings) in list.iter() {
                if filter.is_some_and(|f| !f.allows(*doc)) {
                    continue;
                }
                for (chunk, tf, len) in read_postings(postings)? {
                    *scores.entry(chunk).or_insert(0.0) += bm.score(w, tf, len);
                }
            }
        }
        let mut hits: Vec<(i64, f64)> = scores.into_iter().collect();
        let best = |a: &(i64, f64), b: &(i64, f64)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if hits.len() > k {
            hits.select_nth_unstable_by(k - 1, best);
            hits.truncate(k);
        }
        hits.sort_unstable_by(best);
        let hits = hits
            .into_iter()
            .map(|(chunk_id, score)| Hit {
                chunk_id,
                score: score as f32,
            })
            .collect();
        Ok((hits, weights))
    }

    /// Each distinct term of `query` with its weight over the whole library, as the
    /// in-memory index gives them ([`crate::retrieve::bm25`]'s `term_weights`: the
    /// same f32 idf from the same counts), for the "not found" check.
    pub fn term_weights(&self, query: &str) -> Result<Vec<TermWeight>> {
        let terms = query_terms(query);
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let (n, chunks) = self.with(|c| {
            let n: i64 = c
                .query_one("SELECT value FROM meta WHERE key = 'chunks'", &[])?
                .get(0);
            // A list's length without reading it: it is stored uncompressed.
            let rows = c.query(
                "SELECT term, sum(octet_length(postings))::bigint FROM term_docs
                 WHERE term = ANY($1) GROUP BY term",
                &[&terms],
            )?;
            let chunks: HashMap<String, i64> = rows
                .iter()
                .map(|r| (r.get(0), r.get::<_, i64>(1) / POSTING_BYTES as i64))
                .collect();
            Ok((n.max(0) as usize, chunks))
        })?;
        Ok(terms
            .into_iter()
            .map(|term| {
                let df = chunks.get(&term).map_or(0, |&c| c.max(0) as usize);
                TermWeight::new(term, df, n)
            })
            .collect())
    }
}

/// The distinct terms of `query`, in their order, analyzed as chunks are.
fn query_terms(query: &str) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    text::analyze(query, |t| {
        if !terms.iter().any(|x| x == t) {
            terms.push(t.to_string());
        }
    });
    terms
}

/// Bytes of one posting in a term's list: the chunk's id (8), the term's frequency
/// there (4) and the chunk's length in terms (4), big-endian (as `int8send` and
/// `int4send` write them, so the migration builds the lists in SQL).
pub(super) const POSTING_BYTES: usize = 16;

/// Append a posting to a term's list of one document.
pub(super) fn push_posting(list: &mut Vec<u8>, chunk_id: i64, tf: i32, len: i32) {
    list.extend_from_slice(&chunk_id.to_be_bytes());
    list.extend_from_slice(&tf.to_be_bytes());
    list.extend_from_slice(&len.to_be_bytes());
}

/// The postings of a list: (chunk, term frequency, chunk length).
fn read_postings(list: &[u8]) -> Result<impl Iterator<Item = (i64, i32, i32)> + '_> {
    if !list.len().is_multiple_of(POSTING_BYTES) {
        return Err(crate::Error::Invalid(format!(
            "a BM25 postings list of {} bytes (not a multiple of {POSTING_BYTES})",
            list.len()
        )));
    }
    Ok(list.chunks_exact(POSTING_BYTES).map(|p| {
        let (mut id, mut tf, mut len) = ([0; 8], [0; 4], [0; 4]);
        id.copy_from_slice(&p[..8]);
        tf.copy_from_slice(&p[8..12]);
        len.copy_from_slice(&p[12..]);
        (
            i64::from_be_bytes(id),
            i32::from_be_bytes(tf),
            i32::from_be_bytes(len),
        )
    }))
}

/// Lucene's Okapi BM25 with the collection's statistics, in double precision.
struct Bm25Stats {
    n: f64,
    /// `b / avg_len`.
    per_term: f64,
}

impl Bm25Stats {
    fn new(n: f64, total: f64) -> Self {
        let avg = if n > 0.0 { total / n } else { 1.0 };
        Self {
            n,
            per_term: f64::from(B) / avg.max(1e-9),
        }
    }

    /// A term's weight, `idf · (k1 + 1)`, from its document frequency.
    fn weight(&self, df: f64) -> f64 {
        (1.0 + (self.n - df + 0.5) / (df + 0.5)).ln() * (f64::from(K1) + 1.0)
    }

    /// A posting's share of its chunk's score.
    fn score(&self, weight: f64, tf: i32, len: i32) -> f64 {
        let (tf, k1) = (f64::from(tf), f64::from(K1));
        weight * tf / (tf + k1 * (1.0 - f64::from(B) + self.per_term * f64::from(len)))
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
        Ok(self.search.bm25(query, top_k, filter)?.0)
    }
    /// The weights from the database; none if it cannot be read (the check then goes
    /// by the vector scores alone, as for a retriever without terms).
    fn term_weights(&self, query: &str) -> Vec<TermWeight> {
        self.search.term_weights(query).unwrap_or_default()
    }
    /// The ranking and the weights from one read of the query's terms' lists.
    fn retrieve_weighed(
        &self,
        query: &str,
        top_k: usize,
        filter: Option<&DocFilter>,
    ) -> Result<(Vec<Hit>, Vec<TermWeight>)> {
        self.search.bm25(query, top_k, filter)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_postings_list_reads_back_what_was_pushed() {
        let mut list = Vec::new();
        push_posting(&mut list, 7, 3, 120);
        push_posting(&mut list, i64::MAX - 1, 255, 1);
        assert_eq!(list.len(), 2 * POSTING_BYTES);
        let read: Vec<_> = read_postings(&list).unwrap().collect();
        assert_eq!(read, [(7, 3, 120), (i64::MAX - 1, 255, 1)]);
        // The bytes `int8send(7) || int4send(3) || int4send(120)` make in the migration.
        assert_eq!(&list[..16], b"\0\0\0\0\0\0\0\x07\0\0\0\x03\0\0\0\x78");
        assert!(read_postings(&list[..20]).is_err());
    }

    #[test]
    fn the_weights_are_lucenes_bm25() {
        // N = 10 chunks of 100 terms on average; a term in 2 of them.
        let bm = Bm25Stats::new(10.0, 1000.0);
        let (w, k1) = (bm.weight(2.0), f64::from(K1));
        assert!((w - (1.0f64 + 8.5 / 2.5).ln() * (k1 + 1.0)).abs() < 1e-12);
        // A chunk of the average length: tf · (k1 + 1) / (tf + k1).
        assert!((bm.score(w, 2, 100) - w * 2.0 / (2.0 + k1)).abs() < 1e-12);
    }
}
