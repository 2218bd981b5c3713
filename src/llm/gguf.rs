//! GGUF model files: reading the header and metadata, with errors that name the file.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use candle_core::quantized::gguf_file;

use crate::{Error, Result};

/// A GGUF file's header: metadata and tensor directory, without the weights.
pub struct GgufFile {
    pub path: PathBuf,
    pub content: gguf_file::Content,
}

impl std::fmt::Debug for GgufFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GgufFile")
            .field("path", &self.path)
            .field("architecture", &self.architecture().ok())
            .field("tensors", &self.content.tensor_infos.len())
            .finish()
    }
}

impl GgufFile {
    /// Read the header of the GGUF file at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let file = File::open(&path).map_err(|e| Error::io(&path, e))?;
        let len = file.metadata().map_err(|e| Error::io(&path, e))?.len();
        let mut reader = BufReader::new(file);
        let mut magic = [0u8; 4];
        if reader.read_exact(&mut magic).is_err() || &magic != b"GGUF" {
            return Err(Error::model_format(
                &path,
                "not a GGUF file (it does not start with the GGUF magic bytes)",
            ));
        }
        reader
            .seek(SeekFrom::Start(0))
            .map_err(|e| Error::io(&path, e))?;
        let content = gguf_file::Content::read(&mut reader)
            .map_err(|e| Error::model_format(&path, format!("unreadable GGUF header: {e}")))?;
        // A truncated download has a complete header but missing weights.
        let needed = content
            .tensor_infos
            .values()
            .map(|t| {
                let elems = t.shape.elem_count();
                let bs = t.ggml_dtype.block_size();
                content.tensor_data_offset
                    + t.offset
                    + (elems / bs * t.ggml_dtype.type_size()) as u64
            })
            .max()
            .unwrap_or(content.tensor_data_offset);
        if needed > len {
            return Err(Error::model_format(
                &path,
                format!("truncated: the tensors need {needed} bytes but the file has {len}"),
            ));
        }
        Ok(Self { path, content })
    }

    /// The metadata value `key`, if present.
    pub fn get(&self, key: &str) -> Option<&gguf_file::Value> {
        self.content.metadata.get(key)
    }

    /// All metadata.
    pub fn metadata(&self) -> &HashMap<String, gguf_file::Value> {
        &self.content.metadata
    }

    /// A string metadata value, or an error naming the key.
    pub fn get_str(&self, key: &str) -> Result<&str> {
        match self.get(key) {
            Some(v) => v
                .to_string()
                .map(|s| s.as_str())
                .map_err(|e| Error::model_format(&self.path, format!("metadata {key}: {e}"))),
            None => Err(Error::model_format(
                &self.path,
                format!("metadata key {key} is missing"),
            )),
        }
    }

    /// An integer metadata value of any width, or an error naming the key.
    pub fn get_u64(&self, key: &str) -> Result<u64> {
        use gguf_file::Value as V;
        let v = self.get(key).ok_or_else(|| {
            Error::model_format(&self.path, format!("metadata key {key} is missing"))
        })?;
        let n = match v {
            V::U8(x) => *x as u64,
            V::U16(x) => *x as u64,
            V::U32(x) => *x as u64,
            V::U64(x) => *x,
            V::I8(x) if *x >= 0 => *x as u64,
            V::I16(x) if *x >= 0 => *x as u64,
            V::I32(x) if *x >= 0 => *x as u64,
            V::I64(x) if *x >= 0 => *x as u64,
            other => {
                return Err(Error::model_format(
                    &self.path,
                    format!("metadata {key} is not a non-negative integer: {other:?}"),
                ))
            }
        };
        Ok(n)
    }

    /// `general.architecture`, e.g. `llama`.
    pub fn architecture(&self) -> Result<&str> {
        self.get_str("general.architecture")
    }

    /// `<arch>.context_length`.
    pub fn context_length(&self) -> Result<usize> {
        let arch = self.architecture()?;
        Ok(self.get_u64(&format!("{arch}.context_length"))? as usize)
    }
}
