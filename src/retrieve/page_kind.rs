//! Whether a chunk's (or a page's) text is navigation — a table of contents, a list
//! of figures or tables, an index, or a bibliography — read from its shape, not its
//! words: dot leaders (`. . . .`, `·····`, `……`), a column of page numbers that
//! rises down the page, index entries (`term, 12, 45–47`) and bibliography entries
//! (`[12] Author, Title, 1999`), and how many of the lines are such entries. CJK text
//! reads the same way (`38 如何注释掉一大段内容，不做编译？ ........ 15`).
//!
//! Such pages match every question lexically (they list every section title) and
//! answer none, so retrieval demotes them ([`super::search`]); the kind is shown with
//! the source. A table of numbers is body text, not navigation: its rows hold several
//! numbers, or no section number before the last one.

use serde::{Deserialize, Serialize};

use crate::text::leaders::{self, is_leader_char};

/// The kind of a navigation page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PageKind {
    /// A table of contents.
    Contents,
    /// A list of figures or tables.
    Figures,
    /// A back-of-the-book index.
    Index,
    /// A bibliography or list of references.
    Bibliography,
    /// Not navigation: a table's rows, as a Markdown table ([`table_kind`]); shown as
    /// a table, never demoted.
    Table,
}

impl PageKind {
    /// Its name in the sources' JSON: `contents`, `figures`, `index`, `bibliography`.
    pub fn as_str(self) -> &'static str {
        match self {
            PageKind::Contents => "contents",
            PageKind::Figures => "figures",
            PageKind::Index => "index",
            PageKind::Bibliography => "bibliography",
            PageKind::Table => "table",
        }
    }

    /// Whether it is a navigation page (which retrieval demotes), not a table.
    pub fn is_navigation(self) -> bool {
        self != PageKind::Table
    }
}

/// [`PageKind::Table`] when `text` is a Markdown table (a table chunk, as splitting
/// makes them: a header row, its `| --- |` separator, rows), under its caption when it
/// has one (a line of text, then an empty line).
pub fn table_kind(text: &str) -> Option<PageKind> {
    crate::text::table_head(text).map(|_| PageKind::Table)
}

impl std::fmt::Display for PageKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One entry of a table of contents: its title (a leading section number kept) and
/// the page number printed after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentsEntry {
    pub title: String,
    pub page: u32,
}

/// Words an entry's title keeps at most (the last ones: text before an entry that
/// is no entry's, a running head, is cut off).
const ENTRY_WORDS: usize = 24;

/// The entries of a contents text: a title, dot leaders, then a page number (the
/// number may stand on the next line, as extraction often puts it; two columns of
/// entries on one line are two entries), or a line that starts with a section number
/// and ends with a page number without leaders (`3 The Basics 29`). Text before the
/// first leader that ends no entry (a chunk cut in mid-entry) gives none.
pub fn contents_entries(text: &str) -> Vec<ContentsEntry> {
    let mut out = Vec::new();
    // Lines with no leader: a section-numbered title and its page. The other
    // entries' titles start after such a line.
    const ENDS_ENTRY: &str = "\u{0}";
    let mut flat: Vec<&str> = Vec::new();
    // For each token of `flat`, where its line starts: a title starts on the line of
    // its leaders (a heading line before it is none of its words).
    let mut line_of: Vec<usize> = Vec::new();
    for line in text.lines().map(str::trim) {
        let line_start = flat.len();
        if !has_leader(line) {
            let l = read_line(line);
            if let (true, Some(page)) = (l.numbered, l.page) {
                let mut tokens: Vec<&str> = line.split_whitespace().collect();
                tokens.pop();
                push_entry(&mut out, &tokens, page);
                flat.push(ENDS_ENTRY);
                line_of.push(line_start);
                continue;
            }
        }
        // Leaders stuck to a word or a page number (`Interface.`, `....15`) are
        // taken apart from it.
        for t in line.split_whitespace() {
            let body = t.trim_matches(is_leader_char);
            if body.is_empty() {
                flat.push(t);
                continue;
            }
            let at = t.find(body).unwrap_or(0);
            let (head, rest) = t.split_at(at);
            let (body, tail) = rest.split_at(body.len());
            flat.extend([head, body, tail].into_iter().filter(|x| !x.is_empty()));
        }
        line_of.resize(flat.len(), line_start);
    }
    // Leader entries, over the lines as one.
    let leaders = |x: &str| x.chars().all(is_leader_char);
    let mut start = 0;
    let mut i = 0;
    while i < flat.len() {
        if flat[i] == ENDS_ENTRY {
            i += 1;
            start = i;
            continue;
        }
        if !leaders(flat[i]) {
            i += 1;
            continue;
        }
        let mut j = i;
        let mut dots = 0;
        while j < flat.len() && leaders(flat[j]) {
            dots += flat[j]
                .chars()
                .map(|c| if matches!(c, '…' | '⋯') { 3 } else { 1 })
                .sum::<usize>();
            j += 1;
        }
        if dots >= 3 {
            if let Some(page) = flat.get(j).and_then(|p| page_number(p)) {
                push_entry(&mut out, &flat[start.max(line_of[i])..i], page);
                j += 1;
            }
            start = j;
        }
        i = j;
    }
    out
}

