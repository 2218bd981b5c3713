//! BM25's lists merged by block of documents (`term_blocks`), so that a question
//! reads a term's list in a few rows, not a row per document.
//!
//! `term_docs` (a row per term and document) stays what the writes write and what a
//! removal counts. But a common term has a row in nearly every document, and each row
//! is a heap tuple of its own: at 10,000 documents a question's lists were 20,000 to
//! 60,000 rows, about 5 µs each, most of its time. So, once `block_docs` documents
//! (`meta`, 256 unless set) have been written since the last merge, their rows are
//! merged, in one transaction, into a row per term for that block of documents: each
//! document's id, its postings' count and its postings, in document order
//! ([`super::bm25::push_block_doc`]). A list is then read as its term's block rows
//! plus the rows of the documents not merged yet (fewer than a block).
//!
//! - A merged document removed leaves its postings in its block, skipped by the
//!   readers (`dead_docs`, kept in the removal's transaction); a block a quarter of
//!   whose documents are gone is taken apart and merged again by the next merge.
//! - Merges run after a write commits and when a process connects (a library from
//!   before the blocks is merged then, once), one process at a time (a
//!   try-lock: another process merging is left to it). They change no ranking: the
//!   common terms' lists cached by a question stay good.

use postgres::{Client, Transaction};

use crate::Result;

/// The migration (version 7): the blocks' table, each document's block, and the
/// merged documents removed since their block was merged.
pub(super) const SCHEMA: &str = "CREATE TABLE term_blocks (
         term     TEXT NOT NULL,
         block    BIGINT NOT NULL,
         postings BYTEA NOT NULL,
         PRIMARY KEY (term, block)
     );
     ALTER TABLE term_blocks ALTER COLUMN postings SET STORAGE EXTERNAL;
     CREATE INDEX term_blocks_by_block ON term_blocks(block);
     CREATE SEQUENCE term_blocks_ids;
     ALTER TABLE documents ADD COLUMN block BIGINT;
     CREATE INDEX documents_unmerged ON documents(id) WHERE block IS NULL;
     CREATE INDEX documents_by_block ON documents(block) WHERE block IS NOT NULL;
     CREATE TABLE dead_docs (
         doc_id BIGINT PRIMARY KEY,
         block  BIGINT NOT NULL
     );
     INSERT INTO meta (key, value) VALUES ('block_docs', 256);";

/// The advisory lock a merge holds ("blocks").
const MERGE_LOCK: i64 = 0x626c_6f63_6b73;

/// Merge the documents not merged yet, a block of `block_docs` at a time, while a
/// whole block is waiting; first take apart the blocks that have lost a quarter of
/// their documents. Returns the documents merged. Does nothing if another session
/// is merging.
pub(super) fn merge_pending(c: &mut Client) -> Result<usize> {
    let mut merged = 0;
    loop {
        let mut tx = c.transaction()?;
        let mine: bool = tx
            .query_one("SELECT pg_try_advisory_xact_lock($1)", &[&MERGE_LOCK])?
            .get(0);
        if !mine {
            return Ok(merged);
        }
        let per: i64 = tx
            .query_one("SELECT value FROM meta WHERE key = 'block_docs'", &[])?
            .get(0);
        let per = per.max(1);
        for r in tx.query(
            "SELECT block FROM dead_docs GROUP BY block HAVING count(*) * 4 >= $1",
            &[&per],
        )? {
            take_apart(&mut tx, r.get(0))?;
        }
        // Counted first, so that a write with no block to merge locks no document.
        let waiting: i64 = tx
            .query_one("SELECT count(*) FROM documents WHERE block IS NULL", &[])?
            .get(0);
        if waiting < per {
            tx.commit()?;
            return Ok(merged);
        }
        let ids: Vec<i64> = tx
            .query(
                "SELECT id FROM documents WHERE block IS NULL ORDER BY id LIMIT $1 FOR UPDATE",
                &[&per],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect();
        if (ids.len() as i64) < per {
            tx.commit()?;
            return Ok(merged);
        }
        let block: i64 = tx
            .query_one("SELECT nextval('term_blocks_ids')", &[])?
            .get(0);
        tx.execute(
            "INSERT INTO term_blocks (term, block, postings)
             SELECT term, $1,
                    string_agg(int8send(doc_id) || int4send(octet_length(postings) / 16)
                               || postings, ''::bytea ORDER BY doc_id)
             FROM term_docs WHERE doc_id = ANY($2) GROUP BY term",
            &[&block, &ids],
        )?;
        tx.execute(
            "UPDATE documents SET block = $1 WHERE id = ANY($2)",
            &[&block, &ids],
        )?;
        tx.commit()?;
        merged += ids.len();
    }
}

/// [`merge_pending`] after a write has committed, or at connect: a merge that
/// fails loses nothing (the lists are read from the documents' rows meanwhile, and
/// the next write merges again), so it is reported, not returned.
pub(super) fn merge_quietly(c: &mut Client) {
    if let Err(e) = merge_pending(c) {
        eprintln!("quire: merging the BM25 lists by block: {e}");
    }
}

/// Before document `id` is deleted (in the deleting transaction): if it is merged,
/// mark its postings in its block dead.
pub(super) fn before_delete(tx: &mut Transaction<'_>, id: i64) -> Result<()> {
    let block: Option<i64> = tx
        .query_opt(
            "SELECT block FROM documents WHERE id = $1 FOR UPDATE",
            &[&id],
        )?
        .and_then(|r| r.get(0));
    if let Some(block) = block {
        tx.execute(
            "INSERT INTO dead_docs (doc_id, block) VALUES ($1, $2) ON CONFLICT DO NOTHING",
            &[&id, &block],
        )?;
    }
    Ok(())
}

/// Block `block`'s rows removed; its living documents wait to be merged again.
fn take_apart(tx: &mut Transaction<'_>, block: i64) -> Result<()> {
    tx.execute("DELETE FROM term_blocks WHERE block = $1", &[&block])?;
    tx.execute(
        "UPDATE documents SET block = NULL WHERE block = $1",
        &[&block],
    )?;
    tx.execute("DELETE FROM dead_docs WHERE block = $1", &[&block])?;
    Ok(())
}

/// What a question's snapshot needs to read the lists: the documents not merged
/// (their `term_docs` rows are read) and the merged ones removed (skipped in their
/// blocks), each ascending.
pub(super) fn layout(tx: &mut Transaction<'_>) -> Result<(Vec<i64>, Vec<i64>)> {
    let r = tx.query_one(
        "SELECT coalesce((SELECT array_agg(id ORDER BY id) FROM documents WHERE block IS NULL),
                         '{}'),
                coalesce((SELECT array_agg(doc_id ORDER BY doc_id) FROM dead_docs), '{}')",
        &[],
    )?;
    Ok((r.get(0), r.get(1)))
}

/// The check: (term, block) rows whose bytes are not those of their documents'
/// lists (blocks with a removed document are left to the next merge).
pub(super) const CHECK: &str = "SELECT count(*) FROM
         (SELECT t.term, d.block, sum(octet_length(t.postings) + 12) AS bytes
          FROM term_docs t JOIN documents d ON d.id = t.doc_id
          WHERE d.block IS NOT NULL GROUP BY t.term, d.block) m
     FULL JOIN (SELECT term, block, octet_length(postings)::bigint AS bytes
                FROM term_blocks) b USING (term, block)
     WHERE (m.block IS NULL OR m.block NOT IN (SELECT block FROM dead_docs))
       AND (b.block IS NULL OR b.block NOT IN (SELECT block FROM dead_docs))
       AND m.bytes IS DISTINCT FROM b.bytes";
