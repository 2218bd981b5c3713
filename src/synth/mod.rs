//! Response synthesis: LlamaIndex's response modes over the [`crate::llm::Llm`] trait.
//!
//! Given a query and retrieved text chunks ([`Node`]s), a [`Synthesizer`] produces an
//! answer through LLM calls made with a [`Ctx`], which streams [`Event`]s (which step
//! runs, its prompt, its tokens, the final answer) and records every call for the
//! prompt inspector. The seven built-in modes ([`ResponseMode`]) reproduce
//! llama-index-core prompt for prompt (see the parity test); [`synthesize`] is the
//! entry point the engine calls.

pub mod answer_stream;
pub mod blocks;
pub mod modes;
pub mod prompt_helper;
pub mod prompts;
pub mod scripted;
pub mod sentence_splitter;
pub mod splitter;
pub mod summary_tree;
pub mod template;

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::llm::chat::Message;
use crate::llm::{BatchEvent, Cancel, Constraint, GenParams, Llm, StopReason};
use crate::{Error, Result};

pub use answer_stream::AnswerStream;
pub use blocks::{Blocks, Combine, Composed, Pack};
pub use modes::Builtin;
pub use prompt_helper::PromptHelper;
pub use prompts::parse_answer_filter;
pub use scripted::ScriptedLlm;
pub use template::{ChatPart, Template, TemplateKey, Templates, Vars};

/// What every mode answers when there is nothing to answer from.
pub const EMPTY_RESPONSE: &str = "Empty Response";

/// A retrieved text chunk, as synthesis sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Node {
    pub id: String,
    pub text: String,
}

impl Node {
    pub fn new(id: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            text: text.into(),
        }
    }
}

/// A formatted prompt: its text (what a completion model reads, and what the prompt
/// inspector shows) and, for a chat template, its messages (what a chat model reads).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    pub text: String,
    pub messages: Option<Vec<Message>>,
}

impl From<String> for Prompt {
    fn from(text: String) -> Self {
        Self {
            text,
            messages: None,
        }
    }
}

/// LlamaIndex's response modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResponseMode {
    /// First chunk with the QA template, then refine the answer with each next chunk.
    Refine,
    /// Pack the chunks to fill the window, then refine (LlamaIndex's default).
    #[default]
    Compact,
    /// Summarize packed chunks and recurse until one answer is left.
    TreeSummarize,
    /// Truncate all chunks into one prompt.
    SimpleSummarize,
    /// No LLM call: the sources only.
    NoText,
    /// Answer each chunk separately and list the answers.
    Accumulate,
    /// Pack the chunks, then accumulate.
    CompactAccumulate,
}

impl ResponseMode {
    /// All modes, in LlamaIndex's documentation order.
    pub const ALL: [ResponseMode; 7] = [
        ResponseMode::Refine,
        ResponseMode::Compact,
        ResponseMode::TreeSummarize,
        ResponseMode::SimpleSummarize,
        ResponseMode::NoText,
        ResponseMode::Accumulate,
        ResponseMode::CompactAccumulate,
    ];

    /// The snake_case name (`tree_summarize`).
    pub fn name(self) -> &'static str {
        match self {
            ResponseMode::Refine => "refine",
            ResponseMode::Compact => "compact",
            ResponseMode::TreeSummarize => "tree_summarize",
            ResponseMode::SimpleSummarize => "simple_summarize",
            ResponseMode::NoText => "no_text",
            ResponseMode::Accumulate => "accumulate",
            ResponseMode::CompactAccumulate => "compact_accumulate",
        }
    }
}

impl std::fmt::Display for ResponseMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for ResponseMode {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let k = s.trim().to_ascii_lowercase().replace('-', "_");
        ResponseMode::ALL
            .into_iter()
            .find(|m| m.name() == k)
            .ok_or_else(|| {
                let names: Vec<&str> = ResponseMode::ALL.iter().map(|m| m.name()).collect();
                Error::Invalid(format!(
                    "unknown response mode {s:?} (one of: {})",
                    names.join(", ")
                ))
            })
    }
}

