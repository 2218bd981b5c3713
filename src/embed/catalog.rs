//! What an embedding model folder is, read without loading the weights: the entries
//! of Settings → Embedding model and `quire models`.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::bert::BertFiles;
use super::encoder::Pooling;

/// One embedding model folder as a person chooses among them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EmbedderInfo {
    /// Folder name: what Settings stores, and what the index records beside each
    /// vector.
    pub name: String,
    pub path: String,
    /// Size of the weights file.
    pub bytes: u64,
    /// Vector length.
    pub dims: Option<usize>,
    pub layers: Option<usize>,
    /// The languages the model card declares (empty: not declared).
    pub languages: Vec<String>,
    pub pooling: Option<Pooling>,
    /// Why the folder cannot be used, when it cannot.
    pub error: Option<String>,
}

/// Describe the model folder `dir`. Never fails: a folder that cannot be used says
/// why in [`EmbedderInfo::error`].
pub fn describe(dir: &Path) -> EmbedderInfo {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let bytes = super::bert::weights_file(dir)
        .and_then(|w| std::fs::metadata(w).ok())
        .map_or(0, |m| m.len());
    let mut info = EmbedderInfo {
        name,
        path: dir.display().to_string(),
        bytes,
        dims: None,
        layers: None,
        languages: Vec::new(),
        pooling: None,
        error: None,
    };
    match BertFiles::open(dir) {
        Ok(f) => {
            info.dims = Some(f.config.hidden_size);
            info.layers = Some(f.config.num_hidden_layers);
            info.languages = f.languages;
            info.pooling = Some(f.pooling);
        }
        Err(e) => info.error = Some(e.to_string()),
    }
    info
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_that_is_not_a_bert_model_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let m = dir.path().join("not-bert");
        std::fs::create_dir(&m).unwrap();
        std::fs::write(m.join("config.json"), b"{\"model_type\": \"llama\"}").unwrap();
        std::fs::write(m.join("model.safetensors"), b"").unwrap();
        let info = describe(&m);
        assert_eq!(info.name, "not-bert");
        assert!(info.dims.is_none());
        let err = info.error.unwrap();
        assert!(err.contains("config.json"), "{err}");
    }

    #[test]
    fn pooling_comes_from_the_folder() {
        let dir = tempfile::tempdir().unwrap();
        let pool = dir.path().join("1_Pooling");
        std::fs::create_dir(&pool).unwrap();
        std::fs::write(
            pool.join("config.json"),
            br#"{"word_embedding_dimension": 512, "pooling_mode_cls_token": true,
                "pooling_mode_mean_tokens": false}"#,
        )
        .unwrap();
        assert_eq!(
            super::super::bert::read_pooling(dir.path()).unwrap(),
            Pooling::Cls
        );
        std::fs::write(
            pool.join("config.json"),
            br#"{"pooling_mode_max_tokens": true}"#,
        )
        .unwrap();
        let err = super::super::bert::read_pooling(dir.path()).unwrap_err();
        assert!(err.to_string().contains("pooling"), "{err}");
    }
}
