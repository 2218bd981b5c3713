//! Watched folders and PostgreSQL: not kept. A shared index's paths name files on
//! whichever machine queued them, so no one process can watch them; the listing is
//! empty and every change is refused with [`SQLITE_ONLY`].

use super::Postgres;
use crate::store::folders::{FolderRow, Folders, KnownFile, SQLITE_ONLY};
use crate::{Error, Result};

fn refused<T>() -> Result<T> {
    Err(Error::Invalid(SQLITE_ONLY.into()))
}

impl Folders for Postgres {
    fn folders(&self) -> Result<Vec<FolderRow>> {
        Ok(Vec::new())
    }
    fn add_folder(&self, _path: &str, _collection: Option<i64>) -> Result<i64> {
        refused()
    }
    fn remove_folder(&self, _id: i64) -> Result<bool> {
        refused()
    }
    fn set_folder_state(
        &self,
        _id: i64,
        _available: bool,
        _device: Option<i64>,
        _synced: Option<i64>,
    ) -> Result<()> {
        refused()
    }
    fn files_under(&self, _root: &str) -> Result<Vec<KnownFile>> {
        refused()
    }
    /// Nothing to record: without watched folders no sync compares the times.
    fn stamp_document(&self, _id: i64, _bytes: u64, _mtime: i64) -> Result<()> {
        Ok(())
    }
    fn move_document(&mut self, _id: i64, _path: &str, _mtime: i64) -> Result<()> {
        refused()
    }
}
