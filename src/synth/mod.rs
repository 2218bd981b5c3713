//! Response synthesis: LlamaIndex's response modes over the [`crate::llm::Llm`] trait.
