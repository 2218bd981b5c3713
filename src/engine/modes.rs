//! The response modes a question can use, and the synthesizer each name stands for:
//! the seven built-in modes, synthesizers a library user registered on the engine
//! ([`Engine::with_synthesizer`]), and modes a person composed in Settings from the
//! built-in modes' building blocks.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::Engine;
use crate::settings::{valid_mode_name, Settings, EXTRACTIVE};
use crate::synth::{Blocks, Composed, ResponseMode, Synthesizer};
use crate::{Error, Result};

/// One-line descriptions of the built-in modes.
fn builtin_description(mode: ResponseMode) -> &'static str {
    match mode {
        ResponseMode::Compact => "Packs as many chunks as fit into each call, then refines: fewer LLM calls (default).",
        ResponseMode::Refine => "Answers from the first chunk, then refines the answer with each next chunk, one call each.",
        ResponseMode::TreeSummarize => "Summarizes chunks in groups, then summarizes the summaries until one answer is left.",
        ResponseMode::SimpleSummarize => "Truncates all chunks to fit one prompt and answers in a single call.",
        ResponseMode::NoText => "Retrieves the sources only; no LLM call.",
        ResponseMode::Accumulate => "Answers separately from each chunk and lists every answer.",
        ResponseMode::CompactAccumulate => "Like accumulate, but packs chunks together first.",
    }
}

/// Where a mode comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModeKind {
    /// One of LlamaIndex's seven modes.
    Builtin,
    /// A synthesizer a program registered on the engine.
    Library,
    /// Composed in Settings.
    Custom,
    /// Quire's own, beside LlamaIndex's (`extractive`).
    Quire,
}

/// A mode as the mode list shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModeInfo {
    pub name: String,
    pub description: String,
    pub kind: ModeKind,
    /// Whether answering makes LLM calls (`no_text` makes none).
    pub uses_llm: bool,
}

/// A synthesizer registered under a name.
#[derive(Clone)]
pub(super) struct Registered {
    pub name: String,
    pub description: String,
    pub synth: Arc<dyn Synthesizer>,
}

/// What a mode name resolved to.
#[derive(Clone)]
pub(super) enum Resolved {
    /// A built-in or composed mode: its blocks (a built-in mode runs as its blocks).
    Blocks(Blocks),
    Library(Arc<dyn Synthesizer>),
    /// Quire's `extractive` mode: the quotes are the answer, no synthesizer runs.
    Extractive,
}

impl Resolved {
    /// The synthesizer to run, over the templates and filtering the settings choose.
    pub fn synthesizer(
        &self,
        settings: &Settings,
        templates: crate::synth::Templates,
    ) -> Arc<dyn Synthesizer> {
        match self {
            Resolved::Blocks(blocks) => Arc::new(Composed {
                blocks: *blocks,
                templates,
                answer_filter: settings.structured_answer_filtering,
            }),
            Resolved::Library(s) => s.clone(),
            // Never run (the engine answers with the quotes); checks pass as no_text's.
            Resolved::Extractive => Arc::new(Composed {
                blocks: Blocks::of(ResponseMode::NoText),
                templates,
                answer_filter: false,
            }),
        }
    }

    /// Whether answering makes LLM calls.
    pub fn uses_llm(&self) -> bool {
        match self {
            Resolved::Blocks(blocks) => blocks.combine != crate::synth::Combine::None,
            Resolved::Library(_) => true,
            Resolved::Extractive => false,
        }
    }
}

impl Engine {
    /// Register `synth` as a response mode called `name`: it is then listed by
    /// [`Engine::modes`] (the CLI's `--mode`, the HTTP API, the UI's dropdown) with
    /// `description`, and a question can ask for it by name. The name must be free
    /// (not a built-in mode's, not registered already) and 1–40 letters, digits, `_`
    /// or `-`.
    pub fn with_synthesizer(
        mut self,
        name: &str,
        description: &str,
        synth: Arc<dyn Synthesizer>,
    ) -> Result<Self> {
        if !valid_mode_name(name) {
            return Err(Error::Invalid(format!(
                "mode name {name:?}: use 1-40 letters, digits, '_' or '-'"
            )));
        }
        if name.parse::<ResponseMode>().is_ok()
            || name == EXTRACTIVE
            || self.synthesizers.iter().any(|r| r.name == name)
        {
            return Err(Error::Invalid(format!(
                "mode name '{name}' is already taken"
            )));
        }
        self.synthesizers.push(Registered {
            name: name.to_string(),
            description: description.trim().to_string(),
            synth,
        });
        Ok(self)
    }

    /// The names of the synthesizers registered on this engine.
    pub(super) fn library_modes(&self) -> Vec<String> {
        self.synthesizers.iter().map(|r| r.name.clone()).collect()
    }

    /// Every mode a question can use: the built-in ones, then the registered ones,
    /// then the ones composed in Settings.
    pub fn modes(&self) -> Vec<ModeInfo> {
        let settings = self.settings();
        let mut out: Vec<ModeInfo> = ResponseMode::ALL
            .iter()
            .map(|m| ModeInfo {
                name: m.name().to_string(),
                description: builtin_description(*m).to_string(),
                kind: ModeKind::Builtin,
                uses_llm: *m != ResponseMode::NoText,
            })
            .collect();
        out.push(ModeInfo {
            name: EXTRACTIVE.into(),
            description: "Quotes the source sentences that best answer the question; no LLM call (Quire's own).".into(),
            kind: ModeKind::Quire,
            uses_llm: false,
        });
        out.extend(self.synthesizers.iter().map(|r| ModeInfo {
            name: r.name.clone(),
            description: r.description.clone(),
            kind: ModeKind::Library,
            uses_llm: true,
        }));
        out.extend(settings.custom_modes.iter().map(|c| ModeInfo {
            name: c.name.clone(),
            description: c.describe(),
            kind: ModeKind::Custom,
            uses_llm: c.blocks.combine != crate::synth::Combine::None,
        }));
        out
    }

    /// What mode `name` stands for under `settings`.
    pub(super) fn resolve_mode(&self, name: &str, settings: &Settings) -> Result<Resolved> {
        if let Ok(m) = name.parse::<ResponseMode>() {
            return Ok(Resolved::Blocks(Blocks::of(m)));
        }
        if name == EXTRACTIVE {
            return Ok(Resolved::Extractive);
        }
        if let Some(r) = self.synthesizers.iter().find(|r| r.name == name) {
            return Ok(Resolved::Library(r.synth.clone()));
        }
        if let Some(c) = settings.custom_mode(name) {
            return Ok(Resolved::Blocks(c.blocks));
        }
        let names: Vec<String> = self.modes().into_iter().map(|m| m.name).collect();
        Err(Error::Invalid(format!(
            "unknown response mode {name:?} (one of: {})",
            names.join(", ")
        )))
    }
}
