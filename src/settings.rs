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
    /// GGUF file name in the models folder (or a path), or `auto`: the model chosen
    /// for this machine from the installed models' calibrations (`llm::machine`).
    pub model: String,
    /// Embedding model folder name in the models folder (or a path). The index
    /// records which model made its vectors; changing it means re-embedding.
    pub embedder: String,
    /// Where the models run: `auto` (a GPU this build has and that initializes, else
    /// the CPU), `cpu`, `cuda`, `cuda:N` or `metal`.
    pub device: String,
    /// Source nodes kept after fusion.
    pub top_k: usize,
    pub temperature: f64,
    /// Penalty on recently generated tokens (1 is none); small models loop without it.
    pub repeat_penalty: f32,
    pub max_tokens: usize,
    /// Cap on the local model's context window in tokens; 0: the model's own, up to
    /// [`crate::llm::model::DEFAULT_MAX_CONTEXT`]. Smaller uses less memory and time
    /// per long prompt (a whole document is read in more, shorter parts).
    pub context_window: usize,
    /// Fusion mode: reciprocal_rerank, relative_score, dist_based_score, simple.
    pub fusion: String,
    /// Queries per question including the original; 1 turns query generation off.
    pub num_queries: usize,
    /// Structured answer filtering for refine and compact.
    pub structured_answer_filtering: bool,
    /// Custom QA template (`{context_str}`, `{query_str}`); `None` for LlamaIndex's
    /// default. simple_summarize uses it too unless `simple_template` is set.
    pub text_qa_template: Option<String>,
    /// Custom refine template (`{query_str}`, `{existing_answer}`, `{context_msg}`),
    /// used by refine and compact; `None` for LlamaIndex's default.
    pub refine_template: Option<String>,
    /// Custom summary template (`{context_str}`, `{query_str}`), used by
    /// tree_summarize; `None` for LlamaIndex's default.
    pub summary_template: Option<String>,
    /// Custom template for simple_summarize (`{context_str}`, `{query_str}`); `None`
    /// uses the QA template, as LlamaIndex's SimpleSummarize does.
    pub simple_template: Option<String>,
    /// Custom query-generation prompt for query variants (`{query}`, and
    /// `{num_queries}`); `None` for LlamaIndex's QueryFusionRetriever prompt.
    pub query_gen_template: Option<String>,
    /// Response modes a person composed from the built-in modes' building blocks;
    /// they are listed beside the built-in ones.
    pub custom_modes: Vec<CustomMode>,
    /// Extra template variables.
    pub template_vars: BTreeMap<String, String>,
    /// Run the independent summaries of a tree_summarize level as one batch on the
    /// local model (same text as one by one, less time).
    pub batch_tree: bool,
    /// How a question in a conversation uses the history: condense_plus_context,
    /// condense_question, or off (each question alone).
    pub chat_mode: String,
    /// How a condensed follow-up is searched (`chat::follow_up`): `thread` (the
    /// condensed question fused with the follow-up as typed and the previous
    /// question) or `condensed` (the condensed question alone, as LlamaIndex).
    pub follow_up_search: String,
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
    /// LlamaIndex's SentenceEmbeddingOptimizer before the answer (`chat::optimizer`):
    /// keep the top share of each source's sentences (`percentile_cutoff`, 0 to 1);
    /// `None` with no threshold: off.
    pub optimizer_percentile: Option<f64>,
    /// The optimizer's `threshold_cutoff`: keep the sentences whose cosine to the
    /// question is over it.
    pub optimizer_threshold: Option<f64>,
    /// The "not found" threshold: when the closest passage's cosine similarity to the
    /// question is below it, the answer says the documents don't seem to cover the
    /// question instead of letting the model improvise. `None` uses the threshold
    /// calibrated for the embedding model ([`crate::retrieve::relevance`]); `0` turns
    /// the check off.
    pub not_found_threshold: Option<f32>,
    /// Recognize the text of scanned pages (pages without a text layer) with
    /// Tesseract while indexing.
    pub ocr: bool,
    /// An OpenAI-compatible model server to answer with instead of the local GGUF
    /// (`http(s)://host:port`, with or without `/v1`); empty: the local `model`.
    pub llm_server: String,
    /// The model to ask that server for; empty: the first one it lists.
    pub llm_server_model: String,
    /// Its API key (sent as a bearer token), if it wants one.
    pub llm_server_key: Option<String>,
    /// Its context window in tokens; 0: ask the server (else LlamaIndex's 3,900).
    pub llm_server_context: usize,
    /// A GGUF or `tokenizer.json` to count tokens with, for a server without a
    /// tokenizer endpoint.
    pub llm_server_tokenizer: Option<String>,
    /// Whether the server's model is a chat model (`/v1/chat/completions`, the
    /// server applies its chat template) or a completion one (`/v1/completions`).
    pub llm_server_chat: bool,
    /// Speculative decoding of greedy answers on the local model: `auto` (prompt
    /// lookup, and where it has no proposal a smaller installed GGUF of the same
    /// vocabulary, when there is one), `off`, `lookup` (prompt lookup, no draft
    /// model), or the file name (or path) of the GGUF that drafts. The answer is the same either way, token for
    /// token; only its speed changes.
    pub draft: String,
    /// Keep the index in this PostgreSQL database (`postgres://…`, with pgvector),
    /// shared by every Quire pointed at it; empty: the SQLite file in the data
    /// directory. Read when Quire starts (`--store` overrides it).
    pub store: String,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            mode: "compact".into(),
            model: crate::models::DEFAULT_LLM.into(),
            embedder: crate::models::DEFAULT_EMBEDDER.into(),
            device: "auto".into(),
            top_k: 4,
            temperature: 0.0,
            repeat_penalty: 1.15,
            max_tokens: 256,
            context_window: 0,
            fusion: "reciprocal_rerank".into(),
            num_queries: 1,
            structured_answer_filtering: false,
            text_qa_template: None,
            refine_template: None,
            summary_template: None,
            simple_template: None,
            query_gen_template: None,
            custom_modes: Vec::new(),
            template_vars: BTreeMap::new(),
            batch_tree: true,
            chat_mode: "condense_plus_context".into(),
            follow_up_search: crate::chat::follow_up::FollowUpSearch::default()
                .name()
                .into(),
            cite_sources: false,
            citation_chunk_size: crate::chat::citation::CHUNK_SIZE,
            rerank: false,
            rerank_batch_size: crate::chat::rerank::BATCH_SIZE,
            rerank_candidates: 8,
            optimizer_percentile: None,
            optimizer_threshold: None,
            not_found_threshold: None,
            ocr: true,
            llm_server: String::new(),
            llm_server_model: String::new(),
            llm_server_key: None,
            llm_server_context: 0,
            llm_server_tokenizer: None,
            llm_server_chat: true,
            store: String::new(),
            draft: "auto".into(),
        }
    }
}

