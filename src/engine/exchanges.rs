//! The exchanges of a conversation, as a person edits them: a question asked again
//! (its new answer kept beside the earlier ones), a question edited and asked anew (it
//! and everything after it replaced), a message deleted, and the whole conversation
//! exported as Markdown with its sources and pages.

use std::fmt::Write as _;

use super::{AskRequest, Engine, Source};
use crate::store::{Backend, Conversation, Message, NewMessage, Role};
use crate::{Error, Result};

/// Where a question goes in its conversation: the conversation, the messages before
/// it (its history), the question as asked, and its message when it is already kept
/// (asked again).
pub(super) struct Placed {
    pub conversation_id: i64,
    pub before: Vec<Message>,
    pub question: String,
    pub question_id: i64,
}

/// Place `req` in its conversation, creating one, keeping the question, or (asked
/// again) finding it; an edited question first removes the one it replaces and every
/// message after it.
pub(super) fn place(conn: &dyn Backend, req: &AskRequest, question: &str) -> Result<Placed> {
    let Some(id) = req.conversation_id else {
        if req.regenerate.is_some() || req.replace_from.is_some() {
            return Err(Error::Invalid(
                "a question can be asked again or edited only in its conversation".into(),
            ));
        }
        let id = conn.create_conversation(question)?;
        return keep(conn, id, Vec::new(), question);
    };
    let conv = conn
        .conversation(id)?
        .ok_or_else(|| Error::NotFound(format!("conversation {id}")))?;
    if let Some(qid) = req.regenerate {
        let at = question_at(&conv, qid)?;
        let last_user = conv.messages.iter().rposition(|m| m.role == Role::User);
        if last_user != Some(at) {
            return Err(Error::Invalid(
                "only the last question of a conversation can be asked again".into(),
            ));
        }
        return Ok(Placed {
            conversation_id: id,
            question: conv.messages[at].content.clone(),
            question_id: qid,
            before: conv.messages[..at].to_vec(),
        });
    }
    if let Some(qid) = req.replace_from {
        let at = question_at(&conv, qid)?;
        let gone: Vec<i64> = conv.messages[at..].iter().map(|m| m.id).collect();
        conn.remove_messages(id, &gone)?;
        return keep(conn, id, conv.messages[..at].to_vec(), question);
    }
    keep(conn, id, conv.messages, question)
}

/// Keep `question` at the end of conversation `id`.
fn keep(conn: &dyn Backend, id: i64, before: Vec<Message>, question: &str) -> Result<Placed> {
    let question_id = conn.add_message(&NewMessage {
        conversation: id,
        role: Role::User,
        content: question,
        mode: None,
        query: None,
        extra: &serde_json::Map::new(),
    })?;
    Ok(Placed {
        conversation_id: id,
        before,
        question: question.to_string(),
        question_id,
    })
}

/// The index of question message `qid` in `conv`.
fn question_at(conv: &Conversation, qid: i64) -> Result<usize> {
    conv.messages
        .iter()
        .position(|m| m.id == qid && m.role == Role::User)
        .ok_or_else(|| Error::NotFound(format!("question {qid} in conversation {}", conv.info.id)))
}

impl Engine {
    /// Delete message `message_id` of conversation `conversation_id`: an answer alone,
    /// or a question with its answers.
    pub fn delete_message(&self, conversation_id: i64, message_id: i64) -> Result<()> {
        let store = self.store();
        let conv = store
            .conversation(conversation_id)?
            .ok_or_else(|| Error::NotFound(format!("conversation {conversation_id}")))?;
        let at = conv
            .messages
            .iter()
            .position(|m| m.id == message_id)
            .ok_or_else(|| Error::NotFound(format!("message {message_id}")))?;
        let mut ids = vec![message_id];
        if conv.messages[at].role == Role::User {
            ids.extend(
                conv.messages[at + 1..]
                    .iter()
                    .take_while(|m| m.role == Role::Assistant)
                    .map(|m| m.id),
            );
        }
        store.remove_messages(conversation_id, &ids)?;
        Ok(())
    }

    /// Conversation `id` as Markdown: each question, each answer as it was written
    /// (Markdown already) with its mode, what it searched for, and its sources with
    /// their files and pages (and the `[N]` each is cited as).
    pub fn export_conversation(&self, id: i64) -> Result<String> {
        let conv = self.conversation(id)?;
        Ok(to_markdown(&conv))
    }
}

