//! Sentences of an answer and of a source passage, with their places: nltk's Punkt
//! (the English model) for spaced scripts, and the CJK sentence ends (。！？；) that
//! Punkt does not know. An answer's lines are its blocks (list items, paragraphs); a
//! source's single line breaks are the PDF's layout, so only a blank line ends a block.

use std::sync::LazyLock;

use crate::synth::sentence_splitter::{Punkt, PunktParams};

static PUNKT: LazyLock<Punkt> = LazyLock::new(|| Punkt::new(PunktParams::english()));

/// A sentence: its text (trimmed, list markers left out) and its byte range in the
/// text it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Sentence<'t> {
    pub text: &'t str,
    pub start: usize,
    pub end: usize,
}

/// How line breaks are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lines {
    /// Every line is a block (an answer: list items, headings, paragraphs).
    Blocks,
    /// Lines are layout; a blank line ends a block (a PDF page's text).
    Layout,
}

/// The sentences of `text`, in order.
pub fn split(text: &str, lines: Lines) -> Vec<Sentence<'_>> {
    let mut out = Vec::new();
    for (b0, block) in blocks(text, lines) {
        // A list marker ("2. ") is not a sentence of its own.
        if lines == Lines::Layout && super::rows::is_row(block) {
            // A table's row is one sentence, whatever full stops its cells hold.
            push_trimmed(&mut out, text, b0, b0 + block.len());
            continue;
        }
        let lead = block.len() - block.trim_start().len();
        let marker = lead + list_marker(&block[lead..]);
        let (b0, block) = (b0 + marker, &block[marker..]);
        let mut spans = PUNKT.span_tokenize(block);
        merge_abbreviations(block, &mut spans);
        for (s, e) in spans {
            let piece = &block[s..e];
            for (cs, ce) in cjk_ends(piece) {
                push_trimmed(&mut out, text, b0 + s + cs, b0 + s + ce);
            }
        }
    }
    out
}

/// Abbreviations Punkt's model does not know but answers use, after which a
/// sentence does not end.
const ABBREVIATIONS: &[&str] = &[
    "e.g.", "i.e.", "etc.", "cf.", "vs.", "fig.", "p.", "pp.", "no.", "sec.",
];

/// Join a span that ends in one of [`ABBREVIATIONS`] to the next.
fn merge_abbreviations(block: &str, spans: &mut Vec<(usize, usize)>) {
    let mut i = 0;
    while i + 1 < spans.len() {
        let piece = block[spans[i].0..spans[i].1].to_lowercase();
        let ends = ABBREVIATIONS.iter().any(|a| {
            piece.ends_with(a)
                && piece[..piece.len() - a.len()]
                    .chars()
                    .last()
                    .is_none_or(|c| !c.is_alphanumeric())
        });
        if ends {
            spans[i].1 = spans[i + 1].1;
            spans.remove(i + 1);
        } else {
            i += 1;
        }
    }
}

/// The blocks of `text` with their byte offsets.
fn blocks(text: &str, lines: Lines) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut line_start = 0;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\n' {
            let next = text[i + 1..].split('\n').next().unwrap_or("");
            let ends = match lines {
                Lines::Blocks => true,
                // A blank line ends a block, and so does each row of a table.
                Lines::Layout => {
                    next.trim().is_empty()
                        || super::rows::is_row(&text[line_start..i])
                        || super::rows::is_row(next)
                }
            };
            if ends {
                out.push((start, &text[start..i]));
                start = i + 1;
            }
            line_start = i + 1;
        }
        i += 1;
    }
    out.push((start, &text[start..]));
    out.retain(|(_, b)| !b.trim().is_empty());
    out
}