/// One LLM call, as the prompt inspector shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LlmCall {
    /// 1-based, in call order.
    pub step: usize,
    pub label: String,
    /// The formatted prompt sent to the model (LlamaIndex's prompt).
    pub prompt: String,
    /// What the model read: the prompt after the model's chat template, when that
    /// differs from `prompt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rendered: Option<String>,
    /// Tokens of `prompt` alone, when `rendered` differs from it (`prompt_tokens`
    /// counts what the model read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_tokens: Option<usize>,
    /// Structured answer filtering's verdict for this step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_satisfied: Option<bool>,
    /// The raw model output.
    pub output: String,
    pub prompt_tokens: usize,
    pub output_tokens: usize,
    pub prompt_secs: f64,
    pub gen_secs: f64,
    /// Wall time of the call.
    pub secs: f64,
    /// What speculative decoding did in this call, when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draft: Option<crate::llm::speculative::DraftStats>,
    /// The output stopped at the token limit (`max_tokens`, or the room the window
    /// left), not where the model ended it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut_off: bool,
}

/// What synthesis streams, in order per step: `Step`, `Token`s, `StepDone`; then one
/// `Answer` at the end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A step (one LLM call) begins. `is_final` marks a step whose output is (part of)
    /// the answer, as far as is known when it starts.
    Step {
        step: usize,
        label: String,
        is_final: bool,
        prompt: String,
    },
    /// Generated text. `is_final` marks answer text: the final tokens, concatenated,
    /// are the answer as it streams (the `Answer` event has the authoritative text).
    Token {
        step: usize,
        text: String,
        is_final: bool,
    },
    /// A step's prompt has been read (of a batch: `Llm::complete_batch`); its
    /// tokens come next.
    Read { step: usize },
    /// A step finished.
    StepDone { call: Box<LlmCall> },
    /// The final answer.
    Answer { text: String },
}

/// The result of synthesis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    pub answer: String,
    /// The nodes the answer was made from, in the order given.
    pub sources: Vec<Node>,
    /// Every LLM call, in order.
    pub calls: Vec<LlmCall>,
    /// Wall time of the whole synthesis.
    pub secs: f64,
}

impl Response {
    /// Tokens generated over all calls.
    pub fn output_tokens(&self) -> usize {
        self.calls.iter().map(|c| c.output_tokens).sum()
    }
    /// Prompt tokens over all calls.
    pub fn prompt_tokens(&self) -> usize {
        self.calls.iter().map(|c| c.prompt_tokens).sum()
    }
}

/// A response mode. Implement it to add your own; run it with [`run`].
pub trait Synthesizer: Send + Sync {
    /// Check templates against the variables before any LLM call.
    fn check(&self, _vars: &Vars) -> Result<()> {
        Ok(())
    }
    /// The answer to `query` from `nodes` (never empty), calling the LLM through `ctx`.
    fn answer(&self, ctx: &mut Ctx<'_>, query: &str, nodes: &[Node]) -> Result<String>;
}

/// What a synthesizer works with: the LLM, the prompt helper, the query-time
/// variables, and the event stream. Every LLM call goes through [`Ctx::call`].
pub struct Ctx<'a> {
    llm: &'a dyn Llm,
    helper: PromptHelper<'a>,
    params: GenParams,
    vars: &'a Vars,
    cancel: &'a Cancel,
    events: &'a mut dyn FnMut(Event) -> Result<bool>,
    calls: Vec<LlmCall>,
    batch: bool,
    /// Steps made before this context (a condensing or reranking call): numbering
    /// goes on from there.
    first_step: usize,
}

/// Structured output of one step of answer filtering.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Filtered {
    pub query_satisfied: bool,
    pub answer: String,
}

