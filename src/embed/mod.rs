//! Text embeddings: the [`Embedder`] trait, the candle BERT embedder ([`bert`]) and
//! its speed benchmark ([`bench`]).

pub mod bench;
pub mod bert;

use std::ops::Range;

use crate::Result;

/// Turns texts into vectors for the vector retriever.
pub trait Embedder: Send + Sync {
    /// Vector length.
    fn dims(&self) -> usize;
    /// Longest input in the model's tokens (special tokens included); longer text must
    /// be split before (the splitter does), else it is truncated as
    /// sentence-transformers does.
    fn max_tokens(&self) -> usize;
    /// Same order as input, L2-normalized.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;

    /// Byte ranges in `text` of the model's tokens, special tokens left out.
    ///
    /// The default counts whitespace-separated words, one token each: good enough for
    /// test embedders; real models override it with their tokenizer.
    fn token_spans(&self, text: &str) -> Result<Vec<Range<usize>>> {
        let mut spans = Vec::new();
        let mut start = None;
        for (i, c) in text.char_indices() {
            match (c.is_whitespace(), start) {
                (true, Some(s)) => {
                    spans.push(s..i);
                    start = None;
                }
                (false, None) => start = Some(i),
                _ => {}
            }
        }
        if let Some(s) = start {
            spans.push(s..text.len());
        }
        Ok(spans)
    }

    /// Tokens of `text` as the model sees it, special tokens included.
    fn count_tokens(&self, text: &str) -> Result<usize> {
        Ok(self.token_spans(text)?.len() + 2)
    }
}

/// Keep freed memory in the process instead of giving it back to the kernel at each
/// tensor: candle allocates and frees large buffers at every op, and glibc's default
/// (mmap above 128 KiB, trim above 128 KiB) turns that into page faults and syscalls.
pub(crate) fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            // SAFETY: mallopt only changes glibc's allocation thresholds; it is called
            // once, and any value is valid for these two parameters.
            unsafe {
                libc::mallopt(libc::M_MMAP_THRESHOLD, 256 << 20);
                libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
            }
        });
    }
}