/// An entry of `tokens` (the title, its last [`ENTRY_WORDS`]) at `page`, when the
/// title has a word.
fn push_entry(out: &mut Vec<ContentsEntry>, tokens: &[&str], page: u32) {
    let from = tokens.len().saturating_sub(ENTRY_WORDS);
    let title = tokens[from..].join(" ");
    let title = title.trim_end_matches(is_leader_char).trim();
    if title.split_whitespace().any(has_word) && page > 0 {
        out.push(ContentsEntry {
            title: title.to_string(),
            page,
        });
    }
}

/// Lines a text needs before its shape says anything.
const MIN_LINES: usize = 3;

/// What one line looks like.
#[derive(Debug, Default, Clone, Copy)]
struct Line {
    /// A run of dot leaders.
    leader: bool,
    /// The page number it ends with, when it looks like a contents entry's (text,
    /// then one number; a section number may lead).
    page: Option<u32>,
    /// It starts with a section number (`3`, `2.1`, `A`, `IV`, `第3章`).
    numbered: bool,
    /// `term, 12, 45–47`, or `term . . . 12, 45` (an index with dot leaders).
    index: bool,
    /// It starts with a bibliography label (`[12]`, `[Knu84]`).
    bib_label: bool,
    /// It holds a year (1500–2099).
    year: bool,
    /// It starts with a caption word (`Figure`, `Table`, `图`, `表`).
    caption: bool,
}

/// The navigation kind of `text`, or `None` for body text. Whether it is navigation
/// is read from the shape alone; a heading (`Index`, `References`, `参考文献`…) only
/// names the kind of a page already found to be one.
pub fn page_kind(text: &str) -> Option<PageKind> {
    let kind = kind_by_shape(text)?;
    Some(kind_by_heading(text).unwrap_or(kind))
}

/// The kind a heading line near the top names, if any.
fn kind_by_heading(text: &str) -> Option<PageKind> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(3)
        .find_map(|l| {
            let l = without_label(&l.to_lowercase()).to_string();
            let starts = |words: &[&str]| {
                words
                    .iter()
                    .any(|w| l == *w || l.starts_with(&format!("{w} ")))
            };
            if starts(&["index", "索引", "general index", "subject index"]) {
                Some(PageKind::Index)
            } else if starts(&["bibliography", "references", "参考文献", "literature"]) {
                Some(PageKind::Bibliography)
            } else if starts(&[
                "list of figures",
                "list of tables",
                "插图",
                "表格",
                "图目录",
                "表目录",
            ]) {
                Some(PageKind::Figures)
            } else if starts(&["contents", "table of contents", "目录", "目次"]) {
                Some(PageKind::Contents)
            } else {
                None
            }
        })
}

/// A heading line without its appendix or section label: "c. index" → "index",
/// "b references" → "references", "12 contents" → "contents". A label is a first
/// word of one or two letters or digits, a number, or a Roman numeral, with a dot
/// after it or not ("the index" keeps its "the").
fn without_label(l: &str) -> &str {
    match l.split_once(' ') {
        Some((first, rest)) => {
            let label = first.strip_suffix('.').unwrap_or(first);
            let alnum = label.chars().all(|c| c.is_ascii_alphanumeric());
            let number = label.chars().all(|c| c.is_ascii_digit());
            let roman = label.chars().all(|c| "ivxlc".contains(c));
            if !label.is_empty() && alnum && (label.len() <= 2 || number || roman) {
                rest.trim_start()
            } else {
                l
            }
        }
        None => l,
    }
}

