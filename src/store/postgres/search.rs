//! Retrieval in the PostgreSQL index: nothing is loaded into memory.
//!
//! - **Vector:** cosine similarity by pgvector, through the HNSW index of the
//!   vectors' dimension (`hnsw.ef_search` at least 200, or ten times the hits
//!   asked), so a query reads a few hundred rows of the graph. A library of at most
//!   [`EXACT_UP_TO`] chunks is ranked exactly instead (HNSW can miss a neighbour; a
//!   scan of that many is a few milliseconds), and so is a query restricted to some
//!   documents (a scope): an HNSW scan filtered afterwards could return fewer hits
//!   than asked.
//! - **BM25:** the query analyzed as chunks are ([`crate::text::analyzer`]), then
//!   Lucene's Okapi BM25: `idf = ln(1 + (N − df + 0.5) / (df + 0.5))`, `score = Σ idf
//!   · tf · (k1 + 1) / (tf + k1 · (1 − b + b · len / avg_len))`, with N and the
//!   average length from `meta` and each term's document frequency from
//!   `term_stats`. The postings are kept a row per term and document (`term_docs`),
//!   each row one list of (chunk, tf, chunk length), merged by block of documents
//!   ([`super::blocks`]: a term's list is a few rows), read by the primary key and
//!   scored here. Not every row of a common term is read: [`super::maxscore`] reads
//!   the rare terms whole and the others only in the documents that can still rank,
//!   so a question's reads grow far slower than the library. The same formula as the in-memory index, in double precision
//!   rather than single: scores agree to about 1e-6, so two chunks tied that closely
//!   may swap.
//!
//! Each retriever takes a connection from a small pool of its own
//! ([`Pool`]), so a question never waits for the indexer's transaction on the
//! store's connection.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use postgres::{Client, IsolationLevel, Transaction};

use super::blocks;
use super::bm25::Bm25Stats;
use super::connection::{vector_text, Pool};
use super::list_cache::ListCache;
use super::maxscore::{self, Reads, TermList};
use crate::embed::Embedder;
use crate::retrieve::{ChunkInfo, Corpus, DocFilter, Hit, Retriever, RetrieverKind, TermWeight};
use crate::text::analyzer as text;
use crate::Result;

/// Hits read past the `k` asked, so that chunks tied with the k-th (the same text
/// twice) are ordered by id, as the in-memory index orders them.
const TIE_SLACK: i64 = 8;

/// Up to this many chunks in the library, a question's vectors are ranked exactly
/// (every vector read: a few milliseconds at this size) rather than through HNSW,
/// which can miss a neighbour: a small library ranks as the SQLite index does.
const EXACT_UP_TO: i64 = 10_000;

/// The chunks in the library, as the writes keep the count in `meta` (BM25's N).
fn chunks_kept(c: &mut Client) -> Result<i64> {
    Ok(
        c.query_opt("SELECT value FROM meta WHERE key = 'chunks'", &[])?
            .map_or(0, |r| r.get(0)),
    )
}

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

/// The migration that keeps each term's document frequency (in chunks) in a table
/// of its own (version 6), so a question reads a term's weight in one row instead
/// of counting its lists, and [`maxscore`] can leave the lists of common terms
/// unread. The writes keep it with the lists, in the same transaction. Rows are
/// updated in place by every document, hence the free space in each page.
pub(super) const TERM_STATS: &str = "CREATE TABLE term_stats (
         term TEXT PRIMARY KEY,
         df   BIGINT NOT NULL
     ) WITH (fillfactor = 70);
     INSERT INTO term_stats (term, df)
         SELECT term, sum(octet_length(postings) / 16) FROM term_docs GROUP BY term;";

/// A BM25 ranking and the query's term weights.
type Ranked = (Vec<Hit>, Vec<TermWeight>);

/// The in-database retrievers of one PostgreSQL index.
pub struct PgSearch {
    pool: Pool,
    /// The common terms' lists, kept between questions ([`ListCache`]).
    cache: Mutex<ListCache>,
}

