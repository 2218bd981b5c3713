//! The seven built-in response modes, step for step as llama-index-core runs them.

use std::collections::VecDeque;

use super::prompt_helper::DEFAULT_PADDING;
use super::{Ctx, Filtered, Node, ResponseMode, Synthesizer, Template, Vars, EMPTY_RESPONSE};
use crate::llm::Constraint;
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
}

impl Default for Templates {
    fn default() -> Self {
        Self {
            text_qa: Template::text_qa(),
            refine: Template::refine(),
            summary: Template::tree_summarize(),
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

/// The template with the longer empty prompt (the first on a tie), as LlamaIndex's
/// `get_biggest_prompt` measures it: in characters.
fn biggest<'t>(a: &'t Template, b: &'t Template) -> &'t Template {
    if b.empty_prompt().chars().count() > a.empty_prompt().chars().count() {
        b
    } else {
        a
    }
}

const QA_VARS: [&str; 2] = ["context_str", "query_str"];
const REFINE_VARS: [&str; 3] = ["query_str", "existing_answer", "context_msg"];

impl Builtin {
    fn filtering(&self) -> bool {
        self.answer_filter && matches!(self.mode, ResponseMode::Refine | ResponseMode::Compact)
    }

    /// Refine's loop over `chunks` (LlamaIndex's `_run_refine_loop`).
    fn refine_loop(&self, ctx: &mut Ctx<'_>, query: &str, chunks: &[String]) -> Result<String> {
        let filter = self.filtering();
        let (qa, refine) = if filter {
            (
                self.templates
                    .text_qa
                    .with_suffix(ANSWER_FILTER_INSTRUCTION),
                self.templates.refine.with_suffix(ANSWER_FILTER_INSTRUCTION),
            )
        } else {
            (
                self.templates.text_qa.clone(),
                self.templates.refine.clone(),
            )
        };
        let constraint = filter.then_some(Constraint::AnswerFilter);
        let max_prompt = biggest(&qa, &refine);
        let mut queue: VecDeque<String> = VecDeque::new();
        for c in chunks {
            queue.extend(ctx.helper().repack(max_prompt, &[c], RESPONSE_PADDING)?);
        }
        let mut response: Option<String> = None;
        let mut done = 0usize;
        while let Some(chunk) = queue.pop_front() {
            let prompt = match &response {
                None => {
                    let t = qa.partial([("query_str", query)]);
                    ctx.format(&t, &[("context_str", &chunk)])
                }
                Some(existing) => {
                    let t = refine.partial([("query_str", query), ("existing_answer", existing)]);
                    let repacked = ctx.helper().repack(&t, &[&chunk], DEFAULT_PADDING)?;
                    if repacked.len() > 1 {
                        // deque.extendleft: the pieces go back in front, reversed.
                        for p in repacked {
                            queue.push_front(p);
                        }
                        continue;
                    }
                    let piece = repacked.into_iter().next().unwrap_or_default();
                    ctx.format(&t, &[("context_msg", &piece)])
                }
            };
            done += 1;
            let label = format!("refine {done} of {}", done + queue.len());
            let out = ctx.call(label, prompt, queue.is_empty(), constraint)?;
            let update = if filter {
                match parse_answer_filter(&out) {
                    Ok(f) if f.query_satisfied => Some(f.answer),
                    // LlamaIndex logs a structured-output error and keeps the answer.
                    _ => None,
                }
            } else {
                Some(out)
            };
            if let Some(u) = update.filter(|u| !u.is_empty()) {
                response = Some(u);
            }
        }
        Ok(response
            .filter(|r| !r.is_empty())
            .unwrap_or_else(|| EMPTY_RESPONSE.to_string()))
    }

    fn compact(&self, ctx: &mut Ctx<'_>, query: &str, texts: &[&str]) -> Result<String> {
        let qa = self.templates.text_qa.partial([("query_str", query)]);
        let refine = self.templates.refine.partial([("query_str", query)]);
        let (qa, refine) = if self.filtering() {
            (
                qa.with_suffix(ANSWER_FILTER_INSTRUCTION),
                refine.with_suffix(ANSWER_FILTER_INSTRUCTION),
            )
        } else {
            (qa, refine)
        };
        let packed = ctx
            .helper()
            .repack(biggest(&qa, &refine), texts, RESPONSE_PADDING)?;
        self.refine_loop(ctx, query, &packed)
    }

    fn tree_summarize(&self, ctx: &mut Ctx<'_>, query: &str, texts: &[&str]) -> Result<String> {
        let t = self.templates.summary.partial([("query_str", query)]);
        let mut chunks: Vec<String> = texts.iter().map(|s| s.to_string()).collect();
        let mut level = 1;
        loop {
            let refs: Vec<&str> = chunks.iter().map(String::as_str).collect();
            let packed = ctx.helper().repack(&t, &refs, DEFAULT_PADDING)?;
            if packed.len() == 1 {
                let prompt = ctx.format(&t, &[("context_str", &packed[0])]);
                let label = if level == 1 {
                    "summarize".to_string()
                } else {
                    format!("summarize level {level}, final answer")
                };
                return ctx.call(label, prompt, true, None);
            }
            let n = packed.len();
            let labels = (1..=n)
                .map(|i| format!("summarize level {level}, {i} of {n}"))
                .collect();
            let prompts = packed
                .iter()
                .map(|c| ctx.format(&t, &[("context_str", c)]))
                .collect::<Vec<_>>();
            chunks = ctx.call_batch(labels, prompts)?;
            level += 1;
        }
    }

    fn simple_summarize(&self, ctx: &mut Ctx<'_>, query: &str, texts: &[&str]) -> Result<String> {
        let t = self.templates.text_qa.partial([("query_str", query)]);
        // LlamaIndex joins the texts, truncates the one text, and formats the
        // *list* of truncated texts into the prompt: its Python repr, kept for parity.
        let joined = texts.join("\n");
        let truncated = ctx.helper().truncate(&t, &[&joined], DEFAULT_PADDING)?;
        let prompt = ctx.format(&t, &[("context_str", &py_repr_list(&truncated))]);
        let out = ctx.call("answer", prompt, true, None)?;
        Ok(if out.is_empty() {
            EMPTY_RESPONSE.to_string()
        } else {
            out
        })
    }

    /// Answer each text (split to fit) separately; stream each answer as it comes.
    fn accumulate(&self, ctx: &mut Ctx<'_>, query: &str, texts: &[&str]) -> Result<String> {
        let t = self.templates.text_qa.partial([("query_str", query)]);
        let mut pieces = Vec::new();
        for text in texts {
            pieces.extend(ctx.helper().repack(&t, &[text], DEFAULT_PADDING)?);
        }
        let n = pieces.len();
        let mut answer = String::new();
        for (i, piece) in pieces.iter().enumerate() {
            let prompt = ctx.format(&t, &[("context_str", piece)]);
            let head = format!(
                "{}Response {}: ",
                if i == 0 { "" } else { ACCUMULATE_SEPARATOR },
                i + 1
            );
            let label = format!("answer {} of {n}", i + 1);
            let out = ctx.call_headed(label, prompt, &head)?;
            answer.push_str(&head);
            if out.is_empty() {
                ctx.emit(super::Event::Token {
                    step: ctx.next_step() - 1,
                    text: EMPTY_RESPONSE.to_string(),
                    is_final: true,
                })?;
                answer.push_str(EMPTY_RESPONSE);
            } else {
                answer.push_str(&out);
            }
        }
        Ok(answer)
    }
}

impl Synthesizer for Builtin {
    fn check(&self, vars: &Vars) -> Result<()> {
        for k in vars.keys() {
            if QA_VARS.contains(&k.as_str()) || REFINE_VARS.contains(&k.as_str()) {
                return Err(Error::Template(format!(
                    "{{{k}}} is filled by the synthesizer; it cannot be given as a variable"
                )));
            }
        }
        let t = &self.templates;
        match self.mode {
            ResponseMode::NoText => Ok(()),
            ResponseMode::TreeSummarize => t.summary.check("summary", &QA_VARS, &QA_VARS, vars),
            ResponseMode::Refine | ResponseMode::Compact => {
                t.text_qa.check("QA", &QA_VARS, &QA_VARS, vars)?;
                t.refine.check("refine", &REFINE_VARS, &REFINE_VARS, vars)
            }
            ResponseMode::SimpleSummarize
            | ResponseMode::Accumulate
            | ResponseMode::CompactAccumulate => t.text_qa.check("QA", &QA_VARS, &QA_VARS, vars),
        }
    }

    fn answer(&self, ctx: &mut Ctx<'_>, query: &str, nodes: &[Node]) -> Result<String> {
        let texts: Vec<&str> = nodes.iter().map(|n| n.text.as_str()).collect();
        match self.mode {
            ResponseMode::NoText => Ok(String::new()),
            ResponseMode::Refine => {
                let chunks: Vec<String> = texts.iter().map(|s| s.to_string()).collect();
                self.refine_loop(ctx, query, &chunks)
            }
            ResponseMode::Compact => self.compact(ctx, query, &texts),
            ResponseMode::TreeSummarize => self.tree_summarize(ctx, query, &texts),
            ResponseMode::SimpleSummarize => self.simple_summarize(ctx, query, &texts),
            ResponseMode::Accumulate => self.accumulate(ctx, query, &texts),
            ResponseMode::CompactAccumulate => {
                let t = self.templates.text_qa.partial([("query_str", query)]);
                let packed = ctx.helper().repack(&t, &texts, DEFAULT_PADDING)?;
                let refs: Vec<&str> = packed.iter().map(String::as_str).collect();
                self.accumulate(ctx, query, &refs)
            }
        }
    }
}
