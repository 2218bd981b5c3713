//! `quire-bench store --store postgres://…`: the PostgreSQL index beside the SQLite
//! one on the same chunks, in the same run. The corpus is chunked and embedded once;
//! each document is then written to both stores (timed), and every corpus question is
//! retrieved (vector + BM25, reciprocal-rank fused, top 4) from the in-memory indexes
//! built over SQLite and from the database, with the query's vector computed in
//! advance, so that the figures are retrieval's alone. It also counts the questions
//! whose top 4 are the same.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::time::Instant;

use quire::embed::Embedder;
use quire::engine::Cancel;
use quire::retrieve::{self, Corpus, IndexedChunk, RetrievalIndex, RetrieveOptions, Retriever};
use quire::store::{NewDocument, Store};
use quire::Result;
use serde::Serialize;

use crate::retrieval::FixedEmbedder;

/// Latencies of one store, in milliseconds.
#[derive(Debug, Clone, Serialize)]
pub struct Side {
    /// Writing one document (its chunks, vectors and postings), median and worst.
    pub insert_p50_ms: f64,
    pub insert_max_ms: f64,
    /// One fused retrieval (both retrievers, top 4), median and 99th percentile.
    pub query_p50_ms: f64,
    pub query_p99_ms: f64,
}

/// The report.
#[derive(Debug, Clone, Serialize)]
pub struct StoreReport {
    pub chunks: usize,
    pub documents: usize,
    pub questions: usize,
    /// Questions whose fused top 4 is the same from both.
    pub same_top4: usize,
    /// SQLite, retrieval over the in-memory indexes.
    pub sqlite: Side,
    /// PostgreSQL + pgvector, retrieval in the database.
    pub postgres: Side,
}

fn percentile(xs: &mut [f64], p: f64) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    xs.sort_by(f64::total_cmp);
    let i = ((p * xs.len() as f64).ceil() as usize).clamp(1, xs.len()) - 1;
    xs[i]
}

