//! Summary trees in SQLite (see [`crate::store::summaries`]): one row per document
//! and key, removed with its document.

use rusqlite::{params, OptionalExtension};

use super::Sqlite;
use crate::store::summaries::{leaves_from, leaves_json, Summaries, SummaryTree};
use crate::Result;

/// Migration 5: the summary trees.
pub(super) const SCHEMA: &str = "CREATE TABLE summary_trees (
         doc_id   INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
         key      TEXT NOT NULL,
         leaves   TEXT NOT NULL,
         complete INTEGER NOT NULL DEFAULT 0,
         made_at  INTEGER NOT NULL,
         PRIMARY KEY (doc_id, key)
     ) WITHOUT ROWID;";

impl Summaries for Sqlite {
    fn summary_tree(&self, doc_id: i64, key: &str) -> Result<Option<SummaryTree>> {
        let row: Option<(String, bool)> = self
            .conn
            .query_row(
                "SELECT leaves, complete FROM summary_trees WHERE doc_id = ?1 AND key = ?2",
                params![doc_id, key],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        Ok(row.and_then(|(j, c)| leaves_from(&j, c)))
    }

    fn put_summary_tree(&mut self, doc_id: i64, key: &str, tree: &SummaryTree) -> Result<()> {
        let json = leaves_json(tree)?;
        self.conn.execute(
            "INSERT INTO summary_trees (doc_id, key, leaves, complete, made_at)
             SELECT ?1, ?2, ?3, ?4, ?5 WHERE EXISTS (SELECT 1 FROM documents WHERE id = ?1)
             ON CONFLICT (doc_id, key) DO UPDATE
             SET leaves = excluded.leaves, complete = excluded.complete, made_at = excluded.made_at",
            params![doc_id, key, json, tree.complete, now_ms()],
        )?;
        Ok(())
    }

    fn summary_trees_of(&self, doc_id: i64) -> Result<usize> {
        let n: i64 = self.conn.query_row(
            "SELECT count(*) FROM summary_trees WHERE doc_id = ?1",
            [doc_id],
            |r| r.get(0),
        )?;
        Ok(n as usize)
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::store::summaries::SummaryLeaf;
    use crate::store::{Chunk, Documents, NewDocument};
    use quire_pdf::ExtractedPage;

    fn doc(s: &mut Sqlite, hash: &str) -> i64 {
        let pages = [ExtractedPage {
            number: 1,
            text: "hello world".into(),
            ocr: false,
            has_images: false,
            tables: Vec::new(),
        }];
        let chunks = [Chunk {
            text: "hello world".into(),
            page_start: 1,
            page_end: 1,
            char_start: 0,
            char_end: 11,
            tokens: 2,
        }];
        s.insert_document(&NewDocument {
            path: "/a.pdf",
            hash,
            bytes: 1,
            title: None,
            pages: &pages,
            chunks: &chunks,
            embeddings: &[vec![1.0, 0.0]],
            model: "m",
        })
        .unwrap()
    }

    #[test]
    fn a_tree_is_kept_updated_and_gone_when_its_document_is_indexed_again() {
        let mut s = Sqlite::open_in_memory().unwrap();
        let id = doc(&mut s, "h1");
        assert_eq!(s.summary_tree(id, "k").unwrap(), None);
        let leaf = SummaryLeaf {
            first_chunk: 1,
            last_chunk: 1,
            page_start: 1,
            page_end: 1,
            text: "about greetings".into(),
        };
        let mut tree = SummaryTree {
            leaves: vec![leaf.clone()],
            complete: false,
        };
        s.put_summary_tree(id, "k", &tree).unwrap();
        tree.complete = true;
        s.put_summary_tree(id, "k", &tree).unwrap();
        assert_eq!(s.summary_tree(id, "k").unwrap(), Some(tree.clone()));
        assert_eq!(s.summary_tree(id, "other").unwrap(), None);
        assert_eq!(s.summary_trees_of(id).unwrap(), 1);
        let again = doc(&mut s, "h2");
        assert_ne!(again, id);
        assert_eq!(s.summary_trees_of(id).unwrap(), 0);
        assert_eq!(s.summary_tree(id, "k").unwrap(), None);
        // A removed document keeps nothing.
        s.put_summary_tree(id, "k", &tree).unwrap();
        assert_eq!(s.summary_trees_of(id).unwrap(), 0);
    }
}
