//! The in-memory retrieval index over everything indexed (SQLite store), kept between
//! asks and brought up to date when the store's generation moves on.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::{lock, Engine};
use crate::retrieve::{ChunkInfo, IndexedChunk, RetrievalIndex};
use crate::Result;

/// The index and how often it was built from the whole store.
#[derive(Default)]
pub(super) struct IndexCache {
    slot: Mutex<Option<IndexSlot>>,
    /// Times the index was built from the whole store.
    full_builds: AtomicUsize,
}

/// The retrieval index, the store generation it reflects, and the embedding models
/// that made its vectors.
struct IndexSlot {
    generation: i64,
    models: Vec<String>,
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

impl Engine {
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
        let models: Vec<String> = self
            .store()
            .embedding_models()?
            .into_iter()
            .map(|(m, _)| m)
            .collect();
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
                        index: index.clone(),
                    });
                    return Ok(index);
                }
            }
        }
        let chunks = indexed_chunks(self.store().load_chunks()?);
        let index = Arc::new(RetrievalIndex::build(chunks)?);
        self.index_cache.full_builds.fetch_add(1, Ordering::Relaxed);
        *slot = Some(IndexSlot {
            generation,
            models,
            index: index.clone(),
        });
        Ok(index)
    }
}
