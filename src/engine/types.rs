//! The engine's public types: everything a shell (the CLI, the HTTP server, the Tauri
//! window) names. Requests and their options, the events of an ask and of indexing,
//! views of documents, conversations, settings and status. Shells use these and
//! [`Engine`](super::Engine)'s methods, never the types of `store`, `retrieve` or
//! `synth` directly: the few of those a shell must name are re-exported here.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use crate::cpu::Cancel;
pub use crate::ingest::IndexEvent;
use crate::llm::{DeviceChoice, RemoteConfig};
pub use crate::retrieve::relevance::Relevance;
pub use crate::retrieve::{FusionMode, RetrieveOptions, RetrieverKind};
pub use crate::settings::{CustomMode, Settings};
pub use crate::store::collections::Collection;
pub use crate::store::conversations::{Conversation, ConversationInfo, Message};
pub use crate::store::{DocStatus, QueueState, Role};
pub use crate::synth::{Blocks, LlmCall};
use crate::{Error, Result};

/// Everything that configures an engine beside its settings: where it keeps its data,
/// and what the command line overrides for it. Two engines in one process can differ.
#[derive(Debug, Clone, Default)]
pub struct EngineConfig {
    /// Holds the index database and settings.
    pub data_dir: PathBuf,
    /// The index database when it is not the SQLite file in `data_dir`: a
    /// `postgres://…` URL (`--store`, `QUIRE_STORE`).
    pub store: Option<String>,
    /// Run the models on this device whatever the settings say (`--device`).
    pub device: Option<DeviceChoice>,
    /// Answer with this OpenAI-compatible server whatever the settings say
    /// (`--llm-server`).
    pub llm_server: Option<RemoteConfig>,
}

impl EngineConfig {
    /// The user's data directory (XDG), or `dir` when given; the store `QUIRE_STORE`
    /// names, if any; nothing overridden.
    pub fn new(dir: Option<PathBuf>) -> Result<Self> {
        let data_dir = dir.or_else(crate::models::data_dir).ok_or_else(|| {
            Error::Invalid("no data directory: set HOME or pass --data-dir".into())
        })?;
        Ok(Self {
            data_dir,
            store: std::env::var("QUIRE_STORE")
                .ok()
                .filter(|s| !s.trim().is_empty()),
            ..Self::default()
        })
    }
}

/// A question as the UI sends it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct AskRequest {
    /// Continue this conversation; `None` starts a new one.
    pub conversation_id: Option<i64>,
    pub question: String,
    /// Response mode; `None` uses the settings' mode.
    pub mode: Option<String>,
    /// This question's departures from the settings.
    pub overrides: AskOverrides,
    /// Ask question message `regenerate` (the conversation's last question) again: the
    /// new answer is kept beside the earlier ones; `question` is not used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regenerate: Option<i64>,
    /// `question` edits question message `replace_from`: that question and every
    /// message after it are removed, and the conversation goes on from `question`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replace_from: Option<i64>,
    /// Which documents to search (all when absent).
    pub scope: Scope,
    /// The conversation before this question, for a client that keeps it itself (the
    /// OpenAI-compatible API): when no `conversation_id` is given, these turns are the
    /// history the chat mode uses (only `user` and `assistant` turns count).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<ChatTurn>,
    /// How to answer: by the question's kind (`auto`), by reading the whole
    /// documents (`whole`), or from the top passages (`search`).
    #[serde(default, skip_serializing_if = "RouteChoice::is_auto")]
    pub route: RouteChoice,
}

/// Whether a question reads whole documents or searches passages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RouteChoice {
    /// By the question's kind ([`super::route::question_kind`]).
    #[default]
    Auto,
    /// Read every page of the documents.
    Whole,
    /// The top retrieved passages.
    Search,
}

impl RouteChoice {
    pub fn is_auto(&self) -> bool {
        *self == RouteChoice::Auto
    }
}

impl std::str::FromStr for RouteChoice {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim() {
            "auto" | "" => Ok(Self::Auto),
            "whole" => Ok(Self::Whole),
            "search" => Ok(Self::Search),
            other => Err(Error::Invalid(format!(
                "unknown route {other:?} (one of: auto, whole, search)"
            ))),
        }
    }
}

