//! Quire's core: chat with your own PDFs, offline.
//!
//! PDFs are extracted ([`ingest`]), split and embedded ([`embed`]), and stored in a
//! local SQLite index ([`store`]). A question is answered by retrieving chunks
//! ([`retrieve`]) and synthesizing an answer with a local GGUF model ([`llm`]) in one
//! of LlamaIndex's response modes ([`synth`]). The shells are thin adapters over
//! this crate, in packages of their own, and hold no retrieval or synthesis logic:
//! the command line and its HTTP server (`cli/`, package `quire-cli`) and the Tauri
//! window (`src-tauri/`, package `quire-desktop`).

pub mod chat;
pub mod cpu;
pub mod embed;
pub mod engine;
pub mod error;
pub mod ingest;
pub mod jsonl;
pub mod llm;
pub mod models;
pub mod retrieve;
pub mod settings;
pub mod store;
pub mod support;
pub mod synth;
pub mod text;

pub use error::{Error, Result};
