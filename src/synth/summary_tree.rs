//! The leaves of a document's summary tree: its chunks, in order and whole, packed
//! into LlamaIndex's tree_summarize prompt (the summary template) asked
//! LlamaIndex's DocumentSummaryIndex question, so that every chunk reaches exactly
//! one leaf prompt, the overlap of neighbouring chunks read once; and whether a
//! document fits one prompt whole. The levels above
//! the leaves are tree_summarize itself ([`super::modes::Builtin`]).

use std::ops::Range;

use super::blocks::RESPONSE_PADDING;
use super::prompt_helper::{PromptHelper, DEFAULT_PADDING};
use super::template::Template;
use crate::Result;

/// What a leaf is asked, whatever the question, so that leaves can be kept and
/// reused: the first sentence of LlamaIndex's `DocumentSummaryIndex` summary query
/// (`DEFAULT_SUMMARY_QUERY`). Its second, "Also describe some of the questions that
/// this text can answer.", serves that index's retrieval, not an answer: with it the
/// default 0.5B wrote a list of questions into every leaf (half its tokens, two
/// leaves of a 40-page manual to the 256-token cap), and the answers repeated them.
pub const SUMMARY_QUERY: &str = "Describe what the provided text is about. ";

/// A leaf's template: the summary (tree_summarize) template with the summary query.
pub fn leaf_template(summary: &Template) -> Template {
    summary.partial([("query_str", SUMMARY_QUERY)])
}

/// Consecutive chunk texts as one text, each overlap with the text before it read
/// once (`overlaps`: [`overlaps`](crate::text::overlap::overlaps) of `texts`; the
/// first's is not read): a text goes
/// on after the one before it from where their overlap stops, and texts that do not
/// overlap are joined by a blank line. Every text is in the result whole.
pub fn join_in_order(texts: &[&str], overlaps: &[usize]) -> String {
    let mut out = String::new();
    for (i, (t, &k)) in texts.iter().zip(overlaps).enumerate() {
        if i == 0 {
            out.push_str(t);
            continue;
        }
        match k {
            0 => {
                out.push_str("\n\n");
                out.push_str(t);
            }
            k => out.push_str(&t[k..]),
        }
    }
    out
}

/// Consecutive texts packed, whole and in order, so that each group joined by
/// [`join_in_order`] (`overlaps`: [`overlaps`](crate::text::overlap::overlaps) of `texts`) fills `template` at most;
/// a text too long for the prompt alone makes a group of its own (cut to fit by the
/// caller's repack). Every text is in exactly one group.
pub fn pack_in_order(
    helper: &PromptHelper<'_>,
    template: &Template,
    texts: &[&str],
    overlaps: &[usize],
) -> Result<Vec<Range<usize>>> {
    let room = helper.chunk_size(template, 1, DEFAULT_PADDING)?;
    let sep = helper.count("\n\n")?;
    let mut groups = Vec::new();
    let mut start = 0;
    let mut used = 0;
    for (i, (t, &k)) in texts.iter().zip(overlaps).enumerate() {
        let n = helper.count(t)?;
        // What the text adds after the one before it in the same group.
        let more = match k {
            _ if i == 0 => n,
            0 => sep + n,
            k => helper.count(&t[k..])?,
        };
        if i > start && used + more > room {
            groups.push(start..i);
            start = i;
            used = 0;
        }
        used += if i > start { more } else { n };
    }
    if start < texts.len() {
        groups.push(start..texts.len());
    }
    Ok(groups)
}

