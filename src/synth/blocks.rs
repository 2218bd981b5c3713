//! The building blocks the seven built-in modes are made of, and a mode made of them.
//!
//! Every LlamaIndex response mode is one way to *pack* the retrieved chunks (each on
//! its own, split to fit, or packed together to fill the window), one template for
//! the *first* call over a chunk, and one way to *combine* the calls (refine an answer
//! chunk by chunk, accumulate one answer per chunk, summarize a tree of answers, one
//! call over everything truncated to fit, or no call at all), with the template of the
//! *next* calls. [`Blocks::of`] gives each built-in mode's blocks; [`Composed`] runs
//! any blocks, and the built-in modes run through it, so a mode a person composes in
//! Settings is made of exactly the code the built-in modes use (and each built-in
//! mode, written as blocks, replays its recorded LlamaIndex fixtures).

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::prompt_helper::DEFAULT_PADDING;
use super::prompts::{parse_answer_filter, py_repr_list, ANSWER_FILTER_INSTRUCTION};
use super::template::{TemplateKey, Templates};
use super::{Ctx, Node, ResponseMode, Synthesizer, Template, Vars, EMPTY_RESPONSE};
use crate::llm::Constraint;
use crate::{Error, Result};

/// How the retrieved chunks are laid out before the first calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pack {
    /// Each chunk on its own (split when it does not fit one prompt).
    Separate,
    /// Chunks packed together to fill the window (LlamaIndex's "compact").
    Compact,
}

/// How the calls over the chunks make one answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Combine {
    /// Answer from the first chunk, then refine the answer with each next one.
    Refine,
    /// Answer each chunk separately and list the answers.
    Accumulate,
    /// Answer each (packed) chunk, then summarize the answers, level by level, until
    /// one is left.
    Tree,
    /// One call over all the chunks joined and truncated to fit.
    Single,
    /// No call: the sources only.
    None,
}

/// Refine and compact first pack each chunk with this much room kept for the answer.
pub const RESPONSE_PADDING: usize = 500;

/// Accumulate joins its answers with this.
pub const ACCUMULATE_SEPARATOR: &str = "\n---------------------\n";

/// A response mode as building blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Blocks {
    pub pack: Pack,
    pub combine: Combine,
    /// The template of the first call over each chunk.
    pub first: TemplateKey,
    /// The template of the later calls: refine's refine template, a tree's upper
    /// levels (unused by accumulate, single and none).
    pub next: TemplateKey,
}

/// The variables a first-step template must use (and that the synthesizer fills).
pub const QA_VARS: [&str; 2] = ["context_str", "query_str"];
/// The variables a refine template must use.
pub const REFINE_VARS: [&str; 3] = ["query_str", "existing_answer", "context_msg"];

impl Blocks {
    /// The blocks of a built-in mode.
    pub fn of(mode: ResponseMode) -> Self {
        use Combine as C;
        use Pack as P;
        use TemplateKey as T;
        let b = |pack, combine, first, next| Blocks {
            pack,
            combine,
            first,
            next,
        };
        match mode {
            ResponseMode::Refine => b(P::Separate, C::Refine, T::Qa, T::Refine),
            ResponseMode::Compact => b(P::Compact, C::Refine, T::Qa, T::Refine),
            ResponseMode::TreeSummarize => b(P::Compact, C::Tree, T::Summary, T::Summary),
            ResponseMode::SimpleSummarize => b(P::Separate, C::Single, T::Simple, T::Simple),
            ResponseMode::NoText => b(P::Separate, C::None, T::Qa, T::Qa),
            ResponseMode::Accumulate => b(P::Separate, C::Accumulate, T::Qa, T::Qa),
            ResponseMode::CompactAccumulate => b(P::Compact, C::Accumulate, T::Qa, T::Qa),
        }
    }