/// `piece` cut after each CJK sentence end (and the closing quotes that follow it).
fn cjk_ends(piece: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut chars = piece.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if matches!(c, '。' | '！' | '？' | '；') {
            let mut end = i + c.len_utf8();
            while let Some(&(j, d)) = chars.peek() {
                if matches!(d, '”' | '’' | '」' | '』' | '）' | ')') {
                    end = j + d.len_utf8();
                    chars.next();
                } else {
                    break;
                }
            }
            out.push((start, end));
            start = end;
        }
    }
    if start < piece.len() {
        out.push((start, piece.len()));
    }
    out
}

/// Push `text[s..e]` without surrounding blanks and without a leading list marker
/// (`-`, `*`, `•`, `1.`, `1)`), Markdown emphasis or heading marks.
fn push_trimmed<'t>(out: &mut Vec<Sentence<'t>>, text: &'t str, mut s: usize, mut e: usize) {
    loop {
        let t = &text[s..e];
        let lead = t.len() - t.trim_start().len();
        s += lead;
        let t = &text[s..e];
        let marker = list_marker(t);
        if marker == 0 {
            break;
        }
        s += marker;
    }
    let t = &text[s..e];
    e = s + t.trim_end().len();
    if text[s..e].chars().any(char::is_alphanumeric) {
        out.push(Sentence {
            text: &text[s..e],
            start: s,
            end: e,
        });
    }
}

/// The length of a list, heading or emphasis marker at the start of `t` (0: none).
fn list_marker(t: &str) -> usize {
    for m in [
        "- ", "* ", "• ", "+ ", "> ", "**", "__", "# ", "## ", "### ",
    ] {
        if t.starts_with(m) {
            return m.len();
        }
    }
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    if (1..=3).contains(&digits) {
        let rest = &t[digits..];
        if rest.starts_with(". ") || rest.starts_with(") ") {
            return digits + 2;
        }
    }
    0
}

/// Byte offset `b` of `text` as a count of chars (what a browser's string indexes
/// count, for text without astral characters).
pub fn char_offset(text: &str, b: usize) -> usize {
    text.get(..b).map_or(0, |t| t.chars().count())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(text: &str, lines: Lines) -> Vec<&str> {
        split(text, lines).into_iter().map(|s| s.text).collect()
    }

    #[test]
    fn answers_split_by_line_and_sentence() {
        let a = "Use \\ch{H2O}. Blanks are ignored, e.g. in formulas.\n\n- First item [1]\n2. Second item.";
        assert_eq!(
            texts(a, Lines::Blocks),
            vec![
                "Use \\ch{H2O}.",
                "Blanks are ignored, e.g. in formulas.",
                "First item [1]",
                "Second item."
            ]
        );
        for s in split(a, Lines::Blocks) {
            assert_eq!(&a[s.start..s.end], s.text);
        }
    }

    #[test]
    fn source_lines_are_layout_and_chinese_ends_split() {
        let src = "The command \\ch typesets\nformulas. Spaces\nseparate parts.\n\nNext block";
        assert_eq!(
            texts(src, Lines::Layout),
            vec![
                "The command \\ch typesets\nformulas.",
                "Spaces\nseparate parts.",
                "Next block"
            ]
        );
        assert_eq!(
            texts(
                "可以用 \\iffalse 包起来。也可以用 comment 环境！好",
                Lines::Blocks
            ),
            vec!["可以用 \\iffalse 包起来。", "也可以用 comment 环境！", "好"]
        );
        assert_eq!(char_offset("中文ab", "中文".len()), 2);
    }

    #[test]
    fn each_row_of_a_table_is_a_sentence() {
        let src = "Table 1: Keys.\n| Key | Description |\n| --- | --- |\n| C-c C-k | Kill the core. All data is lost. |\n| TAB | Indent line. |\nAfter it.";
        assert_eq!(
            texts(src, Lines::Layout),
            vec![
                "Table 1: Keys.",
                "| Key | Description |",
                "| C-c C-k | Kill the core. All data is lost. |",
                "| TAB | Indent line. |",
                "After it."
            ]
        );
    }
}
