//! Prompt templates as LlamaIndex formats them: `{name}` placeholders filled in one
//! pass (a placeholder nobody fills stays as written), partial formatting, and the
//! "empty prompt" used to measure a template's own size.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::prompts::{DEFAULT_REFINE, DEFAULT_TEXT_QA, DEFAULT_TREE_SUMMARIZE};
use crate::llm::chat::{messages_to_prompt, Message};
use crate::{Error, Result};

/// Extra template variables supplied at query time (e.g. `tone_name`).
pub type Vars = BTreeMap<String, String>;

/// A prompt template: text with `{name}` placeholders, some of them possibly already
/// filled (partial formatting).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    text: String,
    /// A chat template (LlamaIndex's `ChatPromptTemplate`): each message's role and
    /// content template, each formatted on its own; `text` is then their flattened
    /// form (`role: content` lines and `assistant: `), what a completion model reads.
    messages: Option<Vec<ChatPart>>,
    partial: Vars,
    /// Appended verbatim after formatting (not a template: braces are literal), e.g.
    /// the JSON-schema instruction of structured answer filtering.
    suffix: String,
}

/// One message of a chat template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatPart {
    pub role: String,
    pub content: String,
    /// Kept as written, never formatted: a message of the conversation, whose braces
    /// (LaTeX's `\ch{H2O}`) are text, not placeholders.
    pub literal: bool,
}

impl ChatPart {
    /// A message whose content is a template.
    pub fn template(role: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            role: role.into(),
            content: content.into(),
            literal: false,
        }
    }
    /// A message kept as written.
    pub fn literal(role: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            literal: true,
            ..Self::template(role, content)
        }
    }
    fn fill(&self, get: &dyn Fn(&str) -> Option<String>) -> Message {
        let content = if self.literal {
            self.content.clone()
        } else {
            format_with(&self.content, get)
        };
        Message::new(self.role.clone(), content)
    }
}

/// Byte ranges `(start, end)` of each `{name}` match, as Python's
/// `re.finditer(r"\{([^{}]+)\}")`: leftmost, non-overlapping.
fn placeholders(text: &str) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'{' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'{' && b[j] != b'}' {
                j += 1;
            }
            if j < b.len() && b[j] == b'}' && j > i + 1 {
                out.push((i, j + 1));
                i = j + 1;
                continue;
            }
        }
        i += 1;
    }
    out
}

/// Replace each `{name}` whose name is in `vals`; others stay as written.
fn format_with(text: &str, vals: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (s, e) in placeholders(text) {
        out.push_str(&text[last..s]);
        match vals(&text[s + 1..e - 1]) {
            Some(v) => out.push_str(&v),
            None => out.push_str(&text[s..e]),
        }
        last = e;
    }
    out.push_str(&text[last..]);
    out
}