/// The navigation kind of `text` from its shape alone.
fn kind_by_shape(text: &str) -> Option<PageKind> {
    let lines: Vec<Line> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(read_line)
        .collect();
    let n = lines.len();
    if n < MIN_LINES {
        return None;
    }
    let count = |f: &dyn Fn(&Line) -> bool| lines.iter().filter(|l| f(l)).count();

    // A bibliography: labelled entries, most of them with a year (an entry may run
    // over two or three lines).
    let labels = count(&|l| l.bib_label);
    let mut dated = 0;
    let mut entry: Option<bool> = None; // the entry being read: has it a year?
    for l in &lines {
        if l.bib_label {
            dated += usize::from(entry == Some(true));
            entry = Some(l.year);
        } else if let Some(y) = entry.as_mut() {
            *y |= l.year;
        }
    }
    dated += usize::from(entry == Some(true));
    if labels >= 3 && labels * 4 >= n && dated * 2 >= labels {
        return Some(PageKind::Bibliography);
    }

    // An index: a third of the lines or more are `term, pages` (the rest are
    // sub-entries and letter headings).
    let index = count(&|l| l.index);
    if index >= 3 && index * 3 >= n {
        return Some(PageKind::Index);
    }

    // Contents or a list of figures: entries with dot leaders, or section-numbered
    // entries ending in page numbers that rise down the page.
    let leaders = count(&|l| l.leader);
    let pages: Vec<u32> = lines
        .iter()
        .filter(|l| l.page.is_some() && (l.leader || l.numbered))
        .filter_map(|l| l.page)
        .collect();
    let entries = count(&|l| l.leader || (l.page.is_some() && l.numbered));
    let rising = pages.windows(2).filter(|w| w[1] >= w[0]).count();
    let rises = pages.len() < 2 || rising * 10 >= (pages.len() - 1) * 7;
    let by_leaders = leaders >= 2 && entries * 2 >= n;
    let by_numbers = pages.len() >= 4 && entries * 2 >= n && rises;
    if by_leaders || by_numbers {
        let captions = count(&|l| l.caption && (l.leader || l.page.is_some()));
        return Some(if captions * 2 >= entries {
            PageKind::Figures
        } else {
            PageKind::Contents
        });
    }
    None
}

/// Whether `line` has a run of dot leaders ([`leaders::runs`]: at least four dots,
/// single spaces allowed between them, an ellipsis counting as three).
fn has_leader(line: &str) -> bool {
    leaders::runs(line).next().is_some()
}

/// A page number: 1–4 ASCII digits, or a lower-case Roman numeral (front matter).
fn page_number(token: &str) -> Option<u32> {
    if (1..=4).contains(&token.len()) && token.bytes().all(|b| b.is_ascii_digit()) {
        return token.parse().ok();
    }
    if (1..=6).contains(&token.len()) && token.chars().all(|c| "ivxlc".contains(c)) {
        // Roman front matter sorts before page 1.
        return Some(0);
    }
    None
}

/// A number of a cell: digits with optional separators, sign or percent.
fn is_numeric(token: &str) -> bool {
    let t = token.trim_end_matches(['%', ',', ';']);
    !t.is_empty()
        && t.chars().any(|c| c.is_ascii_digit())
        && t.chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | ',' | '-' | '+' | '−'))
}

/// Letters of words: Latin or any other alphabet, CJK included.
fn has_word(token: &str) -> bool {
    token.chars().filter(|c| c.is_alphabetic()).count() >= 2
        || token.chars().any(crate::text::is_cjk)
}

/// Whether `token` is a section number: `3`, `3.`, `2.1`, `A`, `A.1`, `IV`, `第3章`.
fn is_section_number(token: &str) -> bool {
    let t = token.trim_end_matches(['.', ')']);
    if t.is_empty() {
        return false;
    }
    let dotted = t
        .split('.')
        .all(|p| !p.is_empty() && p.len() <= 3 && p.bytes().all(|b| b.is_ascii_digit()));
    let lettered = {
        let mut parts = t.split('.');
        let head = parts.next().unwrap_or("");
        head.len() == 1
            && head.bytes().all(|b| b.is_ascii_uppercase())
            && parts.all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
    };
    let roman = t.len() <= 5 && t.chars().all(|c| "IVXL".contains(c));
    let chapter = t.starts_with('第') && (t.ends_with('章') || t.ends_with('节'));
    dotted || lettered || roman || chapter
}

