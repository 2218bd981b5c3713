//! Collections: named groups of documents a question can be scoped to. A document may
//! be in any number of collections; removing a document removes it from them, and a
//! document indexed again at the same path stays in its collections.

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// A collection with the ids of its documents.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Collection {
    pub id: i64,
    pub name: String,
    /// By id.
    pub documents: Vec<i64>,
}

/// A collection's name as given: trimmed, not empty, at most 80 characters.
pub fn clean_name(name: &str) -> Result<String> {
    let name = name.trim();
    if name.is_empty() {
        return Err(Error::Invalid("a collection needs a name".into()));
    }
    if name.chars().count() > 80 {
        return Err(Error::Invalid(
            "a collection's name is at most 80 characters".into(),
        ));
    }
    Ok(name.to_string())
}

/// Named groups of documents.
pub trait Collections {
    /// All collections, by name.
    fn collections(&self) -> Result<Vec<Collection>>;
    /// One collection.
    fn collection(&self, id: i64) -> Result<Option<Collection>> {
        Ok(self.collections()?.into_iter().find(|c| c.id == id))
    }
    /// The collection named `name` (case-insensitive).
    fn collection_by_name(&self, name: &str) -> Result<Option<Collection>>;
    /// Create a collection; refused when the name is taken.
    fn create_collection(&self, name: &str) -> Result<i64>;
    /// Rename a collection. Returns whether it existed.
    fn rename_collection(&self, id: i64, name: &str) -> Result<bool>;
    /// Make `docs` the documents of collection `id`, in one transaction. Returns
    /// whether the collection existed; an unknown document is refused.
    fn set_collection_documents(&mut self, id: i64, docs: &[i64]) -> Result<bool>;
    /// Delete a collection (its documents stay). Returns whether it existed.
    fn remove_collection(&self, id: i64) -> Result<bool>;
}