/// Whether `texts` joined fit `template` in one prompt beside the answer (the mode's
/// packing padding kept free).
pub fn fits_whole(helper: &PromptHelper<'_>, template: &Template, texts: &[&str]) -> Result<bool> {
    let room = match helper.chunk_size(template, 1, RESPONSE_PADDING) {
        Ok(r) => r,
        Err(crate::Error::ContextOverflow { .. }) => return Ok(false),
        Err(e) => return Err(e),
    };
    Ok(helper.count(&texts.join("\n\n"))? <= room)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::synth::Templates;
    use crate::text::overlap::{overlap, overlaps};

    fn join(texts: &[&str]) -> String {
        join_in_order(texts, &overlaps(texts))
    }

    #[test]
    fn every_text_is_in_exactly_one_group_in_order() {
        let count = |s: &str| -> Result<usize> { Ok(s.split_whitespace().count()) };
        let helper = PromptHelper::new(800, 50, &count);
        let t = leaf_template(&Templates::default().summary);
        let texts: Vec<String> = (0..40)
            .map(|i| format!("chunk {i} ").repeat(20 + i % 7))
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let groups = pack_in_order(&helper, &t, &refs, &overlaps(&refs)).unwrap();
        assert!(groups.len() > 2, "{groups:?}");
        let mut next = 0;
        for g in &groups {
            assert_eq!(g.start, next);
            assert!(g.end > g.start);
            next = g.end;
        }
        assert_eq!(next, texts.len());
        assert!(!fits_whole(&helper, &t, &refs).unwrap());
        assert!(fits_whole(&helper, &t, &refs[..2]).unwrap());
    }

    #[test]
    fn neighbouring_chunks_are_joined_with_their_overlap_read_once() {
        let a = "First sentence here. Second one follows. Third is shared by both.";
        let b = "Third is shared by both. Fourth is new. Fifth ends it.";
        let joined = join(&[a, b]);
        assert_eq!(
            joined,
            "First sentence here. Second one follows. Third is shared by both. Fourth is new. Fifth ends it."
        );
        assert!(joined.contains(a) && joined.contains(b));
        assert_eq!(joined.matches("Third").count(), 1);
        // Chinese sentences, no spaces: the overlap ends at 。
        let a = "第一句话在这里。第二句话也在这里。第三句由两块共有。";
        let b = "第三句由两块共有。第四句是新的。";
        let joined = join(&[a, b]);
        assert_eq!(
            joined,
            "第一句话在这里。第二句话也在这里。第三句由两块共有。第四句是新的。"
        );
        // Texts that do not overlap (a page break) are joined by a blank line, as
        // before (what counts as an overlap: `text::overlap`'s tests).
        assert_eq!(
            join(&["One page.", "Next page."]),
            "One page.\n\nNext page."
        );
        assert_eq!(join(&[]), "");
    }

    #[test]
    fn overlapping_texts_pack_more_into_a_leaf_and_each_is_in_one_group() {
        let count = |s: &str| -> Result<usize> { Ok(s.split_whitespace().count()) };
        let helper = PromptHelper::new(300, 50, &count);
        let t = leaf_template(&Templates::default().summary);
        // Each text repeats the last sentence of the one before it.
        let sentence = |i: usize| format!("Sentence number {i} says something new. ");
        let texts: Vec<String> = (0..60)
            .map(|i| {
                (i * 4..i * 4 + 5)
                    .map(sentence)
                    .collect::<String>()
                    .trim_end()
                    .to_string()
            })
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        for w in refs.windows(2) {
            assert!(overlap(w[0], w[1]) > 0);
        }
        let groups = pack_in_order(&helper, &t, &refs, &overlaps(&refs)).unwrap();
        let mut next = 0;
        for g in &groups {
            assert_eq!(g.start, next);
            next = g.end;
            let joined = join(&refs[g.clone()]);
            // Every text of the group whole, no sentence twice, within the room.
            assert!(refs[g.clone()].iter().all(|r| joined.contains(r)));
            assert_eq!(
                joined.matches("says").count(),
                joined.matches("Sentence").count()
            );
            let room = helper.chunk_size(&t, 1, DEFAULT_PADDING).unwrap();
            assert!(
                count(&joined).unwrap() <= room,
                "{} > {room}",
                count(&joined).unwrap()
            );
        }
        assert_eq!(next, refs.len());
        // Packed the same greedy way but joined plainly, the same texts take more
        // groups.
        let room = helper.chunk_size(&t, 1, DEFAULT_PADDING).unwrap();
        let (mut plain_groups, mut used) = (1, 0);
        for n in refs.iter().map(|r| count(r).unwrap()) {
            if used > 0 && used + n > room {
                (plain_groups, used) = (plain_groups + 1, n);
            } else {
                used += n;
            }
        }
        assert!(
            groups.len() < plain_groups,
            "{} vs {plain_groups}",
            groups.len()
        );
    }

    #[test]
    fn the_leaf_asks_the_summary_query() {
        let t = leaf_template(&Templates::default().summary);
        let p = t.format(&[("context_str".to_string(), "X".to_string())].into());
        assert!(p.contains(SUMMARY_QUERY), "{p}");
    }
}