/// How a question was answered, as the answer panel's decision line shows it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RouteView {
    /// `whole`, `library` or `search`.
    pub route: String,
    /// The line: "Read all 41 pages of ctex-faq.pdf", "Searched: top 4 passages".
    pub label: String,
    /// The person chose it (not the question's kind).
    #[serde(default)]
    pub forced: bool,
    /// The words of the question that made it a whole-document question.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cue: Option<String>,
    /// The documents read whole.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub documents: Vec<i64>,
    /// Their pages, in all.
    #[serde(default)]
    pub pages: u32,
    /// How they were read: `whole` (in one prompt), `map_reduce`, `cached`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub how: String,
    /// The back matter not read ("the index and references"), which `label` ends
    /// with as " but …"; empty when every page was read.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub passed_over: String,
}

/// One turn of a conversation a client keeps itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatTurn {
    pub role: String,
    pub content: String,
}

/// Which documents a question searches.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Scope {
    /// Every document in the index.
    #[default]
    All,
    /// The documents of one collection.
    Collection { id: i64 },
    /// These documents.
    Documents { ids: Vec<i64> },
}

/// Per-question overrides of the settings (`quire ask --top-k --template --var`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AskOverrides {
    /// Source nodes kept after fusion.
    pub top_k: Option<usize>,
    /// Custom text-QA template; it must use `{context_str}` and `{query_str}`.
    pub template: Option<String>,
    /// Custom refine template (`{query_str}`, `{existing_answer}`, `{context_msg}`).
    pub refine_template: Option<String>,
    /// Custom summary template (tree_summarize).
    pub summary_template: Option<String>,
    /// Custom simple_summarize template.
    pub simple_template: Option<String>,
    /// Custom query-generation prompt (`{query}`, `{num_queries}`).
    pub query_gen_template: Option<String>,
    /// LlamaIndex's structured answer filtering (refine and compact, and custom
    /// modes that refine).
    pub structured_answer_filtering: Option<bool>,
    /// Queries in all, the user's included; above 1 the LLM writes variants.
    pub num_queries: Option<usize>,
    /// Sampling temperature (0 is greedy).
    pub temperature: Option<f64>,
    /// Template variables, over the settings' own.
    pub vars: std::collections::BTreeMap<String, String>,
    /// Most tokens generated per LLM call.
    pub max_tokens: Option<usize>,
    /// How the conversation's history is used (`condense_plus_context`,
    /// `condense_question`, `off`).
    pub chat_mode: Option<String>,
    /// Answer with numbered sources and `[N]` citations.
    pub cite_sources: Option<bool>,
    /// Let the LLM rerank the sources.
    pub rerank: Option<bool>,
}

impl AskOverrides {
    /// `settings` with these overrides applied, validated (`library_modes`: the
    /// modes a program registered on the engine).
    pub fn apply(&self, mut settings: Settings, library_modes: &[String]) -> Result<Settings> {
        if let Some(k) = self.top_k {
            settings.top_k = k;
        }
        let templates = [
            (&self.template, &mut settings.text_qa_template),
            (&self.refine_template, &mut settings.refine_template),
            (&self.summary_template, &mut settings.summary_template),
            (&self.simple_template, &mut settings.simple_template),
            (&self.query_gen_template, &mut settings.query_gen_template),
        ];
        for (given, setting) in templates {
            if let Some(t) = given {
                *setting = Some(t.clone());
            }
        }
        if let Some(f) = self.structured_answer_filtering {
            settings.structured_answer_filtering = f;
        }
        if let Some(n) = self.num_queries {
            settings.num_queries = n;
        }
        if let Some(t) = self.temperature {
            settings.temperature = t;
        }
        if let Some(m) = self.max_tokens {
            settings.max_tokens = m;
        }
        if let Some(m) = &self.chat_mode {
            settings.chat_mode = m.clone();
        }
        if let Some(c) = self.cite_sources {
            settings.cite_sources = c;
        }
        if let Some(r) = self.rerank {
            settings.rerank = r;
        }
        settings
            .template_vars
            .extend(self.vars.iter().map(|(k, v)| (k.clone(), v.clone())));
        settings.validate_with(library_modes)?;
        Ok(settings)
    }
}

