//! Splitting a document's pages into chunks for embedding and retrieval.
//!
//! Sentence-aware (English `.!?` followed by a space, Chinese `。！？；` and friends,
//! paragraph breaks), with an overlap of whole sentences between neighbouring chunks.
//! Sizes are counted in the embedding model's own tokens, and no chunk is longer than
//! the model's maximum sequence length: a sentence too long for one chunk is cut at
//! token boundaries (preferring word starts), and every chunk is checked against the
//! tokenizer before it is returned, so the embedder never truncates silently.
//!
//! A page's tables (found by extraction) are chunked apart from its prose, as
//! Markdown tables: a row is a unit no chunk cuts, and every chunk of a long table
//! repeats its header, under the table's caption when the page has one next to it
//! (`Table 1: …`, `表 8.4：…` above or below it, or the line ending in `:` that
//! introduces it), so that a row is found by what its table is about. Their rows are
//! taken out of the prose around them.

use std::borrow::Cow;
use std::ops::Range;

use super::ExtractedPage;
use crate::embed::Embedder;
use crate::{Error, Result};

/// How big chunks are, in the embedding model's tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitConfig {
    /// Target size of a chunk (special tokens not counted); capped at the model's
    /// maximum sequence length minus its special tokens.
    pub chunk_tokens: usize,
    /// Tokens of trailing sentences repeated at the start of the next chunk.
    pub overlap_tokens: usize,
}

impl Default for SplitConfig {
    /// 200 tokens with 40 of overlap: about 150 English words, well inside
    /// all-MiniLM-L6-v2's 256-token window.
    fn default() -> Self {
        Self {
            chunk_tokens: 200,
            overlap_tokens: 40,
        }
    }
}

/// The size a table chunk is filled to (rows added while they fit), in the embedding
/// model's tokens: smaller than prose's, so that a row's chunk is about its few rows
/// and their caption and header, not a page of them. Chosen on the tuning half of
/// `bench/data/table_questions.jsonl` (answering row among the sources: 200 tokens
/// 67%, 100 and 64 tokens 78%).
pub const TABLE_TOKENS: usize = 100;

/// A piece of a document, ready to embed: the store's own type (what the index
/// keeps of a chunk), named here too since splitting makes them.
pub use crate::store::Chunk;

/// A sentence (or part of one) on one page.
#[derive(Debug, Clone)]
struct Piece {
    page: usize,
    bytes: Range<usize>,
    tokens: usize,
}

/// Split `pages` into chunks sized in `emb`'s tokens.
pub fn split(pages: &[ExtractedPage], emb: &dyn Embedder, cfg: &SplitConfig) -> Result<Vec<Chunk>> {
    // [CLS] and [SEP] (or the model's equivalents) take two of the window.
    let max = emb.max_tokens();
    let budget = cfg.chunk_tokens.min(max.saturating_sub(2)).max(1);
    let overlap = cfg.overlap_tokens.min(budget / 2);
    let texts: Vec<Cow<'_, str>> = pages.iter().map(prose).collect();
    let mut pieces = Vec::new();
    for (p, text) in texts.iter().enumerate() {
        let spans = emb.token_spans(text)?;
        let starts: Vec<usize> = spans.iter().map(|s| s.start).collect();
        for s in sentences(text) {
            let first = starts.partition_point(|&t| t < s.start);
            let last = starts.partition_point(|&t| t < s.end);
            let tokens = last - first;
            if tokens == 0 {
                continue;
            }
            if tokens <= budget {
                pieces.push(Piece {
                    page: p,
                    bytes: s,
                    tokens,
                });
            } else {
                cut_long(text, p, &spans[first..last], s.end, budget, &mut pieces);
            }
        }
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i < pieces.len() {
        let mut j = i;
        let mut sum = 0;
        while j < pieces.len() && (j == i || sum + pieces[j].tokens <= budget) {
            sum += pieces[j].tokens;
            j += 1;
        }
        emit(pages, &texts, &pieces[i..j], emb, max, &mut out)?;
        if j == pieces.len() {
            break;
        }
        // Step back over whole sentences for the overlap, always moving forward.
        let mut k = j;
        let mut ov = 0;
        while k > i + 1 && ov + pieces[k - 1].tokens <= overlap {
            ov += pieces[k - 1].tokens;
            k -= 1;
        }
        i = k;
    }
    // The numbered section a page's tables sit in, carried over from the pages
    // before it until the next heading.
    let cap = budget.min(TABLE_TOKENS);
    let mut section: Option<&str> = None;
    for (page, prose) in pages.iter().zip(&texts) {
        for t in &page.tables {
            table_chunks(page, prose, t, section, emb, cap, max, &mut out)?;
        }
        section = last_section(prose).or(section);
    }
    // Tables in their place among the prose (whose chunks are already in order).
    out.sort_by_key(|c| (c.page_start, c.char_start));
    Ok(out)
}

/// A page's text with its tables' rows blanked out (as line breaks, so that the
/// prose before and after a table are separate paragraphs); byte offsets unchanged.
fn prose(page: &ExtractedPage) -> Cow<'_, str> {
    if page.tables.is_empty() {
        return Cow::Borrowed(&page.text);
    }
    let mut bytes = page.text.as_bytes().to_vec();
    for &(a, b) in page.tables.iter().flat_map(|t| &t.spans) {
        let (a, b) = (a.min(bytes.len()), b.min(bytes.len()));
        if page.text.is_char_boundary(a) && page.text.is_char_boundary(b) {
            bytes[a..b.max(a)].fill(b'\n');
        }
    }
    String::from_utf8(bytes).map_or(Cow::Borrowed(&page.text), Cow::Owned)
}

