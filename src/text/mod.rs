//! Text facts that several rooms share, kept below them all: writing systems (the
//! embedder's language check, the analyzer), the BM25 analyzer that turns chunks and
//! queries into index terms ([`analyzer`]: the in-memory index, the PostgreSQL store
//! and the support check read text the same way), BM25's constants ([`bm25`]:
//! the in-memory index and the PostgreSQL store rank the same way), and where
//! neighbouring chunks overlap ([`overlap`]: the summary leaves and the quotes read it
//! once), dot leaders ([`leaders`]: navigation pages are told by them, whole documents
//! read with them shortened), and a table chunk's head ([`table_head`]).

pub mod analyzer;
pub mod leaders;
pub mod overlap;

/// A table chunk's head, as `ingest::split` writes table chunks: its caption line and
/// an empty line when it has a caption, its header row (`| a | b |`) and the `| --- |`
/// line under it — the text up to that line's end; none for text of another shape.
/// Retrieval tells table chunks by it, and a table's next chunk repeats it.
pub fn table_head(text: &str) -> Option<&str> {
    let row = |l: &str| l.starts_with("| ") && l.ends_with(" |");
    let rule = |l: &str| {
        l.starts_with("| ---")
            && l.split('|')
                .all(|c| c.trim().is_empty() || c.trim() == "---")
    };
    let mut lines = text.split('\n');
    let mut end = 0;
    let mut first = lines.next()?;
    if !row(first) {
        end += first.len() + 1;
        let blank = lines.next()?;
        if !blank.trim().is_empty() {
            return None;
        }
        end += blank.len() + 1;
        first = lines.next()?;
    }
    let sep = lines.next()?;
    (row(first) && rule(sep)).then(|| &text[..end + first.len() + 1 + sep.len()])
}

/// Whether `line` starts as a table's caption (`ingest::split` titles a table chunk
/// with it; retrieval follows one in the prose to its table): `Table`, `Tab.` (letter-spaced too)
/// or `表` before a number.
pub fn is_caption(line: &str) -> bool {
    let squeezed: String = line
        .chars()
        .filter(|c| !c.is_whitespace())
        .take(8)
        .collect();
    let numbered = |rest: &str| rest.starts_with(|c: char| c.is_ascii_digit());
    ["Table", "TABLE", "Tab."]
        .iter()
        .any(|w| squeezed.strip_prefix(w).is_some_and(numbered))
        || squeezed.strip_prefix('表').is_some_and(numbered)
}

/// Okapi BM25's parameters, as Lucene sets them.
pub mod bm25 {
    /// BM25 term-frequency saturation.
    pub const K1: f32 = 1.2;
    /// BM25 length normalization.
    pub const B: f32 = 0.75;
}

/// Whether `c` is written without spaces between words (CJK ideographs, kana,
/// hangul syllables).
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // hiragana, katakana
        | 0x3400..=0x4DBF    // CJK extension A
        | 0x4E00..=0x9FFF    // CJK unified ideographs
        | 0xAC00..=0xD7AF    // hangul syllables
        | 0xF900..=0xFAFF    // CJK compatibility ideographs
        | 0x20000..=0x2FA1F) // CJK extensions B.. and compatibility supplement
}

/// The fewest Latin words [`latin_words`] takes: one alone (`LaTeX`, `CTAN`) is most
/// often a Chinese question about Chinese text naming its subject.
const MIN_LATIN_WORDS: usize = 2;

/// The Latin-script words of a query that mixes them with CJK text (`怎样用 debuild
/// 构建 Debian 包？` → `debuild Debian`), joined by spaces: command and package
/// names, which a Chinese question about an English document shares with it. `None`
/// when the query has no CJK text or no word of two or more ASCII letters.
pub fn latin_words(query: &str) -> Option<String> {
    if !query.chars().any(is_cjk) {
        return None;
    }
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut flush = |word: &mut String| {
        let w = word.trim_matches(|c: char| !c.is_ascii_alphanumeric());
        if w.chars().filter(char::is_ascii_alphabetic).count() >= 2 {
            words.push(w.to_string());
        }
        word.clear();
    };
    for c in query.chars() {
        if c.is_ascii_alphanumeric() || (matches!(c, '-' | '_' | '.' | '\\') && !word.is_empty()) {
            word.push(c);
        } else {
            flush(&mut word);
        }
    }
    flush(&mut word);
    (words.len() >= MIN_LATIN_WORDS).then(|| words.join(" "))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn latin_words_are_taken_from_mixed_queries_only() {
        assert_eq!(
            latin_words("怎样用 debuild 从源码包构建 Debian 二进制包？").as_deref(),
            Some("debuild Debian")
        );
        assert_eq!(
            latin_words("wasysym 里有哪些天文符号，比如 \\mercury？").as_deref(),
            Some("wasysym mercury")
        );
        assert_eq!(
            latin_words("用tlmgr的dry-run选项").as_deref(),
            Some("tlmgr dry-run")
        );
        // No CJK: nothing to add; no Latin word of two letters: nothing either.
        assert_eq!(latin_words("How do I use debuild?"), None);
        // One word alone names the subject of a Chinese question about Chinese text.
        assert_eq!(latin_words("同余式 x ≡ a (mod b) 怎么写？"), None);
        assert_eq!(latin_words("用LaTeX编译"), None);
        assert_eq!(latin_words("段落开头怎么空出两个汉字的宽度？"), None);
        assert_eq!(latin_words("第 2 章 a b"), None);
    }
}