    /// Whether the blocks fit together: a first step answers from a context (so not
    /// the refine template), refining needs the refine template next, a tree's upper
    /// levels summarize a context.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: &str| Err(Error::Invalid(m.to_string()));
        if self.combine == Combine::None {
            return Ok(());
        }
        if self.first == TemplateKey::Refine {
            return bad("the first step answers from a context: use the QA, summary or simple template, not the refine template");
        }
        match self.combine {
            Combine::Refine if self.next != TemplateKey::Refine => {
                bad("refining needs the refine template for the later steps")
            }
            Combine::Tree if self.next == TemplateKey::Refine => bad(
                "a tree's upper levels summarize a context: use the QA, summary or simple template",
            ),
            _ => Ok(()),
        }
    }

    /// One line saying what the blocks do, for a mode list.
    pub fn describe(&self) -> String {
        let packed = match self.pack {
            Pack::Separate => "each chunk on its own",
            Pack::Compact => "chunks packed to fill the window",
        };
        let first = self.first.name();
        let next = self.next.name();
        match self.combine {
            Combine::None => "No LLM call: the sources only.".to_string(),
            Combine::Single => {
                format!("One call with the {first} template over all chunks, truncated to fit.")
            }
            Combine::Refine => format!(
                "Answer with the {first} template, then refine with the {next} template; {packed}."
            ),
            Combine::Accumulate => format!(
                "One answer per chunk with the {first} template, listed; {packed}."
            ),
            Combine::Tree => format!(
                "Answer with the {first} template, then summarize the answers with the {next} template until one is left; {packed}."
            ),
        }
    }

    /// The built-in mode these blocks are, if any.
    pub fn builtin(&self) -> Option<ResponseMode> {
        ResponseMode::ALL.into_iter().find(|m| {
            let b = Blocks::of(*m);
            match b.combine {
                Combine::None => self.combine == Combine::None,
                Combine::Single => self.combine == Combine::Single && self.first == b.first,
                _ => b == *self,
            }
        })
    }
}

/// A synthesizer made of [`Blocks`] over [`Templates`].
#[derive(Debug, Clone)]
pub struct Composed {
    pub blocks: Blocks,
    pub templates: Templates,
    /// Structured answer filtering (when combining by refining).
    pub answer_filter: bool,
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

impl Composed {
    fn template(&self, key: TemplateKey) -> &Template {
        self.templates.get(key)
    }

    fn filtering(&self) -> bool {
        self.answer_filter && self.blocks.combine == Combine::Refine
    }

