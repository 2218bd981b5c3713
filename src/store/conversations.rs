//! Conversations and their messages, kept in the index database so they survive
//! restarts.

use serde::{Deserialize, Serialize};

use crate::Result;

use super::Role;

/// A conversation in the list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationInfo {
    pub id: i64,
    pub title: String,
    pub created_at: i64,
    pub updated_at: i64,
}

/// One message. `extra` holds what an assistant message showed: sources, generated
/// queries, stats (JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub id: i64,
    pub role: Role,
    pub content: String,
    pub mode: Option<String>,
    pub query: Option<String>,
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
    pub created_at: i64,
}

/// A conversation with its messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Conversation {
    #[serde(flatten)]
    pub info: ConversationInfo,
    pub messages: Vec<Message>,
}

/// A message to append to a conversation.
#[derive(Debug, Clone, Copy)]
pub struct NewMessage<'a> {
    pub conversation: i64,
    pub role: Role,
    pub content: &'a str,
    /// The response mode that answered (answers only).
    pub mode: Option<&'a str>,
    /// The question as it was searched for (answers only).
    pub query: Option<&'a str>,
    /// What else the engine keeps with it (an answer's sources, quotes, support,
    /// stats, …: `engine`'s answer record), as a JSON object.
    pub extra: &'a serde_json::Map<String, serde_json::Value>,
}

/// Conversations and their messages.
pub trait Conversations {
    /// Start a conversation titled after its first question.
    fn create_conversation(&self, first_question: &str) -> Result<i64>;
    /// Append a message.
    fn add_message(&self, message: &NewMessage<'_>) -> Result<i64>;
    /// All conversations, most recently updated first.
    fn conversations(&self) -> Result<Vec<ConversationInfo>>;
    /// One conversation with its messages.
    fn conversation(&self, id: i64) -> Result<Option<Conversation>>;
    /// Delete messages `ids` of a conversation. Returns how many there were.
    fn remove_messages(&self, conversation: i64, ids: &[i64]) -> Result<usize>;
    /// Delete a conversation and its messages. Returns whether it existed.
    fn remove_conversation(&self, id: i64) -> Result<bool>;
}

/// A conversation's title: its first question, cut at 60 characters.
pub(crate) fn conversation_title(first_question: &str) -> String {
    let mut title: String = first_question.trim().chars().take(60).collect();
    if first_question.trim().chars().count() > 60 {
        title.push('…');
    }
    title
}

/// A message's `extra` column as kept (JSON text; anything else reads as empty).
pub(crate) fn extra_of(extra: Option<String>) -> serde_json::Map<String, serde_json::Value> {
    extra
        .and_then(|e| serde_json::from_str::<serde_json::Value>(&e).ok())
        .and_then(|v| match v {
            serde_json::Value::Object(m) => Some(m),
            _ => None,
        })
        .unwrap_or_default()
}
