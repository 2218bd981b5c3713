//! The in-memory retrieval index over everything indexed (SQLite store), kept between
//! asks and brought up to date when the store's generation moves on. It holds no
//! chunk text and no f32 vector: it is built as the store streams its rows, and a
//! search reads the few vectors its ranking is made exact with and its sources' text
//! from the store ([`Engine::retrieval_corpus`]).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::{lock, Engine};
use crate::retrieve::{
    ChunkInfo, ChunkRow, ChunkTexts, Corpus, ExactVectors, IndexCorpus, IndexedChunk,
    RetrievalIndex,
};
use crate::store::Store;
use crate::Result;

/// The index and how often it was built from the whole store.
#[derive(Default)]
pub(super) struct IndexCache {
    slot: Mutex<Option<IndexSlot>>,
    /// Times the index was built from the whole store.
    full_builds: AtomicUsize,
    /// The store's embedding models with their chunk counts, and the generation they
    /// were read at, when the in-memory index does not hold them (PostgreSQL).
    made: Mutex<Option<(i64, Made)>>,
}

/// The store's embedding models with their chunk counts.
type Made = Vec<(String, usize)>;

/// The retrieval index, the store generation it reflects, and the embedding models
/// that made its vectors.
struct IndexSlot {
    generation: i64,
    models: Vec<String>,
    /// The store's embedding models with their chunk counts at `generation`.
    made: Vec<(String, usize)>,
    index: Arc<RetrievalIndex>,
}

/// The store's chunks as the retrieval index takes them.
fn indexed_chunks(chunks: Vec<crate::store::StoredChunk>) -> Vec<IndexedChunk> {
    chunks
        .into_iter()
        .map(|c| IndexedChunk {
            id: c.id,
            info: ChunkInfo {
                doc_id: c.doc_id,
                file: c.file,
                page_start: c.page_start,
                page_end: c.page_end,
                text: c.text,
            },
            embedding: c.embedding,
        })
        .collect()
}

/// The store as the in-memory index reads it at search time: chunks' text and
/// vectors by id.
struct StoreReader<'a>(&'a Mutex<Store>);

impl ChunkTexts for StoreReader<'_> {
    fn chunk_texts(&self, ids: &[i64]) -> Result<Vec<(i64, String)>> {
        lock(self.0).chunk_texts(ids)
    }
}

impl ExactVectors for StoreReader<'_> {
    fn exact_vectors(&self, ids: &[i64]) -> Result<Vec<(i64, Vec<f32>)>> {
        lock(self.0).chunk_vectors(ids)
    }
}

impl Engine {
    /// The in-memory retrieval index ([`Engine::retrieval_index`]) as a corpus to
    /// search: its vector ranking made exact with, and its sources' text read from,
    /// the store.
    pub fn retrieval_corpus(&self) -> Result<Box<dyn Corpus + '_>> {
        Ok(Box::new(IndexCorpus {
            index: self.retrieval_index()?,
            store: StoreReader(&self.db),
        }))
    }

    /// How many times the retrieval index was built from the whole store (the other
    /// changes were applied to it as updates).
    pub fn retrieval_index_builds(&self) -> usize {
        self.index_cache.full_builds.load(Ordering::Relaxed)
    }

    /// The retrieval index over everything indexed, brought up to date when the store
    /// changed: documents added or removed since it was made are added to it or taken
    /// out of it ([`RetrievalIndex::update`]: only the new documents' chunks are read
    /// from the store), and anything else (vectors made by another embedding model, a
    /// document that is not newer) rebuilds it from the store.
    pub fn retrieval_index(&self) -> Result<Arc<RetrievalIndex>> {
        let generation = self.store().generation()?;
        let mut slot = lock(&self.index_cache.slot);
        if let Some(s) = slot.as_ref() {
            if s.generation == generation {
                return Ok(s.index.clone());
            }
        }
        let made = self.store().embedding_models()?;
        let models: Vec<String> = made.iter().map(|(m, _)| m.clone()).collect();
        if let Some(old) = slot.take() {
            if old.models == models {
                let docs = self.store().searchable_documents()?;
                let have = old.index.documents();
                let removed: std::collections::HashSet<i64> =
                    have.difference(&docs).copied().collect();
                let mut added: Vec<i64> = docs.difference(&have).copied().collect();
                added.sort_unstable();
                let chunks = indexed_chunks(self.store().load_chunks_of(&added)?);
                // The index is shared with searches still running only rarely; then
                // the update works on a copy.
                let mut index = Arc::try_unwrap(old.index).unwrap_or_else(|a| (*a).clone());
                if index.update(&removed, chunks).is_ok() {
                    let index = Arc::new(index);
                    *slot = Some(IndexSlot {
                        generation,
                        models,
                        made,
                        index: index.clone(),
                    });
                    return Ok(index);
                }
            }
        }
        let index = Arc::new(self.build_index()?);
        self.index_cache.full_builds.fetch_add(1, Ordering::Relaxed);
        *slot = Some(IndexSlot {
            generation,
            models,
            made,
            index: index.clone(),
        });
        Ok(index)
    }

    /// [`Engine::check_index_embedder`] for a search: the embedding models that made
    /// the vectors are counted once a store generation, not on every question (a scan
    /// of every vector in the store: 30–40 ms at 57k chunks in PostgreSQL, growing
    /// with the library). The in-memory index read them when it was last brought up
    /// to date; a database that retrieves by itself (PostgreSQL) keeps its own count.
    /// The generation is read first, so a write in between only makes the next
    /// question count again.
    pub(super) fn check_search_embedder(&self) -> Result<()> {
        let generation = self.store().generation()?;
        let kept = match lock(&self.index_cache.slot).as_ref() {
            Some(s) if s.generation == generation => Some(s.made.clone()),
            _ => lock(&self.index_cache.made)
                .as_ref()
                .filter(|(g, _)| *g == generation)
                .map(|(_, made)| made.clone()),
        };
        let made = match kept {
            Some(made) => made,
            None => {
                let made = self.store().embedding_models()?;
                *lock(&self.index_cache.made) = Some((generation, made.clone()));
                made
            }
        };
        self.check_made_by(&made)
    }

    /// The index over every searchable chunk, filled as the store streams them: no
    /// text and no f32 vector is kept, and no list of every row is made.
    fn build_index(&self) -> Result<RetrievalIndex> {
        let store = self.store();
        let capacity: usize = store
            .documents()?
            .iter()
            .filter(|d| d.status == crate::store::DocStatus::Done)
            .map(|d| d.chunks)
            .sum();
        let mut b = RetrievalIndex::builder(false, capacity);
        store.for_each_chunk(&mut |c| {
            let row = ChunkRow {
                id: c.id,
                doc_id: c.doc_id,
                page_start: c.page_start,
                page_end: c.page_end,
            };
            b.push(row, &c.file, &c.text, &c.embedding)?;
            if b.len().is_multiple_of(TRIM_EVERY) {
                release_free_heap();
            }
            Ok(())
        })?;
        drop(store);
        let index = b.build()?;
        release_free_heap();
        Ok(index)
    }
}

/// Chunks between two returns of the free heap to the system during a build.
const TRIM_EVERY: usize = 1 << 16;

/// Give the pages the allocator holds free back to the system: millions of postings
/// lists grow while the index is built, and the buffers they outgrow would otherwise
/// stay resident (glibc's `malloc_trim`; elsewhere nothing to do).
fn release_free_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory; it is safe to call at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}