impl<'a> Ctx<'a> {
    /// The prompt helper (context window, reserved output, token counting).
    pub fn helper(&self) -> &PromptHelper<'a> {
        &self.helper
    }

    /// The query-time template variables.
    pub fn vars(&self) -> &'a Vars {
        self.vars
    }

    /// Generation parameters of every call.
    pub fn params(&self) -> &GenParams {
        &self.params
    }

    /// Calls made so far.
    pub fn calls(&self) -> &[LlmCall] {
        &self.calls
    }

    /// Send an event; a receiver that wants no more cancels the work.
    pub fn emit(&mut self, ev: Event) -> Result<()> {
        if (self.events)(ev)? {
            Ok(())
        } else {
            self.cancel.cancel();
            Err(Error::Cancelled)
        }
    }

    /// Fill `tmpl` with the query-time variables plus `ctx_vars`.
    pub fn format(&self, tmpl: &Template, ctx_vars: &[(&str, &str)]) -> Prompt {
        let mut vals = self.vars.clone();
        for (k, v) in ctx_vars {
            vals.insert((*k).to_string(), (*v).to_string());
        }
        Prompt {
            text: tmpl.format(&vals),
            messages: tmpl.format_messages(&vals),
        }
    }

    /// The number the next step gets.
    pub fn next_step(&self) -> usize {
        self.first_step + self.calls.len() + 1
    }

    /// One LLM call: announce the step, stream its tokens, record it. Tokens are
    /// marked final when `is_final`; a final call under structured answer filtering
    /// streams the `answer` string inside its JSON as final text, unescaped as it
    /// arrives (when the verdict says the query was satisfied).
    pub fn call(
        &mut self,
        label: impl Into<String>,
        prompt: impl Into<Prompt>,
        is_final: bool,
        constraint: Option<Constraint>,
    ) -> Result<String> {
        self.call_inner(
            label.into(),
            prompt.into(),
            CallOpts {
                is_final,
                constraint,
                ..CallOpts::default()
            },
        )
    }

    /// A final call whose answer text is preceded by `head` (streamed as a final
    /// token right after the step starts), as accumulate's `Response i: `.
    pub fn call_headed(
        &mut self,
        label: impl Into<String>,
        prompt: impl Into<Prompt>,
        head: &str,
    ) -> Result<String> {
        self.call_inner(
            label.into(),
            prompt.into(),
            CallOpts {
                is_final: true,
                head,
                ..CallOpts::default()
            },
        )
    }

    /// A non-final call with its own generation parameters that ends early once
    /// `enough` says the text so far is enough (query generation: enough lines).
    pub fn call_until(
        &mut self,
        label: impl Into<String>,
        prompt: impl Into<Prompt>,
        params: GenParams,
        enough: &mut dyn FnMut(&str) -> bool,
    ) -> Result<String> {
        self.call_inner(
            label.into(),
            prompt.into(),
            CallOpts {
                params: Some(params),
                enough: Some(enough),
                ..CallOpts::default()
            },
        )
    }

    fn call_inner(&mut self, label: String, prompt: Prompt, o: CallOpts<'_, '_>) -> Result<String> {
        self.cancel.check()?;
        let step = self.next_step();
        let is_final = o.is_final;
        self.emit(Event::Step {
            step,
            label: label.clone(),
            is_final,
            prompt: prompt.text.clone(),
        })?;
        if !o.head.is_empty() {
            self.emit(Event::Token {
                step,
                text: o.head.to_string(),
                is_final,
            })?;
        }
        let mut params = o.params.unwrap_or_else(|| self.params.clone());
        params.constraint = o.constraint;
        let token_final = is_final && o.constraint.is_none();
        // The filtered answer's text, streamed from inside its JSON.
        let mut filtered =
            (is_final && o.constraint == Some(Constraint::AnswerFilter)).then(AnswerStream::new);
        let mut enough = o.enough;
        let t0 = Instant::now();
        let llm = self.llm;
        let cancel = self.cancel;
        let events = &mut *self.events;
        let mut stopped = false;
        let mut text = String::new();
        let mut sink = |piece: &str| -> Result<bool> {
            let mut more = events(Event::Token {
                step,
                text: piece.to_string(),
                is_final: token_final,
            })?;
            if let Some(f) = filtered.as_mut() {
                let answer = f.push(piece);
                if more && !answer.is_empty() && f.satisfied() != Some(false) {
                    more = events(Event::Token {
                        step,
                        text: answer,
                        is_final: true,
                    })?;
                }
            }
            if !more {
                stopped = true;
                return Ok(false);
            }
            if let Some(enough) = enough.as_mut() {
                text.push_str(piece);
                if enough(&text) {
                    return Ok(false);
                }
            }
            Ok(true)
        };
        let c = match &prompt.messages {
            Some(m) => llm.chat(m, &params, cancel, &mut sink)?,
            None => llm.complete(&prompt.text, &params, cancel, &mut sink)?,
        };
        if stopped {
            cancel.cancel();
            return Err(Error::Cancelled);
        }
        let rendered = match &prompt.messages {
            Some(m) => llm.render_messages(m)?,
            None => llm.render_text(&prompt.text)?,
        };
        let rendered = (rendered != prompt.text).then_some(rendered);
        let text_tokens = match &rendered {
            Some(_) => Some(llm.count_tokens(&prompt.text)?),
            None => None,
        };
        let query_satisfied = match o.constraint {
            Some(Constraint::AnswerFilter) => {
                parse_answer_filter(&c.text).ok().map(|f| f.query_satisfied)
            }
            None => None,
        };
        let call = LlmCall {
            step,
            label,
            prompt: prompt.text,
            rendered,
            text_tokens,
            query_satisfied,
            output: c.text.clone(),
            prompt_tokens: c.prompt_tokens,
            output_tokens: c.output_tokens,
            prompt_secs: c.prompt_secs,
            gen_secs: c.gen_secs,
            secs: t0.elapsed().as_secs_f64(),
            draft: c.draft.clone(),
            cut_off: c.stop == StopReason::MaxTokens,
        };
        self.keep(call)?;
        Ok(c.text)
    }

    /// Keep a finished call in the record and announce it.
    fn keep(&mut self, call: LlmCall) -> Result<()> {
        self.calls.push(call.clone());
        self.emit(Event::StepDone {
            call: Box::new(call),
        })
    }
}

