//! The in-memory retrieval index over one set of chunks: the vector and BM25 indexes,
//! each chunk's document and pages (one row per chunk, by id) and each document's file
//! name — and the chunks' text and f32 vectors only when it is asked to keep them.
//!
//! An index that keeps them ([`RetrievalIndex::build`]) answers searches alone. The
//! engine's does not ([`RetrievalIndex::builder`] with `keep` false, filled row by row
//! as the store streams them): its vectors are int8 codes, rescored exactly from the
//! stored vectors, and its sources' text is read from the store
//! ([`IndexCorpus`] over [`ChunkTexts`] and [`ExactVectors`]), so that memory grows
//! with the codes and postings, not with the library's text.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::bm25::{self, Bm25Index};
use super::vector::{self, ExactVectors, VectorIndex};
use super::{ChunkInfo, ChunkTexts, Corpus, IndexedChunk, Retriever, RetrieverKind};
use crate::embed::Embedder;
use crate::{Error, Result};

/// What the index keeps of every chunk besides its vector and postings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkRow {
    pub id: i64,
    pub doc_id: i64,
    /// First and last page the chunk spans, 1-based.
    pub page_start: u32,
    pub page_end: u32,
}

/// The in-memory retrieval indexes over one set of chunks, with the chunks' file and
/// pages for the source nodes (and their text, when kept).
#[derive(Debug, Default, Clone)]
pub struct RetrievalIndex {
    pub vector: VectorIndex,
    pub bm25: Bm25Index,
    /// One per chunk, in id order.
    rows: Vec<ChunkRow>,
    /// Each document's file name.
    files: HashMap<i64, String>,
    /// Each chunk's text, when kept.
    texts: HashMap<i64, String>,
    keep: bool,
}

/// Fills a [`RetrievalIndex`] one chunk at a time.
#[derive(Debug)]
pub struct IndexBuilder {
    vector: Option<vector::VectorIndexBuilder>,
    bm25: bm25::Bm25Builder,
    rows: Vec<ChunkRow>,
    files: HashMap<i64, String>,
    texts: HashMap<i64, String>,
    keep: bool,
    capacity: usize,
}

impl IndexBuilder {
    /// Add one chunk. Every embedding must have the first one's length.
    pub fn push(&mut self, row: ChunkRow, file: &str, text: &str, embedding: &[f32]) -> Result<()> {
        let (keep, capacity) = (self.keep, self.capacity);
        let vb = self.vector.get_or_insert_with(|| {
            let mut b = if keep {
                vector::VectorIndexBuilder::new(embedding.len())
            } else {
                vector::VectorIndexBuilder::codes_only(embedding.len())
            };
            b.reserve(capacity);
            b
        });
        vb.push(row.id, row.doc_id, embedding)?;
        self.bm25.add(row.id, row.doc_id, text);
        self.files
            .entry(row.doc_id)
            .or_insert_with(|| file.to_string());
        if self.keep {
            self.texts.insert(row.id, text.to_string());
        }
        self.rows.push(row);
        Ok(())
    }

    /// Chunks added.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether no chunk was added.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The index; a chunk id given twice is an error.
    pub fn build(mut self) -> Result<RetrievalIndex> {
        self.rows.sort_unstable_by_key(|r| r.id);
        if let Some(w) = self.rows.windows(2).find(|w| w[0].id == w[1].id) {
            return Err(Error::Invalid(format!("chunk id {} given twice", w[0].id)));
        }
        let vector = match self.vector {
            Some(vb) => vb.build(),
            None => VectorIndex::default(),
        };
        Ok(RetrievalIndex {
            vector,
            bm25: self.bm25.build(),
            rows: self.rows,
            files: self.files,
            texts: self.texts,
            keep: self.keep,
        })
    }
}

impl RetrievalIndex {
    /// Build both indexes, keeping the chunks' text and f32 vectors. All embeddings
    /// must have the same length.
    pub fn build(chunks: Vec<IndexedChunk>) -> Result<Self> {
        let mut b = Self::builder(true, chunks.len());
        for c in chunks {
            b.push(
                ChunkRow {
                    id: c.id,
                    doc_id: c.info.doc_id,
                    page_start: c.info.page_start,
                    page_end: c.info.page_end,
                },
                &c.info.file,
                &c.info.text,
                &c.embedding,
            )?;
        }
        b.build()
    }

    /// A builder to fill chunk by chunk (about `capacity` of them). With `keep` false
    /// the index keeps neither the chunks' text nor their f32 vectors: search it
    /// through an [`IndexCorpus`], which reads them where they are stored.
    pub fn builder(keep: bool, capacity: usize) -> IndexBuilder {
        IndexBuilder {
            vector: None,
            bm25: bm25::Bm25Builder::new(),
            rows: Vec::with_capacity(capacity),
            files: HashMap::new(),
            texts: HashMap::new(),
            keep,
            capacity,
        }
    }

