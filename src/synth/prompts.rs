//! LlamaIndex's default prompts, kept apart from the modes that use them (as
//! llama-index-core keeps `default_prompts.py`): the question-answering, refine and
//! tree-summarize templates, structured answer filtering's instruction and the parser
//! of its answer, and Python's `repr`, with which LlamaIndex writes lists into prompts.

use super::Filtered;
use crate::{Error, Result};

/// LlamaIndex's default question-answering template (`DEFAULT_TEXT_QA_PROMPT_TMPL`).
pub const DEFAULT_TEXT_QA: &str = "Context information is below.\n\
---------------------\n\
{context_str}\n\
---------------------\n\
Given the context information and not prior knowledge, answer the query.\n\
Query: {query_str}\n\
Answer: ";

/// LlamaIndex's default refine template (`DEFAULT_REFINE_PROMPT_TMPL`).
pub const DEFAULT_REFINE: &str = "The original query is as follows: {query_str}\n\
We have provided an existing answer: {existing_answer}\n\
We have the opportunity to refine the existing answer (only if needed) with some more context below.\n\
------------\n\
{context_msg}\n\
------------\n\
Given the new context, refine the original answer to better answer the query. \
If the context isn't useful, return the original answer.\n\
Refined Answer: ";

/// LlamaIndex's default tree-summarize template (`DEFAULT_TREE_SUMMARIZE_TMPL`).
pub const DEFAULT_TREE_SUMMARIZE: &str = "Context information from multiple sources is below.\n\
---------------------\n\
{context_str}\n\
---------------------\n\
Given the information from multiple sources and not prior knowledge, answer the query.\n\
Query: {query_str}\n\
Answer: ";

/// The instruction structured answer filtering appends to each prompt (LlamaIndex's
/// Pydantic output format for `StructuredRefineResponse`).
pub const ANSWER_FILTER_INSTRUCTION: &str = "\n\nHere's a JSON schema to follow:\n\
{\"description\": \"Used to answer a given query based on the provided context.\\n\\nAlso indicates if the query was satisfied with the provided answer.\", \
\"properties\": {\"query_satisfied\": {\"description\": \"True if there was enough context given to provide an answer that satisfies the query.\", \"title\": \"Query Satisfied\", \"type\": \"boolean\"}, \
\"answer\": {\"description\": \"The answer for the given query, based on the context and not prior knowledge.\", \"title\": \"Answer\", \"type\": \"string\"}}, \
\"required\": [\"query_satisfied\", \"answer\"]}\n\n\
Output a valid JSON object but do not repeat the schema.\n";

/// Parse a structured answer-filtering output:
/// `{"query_satisfied": bool, "answer": str}`.
pub fn parse_answer_filter(text: &str) -> Result<Filtered> {
    let t = text.trim();
    let start = t.find('{');
    let end = t.rfind('}');
    let json = match (start, end) {
        (Some(s), Some(e)) if s < e => &t[s..=e],
        _ => t,
    };
    serde_json::from_str::<Filtered>(json).map_err(|e| {
        Error::Invalid(format!(
            "the model's structured answer is not valid JSON ({e}): {text}"
        ))
    })
}

/// Python's `repr` of a `str`.
pub fn py_repr_str(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if !py_printable(c) => {
                let n = c as u32;
                if n <= 0xff {
                    out.push_str(&format!("\\x{n:02x}"));
                } else if n <= 0xffff {
                    out.push_str(&format!("\\u{n:04x}"));
                } else {
                    out.push_str(&format!("\\U{n:08x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// Python's `str.isprintable` for one character (control, format and separator
/// characters other than the space are not printable).
fn py_printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    !(c.is_control()
        || matches!(c,
            '\u{a0}' | '\u{ad}' | '\u{1680}' | '\u{2000}'..='\u{200f}' | '\u{2028}'..='\u{202f}'
            | '\u{205f}'..='\u{2064}' | '\u{2066}'..='\u{206f}' | '\u{3000}' | '\u{feff}'
            | '\u{fff9}'..='\u{fffb}' | '\u{e000}'..='\u{f8ff}'))
}

/// Python's `repr` of a list of `str`.
pub fn py_repr_list(items: &[String]) -> String {
    let parts: Vec<String> = items.iter().map(|s| py_repr_str(s)).collect();
    format!("[{}]", parts.join(", "))
}