/// `term, 12, 45–47` (or `term 12, 45`): words, then only page numbers and ranges
/// after the first comma before a number.
fn is_index_entry(line: &str) -> bool {
    let Some(cut) = line.find(|c: char| c.is_ascii_digit()) else {
        return false;
    };
    let (head, tail) = line.split_at(cut);
    if !has_word(head) || line.len() > 120 {
        return false;
    }
    let tail_ok = tail
        .chars()
        .all(|c| c.is_ascii_digit() || matches!(c, ',' | ' ' | '–' | '-' | '—' | 'f'));
    let commas = head.trim_end().ends_with(',') as usize + tail.matches(',').count();
    tail_ok && commas >= 1
}

/// Whether the line holds a year from 1500 to 2099 as a whole token.
fn has_year(line: &str) -> bool {
    line.split(|c: char| !c.is_ascii_digit())
        .any(|t| t.len() == 4 && matches!(t.parse::<u32>(), Ok(1500..=2099)))
}

fn read_line(line: &str) -> Line {
    let tokens: Vec<&str> = line.split_whitespace().collect();
    let first = tokens.first().copied().unwrap_or("");
    let leader = has_leader(line);
    // The last token, with leader dots stuck to it taken off (`....15`).
    let last = tokens
        .last()
        .map(|t| t.trim_start_matches(is_leader_char))
        .unwrap_or("");
    let numbers = tokens.iter().filter(|t| is_numeric(t)).count();
    // `附录 A …`, `Appendix B …`: a word, then the appendix's letter.
    let appendix = matches!(first, "附录" | "Appendix" | "APPENDIX")
        && tokens.get(1).is_some_and(|t| {
            let t = t.trim_end_matches(['.', ':']);
            t.len() == 1 && t.bytes().all(|b| b.is_ascii_uppercase())
        });
    let numbered = is_section_number(first) || appendix;
    let worded = tokens.iter().any(|t| has_word(t));
    // Text and one page number at the end; a leading section number allowed. A row of
    // a table (several numbers) is not an entry.
    let page = page_number(last).filter(|_| {
        worded && numbers <= 1 + usize::from(numbered && is_numeric(first)) && tokens.len() >= 2
            || (leader && tokens.len() >= 2)
    });
    let bib_label = first.starts_with('[')
        && first.find(']').is_some_and(|i| {
            (2..=12).contains(&i) && first[1..i].chars().all(char::is_alphanumeric)
        });
    let caption = [
        "Figure",
        "Fig.",
        "Table",
        "Tab.",
        "Listing",
        "Abbildung",
        "Tabelle",
    ]
    .iter()
    .any(|w| first.starts_with(w))
        || line.starts_with('图')
        || line.starts_with('表');
    // After the last leader dot: an index entry's pages hold commas.
    let after_leaders = line
        .rfind(is_leader_char)
        .map_or("", |i| &line[i..])
        .trim_start_matches(is_leader_char);
    let leader_pages = leader
        && after_leaders.contains(',')
        && after_leaders
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, ',' | ' ' | '–' | '-'));
    Line {
        leader,
        page,
        numbered,
        index: leader_pages || (!leader && is_index_entry(line)),
        bib_label,
        year: has_year(line),
        caption,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_contents_page_with_dot_leaders() {
        let toc = "Contents\n\
            1 Introduction . . . . . . . . . . . . . . . . 1\n\
            1.1 What chemformula does . . . . . . . . . . 2\n\
            1.2 Installation . . . . . . . . . . . . . . . . 3\n\
            2 Usage . . . . . . . . . . . . . . . . . . . . 5\n\
            2.1 The \\ch command ...................... 5\n\
            2.2 Arrows . . . . . . . . . . . . . . . . . . 9\n\
            3 Options 12";
        assert_eq!(page_kind(toc), Some(PageKind::Contents));
    }

    #[test]
    fn contents_entries_are_read_with_their_pages() {
        let entry = |title: &str, page: u32| ContentsEntry {
            title: title.to_string(),
            page,
        };
        // As extraction gives them: the page on the next line, leaders stuck to the
        // title or the page, two columns on one line, a numbered line without
        // leaders, a chunk that starts in mid-entry.
        let toc = ". . . . . . . 10\n\
            2.2 The Emacs Interface. . . . . . . . . . . .\n\
            11\n\
            2.2.1 Installing the Mode . . . . . . .11\n\
            3 The Basics - What you need to know 29\n\
            3.1 The Very Beginning . . . . . . 30\n\
            1.3.1 LATEX 命令和环境 . . . . 4      3.4 脚注和边注 . . . . . . 22\n\
            38 如何注释掉一大段内容，不做编译？ ········· 15";
        let mut got = contents_entries(toc);
        got.sort_by_key(|e| e.page);
        assert_eq!(
            got,
            vec![
                entry("1.3.1 LATEX 命令和环境", 4),
                entry("2.2 The Emacs Interface", 11),
                entry("2.2.1 Installing the Mode", 11),
                entry("38 如何注释掉一大段内容，不做编译？", 15),
                entry("3.4 脚注和边注", 22),
                entry("3 The Basics - What you need to know", 29),
                entry("3.1 The Very Beginning", 30),
            ]
        );
        // Body text with a few dots and numbers has none.
        assert!(contents_entries("We waited... then 3 more came, e.g. in 1999.").is_empty());
    }

    #[test]
    fn a_chinese_contents_page() {
        // ctex-faq.pdf's contents, as Quire extracts it.
        let toc = "Contents\n\
            A 关于 FAQ 5\n\
            1 CTEX 是干什么的？ . . . . . . . . . . . . . . . . . . . . 5\n\
            2 CTEX 网站包括几个部分？ . . . . . . . . . . . . . . . . 5\n\
            37 如何在文档中插入源代码？ ········· 15\n\
            38 如何注释掉一大段内容，不做编译？ ........ 15\n\
            39 怎样使用中文的标点？ …… 16";
        assert_eq!(page_kind(toc), Some(PageKind::Contents));
        // Without leaders: numbered entries whose page numbers rise.
        let plain = "目录\n第1章 简介 1\n1.1 安装 2\n1.2 编译 4\n第2章 排版 7\n2.1 段落 9";
        assert_eq!(page_kind(plain), Some(PageKind::Contents));
    }

    #[test]
    fn a_list_of_figures() {
        let lof = "List of Figures\n\
            Figure 1.1 The layout of a page . . . . . . . . 4\n\
            Figure 1.2 Margins . . . . . . . . . . . . . . . 6\n\
            Figure 2.1 A matrix with dotted lines . . . . . 19\n\
            Table 3.1 Symbols of wasysym . . . . . . . . . . 22";
        assert_eq!(page_kind(lof), Some(PageKind::Figures));
    }

    #[test]
    fn an_index_page() {
        let index = "Index\nA\n\
            apt-get, 12, 45–47\n\
            apt-mark, 48\n\
            hold, 48, 102\n\
            aptitude 30, 31\n\
            B\n\
            backports, 77\n\
            bug reports, 5, 88–90\n\
            severity\n\
            build daemons, 120";
        assert_eq!(page_kind(index), Some(PageKind::Index));
    }

    #[test]
    fn an_index_with_dot_leaders_and_a_heading_names_its_kind() {
        let index = "\\@after@all . . . . . . . . . . . . . 38, 43, 51\n\
            \\@after@token . . . . . . . . . . . . . . 22, 24\n\
            \\@let@token . . . . . . . . . 6, 9, 56, 59, 61\n\
            \\@prepare@after . . . . . . . . . . . . 12";
        assert_eq!(page_kind(index), Some(PageKind::Index));
        // Single page numbers after the leaders read as contents, unless a heading
        // says it is an index.
        let arrows = "-/> (arrow type) . . . . . . . . 21\n-> (arrow type) . . . . . . . . 21\n\
            <- (arrow type) . . . . . . . . 21\n<-> (arrow type) . . . . . . . . 21";
        assert_eq!(page_kind(arrows), Some(PageKind::Contents));
        assert_eq!(
            page_kind(&format!("Index\nSymbols\n{arrows}")),
            Some(PageKind::Index)
        );
        // An appendix's index, its heading under the appendix letter.
        assert_eq!(
            page_kind(&format!("C. Index\nSymbols\n{arrows}")),
            Some(PageKind::Index)
        );
        assert_eq!(
            page_kind(&format!("Appendix C Index\nSymbols\n{arrows}")),
            Some(PageKind::Contents),
            "only a short label is passed over"
        );
        // A heading alone makes no navigation page.
        assert_eq!(
            page_kind("Index\nThis chapter explains how to build an index.\nRun makeindex."),
            None
        );
    }

    #[test]
    fn a_bibliography() {
        let bib = "References\n\
            [1] D. E. Knuth, The TeXbook, Addison-Wesley, 1984.\n\
            [2] L. Lamport, LaTeX: A Document Preparation System,\n\
            Addison-Wesley, second edition, 1994.\n\
            [Mit04] F. Mittelbach and M. Goossens, The LaTeX Companion,\n\
            2nd ed., 2004.\n\
            [4] T. Oetiker, The Not So Short Introduction to LaTeX, 2021.";
        assert_eq!(page_kind(bib), Some(PageKind::Bibliography));
    }

    #[test]
    fn a_body_page_with_a_few_dots_and_numbers_is_body() {
        let body = "To keep a package at its version, run apt-mark hold on it... then\n\
            apt-get will not upgrade it. The option was added in version 0.8 of apt,\n\
            released in 2010, and is described on page 48. Wait . . . and see:\n\
            the held package stays at 1.2.3 while the others move to 2.0 or later.\n\
            See also section 7.4 for pinning, which gives finer control over it.\n\
            Pinning is set in /etc/apt/preferences with a priority such as 1001.";
        assert_eq!(page_kind(body), None);
        let chinese =
            "有一大段内容暂时不想让 LaTeX 编译时，可以用 \\iffalse 和 \\fi 把它包起来。\n\
            这样编译时就会被忽略……也可以加载 verbatim 宏包，使用 comment 环境。\n\
            见第 15 页。";
        assert_eq!(page_kind(chinese), None);
    }

    #[test]
    fn a_numbered_list_in_body_text_is_body() {
        let steps = "To install the font:\n\
            1. Download the archive and unpack it into a folder of your choice.\n\
            2. Run mktexlsr so that TeX finds the new files in that folder.\n\
            3. Add \\usepackage{txfonts} to the preamble of your document.\n\
            4. Compile twice, so that the references settle.\n\
            5. Check the log for font warnings.";
        assert_eq!(page_kind(steps), None);
    }

    #[test]
    fn a_table_of_numbers_is_body() {
        // Several numbers a row: data, not entries with a page number.
        let table = "Table 2: timings\n\
            size 10 20 40 80\n\
            pdfTeX 1.2 2.3 4.8 9.9\n\
            XeTeX 1.9 3.6 7.4 15.1\n\
            LuaTeX 2.4 4.5 9.1 18.6\n\
            total 5.5 10.4 21.3 43.6";
        assert_eq!(page_kind(table), None);
        // Two columns, a word and a number: no section numbers, so no contents.
        let counts = "Package Count\napples 12\npears 15\nplums 20\ncherries 31\nlimes 40";
        assert_eq!(page_kind(counts), None);
    }

    #[test]
    fn too_little_text_is_body() {
        assert_eq!(page_kind(""), None);
        let md = "| Option | Value |\n| --- | --- |\n| width | 3pt |";
        assert_eq!(table_kind(md), Some(PageKind::Table));
        assert!(!PageKind::Table.is_navigation());
        assert_eq!(table_kind("| just a line |\nand text"), None);
        // Under its caption.
        let captioned = format!("Table 1: Options of the box.\n\n{md}");
        assert_eq!(table_kind(&captioned), Some(PageKind::Table));
        assert_eq!(table_kind("Some prose.\nMore prose.\n| a |"), None);
        assert_eq!(page_kind("1 Introduction . . . . . . 1"), None);
    }

    #[test]
    fn line_shapes() {
        assert!(has_leader("Intro . . . . 3"));
        assert!(has_leader("问题 ········ 15"));
        assert!(has_leader("问题 …… 15"));
        assert!(!has_leader("e.g. this... and that"));
        assert!(is_index_entry("apt-get, 12, 45–47"));
        assert!(!is_index_entry("In 1990 the first version was released."));
        assert!(is_section_number("2.1"));
        assert!(is_section_number("A"));
        assert!(is_section_number("第3章"));
        assert!(!is_section_number("apples"));
        assert_eq!(PageKind::Figures.to_string(), "figures");
    }
}
