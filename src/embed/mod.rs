//! Text embeddings: the [`Embedder`] trait and the BERT embedder ([`bert`]: Quire's
//! own encoder on the CPU, [`candle_bert`] on a GPU).

pub mod bert;
pub mod candle_bert;
pub mod catalog;
pub mod encoder;
pub(crate) mod kernels;

use std::ops::Range;

/// `len` values in −0.5..0.5 from a fixed `seed`, for the kernels' tests.
#[cfg(test)]
pub(crate) fn test_values(len: usize, seed: u32) -> Vec<f32> {
    let mut s = seed;
    (0..len)
        .map(|_| {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (s >> 8) as f32 / (1u32 << 24) as f32 - 0.5
        })
        .collect()
}

use crate::Result;

/// Turns texts into vectors for the vector retriever.
pub trait Embedder: Send + Sync {
    /// Vector length.
    fn dims(&self) -> usize;
    /// Longest input in the model's tokens (special tokens included); longer text must
    /// be split before (the splitter does), else it is truncated as
    /// sentence-transformers does.
    fn max_tokens(&self) -> usize;
    /// Passages (chunks of documents) to vectors: same order as input, L2-normalized.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;

    /// A question to a vector. Models trained with a query prompt (e5's `query: `)
    /// put it first; the default embeds the question as a passage.
    fn embed_query(&self, query: &str) -> Result<Vec<f32>> {
        let mut v = self.embed(&[query])?;
        v.pop()
            .ok_or_else(|| crate::Error::Invalid("the embedder returned no vector".into()))
    }

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

    /// Whether the model was trained on text like `text`: an English-only model gives
    /// noise for a Chinese query, and retrieval then leaves the vector retriever out.
    /// The default says yes.
    fn covers(&self, text: &str) -> bool {
        let _ = text;
        true
    }

    /// Tokens of `text` as the model sees it, special tokens included.
    fn count_tokens(&self, text: &str) -> Result<usize> {
        Ok(self.token_spans(text)?.len() + 2)
    }
}

/// The languages a model card (`README.md` with YAML front matter, as
/// sentence-transformers models ship) declares: `language: en` or a list; empty when
/// the card or the field is missing.
pub fn card_languages(card: &str) -> Vec<String> {
    let mut lines = card.lines();
    if lines.next().map(str::trim) != Some("---") {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut in_list = false;
    for line in lines {
        if line.trim() == "---" {
            break;
        }
        if in_list {
            match line.trim().strip_prefix("- ") {
                Some(v) if line.starts_with(' ') || line.starts_with('-') => {
                    out.push(v.trim().to_ascii_lowercase());
                    continue;
                }
                _ => in_list = false,
            }
        }
        if let Some(v) = line.strip_prefix("language:") {
            let v = v.trim().trim_matches(|c| c == '[' || c == ']');
            if v.is_empty() {
                in_list = true;
            } else {
                out.extend(
                    v.split(',')
                        .map(|x| {
                            x.trim()
                                .trim_matches(|c| c == '"' || c == '\'')
                                .to_ascii_lowercase()
                        })
                        .filter(|x| !x.is_empty()),
                );
            }
        }
    }
    out
}

/// Whether a model trained on `languages` (as [`card_languages`] reads them; empty
/// means unknown, taken as everything) covers `text`: text mostly in CJK scripts
/// needs Chinese, Japanese or Korean (or a multilingual model).
pub fn languages_cover(languages: &[String], text: &str) -> bool {
    const CJK: &[&str] = &["zh", "ja", "ko", "multilingual"];
    if languages.is_empty()
        || languages
            .iter()
            .any(|l| CJK.iter().any(|c| l.starts_with(c)))
    {
        return true;
    }
    let (mut cjk, mut letters) = (0usize, 0usize);
    for c in text.chars().filter(|c| c.is_alphanumeric()) {
        letters += 1;
        if crate::text::is_cjk(c) {
            cjk += 1;
        }
    }
    cjk * 2 <= letters
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_card_languages_are_read_from_the_front_matter() {
        assert_eq!(
            card_languages("---\nlanguage: en\nlicense: mit\n---\n# x"),
            vec!["en"]
        );
        assert_eq!(
            card_languages("---\nlicense: mit\nlanguage:\n- en\n- zh\ntags:\n- a\n---\n"),
            vec!["en", "zh"]
        );
        assert_eq!(
            card_languages("---\nlanguage: [en, \"de\"]\n---\n"),
            vec!["en", "de"]
        );
        assert!(card_languages("# no front matter\nlanguage: en").is_empty());
        assert!(card_languages("---\nlicense: mit\n---\nlanguage: en").is_empty());
    }

    #[test]
    fn an_english_model_does_not_cover_chinese_text() {
        let en = vec!["en".to_string()];
        assert!(languages_cover(&en, "How do I typeset H2O?"));
        assert!(!languages_cover(&en, "如何设置中文字体？"));
        // Mixed text counts by its letters: mostly English is covered.
        assert!(languages_cover(
            &en,
            "What does \\ctexset 中文 do to section headings?"
        ));
        assert!(!languages_cover(&en, "ctex 宏包如何设置章节标题格式"));
        assert!(languages_cover(
            &["en".into(), "zh".into()],
            "如何设置中文字体？"
        ));
        assert!(languages_cover(
            &["multilingual".into()],
            "如何设置中文字体？"
        ));
        assert!(languages_cover(&[], "如何设置中文字体？"));
    }
}
