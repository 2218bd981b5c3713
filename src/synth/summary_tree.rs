//! The leaves of a document's summary tree: its chunks, in order and whole, packed
//! into LlamaIndex's tree_summarize prompt (the summary template) asked
//! LlamaIndex's DocumentSummaryIndex question, so that every chunk reaches exactly
//! one leaf prompt; and whether a document fits one prompt whole. The levels above
//! the leaves are tree_summarize itself ([`super::modes::Builtin`]).

use std::ops::Range;

use super::blocks::RESPONSE_PADDING;
use super::prompt_helper::{PromptHelper, DEFAULT_PADDING};
use super::template::Template;
use crate::Result;

/// LlamaIndex's `DocumentSummaryIndex` summary query (`DEFAULT_SUMMARY_QUERY`): what
/// a leaf is asked, whatever the question, so that leaves can be kept and reused.
pub const SUMMARY_QUERY: &str = "Describe what the provided text is about. Also describe some of the questions that this text can answer. ";

/// A leaf's template: the summary (tree_summarize) template with the summary query.
pub fn leaf_template(summary: &Template) -> Template {
    summary.partial([("query_str", SUMMARY_QUERY)])
}

/// Consecutive texts packed, whole and in order, so that each group joined by blank
/// lines fills `template` at most; a text too long for the prompt alone makes a group
/// of its own (cut to fit by the caller's repack). Every text is in exactly one group.
pub fn pack_in_order(
    helper: &PromptHelper<'_>,
    template: &Template,
    texts: &[&str],
) -> Result<Vec<Range<usize>>> {
    let room = helper.chunk_size(template, 1, DEFAULT_PADDING)?;
    let sep = helper.count("\n\n")?;
    let mut groups = Vec::new();
    let mut start = 0;
    let mut used = 0;
    for (i, t) in texts.iter().enumerate() {
        let n = helper.count(t)?;
        if i > start && used + sep + n > room {
            groups.push(start..i);
            start = i;
            used = 0;
        }
        used += if i > start { sep + n } else { n };
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

    #[test]
    fn every_text_is_in_exactly_one_group_in_order() {
        let count = |s: &str| -> Result<usize> { Ok(s.split_whitespace().count()) };
        let helper = PromptHelper::new(800, 50, &count);
        let t = leaf_template(&Templates::default().summary);
        let texts: Vec<String> = (0..40)
            .map(|i| format!("chunk {i} ").repeat(20 + i % 7))
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let groups = pack_in_order(&helper, &t, &refs).unwrap();
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
    fn the_leaf_asks_the_summary_query() {
        let t = leaf_template(&Templates::default().summary);
        let p = t.format(&[("context_str".to_string(), "X".to_string())].into());
        assert!(p.contains(SUMMARY_QUERY), "{p}");
    }
}
