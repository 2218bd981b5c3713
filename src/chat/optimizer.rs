//! LlamaIndex's `SentenceEmbeddingOptimizer` node postprocessor
//! (`llama_index.core.postprocessor.optimizer`): each source's text is split into
//! sentences by LlamaIndex's untrained Punkt tokenizer, each sentence is embedded, and
//! the sentences closest to the query are kept — the top `int(n × percentile_cutoff)`
//! and/or those whose cosine is over `threshold_cutoff` — each with
//! `context_before`/`context_after` neighbours, joined by spaces, most similar first
//! (`get_top_k_embeddings`' order, its heap included). A shorter prompt; the sources
//! panel keeps the whole passages. `tests/it/optimizer_parity.rs` replays LlamaIndex's
//! recorded outputs.

use crate::synth::sentence_splitter::Punkt;
use crate::synth::Node;
use crate::{Error, Result};

/// The optimizer's settings, as LlamaIndex's constructor takes them.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Optimizer {
    /// Keep the top `int(sentences × p)` (0 kept means no limit, as in LlamaIndex).
    pub percentile_cutoff: Option<f64>,
    /// Keep the sentences whose cosine is over this.
    pub threshold_cutoff: Option<f64>,
    /// Sentences kept before each chosen one (LlamaIndex's default: 1).
    pub context_before: Option<usize>,
    /// Sentences kept after each chosen one (LlamaIndex's default: 1).
    pub context_after: Option<usize>,
}

/// Embeds a list of sentences (LlamaIndex's `_get_text_embeddings`).
pub type Embed<'a> = dyn FnMut(&[&str]) -> Result<Vec<Vec<f32>>> + 'a;

/// LlamaIndex's error when no sentence of a source is kept.
pub const ZERO_SENTENCES: &str = "Optimizer returned zero sentences.";

impl Optimizer {
    /// Whether it shortens anything (a cutoff is set).
    pub fn is_on(&self) -> bool {
        self.percentile_cutoff.is_some() || self.threshold_cutoff.is_some()
    }

    /// `_postprocess_nodes`: each node's text shortened to its kept sentences.
    /// `embed` embeds a list of sentences (LlamaIndex's `_get_text_embeddings`);
    /// `query` is the query's embedding. A node of which nothing is kept is an error
    /// ([`ZERO_SENTENCES`]), as in LlamaIndex; the nodes before it are already
    /// shortened, as LlamaIndex leaves them.
    pub fn postprocess(
        &self,
        nodes: &mut [Node],
        query: &[f32],
        embed: &mut Embed<'_>,
    ) -> Result<()> {
        let punkt = Punkt::default();
        for node in nodes.iter_mut() {
            let sentences = tokenize(&punkt, &node.text);
            let embeddings = embed(&sentences)?;
            let top_k = self
                .percentile_cutoff
                .map(|p| (sentences.len() as f64 * p) as usize);
            let kept = top_k_embeddings(query, &embeddings, top_k, self.threshold_cutoff);
            if kept.is_empty() {
                return Err(Error::Invalid(ZERO_SENTENCES.into()));
            }
            let before = self.context_before.unwrap_or(1);
            let after = self.context_after.unwrap_or(1);
            let n = sentences.len();
            let text = kept
                .iter()
                .map(|&(_, i)| {
                    let a = i.saturating_sub(before);
                    let b = (i + after + 1).min(n);
                    if a < b {
                        sentences[a..b].join(" ")
                    } else {
                        String::new()
                    }
                })
                .collect::<Vec<_>>()
                .join(" ");
            node.text = text;
        }
        Ok(())
    }
}

/// `PunktSentenceTokenizer().tokenize(text)`: each span's text.
pub fn tokenize<'t>(punkt: &Punkt, text: &'t str) -> Vec<&'t str> {
    punkt
        .span_tokenize(text)
        .into_iter()
        .filter_map(|(a, b)| text.get(a..b))
        .collect()
}

/// LlamaIndex's default similarity: the cosine, in f64 as numpy computes it.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| *x as f64 * *y as f64).sum();
    let na: f64 = a.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
    dot / (na * nb)
}

/// `get_top_k_embeddings`: (similarity, index) of the embeddings over `cutoff`, at
/// most `top_k` of them (none or 0: all), kept on a min-heap of (similarity, index)
/// as Python's `heapq` keeps it, then sorted by similarity, highest first (stable).
pub fn top_k_embeddings(
    query: &[f32],
    embeddings: &[Vec<f32>],
    top_k: Option<usize>,
    cutoff: Option<f64>,
) -> Vec<(f64, usize)> {
    let mut heap: Vec<(f64, usize)> = Vec::new();
    for (i, e) in embeddings.iter().enumerate() {
        let s = cosine(query, e);
        if cutoff.is_none_or(|c| s > c) {
            heap_push(&mut heap, (s, i));
            if let Some(k) = top_k.filter(|&k| k > 0) {
                if heap.len() > k {
                    heap_pop(&mut heap);
                }
            }
        }
    }
    heap.sort_by(|a, b| b.0.total_cmp(&a.0));
    heap
}

/// Python's tuple `<` on (float, int).
fn less(a: &(f64, usize), b: &(f64, usize)) -> bool {
    a.0 < b.0 || (a.0 == b.0 && a.1 < b.1)
}

/// `heapq.heappush`.
fn heap_push(heap: &mut Vec<(f64, usize)>, item: (f64, usize)) {
    heap.push(item);
    let last = heap.len() - 1;
    sift_down(heap, 0, last);
}

/// `heapq.heappop`.
fn heap_pop(heap: &mut Vec<(f64, usize)>) -> Option<(f64, usize)> {
    let last = heap.pop()?;
    if heap.is_empty() {
        return Some(last);
    }
    let top = std::mem::replace(&mut heap[0], last);
    sift_up(heap, 0);
    Some(top)
}

/// `heapq._siftdown`.
fn sift_down(heap: &mut [(f64, usize)], start: usize, mut pos: usize) {
    let item = heap[pos];
    while pos > start {
        let parent = (pos - 1) >> 1;
        if less(&item, &heap[parent]) {
            heap[pos] = heap[parent];
            pos = parent;
        } else {
            break;
        }
    }
    heap[pos] = item;
}

/// `heapq._siftup`.
fn sift_up(heap: &mut [(f64, usize)], mut pos: usize) {
    let end = heap.len();
    let start = pos;
    let item = heap[pos];
    let mut child = 2 * pos + 1;
    while child < end {
        let right = child + 1;
        if right < end && !less(&heap[child], &heap[right]) {
            child = right;
        }
        heap[pos] = heap[child];
        pos = child;
        child = 2 * pos + 1;
    }
    heap[pos] = item;
    sift_down(heap, start, pos);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heap_keeps_the_top_k_and_sorts_highest_first() {
        let q = [1.0, 0.0];
        let e = vec![
            vec![1.0, 1.0],
            vec![1.0, 0.0],
            vec![0.0, 1.0],
            vec![1.0, 0.1],
        ];
        let ids: Vec<usize> = top_k_embeddings(&q, &e, Some(2), None)
            .iter()
            .map(|r| r.1)
            .collect();
        assert_eq!(ids, [1, 3]);
        // 0 is no limit, as Python's `if similarity_top_k` reads it.
        assert_eq!(top_k_embeddings(&q, &e, Some(0), None).len(), 4);
        // The cutoff is strict.
        assert_eq!(top_k_embeddings(&q, &e, None, Some(0.0)).len(), 3);
    }
}
