//! Dot leaders: the runs of dots that lead a contents or index entry to its page
//! (`Adducts . . . . . . 7`, `Interface....15`, `第一章……3`). Navigation pages are told
//! by them (`retrieve::page_kind`), and a whole document is read with each run
//! shortened to one `…` (`engine::whole`): every word and page number stays, while a
//! model's tokenizer spends a token on every `. ` of a run (a tenth of the tokens of a
//! manual's contents and index).

use std::borrow::Cow;
use std::ops::Range;

/// A character that makes up dot leaders.
pub fn is_leader_char(c: char) -> bool {
    matches!(c, '.' | '·' | '•' | '…' | '⋯' | '．' | '・' | '‥' | '。')
}

/// How many dots `c` stands for in a run (an ellipsis is three).
fn weight(c: char) -> usize {
    if matches!(c, '…' | '⋯') {
        3
    } else {
        1
    }
}

/// The dots a run must have to be leaders: three is an ellipsis (`1, 2, ..., n`).
pub const LEADER_DOTS: usize = 4;

/// The runs of at least [`LEADER_DOTS`] leader dots in `text` (single spaces allowed
/// between the dots), as byte ranges from the first dot to the last, in order.
pub fn runs(text: &str) -> impl Iterator<Item = Range<usize>> + '_ {
    let mut from = 0;
    std::iter::from_fn(move || {
        while let Some((i, c)) = text[from..]
            .char_indices()
            .find(|&(_, c)| is_leader_char(c))
        {
            let start = from + i;
            let (mut dots, mut end) = (weight(c), start + c.len_utf8());
            // Extend over leader characters, and single spaces followed by one.
            loop {
                let mut ahead = text[end..].chars();
                let (d, skip) = match ahead.next() {
                    Some(' ') => (ahead.next(), 1),
                    d => (d, 0),
                };
                match d {
                    Some(d) if is_leader_char(d) => {
                        dots += weight(d);
                        end += skip + d.len_utf8();
                    }
                    _ => break,
                }
            }
            from = end;
            if dots >= LEADER_DOTS {
                return Some(start..end);
            }
        }
        from = text.len();
        None
    })
}

/// `text` with each of its [`runs`] written as one `…`; the text itself when it has
/// none.
pub fn collapse(text: &str) -> Cow<'_, str> {
    let mut out = String::new();
    let mut copied = 0;
    for r in runs(text) {
        out.push_str(&text[copied..r.start]);
        out.push('…');
        copied = r.end;
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leader_runs_become_one_ellipsis() {
        assert_eq!(
            collapse("6.1. Adducts . . . . . . . . . . . . . 7\n6.2. Subscripts . . . . 7"),
            "6.1. Adducts … 7\n6.2. Subscripts … 7"
        );
        assert_eq!(collapse("Interface....15"), "Interface…15");
        assert_eq!(
            collapse("<==> (arrow type) . . . . . 22, 36"),
            "<==> (arrow type) … 22, 36"
        );
        assert_eq!(collapse("第一章 简介……………3"), "第一章 简介…3");
        assert_eq!(collapse("附录 A ．．．．．．103"), "附录 A …103");
        assert_eq!(collapse("Lewis Formulae · · · · 33"), "Lewis Formulae … 33");
        // Two spaces end a run; a run of three is an ellipsis, left alone.
        assert_eq!(collapse("a . .  . . b"), "a . .  . . b");
        assert_eq!(
            collapse("1, 2, ..., n and x . . . y"),
            "1, 2, ..., n and x . . . y"
        );
        // Prose, numbers and section numbers are untouched (and not copied).
        for t in [
            "6.5.2. Flexible Bonds",
            "e. g. 3.14 and v4.17",
            "Ende. Fin.",
            "",
            "…",
        ] {
            assert!(matches!(collapse(t), Cow::Borrowed(s) if s == t), "{t}");
        }
    }
}
