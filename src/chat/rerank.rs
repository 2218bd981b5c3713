//! LlamaIndex's `LLMRerank` node postprocessor: the LLM reads the sources in batches of
//! `choice_batch_size` as numbered documents (its choice-select prompt), answers lines
//! `Doc: n, Relevance: s`, and the chosen sources are sorted by relevance and cut to
//! `top_n`. What the model answers off-format is skipped line by line, as LlamaIndex
//! does; the caller decides what to do when nothing at all could be read.

use crate::synth::{Ctx, Node, Template, Vars};
use crate::Result;

/// `DEFAULT_CHOICE_SELECT_PROMPT_TMPL`.
pub const CHOICE_SELECT_PROMPT: &str = "A list of documents is shown below. Each document has \
a number next to it along with a summary of the document. A question is also provided. \n\
Respond with the numbers of the documents you should consult to answer the question, in order \
of relevance, as well \nas the relevance score. The relevance score is a number from 1-10 \
based on how relevant you think the document is to the question.\nDo not include any \
documents that are not relevant to the question. \nExample format: \nDocument 1:\n<summary of \
document 1>\n\nDocument 2:\n<summary of document 2>\n\n...\n\nDocument 10:\n<summary of \
document 10>\n\nQuestion: <question>\nAnswer:\nDoc: 9, Relevance: 7\nDoc: 3, Relevance: 4\n\
Doc: 7, Relevance: 3\n\nLet's try this now: \n\n{context_str}\nQuestion: {query_str}\nAnswer:\n";

/// LlamaIndex's default `choice_batch_size`.
pub const BATCH_SIZE: usize = 10;

/// `default_format_node_batch_fn`.
pub fn format_batch(texts: &[&str]) -> String {
    texts
        .iter()
        .enumerate()
        .map(|(i, t)| format!("Document {}:\n{t}", i + 1))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Python's `int()` of a stripped string: an optional sign and decimal digits
/// (underscores between digits allowed).
fn py_int(s: &str) -> Option<i64> {
    let t = s.trim();
    let (neg, digits) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    if digits.is_empty()
        || digits.starts_with('_')
        || digits.ends_with('_')
        || digits.contains("__")
    {
        return None;
    }
    let mut v: i64 = 0;
    for c in digits.chars() {
        if c == '_' {
            continue;
        }
        let d = c.to_digit(10).or_else(|| fullwidth_digit(c))?;
        v = v.checked_mul(10)?.checked_add(d as i64)?;
    }
    Some(if neg { -v } else { v })
}

fn fullwidth_digit(c: char) -> Option<u32> {
    ('０'..='９').contains(&c).then(|| c as u32 - '０' as u32)
}

/// `default_parse_choice_select_answer_fn`: the document numbers and relevances of
/// the lines of `answer` that read `…: n, …: s` (a number above `num_choices` is
/// skipped; a line whose relevance has no digits keeps its number but not a score).
pub fn parse_choice_select(answer: &str, num_choices: usize) -> (Vec<i64>, Vec<f64>) {
    let mut nums = Vec::new();
    let mut rels = Vec::new();
    for line in answer.split('\n') {
        let tokens: Vec<&str> = line.split(',').collect();
        if tokens.len() != 2 {
            continue;
        }
        let Some(num) = tokens[0].split(':').nth(1).and_then(py_int) else {
            continue;
        };
        if num > num_choices as i64 {
            continue;
        }
        nums.push(num);
        let Some(after) = tokens[1].split(':').nth(1) else {
            continue;
        };
        let digits: String = after
            .trim()
            .chars()
            .skip_while(|c| !(c.is_ascii_digit() || fullwidth_digit(*c).is_some()))
            .take_while(|c| c.is_ascii_digit() || fullwidth_digit(*c).is_some())
            .map(|c| {
                char::from_digit(
                    c.to_digit(10).or_else(|| fullwidth_digit(c)).unwrap_or(0),
                    10,
                )
                .unwrap_or('0')
            })
            .collect();
        if let Ok(v) = digits.parse::<f64>() {
            rels.push(v);
        }
    }
    (nums, rels)
}

/// One reranked source: its index in the given nodes and its relevance.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Ranked {
    pub node: usize,
    pub score: f64,
}

/// `LLMRerank._postprocess_nodes`: one LLM call per batch, the choices of all batches
/// sorted by relevance (stable), the first `top_n`. A choice outside its batch (which
/// Python would index from the end, or fail on) is skipped.
pub fn rerank(
    ctx: &mut Ctx<'_>,
    query: &str,
    nodes: &[Node],
    batch_size: usize,
    top_n: usize,
) -> Result<Vec<Ranked>> {
    let batch_size = batch_size.max(1);
    let batches = nodes.len().div_ceil(batch_size);
    let template = Template::new(CHOICE_SELECT_PROMPT);
    let mut all = Vec::new();
    for (b, batch) in nodes.chunks(batch_size).enumerate() {
        let texts: Vec<&str> = batch.iter().map(|n| n.text.as_str()).collect();
        let mut vals = Vars::new();
        vals.insert("context_str".into(), format_batch(&texts));
        vals.insert("query_str".into(), query.to_string());
        let label = if batches == 1 {
            "rerank the sources".to_string()
        } else {
            format!("rerank the sources, {} of {batches}", b + 1)
        };
        let out = ctx.call(label, template.format(&vals), false, None)?;
        let (nums, rels) = parse_choice_select(&out, batch.len());
        let len = batch.len() as i64;
        let chosen: Vec<Option<usize>> = nums
            .iter()
            .map(|&n| {
                let idx = n - 1;
                let idx = if idx < 0 { idx + len } else { idx };
                (0..len).contains(&idx).then_some(idx as usize)
            })
            .collect();
        let scores: Vec<f64> = if rels.is_empty() {
            vec![1.0; chosen.len()]
        } else {
            rels
        };
        for (c, s) in chosen.into_iter().zip(scores) {
            if let Some(i) = c {
                all.push(Ranked {
                    node: b * batch_size + i,
                    score: s,
                });
            }
        }
    }
    all.sort_by(|a, b| {
        b.score
            .partial_cmp(&a.score)
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    all.truncate(top_n);
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_like_llamaindex() {
        let (n, r) = parse_choice_select(
            "Doc: 2, Relevance: 8\nnoise\nDoc: 1, Relevance: 7 (best)",
            3,
        );
        assert_eq!(n, vec![2, 1]);
        assert_eq!(r, vec![8.0, 7.0]);
        // Beyond the batch: skipped. No digits in the relevance: number kept, no score.
        let (n, r) = parse_choice_select("Doc: 9, Relevance: 8\nDoc: 3, Relevance: high", 3);
        assert_eq!(n, vec![3]);
        assert!(r.is_empty());
        let (n, _) = parse_choice_select("The first one.", 3);
        assert!(n.is_empty());
    }
}