/// Non-empty lines of a page looked at on each side of a table for its caption.
const CAPTION_LINES: usize = 2;

/// The title of table `t` on its page: its caption — the first of the
/// [`CAPTION_LINES`] non-empty lines above the table, then below it, that reads as
/// one (`Table 1: …`, `Tab. 2`, letter-spaced `Ta b l e 1`, `表 8.4: …`) —, else
/// what titles it in `prose` (the page without its tables' rows) just above it
/// ([`title_above`]); under the numbered section it sits in (a heading in its header
/// row, else the last heading above it on the page, else `section`, the one carried
/// from the pages before) when the title does not name it already. None when there is nothing of these.
fn caption(
    page: &ExtractedPage,
    prose: &str,
    t: &quire_pdf::Table,
    section: Option<&str>,
) -> Option<String> {
    let start = t.spans.iter().map(|s| s.0).min()?;
    // A heading the detector took into the header row is the nearest section.
    let in_header = t
        .header
        .iter()
        .map(|c| c.trim())
        .find(|c| is_section_heading(c));
    let section = in_header
        .or_else(|| prose.get(..start).and_then(last_section))
        .or(section);
    let title = own_caption(page, prose, t, start);
    match (section, title) {
        (Some(s), Some(t)) if !t.contains(s) => Some(format!("{s} — {t}")),
        (Some(s), None) => Some(s.to_string()),
        (_, t) => t,
    }
}

/// [`caption`] without the section: the caption beside table `t` (starting at byte
/// `start` of the page), else its title above.
fn own_caption(
    page: &ExtractedPage,
    prose: &str,
    t: &quire_pdf::Table,
    start: usize,
) -> Option<String> {
    let end = t.spans.iter().map(|s| s.1).max()?;
    let text = &page.text;
    let lines = |s: &str| -> Vec<String> {
        s.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(String::from)
            .collect()
    };
    let above: Vec<String> = lines(text.get(..start)?)
        .into_iter()
        .rev()
        .take(CAPTION_LINES)
        .collect();
    let below: Vec<String> = lines(text.get(end..)?)
        .into_iter()
        .take(CAPTION_LINES)
        .collect();
    let fits = |l: &str| l.chars().count() <= 160;
    above
        .iter()
        .chain(&below)
        .find(|l| fits(l) && crate::text::is_caption(l))
        .cloned()
        .or_else(|| {
            // Only the prose after the table before it on the page: a title above
            // that one is that one's.
            let after = page
                .tables
                .iter()
                .flat_map(|o| o.spans.iter().map(|s| s.1))
                .filter(|&e| e <= start)
                .max()
                .unwrap_or(0);
            title_above(prose.get(after..start)?)
        })
}

/// What a line that ends a sentence (or a clause) ends with: not a heading.
const SENTENCE_ENDS: [char; 11] = ['.', '!', '?', ';', ',', '。', '！', '？', '；', '，', '、'];

/// Lines of prose looked at above a table for its title.
const TITLE_LINES: usize = 3;
/// The most characters of a title above a table, and of one heading line in it.
const TITLE_CHARS: usize = 160;
const HEADING_CHARS: usize = 80;

/// What titles a table in the prose just above it (`above`: the page up to the
/// table, without its tables' rows): the nearest non-empty lines, up to
/// [`TITLE_LINES`] and [`TITLE_CHARS`], while each reads as a heading (short, not
/// ending a sentence: "Motion", "2.2.2. Maxima-mode", a running page header) or as
/// the line that introduces the table (ends in `:`, the last taken), in page order,
/// as one line (a caption is one: `table_kind` and the UI read it so), joined by " — ".
/// A table's rows say what they hold, not what they are about: "Go to the end of the
/// form." is found by "Maxima mode … Motion". None when the line above ends a
/// sentence.
fn title_above(above: &str) -> Option<String> {
    let mut lines = Vec::new();
    let mut chars = 0;
    for l in above
        .lines()
        .rev()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(TITLE_LINES)
    {
        let n = l.chars().count();
        let intro = l.ends_with(':') || l.ends_with('：');
        let heading = n <= HEADING_CHARS && !l.ends_with(SENTENCE_ENDS);
        if !(intro || heading) || chars + n > TITLE_CHARS {
            break;
        }
        chars += n;
        lines.push(l);
        if intro {
            break;
        }
    }
    lines.reverse();
    (!lines.is_empty()).then(|| lines.join(" — "))
}

