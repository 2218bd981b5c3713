//! The library as the shells show it: a page of documents at a time with search,
//! filter and sort ([`Engine::library`]), the counts for the banner and for noticing
//! another process's changes ([`Engine::library_summary`]), and what can be done with
//! a failed file: index it again ([`Engine::retry_failed`]) or ignore it
//! ([`Engine::ignore_failed`]).

use std::sync::Arc;

use super::{spawn_resume, Engine};
use crate::{Error, Result};

pub use crate::store::{
    LibraryFilter, LibraryItem, LibraryPage, LibraryQuery, LibrarySort, LibrarySummary,
};

impl Engine {
    /// One page of the library: the documents (or queued files) matching `q`.
    pub fn library(&self, q: &LibraryQuery) -> Result<LibraryPage> {
        let mut page = self.store().library_page(q)?;
        let missing = self.unavailable_roots();
        if !missing.is_empty() {
            for item in &mut page.items {
                item.unavailable = super::folders::in_any(&item.path, &missing);
            }
        }
        Ok(page)
    }

    /// How many documents are indexed, queued and failed (ignored ones left out),
    /// with their pages and chunks and the store's generation, by counts. Read from
    /// the database each time, so what another process indexed shows at once.
    pub fn library_summary(&self) -> Result<LibrarySummary> {
        self.store().library_summary()
    }

    /// Leave failed document `id` out of the failed count and list until its file
    /// changes or it is retried.
    pub fn ignore_failed(&self, id: i64) -> Result<()> {
        if self.store().set_ignored(id, true)? {
            Ok(())
        } else {
            Err(Error::NotFound(format!("failed document {id}")))
        }
    }

    /// Queue failed document `id`'s file again (no longer ignored) and index it on a
    /// thread of its own; its progress shows in [`Engine::queue`]. Returns the
    /// queue row's id.
    pub fn retry_failed(self: &Arc<Self>, id: i64) -> Result<i64> {
        let Some((path, _)) = self.store().failed_file(id)? else {
            return Err(Error::NotFound(format!("failed document {id}")));
        };
        let bytes = std::fs::metadata(&path)
            .map_err(|e| Error::Invalid(format!("{path} cannot be read any more: {e}")))?
            .len();
        let row = {
            let mut store = self.store();
            store.set_ignored(id, false)?;
            store.enqueue(&[(path.clone(), bytes)])?
        };
        let row = row
            .first()
            .copied()
            .ok_or_else(|| Error::Invalid(format!("{path} could not be queued")))?;
        spawn_resume(self.clone());
        Ok(row)
    }
}
