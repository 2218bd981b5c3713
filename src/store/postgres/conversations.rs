//! Conversations in PostgreSQL (see [`crate::store::conversations`]): conversations
//! and their messages, two tables.

use super::Postgres;
use crate::store::conversations::{conversation_title, extra_of};
use crate::store::{now_ms, Conversation, ConversationInfo, Conversations, Message, NewMessage};
use crate::Result;

impl Conversations for Postgres {
    fn create_conversation(&self, first_question: &str) -> Result<i64> {
        self.run(|c| {
            let t = now_ms();
            Ok(c.query_one(
                "INSERT INTO conversations (title, created_at, updated_at) VALUES ($1, $2, $2)
                 RETURNING id",
                &[&conversation_title(first_question), &t],
            )?
            .get(0))
        })
    }

    fn add_message(&self, m: &NewMessage<'_>) -> Result<i64> {
        self.run(|c| {
            let NewMessage {
                conversation,
                role,
                content,
                mode,
                query,
                extra,
            } = *m;
            let t = now_ms();
            let extra = serde_json::Value::Object(extra.clone()).to_string();
            let mut tx = c.transaction()?;
            let id: i64 = tx
                .query_one(
                    "INSERT INTO messages (conversation_id, role, content, mode, query, extra, created_at)
                     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
                    &[&conversation, &role, &content, &mode, &query, &extra, &t],
                )?
                .get(0);
            tx.execute(
                "UPDATE conversations SET updated_at = $2 WHERE id = $1",
                &[&conversation, &t],
            )?;
            tx.commit()?;
            Ok(id)
        })
    }

    fn conversations(&self) -> Result<Vec<ConversationInfo>> {
        self.run(|c| {
            Ok(c.query(
                "SELECT id, title, created_at, updated_at FROM conversations
                 ORDER BY updated_at DESC, id DESC",
                &[],
            )?
            .iter()
            .map(|r| ConversationInfo {
                id: r.get(0),
                title: r.get(1),
                created_at: r.get(2),
                updated_at: r.get(3),
            })
            .collect())
        })
    }

    fn conversation(&self, id: i64) -> Result<Option<Conversation>> {
        self.run(|c| {
            let Some(r) = c.query_opt(
                "SELECT id, title, created_at, updated_at FROM conversations WHERE id = $1",
                &[&id],
            )?
            else {
                return Ok(None);
            };
            let info = ConversationInfo {
                id: r.get(0),
                title: r.get(1),
                created_at: r.get(2),
                updated_at: r.get(3),
            };
            let messages = c
                .query(
                    "SELECT id, role, content, mode, query, extra, created_at FROM messages
                     WHERE conversation_id = $1 ORDER BY id",
                    &[&id],
                )?
                .iter()
                .map(|r| {
                    let extra: Option<String> = r.get(5);
                    Message {
                        id: r.get(0),
                        role: r.get(1),
                        content: r.get(2),
                        mode: r.get(3),
                        query: r.get(4),
                        extra: extra_of(extra),
                        created_at: r.get(6),
                    }
                })
                .collect();
            Ok(Some(Conversation { info, messages }))
        })
    }

    fn remove_messages(&self, conversation: i64, ids: &[i64]) -> Result<usize> {
        self.run(|c| {
            let n = c.execute(
                "DELETE FROM messages WHERE conversation_id = $1 AND id = ANY($2)",
                &[&conversation, &ids],
            )?;
            if n > 0 {
                c.execute(
                    "UPDATE conversations SET updated_at = $2 WHERE id = $1",
                    &[&conversation, &now_ms()],
                )?;
            }
            Ok(n as usize)
        })
    }

    fn remove_conversation(&self, id: i64) -> Result<bool> {
        self.run(|c| Ok(c.execute("DELETE FROM conversations WHERE id = $1", &[&id])? > 0))
    }
}
