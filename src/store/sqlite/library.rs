//! The library in SQLite (see [`crate::store::library`]): a page of documents (or of
//! queued files) by `LIMIT`/`OFFSET` over indexed columns, its total and the summary
//! by `count(*)`, and the `ignored` mark of failed documents.

use rusqlite::types::Value;
use rusqlite::{params, params_from_iter, OptionalExtension};

use super::Sqlite;
use crate::store::{
    file_name, Library, LibraryFilter, LibraryItem, LibraryPage, LibraryQuery, LibrarySort,
    LibrarySummary,
};
use crate::Result;

/// Migration 3: failed documents can be ignored; names and dates are indexed for
/// paging.
pub(super) const SCHEMA: &str =
    "ALTER TABLE documents ADD COLUMN ignored INTEGER NOT NULL DEFAULT 0;
     CREATE INDEX documents_by_name ON documents(file_name COLLATE NOCASE, id);
     CREATE INDEX documents_by_date ON documents(indexed_at, id);
     CREATE INDEX documents_by_status ON documents(status, ignored);";

/// The `WHERE` of a documents page and its parameters.
fn documents_where(q: &LibraryQuery) -> (String, Vec<Value>) {
    let mut clauses = vec![match q.filter {
        LibraryFilter::Done => "d.status = 'done'",
        LibraryFilter::Failed => "d.status = 'failed' AND d.ignored = 0",
        _ => "(d.status = 'done' OR d.ignored = 0)",
    }
    .to_string()];
    let mut values = Vec::new();
    if !q.search.trim().is_empty() {
        clauses.push(
            "(lower(d.file_name) LIKE ?1 ESCAPE '\\' \
             OR lower(coalesce(d.title, '')) LIKE ?1 ESCAPE '\\')"
                .into(),
        );
        values.push(Value::Text(q.like_pattern()));
    }
    (clauses.join(" AND "), values)
}

impl Sqlite {
    fn documents_page(&self, q: &LibraryQuery) -> Result<LibraryPage> {
        let (filter, values) = documents_where(q);
        let total: i64 = self.conn.query_row(
            &format!("SELECT count(*) FROM documents d WHERE {filter}"),
            params_from_iter(values.iter()),
            |r| r.get(0),
        )?;
        let order = match q.sort {
            LibrarySort::Name => "d.file_name COLLATE NOCASE, d.id",
            LibrarySort::Date => "d.indexed_at DESC, d.id DESC",
        };
        let mut st = self.conn.prepare(&format!(
            "SELECT d.id, d.path, d.file_name, d.title, d.pages, d.status, d.error, d.indexed_at,
                    (SELECT count(*) FROM chunks c WHERE c.doc_id = d.id)
             FROM documents d WHERE {filter} ORDER BY {order}
             LIMIT {} OFFSET {}",
            q.page_size(),
            q.offset
        ))?;
        let items = st
            .query_map(params_from_iter(values.iter()), |r| {
                Ok(LibraryItem {
                    id: r.get(0)?,
                    path: r.get(1)?,
                    file_name: r.get(2)?,
                    title: r.get(3)?,
                    pages: r.get(4)?,
                    status: r.get(5)?,
                    error: r.get(6)?,
                    at_ms: r.get(7)?,
                    unavailable: false,
                    chunks: r.get::<_, i64>(8)? as usize,
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(LibraryPage {
            total: total as usize,
            offset: q.offset,
            items,
        })
    }

    /// Queued files: their paths are searched (the file name is part of it).
    fn queued_page(&self, q: &LibraryQuery) -> Result<LibraryPage> {
        let search = if q.search.trim().is_empty() {
            String::new()
        } else {
            "AND lower(path) LIKE ?1 ESCAPE '\\'".into()
        };
        let values: Vec<Value> = if search.is_empty() {
            Vec::new()
        } else {
            vec![Value::Text(q.like_pattern())]
        };
        let filter = format!("state IN ('queued', 'running') {search}");
        let total: i64 = self.conn.query_row(
            &format!("SELECT count(*) FROM queue WHERE {filter}"),
            params_from_iter(values.iter()),
            |r| r.get(0),
        )?;
        let order = match q.sort {
            LibrarySort::Name => "path, id",
            LibrarySort::Date => "added_at DESC, id DESC",
        };
        let mut st = self.conn.prepare(&format!(
            "SELECT id, path, state, error, added_at FROM queue WHERE {filter}
             ORDER BY {order} LIMIT {} OFFSET {}",
            q.page_size(),
            q.offset
        ))?;
        let items = st
            .query_map(params_from_iter(values.iter()), |r| {
                let path: String = r.get(1)?;
                Ok(LibraryItem {
                    id: r.get(0)?,
                    file_name: file_name(&path),
                    path,
                    title: None,
                    pages: 0,
                    chunks: 0,
                    status: r.get(2)?,
                    error: r.get(3)?,
                    at_ms: r.get(4)?,
                    unavailable: false,
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(LibraryPage {
            total: total as usize,
            offset: q.offset,
            items,
        })
    }
}

impl Library for Sqlite {
    fn library_page(&self, q: &LibraryQuery) -> Result<LibraryPage> {
        match q.filter {
            LibraryFilter::Queued => self.queued_page(q),
            _ => self.documents_page(q),
        }
    }

    fn library_summary(&self) -> Result<LibrarySummary> {
        Ok(self.conn.query_row(
            "SELECT (SELECT count(*) FROM documents WHERE status = 'done'),
                    (SELECT count(*) FROM queue WHERE state IN ('queued', 'running')),
                    (SELECT count(*) FROM documents WHERE status = 'failed' AND ignored = 0),
                    (SELECT coalesce(sum(pages), 0) FROM documents WHERE status = 'done'),
                    (SELECT count(*) FROM chunks),
                    (SELECT value FROM meta WHERE key = 'generation')",
            [],
            |r| {
                Ok(LibrarySummary {
                    indexed: r.get::<_, i64>(0)? as usize,
                    queued: r.get::<_, i64>(1)? as usize,
                    failed: r.get::<_, i64>(2)? as usize,
                    pages: r.get::<_, i64>(3)? as u64,
                    chunks: r.get::<_, i64>(4)? as u64,
                    generation: r.get(5)?,
                })
            },
        )?)
    }

    fn set_ignored(&mut self, id: i64, ignored: bool) -> Result<bool> {
        let tx = self.conn.transaction()?;
        let n = tx.execute(
            "UPDATE documents SET ignored = ?2 WHERE id = ?1 AND status = 'failed'",
            params![id, ignored],
        )?;
        tx.execute(
            "UPDATE meta SET value = value + 1 WHERE key = 'generation'",
            [],
        )?;
        tx.commit()?;
        Ok(n > 0)
    }

    fn failed_file(&self, id: i64) -> Result<Option<(String, u64)>> {
        Ok(self
            .conn
            .query_row(
                "SELECT path, bytes FROM documents WHERE id = ?1 AND status = 'failed'",
                [id],
                |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as u64)),
            )
            .optional()?)
    }
}