/// A conversation as Markdown.
pub fn to_markdown(conv: &Conversation) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# {}\n", one_line(&conv.info.title));
    for m in &conv.messages {
        if m.role == Role::User {
            let _ = writeln!(out, "## Question\n\n{}\n", m.content.trim());
            continue;
        }
        let mode = m.mode.as_deref().unwrap_or("answer");
        let _ = writeln!(out, "### Answer ({mode})\n");
        if let Some(q) = m.extra.get("searched_for").and_then(|v| v.as_str()) {
            let _ = writeln!(out, "*Searched for: {}*\n", one_line(q));
        }
        let _ = writeln!(out, "{}\n", m.content.trim());
        if let Some(status) = m.extra.get("status").and_then(|v| v.as_str()) {
            let _ = writeln!(out, "*({status})*\n");
        }
        let sources: Vec<Source> = m
            .extra
            .get("sources")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default();
        let citations: Vec<super::Citation> = m
            .extra
            .get("citations")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default();
        if sources.is_empty() {
            continue;
        }
        out.push_str("Sources:\n\n");
        for (i, s) in sources.iter().enumerate() {
            let pages = if s.page_start == s.page_end {
                format!("p. {}", s.page_start)
            } else {
                format!("pp. {}–{}", s.page_start, s.page_end)
            };
            let cited: Vec<String> = citations
                .iter()
                .filter(|c| c.chunk_id == s.chunk_id)
                .map(|c| format!("[{}]", c.number))
                .collect();
            let cited = if cited.is_empty() {
                String::new()
            } else {
                format!(", cited as {}", cited.join(" "))
            };
            let excerpt: String = one_line(&s.text).chars().take(200).collect();
            let _ = writeln!(
                out,
                "{}. **{}**, {pages}{cited}: “{}{}”",
                i + 1,
                one_line(&s.file),
                excerpt,
                if s.text.chars().count() > 200 {
                    "…"
                } else {
                    ""
                }
            );
        }
        out.push('\n');
    }
    out.trim_end().to_string() + "\n"
}

/// `s` on one line, whitespace collapsed.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::store::conversations::ConversationInfo;

    fn msg(id: i64, role: &str, content: &str, extra: serde_json::Value) -> Message {
        Message {
            id,
            role: role.parse().unwrap(),
            content: content.into(),
            mode: (role == "assistant").then(|| "compact".into()),
            query: None,
            extra: extra.as_object().cloned().unwrap_or_default(),
            created_at: 0,
        }
    }

    #[test]
    fn a_chinese_conversation_exports_with_its_sources_and_pages() {
        let conv = Conversation {
            info: ConversationInfo {
                id: 7,
                title: "怎样屏蔽一大段内容？".into(),
                created_at: 0,
                updated_at: 0,
            },
            messages: vec![
                msg(1, "user", "怎样屏蔽一大段内容？", serde_json::json!({})),
                msg(
                    2,
                    "assistant",
                    "用 \\iffalse 和 \\fi 包起来 [1]。",
                    serde_json::json!({
                        "searched_for": "屏蔽 一大段 内容",
                        "sources": [{
                            "chunk_id": 42, "doc_id": 1, "file": "ctex-faq.pdf",
                            "page_start": 14, "page_end": 15, "score": 0.5,
                            "text": "38 如何注释掉一大段内容，不做编译？\n用命令 \\iffalse 和 \\fi",
                            "evidence": []
                        }],
                        "citations": [{"number": 1, "chunk_id": 42, "text": "用命令 \\iffalse"}]
                    }),
                ),
            ],
        };
        let md = to_markdown(&conv);
        assert!(md.starts_with("# 怎样屏蔽一大段内容？\n"), "{md}");
        assert!(md.contains("## Question\n\n怎样屏蔽一大段内容？\n"), "{md}");
        assert!(md.contains("*Searched for: 屏蔽 一大段 内容*"), "{md}");
        assert!(md.contains("用 \\iffalse 和 \\fi 包起来 [1]。"), "{md}");
        assert!(
            md.contains("1. **ctex-faq.pdf**, pp. 14–15, cited as [1]: “38 如何注释掉一大段内容，不做编译？ 用命令 \\iffalse 和 \\fi”"),
            "{md}"
        );
    }
}
