//! The library in PostgreSQL (see [`crate::store::library`]): a page of documents (or
//! of queued files) by `LIMIT`/`OFFSET`, searched with `ILIKE`, its total and the
//! summary by `count(*)`, and the `ignored` mark of failed documents.

use postgres::types::ToSql;

use super::Postgres;
use crate::store::{
    file_name, Library, LibraryFilter, LibraryItem, LibraryPage, LibraryQuery, LibrarySort,
    LibrarySummary,
};
use crate::Result;

/// Migration 2: failed documents can be ignored; names and dates are indexed for
/// paging.
pub(super) const SCHEMA: &str =
    "ALTER TABLE documents ADD COLUMN ignored BOOLEAN NOT NULL DEFAULT false;
     CREATE INDEX documents_by_name ON documents (lower(file_name), id);
     CREATE INDEX documents_by_date ON documents (indexed_at, id);
     CREATE INDEX documents_by_status ON documents (status, ignored);";

impl Postgres {
    fn documents_page(&self, q: &LibraryQuery) -> Result<LibraryPage> {
        let mut filter = match q.filter {
            LibraryFilter::Done => "d.status = 'done'",
            LibraryFilter::Failed => "d.status = 'failed' AND NOT d.ignored",
            _ => "(d.status = 'done' OR NOT d.ignored)",
        }
        .to_string();
        let pattern = q.like_pattern();
        let searching = !q.search.trim().is_empty();
        if searching {
            filter.push_str(
                " AND (lower(d.file_name) LIKE $1 OR lower(coalesce(d.title, '')) LIKE $1)",
            );
        }
        let order = match q.sort {
            LibrarySort::Name => "lower(d.file_name), d.id",
            LibrarySort::Date => "d.indexed_at DESC, d.id DESC",
        };
        let (limit, offset) = (q.page_size(), q.offset);
        self.run(move |c| {
            let args: Vec<&(dyn ToSql + Sync)> = if searching {
                vec![&pattern]
            } else {
                Vec::new()
            };
            let total: i64 = c
                .query_one(
                    &format!("SELECT count(*) FROM documents d WHERE {filter}"),
                    &args,
                )?
                .get(0);
            let rows = c.query(
                &format!(
                    "SELECT d.id, d.path, d.file_name, d.title, d.pages, d.status, d.error,
                            d.indexed_at, (SELECT count(*) FROM chunks c WHERE c.doc_id = d.id)
                     FROM documents d WHERE {filter} ORDER BY {order}
                     LIMIT {limit} OFFSET {offset}"
                ),
                &args,
            )?;
            Ok(LibraryPage {
                total: total as usize,
                offset,
                items: rows
                    .iter()
                    .map(|r| LibraryItem {
                        id: r.get(0),
                        path: r.get(1),
                        file_name: r.get(2),
                        title: r.get(3),
                        pages: r.get::<_, i64>(4) as u32,
                        status: r.get(5),
                        error: r.get(6),
                        at_ms: r.get(7),
                        unavailable: false,
                        chunks: r.get::<_, i64>(8) as usize,
                    })
                    .collect(),
            })
        })
    }

    /// Queued files, every process's: their paths are searched.
    fn queued_page(&self, q: &LibraryQuery) -> Result<LibraryPage> {
        let pattern = q.like_pattern();
        let searching = !q.search.trim().is_empty();
        let filter = if searching {
            "state IN ('queued', 'running') AND lower(path) LIKE $1"
        } else {
            "state IN ('queued', 'running')"
        };
        let order = match q.sort {
            LibrarySort::Name => "path, id",
            LibrarySort::Date => "added_at DESC, id DESC",
        };
        let (limit, offset) = (q.page_size(), q.offset);
        self.run(move |c| {
            let args: Vec<&(dyn ToSql + Sync)> = if searching {
                vec![&pattern]
            } else {
                Vec::new()
            };
            let total: i64 = c
                .query_one(&format!("SELECT count(*) FROM queue WHERE {filter}"), &args)?
                .get(0);
            let rows = c.query(
                &format!(
                    "SELECT id, path, state, error, added_at FROM queue WHERE {filter}
                     ORDER BY {order} LIMIT {limit} OFFSET {offset}"
                ),
                &args,
            )?;
            Ok(LibraryPage {
                total: total as usize,
                offset,
                items: rows
                    .iter()
                    .map(|r| {
                        let path: String = r.get(1);
                        LibraryItem {
                            id: r.get(0),
                            file_name: file_name(&path),
                            path,
                            title: None,
                            pages: 0,
                            chunks: 0,
                            status: r.get(2),
                            error: r.get(3),
                            at_ms: r.get(4),
                            unavailable: false,
                        }
                    })
                    .collect(),
            })
        })
    }
}

impl Library for Postgres {
    fn library_page(&self, q: &LibraryQuery) -> Result<LibraryPage> {
        match q.filter {
            LibraryFilter::Queued => self.queued_page(q),
            _ => self.documents_page(q),
        }
    }

    fn library_summary(&self) -> Result<LibrarySummary> {
        self.run(|c| {
            let r = c.query_one(
                "SELECT (SELECT count(*) FROM documents WHERE status = 'done'),
                        (SELECT count(*) FROM queue WHERE state IN ('queued', 'running')),
                        (SELECT count(*) FROM documents WHERE status = 'failed' AND NOT ignored),
                        (SELECT coalesce(sum(pages), 0)::bigint FROM documents
                         WHERE status = 'done'),
                        (SELECT value FROM meta WHERE key = 'chunks'),
                        (SELECT value FROM meta WHERE key = 'generation')",
                &[],
            )?;
            Ok(LibrarySummary {
                indexed: r.get::<_, i64>(0) as usize,
                queued: r.get::<_, i64>(1) as usize,
                failed: r.get::<_, i64>(2) as usize,
                pages: r.get::<_, i64>(3) as u64,
                chunks: r.get::<_, i64>(4) as u64,
                generation: r.get(5),
            })
        })
    }

    fn set_ignored(&mut self, id: i64, ignored: bool) -> Result<bool> {
        self.run(|c| {
            let mut tx = c.transaction()?;
            let n = tx.execute(
                "UPDATE documents SET ignored = $2 WHERE id = $1 AND status = 'failed'",
                &[&id, &ignored],
            )?;
            tx.execute(
                "UPDATE meta SET value = value + 1 WHERE key = 'generation'",
                &[],
            )?;
            tx.commit()?;
            Ok(n > 0)
        })
    }

    fn failed_file(&self, id: i64) -> Result<Option<(String, u64)>> {
        self.run(|c| {
            Ok(c.query_opt(
                "SELECT path, bytes FROM documents WHERE id = $1 AND status = 'failed'",
                &[&id],
            )?
            .map(|r| (r.get(0), r.get::<_, i64>(1) as u64)))
        })
    }
}
