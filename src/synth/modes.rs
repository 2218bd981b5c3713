//! The seven built-in response modes, step for step as llama-index-core runs them.

use super::blocks::{Blocks, Composed, TemplateKey};
use super::{Ctx, Filtered, Node, ResponseMode, Synthesizer, Template, Vars};
use crate::{Error, Result};

/// Refine and compact first pack each chunk with this much room kept for the answer.
pub const RESPONSE_PADDING: usize = 500;

/// Accumulate joins its answers with this.
pub const ACCUMULATE_SEPARATOR: &str = "\n---------------------\n";

/// The instruction structured answer filtering appends to each prompt (LlamaIndex's
/// Pydantic output format for `StructuredRefineResponse`).
pub const ANSWER_FILTER_INSTRUCTION: &str = "\n\nHere's a JSON schema to follow:\n\
{\"description\": \"Used to answer a given query based on the provided context.\\n\\nAlso indicates if the query was satisfied with the provided answer.\", \
\"properties\": {\"query_satisfied\": {\"description\": \"True if there was enough context given to provide an answer that satisfies the query.\", \"title\": \"Query Satisfied\", \"type\": \"boolean\"}, \
\"answer\": {\"description\": \"The answer for the given query, based on the context and not prior knowledge.\", \"title\": \"Answer\", \"type\": \"string\"}}, \
\"required\": [\"query_satisfied\", \"answer\"]}\n\n\
Output a valid JSON object but do not repeat the schema.\n";

/// The templates of the built-in modes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Templates {
    /// Question answering over one context (`{context_str}`, `{query_str}`).
    pub text_qa: Template,
    /// Refining an answer (`{query_str}`, `{existing_answer}`, `{context_msg}`).
    pub refine: Template,
    /// Tree summarize (`{context_str}`, `{query_str}`).
    pub summary: Template,
    /// simple_summarize's template (`{context_str}`, `{query_str}`); `None` uses
    /// `text_qa`, as LlamaIndex's `SimpleSummarize` does (it takes the QA template).
    pub simple: Option<Template>,
}

impl Default for Templates {
    fn default() -> Self {
        Self {
            text_qa: Template::text_qa(),
            refine: Template::refine(),
            summary: Template::tree_summarize(),
            simple: None,
        }
    }
}

impl Templates {
    /// The defaults with a custom QA template, also used as tree_summarize's summary
    /// template (as LlamaIndex users pass it).
    pub fn custom(qa: Template) -> Self {
        Self {
            text_qa: qa.clone(),
            summary: qa,
            ..Self::default()
        }
    }

    /// The template a step names.
    pub fn get(&self, key: TemplateKey) -> &Template {
        match key {
            TemplateKey::Qa => &self.text_qa,
            TemplateKey::Refine => &self.refine,
            TemplateKey::Summary => &self.summary,
            TemplateKey::Simple => self.simple.as_ref().unwrap_or(&self.text_qa),
        }
    }

    /// The name of the template a step uses, for messages (simple_summarize without a
    /// template of its own uses the QA one, and says so).
    pub fn name_of(&self, key: TemplateKey) -> &'static str {
        match key {
            TemplateKey::Simple if self.simple.is_none() => TemplateKey::Qa.name(),
            k => k.name(),
        }
    }
}

/// A built-in mode with its templates.
#[derive(Debug, Clone, Default)]
pub struct Builtin {
    pub mode: ResponseMode,
    pub templates: Templates,
    /// Structured answer filtering (refine and compact).
    pub answer_filter: bool,
}

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

impl Builtin {
    /// The same mode as building blocks (what it runs as).
    pub fn composed(&self) -> Composed {
        Composed {
            blocks: Blocks::of(self.mode),
            templates: self.templates.clone(),
            answer_filter: self.answer_filter,
        }
    }
}

impl Synthesizer for Builtin {
    fn check(&self, vars: &Vars) -> Result<()> {
        self.composed().check(vars)
    }

    fn answer(&self, ctx: &mut Ctx<'_>, query: &str, nodes: &[Node]) -> Result<String> {
        self.composed().answer(ctx, query, nodes)
    }
}
