//! The files of a sentence-transformers BERT model (all-MiniLM-L6-v2 by default):
//! `config.json`, `tokenizer.json`, `model.safetensors`.

use std::path::{Path, PathBuf};

use candle_transformers::models::bert::Config;
use tokenizers::Tokenizer;

use crate::{Error, Result};

/// A BERT model folder with its config and tokenizer read.
pub struct BertFiles {
    pub dir: PathBuf,
    pub config: Config,
    pub tokenizer: Tokenizer,
    pub weights: PathBuf,
}

impl BertFiles {
    /// Read `config.json` and `tokenizer.json` from `dir`, and check that
    /// `model.safetensors` is there.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self> {
        let dir = dir.as_ref().to_path_buf();
        let config_path = dir.join("config.json");
        let text = std::fs::read_to_string(&config_path).map_err(|e| Error::io(&config_path, e))?;
        let config: Config = serde_json::from_str(&text).map_err(|e| {
            Error::model_format(&config_path, format!("not a BERT config.json: {e}"))
        })?;
        let tok_path = dir.join("tokenizer.json");
        let tokenizer = Tokenizer::from_file(&tok_path).map_err(|e| {
            Error::model_format(&tok_path, format!("not a tokenizers tokenizer.json: {e}"))
        })?;
        let weights = dir.join("model.safetensors");
        if !weights.is_file() {
            return Err(Error::ModelMissing {
                path: weights,
                hint: "run models/fetch.sh".into(),
            });
        }
        Ok(Self {
            dir,
            config,
            tokenizer,
            weights,
        })
    }
}
