//! LlamaIndex's `PromptHelper`: how much context fits next to a template, and the
//! `repack` / `truncate` operations that fit text chunks into it.

use super::splitter::{py_strip, Counter, TokenTextSplitter};
use super::template::Template;
use crate::{Error, Result};

/// Default padding (tokens kept free per chunk for formatting).
pub const DEFAULT_PADDING: usize = 5;
/// Default overlap between chunks, as a share of the chunk size.
pub const DEFAULT_CHUNK_OVERLAP_RATIO: f64 = 0.1;

/// Fits text into a context window.
pub struct PromptHelper<'a> {
    pub context_window: usize,
    /// Tokens reserved for the output.
    pub num_output: usize,
    pub chunk_overlap_ratio: f64,
    count: &'a Counter<'a>,
}

impl<'a> PromptHelper<'a> {
    /// A helper for a window of `context_window` tokens, reserving `num_output`.
    pub fn new(context_window: usize, num_output: usize, count: &'a Counter<'a>) -> Self {
        Self {
            context_window,
            num_output,
            chunk_overlap_ratio: DEFAULT_CHUNK_OVERLAP_RATIO,
            count,
        }
    }

    /// Tokens `text` takes.
    pub fn count(&self, text: &str) -> Result<usize> {
        (self.count)(text)
    }

    /// Tokens available per chunk when `num_chunks` chunks go into `prompt`.
    pub fn chunk_size(
        &self,
        prompt: &Template,
        num_chunks: usize,
        padding: usize,
    ) -> Result<usize> {
        // A chat prompt is counted per message, as LlamaIndex's TokenCounter estimates
        // messages: the role, the content, and 3 more each.
        let prompt_tokens = match prompt.empty_messages() {
            Some(msgs) => {
                let mut n = 0;
                for m in &msgs {
                    n += self.count(&m.role)? + self.count(&m.content)? + 3;
                }
                n
            }
            None => self.count(&prompt.empty_prompt())?,
        };
        let needed = prompt_tokens + self.num_output;
        if needed > self.context_window {
            return Err(Error::ContextOverflow {
                needed,
                window: self.context_window,
            });
        }
        let available = self.context_window - needed;
        let per = available / num_chunks.max(1);
        if per <= padding {
            return Err(Error::ContextOverflow {
                needed: needed + padding + 1,
                window: self.context_window,
            });
        }
        Ok(per - padding)
    }

    /// The splitter that fills `prompt` with `num_chunks` chunks.
    pub fn splitter(
        &self,
        prompt: &Template,
        num_chunks: usize,
        padding: usize,
    ) -> Result<TokenTextSplitter<'a>> {
        let size = self.chunk_size(prompt, num_chunks, padding)?;
        let overlap = (self.chunk_overlap_ratio * size as f64) as usize;
        Ok(TokenTextSplitter::new(size, overlap, self.count))
    }

    /// Join the chunks with blank lines and split again so each piece fills `prompt`.
    pub fn repack(
        &self,
        prompt: &Template,
        chunks: &[&str],
        padding: usize,
    ) -> Result<Vec<String>> {
        let sp = self.splitter(prompt, 1, padding)?;
        let combined = chunks
            .iter()
            .map(|c| py_strip(c))
            .filter(|c| !c.is_empty())
            .collect::<Vec<_>>()
            .join("\n\n");
        sp.split_text(&combined)
    }

    /// Cut each chunk so all of them fit in `prompt` together.
    pub fn truncate(
        &self,
        prompt: &Template,
        chunks: &[&str],
        padding: usize,
    ) -> Result<Vec<String>> {
        let sp = self.splitter(prompt, chunks.len(), padding)?;
        chunks
            .iter()
            .map(|c| Ok(sp.split_text(c)?.into_iter().next().unwrap_or_default()))
            .collect()
    }
}
