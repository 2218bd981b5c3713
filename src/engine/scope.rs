//! Collections of documents, and the scope of a question: all documents, one
//! collection, or chosen documents, resolved to the filter retrieval honours and the
//! words each answer shows.

use super::{Collection, Engine, Scope};
use crate::retrieve::DocFilter;
use crate::store::{collections, DocStatus};
use crate::{Error, Result};

/// A scope made concrete: the documents to search (`None`: all) and its label.
#[derive(Debug, Clone)]
pub struct ResolvedScope {
    pub filter: Option<DocFilter>,
    pub label: String,
    /// The documents the scope names, by id (empty for all documents).
    pub docs: Vec<i64>,
}

impl Engine {
    /// All collections, by name.
    pub fn collections(&self) -> Result<Vec<Collection>> {
        self.store().collections()
    }

    /// Create a collection holding `documents`.
    pub fn create_collection(&self, name: &str, documents: &[i64]) -> Result<Collection> {
        let mut store = self.store();
        let id = store.create_collection(name)?;
        if let Err(e) = store.set_collection_documents(id, documents) {
            // Nothing half made: a refused document removes the new collection.
            store.remove_collection(id)?;
            return Err(e);
        }
        store
            .collection(id)?
            .ok_or_else(|| Error::NotFound(format!("collection {id}")))
    }

    /// Rename a collection and/or replace its documents.
    pub fn update_collection(
        &self,
        id: i64,
        name: Option<&str>,
        documents: Option<&[i64]>,
    ) -> Result<Collection> {
        let mut store = self.store();
        let missing = || Error::NotFound(format!("collection {id}"));
        // Check the name before changing the documents, so a refusal changes nothing.
        if let Some(n) = name {
            let n = collections::clean_name(n)?;
            if let Some(other) = store.collection_by_name(&n)? {
                if other.id != id {
                    return Err(Error::Invalid(format!(
                        "there is already a collection named \"{n}\""
                    )));
                }
            }
        }
        if let Some(docs) = documents {
            if !store.set_collection_documents(id, docs)? {
                return Err(missing());
            }
        }
        if let Some(n) = name {
            if !store.rename_collection(id, n)? {
                return Err(missing());
            }
        }
        store.collection(id)?.ok_or_else(missing)
    }

    /// Delete a collection; its documents stay indexed.
    pub fn remove_collection(&self, id: i64) -> Result<()> {
        if self.store().remove_collection(id)? {
            Ok(())
        } else {
            Err(Error::NotFound(format!("collection {id}")))
        }
    }

    /// The documents `scope` names, checked, with its label. A scope that names
    /// nothing searchable is refused with what to do.
    pub fn resolve_scope(&self, scope: &Scope) -> Result<ResolvedScope> {
        // One row read per document named, not every document: a question asked
        // over "All" reads none.
        let store = self.store();
        let searchable = |id: i64| -> Result<bool> {
            Ok(store
                .document(id)?
                .is_some_and(|d| d.status == DocStatus::Done))
        };
        match scope {
            Scope::All => Ok(ResolvedScope {
                filter: None,
                label: "All documents".into(),
                docs: Vec::new(),
            }),
            Scope::Collection { id } => {
                let c = store
                    .collection(*id)?
                    .ok_or_else(|| Error::NotFound(format!("collection {id}")))?;
                let mut ids = Vec::with_capacity(c.documents.len());
                for &d in &c.documents {
                    if searchable(d)? {
                        ids.push(d);
                    }
                }
                if ids.is_empty() {
                    return Err(Error::Invalid(format!(
                        "the collection \"{}\" holds no indexed document: add documents to it, or ask all documents",
                        c.name
                    )));
                }
                Ok(ResolvedScope {
                    filter: Some(DocFilter::new(ids.iter().copied())),
                    label: format!("Collection \"{}\"", c.name),
                    docs: ids,
                })
            }
            Scope::Documents { ids } => {
                if ids.is_empty() {
                    return Err(Error::Invalid(
                        "no document chosen: choose at least one, or ask all documents".into(),
                    ));
                }
                let mut names = Vec::new();
                for &id in ids {
                    let d = store
                        .document(id)?
                        .ok_or_else(|| Error::NotFound(format!("document {id}")))?;
                    if d.status != DocStatus::Done {
                        return Err(Error::Invalid(format!(
                            "{} could not be indexed, so it cannot be searched",
                            d.file_name
                        )));
                    }
                    if !names.contains(&d.file_name) {
                        names.push(d.file_name.clone());
                    }
                }
                let label = if names.len() <= 3 {
                    names.join(", ")
                } else {
                    format!("{}, {} and {} more", names[0], names[1], names.len() - 2)
                };
                let mut docs = ids.clone();
                docs.dedup();
                Ok(ResolvedScope {
                    filter: Some(DocFilter::new(ids.iter().copied())),
                    label,
                    docs,
                })
            }
        }
    }

    /// The collection named `name` (any case).
    pub fn find_collection(&self, name: &str) -> Result<Collection> {
        self.store()
            .collection_by_name(name)?
            .ok_or_else(|| Error::NotFound(format!("collection \"{}\"", name.trim())))
    }

    /// A scope as the command line writes it: `all`, `collection:NAME`, or documents
    /// (ids, paths or file names) separated by commas.
    pub fn parse_scope(&self, text: &str) -> Result<Scope> {
        let t = text.trim();
        if t.is_empty() || t.eq_ignore_ascii_case("all") {
            return Ok(Scope::All);
        }
        if let Some(name) = t.strip_prefix("collection:") {
            return Ok(Scope::Collection {
                id: self.find_collection(name)?.id,
            });
        }
        let docs = self.store().documents()?;
        let mut ids = Vec::new();
        for part in t.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let id = match self.find_document(part) {
                Ok(id) => id,
                Err(_) => {
                    let named: Vec<i64> = docs
                        .iter()
                        .filter(|d| d.file_name == part)
                        .map(|d| d.id)
                        .collect();
                    match named.as_slice() {
                        [id] => *id,
                        [] => return Err(Error::NotFound(format!("document {part}"))),
                        _ => {
                            return Err(Error::Invalid(format!(
                                "{part} names {} documents: give a path or an id",
                                named.len()
                            )))
                        }
                    }
                }
            };
            ids.push(id);
        }
        Ok(Scope::Documents { ids })
    }
}
