//! Conversations in SQLite (see [`crate::store::conversations`]): conversations and
//! their messages, two tables.

use rusqlite::{params, Connection, OptionalExtension};

use super::Sqlite;
use crate::store::conversations::{conversation_title, extra_of};
use crate::store::{Conversation, ConversationInfo, Conversations, Message, NewMessage};
use crate::Result;

/// Create the tables if they are not there (idempotent; part of the schema).
pub(super) fn migrate(conn: &Connection) -> Result<()> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS conversations (
             id         INTEGER PRIMARY KEY,
             title      TEXT NOT NULL,
             created_at INTEGER NOT NULL,
             updated_at INTEGER NOT NULL
         );
         CREATE TABLE IF NOT EXISTS messages (
             id              INTEGER PRIMARY KEY,
             conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
             role            TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
             content         TEXT NOT NULL,
             mode            TEXT,
             query           TEXT,
             extra           TEXT,
             created_at      INTEGER NOT NULL
         );
         CREATE INDEX IF NOT EXISTS messages_by_conversation ON messages(conversation_id, id);",
    )?;
    Ok(())
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Start a conversation titled after its first question.
pub(super) fn create(conn: &Connection, first_question: &str) -> Result<i64> {
    let title = conversation_title(first_question);
    let t = now();
    conn.execute(
        "INSERT INTO conversations (title, created_at, updated_at) VALUES (?1, ?2, ?2)",
        params![title, t],
    )?;
    Ok(conn.last_insert_rowid())
}

/// Append a message.
fn add_message(conn: &Connection, m: &NewMessage<'_>) -> Result<i64> {
    let NewMessage {
        conversation,
        role,
        content,
        mode,
        query,
        extra,
    } = *m;
    let t = now();
    let extra = serde_json::Value::Object(extra.clone()).to_string();
    conn.execute(
        "INSERT INTO messages (conversation_id, role, content, mode, query, extra, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![conversation, role, content, mode, query, extra, t],
    )?;
    let id = conn.last_insert_rowid();
    conn.execute(
        "UPDATE conversations SET updated_at = ?2 WHERE id = ?1",
        params![conversation, t],
    )?;
    Ok(id)
}

/// All conversations, most recently updated first.
pub(super) fn list(conn: &Connection) -> Result<Vec<ConversationInfo>> {
    let mut st = conn.prepare(
        "SELECT id, title, created_at, updated_at FROM conversations ORDER BY updated_at DESC, id DESC",
    )?;
    let rows = st.query_map([], |r| {
        Ok(ConversationInfo {
            id: r.get(0)?,
            title: r.get(1)?,
            created_at: r.get(2)?,
            updated_at: r.get(3)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// One conversation with its messages, or `None`.
fn get(conn: &Connection, id: i64) -> Result<Option<Conversation>> {
    let info = conn
        .query_row(
            "SELECT id, title, created_at, updated_at FROM conversations WHERE id = ?1",
            [id],
            |r| {
                Ok(ConversationInfo {
                    id: r.get(0)?,
                    title: r.get(1)?,
                    created_at: r.get(2)?,
                    updated_at: r.get(3)?,
                })
            },
        )
        .optional()?;
    let Some(info) = info else { return Ok(None) };
    let mut st = conn.prepare(
        "SELECT id, role, content, mode, query, extra, created_at FROM messages
         WHERE conversation_id = ?1 ORDER BY id",
    )?;
    let rows = st.query_map([id], |r| {
        let extra = extra_of(r.get(5)?);
        Ok(Message {
            id: r.get(0)?,
            role: r.get(1)?,
            content: r.get(2)?,
            mode: r.get(3)?,
            query: r.get(4)?,
            extra,
            created_at: r.get(6)?,
        })
    })?;
    let messages = rows.collect::<rusqlite::Result<_>>()?;
    Ok(Some(Conversation { info, messages }))
}

/// Delete messages `ids` of conversation `conversation`. Returns how many there were.
fn remove_messages(conn: &Connection, conversation: i64, ids: &[i64]) -> Result<usize> {
    let mut n = 0;
    for id in ids {
        n += conn.execute(
            "DELETE FROM messages WHERE conversation_id = ?1 AND id = ?2",
            params![conversation, id],
        )?;
    }
    if n > 0 {
        conn.execute(
            "UPDATE conversations SET updated_at = ?2 WHERE id = ?1",
            params![conversation, now()],
        )?;
    }
    Ok(n)
}

/// Delete a conversation and its messages. Returns whether it existed.
fn remove(conn: &Connection, id: i64) -> Result<bool> {
    conn.execute("DELETE FROM messages WHERE conversation_id = ?1", [id])?;
    Ok(conn.execute("DELETE FROM conversations WHERE id = ?1", [id])? > 0)
}

impl Conversations for Sqlite {
    fn create_conversation(&self, first_question: &str) -> Result<i64> {
        create(&self.conn, first_question)
    }
    fn add_message(&self, message: &NewMessage<'_>) -> Result<i64> {
        add_message(&self.conn, message)
    }
    fn conversations(&self) -> Result<Vec<ConversationInfo>> {
        list(&self.conn)
    }
    fn conversation(&self, id: i64) -> Result<Option<Conversation>> {
        get(&self.conn, id)
    }
    fn remove_messages(&self, conversation: i64, ids: &[i64]) -> Result<usize> {
        remove_messages(&self.conn, conversation, ids)
    }
    fn remove_conversation(&self, id: i64) -> Result<bool> {
        remove(&self.conn, id)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::store::Role;

    #[test]
    fn conversation_round_trip() {
        let conn = Connection::open_in_memory().unwrap();
        migrate(&conn).unwrap();
        let id = create(&conn, "What is BM25?").unwrap();
        let mut extra = serde_json::Map::new();
        extra.insert("sources".into(), serde_json::json!([{"file": "a.pdf"}]));
        add_message(
            &conn,
            &NewMessage {
                conversation: id,
                role: Role::User,
                content: "What is BM25?",
                mode: None,
                query: None,
                extra: &Default::default(),
            },
        )
        .unwrap();
        add_message(
            &conn,
            &NewMessage {
                conversation: id,
                role: Role::Assistant,
                content: "A ranking function.",
                mode: Some("compact"),
                query: Some("What is BM25?"),
                extra: &extra,
            },
        )
        .unwrap();
        let c = get(&conn, id).unwrap().unwrap();
        assert_eq!(c.info.title, "What is BM25?");
        assert_eq!(c.messages.len(), 2);
        assert_eq!(c.messages[1].extra["sources"][0]["file"], "a.pdf");
        assert_eq!(list(&conn).unwrap().len(), 1);
        assert!(remove(&conn, id).unwrap());
        assert!(get(&conn, id).unwrap().is_none());
        assert!(!remove(&conn, id).unwrap());
    }
}
