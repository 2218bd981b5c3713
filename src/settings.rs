//! User settings: what the settings dialog edits, kept as JSON in the data directory.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// Everything a user can set. Unknown or missing fields take their defaults, so an
/// older settings file keeps working.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// Response mode used when a request names none.
    pub mode: String,
    /// GGUF file name in the models folder (or a path).
    pub model: String,
    /// Embedding model folder name in the models folder (or a path). The index
    /// records which model made its vectors; changing it means re-embedding.
    pub embedder: String,
    /// Source nodes kept after fusion.
    pub top_k: usize,
    pub temperature: f64,
    /// Penalty on recently generated tokens (1 is none); small models loop without it.
    pub repeat_penalty: f32,
    pub max_tokens: usize,
    /// Fusion mode: reciprocal_rerank, relative_score, dist_based_score, simple.
    pub fusion: String,
    /// Queries per question including the original; 1 turns query generation off.
    pub num_queries: usize,
    /// Structured answer filtering for refine and compact.
    pub structured_answer_filtering: bool,
    /// Custom QA (and summary) template; `None` for LlamaIndex's default.
    pub text_qa_template: Option<String>,
    /// Extra template variables.
    pub template_vars: BTreeMap<String, String>,
    /// Run the independent summaries of a tree_summarize level as one batch on the
    /// local model (same text as one by one, less time).
    pub batch_tree: bool,
    /// How a question in a conversation uses the history: condense_plus_context,
    /// condense_question, or off (each question alone).
    pub chat_mode: String,
    /// Answer with numbered sources and `[N]` citations (LlamaIndex's
    /// CitationQueryEngine).
    pub cite_sources: bool,
    /// Tokens per numbered source when citing (`citation_chunk_size`).
    pub citation_chunk_size: usize,
    /// Let the LLM rerank the fused sources (LlamaIndex's LLMRerank) before answering.
    pub rerank: bool,
    /// Sources read by the reranker per LLM call (`choice_batch_size`).
    pub rerank_batch_size: usize,
    /// Candidates retrieved for the reranker to choose `top_k` from.
    pub rerank_candidates: usize,
    /// The "not found" threshold: when the closest passage's cosine similarity to the
    /// question is below it, the answer says the documents don't seem to cover the
    /// question instead of letting the model improvise. `None` uses the threshold
    /// calibrated for the embedding model ([`crate::retrieve::relevance`]); `0` turns
    /// the check off.
    pub not_found_threshold: Option<f32>,
    /// Recognize the text of scanned pages (pages without a text layer) with
    /// Tesseract while indexing.
    pub ocr: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            mode: "compact".into(),
            model: crate::models::DEFAULT_LLM.into(),
            embedder: crate::models::DEFAULT_EMBEDDER.into(),
            top_k: 4,
            temperature: 0.0,
            repeat_penalty: 1.15,
            max_tokens: 256,
            fusion: "reciprocal_rerank".into(),
            num_queries: 1,
            structured_answer_filtering: false,
            text_qa_template: None,
            template_vars: BTreeMap::new(),
            batch_tree: true,
            chat_mode: "condense_plus_context".into(),
            cite_sources: false,
            citation_chunk_size: crate::chat::citation::CHUNK_SIZE,
            rerank: false,
            rerank_batch_size: crate::chat::rerank::BATCH_SIZE,
            rerank_candidates: 8,
            not_found_threshold: None,
            ocr: true,
        }
    }
}

const MODES: [&str; 7] = [
    "refine",
    "compact",
    "tree_summarize",
    "simple_summarize",
    "no_text",
    "accumulate",
    "compact_accumulate",
];
const FUSIONS: [&str; 4] = [
    "reciprocal_rerank",
    "relative_score",
    "dist_based_score",
    "simple",
];

