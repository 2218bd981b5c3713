//! The indexing queue in SQLite (see [`crate::store::queue`]): one table. A running
//! row names the process that took it (`owner`: its pid and start time), so that
//! opening the index requeues exactly the rows of processes that are gone, whatever
//! else is running (see [`crate::store::process`]).

use rusqlite::{params, Connection, OptionalExtension};

use super::Sqlite;
use crate::store::process;
use crate::store::{Queue, QueueRow, QueueState};
use crate::Result;

/// Migration 2: the queue table and the pages' OCR mark.
pub(super) const SCHEMA: &str = "CREATE TABLE queue (
         id        INTEGER PRIMARY KEY AUTOINCREMENT,
         path      TEXT NOT NULL,
         bytes     INTEGER NOT NULL DEFAULT 0,
         state     TEXT NOT NULL DEFAULT 'queued'
                   CHECK (state IN ('queued', 'running', 'done', 'failed', 'cancelled')),
         progress  REAL NOT NULL DEFAULT 0,
         eta_secs  REAL,
         error     TEXT,
         doc_id    INTEGER,
         added_at  INTEGER NOT NULL,
         started_at INTEGER,
         finished_at INTEGER
     );
     CREATE INDEX queue_by_state ON queue(state, id);
     ALTER TABLE pages ADD COLUMN ocr INTEGER NOT NULL DEFAULT 0;";

/// Migration 6: the process that took a running row.
pub(super) const OWNER: &str = "ALTER TABLE queue ADD COLUMN owner TEXT;";

fn now_ms() -> i64 {
    crate::store::now_ms()
}

/// Add `files` (path, size) to the queue; a path already waiting or running is not
/// added twice. Finished rows of earlier batches are cleared first when nothing is
/// waiting. Returns the ids of the rows for `files`, in order.
fn enqueue(conn: &mut Connection, files: &[(String, u64)]) -> Result<Vec<i64>> {
    let tx = conn.transaction()?;
    let waiting: i64 = tx.query_row(
        "SELECT count(*) FROM queue WHERE state IN ('queued', 'running')",
        [],
        |r| r.get(0),
    )?;
    if waiting == 0 {
        tx.execute("DELETE FROM queue", [])?;
    }
    let mut ids = Vec::with_capacity(files.len());
    for (path, bytes) in files {
        let here: Option<i64> = tx
            .query_row(
                "SELECT id FROM queue WHERE path = ?1 AND state IN ('queued', 'running')",
                [path],
                |r| r.get(0),
            )
            .optional()?;
        let id = match here {
            Some(id) => id,
            None => {
                tx.execute(
                    "INSERT INTO queue (path, bytes, added_at) VALUES (?1, ?2, ?3)",
                    params![path, *bytes as i64, now_ms()],
                )?;
                tx.last_insert_rowid()
            }
        };
        ids.push(id);
    }
    tx.commit()?;
    Ok(ids)
}

/// Take the oldest waiting row: it becomes `running`, this process's. `None` when
/// nothing waits.
fn claim(conn: &Connection) -> Result<Option<QueueRow>> {
    let id: Option<i64> = conn
        .query_row(
            "SELECT id FROM queue WHERE state = 'queued' ORDER BY id LIMIT 1",
            [],
            |r| r.get(0),
        )
        .optional()?;
    let Some(id) = id else { return Ok(None) };
    conn.execute(
        "UPDATE queue SET state = 'running', progress = 0, eta_secs = NULL, started_at = ?2,
                          owner = ?3
         WHERE id = ?1",
        params![id, now_ms(), process::this()],
    )?;
    get(conn, id)
}

/// Rows waiting (`queued`), not counting running ones.
fn waiting(conn: &Connection) -> Result<usize> {
    let n: i64 = conn.query_row(
        "SELECT count(*) FROM queue WHERE state = 'queued'",
        [],
        |r| r.get(0),
    )?;
    Ok(n as usize)
}