/// One retriever's view of a source: which query found it, at which rank and score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    pub retriever: String,
    pub query_index: usize,
    /// 0-based.
    pub rank: usize,
    pub score: f32,
}

/// A source node as the side panel shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Source {
    pub chunk_id: i64,
    pub doc_id: i64,
    pub file: String,
    pub page_start: u32,
    pub page_end: u32,
    pub score: f32,
    pub text: String,
    pub evidence: Vec<Evidence>,
    /// The LLM reranker's relevance (1–10), when it reranked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerank_score: Option<f32>,
    /// Its text, or part of it, was recognized from a scanned page (OCR).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ocr: bool,
    /// A navigation page's kind — `contents`, `figures`, `index` or `bibliography` —
    /// found from its text's shape; absent for body text. Such sources are demoted
    /// in the ranking, and the Sources panel labels them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<crate::retrieve::PageKind>,
}

/// A numbered source of a citing answer: `[number]` in the answer points at this
/// piece of the source with `chunk_id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Citation {
    pub number: usize,
    pub chunk_id: i64,
    pub text: String,
}

/// Figures of a finished answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AskStats {
    /// The LLM file that answered (none when no LLM ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    pub llm_calls: usize,
    pub prompt_tokens: usize,
    pub output_tokens: usize,
    pub secs: f64,
    pub tokens_per_s: f64,
    /// Seconds spent condensing the follow-up into a standalone question.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condense_secs: Option<f64>,
    /// Seconds spent reranking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerank_secs: Option<f64>,
    /// Speculative decoding over the answer's calls, when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draft: Option<crate::llm::speculative::DraftStats>,
    /// The answer (its last call) stopped at the token limit after this many
    /// tokens, not where the model ended it: the stats line says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut_off_after: Option<usize>,
}

/// What an ask streams, in order: started, queries, sources, then steps with their
/// prompts and tokens, then done (or error / cancelled).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AskEvent {
    Started {
        ask_id: u64,
        conversation_id: i64,
        /// The question's message in the conversation.
        question_id: i64,
    },
    /// The standalone question a follow-up was condensed into: what was searched for.
    Condensed {
        question: String,
    },
    Queries {
        queries: Vec<String>,
    },
    Sources {
        sources: Vec<Source>,
        /// Remarks on the retrieval, e.g. a retriever left out for the language.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        notes: Vec<String>,
        /// What was searched, in words: "All documents", a collection, file names.
        #[serde(default)]
        scope: String,
        /// Whether the documents seem to cover the question; when they don't, no LLM
        /// answers and `sources` are the closest passages.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        relevance: Option<Relevance>,
    },
    /// The source sentences that best answer the question ("From your documents"):
    /// sent with the sources, before any answer is written.
    Quotes {
        quotes: Vec<crate::support::Span>,
    },
    /// Every sentence of the finished answer, checked against the sources.
    Support {
        support: crate::support::Support,
    },
    /// How the question is answered: whole documents or the top passages (sent
    /// before the sources).
    Route {
        route: RouteView,
    },
    /// Pages of the documents read so far by a whole-document answer, and the
    /// seconds left by the pace so far (none before the first part is read).
    Reading {
        file: String,
        pages_read: u32,
        pages: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        secs_left: Option<f64>,
    },
    /// The numbered sources a citing answer's `[N]` markers refer to.
    Citations {
        citations: Vec<Citation>,
    },
    /// A step (one LLM call) begins; `final` marks the one whose text is the answer.
    Step {
        step: usize,
        label: String,
        #[serde(rename = "final")]
        is_final: bool,
    },
    Prompt {
        step: usize,
        prompt: String,
    },
    Token {
        step: usize,
        text: String,
        #[serde(rename = "final")]
        is_final: bool,
    },
    /// A step finished: what the model read (after its chat template), token counts,
    /// structured answer filtering's verdict.
    StepDone {
        call: LlmCall,
    },
    Done {
        answer: String,
        stats: AskStats,
        /// The answer's message in the conversation.
        message_id: i64,
    },
    Error {
        message: String,
    },
    Cancelled,
}