impl Settings {
    /// Check ranges and names; the message says which field is wrong.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::Invalid(m));
        if !MODES.contains(&self.mode.as_str()) {
            return bad(format!("unknown response mode '{}'", self.mode));
        }
        if !FUSIONS.contains(&self.fusion.as_str()) {
            return bad(format!("unknown fusion mode '{}'", self.fusion));
        }
        if !(1..=100).contains(&self.top_k) {
            return bad(format!("top_k must be 1..=100, not {}", self.top_k));
        }
        if !(0.0..=2.0).contains(&self.temperature) {
            return bad(format!(
                "temperature must be 0..=2, not {}",
                self.temperature
            ));
        }
        if !(1.0..=2.0).contains(&self.repeat_penalty) {
            return bad(format!(
                "repeat_penalty must be 1..=2, not {}",
                self.repeat_penalty
            ));
        }
        if !(1..=8192).contains(&self.max_tokens) {
            return bad(format!(
                "max_tokens must be 1..=8192, not {}",
                self.max_tokens
            ));
        }
        if !(1..=10).contains(&self.num_queries) {
            return bad(format!(
                "num_queries must be 1..=10, not {}",
                self.num_queries
            ));
        }
        self.chat_mode.parse::<crate::chat::ChatMode>()?;
        if !(32..=4096).contains(&self.citation_chunk_size) {
            return bad(format!(
                "citation_chunk_size must be 32..=4096, not {}",
                self.citation_chunk_size
            ));
        }
        if !(1..=20).contains(&self.rerank_batch_size) {
            return bad(format!(
                "rerank_batch_size must be 1..=20, not {}",
                self.rerank_batch_size
            ));
        }
        if !(1..=100).contains(&self.rerank_candidates) {
            return bad(format!(
                "rerank_candidates must be 1..=100, not {}",
                self.rerank_candidates
            ));
        }
        if let Some(t) = self.not_found_threshold {
            if !(0.0..=1.0).contains(&t) {
                return bad(format!(
                    "not_found_threshold must be 0..=1 (0 turns the check off), not {t}"
                ));
            }
        }
        // A custom template must fit every response mode it can be used with.
        if let Some(t) = &self.text_qa_template {
            use crate::synth::Synthesizer as _;
            for mode in MODES {
                crate::synth::Builtin {
                    mode: mode.parse()?,
                    templates: crate::synth::Templates::custom(crate::synth::Template::new(
                        t.clone(),
                    )),
                    answer_filter: false,
                }
                .check(&self.template_vars)?;
            }
        }
        if self.model.trim().is_empty() {
            return bad("model must name a GGUF file".into());
        }
        if self.embedder.trim().is_empty() {
            return bad("embedder must name an embedding model folder".into());
        }
        Ok(())
    }

    /// Read `path`; a missing file gives the defaults, a broken one an error.
    pub fn load(path: &Path) -> Result<Self> {
        match std::fs::read_to_string(path) {
            Ok(text) => serde_json::from_str(&text)
                .map_err(|e| Error::Invalid(format!("{}: {e}", path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(e) => Err(Error::io(path, e)),
        }
    }

    /// Write atomically (temp file + rename), so a crash never leaves half a file.
    pub fn save(&self, path: &Path) -> Result<()> {
        self.validate()?;
        let tmp = path.with_extension("json.tmp");
        let text = serde_json::to_string_pretty(self)
            .map_err(|e| Error::Invalid(format!("settings: {e}")))?;
        std::fs::write(&tmp, text).map_err(|e| Error::io(&tmp, e))?;
        std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("settings.json");
        assert_eq!(Settings::load(&p).unwrap(), Settings::default());
        let mut s = Settings {
            top_k: 7,
            ..Settings::default()
        };
        s.template_vars
            .insert("tone_name".into(), "a Shakespeare play".into());
        s.save(&p).unwrap();
        assert_eq!(Settings::load(&p).unwrap(), s);
    }

    #[test]
    fn bad_values_are_named() {
        let s = Settings {
            mode: "telepathy".into(),
            ..Settings::default()
        };
        assert!(s.validate().unwrap_err().to_string().contains("telepathy"));
        let s = Settings {
            top_k: 0,
            ..Settings::default()
        };
        assert!(s.validate().unwrap_err().to_string().contains("top_k"));
        let s = Settings {
            not_found_threshold: Some(1.5),
            ..Settings::default()
        };
        assert!(s
            .validate()
            .unwrap_err()
            .to_string()
            .contains("not_found_threshold"));
        let s = Settings {
            text_qa_template: Some("Answer {query_str} please".into()),
            ..Settings::default()
        };
        let e = s.validate().unwrap_err().to_string();
        assert!(e.contains("{context_str}"), "{e}");
        let s = Settings {
            text_qa_template: Some("{context_str}\n{query_str} in {tone}".into()),
            ..Settings::default()
        };
        assert!(s.validate().unwrap_err().to_string().contains("tone"));
        let mut s = Settings {
            text_qa_template: Some("{context_str}\n{query_str} in {tone}".into()),
            ..Settings::default()
        };
        s.template_vars.insert("tone".into(), "verse".into());
        s.validate().unwrap();
    }
}
