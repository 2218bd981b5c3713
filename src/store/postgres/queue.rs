//! The indexing queue in PostgreSQL (see [`crate::store::queue`]): one table shared by
//! every process, each with its own rows (`origin`); a row taken is marked with the
//! taking session's backend pid.

use super::Postgres;
use crate::store::{now_ms, Queue, QueueRow, QueueState};
use crate::Result;

const QUEUE_SELECT: &str = "SELECT id, path, bytes, state, progress, eta_secs, error, doc_id,
                            started_at, finished_at FROM queue";

fn queue_row(r: &postgres::Row) -> QueueRow {
    QueueRow {
        id: r.get(0),
        path: r.get(1),
        bytes: r.get::<_, i64>(2).max(0) as u64,
        state: r.get(3),
        progress: r.get(4),
        eta_secs: r.get(5),
        error: r.get(6),
        doc_id: r.get(7),
        started_at: r.get(8),
        finished_at: r.get(9),
    }
}

impl Queue for Postgres {
    fn enqueue(&mut self, files: &[(String, u64)]) -> Result<Vec<i64>> {
        self.run(|c| {
            let origin = self.origin.clone();
            let mut tx = c.transaction()?;
            tx.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended($1, 1))",
                &[&origin],
            )?;
            let waiting: i64 = tx
                .query_one(
                    "SELECT count(*) FROM queue WHERE origin = $1 AND state IN ('queued', 'running')",
                    &[&origin],
                )?
                .get(0);
            if waiting == 0 {
                tx.execute("DELETE FROM queue WHERE origin = $1", &[&origin])?;
            }
            let mut ids = Vec::with_capacity(files.len());
            for (path, bytes) in files {
                let here = tx.query_opt(
                    "SELECT id FROM queue WHERE origin = $1 AND path = $2
                     AND state IN ('queued', 'running')",
                    &[&origin, path],
                )?;
                let id: i64 = match here {
                    Some(r) => r.get(0),
                    None => tx
                        .query_one(
                            "INSERT INTO queue (origin, path, bytes, added_at) VALUES ($1, $2, $3, $4)
                             RETURNING id",
                            &[&origin, path, &(*bytes as i64), &now_ms()],
                        )?
                        .get(0),
                };
                ids.push(id);
            }
            tx.commit()?;
            Ok(ids)
        })
    }

    fn claim(&self) -> Result<Option<QueueRow>> {
        self.run(|c| {
            let row = c.query_opt(
                &format!(
                    "WITH next AS (
                         SELECT id FROM queue WHERE origin = $1 AND state = 'queued'
                         ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
                     UPDATE queue q SET state = 'running', progress = 0, eta_secs = NULL,
                                        started_at = $2, owner = pg_backend_pid()
                     FROM next WHERE q.id = next.id
                     RETURNING {}",
                    QUEUE_SELECT
                        .trim_start_matches("SELECT ")
                        .trim_end_matches(" FROM queue")
                        .split(',')
                        .map(|c| format!("q.{}", c.trim()))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                &[&self.origin, &now_ms()],
            )?;
            Ok(row.as_ref().map(queue_row))
        })
    }

    fn waiting(&self) -> Result<usize> {
        self.run(|c| {
            let n: i64 = c
                .query_one(
                    "SELECT count(*) FROM queue WHERE origin = $1 AND state = 'queued'",
                    &[&self.origin],
                )?
                .get(0);
            Ok(n as usize)
        })
    }

    fn queue_row(&self, id: i64) -> Result<Option<QueueRow>> {
        self.run(|c| {
            Ok(
                c.query_opt(&format!("{QUEUE_SELECT} WHERE id = $1"), &[&id])?
                    .as_ref()
                    .map(queue_row),
            )
        })
    }

    fn queue(&self) -> Result<Vec<QueueRow>> {
        self.run(|c| {
            Ok(c.query(
                &format!("{QUEUE_SELECT} WHERE origin = $1 ORDER BY id"),
                &[&self.origin],
            )?
            .iter()
            .map(queue_row)
            .collect())
        })
    }

    fn progress(&self, id: i64, fraction: f64, eta_secs: Option<f64>) -> Result<()> {
        self.run(|c| {
            c.execute(
                "UPDATE queue SET progress = $2, eta_secs = $3 WHERE id = $1 AND state = 'running'",
                &[&id, &fraction.clamp(0.0, 1.0), &eta_secs],
            )?;
            Ok(())
        })
    }

    fn finish(&self, id: i64, doc_id: Option<i64>, error: Option<&str>) -> Result<()> {
        self.run(|c| {
            let state = if error.is_some() {
                QueueState::Failed
            } else {
                QueueState::Done
            };
            c.execute(
                "UPDATE queue SET state = $2, doc_id = $3, error = $4, progress = 1, eta_secs = NULL,
                                  finished_at = $5
                 WHERE id = $1 AND state != 'cancelled'",
                &[&id, &state, &doc_id, &error, &now_ms()],
            )?;
            Ok(())
        })
    }

    fn requeue(&self, id: i64) -> Result<()> {
        self.run(|c| {
            c.execute(
                "UPDATE queue SET state = 'queued', progress = 0, eta_secs = NULL, started_at = NULL,
                                  owner = NULL
                 WHERE id = $1 AND state = 'running'",
                &[&id],
            )?;
            Ok(())
        })
    }

    fn requeue_interrupted(&self) -> Result<usize> {
        self.run(|c| {
            // Only rows whose taking session is gone: another live process's are its own.
            Ok(c.execute(
                "UPDATE queue SET state = 'queued', progress = 0, eta_secs = NULL, started_at = NULL,
                                  owner = NULL
                 WHERE origin = $1 AND state = 'running'
                   AND (owner IS NULL OR owner NOT IN (SELECT pid FROM pg_stat_activity
                                                       WHERE pid IS NOT NULL))",
                &[&self.origin],
            )? as usize)
        })
    }

    fn cancel(&self, id: Option<i64>) -> Result<Vec<i64>> {
        self.run(|c| {
            Ok(c.query(
                "UPDATE queue SET state = 'cancelled', eta_secs = NULL, finished_at = $2
                 WHERE ($1::bigint IS NULL AND origin = $3 OR id = $1)
                   AND state IN ('queued', 'running') RETURNING id",
                &[&id, &now_ms(), &self.origin],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect())
        })
    }

    fn wanted(&self, id: i64) -> Result<bool> {
        self.run(|c| {
            let state: Option<String> = c
                .query_opt("SELECT state FROM queue WHERE id = $1", &[&id])?
                .map(|r| r.get(0));
            Ok(state.is_some_and(|s| s != "cancelled"))
        })
    }
}
