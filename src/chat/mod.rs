//! Conversations over the documents, as LlamaIndex holds them: its chat engines
//! (`condense_question`, `condense_plus_context`) with a token-limited memory
//! (`ChatMemoryBuffer`), citations (`CitationQueryEngine`'s numbered sources and
//! templates) and LLM reranking (`LLMRerank`). Over the `Llm` trait and synthesis
//! nodes only; the engine calls these around retrieval and synthesis, and
//! `tests/it/chat_parity.rs` replays LlamaIndex's recorded prompts against them.

pub mod citation;
pub mod condense;
pub mod follow_up;
pub mod memory;
pub mod optimizer;
pub mod rerank;

pub use crate::llm::chat::Message;
pub use condense::ChatMode;