/// Whether `line` is a numbered section heading: two or more levels of numbers,
/// then a capital or a letter of a script without case ("2.2.2.Maxima-mode",
/// "6.5.1. Native Bonds", "3.6.1 列格式"), short and not ending a sentence. Not a
/// list item ("1. Install it"), a version or a measure ("1.5 cm").
fn is_section_heading(line: &str) -> bool {
    let line = line.trim();
    let rest = line.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
    let number = &line[..line.len() - rest.len()];
    let levels = number.split('.').filter(|p| !p.is_empty()).count();
    let first = rest.trim_start().chars().next();
    levels >= 2
        && number.starts_with(|c: char| c.is_ascii_digit())
        && !number.contains("..")
        && first.is_some_and(|c| {
            c.is_uppercase() || (c.is_alphabetic() && !c.is_lowercase() && !c.is_ascii())
        })
        && line.chars().count() <= HEADING_CHARS
        && !line.ends_with(SENTENCE_ENDS)
        && !is_contents_entry(line)
}

/// Whether `line` reads as a table of contents' entry rather than its heading: dot
/// leaders, or a page number after the title.
fn is_contents_entry(line: &str) -> bool {
    let words: Vec<&str> = line.split_whitespace().collect();
    line.contains("..")
        || line.contains(". .")
        || line.contains('…')
        || (words.len() > 2
            && words
                .last()
                .is_some_and(|w| w.chars().all(|c| c.is_ascii_digit())))
}

/// The last numbered section heading ([`is_section_heading`]) in `text`.
fn last_section(text: &str) -> Option<&str> {
    text.lines()
        .rev()
        .map(str::trim)
        .find(|l| is_section_heading(l))
}

/// One Markdown table row of `ncols` cells (`|` escaped, line breaks as spaces).
fn markdown_row(cells: &[String], ncols: usize) -> String {
    let mut row = String::from("|");
    for i in 0..ncols {
        let cell = cells.get(i).map_or("", |c| c.trim());
        row.push(' ');
        row.push_str(&cell.replace('|', "\\|").replace('\n', " "));
        row.push_str(" |");
    }
    row
}

/// The chunks of one table: Markdown, the header and its separator first, then as
/// many whole rows as fit in `budget` (the title aside: it takes none of the rows'
/// room; at least one row); a row too long for the model's
/// window even alone is cut as text.
#[allow(clippy::too_many_arguments)]
fn table_chunks(
    page: &ExtractedPage,
    prose: &str,
    t: &quire_pdf::Table,
    section: Option<&str>,
    emb: &dyn Embedder,
    budget: usize,
    max: usize,
    out: &mut Vec<Chunk>,
) -> Result<()> {
    let ncols = t.rows.iter().map(Vec::len).fold(t.header.len(), usize::max);
    if ncols == 0 {
        return Ok(());
    }
    let title = caption(page, prose, t, section);
    // The title is not the rows' room: `budget` is the header's and the rows'.
    let budget = match &title {
        Some(c) => (budget + emb.count_tokens(c)?.saturating_sub(2)).min(max.saturating_sub(2)),
        None => budget,
    };
    let head = format!(
        "{}{}\n|{}",
        title.map_or(String::new(), |c| format!("{c}\n\n")),
        markdown_row(&t.header, ncols),
        " --- |".repeat(ncols)
    );
    let chars = |byte: usize| page.text.get(..byte).map_or(0, |s| s.chars().count());
    // Row i's span is spans[i + 1] (the header's is the first).
    let span = |i: usize| t.spans.get(i + 1).copied().unwrap_or((0, 0));
    let push = |text: String, tokens: usize, first: usize, last: usize, out: &mut Vec<Chunk>| {
        out.push(Chunk {
            text,
            page_start: page.number,
            page_end: page.number,
            char_start: chars(span(first).0),
            char_end: chars(span(last).1),
            tokens,
        });
    };
    let mut i = 0;
    while i < t.rows.len() {
        let mut text = head.clone();
        let mut tokens = 0;
        let mut j = i;
        while j < t.rows.len() {
            let next = format!("{text}\n{}", markdown_row(&t.rows[j], ncols));
            let n = emb.count_tokens(&next)?;
            if j > i && n > budget + 2 {
                break;
            }
            text = next;
            tokens = n;
            j += 1;
        }
        if tokens <= max {
            push(text, tokens, i, j - 1, out);
        } else {
            // One row alone over the window: its cells as text, cut at tokens.
            let row = t.rows[i].join(" ");
            let spans = emb.token_spans(&row)?;
            let mut pieces = Vec::new();
            cut_long(&row, 0, &spans, row.len(), budget, &mut pieces);
            for p in pieces {
                let piece = row[p.bytes].to_string();
                let n = emb.count_tokens(&piece)?;
                push(piece, n, i, i, out);
            }
        }
        i = j;
    }
    Ok(())
}

