//! The library as a window lists it: one page of documents at a time, searched by
//! name and filtered by status on the database's side, and a summary made of counts
//! (never of every row), with the [`Library`] trait both databases implement. A failed
//! document can be ignored: it leaves the failed count and list until it is indexed
//! again or its file changes.

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// The most rows one page holds.
pub const MAX_PAGE: usize = 500;

/// Which documents a page lists.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LibraryFilter {
    /// Indexed and failed documents (failed ones ignored left out).
    #[default]
    All,
    /// Indexed documents.
    Done,
    /// Failed documents, with their error, ignored ones left out.
    Failed,
    /// Files waiting in the indexing queue (or being indexed).
    Queued,
}

impl std::str::FromStr for LibraryFilter {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "" | "all" => Ok(Self::All),
            "done" => Ok(Self::Done),
            "failed" => Ok(Self::Failed),
            "queued" => Ok(Self::Queued),
            other => Err(Error::Invalid(format!(
                "filter {other:?}: give all, done, failed or queued"
            ))),
        }
    }
}

/// In which order a page lists them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LibrarySort {
    /// By file name, case-insensitively (then by id).
    #[default]
    Name,
    /// Most recently indexed (or queued) first.
    Date,
}

impl std::str::FromStr for LibrarySort {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "" | "name" => Ok(Self::Name),
            "date" => Ok(Self::Date),
            other => Err(Error::Invalid(format!("sort {other:?}: give name or date"))),
        }
    }
}

/// One page's request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LibraryQuery {
    /// Keep the rows whose file name or title contains this, case-insensitively
    /// (empty: all).
    pub search: String,
    pub filter: LibraryFilter,
    pub sort: LibrarySort,
    /// Rows skipped.
    pub offset: usize,
    /// Rows at most (1 to [`MAX_PAGE`]; 0 means 100).
    pub limit: usize,
}

impl LibraryQuery {
    /// The page size asked, within bounds.
    pub fn page_size(&self) -> usize {
        match self.limit {
            0 => 100,
            n => n.min(MAX_PAGE),
        }
    }

    /// The search as a `LIKE` pattern (`\` escapes), lower-cased: `%text%`.
    pub fn like_pattern(&self) -> String {
        let mut p = String::from("%");
        for c in self.search.trim().to_lowercase().chars() {
            if matches!(c, '%' | '_' | '\\') {
                p.push('\\');
            }
            p.push(c);
        }
        p.push('%');
        p
    }
}

/// A row of a page: a document, or for [`LibraryFilter::Queued`] a queue row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LibraryItem {
    /// The document's id (the queue row's for a queued file).
    pub id: i64,
    pub path: String,
    pub file_name: String,
    pub title: Option<String>,
    pub pages: u32,
    pub chunks: usize,
    /// `done`, `failed`, `queued` or `running`.
    pub status: String,
    /// Why it failed.
    pub error: Option<String>,
    /// When it was indexed (queued), ms since the epoch.
    pub at_ms: i64,
    /// Its watched folder is missing (an unmounted disk): kept and searched, but its
    /// file cannot be opened. The store leaves it false; the engine marks it.
    #[serde(default)]
    pub unavailable: bool,
}

/// One page of the library.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LibraryPage {
    /// Rows matching the search and filter, in all.
    pub total: usize,
    pub offset: usize,
    pub items: Vec<LibraryItem>,
}

/// The library in numbers, by count queries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LibrarySummary {
    /// Documents indexed.
    pub indexed: usize,
    /// Files waiting in the queue or being indexed.
    pub queued: usize,
    /// Documents that failed, ignored ones left out.
    pub failed: usize,
    /// Pages of the documents indexed.
    pub pages: u64,
    /// Chunks in the index.
    pub chunks: u64,
    /// The store's generation ([`crate::store::Documents::generation`]): it moves with
    /// every change to the documents, whichever process made it.
    pub generation: i64,
}

/// Paged listing, counts, and ignoring failed documents.
pub trait Library {
    /// One page of the library.
    fn library_page(&self, q: &LibraryQuery) -> Result<LibraryPage>;
    /// The counts.
    fn library_summary(&self) -> Result<LibrarySummary>;
    /// Ignore (or no longer ignore) failed document `id`. Returns whether a failed
    /// document had that id.
    fn set_ignored(&mut self, id: i64, ignored: bool) -> Result<bool>;
    /// The path and size of failed document `id`, if it is one.
    fn failed_file(&self, id: i64) -> Result<Option<(String, u64)>>;
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_search_pattern_escapes_like_wildcards() {
        let q = LibraryQuery {
            search: " 50%_Off\\ ".into(),
            ..Default::default()
        };
        assert_eq!(q.like_pattern(), "%50\\%\\_off\\\\%");
    }

    #[test]
    fn filters_and_sorts_parse_or_say_what_is_allowed() {
        assert_eq!(
            "failed".parse::<LibraryFilter>().unwrap(),
            LibraryFilter::Failed
        );
        assert_eq!("".parse::<LibrarySort>().unwrap(), LibrarySort::Name);
        let e = "broken".parse::<LibraryFilter>().unwrap_err().to_string();
        assert!(e.contains("all, done, failed or queued"), "{e}");
        assert!("size".parse::<LibrarySort>().is_err());
    }

    #[test]
    fn the_page_size_is_bounded() {
        let mut q = LibraryQuery::default();
        assert_eq!(q.page_size(), 100);
        q.limit = 10_000;
        assert_eq!(q.page_size(), MAX_PAGE);
    }
}
