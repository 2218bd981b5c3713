//! LlamaIndex's `TokenTextSplitter`: split on `" "`, then `"\n"`, then characters
//! (each split keeps its separator in front), and merge the pieces back into chunks of
//! at most `chunk_size` tokens, with up to `chunk_overlap` tokens of overlap.

use crate::Result;

/// Counts tokens in a text.
pub type Counter<'a> = dyn Fn(&str) -> Result<usize> + 'a;

/// Python's `str.isspace` for one character.
pub fn py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's `str.strip()`.
pub fn py_strip(s: &str) -> &str {
    s.trim_matches(py_space)
}

/// A token text splitter.
pub struct TokenTextSplitter<'a> {
    pub chunk_size: usize,
    pub chunk_overlap: usize,
    count: &'a Counter<'a>,
}

/// `text.split(sep)` with the separator kept in front of every part but the first;
/// empty parts dropped.
fn split_keep_sep(text: &str, sep: &str) -> Vec<String> {
    text.split(sep)
        .enumerate()
        .map(|(i, s)| {
            if i > 0 {
                format!("{sep}{s}")
            } else {
                s.to_string()
            }
        })
        .filter(|s| !s.is_empty())
        .collect()
}

impl<'a> TokenTextSplitter<'a> {
    /// A splitter of `chunk_size` tokens with `chunk_overlap` overlap, counting with
    /// `count`.
    pub fn new(chunk_size: usize, chunk_overlap: usize, count: &'a Counter<'a>) -> Self {
        Self {
            chunk_size,
            chunk_overlap: chunk_overlap.min(chunk_size),
            count,
        }
    }

    /// Split `text` into chunks (an empty text gives one empty chunk).
    pub fn split_text(&self, text: &str) -> Result<Vec<String>> {
        if text.is_empty() {
            return Ok(vec![String::new()]);
        }
        let splits = self.split(text, 0)?;
        self.merge(&splits)
    }

    fn split(&self, text: &str, _depth: usize) -> Result<Vec<String>> {
        if (self.count)(text)? <= self.chunk_size {
            return Ok(vec![text.to_string()]);
        }
        let mut splits = split_keep_sep(text, " ");
        if splits.len() <= 1 {
            splits = split_keep_sep(text, "\n");
        }
        let by_char = splits.len() <= 1;
        if by_char {
            splits = text.chars().map(String::from).collect();
        }
        let mut out = Vec::new();
        for s in splits {
            // A single character that is still too large cannot be split further.
            if (self.count)(&s)? <= self.chunk_size || (by_char && s.chars().count() <= 1) {
                out.push(s);
            } else {
                out.extend(self.split(&s, _depth + 1)?);
            }
        }
        Ok(out)
    }

    fn merge(&self, splits: &[String]) -> Result<Vec<String>> {
        let mut chunks = Vec::new();
        let mut cur: std::collections::VecDeque<(&str, usize)> = Default::default();
        let mut cur_len = 0usize;
        let push = |cur: &std::collections::VecDeque<(&str, usize)>, chunks: &mut Vec<String>| {
            let joined: String = cur.iter().map(|(s, _)| *s).collect();
            let c = py_strip(&joined);
            if !c.is_empty() {
                chunks.push(c.to_string());
            }
        };
        for s in splits {
            let n = (self.count)(s)?;
            if cur_len + n > self.chunk_size {
                push(&cur, &mut chunks);
                while cur_len > self.chunk_overlap || cur_len + n > self.chunk_size {
                    match cur.pop_front() {
                        Some((_, k)) => cur_len -= k,
                        None => break,
                    }
                }
            }
            cur.push_back((s, n));
            cur_len += n;
        }
        push(&cur, &mut chunks);
        Ok(chunks)
    }
}

/// One token per Unicode code point: the tokenizer LlamaIndex's fixtures are
/// recorded with (Python's `list`), and the scripted LLM's.
pub fn count_chars(text: &str) -> Result<usize> {
    Ok(text.chars().count())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn splits_on_spaces_and_overlaps() {
        let sp = TokenTextSplitter::new(10, 4, &count_chars);
        let out = sp.split_text("aaa bbb ccc ddd eee").unwrap();
        assert_eq!(out, vec!["aaa bbb", "bbb ccc", "ccc ddd", "ddd eee"]);
        for c in &out {
            assert!(c.chars().count() <= 10);
        }
    }

    #[test]
    fn long_words_fall_back_to_characters() {
        let sp = TokenTextSplitter::new(4, 0, &count_chars);
        let out = sp.split_text("abcdefghij").unwrap();
        assert_eq!(out, vec!["abcd", "efgh", "ij"]);
        assert_eq!(sp.split_text("").unwrap(), vec![""]);
    }
}
