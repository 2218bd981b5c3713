//! What a GGUF file is, read from its header without loading the weights: the
//! entries of Settings → Model and `quire models`.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::arch::{self, Arch};
use super::gguf::GgufFile;

/// One GGUF file as a person chooses among them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LlmInfo {
    /// File name: what Settings stores.
    pub name: String,
    pub path: String,
    pub bytes: u64,
    /// `general.name`, when the file has one.
    pub title: Option<String>,
    /// `general.architecture`.
    pub architecture: Option<String>,
    /// `general.size_label`, the model's size as its makers name it (`0.5B`).
    pub size_label: Option<String>,
    /// Weights in the file, summed over the tensors (an untied output matrix
    /// counts).
    pub parameters: Option<u64>,
    /// The file's quantization as llama.cpp names it (`general.file_type`, e.g.
    /// `Q4_K_M`), else the type most of the weights use.
    pub quantization: Option<String>,
    /// Training context window, in tokens.
    pub context: Option<usize>,
    /// `fast` (Quire's own kernels, every supported architecture) or `unsupported`.
    pub speed: Option<String>,
    /// Whether the file carries a chat template (an instruct model); a base model
    /// answers through a plain prompt and follows instructions poorly.
    pub chat_template: bool,
    /// Why the file cannot be used, when it cannot (not a GGUF, truncated, ...).
    pub error: Option<String>,
}

/// Describe the GGUF file at `path`. Never fails: a file that cannot be read says why
/// in [`LlmInfo::error`].
pub fn describe(path: &Path) -> LlmInfo {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let mut info = LlmInfo {
        name,
        path: path.display().to_string(),
        bytes,
        title: None,
        architecture: None,
        size_label: None,
        parameters: None,
        quantization: None,
        context: None,
        speed: None,
        chat_template: false,
        error: None,
    };
    let g = match GgufFile::open(path) {
        Ok(g) => g,
        Err(e) => {
            info.error = Some(e.to_string());
            return info;
        }
    };
    info.title = g.get_str("general.name").ok().map(str::to_owned);
    info.size_label = g.get_str("general.size_label").ok().map(str::to_owned);
    info.chat_template = g.get("tokenizer.chat_template").is_some();
    let infos = &g.content.tensor_infos;
    info.parameters = Some(infos.values().map(|t| t.shape.elem_count() as u64).sum());
    let mut by_type: BTreeMap<String, u64> = BTreeMap::new();
    for t in infos.values() {
        *by_type.entry(format!("{:?}", t.ggml_dtype)).or_default() += t.shape.elem_count() as u64;
    }
    info.quantization = g
        .get_u64("general.file_type")
        .ok()
        .and_then(file_type_name)
        .map(str::to_owned)
        .or_else(|| by_type.into_iter().max_by_key(|(_, n)| *n).map(|(t, _)| t));
    match g.architecture() {
        Ok(name) => {
            let known = Arch::parse(name);
            info.speed = Some(known.map_or("unsupported", Arch::speed).to_owned());
            info.context = g.context_length().ok();
            if known.is_none() {
                info.error = Some(format!(
                    "architecture {name:?} is not supported (Quire runs {})",
                    arch::supported()
                ));
            }
            info.architecture = Some(name.to_owned());
        }
        Err(e) => info.error = Some(e.to_string()),
    }
    info
}

/// llama.cpp's name of a `general.file_type` (its `llama_ftype`).
fn file_type_name(t: u64) -> Option<&'static str> {
    Some(match t {
        0 => "F32",
        1 => "F16",
        2 => "Q4_0",
        3 => "Q4_1",
        7 => "Q8_0",
        8 => "Q5_0",
        9 => "Q5_1",
        10 => "Q2_K",
        11 => "Q3_K_S",
        12 => "Q3_K_M",
        13 => "Q3_K_L",
        14 => "Q4_K_S",
        15 => "Q4_K_M",
        16 => "Q5_K_S",
        17 => "Q5_K_M",
        18 => "Q6_K",
        32 => "BF16",
        _ => return None,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_is_not_a_gguf_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("notes.gguf");
        std::fs::write(&p, b"these are not weights").unwrap();
        let info = describe(&p);
        assert_eq!(info.name, "notes.gguf");
        assert_eq!(info.bytes, 21);
        assert!(info.architecture.is_none());
        let err = info.error.unwrap();
        assert!(err.contains("not a GGUF file"), "{err}");
    }
}