/// How one call runs (see [`Ctx::call`], [`Ctx::call_headed`], [`Ctx::call_until`]).
#[derive(Default)]
struct CallOpts<'h, 'e> {
    is_final: bool,
    constraint: Option<Constraint>,
    head: &'h str,
    params: Option<GenParams>,
    enough: Option<&'e mut dyn FnMut(&str) -> bool>,
}

impl Ctx<'_> {
    /// Independent, non-final LLM calls (a tree_summarize level): announced in order,
    /// then run as one batch when [`RunOptions::batch`] is set (their tokens then
    /// arrive interleaved, each with its step), else one after another. Recorded in
    /// order either way.
    pub fn call_batch(&mut self, labels: Vec<String>, prompts: Vec<Prompt>) -> Result<Vec<String>> {
        if !self.batch || prompts.len() < 2 || prompts.iter().any(|p| p.messages.is_some()) {
            return labels
                .into_iter()
                .zip(prompts)
                .map(|(label, prompt)| self.call(label, prompt, false, None))
                .collect();
        }
        self.cancel.check()?;
        let first = self.next_step();
        let prompts: Vec<String> = prompts.into_iter().map(|p| p.text).collect();
        for (i, (label, prompt)) in labels.iter().zip(&prompts).enumerate() {
            self.emit(Event::Step {
                step: first + i,
                label: label.clone(),
                is_final: false,
                prompt: prompt.clone(),
            })?;
        }
        let t0 = Instant::now();
        let (llm, cancel, params) = (self.llm, self.cancel, self.params.clone());
        let events = &mut *self.events;
        let mut stopped = false;
        let mut sink = |ev: BatchEvent<'_>| -> Result<bool> {
            let more = events(match ev {
                BatchEvent::Read(i) => Event::Read { step: first + i },
                BatchEvent::Text(i, piece) => Event::Token {
                    step: first + i,
                    text: piece.to_string(),
                    is_final: false,
                },
            })?;
            if !more {
                stopped = true;
                cancel.cancel();
            }
            Ok(more)
        };
        let out = llm.complete_batch(&prompts, &params, cancel, &mut sink);
        if stopped {
            return Err(Error::Cancelled);
        }
        let out = out?;
        let secs = t0.elapsed().as_secs_f64();
        let mut texts = Vec::with_capacity(out.len());
        for (i, ((label, prompt), c)) in labels.into_iter().zip(prompts).zip(out).enumerate() {
            let rendered = self.llm.render_text(&prompt)?;
            let rendered = (rendered != prompt).then_some(rendered);
            let text_tokens = match &rendered {
                Some(_) => Some(self.llm.count_tokens(&prompt)?),
                None => None,
            };
            self.keep(LlmCall {
                step: first + i,
                label,
                prompt,
                rendered,
                text_tokens,
                query_satisfied: None,
                output: c.text.clone(),
                prompt_tokens: c.prompt_tokens,
                output_tokens: c.output_tokens,
                prompt_secs: c.prompt_secs,
                gen_secs: c.gen_secs,
                secs,
                draft: c.draft.clone(),
                cut_off: c.stop == StopReason::MaxTokens,
            })?;
            texts.push(c.text);
        }
        Ok(texts)
    }
}