    /// An index from indexes built apart (benchmarks build them from synthetic
    /// term ids) and the chunks' infos, which must be those of their rows.
    pub fn from_parts(
        vector: VectorIndex,
        bm25: Bm25Index,
        chunks: HashMap<i64, ChunkInfo>,
    ) -> Self {
        let mut rows = Vec::with_capacity(chunks.len());
        let mut files = HashMap::new();
        let mut texts = HashMap::with_capacity(chunks.len());
        for (id, c) in chunks {
            rows.push(ChunkRow {
                id,
                doc_id: c.doc_id,
                page_start: c.page_start,
                page_end: c.page_end,
            });
            files.entry(c.doc_id).or_insert(c.file);
            texts.insert(id, c.text);
        }
        rows.sort_unstable_by_key(|r| r.id);
        Self {
            vector,
            bm25,
            rows,
            files,
            texts,
            keep: true,
        }
    }

    /// Chunks indexed.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether nothing is indexed.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Whether the chunks' text and f32 vectors are kept here.
    pub fn keeps_text(&self) -> bool {
        self.keep
    }

    /// The documents indexed.
    pub fn documents(&self) -> HashSet<i64> {
        self.rows.iter().map(|r| r.doc_id).collect()
    }

    /// Remove the chunks of the documents `remove` and add `added` (the chunks of
    /// documents newer than every document kept, ids above every chunk kept, in chunk
    /// id order, as the store numbers them): the result is the index [`Self::build`]
    /// makes from the kept chunks and the added ones — the same hits and scores — but
    /// no kept chunk's text is analyzed or vector normalized again. A document that is
    /// not newer is an error, and the index is then unchanged (rebuild it instead).
    /// What the index keeps of the added chunks is what it keeps of its own.
    pub fn update(&mut self, remove: &HashSet<i64>, added: Vec<IndexedChunk>) -> Result<()> {
        let kept = self.rows.iter().filter(|r| !remove.contains(&r.doc_id));
        let (max_chunk, max_doc) = kept.fold((i64::MIN, i64::MIN), |(mc, md), r| {
            (mc.max(r.id), md.max(r.doc_id))
        });
        let mut last = max_chunk;
        for c in &added {
            if c.id <= last || c.info.doc_id <= max_doc {
                return Err(Error::Invalid(format!(
                    "chunk {} of document {} is not newer than the index",
                    c.id, c.info.doc_id
                )));
            }
            last = c.id;
        }
        let dims = if self.vector.is_empty() {
            added.first().map_or(0, |c| c.embedding.len())
        } else {
            self.vector.dims()
        };
        let mut vb = if self.keep {
            vector::VectorIndexBuilder::new(dims)
        } else {
            vector::VectorIndexBuilder::codes_only(dims)
        };
        vb.reserve(added.len());
        let mut bb = bm25::Bm25Builder::new();
        for c in &added {
            vb.push(c.id, c.info.doc_id, &c.embedding)?;
            bb.add(c.id, c.info.doc_id, &c.info.text);
        }
        let vectors = vb.build();
        self.vector.remove_documents(remove);
        self.vector.append(vectors)?;
        self.bm25 = self.bm25.updated(remove, bb);
        self.rows.retain(|r| !remove.contains(&r.doc_id));
        self.files.retain(|d, _| !remove.contains(d));
        if self.keep {
            let rows = &self.rows;
            self.texts
                .retain(|id, _| rows.binary_search_by_key(id, |r| r.id).is_ok());
        }
        for c in added {
            self.rows.push(ChunkRow {
                id: c.id,
                doc_id: c.info.doc_id,
                page_start: c.info.page_start,
                page_end: c.info.page_end,
            });
            if self.keep {
                self.texts.insert(c.id, c.info.text);
            }
            self.files.entry(c.info.doc_id).or_insert(c.info.file);
        }
        Ok(())
    }

    /// File and pages of a chunk, with its text when the index keeps it (else empty).
    pub fn chunk(&self, id: i64) -> Option<ChunkInfo> {
        let i = self.rows.binary_search_by_key(&id, |r| r.id).ok()?;
        let r = self.rows[i];
        Some(ChunkInfo {
            doc_id: r.doc_id,
            file: self.files.get(&r.doc_id).cloned().unwrap_or_default(),
            page_start: r.page_start,
            page_end: r.page_end,
            text: self.texts.get(&id).cloned().unwrap_or_default(),
        })
    }

