//! What an answer keeps with its message (the `extra` of an assistant message in the
//! store), typed: the searched question and its variants, the sources, quotes,
//! citations and support check, the LLM calls and stats, and how it ended. The JSON
//! is the one shells and older databases know: the same keys, empty ones left out.

use serde::{Deserialize, Serialize};

use super::{AskStats, Citation, Relevance, RouteView, Source};
use crate::store::Message;
use crate::support::{Span, Support};
use crate::synth::LlmCall;

/// An answer's record.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AnswerRecord {
    /// The question as placed in the conversation.
    pub query: String,
    /// The queries retrieval ran (the question first), when there were variants.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub queries: Vec<String>,
    /// The chat engine's mode (`off`, `condense_question`, …).
    pub chat_mode: String,
    /// The standalone question a follow-up was condensed to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub searched_for: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub citations: Vec<Citation>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The scope's label.
    pub scope: String,
    /// Whole documents read, or the top passages searched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub route: Option<RouteView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relevance: Option<Relevance>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub quotes: Vec<Span>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub support: Option<Support>,
    pub sources: Vec<Source>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stats: Option<AskStats>,
    pub calls: Vec<LlmCall>,
    /// How an answer that did not finish ended; none for a finished answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<AnswerStatus>,
}

impl AnswerRecord {
    /// How a stored answer ended: `None` for a finished one (read from the
    /// `status` key alone, whatever else the record holds).
    pub fn status_of(message: &Message) -> Option<AnswerStatus> {
        let s = message.extra.get("status")?.as_str()?;
        Some(AnswerStatus::from(s.to_string()))
    }

    /// As the store keeps it.
    pub fn to_extra(&self) -> serde_json::Map<String, serde_json::Value> {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::Object(m)) => m,
            _ => serde_json::Map::new(),
        }
    }
}

/// How an unfinished answer ended, kept as text: `stopped`, or `error: …`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum AnswerStatus {
    /// The person stopped it.
    Stopped,
    /// It failed, for this reason.
    Error(String),
}

impl From<AnswerStatus> for String {
    fn from(s: AnswerStatus) -> String {
        match s {
            AnswerStatus::Stopped => "stopped".into(),
            AnswerStatus::Error(e) => format!("error: {e}"),
        }
    }
}

impl From<String> for AnswerStatus {
    fn from(s: String) -> Self {
        match s.as_str() {
            "stopped" => Self::Stopped,
            _ => Self::Error(s.strip_prefix("error: ").unwrap_or(&s).to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_record_keeps_the_keys_it_always_had() {
        let r = AnswerRecord {
            query: "q".into(),
            chat_mode: "off".into(),
            scope: "all documents".into(),
            status: Some(AnswerStatus::Error("model missing".into())),
            ..AnswerRecord::default()
        };
        let m = r.to_extra();
        let keys: Vec<&str> = m.keys().map(String::as_str).collect();
        let mut want = ["calls", "chat_mode", "query", "scope", "sources", "status"];
        want.sort_unstable();
        let mut got = keys.clone();
        got.sort_unstable();
        assert_eq!(got, want);
        assert_eq!(m["status"], "error: model missing");
        let back: AnswerRecord =
            serde_json::from_value(serde_json::Value::Object(m)).unwrap_or_default();
        assert_eq!(back, r);
        assert_eq!(
            AnswerStatus::from("stopped".to_string()),
            AnswerStatus::Stopped
        );
    }
}
