//! A table's rows as the units the check and the quotes read. A table chunk holds a
//! Markdown table (`| a | b |` lines, the header over a `| --- |` line); each of its
//! rows is one sentence of the source, never joined to the rows around it, and read
//! with its table's header: "the alias of dotted is semisingle" is borne out by the
//! row `| dotted | semisingle |` under `| name | aliases |`, and "apt-get upgrade is
//! apt full-upgrade", which takes one cell from each of two rows, is not.

/// Whether `line` is a row of a Markdown table (`| a | b |`).
pub fn is_row(line: &str) -> bool {
    let t = line.trim();
    t.len() >= 2 && t.starts_with('|') && t.ends_with('|')
}

/// Whether `line` is the line under a table's header (`| --- | :-: |`).
pub fn is_separator(line: &str) -> bool {
    is_row(line)
        && line.contains('-')
        && line
            .trim()
            .chars()
            .all(|c| matches!(c, '|' | '-' | ':' | ' '))
}

/// Whether the row ending at byte `row_end` of `text` is its table's header (the
/// line under it is the rule).
pub fn is_header(text: &str, row_end: usize) -> bool {
    text.get(row_end..)
        .and_then(|t| t.strip_prefix('\n'))
        .is_some_and(|t| is_separator(t.split('\n').next().unwrap_or("")))
}

/// The lines of `text` with their byte ranges (without the line break).
fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut at = 0;
    text.split('\n').map(move |l| {
        let start = at;
        at += l.len() + 1;
        (start, l)
    })
}

/// The byte range of the header row of the table that holds the row starting at
/// byte `row_start` of `text`, if that row is in a table with a header (the header
/// row itself has none).
pub fn header_of(text: &str, row_start: usize) -> Option<(usize, usize)> {
    let mut header = None;
    let mut prev: Option<(usize, &str)> = None;
    for (start, line) in lines(text) {
        if start > row_start {
            break;
        }
        if !is_row(line) {
            header = None;
        } else if is_separator(line) {
            header = prev
                .filter(|(_, p)| is_row(p) && !is_separator(p))
                .map(|(s, p)| (s, s + p.len()));
        }
        if start <= row_start && row_start < start + line.len().max(1) {
            return header.filter(|&(s, _)| s != start);
        }
        prev = Some((start, line));
    }
    None
}

/// The line that leads into the table holding the row at byte `row_start` of
/// `text` (its caption, "The following keys are defined:"): the last line with words
/// before the table, if any.
pub fn lead_of(text: &str, row_start: usize) -> Option<&str> {
    let mut lead = None;
    let mut last_words = None;
    for (start, line) in lines(text) {
        if start > row_start {
            break;
        }
        if is_row(line) {
            if lead.is_none() {
                lead = Some(last_words);
            }
        } else {
            lead = None;
            if line.chars().any(char::is_alphanumeric) {
                last_words = Some(line.trim());
            }
        }
    }
    lead.flatten()
}

/// A row quoted with its table: the line that leads into the table, the header, its
/// rule and the row, a table of one row (without the lines it does not have).
pub fn with_header(text: &str, row: (usize, usize)) -> String {
    let table = table_of_one(text, row);
    match lead_of(text, row.0) {
        Some(lead) => format!("{lead}\n\n{table}"),
        None => table,
    }
}

/// The header, its rule and the row.
fn table_of_one(text: &str, row: (usize, usize)) -> String {
    match header_of(text, row.0) {
        Some((hs, he)) => {
            let header = &text[hs..he];
            let rule = header
                .trim()
                .trim_matches('|')
                .split('|')
                .map(|_| " --- ")
                .collect::<Vec<_>>()
                .join("|");
            format!("{}\n|{rule}|\n{}", header.trim(), text[row.0..row.1].trim())
        }
        None => text[row.0..row.1].trim().to_string(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const TABLE: &str = "6.5.2 Bonds — Table 1: Bonds.\n\n| name | aliases |\n| --- | --- |\n| single | normal, sb |\n| dotted | semisingle |\n\nAfter the table.";

    #[test]
    fn rows_and_their_header() {
        assert!(is_row("| a | b |") && !is_row("a | b") && !is_row("|"));
        assert!(is_separator("| --- | :-: |") && !is_separator("| a | --- |"));
        let row = TABLE.find("| dotted").unwrap();
        let header = TABLE.find("| name").unwrap();
        assert_eq!(
            header_of(TABLE, row),
            Some((header, header + "| name | aliases |".len()))
        );
        // The header row has none, nor does text outside the table.
        assert_eq!(header_of(TABLE, header), None);
        assert!(is_header(TABLE, header + "| name | aliases |".len()));
        assert!(!is_header(TABLE, row + "| dotted | semisingle |".len()));
        assert_eq!(header_of(TABLE, TABLE.find("After").unwrap()), None);
        let end = row + "| dotted | semisingle |".len();
        assert_eq!(lead_of(TABLE, row), Some("6.5.2 Bonds — Table 1: Bonds."));
        assert_eq!(
            lead_of(TABLE, header),
            Some("6.5.2 Bonds — Table 1: Bonds.")
        );
        assert_eq!(lead_of(TABLE, TABLE.find("After").unwrap()), None);
        assert_eq!(
            with_header(TABLE, (row, end)),
            "6.5.2 Bonds — Table 1: Bonds.\n\n| name | aliases |\n| --- | --- |\n| dotted | semisingle |"
        );
    }

    #[test]
    fn a_table_without_a_header_row_has_none() {
        let t = "| a | b |\n| c | d |";
        assert_eq!(header_of(t, t.find("| c").unwrap()), None);
        assert_eq!(lead_of(t, 10), None);
        assert_eq!(with_header(t, (10, t.len())), "| c | d |");
    }
}
