//! Chat prompts: the GGUF's `tokenizer.chat_template` rendered with minijinja, or a
//! fallback chosen from the vocabulary's turn markers when a file has none.

use minijinja::{context, Environment, Error as JinjaError, ErrorKind};

use super::tokenizer::Tokenizer;
use crate::{Error, Result};

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Message {
    pub role: String,
    pub content: String,
}

impl Message {
    /// A message with `role`.
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            role: role.into(),
            content: content.into(),
        }
    }
    /// A message from the user.
    pub fn user(content: impl Into<String>) -> Self {
        Self::new("user", content)
    }
    /// A message from the assistant.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new("assistant", content)
    }
}

/// LlamaIndex's `messages_to_prompt`: what a completion model reads for a chat.
pub fn messages_to_prompt(messages: &[Message]) -> String {
    let mut lines: Vec<String> = messages
        .iter()
        .map(|m| format!("{}: {}", m.role, m.content))
        .collect();
    lines.push("assistant: ".to_string());
    lines.join("\n")
}

/// LlamaIndex's `messages_to_history_str`: a conversation as the condense prompts
/// show it.
pub fn messages_to_history(messages: &[Message]) -> String {
    messages
        .iter()
        .map(|m| format!("{}: {}", m.role, m.content))
        .collect::<Vec<_>>()
        .join("\n")
}

/// How a model wants its chat prompts laid out.
#[derive(Debug, Clone)]
pub struct ChatTemplate {
    source: Option<String>,
    fallback: Fallback,
    bos: String,
    eos: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fallback {
    ChatMl,
    Gemma,
    Llama3,
    Plain,
}

fn raise_exception(msg: String) -> std::result::Result<String, JinjaError> {
    Err(JinjaError::new(ErrorKind::InvalidOperation, msg))
}

impl ChatTemplate {
    /// The template of a model: `source` is `tokenizer.chat_template`, if any.
    pub fn new(source: Option<String>, tok: &Tokenizer) -> Self {
        let has = |t: &str| tok.token_id(t).is_some();
        let fallback = if has("<|im_start|>") && has("<|im_end|>") {
            Fallback::ChatMl
        } else if has("<start_of_turn>") && has("<end_of_turn>") {
            Fallback::Gemma
        } else if has("<|start_header_id|>") && has("<|eot_id|>") {
            Fallback::Llama3
        } else {
            Fallback::Plain
        };
        let text = |id: Option<u32>| {
            id.and_then(|i| tok.token_text(i))
                .unwrap_or_default()
                .to_string()
        };
        Self {
            source: source.filter(|s| !s.trim().is_empty()),
            fallback,
            bos: text(tok.bos()),
            eos: text(tok.eos()),
        }
    }

    /// Whether prompts should be wrapped: the file has a template, or its vocabulary
    /// has the turn markers of a known chat format.
    pub fn is_chat_model(&self) -> bool {
        self.source.is_some() || self.fallback != Fallback::Plain
    }

    /// Whether the model file carries its own template.
    pub fn has_template(&self) -> bool {
        self.source.is_some()
    }

    /// Render `messages` followed by the start of the assistant's turn. The BOS token
    /// text is left out at the start: the tokenizer adds BOS itself when the model wants it.
    pub fn render(&self, messages: &[Message]) -> Result<String> {
        let out = match &self.source {
            Some(src) => self.render_jinja(src, messages)?,
            None => self.render_fallback(messages),
        };
        Ok(match out.strip_prefix(self.bos.as_str()) {
            Some(rest) if !self.bos.is_empty() => rest.to_string(),
            _ => out,
        })
    }

    fn render_jinja(&self, src: &str, messages: &[Message]) -> Result<String> {
        let mut env = Environment::new();
        env.add_function("raise_exception", raise_exception);
        env.set_trim_blocks(false);
        env.add_template("chat", src)
            .map_err(|e| Error::Template(format!("chat template: {e}")))?;
        let tmpl = env
            .get_template("chat")
            .map_err(|e| Error::Template(format!("chat template: {e}")))?;
        tmpl.render(context! {
            messages => messages,
            add_generation_prompt => true,
            bos_token => self.bos,
            eos_token => self.eos,
        })
        .map_err(|e| Error::Template(format!("chat template: {e}")))
    }

    fn render_fallback(&self, messages: &[Message]) -> String {
        let mut s = String::new();
        match self.fallback {
            Fallback::ChatMl => {
                for m in messages {
                    s += &format!("<|im_start|>{}\n{}<|im_end|>\n", m.role, m.content);
                }
                s += "<|im_start|>assistant\n";
            }
            Fallback::Gemma => {
                for m in messages {
                    let role = if m.role == "assistant" {
                        "model"
                    } else {
                        &m.role
                    };
                    s += &format!("<start_of_turn>{role}\n{}<end_of_turn>\n", m.content);
                }
                s += "<start_of_turn>model\n";
            }
            Fallback::Llama3 => {
                for m in messages {
                    s += &format!(
                        "<|start_header_id|>{}<|end_header_id|>\n\n{}<|eot_id|>",
                        m.role, m.content
                    );
                }
                s += "<|start_header_id|>assistant<|end_header_id|>\n\n";
            }
            Fallback::Plain => {
                for m in messages {
                    s += &format!("{}: {}\n", m.role, m.content);
                }
                s += "assistant: ";
            }
        }
        s
    }
}