/// Turn `pieces` into a chunk, checking its real token count; a chunk the tokenizer
/// finds too long (a word cut in two tokenizes differently) is halved.
fn emit(
    pages: &[ExtractedPage],
    texts: &[Cow<'_, str>],
    pieces: &[Piece],
    emb: &dyn Embedder,
    max: usize,
    out: &mut Vec<Chunk>,
) -> Result<()> {
    let (Some(first), Some(last)) = (pieces.first(), pieces.last()) else {
        return Ok(());
    };
    let mut text = String::new();
    let mut k = 0;
    while k < pieces.len() {
        let page = pieces[k].page;
        let start = pieces[k].bytes.start;
        let mut end = pieces[k].bytes.end;
        while k < pieces.len() && pieces[k].page == page {
            end = pieces[k].bytes.end;
            k += 1;
        }
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&texts[page][start..end]);
    }
    if pages[first.page].tables.len() + pages[last.page].tables.len() > 0 {
        // A table taken out between two pieces leaves a run of line breaks.
        while text.contains("\n\n\n") {
            text = text.replace("\n\n\n", "\n\n");
        }
    }
    let tokens = emb.count_tokens(&text)?;
    if tokens > max {
        if pieces.len() > 1 {
            let mid = pieces.len() / 2;
            emit(pages, texts, &pieces[..mid], emb, max, out)?;
            return emit(pages, texts, &pieces[mid..], emb, max, out);
        }
        // One piece over the limit: cut it in halves by its own tokens.
        let p = &pieces[0];
        let page_text = &texts[p.page];
        let spans = emb.token_spans(&page_text[p.bytes.clone()])?;
        if spans.len() < 2 {
            return Err(Error::Invalid(format!(
                "page {}: a piece of {tokens} tokens cannot be split under {max}",
                pages[p.page].number
            )));
        }
        let mid = p.bytes.start + spans[spans.len() / 2].start;
        let halves = [
            Piece {
                page: p.page,
                bytes: p.bytes.start..mid,
                tokens: spans.len() / 2,
            },
            Piece {
                page: p.page,
                bytes: mid..p.bytes.end,
                tokens: spans.len() - spans.len() / 2,
            },
        ];
        emit(pages, texts, &halves[..1], emb, max, out)?;
        return emit(pages, texts, &halves[1..], emb, max, out);
    }
    let char_offset = |page: usize, byte: usize| {
        pages[page]
            .text
            .get(..byte)
            .map_or(0, |s| s.chars().count())
    };
    out.push(Chunk {
        text,
        page_start: pages[first.page].number,
        page_end: pages[last.page].number,
        char_start: char_offset(first.page, first.bytes.start),
        char_end: char_offset(last.page, last.bytes.end),
        tokens,
    });
    Ok(())
}

/// Cut a sentence of more than `budget` tokens into pieces of at most `budget`,
/// preferring to cut where a token starts a word.
fn cut_long(
    text: &str,
    page: usize,
    spans: &[Range<usize>],
    end: usize,
    budget: usize,
    out: &mut Vec<Piece>,
) {
    let mut i = 0;
    while i < spans.len() {
        let mut j = (i + budget).min(spans.len());
        if j < spans.len() {
            // Back off to a word start, but not by more than a quarter of the budget.
            let floor = i + (budget * 3 / 4).max(1);
            let mut w = j;
            while w > floor && !starts_word(text, spans[w].start) {
                w -= 1;
            }
            if starts_word(text, spans[w].start) {
                j = w;
            }
        }
        let start = spans[i].start;
        let stop = if j < spans.len() {
            trim_end(text, spans[j].start)
        } else {
            end
        };
        out.push(Piece {
            page,
            bytes: start..stop.max(start),
            tokens: j - i,
        });
        i = j;
    }
}

/// Whether a token starting at byte `at` begins a word (after whitespace, or a CJK
/// character, which is a word of its own).
fn starts_word(text: &str, at: usize) -> bool {
    let before = text[..at].chars().next_back();
    let here = text[at..].chars().next();
    match (before, here) {
        (None, _) => true,
        (Some(b), _) if b.is_whitespace() => true,
        (_, Some(h)) if is_cjk(h) => true,
        (Some(b), _) => is_cjk(b),
    }
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3000..=0x303F | 0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF
        | 0xF900..=0xFAFF | 0xFF00..=0xFFEF | 0x20000..=0x2FA1F)
}

