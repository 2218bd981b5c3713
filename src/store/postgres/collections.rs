//! Collections in PostgreSQL (see [`crate::store::collections`]): the collections table
//! (names unique in any case) and which documents are in each.

use std::collections::HashMap;

use postgres::{Client, Transaction};

use super::Postgres;
use crate::store::collections::clean_name;
use crate::store::{now_ms, Collection, Collections};
use crate::{Error, Result};

/// All collections, by name.
fn list(c: &mut Client) -> Result<Vec<Collection>> {
    let heads = c.query(
        "SELECT id, name FROM collections ORDER BY lower(name), id",
        &[],
    )?;
    let members = c.query(
        "SELECT collection_id, doc_id FROM collection_documents ORDER BY doc_id",
        &[],
    )?;
    let mut docs: HashMap<i64, Vec<i64>> = HashMap::new();
    for m in &members {
        docs.entry(m.get(0)).or_default().push(m.get(1));
    }
    Ok(heads
        .iter()
        .map(|h| {
            let id: i64 = h.get(0);
            Collection {
                id,
                name: h.get(1),
                documents: docs.remove(&id).unwrap_or_default(),
            }
        })
        .collect())
}

/// The collection named `name` (case-insensitive), or `None`.
fn by_name(c: &mut Client, name: &str) -> Result<Option<Collection>> {
    let id: Option<i64> = c
        .query_opt(
            "SELECT id FROM collections WHERE lower(name) = lower($1)",
            &[&name.trim()],
        )?
        .map(|r| r.get(0));
    match id {
        Some(id) => Ok(list(c)?.into_iter().find(|c| c.id == id)),
        None => Ok(None),
    }
}

/// The collections document `doc` is in (read before it is replaced).
pub(super) fn of_document(tx: &mut Transaction<'_>, doc: i64) -> Result<Vec<i64>> {
    Ok(tx
        .query(
            "SELECT collection_id FROM collection_documents WHERE doc_id = $1",
            &[&doc],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect())
}

/// Put document `doc` back into `cols` (after it was indexed again under a new id).
pub(super) fn restore(tx: &mut Transaction<'_>, doc: i64, cols: &[i64]) -> Result<()> {
    for c in cols {
        tx.execute(
            "INSERT INTO collection_documents (collection_id, doc_id) VALUES ($1, $2)
             ON CONFLICT DO NOTHING",
            &[c, &doc],
        )?;
    }
    Ok(())
}

impl Collections for Postgres {
    fn collections(&self) -> Result<Vec<Collection>> {
        self.run(list)
    }

    fn collection_by_name(&self, name: &str) -> Result<Option<Collection>> {
        self.run(|c| by_name(c, name))
    }

    fn create_collection(&self, name: &str) -> Result<i64> {
        let name = clean_name(name)?;
        let id = self.run(|c| {
            Ok(c.query_opt(
                "INSERT INTO collections (name, created_at) VALUES ($1, $2)
                 ON CONFLICT DO NOTHING RETURNING id",
                &[&name, &now_ms()],
            )?)
        })?;
        match id {
            Some(r) => Ok(r.get(0)),
            None => Err(Error::Invalid(format!(
                "there is already a collection named \"{name}\""
            ))),
        }
    }

    fn rename_collection(&self, id: i64, name: &str) -> Result<bool> {
        let name = clean_name(name)?;
        self.run(|c| {
            if let Some(other) = by_name(c, &name)? {
                if other.id != id {
                    return Err(Error::Invalid(format!(
                        "there is already a collection named \"{name}\""
                    )));
                }
            }
            Ok(c.execute(
                "UPDATE collections SET name = $2 WHERE id = $1",
                &[&id, &name],
            )? > 0)
        })
    }

    fn set_collection_documents(&mut self, id: i64, docs: &[i64]) -> Result<bool> {
        self.run(|c| {
            let mut tx = c.transaction()?;
            if tx
                .query_opt("SELECT 1 FROM collections WHERE id = $1 FOR UPDATE", &[&id])?
                .is_none()
            {
                return Ok(false);
            }
            tx.execute(
                "DELETE FROM collection_documents WHERE collection_id = $1",
                &[&id],
            )?;
            for doc in docs {
                if tx
                    .query_opt("SELECT 1 FROM documents WHERE id = $1", &[doc])?
                    .is_none()
                {
                    return Err(Error::NotFound(format!("document {doc}")));
                }
                tx.execute(
                    "INSERT INTO collection_documents (collection_id, doc_id) VALUES ($1, $2)
                     ON CONFLICT DO NOTHING",
                    &[&id, doc],
                )?;
            }
            tx.commit()?;
            Ok(true)
        })
    }

    fn remove_collection(&self, id: i64) -> Result<bool> {
        self.run(|c| Ok(c.execute("DELETE FROM collections WHERE id = $1", &[&id])? > 0))
    }
}