/// One row.
fn get(conn: &Connection, id: i64) -> Result<Option<QueueRow>> {
    Ok(conn
        .query_row(&format!("{SELECT} WHERE id = ?1"), [id], row)
        .optional()?)
}

const SELECT: &str = "SELECT id, path, bytes, state, progress, eta_secs, error, doc_id,
                             started_at, finished_at FROM queue";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<QueueRow> {
    Ok(QueueRow {
        id: r.get(0)?,
        path: r.get(1)?,
        bytes: r.get::<_, i64>(2)?.max(0) as u64,
        state: r.get(3)?,
        progress: r.get(4)?,
        eta_secs: r.get(5)?,
        error: r.get(6)?,
        doc_id: r.get(7)?,
        started_at: r.get(8)?,
        finished_at: r.get(9)?,
    })
}

/// The whole queue, oldest first.
fn list(conn: &Connection) -> Result<Vec<QueueRow>> {
    let mut st = conn.prepare(&format!("{SELECT} ORDER BY id"))?;
    let rows = st.query_map([], row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Progress of a running row.
fn progress(conn: &Connection, id: i64, fraction: f64, eta_secs: Option<f64>) -> Result<()> {
    conn.execute(
        "UPDATE queue SET progress = ?2, eta_secs = ?3 WHERE id = ?1 AND state = 'running'",
        params![id, fraction.clamp(0.0, 1.0), eta_secs],
    )?;
    Ok(())
}

/// A row is finished: `done` (with its document), `failed` (with the reason).
/// A row the user cancelled meanwhile stays cancelled.
fn finish(conn: &Connection, id: i64, doc_id: Option<i64>, error: Option<&str>) -> Result<()> {
    let state = if error.is_some() {
        QueueState::Failed
    } else {
        QueueState::Done
    };
    conn.execute(
        "UPDATE queue SET state = ?2, doc_id = ?3, error = ?4, progress = 1, eta_secs = NULL,
                          finished_at = ?5
         WHERE id = ?1 AND state != 'cancelled'",
        params![id, state, doc_id, error, now_ms()],
    )?;
    Ok(())
}

/// A running row whose work was interrupted (not by the user) waits again.
fn requeue(conn: &Connection, id: i64) -> Result<()> {
    conn.execute(
        "UPDATE queue SET state = 'queued', progress = 0, eta_secs = NULL, started_at = NULL,
                          owner = NULL
         WHERE id = ?1 AND state = 'running'",
        [id],
    )?;
    Ok(())
}

/// Rows left `running` by a process that is gone (or by no known one: rows from
/// before owners were kept) wait again; a live process's rows are its own. Returns
/// how many.
fn requeue_interrupted(conn: &Connection) -> Result<usize> {
    let tx = conn.unchecked_transaction()?;
    let running: Vec<(i64, Option<String>)> = {
        let mut st = tx.prepare("SELECT id, owner FROM queue WHERE state = 'running'")?;
        let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    let mut n = 0;
    for (id, owner) in running {
        if owner.as_deref().is_some_and(process::alive) {
            continue;
        }
        n += tx.execute(
            "UPDATE queue SET state = 'queued', progress = 0, eta_secs = NULL,
                              started_at = NULL, owner = NULL
             WHERE id = ?1",
            [id],
        )?;
    }
    tx.commit()?;
    Ok(n)
}

/// Cancel one row (`Some(id)`) or every waiting and running row (`None`). Returns the
/// ids that were cancelled.
fn cancel(conn: &Connection, id: Option<i64>) -> Result<Vec<i64>> {
    let mut st = conn.prepare(
        "UPDATE queue SET state = 'cancelled', eta_secs = NULL, finished_at = ?2
         WHERE (?1 IS NULL OR id = ?1) AND state IN ('queued', 'running') RETURNING id",
    )?;
    let ids = st.query_map(params![id, now_ms()], |r| r.get(0))?;
    Ok(ids.collect::<rusqlite::Result<_>>()?)
}

/// Whether the row is still wanted (not cancelled, not gone).
fn wanted(conn: &Connection, id: i64) -> Result<bool> {
    let state: Option<String> = conn
        .query_row("SELECT state FROM queue WHERE id = ?1", [id], |r| r.get(0))
        .optional()?;
    Ok(state.is_some_and(|s| s != "cancelled"))
}

impl Queue for Sqlite {
    fn enqueue(&mut self, files: &[(String, u64)]) -> Result<Vec<i64>> {
        enqueue(&mut self.conn, files)
    }
    fn claim(&self) -> Result<Option<QueueRow>> {
        claim(&self.conn)
    }
    fn waiting(&self) -> Result<usize> {
        waiting(&self.conn)
    }
    fn queue_row(&self, id: i64) -> Result<Option<QueueRow>> {
        get(&self.conn, id)
    }
    fn queue(&self) -> Result<Vec<QueueRow>> {
        list(&self.conn)
    }
    fn progress(&self, id: i64, fraction: f64, eta_secs: Option<f64>) -> Result<()> {
        progress(&self.conn, id, fraction, eta_secs)
    }
    fn finish(&self, id: i64, doc_id: Option<i64>, error: Option<&str>) -> Result<()> {
        finish(&self.conn, id, doc_id, error)
    }
    fn requeue(&self, id: i64) -> Result<()> {
        requeue(&self.conn, id)
    }
    fn requeue_interrupted(&self) -> Result<usize> {
        requeue_interrupted(&self.conn)
    }
    fn cancel(&self, id: Option<i64>) -> Result<Vec<i64>> {
        cancel(&self.conn, id)
    }
    fn wanted(&self, id: i64) -> Result<bool> {
        wanted(&self.conn, id)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn claim_finish_cancel_and_requeue() {
        let mut s = super::super::Sqlite::open_in_memory().unwrap();
        let c = s.conn_mut();
        let ids = enqueue(c, &[("/a.pdf".into(), 1), ("/b.pdf".into(), 2)]).unwrap();
        // The same path waiting is not queued twice.
        assert_eq!(enqueue(c, &[("/a.pdf".into(), 1)]).unwrap(), vec![ids[0]]);
        let a = claim(c).unwrap().unwrap();
        assert_eq!((a.id, a.state.as_str()), (ids[0], "running"));
        assert_eq!(waiting(c).unwrap(), 1);
        // Running in a live process (this one): its own, not requeued.
        assert_eq!(requeue_interrupted(c).unwrap(), 0);
        assert_eq!(waiting(c).unwrap(), 1);
        // A process that died (here: the same pid with another start, a pid reused)
        // leaves it running: it waits again.
        c.execute(
            "UPDATE queue SET owner = ?1 || ':1' WHERE id = ?2",
            params![std::process::id(), ids[0]],
        )
        .unwrap();
        assert_eq!(requeue_interrupted(c).unwrap(), 1);
        assert_eq!(claim(c).unwrap().unwrap().id, ids[0]);
        // A row from before owners were kept is a process gone too.
        c.execute("UPDATE queue SET owner = NULL WHERE id = ?1", [ids[0]])
            .unwrap();
        assert_eq!(requeue_interrupted(c).unwrap(), 1);
        assert_eq!(claim(c).unwrap().unwrap().id, ids[0]);
        finish(c, ids[0], Some(7), None).unwrap();
        assert_eq!(cancel(c, Some(ids[1])).unwrap(), vec![ids[1]]);
        assert!(!wanted(c, ids[1]).unwrap());
        assert!(claim(c).unwrap().is_none());
        // A cancelled row stays cancelled when its work ends.
        finish(c, ids[1], None, Some("late")).unwrap();
        let states: Vec<QueueState> = list(c).unwrap().into_iter().map(|r| r.state).collect();
        assert_eq!(states, [QueueState::Done, QueueState::Cancelled]);
        // A new batch clears the finished rows.
        let new = enqueue(c, &[("/c.pdf".into(), 3)]).unwrap();
        assert_eq!(list(c).unwrap().len(), 1);
        assert!(new[0] > ids[1]);
    }
}
