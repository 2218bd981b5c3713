//! The local LLM: the [`Llm`] trait the synthesizers call, generation parameters,
//! cancellation, and GGUF model files.
//!
//! The public surface lives here, at the top: loading a GGUF file and its metadata
//! ([`gguf`]), the model behind the trait ([`GgufLlm`] in [`model`]), chat templates
//! ([`chat`]), the tokenizer read from the file ([`tokenizer`]), constrained decoding
//! ([`constrain`]) and sampling. [`remote`] is the other [`Llm`]: an
//! OpenAI-compatible model server. The numeric runtime (forward passes, attention, the
//! KV cache, quantized matrix products) lives below it in [`runtime`], which nothing
//! outside `llm` reaches into. [`arch`] is what both read: the architectures, parsed
//! once from `general.architecture`, and each dense decoder's description (its
//! tensors, optional biases and norms, rope kind, quirks) that the model picks its
//! forward pass by and the runtime's two loaders build from.

pub mod arch;
pub mod calibrate;
pub mod catalog;
pub mod chat;
pub mod choose;
pub mod constrain;
pub mod device;
pub mod gguf;
pub mod machine;
pub mod model;
pub mod remote;
pub mod runtime;
pub mod speculative;
pub mod tokenizer;

pub use crate::cpu::Cancel;
pub use device::{Chosen, DeviceChoice};
pub use model::{GgufLlm, LoadOptions};
pub use remote::{RemoteConfig, RemoteLlm};

use crate::Result;

/// Called with each piece of generated text; return `Ok(false)` to stop early.
pub type TokenSink<'a> = dyn FnMut(&str) -> Result<bool> + 'a;

/// What [`Llm::complete_batch`] reports as it goes, each about one prompt of the
/// batch (its index).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchEvent<'a> {
    /// The prompt has been read: its completion's first token comes next.
    Read(usize),
    /// A piece of the prompt's generated text.
    Text(usize, &'a str),
}

/// Called with what a batch of completions does; return `Ok(false)` to stop the
/// whole batch.
pub type BatchSink<'a> = dyn FnMut(BatchEvent<'_>) -> Result<bool> + 'a;

/// How to generate.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct GenParams {
    /// Most tokens to generate.
    pub max_tokens: usize,
    /// 0 means greedy.
    pub temperature: f64,
    pub top_k: Option<usize>,
    pub top_p: Option<f64>,
    /// 1.0 means none.
    pub repeat_penalty: f32,
    /// How many recent tokens the repeat penalty looks at.
    pub repeat_last_n: usize,
    pub seed: u64,
    /// Generation stops before any of these strings.
    pub stop: Vec<String>,
    /// Constrain the output to a shape, valid by construction.
    pub constraint: Option<Constraint>,
}

/// Output shapes generation can be constrained to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Constraint {
    /// LlamaIndex's structured answer filtering:
    /// `{"query_satisfied": <bool>, "answer": "<string>"}`.
    AnswerFilter,
}

impl Default for GenParams {
    fn default() -> Self {
        Self {
            max_tokens: 256,
            temperature: 0.0,
            top_k: None,
            top_p: None,
            repeat_penalty: 1.0,
            repeat_last_n: 64,
            seed: 299_792_458,
            stop: Vec::new(),
            constraint: None,
        }
    }
}

/// Why generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model emitted an end-of-generation token.
    EndToken,
    /// A stop string was produced.
    StopString,
    /// `max_tokens` was reached.
    MaxTokens,
    /// The sink asked to stop.
    Sink,
}

/// The result of one completion.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Completion {
    pub text: String,
    pub prompt_tokens: usize,
    pub output_tokens: usize,
    pub stop: StopReason,
    /// Seconds spent on the prompt (prefill).
    pub prompt_secs: f64,
    /// Seconds spent generating.
    pub gen_secs: f64,
    /// What speculative decoding did, when it ran.
    pub draft: Option<speculative::DraftStats>,
}

/// A text-completion model.
pub trait Llm: Send + Sync {
    /// Context window in tokens.
    fn context_window(&self) -> usize;
    /// The name answers are signed with, when it is not the settings' model file (a
    /// model server's model).
    fn served_name(&self) -> Option<String> {
        None
    }
    /// Tokens `text` takes in this model's tokenizer.
    fn count_tokens(&self, text: &str) -> Result<usize>;
    /// Complete `prompt`, streaming text pieces to `sink`.
    fn complete(
        &self,
        prompt: &str,
        params: &GenParams,
        cancel: &Cancel,
        sink: &mut TokenSink<'_>,
    ) -> Result<Completion>;

    /// Answer a conversation (`messages`, ending with the user's turn). A completion
    /// model reads them flattened as LlamaIndex's `messages_to_prompt` writes them
    /// (`role: content` lines, then `assistant: `); a chat model lays them out in its
    /// own template.
    fn chat(
        &self,
        messages: &[chat::Message],
        params: &GenParams,
        cancel: &Cancel,
        sink: &mut TokenSink<'_>,
    ) -> Result<Completion> {
        self.complete(&chat::messages_to_prompt(messages), params, cancel, sink)
    }

    /// The text the model reads for completion prompt `prompt` (after its chat
    /// template, when it wraps prompts in one); the prompt inspector shows it.
    fn render_text(&self, prompt: &str) -> Result<String> {
        Ok(prompt.to_string())
    }

    /// The text the model reads for the conversation `messages` (see [`Llm::chat`]).
    fn render_messages(&self, messages: &[chat::Message]) -> Result<String> {
        Ok(chat::messages_to_prompt(messages))
    }

    /// Complete independent prompts. A model may run them together (a local model
    /// reads its weights once per step for all of them); the results must be what
    /// [`Llm::complete`] gives for each. The default runs them one after another.
    fn complete_batch(
        &self,
        prompts: &[String],
        params: &GenParams,
        cancel: &Cancel,
        sink: &mut BatchSink<'_>,
    ) -> Result<Vec<Completion>> {
        complete_each(self, prompts, params, cancel, sink)
    }
}

/// [`Llm::complete_batch`] one prompt after another.
pub fn complete_each<L: Llm + ?Sized>(
    llm: &L,
    prompts: &[String],
    params: &GenParams,
    cancel: &Cancel,
    sink: &mut BatchSink<'_>,
) -> Result<Vec<Completion>> {
    let mut out = Vec::with_capacity(prompts.len());
    for (i, p) in prompts.iter().enumerate() {
        // The prompt is read when its first piece of text comes (or the completion
        // ends without one).
        let mut read = false;
        let c = llm.complete(p, params, cancel, &mut |s: &str| {
            if !std::mem::replace(&mut read, true) && !sink(BatchEvent::Read(i))? {
                return Ok(false);
            }
            sink(BatchEvent::Text(i, s))
        })?;
        if !read {
            sink(BatchEvent::Read(i))?;
        }
        out.push(c);
    }
    Ok(out)
}
