//! Summary trees in PostgreSQL (see [`crate::store::summaries`]): one row per
//! document and key, removed with its document.

use super::Postgres;
use crate::store::summaries::{leaves_from, leaves_json, Summaries, SummaryTree};
use crate::Result;

/// Migration 3: the summary trees.
pub(super) const SCHEMA: &str = "CREATE TABLE summary_trees (
         doc_id   BIGINT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
         key      TEXT NOT NULL,
         leaves   TEXT NOT NULL,
         complete BOOLEAN NOT NULL DEFAULT false,
         made_at  BIGINT NOT NULL,
         PRIMARY KEY (doc_id, key)
     );";

impl Summaries for Postgres {
    fn summary_tree(&self, doc_id: i64, key: &str) -> Result<Option<SummaryTree>> {
        let row = self.run(|c| {
            Ok(c.query_opt(
                "SELECT leaves, complete FROM summary_trees WHERE doc_id = $1 AND key = $2",
                &[&doc_id, &key],
            )?)
        })?;
        Ok(row.and_then(|r| leaves_from(&r.get::<_, String>(0), r.get(1))))
    }

    fn put_summary_tree(&mut self, doc_id: i64, key: &str, tree: &SummaryTree) -> Result<()> {
        let json = leaves_json(tree)?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        self.run(|c| {
            c.execute(
                "INSERT INTO summary_trees (doc_id, key, leaves, complete, made_at)
                 SELECT $1, $2, $3, $4, $5 WHERE EXISTS (SELECT 1 FROM documents WHERE id = $1)
                 ON CONFLICT (doc_id, key) DO UPDATE
                 SET leaves = excluded.leaves, complete = excluded.complete,
                     made_at = excluded.made_at",
                &[&doc_id, &key, &json, &tree.complete, &now],
            )?;
            Ok(())
        })
    }

    fn summary_trees_of(&self, doc_id: i64) -> Result<usize> {
        let n: i64 = self.run(|c| {
            Ok(c.query_one(
                "SELECT count(*) FROM summary_trees WHERE doc_id = $1",
                &[&doc_id],
            )?
            .get(0))
        })?;
        Ok(n as usize)
    }
}