    /// Refine's loop over `chunks` (LlamaIndex's `_run_refine_loop`).
    fn refine_loop(&self, ctx: &mut Ctx<'_>, query: &str, chunks: &[String]) -> Result<String> {
        let filter = self.filtering();
        let first = self.template(self.blocks.first);
        let next = self.template(self.blocks.next);
        let (qa, refine) = if filter {
            (
                first.with_suffix(ANSWER_FILTER_INSTRUCTION),
                next.with_suffix(ANSWER_FILTER_INSTRUCTION),
            )
        } else {
            (first.clone(), next.clone())
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

    /// Compact-and-refine: pack against the bigger of the two templates (with the
    /// filter's instruction when filtering), then refine.
    fn compact_refine(&self, ctx: &mut Ctx<'_>, query: &str, texts: &[&str]) -> Result<String> {
        let qa = self
            .template(self.blocks.first)
            .partial([("query_str", query)]);
        let refine = self
            .template(self.blocks.next)
            .partial([("query_str", query)]);
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

    /// Summarize level by level until one answer is left: level 1 with the first
    /// template, the levels above with the next one.
    fn tree(&self, ctx: &mut Ctx<'_>, query: &str, texts: &[&str]) -> Result<String> {
        let first = self
            .template(self.blocks.first)
            .partial([("query_str", query)]);
        let next = self
            .template(self.blocks.next)
            .partial([("query_str", query)]);
        let mut chunks: Vec<String> = texts.iter().map(|s| s.to_string()).collect();
        let mut level = 1;
        loop {
            let t = if level == 1 { &first } else { &next };
            let packed = if level == 1 && self.blocks.pack == Pack::Separate {
                let mut pieces = Vec::new();
                for c in &chunks {
                    pieces.extend(ctx.helper().repack(t, &[c], DEFAULT_PADDING)?);
                }
                pieces
            } else {
                let refs: Vec<&str> = chunks.iter().map(String::as_str).collect();
                ctx.helper().repack(t, &refs, DEFAULT_PADDING)?
            };
            if packed.len() == 1 {
                let prompt = ctx.format(t, &[("context_str", &packed[0])]);
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
                .map(|c| ctx.format(t, &[("context_str", c)]))
                .collect::<Vec<_>>();
            chunks = ctx.call_batch(labels, prompts)?;
            level += 1;
        }
    }

    /// One call over all texts, joined and truncated (LlamaIndex's SimpleSummarize).
    fn single(&self, ctx: &mut Ctx<'_>, query: &str, texts: &[&str]) -> Result<String> {
        let t = self
            .template(self.blocks.first)
            .partial([("query_str", query)]);
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
        let t = self
            .template(self.blocks.first)
            .partial([("query_str", query)]);
        let packed;
        let texts = if self.blocks.pack == Pack::Compact {
            packed = ctx.helper().repack(&t, texts, DEFAULT_PADDING)?;
            packed.iter().map(String::as_str).collect::<Vec<_>>()
        } else {
            texts.to_vec()
        };
        let mut pieces = Vec::new();
        for text in &texts {
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

impl Synthesizer for Composed {
    fn check(&self, vars: &Vars) -> Result<()> {
        self.blocks.validate()?;
        for k in vars.keys() {
            if QA_VARS.contains(&k.as_str()) || REFINE_VARS.contains(&k.as_str()) {
                return Err(Error::Template(format!(
                    "{{{k}}} is filled by the synthesizer; it cannot be given as a variable"
                )));
            }
        }
        let b = self.blocks;
        let t = &self.templates;
        let qa_shaped =
            |key: TemplateKey| t.get(key).check(t.name_of(key), &QA_VARS, &QA_VARS, vars);
        match b.combine {
            Combine::None => Ok(()),
            Combine::Single | Combine::Accumulate => qa_shaped(b.first),
            Combine::Tree => {
                qa_shaped(b.first)?;
                qa_shaped(b.next)
            }
            Combine::Refine => {
                qa_shaped(b.first)?;
                t.get(b.next)
                    .check(t.name_of(b.next), &REFINE_VARS, &REFINE_VARS, vars)
            }
        }
    }

    fn answer(&self, ctx: &mut Ctx<'_>, query: &str, nodes: &[Node]) -> Result<String> {
        let texts: Vec<&str> = nodes.iter().map(|n| n.text.as_str()).collect();
        match (self.blocks.combine, self.blocks.pack) {
            (Combine::None, _) => Ok(String::new()),
            (Combine::Refine, Pack::Separate) => {
                let chunks: Vec<String> = texts.iter().map(|s| s.to_string()).collect();
                self.refine_loop(ctx, query, &chunks)
            }
            (Combine::Refine, Pack::Compact) => self.compact_refine(ctx, query, &texts),
            (Combine::Tree, _) => self.tree(ctx, query, &texts),
            (Combine::Single, _) => self.single(ctx, query, &texts),
            (Combine::Accumulate, _) => self.accumulate(ctx, query, &texts),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_mode_is_its_own_blocks() {
        for m in ResponseMode::ALL {
            let b = Blocks::of(m);
            b.validate().unwrap();
            assert_eq!(b.builtin(), Some(m), "{m}");
            assert!(!b.describe().is_empty());
        }
    }

    #[test]
    fn blocks_that_do_not_fit_are_refused() {
        let mut b = Blocks::of(ResponseMode::Compact);
        b.next = TemplateKey::Qa;
        assert!(b
            .validate()
            .unwrap_err()
            .to_string()
            .contains("refine template"));
        b = Blocks::of(ResponseMode::Accumulate);
        b.first = TemplateKey::Refine;
        assert!(b.validate().unwrap_err().to_string().contains("first step"));
        b = Blocks::of(ResponseMode::TreeSummarize);
        b.next = TemplateKey::Refine;
        assert!(b.validate().is_err());
        // A mode no built-in one is: a tree whose upper levels use the QA template.
        b.next = TemplateKey::Qa;
        b.validate().unwrap();
        assert_eq!(b.builtin(), None);
    }

    #[test]
    fn blocks_read_as_json() {
        let b: Blocks = serde_json::from_str(
            r#"{"pack":"compact","combine":"refine","first":"qa","next":"refine"}"#,
        )
        .unwrap();
        assert_eq!(b, Blocks::of(ResponseMode::Compact));
    }
}