/// A response mode a person composed in Settings from the building blocks the
/// built-in modes are made of ([`crate::synth::Blocks`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CustomMode {
    /// The name the mode dropdown, `--mode` and the API use (letters, digits, `_`, `-`).
    pub name: String,
    /// One line for the dropdown; empty says what the blocks do.
    #[serde(default)]
    pub description: String,
    #[serde(flatten)]
    pub blocks: crate::synth::Blocks,
}

impl CustomMode {
    /// The description shown: the person's, or what the blocks do.
    pub fn describe(&self) -> String {
        if self.description.trim().is_empty() {
            self.blocks.describe()
        } else {
            self.description.trim().to_string()
        }
    }
}

/// Whether `name` can name a mode: 1–40 letters, digits, `_` or `-`.
/// Quire's own response mode: the source sentences that best answer the question,
/// quoted, with no LLM call.
pub const EXTRACTIVE: &str = "extractive";

pub fn valid_mode_name(name: &str) -> bool {
    (1..=40).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}
const FUSIONS: [&str; 4] = [
    "reciprocal_rerank",
    "relative_score",
    "dist_based_score",
    "simple",
];

/// The context window caps a person may set (0 aside): a prompt needs room for a
/// template, a passage and an answer.
const CONTEXT_WINDOWS: std::ops::RangeInclusive<usize> = 512..=131_072;

impl Settings {
    /// Check ranges and names; the message says which field is wrong.
    pub fn validate(&self) -> Result<()> {
        self.validate_with(&[])
    }