/// What the UI needs to know at start: which models are there, what is missing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Status {
    pub data_dir: String,
    pub llm: Option<String>,
    pub embedder: Option<String>,
    /// Human-readable problems, e.g. a missing model and how to fetch it.
    pub problems: Vec<String>,
    /// Where models are looked for, in order (for a first run without them).
    #[serde(default)]
    pub model_dirs: Vec<String>,
    /// The model file names the settings choose (found or not).
    #[serde(default)]
    pub llm_name: String,
    #[serde(default)]
    pub embedder_name: String,
    /// Where the models run and why: "cuda:0 (auto: CUDA device 0 initialized)",
    /// "cpu (auto: this build has no GPU support …)".
    #[serde(default)]
    pub device: String,
}

/// Settings plus the choices the dialog offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SettingsView {
    #[serde(flatten)]
    pub settings: Settings,
    /// Every GGUF file in the model folders.
    pub models: Vec<crate::llm::catalog::LlmInfo>,
    /// Every embedding model folder in the model folders.
    pub embedders: Vec<crate::embed::catalog::EmbedderInfo>,
    /// Which embedding models made the index's vectors, with their chunk counts.
    pub index_embedders: Vec<IndexEmbedder>,
    /// Every response mode a question can use (built-in, registered, custom).
    #[serde(default)]
    pub modes: Vec<super::ModeInfo>,
    /// LlamaIndex's default templates, for the dialog to show and reset to.
    #[serde(default)]
    pub default_templates: DefaultTemplates,
    /// The index in use now: `sqlite` or `postgres`, and where (no password).
    #[serde(default)]
    pub store_in_use: String,
    /// Each installed model's predicted answer time on this machine and why the
    /// setting `auto` does or does not choose it.
    #[serde(default)]
    pub model_times: Vec<ModelTime>,
    /// What `auto` stands for now; `None` when no installed model can be used.
    #[serde(default)]
    pub auto_model: Option<crate::llm::machine::AutoModel>,
    /// The background calibration `auto` waits for.
    #[serde(default)]
    pub calibration: super::CalibrationStatus,
}

/// One installed model as the choice for this machine sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelTime {
    /// The model file's name.
    pub name: String,
    /// The predicted median compact answer in seconds; `None` until calibrated (or
    /// when it cannot be).
    pub predicted_secs: Option<f64>,
    /// Whether it has a calibration on this machine (CPU, threads, file).
    pub calibrated: bool,
    /// Whether the choice picks it (among the calibrated models).
    pub chosen: bool,
    /// The reason's kind (`chosen`, `chosen_fastest`, `too_slow`, `worse`, `slower`,
    /// `unusable`, `not_calibrated`) and in words.
    pub reason: String,
    pub why: String,
}

/// The default text of each customizable template.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DefaultTemplates {
    pub text_qa_template: String,
    pub refine_template: String,
    pub summary_template: String,
    /// simple_summarize's default is the QA template.
    pub simple_template: String,
    pub query_gen_template: String,
}

impl DefaultTemplates {
    pub fn get() -> Self {
        let t = crate::synth::Templates::default();
        Self {
            text_qa_template: t.text_qa.text().to_string(),
            refine_template: t.refine.text().to_string(),
            summary_template: t.summary.text().to_string(),
            simple_template: t.text_qa.text().to_string(),
            query_gen_template: crate::retrieve::query_gen::QUERY_GEN_PROMPT.to_string(),
        }
    }
}

/// An embedding model and how many of the index's chunks it embedded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexEmbedder {
    pub name: String,
    pub chunks: usize,
}

/// A document as the document list shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocumentView {
    pub id: i64,
    pub path: String,
    pub file_name: String,
    pub title: Option<String>,
    pub pages: u32,
    pub chunks: usize,
    pub status: DocStatus,
    pub error: Option<String>,
    /// In a watched folder that is missing now (an unmounted disk): kept and still
    /// searched, but its file cannot be opened.
    #[serde(default)]
    pub unavailable: bool,
}

/// A document's own file, open for reading and checked to hold the bytes that were
/// indexed ([`Engine::document_file`](super::Engine::document_file)).
#[derive(Debug)]
pub struct DocumentFile {
    /// Open at its start.
    pub file: std::fs::File,
    /// Its length in bytes.
    pub len: u64,
    /// The name it was indexed under (the last part of its path).
    pub file_name: String,
}