    /// The retrievers of `kinds`; the vector one embeds queries with `embedder` and,
    /// when this index keeps only codes, rescores from `exact`.
    pub fn retrievers_with<'a>(
        &'a self,
        kinds: &[RetrieverKind],
        embedder: &'a dyn Embedder,
        exact: Option<&'a dyn ExactVectors>,
    ) -> Vec<Box<dyn Retriever + 'a>> {
        kinds
            .iter()
            .map(|k| -> Box<dyn Retriever + 'a> {
                match k {
                    RetrieverKind::Vector => Box::new(vector::VectorRetriever {
                        index: &self.vector,
                        embedder,
                        exact,
                    }),
                    RetrieverKind::Bm25 => Box::new(&self.bm25),
                }
            })
            .collect()
    }

    /// [`Self::chunk`] of each of `ids` it knows.
    fn infos(&self, ids: &[i64]) -> HashMap<i64, ChunkInfo> {
        ids.iter()
            .filter_map(|&id| self.chunk(id).map(|c| (id, c)))
            .collect()
    }
}

impl Corpus for RetrievalIndex {
    fn chunks_indexed(&self) -> Result<usize> {
        Ok(self.len())
    }

    fn retrievers<'a>(
        &'a self,
        kinds: &[RetrieverKind],
        embedder: &'a dyn Embedder,
    ) -> Vec<Box<dyn Retriever + 'a>> {
        self.retrievers_with(kinds, embedder, None)
    }

    fn chunk_infos(&self, ids: &[i64]) -> Result<HashMap<i64, ChunkInfo>> {
        Ok(self.infos(ids))
    }
}

/// An index that keeps neither text nor f32 vectors, with where they are stored: the
/// vector retriever rescores from `store`, and the sources' text comes from it.
pub struct IndexCorpus<S> {
    pub index: Arc<RetrievalIndex>,
    pub store: S,
}

impl<S: ChunkTexts + ExactVectors> Corpus for IndexCorpus<S> {
    fn chunks_indexed(&self) -> Result<usize> {
        Ok(self.index.len())
    }