impl PgSearch {
    pub fn new(url: &str) -> Self {
        Self {
            pool: Pool::new(url),
            cache: Mutex::new(ListCache::default()),
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
                None if chunks_kept(c)? <= EXACT_UP_TO => c.query(
                    "SELECT e.chunk_id, 1 - (e.vector <=> $1::text::vector)
                     FROM embeddings e
                     WHERE e.dims = $3
                     ORDER BY e.vector <=> $1::text::vector, e.chunk_id
                     LIMIT $2",
                    &[&q, &(k as i64 + TIE_SLACK), &dims],
                )?,
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
    /// In one read-only snapshot: N and the total length from `meta`, each term's
    /// document frequency from `term_stats` (over the whole library, so that a
    /// scope's ranking weighs terms as the in-memory index does), then the terms'
    /// lists as [`maxscore::top_k`] asks for them: the rare terms whole, the common
    /// ones only in the documents that can still rank.
    ///
    /// With the ranking come the query's [`Self::term_weights`], from the same counts.
    pub fn bm25(
        &self,
        query: &str,
        k: usize,
        filter: Option<&DocFilter>,
    ) -> Result<(Vec<Hit>, Vec<TermWeight>)> {
        Ok(self.bm25_reads(query, k, filter)?.0)
    }

    /// [`Self::bm25`], and what it read.
    pub fn bm25_reads(
        &self,
        query: &str,
        k: usize,
        filter: Option<&DocFilter>,
    ) -> Result<(Ranked, Reads)> {
        let terms = query_terms(query);
        if terms.is_empty() {
            return Ok(((Vec::new(), Vec::new()), Reads::default()));
        }
        self.with(|c| {
            let mut tx = c
                .build_transaction()
                .isolation_level(IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()?;
            let Statistics {
                n,
                total,
                df,
                generation,
                ids,
            } = statistics(&mut tx, &terms)?;
            let bm = Bm25Stats::new(n as f64, total as f64);
            let weights: Vec<TermWeight> = terms
                .iter()
                .zip(&df)
                .map(|(t, &d)| TermWeight::new(t.clone(), d, n))
                .collect();
            let weighed: Vec<(&str, f64)> = terms
                .iter()
                .zip(&df)
                .map(|(t, &d)| (t.as_str(), if d == 0 { 0.0 } else { bm.weight(d as f64) }))
                .collect();
            let allows = |doc: i64| filter.is_none_or(|f| f.allows(doc));
            let mut lists = TxLists {
                tx: &mut tx,
                cache: &self.cache,
                generation,
                layout: None,
                hits: 0,
            };
            let (best, mut reads) = maxscore::top_k(&weighed, k, ids, n, &bm, &allows, &mut lists)?;
            reads.cached_terms = lists.hits;
            tx.commit()?;
            let hits = best
                .into_iter()
                .map(|(chunk_id, score)| Hit {
                    chunk_id,
                    score: score as f32,
                })
                .collect();
            Ok(((hits, weights), reads))
        })
    }

    /// Each distinct term of `query` with its weight over the whole library, as the
    /// in-memory index gives them ([`crate::retrieve::bm25`]'s `term_weights`: the
    /// same f32 idf from the same counts), for the "not found" check.
    pub fn term_weights(&self, query: &str) -> Result<Vec<TermWeight>> {
        let terms = query_terms(query);
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let Statistics { n, df, .. } = self.with(|c| statistics(&mut c.transaction()?, &terms))?;
        Ok(terms
            .into_iter()
            .zip(df)
            .map(|(term, df)| TermWeight::new(term, df, n))
            .collect())
    }
}

/// What a ranking needs of the collection, as the writes keep it in `meta` and
/// `term_stats`.
struct Statistics {
    /// Chunks (BM25's N).
    n: usize,
    /// Their total length in terms.
    total: i64,
    /// Each query term's document frequency, in chunks.
    df: Vec<usize>,
    /// The index's state (bumped by every write and removal).
    generation: i64,
    /// The least and the greatest chunk id, when there are chunks.
    ids: Option<(i64, i64)>,
}

fn statistics(tx: &mut Transaction<'_>, terms: &[String]) -> Result<Statistics> {
    let r = tx.query_one(
        "SELECT (SELECT value FROM meta WHERE key = 'chunks'),
                (SELECT value FROM meta WHERE key = 'terms'),
                (SELECT value FROM meta WHERE key = 'generation'),
                (SELECT min(id) FROM chunks), (SELECT max(id) FROM chunks)",
        &[],
    )?;
    let (n, total, generation): (i64, i64, i64) = (r.get(0), r.get(1), r.get(2));
    let ids = r.get::<_, Option<i64>>(3).zip(r.get::<_, Option<i64>>(4));
    let rows = tx.query(
        "SELECT term, df FROM term_stats WHERE term = ANY($1)",
        &[&terms],
    )?;
    let known: HashMap<String, i64> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    let df = terms
        .iter()
        .map(|t| known.get(t).map_or(0, |&d| d.max(0) as usize))
        .collect();
    Ok(Statistics {
        n: n.max(0) as usize,
        total,
        df,
        generation,
        ids,
    })
}

/// The term lists in a transaction's snapshot, the common ones from the cache when
/// it holds them for this snapshot's generation.
struct TxLists<'a, 'b> {
    tx: &'a mut Transaction<'b>,
    cache: &'a Mutex<ListCache>,
    generation: i64,
    /// The documents not merged into blocks and the merged ones removed
    /// ([`blocks::layout`]), read with the first list the cache does not give.
    layout: Option<(Vec<i64>, Vec<i64>)>,
    /// Lists the cache gave.
    hits: usize,
}

impl TxLists<'_, '_> {
    fn cached(&self, term: &str) -> Option<Arc<TermList>> {
        self.cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(self.generation, term)
    }
}

impl maxscore::Lists for TxLists<'_, '_> {
    fn whole(&mut self, term: &str) -> Result<Arc<TermList>> {
        if let Some(list) = self.cached(term) {
            self.hits += 1;
            return Ok(list);
        }
        let (unmerged, dead) = &*match &mut self.layout {
            Some(layout) => layout,
            none => none.insert(blocks::layout(self.tx)?),
        };
        // The term's block rows, and its rows in the documents not merged yet.
        // Unordered: the list sorts them by document.
        let rows = self.tx.query(
            "SELECT NULL::bigint, postings FROM term_blocks WHERE term = $1
             UNION ALL
             SELECT doc_id, postings FROM term_docs WHERE term = $1 AND doc_id = ANY($2)",
            &[&term, unmerged],
        )?;
        let list = Arc::new(TermList::from_parts(
            rows.iter()
                .map(|r| (r.get::<_, Option<i64>>(0), r.get::<_, &[u8]>(1))),
            dead,
        )?);
        self.cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .put(self.generation, term, &list);
        Ok(list)
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

impl Corpus for PgSearch {
    fn chunks_indexed(&self) -> Result<usize> {
        self.with(|c| {
            // The count the writes keep in `meta`: a count(*) of the embeddings
            // scanned the table on every question.
            Ok(chunks_kept(c)?.max(0) as usize)
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
