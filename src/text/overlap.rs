//! Where neighbouring chunks of a document overlap. The splitter repeats a chunk's
//! last whole sentences at the start of the next one (`ingest::split`); what reads a
//! document on from one chunk into the next — a whole document's summary leaves, a
//! quote that runs on into the next chunk — reads that overlap once.

/// The fewest bytes an overlap is taken from: a shorter match is a coincidence.
const MIN: usize = 8;

/// Whether a sentence or a word can end or start beside `c`.
fn is_break(c: char) -> bool {
    c.is_whitespace() || matches!(c, '.' | '!' | '?' | ';' | '。' | '！' | '？' | '；')
}

/// Bytes at the start of `next` that repeat the end of `prev` (whitespace at `prev`'s
/// end and `next`'s start aside; `next`'s is counted in): the overlap of neighbouring
/// chunks. It is whole sentences, so it starts after a break in `prev` and ends at
/// one (a space, a full stop, 。), and is at least [`MIN`] bytes; 0 when the texts do
/// not overlap (a page break) or share only a few characters or a word's end.
///
/// A table's chunk after a chunk of the same table repeats that table's head (its
/// title, header and `| --- |` line): the head is its overlap then, so that the rows
/// read on from the rows before them.
pub fn overlap(prev: &str, next: &str) -> usize {
    if let (Some(a), Some(b)) = (super::table_head(prev), super::table_head(next)) {
        if a == b {
            return b.len();
        }
    }
    let prev = prev.trim_end();
    let body = next.trim_start();
    let lead = next.len() - body.len();
    let most = prev.len().min(body.len());
    (MIN..=most)
        .rev()
        .filter(|&k| body.is_char_boundary(k) && prev.is_char_boundary(prev.len() - k))
        .find(|&k| {
            let ends = body[..k].chars().next_back().is_some_and(is_break)
                || body[k..].chars().next().is_none_or(is_break);
            let starts = prev[..prev.len() - k]
                .chars()
                .next_back()
                .is_none_or(is_break);
            ends && starts && prev.ends_with(&body[..k])
        })
        .map_or(0, |k| lead + k)
}

/// What of `next` (the chunk after `prev`'s) is new: `next` from where their
/// [`overlap`] stops, leading whitespace trimmed.
pub fn after_overlap<'t>(prev: &str, next: &'t str) -> &'t str {
    next[overlap(prev, next)..].trim_start()
}

/// Each text's [`overlap`] with the one before it (0 for the first).
pub fn overlaps(texts: &[&str]) -> Vec<usize> {
    (0..texts.len())
        .map(|i| i.checked_sub(1).map_or(0, |p| overlap(texts[p], texts[i])))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tables_head_repeated_is_the_overlap() {
        let head = "2.3 Options — Table 1: Options\n\n| Option | Type |\n| --- | --- |";
        let a = format!("{head}\n| inkcolor | name |\n| blotter | boolean |");
        let b = format!("{head}\n| nibstyle | choice |");
        assert_eq!(overlap(&a, &b), head.len());
        assert_eq!(after_overlap(&a, &b), "| nibstyle | choice |");
        // Without a title, too.
        let plain = "| Key | Value |\n| --- | --- |";
        assert_eq!(
            overlap(
                &format!("{plain}\n| a | 1 |"),
                &format!("{plain}\n| b | 2 |")
            ),
            plain.len()
        );
        // Another table's head, or prose: not an overlap.
        assert_eq!(overlap(&a, &format!("{plain}\n| b | 2 |")), 0);
        assert_eq!(overlap("Prose ends here.", &b), 0);
        assert_eq!(
            super::super::table_head("Just a line.\n\nMore prose."),
            None
        );
        assert_eq!(super::super::table_head("| a | b |\n| c | d |"), None);
    }

    #[test]
    fn whole_sentences_repeated_are_the_overlap() {
        let a = "First sentence here. Second one follows. Third is shared by both.";
        let b = "Third is shared by both. Fourth is new. Fifth ends it.";
        assert_eq!(overlap(a, b), "Third is shared by both.".len());
        assert_eq!(after_overlap(a, b), "Fourth is new. Fifth ends it.");
        assert_eq!(
            after_overlap("A b. Shared end.", "Shared end. New."),
            "New."
        );
        // Whitespace at the seam is not part of the match.
        assert_eq!(
            after_overlap("A b. Shared end.\n", "\nShared end. New."),
            "New."
        );
        // Chinese sentences, no spaces: the overlap ends at 。
        assert_eq!(
            after_overlap("共同的句子。", "共同的句子。新的。"),
            "新的。"
        );
        assert_eq!(
            overlaps(&[a, b, "Unrelated."]),
            [0, "Third is shared by both.".len(), 0]
        );
    }

    #[test]
    fn a_few_shared_characters_or_a_words_end_are_not_an_overlap() {
        assert_eq!(after_overlap("A b.", "Nothing shared."), "Nothing shared.");
        assert_eq!(overlap("One page.", "Next page."), 0);
        assert_eq!(
            overlap("It ends with the word. Done.", "Done. And more text here."),
            0
        );
        let a = "the shared tail of a longword continues";
        let b = "ongword continues and then the next words come";
        assert_eq!(overlap(a, b), 0, "the overlap starts inside a word of a");
        assert_eq!(overlap("", "text"), 0);
        assert_eq!(overlaps(&[]), Vec::<usize>::new());
    }
}