    /// [`Settings::validate`], with the names of modes a library registered on the
    /// engine also allowed as the default mode.
    pub fn validate_with(&self, library_modes: &[String]) -> Result<()> {
        let bad = |m: String| Err(Error::Invalid(m));
        let builtin = |n: &str| {
            n == EXTRACTIVE
                || crate::synth::ResponseMode::ALL
                    .iter()
                    .any(|m| m.name() == n)
        };
        let mut custom_names: Vec<&str> = Vec::new();
        for c in &self.custom_modes {
            if !valid_mode_name(&c.name) {
                return bad(format!(
                    "custom mode name {:?}: use 1-40 letters, digits, '_' or '-'",
                    c.name
                ));
            }
            if builtin(&c.name)
                || library_modes.contains(&c.name)
                || custom_names.contains(&c.name.as_str())
            {
                return bad(format!("custom mode name '{}' is already taken", c.name));
            }
            c.blocks
                .validate()
                .map_err(|e| Error::Invalid(format!("custom mode '{}': {e}", c.name)))?;
            custom_names.push(&c.name);
        }
        if !builtin(&self.mode)
            && !custom_names.contains(&self.mode.as_str())
            && !library_modes.contains(&self.mode)
        {
            return bad(format!("unknown response mode '{}'", self.mode));
        }
        if !FUSIONS.contains(&self.fusion.as_str()) {
            return bad(format!("unknown fusion mode '{}'", self.fusion));
        }
        if self.draft.trim().is_empty() {
            return bad("draft must be auto, off, lookup or a GGUF file name".into());
        }
        if self.context_window != 0 && !CONTEXT_WINDOWS.contains(&self.context_window) {
            return bad(format!(
                "context_window must be 0 (the model's own) or {}..={} tokens, not {}",
                CONTEXT_WINDOWS.start(),
                CONTEXT_WINDOWS.end(),
                self.context_window
            ));
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
        self.follow_up_search
            .parse::<crate::chat::follow_up::FollowUpSearch>()?;
        if !(32..=4096).contains(&self.citation_chunk_size) {
            return bad(format!(
                "citation_chunk_size must be 32..=4096, not {}",
                self.citation_chunk_size
            ));
        }
        if let Some(p) = self.optimizer_percentile {
            if !(p > 0.0 && p <= 1.0) {
                return bad(format!(
                    "optimizer_percentile must be over 0 and at most 1, not {p}"
                ));
            }
        }
        if let Some(t) = self.optimizer_threshold {
            if !(-1.0..=1.0).contains(&t) {
                return bad(format!("optimizer_threshold must be -1..=1, not {t}"));
            }
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
        // Every template must fit every mode that uses it: the built-in modes use
        // them all, the custom modes as their blocks say.
        {
            use crate::synth::Synthesizer as _;
            let templates = self.templates();
            let blocks = crate::synth::ResponseMode::ALL
                .iter()
                .map(|m| (m.name().to_string(), crate::synth::Blocks::of(*m)))
                .chain(self.custom_modes.iter().map(|c| (c.name.clone(), c.blocks)));
            for (name, blocks) in blocks {
                crate::synth::Composed {
                    blocks,
                    templates: templates.clone(),
                    answer_filter: false,
                }
                .check(&self.template_vars)
                .map_err(|e| match e {
                    Error::Template(m) => Error::Template(format!("{m} (mode {name})")),
                    e => e,
                })?;
            }
        }
        if let Some(t) = &self.query_gen_template {
            crate::synth::Template::new(t.clone()).check(
                "query-generation",
                &["query"],
                &["query", "num_queries"],
                &self.template_vars,
            )?;
        }
        if self.model.trim().is_empty() {
            return bad("model must name a GGUF file".into());
        }
        let server = self.llm_server.trim();
        if !(server.is_empty() || server.starts_with("http://") || server.starts_with("https://")) {
            return bad(format!(
                "llm_server {server:?}: give it as http://host:port or https://host:port \
                 (empty: the local model)"
            ));
        }
        if self.llm_server_context > 10_000_000 {
            return bad(format!(
                "llm_server_context must be 0 (ask the server) or a token count, not {}",
                self.llm_server_context
            ));
        }
        let store = self.store.trim();
        if !(store.is_empty() || crate::store::is_postgres_url(store)) {
            return bad(format!(
                "store {store:?}: give a postgres://user@host:port/database URL (empty: the \
                 SQLite index in the data directory)"
            ));
        }
        if self.embedder.trim().is_empty() {
            return bad("embedder must name an embedding model folder".into());
        }
        Ok(())
    }

    /// The model server to answer with, when one is set.
    pub fn remote_llm(&self) -> Option<crate::llm::RemoteConfig> {
        let url = self.llm_server.trim();
        (!url.is_empty()).then(|| crate::llm::RemoteConfig {
            url: url.to_string(),
            model: self.llm_server_model.trim().to_string(),
            api_key: self.llm_server_key.clone(),
            context_window: self.llm_server_context,
            tokenizer: self
                .llm_server_tokenizer
                .as_deref()
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(std::path::PathBuf::from),
            chat: self.llm_server_chat,
        })
    }

    /// The response synthesizers' templates these settings choose.
    pub fn templates(&self) -> crate::synth::Templates {
        use crate::synth::Template;
        let mut t = crate::synth::Templates::default();
        if let Some(q) = &self.text_qa_template {
            t.text_qa = Template::new(q.clone());
        }
        if let Some(r) = &self.refine_template {
            t.refine = Template::new(r.clone());
        }
        if let Some(s) = &self.summary_template {
            t.summary = Template::new(s.clone());
        }
        t.simple = self.simple_template.clone().map(Template::new);
        t
    }

    /// The custom mode named `name`.
    pub fn custom_mode(&self, name: &str) -> Option<&CustomMode> {
        self.custom_modes.iter().find(|c| c.name == name)
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
        self.write(path)
    }

    /// [`Settings::save`] without validating (for a caller that validated already,
    /// e.g. with a library's registered modes).
    pub fn write(&self, path: &Path) -> Result<()> {
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
        for (window, ok) in [
            (0, true),
            (511, false),
            (512, true),
            (2048, true),
            (200_000, false),
        ] {
            let s = Settings {
                context_window: window,
                ..Settings::default()
            };
            match s.validate() {
                Ok(()) => assert!(ok, "{window} accepted"),
                Err(e) => {
                    assert!(!ok, "{window} refused: {e}");
                    assert!(e.to_string().contains("context_window"), "{e}");
                }
            }
        }
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