/// `at` moved back over whitespace.
fn trim_end(text: &str, at: usize) -> usize {
    text[..at].trim_end().len()
}

/// Byte ranges of the sentences of `text`, trimmed, in order, none empty.
///
/// A sentence ends after `.`, `!`, `?` or `…` followed by whitespace, after `。`, `！`,
/// `？`, `；` or `…` (Chinese needs no space), in both cases with closing quotes and
/// brackets kept with it, and at a blank line.
pub fn sentences(text: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut i = 0;
    let push = |a: usize, b: usize, out: &mut Vec<Range<usize>>| {
        let s = &text[a..b];
        let lead = s.len() - s.trim_start().len();
        let t = s.trim();
        if !t.is_empty() {
            out.push(a + lead..a + lead + t.len());
        }
    };
    while i < chars.len() {
        let (_, c) = chars[i];
        let cut = match c {
            '。' | '！' | '？' | '；' | '!' | '?' | '.' | '…' => {
                let mut k = i + 1;
                while k < chars.len() && is_closer(chars[k].1) {
                    k += 1;
                }
                let wide = matches!(c, '。' | '！' | '？' | '；' | '…');
                let next = chars.get(k).map(|&(_, n)| n);
                let ok = match next {
                    None => true,
                    Some(n) if n.is_whitespace() => true,
                    Some(_) => wide,
                };
                ok.then_some(k)
            }
            '\n' => {
                // A blank line (only whitespace up to the next newline) ends a paragraph.
                let mut k = i + 1;
                while k < chars.len() && chars[k].1 != '\n' && chars[k].1.is_whitespace() {
                    k += 1;
                }
                (k < chars.len() && chars[k].1 == '\n').then_some(k)
            }
            _ => None,
        };
        match cut {
            Some(k) => {
                let end = chars.get(k).map_or(text.len(), |&(b, _)| b);
                push(start, end, &mut out);
                start = end;
                i = k.max(i + 1);
            }
            None => i += 1,
        }
    }
    push(start, text.len(), &mut out);
    out
}

