//! Summaries: each document's summary tree as far as it was read — the leaf
//! summaries of its chunks in order, keyed by what made them (the document's content
//! hash, the model, the prompt) — so that a second question about the document starts
//! from them. A document indexed again gets a new id and its rows go with the old one.

use serde::{Deserialize, Serialize};

use crate::Result;

/// One leaf of a summary tree: the summary of consecutive chunks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SummaryLeaf {
    /// The first and last chunk ids it summarizes.
    pub first_chunk: i64,
    pub last_chunk: i64,
    pub page_start: u32,
    pub page_end: u32,
    pub text: String,
}

/// A document's kept leaves and whether they cover all of it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SummaryTree {
    pub leaves: Vec<SummaryLeaf>,
    pub complete: bool,
}

/// The kept summary trees.
pub trait Summaries {
    /// The tree kept for document `doc_id` under `key`, if any.
    fn summary_tree(&self, doc_id: i64, key: &str) -> Result<Option<SummaryTree>>;
    /// Keep `tree` for document `doc_id` under `key`, replacing what was there (a
    /// document removed meanwhile keeps nothing).
    fn put_summary_tree(&mut self, doc_id: i64, key: &str, tree: &SummaryTree) -> Result<()>;
    /// How many trees are kept for document `doc_id`, under any key.
    fn summary_trees_of(&self, doc_id: i64) -> Result<usize>;
}

/// The leaves as kept (JSON).
pub(crate) fn leaves_json(tree: &SummaryTree) -> Result<String> {
    serde_json::to_string(&tree.leaves)
        .map_err(|e| crate::Error::Invalid(format!("summary leaves: {e}")))
}

/// The leaves read back; a row that cannot be read counts as none.
pub(crate) fn leaves_from(json: &str, complete: bool) -> Option<SummaryTree> {
    let leaves = serde_json::from_str(json).ok()?;
    Some(SummaryTree { leaves, complete })
}
