//! Tables read from a page's positioned text: the page's horizontal runs (words closer
//! than a cell gap, from [`super::layout`]) gathered into visual lines by baseline,
//! and a run of consecutive lines whose cells line up in columns — cell starts, ends
//! or centres at the same x across lines, gaps wider than a word gap — kept as a
//! table: its first row the header, every row's cells, and each row's bytes in the
//! page's text. Columns are the x ranges the rows' cells cover, apart by gutters, so
//! that left, centred and right-aligned columns are found alike. A line that starts
//! right of the column most rows start in continues the row above (a wrapped cell). Body text has one run per line, so it is never a table;
//! a two-column page's lines are two runs of many words each, which the prose check
//! rejects; a contents page's column of rising page numbers is not a table either.

use std::ops::Range;

/// Gap (in font sizes) from which two runs on a line are separate cells: wider than a
/// justified line's widest word gap, narrower than LaTeX's column separation.
pub const CELL_GAP: f64 = 0.9;

/// A horizontal run of text on one baseline: its extent, its font size and its bytes
/// in the page's text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Run {
    pub x0: f64,
    pub x1: f64,
    pub y: f64,
    pub size: f64,
    pub bytes: Range<usize>,
}

/// A table found on a page.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Table {
    /// The first row's cells.
    pub header: Vec<String>,
    /// The other rows, each with as many cells as the header (empty where none).
    pub rows: Vec<Vec<String>>,
    /// Each row's bytes in the page's text (from its first cell's start to its last
    /// cell's end, wrapped lines included), the header's first.
    pub spans: Vec<(usize, usize)>,
}

/// The detector's thresholds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Params {
    /// Rows a table needs, its header included.
    pub min_rows: usize,
    /// The widest baseline distance (in font sizes) between two lines of one table.
    pub line_gap: f64,
    /// How far (in font sizes) two cell edges may be and still line up.
    pub align: f64,
    /// Words per cell (median) from which every column reads as prose.
    pub prose_words: f64,
    /// The share of rows whose cells may cross a gutter between two columns (one row
    /// always may).
    pub gutter: f64,
}

impl Default for Params {
    /// Chosen on the tuning half of `bench/data/tables.jsonl` (`quire bench tables`).
    fn default() -> Self {
        Self {
            min_rows: 3,
            line_gap: 2.2,
            align: 0.6,
            prose_words: 5.0,
            gutter: 0.25,
        }
    }
}

/// One visual line: its baseline, its largest font size and its runs left to right.
struct Line<'a> {
    y: f64,
    size: f64,
    cells: Vec<&'a Run>,
}

/// The tables among `runs` (whose bytes index `text`).
pub(crate) fn detect(text: &str, runs: &[Run], p: &Params) -> Vec<Table> {
    let lines = visual_lines(runs);
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].cells.len() < 2 {
            i += 1;
            continue;
        }
        let end = block_end(&lines, i, p);
        match table_of(text, &lines[i..end], p) {
            Some(t) => {
                out.push(t);
                i = end;
            }
            None => i += 1,
        }
    }
    out
}

/// The runs gathered into lines by baseline, top of the page first.
fn visual_lines(runs: &[Run]) -> Vec<Line<'_>> {
    let mut sorted: Vec<&Run> = runs.iter().filter(|r| r.x1 >= r.x0).collect();
    sorted.sort_by(|a, b| b.y.total_cmp(&a.y).then(a.x0.total_cmp(&b.x0)));
    let mut lines: Vec<Line<'_>> = Vec::new();
    for r in sorted {
        match lines.last_mut() {
            Some(l) if (l.y - r.y).abs() <= 0.3 * l.size.max(r.size).max(1e-6) => {
                l.size = l.size.max(r.size);
                l.cells.push(r);
            }
            _ => lines.push(Line {
                y: r.y,
                size: r.size,
                cells: vec![r],
            }),
        }
    }
    for l in &mut lines {
        l.cells.sort_by(|a, b| a.x0.total_cmp(&b.x0));
    }
    lines
}

/// Whether two cells line up: their starts, ends or centres within `tol`.
fn aligned(a: &Run, b: &Run, tol: f64) -> bool {
    (a.x0 - b.x0).abs() <= tol
        || (a.x1 - b.x1).abs() <= tol
        || ((a.x0 + a.x1) - (b.x0 + b.x1)).abs() <= 2.0 * tol
}