fn is_closer(c: char) -> bool {
    matches!(
        c,
        '"' | '\'' | ')' | ']' | '”' | '’' | '」' | '』' | '）' | '》' | '】'
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// One token per whitespace-separated word (the trait's default), and per CJK
    /// character, with a small window.
    struct Words(usize);

    impl Embedder for Words {
        fn dims(&self) -> usize {
            1
        }
        fn max_tokens(&self) -> usize {
            self.0
        }
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
            Ok(texts.iter().map(|_| vec![1.0]).collect())
        }
        fn token_spans(&self, text: &str) -> Result<Vec<Range<usize>>> {
            let mut spans = Vec::new();
            let mut start = None;
            for (i, c) in text.char_indices() {
                if c.is_whitespace() || is_cjk(c) {
                    if let Some(s) = start.take() {
                        spans.push(s..i);
                    }
                    if is_cjk(c) {
                        spans.push(i..i + c.len_utf8());
                    }
                } else if start.is_none() {
                    start = Some(i);
                }
            }
            if let Some(s) = start {
                spans.push(s..text.len());
            }
            Ok(spans)
        }
    }

    fn page(number: u32, text: &str) -> ExtractedPage {
        ExtractedPage {
            number,
            text: text.into(),
            ocr: false,
            has_images: false,
            tables: Vec::new(),
        }
    }

    fn texts(v: &[Range<usize>], s: &str) -> Vec<String> {
        v.iter().map(|r| s[r.clone()].to_string()).collect()
    }

    #[test]
    fn english_sentences() {
        let s = "It works. Does it? Yes! Version 1.5 is \"out.\" Next\n\nPara two";
        assert_eq!(
            texts(&sentences(s), s),
            [
                "It works.",
                "Does it?",
                "Yes!",
                "Version 1.5 is \"out.\"",
                "Next",
                "Para two"
            ]
        );
    }

    #[test]
    fn chinese_sentences() {
        let s = "这是第一句。这是第二句！第三句？「引用。」最后";
        assert_eq!(
            texts(&sentences(s), s),
            [
                "这是第一句。",
                "这是第二句！",
                "第三句？",
                "「引用。」",
                "最后"
            ]
        );
    }

    #[test]
    fn chunks_respect_budget_overlap_and_pages() {
        let words = |n: usize, tag: &str| {
            (0..n)
                .map(|i| format!("{tag}{i}"))
                .collect::<Vec<_>>()
                .join(" ")
                + "."
        };
        let p1 = format!("{} {} {}", words(5, "a"), words(5, "b"), words(5, "c"));
        let p2 = format!("{} {}", words(5, "d"), words(5, "e"));
        let pages = [page(1, &p1), page(2, &p2)];
        let cfg = SplitConfig {
            chunk_tokens: 10,
            overlap_tokens: 5,
        };
        let chunks = split(&pages, &Words(64), &cfg).unwrap();
        let t: Vec<&str> = chunks.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(t.len(), 4, "{t:?}");
        assert!(t[0].starts_with("a0") && t[0].ends_with("b4."));
        // Overlap: the last sentence of a chunk opens the next one.
        assert!(t[1].starts_with("b0") && t[1].ends_with("c4."));
        assert!(t[2].starts_with("c0") && t[2].ends_with("d4."));
        assert_eq!((chunks[2].page_start, chunks[2].page_end), (1, 2));
        assert_eq!(t[2], format!("{}\n{}", words(5, "c"), words(5, "d")));
        assert_eq!((chunks[3].page_start, chunks[3].page_end), (2, 2));
        // Offsets point back into the pages, in characters.
        let c = &chunks[1];
        let from: String = p1.chars().skip(c.char_start).collect();
        assert!(from.starts_with("b0 b1"));
        assert_eq!(c.char_end, p1.chars().count());
        assert!(chunks.iter().all(|c| c.tokens <= 12));
    }

    #[test]
    fn long_sentence_is_cut_never_truncated() {
        let s: String = (0..100).map(|i| format!("w{i} ")).collect();
        let pages = [page(1, &s)];
        let emb = Words(16);
        let chunks = split(&pages, &emb, &SplitConfig::default()).unwrap();
        assert!(chunks.iter().all(|c| c.tokens <= 16), "{chunks:?}");
        // Every word is in some chunk: nothing dropped.
        let all: Vec<String> = chunks
            .iter()
            .flat_map(|c| c.text.split_whitespace().map(String::from))
            .collect();
        for i in 0..100 {
            assert!(all.contains(&format!("w{i}")), "w{i} lost");
        }
    }

    #[test]
    fn chinese_is_chunked_by_tokens_with_offsets() {
        let s = "甲乙丙丁戊。己庚辛壬癸！子丑寅卯辰。";
        let pages = [page(3, s)];
        let cfg = SplitConfig {
            chunk_tokens: 12,
            overlap_tokens: 0,
        };
        let chunks = split(&pages, &Words(64), &cfg).unwrap();
        let t: Vec<&str> = chunks.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(t, ["甲乙丙丁戊。己庚辛壬癸！", "子丑寅卯辰。"]);
        assert_eq!(chunks[1].char_start, 12);
        assert_eq!(chunks[1].char_end, 18);
        assert_eq!(chunks[1].page_start, 3);
    }

    #[test]
    fn empty_pages_give_no_chunks() {
        let pages = [page(1, ""), page(2, "  \n ")];
        assert!(split(&pages, &Words(64), &SplitConfig::default())
            .unwrap()
            .is_empty());
    }

    #[test]
    fn a_table_is_chunked_by_whole_rows_with_its_header_repeated() {
        let mut text = String::from("Prose before the table, about options:\nOption Value");
        let mut spans = vec![(text.len() - "Option Value".len(), text.len())];
        let mut rows = Vec::new();
        for i in 0..12 {
            text.push('\n');
            let at = text.len();
            text.push_str(&format!("opt{i} value number {i} here"));
            spans.push((at, text.len()));
            rows.push(vec![format!("opt{i}"), format!("value number {i} here")]);
        }
        text.push_str("\nProse after the table. It ends here.");
        let mut p = page(4, &text);
        p.tables.push(quire_pdf::Table {
            header: vec!["Option".into(), "Value".into()],
            rows,
            spans,
        });
        let cfg = SplitConfig {
            chunk_tokens: 40,
            overlap_tokens: 0,
        };
        let chunks = split(&[p], &Words(64), &cfg).unwrap();
        let tables: Vec<&Chunk> = chunks.iter().filter(|c| c.text.contains("\n| ")).collect();
        assert!(tables.len() > 1, "{chunks:#?}");
        let mut seen = Vec::new();
        for c in &tables {
            let lines: Vec<&str> = c.text.lines().collect();
            // The line that introduces the table is its caption, in every chunk.
            assert_eq!(lines[0], "Prose before the table, about options:");
            assert_eq!(lines[1], "");
            assert_eq!(lines[2], "| Option | Value |");
            assert_eq!(lines[3], "| --- | --- |");
            for l in &lines[4..] {
                // Every row whole: its two cells.
                assert!(l.starts_with("| opt") && l.ends_with(" here |"), "{l}");
                seen.push(l.to_string());
            }
            assert!(c.tokens <= 42 || lines.len() == 5, "{c:?}");
        }
        let want: Vec<String> = (0..12)
            .map(|i| format!("| opt{i} | value number {i} here |"))
            .collect();
        assert_eq!(seen, want);
        // The prose keeps its text without the table's cells, in page order.
        let prose: Vec<&Chunk> = chunks.iter().filter(|c| !c.text.contains("\n| ")).collect();
        assert!(
            prose.iter().all(|c| !c.text.contains("value number")),
            "{prose:?}"
        );
        assert!(prose[0].text.starts_with("Prose before"));
        assert!(prose.iter().any(|c| c.text.contains("Prose after")));
        // A table chunk points at its rows on the page.
        let first: String = text.chars().skip(tables[0].char_start).collect();
        assert!(first.starts_with("opt0 value"), "{first}");
    }

    #[test]
    fn a_table_caption_is_found_above_or_below_it() {
        let table = |text: &str, rows: &[&str]| {
            let mut p = page(1, text);
            let spans = rows
                .iter()
                .map(|r| {
                    let a = text.find(r).unwrap();
                    (a, a + r.len())
                })
                .collect();
            p.tables.push(quire_pdf::Table {
                header: vec!["a".into(), "b".into()],
                rows: vec![vec!["c".into(), "d".into()]],
                spans,
            });
            p
        };
        // Below the table, after a page header above it.
        let p = table(
            "102 Chapter 8\nKey Value\nx 1\nTable 8.4: Counter formats\nMore prose.",
            &["Key Value", "x 1"],
        );
        assert_eq!(
            caption(&p, &prose(&p), &p.tables[0], None).as_deref(),
            Some("Table 8.4: Counter formats")
        );
        // Letter-spaced, and Chinese.
        assert!(crate::text::is_caption(
            "Ta b l e 1 : Bonds available with \\bond."
        ));
        assert!(crate::text::is_caption("表 8.6: LATEX 可定制的长度参数"));
        assert!(!crate::text::is_caption("Tables are set with tabular."));
        assert!(!crate::text::is_caption("表格的排版"));
        // The line that introduces it.
        let p = table(
            "Maxima mode has these commands:\nKey Value\nx 1",
            &["Key Value", "x 1"],
        );
        assert_eq!(
            caption(&p, &prose(&p), &p.tables[0], None).as_deref(),
            Some("Maxima mode has these commands:")
        );
        // A plain sentence above it is not a caption.
        let p = table("It ends here.\nKey Value\nx 1", &["Key Value", "x 1"]);
        assert_eq!(caption(&p, &prose(&p), &p.tables[0], None), None);
    }

    #[test]
    fn a_table_is_titled_by_the_headings_just_above_it_and_not_by_another_tables() {
        let text = "CHAPTER 2. INTERFACES 12\nIt sends lines to Maxima.\n\
                    Maxima mode has the following commands:\nMotion\n\
                    Key Description\nM-C-e Go to the end of the form.\n\
                    Process\nKey Description\nC-cC-k Kill the Maxima process.\n\
                    It ends here.\nComments\nKey Description\nC-c : Uncomment the region.\n";
        let mut p = page(13, text);
        for rows in [
            ["Key Description", "M-C-e Go to the end of the form."],
            ["Key Description\nC-cC-k", "C-cC-k Kill the Maxima process."],
            ["Key Description\nC-c :", "C-c : Uncomment the region."],
        ] {
            let a = text.find(rows[0]).unwrap();
            let b = text.find(rows[1]).unwrap();
            p.tables.push(quire_pdf::Table {
                header: vec!["Key".into(), "Description".into()],
                rows: vec![vec!["k".into(), "d".into()]],
                spans: vec![(a, a + "Key Description".len()), (b, b + rows[1].len())],
            });
        }
        let titles: Vec<Option<String>> = p
            .tables
            .iter()
            .map(|t| caption(&p, &prose(&p), t, None))
            .collect();
        assert_eq!(
            titles,
            [
                // The line that introduces it, and its heading.
                Some("Maxima mode has the following commands: — Motion".to_string()),
                // Not the heading of the table above it.
                Some("Process".to_string()),
                // Not the sentence above its heading.
                Some("Comments".to_string()),
            ]
        );
        // Each chunk still reads as a table under its one-line caption (as
        // `retrieve::table_kind` and the UI read a table chunk).
        let chunks = split(&[p], &Words(64), &SplitConfig::default()).unwrap();
        let tables: Vec<&Chunk> = chunks
            .iter()
            .filter(|c| c.text.contains("\n| --- |"))
            .collect();
        assert_eq!(tables.len(), 3, "{chunks:#?}");
        for c in &tables {
            let lines: Vec<&str> = c.text.lines().collect();
            assert!(!lines[0].starts_with('|') && lines[1].is_empty(), "{c:?}");
            assert!(lines[2].starts_with("| Key |"), "{c:?}");
        }
        assert!(tables[1].text.starts_with("Process\n\n"));
        // A running page header and a section heading above a table at the page's top.
        let p = {
            let text = "CHAPTER 2. INTERFACES 25\n2.4 Emaxima mode\nKey Value\nx 1";
            let mut p = page(25, text);
            let a = text.find("Key Value").unwrap();
            p.tables.push(quire_pdf::Table {
                header: vec!["a".into(), "b".into()],
                rows: vec![vec!["c".into(), "d".into()]],
                spans: vec![(a, a + 9), (a + 10, a + 13)],
            });
            p
        };
        assert_eq!(
            caption(&p, &prose(&p), &p.tables[0], None).as_deref(),
            Some("CHAPTER 2. INTERFACES 25 — 2.4 Emaxima mode")
        );
    }

    #[test]
    fn a_table_is_titled_under_the_numbered_section_it_sits_in() {
        for yes in [
            "2.2.2.Maxima-mode",
            "6.5.1. Native Bonds",
            "3.6.1 列格式",
            "10.2 Customization",
        ] {
            assert!(is_section_heading(yes), "{yes}");
        }
        for no in [
            "1. Install the package",
            "1.5 cm wide",
            "4.17 2022/01/23",
            "2.1. It ends here.",
            "6.5.1.",
            ". . . . 2.3 Tables",
            "Version 4.8 (2014/08/08)",
            // Contents entries: dot leaders, a page number after the title.
            "10.3. Standalone Names . . . . . . . 29",
            "6.4. Charges and Other Superscripts 8",
            "2.2.1 Installing the Maxima Emacs Mode........ 11",
        ] {
            assert!(!is_section_heading(no), "{no}");
        }
        let table = |number: u32, text: &str| {
            let mut p = page(number, text);
            let a = text.find("Key Description").unwrap();
            let b = text.find("C-c").unwrap();
            p.tables.push(quire_pdf::Table {
                header: vec!["Key".into(), "Description".into()],
                rows: vec![vec!["C-c :".into(), "Uncomment the region.".into()]],
                spans: vec![(a, a + "Key Description".len()), (b, text.len())],
            });
            p
        };
        // On its page: the section, then its own title.
        let p = table(
            13,
            "2.2.2.Maxima-mode\nThis mode sends lines to Maxima.\nComments\nKey Description\nC-c : Uncomment the region.",
        );
        assert_eq!(
            caption(&p, &prose(&p), &p.tables[0], Some("2.1 Old")).as_deref(),
            Some("2.2.2.Maxima-mode — Comments")
        );
        // Carried from the pages before, and not named twice.
        let later = table(
            14,
            "It goes on.\nKey Description\nC-c : Uncomment the region.",
        );
        let first = page(12, "2.2 Emacs\nText.\n2.2.2.Maxima-mode\nIt is basic.");
        let chunks = split(&[first, later], &Words(64), &SplitConfig::default()).unwrap();
        let t = chunks.iter().find(|c| c.text.contains("| --- |")).unwrap();
        assert!(t.text.starts_with("2.2.2.Maxima-mode\n\n| Key |"), "{t:?}");
        let p = table(
            20,
            "2.4 Emaxima mode\nKey Description\nC-c : Uncomment the region.",
        );
        assert_eq!(
            caption(&p, &prose(&p), &p.tables[0], None).as_deref(),
            Some("2.4 Emaxima mode")
        );
        // A heading taken into the header row is the section, not the one before it.
        let mut p = table(
            2,
            "2.2 Integrals\nText.\nKey Description\nC-c : Uncomment the region.",
        );
        p.tables[0].header = vec!["2.3 General".into(), "symbols".into()];
        assert_eq!(
            caption(&p, &prose(&p), &p.tables[0], None).as_deref(),
            Some("2.3 General")
        );
    }

    #[test]
    fn a_tables_title_takes_none_of_its_rows_room() {
        // A long title: rows fill the same room as without one.
        let rows: Vec<String> = (0..12).map(|i| format!("k{i} value number {i}")).collect();
        let body = rows.join("\n");
        let mk = |above: &str| {
            let text = format!("{above}\nKey Value\n{body}");
            let mut p = page(3, &text);
            let a = text.find("Key Value").unwrap();
            let b = text.find("k0").unwrap();
            p.tables.push(quire_pdf::Table {
                header: vec!["Key".into(), "Value".into()],
                rows: rows
                    .iter()
                    .map(|r| {
                        let (k, v) = r.split_once(' ').unwrap();
                        vec![k.to_string(), v.to_string()]
                    })
                    .collect(),
                spans: std::iter::once((a, a + 9))
                    .chain((0..12).map(|_| (b, text.len())))
                    .collect(),
            });
            p
        };
        let count = |p: ExtractedPage| {
            split(
                &[p],
                &Words(400),
                &SplitConfig {
                    chunk_tokens: 30,
                    overlap_tokens: 0,
                },
            )
            .unwrap()
            .iter()
            .filter(|c| c.text.contains("| --- |"))
            .count()
        };
        let plain = count(mk("It ends here."));
        let titled = count(mk(
            "A long heading of many many words that names this table",
        ));
        assert!(plain > 1);
        assert_eq!(titled, plain);
    }
}
