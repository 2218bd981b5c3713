//! JSON-lines files (one object a line), as the shared corpus and fixtures use.

use std::path::Path;

use serde::de::DeserializeOwned;

use crate::{Error, Result};

/// Read every non-blank line of `path` as a `T`; an error names the file and line.
pub fn read<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l)
                .map_err(|e| Error::Invalid(format!("{} line {}: {e}", path.display(), i + 1)))
        })
        .collect()
}