/// The end (exclusive) of the block of lines that may be one table, from `start` (a
/// line of two cells or more): lines close below each other, each either a row that
/// lines up with the rows above in two cells (or all of its cells), or one cell that
/// starts in a later column than the first.
fn block_end(lines: &[Line<'_>], start: usize, p: &Params) -> usize {
    let mut seen: Vec<&Run> = lines[start].cells.clone();
    let first_x = lines[start].cells[0].x0;
    let mut j = start + 1;
    while j < lines.len() {
        let (prev, l) = (&lines[j - 1], &lines[j]);
        let size = l.size.max(prev.size).max(1e-6);
        if prev.y - l.y > p.line_gap * size {
            break;
        }
        let tol = p.align * size;
        let hits = l
            .cells
            .iter()
            .filter(|c| seen.iter().any(|s| aligned(c, s, tol)))
            .count();
        let ok = if l.cells.len() >= 2 {
            hits >= 2 || hits == l.cells.len()
        } else {
            hits == 1 && l.cells[0].x0 > first_x + tol
        };
        if !ok {
            break;
        }
        seen.extend(l.cells.iter().copied());
        j += 1;
    }
    j
}

/// The table `block` makes, if it is one.
fn table_of(text: &str, block: &[Line<'_>], p: &Params) -> Option<Table> {
    let row_lines: Vec<&Line<'_>> = block.iter().filter(|l| l.cells.len() >= 2).collect();
    if row_lines.len() < p.min_rows {
        return None;
    }
    let cols = columns(&row_lines, p);
    if cols.len() < 2 {
        return None;
    }
    let col_of = |r: &Run| column_of(&cols, r);
    let cell_text = |r: &Run| -> &str { text.get(r.bytes.clone()).unwrap_or("").trim() };
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut spans: Vec<(usize, usize)> = Vec::new();
    // The column most rows start in: a line of several cells that starts right of it
    // continues the row above (cells wrapped in several columns, or a cell spanning
    // rows on its left).
    let mut starts = vec![0usize; cols.len()];
    for l in &row_lines {
        if let Some(c) = l.cells.first() {
            starts[col_of(c)] += 1;
        }
    }
    let key = (0..cols.len())
        .max_by_key(|&i| (starts[i], usize::MAX - i))
        .unwrap_or(0);
    for l in block {
        let first = l.cells.first().map_or(0, |c| col_of(c));
        let new_row = l.cells.len() >= 2 && first <= key || rows.is_empty();
        if new_row {
            rows.push(vec![String::new(); cols.len()]);
            spans.push((usize::MAX, 0));
        }
        let (Some(row), Some(span)) = (rows.last_mut(), spans.last_mut()) else {
            continue;
        };
        for c in &l.cells {
            for (col, words) in split_at_gutters(&cols, c, cell_text(c)) {
                let cell = &mut row[col];
                if !cell.is_empty() {
                    cell.push(' ');
                }
                cell.push_str(words);
            }
            span.0 = span.0.min(c.bytes.start);
            span.1 = span.1.max(c.bytes.end);
        }
    }
    let lines: Vec<Vec<&str>> = block
        .iter()
        .map(|l| l.cells.iter().map(|c| cell_text(c)).collect())
        .collect();
    // The page's text holds a table row by row; rows whose bytes interleave are
    // columns the text reads one after the other (an index's, a two-column page's),
    // and a row's span would cover the other column's lines.
    let in_order = spans.windows(2).all(|w| w[0].1 <= w[1].0);
    if rows.len() < p.min_rows
        || !in_order
        || prose(&rows, p)
        || page_numbers(&rows)
        || navigation(&lines)
    {
        return None;
    }
    let header = rows.remove(0);
    Some(Table {
        header,
        rows,
        spans,
    })
}

/// The columns of a block's rows: the x ranges where the cells of more than
/// `p.gutter` of the rows lie, apart by gutters where fewer do (so that a cell
/// spanning two columns in one row does not join them). Starts, centres or ends may
/// line up: left, centred and right-aligned columns are found alike.
fn columns(rows: &[&Line<'_>], p: &Params) -> Vec<(f64, f64)> {
    let cells = || rows.iter().flat_map(|l| l.cells.iter());
    let lo = cells().map(|c| c.x0).fold(f64::INFINITY, f64::min);
    let hi = cells().map(|c| c.x1).fold(f64::NEG_INFINITY, f64::max);
    if !(lo.is_finite() && hi.is_finite()) || hi - lo > 20_000.0 {
        return Vec::new();
    }
    let mut cover = vec![0u32; (hi - lo) as usize + 2];
    for c in cells() {
        let last = cover.len() - 1;
        let (a, b) = ((c.x0 - lo) as usize, ((c.x1 - lo) as usize).min(last));
        for n in &mut cover[a.min(b)..=b] {
            *n += 1;
        }
    }
    let floor = ((rows.len() as f64 * p.gutter).floor() as u32).max(1);
    let mut out = Vec::new();
    let mut start = None;
    for (x, &n) in cover.iter().enumerate() {
        match (n > floor, start) {
            (true, None) => start = Some(x),
            (false, Some(a)) => {
                out.push((lo + a as f64, lo + x as f64));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(a) = start {
        out.push((lo + a as f64, hi));
    }
    out
}

/// The words of `r` (whose text is `text`) by column, in order: a run that crosses a
/// gutter (two cells closer than a cell gap) is cut between the words on either side,
/// each word placed in the column its estimated x falls in (characters taken as
/// equally wide; in a gutter, the run's own column).
fn split_at_gutters<'t>(cols: &[(f64, f64)], r: &Run, text: &'t str) -> Vec<(usize, &'t str)> {
    let whole = column_of(cols, r);
    let n = text.chars().count().max(1) as f64;
    let mut out: Vec<(usize, usize, usize)> = Vec::new(); // (column, start, end) in bytes
    let mut chars_before = 0usize;
    let mut at = 0usize;
    for word in text.split_inclusive(char::is_whitespace) {
        let w = word.trim_end();
        let len = w.chars().count();
        let mid = r.x0 + (r.x1 - r.x0) * (chars_before as f64 + len as f64 / 2.0) / n;
        let col = cols
            .iter()
            .position(|&(a, b)| mid >= a && mid <= b)
            .unwrap_or(whole);
        match out.last_mut() {
            Some((c, _, end)) if *c == col => *end = at + w.len(),
            _ if !w.is_empty() => out.push((col, at, at + w.len())),
            _ => {}
        }
        chars_before += word.chars().count();
        at += word.len();
    }
    // Columns must not go backwards (a mis-estimate): then the run stays whole.
    if out.windows(2).any(|w| w[1].0 <= w[0].0) || out.is_empty() {
        return vec![(whole, text)];
    }
    out.into_iter().map(|(c, a, b)| (c, &text[a..b])).collect()
}

/// The column `r` lies in most (the nearest when it lies in none).
fn column_of(cols: &[(f64, f64)], r: &Run) -> usize {
    let overlap = |&(a, b): &(f64, f64)| r.x1.min(b) - r.x0.max(a);
    (0..cols.len())
        .max_by(|&i, &j| overlap(&cols[i]).total_cmp(&overlap(&cols[j])))
        .unwrap_or(0)
}

/// Whether every column reads as prose (a two-column page, not a table): its median
/// cell holds `prose_words` words or more.
fn prose(rows: &[Vec<String>], p: &Params) -> bool {
    let cols = rows.first().map_or(0, Vec::len);
    (0..cols).all(|c| {
        let mut words: Vec<usize> = rows
            .iter()
            .map(|r| r.get(c).map_or(0, |t| t.split_whitespace().count()))
            .collect();
        words.sort_unstable();
        words
            .get(words.len() / 2)
            .is_some_and(|&w| w as f64 >= p.prose_words)
    })
}

/// Whether a block's lines (each its runs' text, left to right) are navigation laid
/// out in columns rather than a table: a back-of-book index's entries side by side
/// (`term, 12, 45–47`, or `term . . . . 12`), a contents page's entries with dot
/// leaders, or a bibliography's labelled entries (`[Knu84] Author, Title…`). A third
/// of the lines or more hold such an entry (the rest: sub-entries, letter headings,
/// chapter lines), or half of them start with a bibliography label. The page then
/// stays text, and retrieval reads it as navigation.
fn navigation(lines: &[Vec<&str>]) -> bool {
    let n = lines.iter().filter(|l| !l.is_empty()).count();
    let entries = lines
        .iter()
        .filter(|l| l.iter().any(|r| index_entry(r.trim()) || has_leader(r)))
        .count();
    // Bibliography labels are counted among the lines of two runs or more (an entry's
    // wrapped lines are one run).
    let rows = lines.iter().filter(|l| l.len() >= 2).count();
    let labelled = lines
        .iter()
        .filter(|l| l.len() >= 2 && l.first().is_some_and(|r| bib_label(r.trim())))
        .count();
    n > 0 && (entries >= 2 && entries * 3 >= n || rows > 0 && labelled * 2 >= rows)
}

/// A bibliography label alone: `[12]`, `[Knu84]`, `[Coh+08]`, `[GA +86]`.
fn bib_label(run: &str) -> bool {
    run.len() > 2
        && run.starts_with('[')
        && run.ends_with(']')
        && run.chars().count() <= 12
        && !run[1..run.len() - 1].contains(['[', ']'])
}

/// Whether `run` has a dot leader: four leader dots or more in a row, spaces allowed
/// between them (an ellipsis counts as three).
fn has_leader(run: &str) -> bool {
    let mut dots = 0usize;
    for c in run.chars() {
        if matches!(c, '.' | '·' | '…' | '⋯' | '．') {
            dots += if matches!(c, '…' | '⋯') { 3 } else { 1 };
            if dots >= 4 {
                return true;
            }
        } else if !(c.is_whitespace() && dots > 0) {
            dots = 0;
        }
    }
    false
}

/// `term, 12, 45–47` (or `term 12, 45`): a word, then only page numbers and ranges
/// after the first digit, with a comma before or among them (an index's entry; a
/// table cell such as `10pt` or `Section 2.1` is not one).
fn index_entry(run: &str) -> bool {
    let Some(cut) = run.find(|c: char| c.is_ascii_digit()) else {
        return false;
    };
    let (head, tail) = run.split_at(cut);
    let worded = head.chars().filter(|c| c.is_alphabetic()).count() >= 2
        || head.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c));
    let tail_ok = tail
        .chars()
        .all(|c| c.is_ascii_digit() || matches!(c, ',' | ' ' | '–' | '-' | '—' | 'f'));
    let commas = usize::from(head.trim_end().ends_with(',')) + tail.matches(',').count();
    worded && tail_ok && commas >= 1
}

/// Whether the last column is a contents page's: every cell a number, rising.
fn page_numbers(rows: &[Vec<String>]) -> bool {
    let nums: Vec<Option<u32>> = rows
        .iter()
        .skip(1)
        .map(|r| r.last().and_then(|t| t.trim().parse().ok()))
        .collect();
    nums.len() >= 2 && nums.iter().all(Option::is_some) && nums.windows(2).all(|w| w[0] <= w[1])
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Lays out `lines` (each a list of (x, text)) 12 units apart in a 10-unit font,
    /// 5 units a character, as the layout would, and detects.
    fn detect_lines(lines: &[&[(f64, &str)]]) -> (String, Vec<Table>) {
        let mut text = String::new();
        let mut runs = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            if i > 0 {
                text.push('\n');
            }
            for (k, (x, t)) in l.iter().enumerate() {
                if k > 0 {
                    text.push(' ');
                }
                let at = text.len();
                text.push_str(t);
                runs.push(Run {
                    x0: *x,
                    x1: x + 5.0 * t.chars().count() as f64,
                    y: 700.0 - 12.0 * i as f64,
                    size: 10.0,
                    bytes: at..text.len(),
                });
            }
        }
        let tables = detect(&text, &runs, &Params::default());
        (text, tables)
    }

    #[test]
    fn a_three_column_table_with_a_wrapped_cell() {
        let (text, tables) = detect_lines(&[
            &[(72.0, "Some text before the table, a line of body.")],
            &[(72.0, "Option"), (150.0, "Type"), (220.0, "Meaning")],
            &[
                (72.0, "width"),
                (150.0, "length"),
                (220.0, "the width of the box"),
            ],
            &[(220.0, "before it is scaled")],
            &[(72.0, "color"), (150.0, "name"), (220.0, "its colour")],
            &[(72.0, "frame"), (150.0, "boolean"), (220.0, "draw a frame")],
            &[(72.0, "And body text follows the table again here.")],
        ]);
        assert_eq!(tables.len(), 1, "{tables:?}");
        let t = &tables[0];
        assert_eq!(t.header, ["Option", "Type", "Meaning"]);
        assert_eq!(
            t.rows,
            [
                [
                    "width",
                    "length",
                    "the width of the box before it is scaled"
                ],
                ["color", "name", "its colour"],
                ["frame", "boolean", "draw a frame"],
            ]
        );
        assert_eq!(t.spans.len(), 4);
        let (a, b) = t.spans[1];
        assert_eq!(
            &text[a..b],
            "width length the width of the box\nbefore it is scaled"
        );
    }

    #[test]
    fn a_run_across_a_gutter_is_cut_between_its_words() {
        // The header's second and third cells closer than a cell gap: one run.
        let (_, tables) = detect_lines(&[
            &[(72.0, "sin"), (150.0, "Sine asin"), (230.0, "Arc Sine")],
            &[
                (72.0, "cos"),
                (150.0, "Cos"),
                (180.0, "acos"),
                (230.0, "Arc Cosine"),
            ],
            &[
                (72.0, "sinh"),
                (150.0, "Hyp"),
                (180.0, "asinh"),
                (230.0, "Arc"),
            ],
            &[
                (72.0, "tan"),
                (150.0, "Tan"),
                (180.0, "atan"),
                (230.0, "Arc Tangent"),
            ],
        ]);
        assert_eq!(tables.len(), 1, "{tables:?}");
        assert_eq!(tables[0].header, ["sin", "Sine", "asin", "Arc Sine"]);
        assert_eq!(tables[0].rows[0], ["cos", "Cos", "acos", "Arc Cosine"]);
    }

    #[test]
    fn a_paragraph_is_not_a_table() {
        let (_, tables) = detect_lines(&[
            &[(
                72.0,
                "Body text runs from margin to margin, one run a line,",
            )],
            &[(72.0, "because its word gaps are narrower than a cell gap;")],
            &[(72.0, "a short last line")],
            &[(72.0, "and a new paragraph starts at the margin once more.")],
        ]);
        assert!(tables.is_empty(), "{tables:?}");
    }

    #[test]
    fn a_two_column_page_is_not_a_table() {
        let l = "words of a column of prose that fill its width";
        let r = "and the other column of prose fills its own";
        let lines: Vec<[(f64, &str); 2]> = (0..8).map(|_| [(72.0, l), (320.0, r)]).collect();
        let refs: Vec<&[(f64, &str)]> = lines.iter().map(|l| &l[..]).collect();
        let (_, tables) = detect_lines(&refs);
        assert!(tables.is_empty(), "{tables:?}");
    }

    #[test]
    fn a_two_column_index_is_not_a_table() {
        // A back-of-book index set in two columns: entries (`term, pages`), indented
        // sub-entries and letter headings, the columns' lines side by side.
        let (_, tables) = detect_lines(&[
            &[(72.0, "A"), (320.0, "C")],
            &[(72.0, "acoth, 43"), (320.0, "coth, 43, 45")],
            &[(72.0, "algsys, 57–59"), (320.0, "cell, 12")],
            &[(82.0, "options, 58"), (330.0, "evaluation, 13")],
            &[(72.0, "apropos, 9, 21"), (320.0, "cos, 42")],
            &[(72.0, "asinh, 43"), (320.0, "C-c C-k, 25")],
            &[(72.0, "B"), (320.0, "D")],
            &[(72.0, "batch, 30"), (320.0, "describe, 9")],
            &[(72.0, "bfloat, 17, 18"), (320.0, "diff, 61–63")],
        ]);
        assert!(tables.is_empty(), "{tables:?}");
        // An index with dot leaders, its page numbers a column of their own.
        let (_, tables) = detect_lines(&[
            &[(72.0, "adduct-space . . . . ."), (180.0, "13, 15")],
            &[(72.0, "arrow-offset . . . . . ."), (180.0, "24")],
            &[(72.0, "\\chemsetup . . . . ."), (180.0, "3, 9")],
            &[(72.0, "circled . . . . . . . ."), (180.0, "9, 13, 36")],
        ]);
        assert!(tables.is_empty(), "{tables:?}");
        // A contents page with dot leaders, section numbers in a column (a wrapped
        // entry's two page numbers in one cell: not a column of rising numbers).
        let (_, tables) = detect_lines(&[
            &[
                (72.0, "5.10.1"),
                (110.0, "Being kind to porters . . . . ."),
                (400.0, "46"),
            ],
            &[
                (72.0, "5.10.2"),
                (110.0, "Guidelines for uploads . . . . ."),
                (400.0, "47 48"),
            ],
            &[
                (72.0, "5.10.4"),
                (110.0, "When it is not portable . . . . ."),
                (400.0, "49"),
            ],
            &[
                (72.0, "5.11.1"),
                (110.0, "When and how to do an NMU . . ."),
                (400.0, "50"),
            ],
        ]);
        assert!(tables.is_empty(), "{tables:?}");
        // A bibliography: labels in one column, the entries in another.
        let (_, tables) = detect_lines(&[
            &[
                (72.0, "[Feu18]"),
                (130.0, "Christian Feuersänger. pgfplots. 2018."),
            ],
            &[
                (72.0, "[Koh19]"),
                (130.0, "Markus Kohm. KOMA-Script. 2019."),
            ],
            &[
                (72.0, "[L3Pa]"),
                (130.0, "The LaTeX3 Project Team. l3kernel."),
            ],
            &[
                (72.0, "[Mit04]"),
                (130.0, "Frank Mittelbach. The Companion."),
            ],
        ]);
        assert!(tables.is_empty(), "{tables:?}");
        // A table whose cells hold numbers and lengths is still one.
        let (_, tables) = detect_lines(&[
            &[(72.0, "size"), (150.0, "10pt"), (220.0, "11pt")],
            &[(72.0, "small"), (150.0, "9pt"), (220.0, "10pt")],
            &[(72.0, "large"), (150.0, "12pt"), (220.0, "12pt")],
            &[(72.0, "Large"), (150.0, "14pt"), (220.0, "14pt")],
        ]);
        assert_eq!(tables.len(), 1, "{tables:?}");
    }

    #[test]
    fn columns_the_text_reads_one_after_the_other_are_not_a_table() {
        // Two columns side by side whose text runs down the left one, then the right
        // one: a row's span would cover the other column's lines.
        let left = ["alpha", "beta", "gamma", "delta"];
        let right = ["one", "two", "three", "four"];
        let mut text = String::new();
        let mut runs = Vec::new();
        for (x, words) in [(72.0, &left), (300.0, &right)] {
            for (i, w) in words.iter().enumerate() {
                let at = text.len();
                text.push_str(w);
                text.push('\n');
                runs.push(Run {
                    x0: x,
                    x1: x + 5.0 * w.len() as f64,
                    y: 700.0 - 12.0 * i as f64,
                    size: 10.0,
                    bytes: at..at + w.len(),
                });
            }
        }
        assert!(detect(&text, &runs, &Params::default()).is_empty());
        // The same cells, the text row by row: a table.
        let (_, tables) = detect_lines(&[
            &[(72.0, "alpha"), (300.0, "one")],
            &[(72.0, "beta"), (300.0, "two")],
            &[(72.0, "gamma"), (300.0, "three")],
            &[(72.0, "delta"), (300.0, "four")],
        ]);
        assert_eq!(tables.len(), 1, "{tables:?}");
    }

    #[test]
    fn a_contents_page_is_not_a_table() {
        let (_, tables) = detect_lines(&[
            &[(72.0, "1"), (90.0, "Introduction"), (400.0, "3")],
            &[(72.0, "2"), (90.0, "Usage"), (400.0, "5")],
            &[(72.0, "3"), (90.0, "Options"), (400.0, "9")],
            &[(72.0, "4"), (90.0, "Examples"), (400.0, "14")],
        ]);
        assert!(tables.is_empty(), "{tables:?}");
    }
}