    fn retrievers<'a>(
        &'a self,
        kinds: &[RetrieverKind],
        embedder: &'a dyn Embedder,
    ) -> Vec<Box<dyn Retriever + 'a>> {
        let exact: Option<&'a dyn ExactVectors> = if self.index.vector.keeps_rows() {
            None
        } else {
            Some(&self.store)
        };
        self.index.retrievers_with(kinds, embedder, exact)
    }

    fn chunk_infos(&self, ids: &[i64]) -> Result<HashMap<i64, ChunkInfo>> {
        let mut infos = self.index.infos(ids);
        if !self.index.keeps_text() {
            let want: Vec<i64> = ids
                .iter()
                .copied()
                .filter(|id| infos.contains_key(id))
                .collect();
            for (id, text) in self.store.chunk_texts(&want)? {
                if let Some(c) = infos.get_mut(&id) {
                    c.text = text;
                }
            }
            // A chunk whose text is gone (its document removed since the index was
            // made) is no source.
            infos.retain(|_, c| !c.text.is_empty());
        }
        Ok(infos)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::cpu::Cancel;
    use crate::retrieve::{search, RetrieveOptions};
    use std::sync::Mutex;

    /// Word counts of a few words: a toy embedding whose vectors differ by chunk.
    struct Words;
    impl Embedder for Words {
        fn dims(&self) -> usize {
            5
        }
        fn max_tokens(&self) -> usize {
            512
        }
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
            Ok(texts
                .iter()
                .map(|t| {
                    ["apple", "banana", "cherry", "durian", "fig"]
                        .iter()
                        .map(|w| t.matches(w).count() as f32 + 0.01)
                        .collect()
                })
                .collect())
        }
    }

    /// Where the chunks are "stored": their text and raw vectors, and how many of
    /// each were read.
    struct Stored {
        chunks: HashMap<i64, (String, Vec<f32>)>,
        reads: Mutex<(usize, usize)>,
    }
    impl ChunkTexts for Stored {
        fn chunk_texts(&self, ids: &[i64]) -> Result<Vec<(i64, String)>> {
            self.reads.lock().unwrap().0 += ids.len();
            Ok(ids
                .iter()
                .filter_map(|id| self.chunks.get(id).map(|c| (*id, c.0.clone())))
                .collect())
        }
    }
    impl ExactVectors for Stored {
        fn exact_vectors(&self, ids: &[i64]) -> Result<Vec<(i64, Vec<f32>)>> {
            self.reads.lock().unwrap().1 += ids.len();
            Ok(ids
                .iter()
                .filter_map(|id| self.chunks.get(id).map(|c| (*id, c.1.clone())))
                .collect())
        }
    }

    fn chunks() -> Vec<IndexedChunk> {
        let words = ["apple", "banana", "cherry", "durian", "fig", "plain"];
        (0..60i64)
            .map(|i| {
                let text: Vec<&str> = (0..(3 + i % 5))
                    .map(|j| words[((i * 7 + j * j) % 6) as usize])
                    .collect();
                let text = text.join(" ");
                IndexedChunk {
                    id: 100 + i,
                    info: ChunkInfo {
                        doc_id: i / 10,
                        file: format!("d{}.pdf", i / 10),
                        page_start: (i % 10) as u32 + 1,
                        page_end: (i % 10) as u32 + 1,
                        text: text.clone(),
                    },
                    embedding: Words.embed(&[&text]).unwrap().remove(0),
                }
            })
            .collect()
    }

    /// Streamed row by row without text or vectors, searched through the store, the
    /// index answers as the one that keeps everything: same hits, scores and sources.
    #[test]
    fn a_streamed_index_without_text_searches_as_one_that_keeps_it() {
        let all = chunks();
        let full = RetrievalIndex::build(all.clone()).unwrap();
        let mut b = RetrievalIndex::builder(false, all.len());
        for c in &all {
            let row = ChunkRow {
                id: c.id,
                doc_id: c.info.doc_id,
                page_start: c.info.page_start,
                page_end: c.info.page_end,
            };
            b.push(row, &c.info.file, &c.info.text, &c.embedding)
                .unwrap();
        }
        assert_eq!(b.len(), all.len());
        let lean = b.build().unwrap();
        assert!(!lean.keeps_text() && !lean.vector.keeps_rows());
        assert_eq!(lean.chunk(105).unwrap().text, "");
        assert_eq!(lean.len(), full.len());
        let stored = Stored {
            chunks: all
                .iter()
                .map(|c| (c.id, (c.info.text.clone(), c.embedding.clone())))
                .collect(),
            reads: Mutex::new((0, 0)),
        };
        let corpus = IndexCorpus {
            index: Arc::new(lean),
            store: stored,
        };
        for q in ["apple pie", "banana cherry", "fig fig durian", "plain"] {
            let opts = RetrieveOptions::default();
            let a = search(&full, q, &Words, None, &opts, &Cancel::new()).unwrap();
            let b = search(&corpus, q, &Words, None, &opts, &Cancel::new()).unwrap();
            assert_eq!(a, b, "{q}");
            assert!(b
                .nodes
                .iter()
                .all(|n| n.chunk.as_ref().is_some_and(|c| !c.text.is_empty())));
        }
        let (texts, vectors) = *corpus.store.reads.lock().unwrap();
        // Only the text of the sources and of each list's first five (read to demote
        // navigation pages; two lists per query), each once; the vectors of some
        // candidates.
        assert!((4 * 5..=4 * 2 * 5).contains(&texts), "{texts}");
        assert!(vectors > 0);
        // Without the store, the lean index's vector search is an error, not a guess.
        let alone = search(
            corpus.index.as_ref(),
            "apple",
            &Words,
            None,
            &RetrieveOptions::default(),
            &Cancel::new(),
        );
        assert!(alone.is_err());
    }

    #[test]
    fn a_lean_index_updates_as_it_rebuilds() {
        let all = chunks();
        let lean = |cs: &[IndexedChunk]| {
            let mut b = RetrievalIndex::builder(false, 0);
            for c in cs {
                let row = ChunkRow {
                    id: c.id,
                    doc_id: c.info.doc_id,
                    page_start: c.info.page_start,
                    page_end: c.info.page_end,
                };
                b.push(row, &c.info.file, &c.info.text, &c.embedding)
                    .unwrap();
            }
            b.build().unwrap()
        };
        let mut inc = lean(&all[..40]);
        let removed: HashSet<i64> = [1].into_iter().collect();
        inc.update(&removed, all[40..].to_vec()).unwrap();
        let kept: Vec<IndexedChunk> = all.iter().filter(|c| c.info.doc_id != 1).cloned().collect();
        let fresh = lean(&kept);
        assert_eq!(inc.len(), fresh.len());
        assert_eq!(inc.documents(), fresh.documents());
        assert!(!inc.keeps_text() && !inc.vector.keeps_rows());
        for id in [100, 125, 159] {
            assert_eq!(inc.chunk(id), fresh.chunk(id));
        }
        assert!(inc.chunk(115).is_none());
        let stored = Stored {
            chunks: all
                .iter()
                .map(|c| (c.id, (c.info.text.clone(), c.embedding.clone())))
                .collect(),
            reads: Mutex::new((0, 0)),
        };
        let q = Words.embed(&["cherry durian"]).unwrap().remove(0);
        assert_eq!(
            inc.vector.search_with(&q, 7, None, Some(&stored)).unwrap(),
            fresh
                .vector
                .search_with(&q, 7, None, Some(&stored))
                .unwrap()
        );
        assert_eq!(
            inc.bm25.search("cherry durian", 7, None),
            fresh.bm25.search("cherry durian", 7, None)
        );
        assert!(RetrievalIndex::builder(false, 0)
            .build()
            .unwrap()
            .is_empty());
    }
}