/// Write the chunks of each document to `store`; the time of each write.
fn fill(
    store: &mut Store,
    docs: &BTreeMap<i64, Vec<&IndexedChunk>>,
    model: &str,
) -> Result<Vec<f64>> {
    let mut times = Vec::with_capacity(docs.len());
    for chunks in docs.values() {
        let split: Vec<quire::ingest::split::Chunk> = chunks
            .iter()
            .map(|c| quire::ingest::split::Chunk {
                text: c.info.text.clone(),
                page_start: c.info.page_start,
                page_end: c.info.page_end,
                char_start: 0,
                char_end: 0,
                tokens: 0,
            })
            .collect();
        let embs: Vec<Vec<f32>> = chunks.iter().map(|c| c.embedding.clone()).collect();
        let t = Instant::now();
        store.insert_document(&NewDocument {
            path: &format!("/bench/{}", chunks[0].info.file),
            hash: &chunks[0].info.file,
            bytes: 1,
            title: None,
            pages: &[],
            chunks: &split,
            embeddings: &embs,
            model,
        })?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    Ok(times)
}

/// Run the comparison: `chunks` (embedded by `embedder`), `questions` asked `reps`
/// times each, the PostgreSQL database at `url` (emptied first: give it one of its own).
pub fn compare(
    chunks: &[IndexedChunk],
    questions: &[String],
    embedder: &dyn Embedder,
    url: &str,
    reps: usize,
    mut progress: impl FnMut(&str),
) -> Result<StoreReport> {
    let mut docs: BTreeMap<i64, Vec<&IndexedChunk>> = BTreeMap::new();
    for c in chunks {
        docs.entry(c.info.doc_id).or_default().push(c);
    }
    let dir = tempfile::tempdir().map_err(|e| quire::Error::io(Path::new("tempdir"), e))?;
    let mut lite = Store::open(&dir.path().join("index.sqlite"))?;
    let mut pg = Store::connect(url, "bench")?;
    for d in pg.documents()? {
        pg.remove_document(d.id)?;
    }
    progress("writing the documents to SQLite and PostgreSQL");
    let mut lite_ins = fill(&mut lite, &docs, "bench")?;
    let mut pg_ins = fill(&mut pg, &docs, "bench")?;
    let memory = RetrievalIndex::build(
        lite.load_chunks()?
            .into_iter()
            .map(|c| IndexedChunk {
                id: c.id,
                info: retrieve::ChunkInfo {
                    doc_id: c.doc_id,
                    file: c.file,
                    page_start: c.page_start,
                    page_end: c.page_end,
                    text: c.text,
                },
                embedding: c.embedding,
            })
            .collect(),
    )?;
    let db = pg
        .in_database()
        .ok_or_else(|| quire::Error::Invalid(format!("{url} does not retrieve in the database")))?;
    let opts = RetrieveOptions {
        top_k: 4,
        route_by_language: false,
        ..Default::default()
    };
    let cancel = Cancel::new();
    let (mut lq, mut pq) = (Vec::new(), Vec::new());
    let mut same = 0;
    progress("asking");
    for q in questions {
        let fixed = FixedEmbedder(embedder.embed_query(q)?);
        let mem = memory.retrievers(&opts.retrievers, &fixed);
        let mem: Vec<&dyn Retriever> = mem.iter().map(|b| b.as_ref()).collect();
        let inside = db.retrievers(&opts.retrievers, &fixed);
        let inside: Vec<&dyn Retriever> = inside.iter().map(|b| b.as_ref()).collect();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for _ in 0..reps.max(1) {
            let t = Instant::now();
            a = retrieve::retrieve(q, &mem, None, &opts, &cancel)?.nodes;
            lq.push(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            b = retrieve::retrieve(q, &inside, None, &opts, &cancel)?.nodes;
            pq.push(t.elapsed().as_secs_f64() * 1e3);
        }
        // The same chunks (ids differ when the database held documents before).
        let key =
            |c: &retrieve::ChunkInfo| (c.file.clone(), c.page_start, c.page_end, c.text.clone());
        let mine: Vec<_> = a
            .iter()
            .map(|n| memory.chunk(n.chunk_id).as_ref().map(key))
            .collect();
        let ids: Vec<i64> = b.iter().map(|n| n.chunk_id).collect();
        let infos = db.chunk_infos(&ids)?;
        let theirs: Vec<_> = ids.iter().map(|i| infos.get(i).map(key)).collect();
        if mine == theirs {
            same += 1;
        }
    }
    Ok(StoreReport {
        chunks: chunks.len(),
        documents: docs.len(),
        questions: questions.len(),
        same_top4: same,
        sqlite: Side {
            insert_p50_ms: percentile(&mut lite_ins, 0.5),
            insert_max_ms: percentile(&mut lite_ins, 1.0),
            query_p50_ms: percentile(&mut lq, 0.5),
            query_p99_ms: percentile(&mut lq, 0.99),
        },
        postgres: Side {
            insert_p50_ms: percentile(&mut pg_ins, 0.5),
            insert_max_ms: percentile(&mut pg_ins, 1.0),
            query_p50_ms: percentile(&mut pq, 0.5),
            query_p99_ms: percentile(&mut pq, 0.99),
        },
    })
}

impl fmt::Display for StoreReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} chunks in {} documents; {} questions, the same top 4 for {}",
            self.chunks, self.documents, self.questions, self.same_top4
        )?;
        writeln!(
            f,
            "{:<34} {:>10} {:>10} {:>10} {:>10}",
            "", "insert p50", "insert max", "query p50", "query p99"
        )?;
        for (name, s) in [
            ("SQLite + in-memory indexes", &self.sqlite),
            ("PostgreSQL + pgvector (in DB)", &self.postgres),
        ] {
            writeln!(
                f,
                "{:<34} {:>8.1}ms {:>8.1}ms {:>8.2}ms {:>8.2}ms",
                name, s.insert_p50_ms, s.insert_max_ms, s.query_p50_ms, s.query_p99_ms
            )?;
        }
        write!(
            f,
            "query p50 ratio (PostgreSQL / in-memory): {:.1}×",
            self.postgres.query_p50_ms / self.sqlite.query_p50_ms.max(1e-9)
        )
    }
}
