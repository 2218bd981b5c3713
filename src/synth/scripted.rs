//! A scripted [`Llm`] for tests and the fixture parity check: its k-th call (from 1)
//! answers `answer k` (or the k-th of a given list of replies), a token is one Unicode
//! code point, and every prompt it receives is recorded.

use std::sync::Mutex;

use crate::llm::{Cancel, Completion, GenParams, Llm, StopReason, TokenSink};
use crate::{Error, Result};

/// A scripted LLM (see the module docs).
#[derive(Debug)]
pub struct ScriptedLlm {
    context_window: usize,
    replies: Option<Vec<String>>,
    prompts: Mutex<Vec<String>>,
    params: Mutex<Vec<GenParams>>,
}

impl ScriptedLlm {
    /// Answers `answer k` to its k-th call.
    pub fn new(context_window: usize) -> Self {
        Self {
            context_window,
            replies: None,
            prompts: Mutex::default(),
            params: Mutex::default(),
        }
    }

    /// Replays `replies` in order; a call beyond them is an error.
    pub fn replaying(context_window: usize, replies: Vec<String>) -> Self {
        Self {
            replies: Some(replies),
            ..Self::new(context_window)
        }
    }

    /// The prompts received so far, in order.
    pub fn prompts(&self) -> Vec<String> {
        self.prompts.lock().map(|p| p.clone()).unwrap_or_default()
    }

    /// The generation parameters of each call so far, in order.
    pub fn params(&self) -> Vec<GenParams> {
        self.params.lock().map(|p| p.clone()).unwrap_or_default()
    }
}

/// `text` in pieces of a word with its leading whitespace, as a tokenizer streams.
fn pieces(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut in_word = false;
    for (i, c) in text.char_indices() {
        if c.is_whitespace() && in_word {
            out.push(&text[start..i]);
            start = i;
            in_word = false;
        } else if !c.is_whitespace() {
            in_word = true;
        }
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

impl Llm for ScriptedLlm {
    fn context_window(&self) -> usize {
        self.context_window
    }

    fn count_tokens(&self, text: &str) -> Result<usize> {
        super::splitter::count_chars(text)
    }

    fn complete(
        &self,
        prompt: &str,
        params: &GenParams,
        cancel: &Cancel,
        sink: &mut TokenSink<'_>,
    ) -> Result<Completion> {
        cancel.check()?;
        let k = {
            let mut p = self
                .prompts
                .lock()
                .map_err(|_| Error::Invalid("scripted LLM poisoned".into()))?;
            p.push(prompt.to_string());
            p.len()
        };
        if let Ok(mut p) = self.params.lock() {
            p.push(params.clone());
        }
        let reply = match &self.replies {
            None => format!("answer {k}"),
            Some(r) => r.get(k - 1).cloned().ok_or_else(|| {
                Error::Invalid(format!(
                    "scripted LLM: call {k} but only {} replies",
                    r.len()
                ))
            })?,
        };
        let mut text = String::new();
        let mut stop = StopReason::EndToken;
        for piece in pieces(&reply) {
            cancel.check()?;
            text.push_str(piece);
            if !sink(piece)? {
                stop = StopReason::Sink;
                break;
            }
        }
        Ok(Completion {
            output_tokens: text.chars().count(),
            text,
            prompt_tokens: prompt.chars().count(),
            stop,
            prompt_secs: 0.0,
            gen_secs: 0.0,
            draft: None,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn answers_in_order_and_streams_words() {
        let llm = ScriptedLlm::new(100);
        let mut got = Vec::new();
        let c = Cancel::new();
        let p = GenParams::default();
        let a = llm
            .complete("x", &p, &c, &mut |s| {
                got.push(s.to_string());
                Ok(true)
            })
            .unwrap();
        assert_eq!(a.text, "answer 1");
        assert_eq!(got, vec!["answer", " 1"]);
        let b = llm.complete("yz", &p, &c, &mut |_| Ok(true)).unwrap();
        assert_eq!((b.text.as_str(), b.prompt_tokens), ("answer 2", 2));
        assert_eq!(llm.prompts(), vec!["x", "yz"]);
    }
}