impl Template {
    /// A template from its text.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            messages: None,
            partial: Vars::new(),
            suffix: String::new(),
        }
    }

    /// A chat template from its messages.
    pub fn chat(messages: Vec<ChatPart>) -> Self {
        let flat: Vec<Message> = messages
            .iter()
            .map(|m| Message::new(m.role.clone(), m.content.clone()))
            .collect();
        Self {
            text: messages_to_prompt(&flat),
            messages: Some(messages),
            ..Self::new("")
        }
    }

    /// Whether this is a chat template.
    pub fn is_chat(&self) -> bool {
        self.messages.is_some()
    }

    /// Each message filled, for a chat model; `None` for a plain template.
    pub fn format_messages(&self, vals: &Vars) -> Option<Vec<Message>> {
        let msgs = self.messages.as_ref()?;
        let get = |k: &str| vals.get(k).or_else(|| self.partial.get(k)).cloned();
        let mut out: Vec<Message> = msgs.iter().map(|m| m.fill(&get)).collect();
        if let Some(last) = out.last_mut() {
            last.content.push_str(&self.suffix);
        }
        Some(out)
    }

    /// The texts whose placeholders count: each message, or the one text.
    fn parts(&self) -> Vec<&str> {
        match &self.messages {
            Some(m) => m
                .iter()
                .filter(|p| !p.literal)
                .map(|p| p.content.as_str())
                .collect(),
            None => vec![self.text.as_str()],
        }
    }

    /// Fill every part with `get` and join them as the template's kind does.
    fn fill(&self, get: &dyn Fn(&str) -> Option<String>) -> String {
        match &self.messages {
            Some(m) => {
                let flat: Vec<Message> = m.iter().map(|p| p.fill(get)).collect();
                messages_to_prompt(&flat)
            }
            None => format_with(&self.text, get),
        }
    }

    /// LlamaIndex's default text QA template.
    pub fn text_qa() -> Self {
        Self::new(DEFAULT_TEXT_QA)
    }

    /// LlamaIndex's default refine template.
    pub fn refine() -> Self {
        Self::new(DEFAULT_REFINE)
    }

    /// LlamaIndex's default tree-summarize template.
    pub fn tree_summarize() -> Self {
        Self::new(DEFAULT_TREE_SUMMARIZE)
    }

    /// The template text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The variable names the text uses, in order of first use.
    pub fn vars(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for part in self.parts() {
            for (s, e) in placeholders(part) {
                let name = &part[s + 1..e - 1];
                if !out.iter().any(|n| n == name) {
                    out.push(name.to_string());
                }
            }
        }
        out
    }

    /// Whether the text uses `{name}`.
    pub fn uses(&self, name: &str) -> bool {
        self.vars().iter().any(|v| v == name)
    }

    /// A copy with some variables filled in (LlamaIndex's `partial_format`).
    pub fn partial<'a>(&self, vals: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut t = self.clone();
        for (k, v) in vals {
            t.partial.insert(k.to_string(), v.to_string());
        }
        t
    }

    /// A copy with `suffix` appended verbatim after formatting.
    pub fn with_suffix(&self, suffix: impl Into<String>) -> Self {
        let mut t = self.clone();
        t.suffix = suffix.into();
        t
    }

    /// Fill the template: partial values, then `vals` (which win), in one pass.
    pub fn format(&self, vals: &Vars) -> String {
        let mut s = self.fill(&|k| vals.get(k).or_else(|| self.partial.get(k)).cloned());
        s.push_str(&self.suffix);
        s
    }

    /// The template with its unfilled variables empty: what the prompt costs before
    /// any context goes in (LlamaIndex's `get_empty_prompt_txt`).
    pub fn empty_prompt(&self) -> String {
        let mut s = self.fill(&|k| Some(self.partial.get(k).cloned().unwrap_or_default()));
        s.push_str(&self.suffix);
        s
    }

    /// A chat template's messages with their unfilled variables empty (LlamaIndex's
    /// `get_empty_prompt_messages`); `None` for a plain template.
    pub fn empty_messages(&self) -> Option<Vec<Message>> {
        let msgs = self.messages.as_ref()?;
        let get = |k: &str| Some(self.partial.get(k).cloned().unwrap_or_default());
        let mut out: Vec<Message> = msgs.iter().map(|m| m.fill(&get)).collect();
        if let Some(last) = out.last_mut() {
            last.content.push_str(&self.suffix);
        }
        Some(out)
    }

    /// Check that the template has `required` variables and nothing beyond `known`.
    pub fn check(&self, what: &str, required: &[&str], known: &[&str], extra: &Vars) -> Result<()> {
        let vars = self.vars();
        for r in required {
            if !vars.iter().any(|v| v == r) {
                return Err(Error::Template(format!(
                    "the {what} template has no {{{r}}} placeholder"
                )));
            }
        }
        for v in &vars {
            if !known.contains(&v.as_str())
                && !extra.contains_key(v)
                && !self.partial.contains_key(v)
            {
                let mut given: Vec<&str> = known.to_vec();
                given.extend(extra.keys().map(String::as_str));
                return Err(Error::Template(format!(
                    "the {what} template uses {{{v}}} but no value was given for it \
                     (pass it as a variable, e.g. --var {v}=...; known: {})",
                    given.join(", ")
                )));
            }
        }
        Ok(())
    }
}

/// Which of the [`Templates`] a step uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TemplateKey {
    /// `text_qa_template` (`{context_str}`, `{query_str}`).
    Qa,
    /// `refine_template` (`{query_str}`, `{existing_answer}`, `{context_msg}`).
    Refine,
    /// `summary_template` (`{context_str}`, `{query_str}`).
    Summary,
    /// simple_summarize's template (`{context_str}`, `{query_str}`).
    Simple,
}

impl TemplateKey {
    /// The name errors and the UI use.
    pub fn name(self) -> &'static str {
        match self {
            TemplateKey::Qa => "QA",
            TemplateKey::Refine => "refine",
            TemplateKey::Summary => "summary",
            TemplateKey::Simple => "simple",
        }
    }
}

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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn formats_in_one_pass_and_keeps_unknown_placeholders() {
        let t = Template::new("{a} {b} {{a}} {} {a");
        let mut v = Vars::new();
        v.insert("a".into(), "{b}".into());
        assert_eq!(t.format(&v), "{b} {b} {{b}} {} {a");
        assert_eq!(t.vars(), vec!["a", "b"]);
    }

    #[test]
    fn empty_prompt_blanks_unfilled_vars_but_keeps_partials() {
        let t = Template::new("Q: {query_str} C: {context_str} T: {tone}")
            .partial([("query_str", "why")]);
        assert_eq!(t.empty_prompt(), "Q: why C:  T: ");
    }

    #[test]
    fn check_reports_missing_and_unknown_vars() {
        let extra = Vars::new();
        let t = Template::new("{context_str}");
        let e = t.check(
            "QA",
            &["context_str", "query_str"],
            &["context_str", "query_str"],
            &extra,
        );
        assert!(e.unwrap_err().to_string().contains("{query_str}"));
        let t = Template::new("{context_str} {query_str} {tone_name}");
        let e = t.check(
            "QA",
            &["context_str", "query_str"],
            &["context_str", "query_str"],
            &extra,
        );
        assert!(e.unwrap_err().to_string().contains("tone_name"));
        let mut extra = Vars::new();
        extra.insert("tone_name".into(), "x".into());
        t.check(
            "QA",
            &["context_str", "query_str"],
            &["context_str", "query_str"],
            &extra,
        )
        .unwrap();
    }
}