/// How to run synthesis.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Context window in tokens for packing prompts; `None` takes the model's.
    /// Prompts are packed to fill it, so when the model wraps each prompt (a chat
    /// template making it a user message), pass the model's window less the tokens
    /// of that wrapping (e.g. `count_tokens(render_prompt(""))`), or a packed prompt
    /// plus its output can overflow the real window.
    pub context_window: Option<usize>,
    /// Generation parameters; `max_tokens` is also the output reserve of every prompt.
    pub params: GenParams,
    /// Extra template variables.
    pub vars: Vars,
    /// Run independent calls (a tree_summarize level) as one batch.
    pub batch: bool,
    /// Steps already made for this question (condensing, reranking): this run's
    /// steps are numbered after them.
    pub first_step: usize,
}

/// Run any synthesizer: check it, answer (or "Empty Response" without nodes), and
/// collect sources, calls and timing. Ends with an [`Event::Answer`].
pub fn run(
    synth: &dyn Synthesizer,
    llm: &dyn Llm,
    opts: &RunOptions,
    query: &str,
    nodes: &[Node],
    cancel: &Cancel,
    events: &mut dyn FnMut(Event) -> Result<bool>,
) -> Result<Response> {
    synth.check(&opts.vars)?;
    let t0 = Instant::now();
    let (answer, calls) = with_ctx(llm, opts, cancel, events, |ctx| {
        let answer = if nodes.is_empty() {
            EMPTY_RESPONSE.to_string()
        } else {
            synth.answer(ctx, query, nodes)?
        };
        ctx.emit(Event::Answer {
            text: answer.clone(),
        })?;
        Ok(answer)
    })?;
    Ok(Response {
        answer,
        sources: nodes.to_vec(),
        calls,
        secs: t0.elapsed().as_secs_f64(),
    })
}

/// Run `f` with a [`Ctx`] over `llm` (for LLM steps outside a synthesizer: condensing
/// a follow-up question, reranking); returns its result and the calls it made.
pub fn with_ctx<T>(
    llm: &dyn Llm,
    opts: &RunOptions,
    cancel: &Cancel,
    events: &mut dyn FnMut(Event) -> Result<bool>,
    f: impl FnOnce(&mut Ctx<'_>) -> Result<T>,
) -> Result<(T, Vec<LlmCall>)> {
    let count = |s: &str| llm.count_tokens(s);
    let window = opts.context_window.unwrap_or_else(|| llm.context_window());
    let mut ctx = Ctx {
        llm,
        helper: PromptHelper::new(window, opts.params.max_tokens, &count),
        params: opts.params.clone(),
        vars: &opts.vars,
        cancel,
        events,
        calls: Vec::new(),
        batch: opts.batch,
        first_step: opts.first_step,
    };
    let out = f(&mut ctx)?;
    Ok((out, ctx.calls))
}

/// A synthesis request with a built-in mode.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub mode: ResponseMode,
    pub templates: Templates,
    /// LlamaIndex's structured answer filtering (refine and compact only).
    pub answer_filter: bool,
    pub options: RunOptions,
}

/// The engine's entry point: answer `query` from `nodes` with a built-in mode.
pub fn synthesize(
    llm: &dyn Llm,
    req: &Request,
    query: &str,
    nodes: &[Node],
    cancel: &Cancel,
    events: &mut dyn FnMut(Event) -> Result<bool>,
) -> Result<Response> {
    let synth = Builtin {
        mode: req.mode,
        templates: req.templates.clone(),
        answer_filter: req.answer_filter,
    };
    run(&synth, llm, &req.options, query, nodes, cancel, events)
}
